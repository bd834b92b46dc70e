//! `brickprof demo`: runs the tiny transformer of [`model`] under the profiler on the chosen
//! timeline, prints the table and saves the profile.
//!
//! One file per backend: [`cpu`], [`sim`], `hip`, `opencl` (each behind its feature). The
//! backends depend on the shared [`options`], [`outcome`] and [`model`]; [`run`] here is the one
//! place that names the backends, and nothing else here depends on them.

pub mod cpu;
#[cfg(feature = "hip")]
pub mod hip;
pub mod model;
#[cfg(feature = "opencl")]
pub mod opencl;
pub mod options;
pub mod outcome;
pub mod serve;
pub mod sim;

use brickprof::{timeline::TimelineKind, ProfilerConfig, Result};

pub use options::{
    parse_brick_list, parse_capture_list, parse_layer_list, parse_pass_list, BrickList,
    CaptureList, DemoOptions, KernelSpot, LayerList, PassList, Prefill, ServeOptions, SimJitter,
    SlowSpot,
};
pub use outcome::{report, DemoRun};

/// Trace events the demo keeps (the default demo makes about 3,000; more are counted as dropped).
const TRACE_CAPACITY: usize = 1 << 16;

/// Run the demo on the timeline `opts` names.
pub fn run(opts: &DemoOptions) -> Result<DemoRun> {
    options::check(opts)?;
    let config = ProfilerConfig {
        layers: opts.layers,
        sync_mode: opts.sync_mode,
        warmup_passes: opts.warmup,
        checksums: opts.checksums,
        checksum_plan: opts.checksum_plan.clone(),
        capture_plan: opts.capture_plan.clone(),
        trace_capacity: TRACE_CAPACITY,
        sampling: opts.sampling,
        rank: opts.rank,
        ..ProfilerConfig::default()
    };
    match opts.timeline {
        TimelineKind::Cpu => cpu::run(opts, config),
        TimelineKind::Sim => sim::run(opts, config),
        TimelineKind::Hip => hip_run(opts, config),
        TimelineKind::OpenCl => opencl_run(opts, config),
        TimelineKind::Cuda => Err(brickprof::Error::invalid_value(
            "demo timeline",
            "cuda",
            "the demo's kernels run on the host and have no CUDA version: profile a CUDA model \
             with brickprof-candle (`--features cuda`; tests/cuda/cuda.rs checks CUDA events), or \
             run the demo with --timeline cpu, sim, hip or opencl",
        )),
        other => Err(brickprof::Error::invalid_value(
            "demo timeline",
            other,
            "the demo runs on cpu, sim, hip or opencl",
        )),
    }
}

#[cfg(feature = "hip")]
fn hip_run(opts: &DemoOptions, config: ProfilerConfig) -> Result<DemoRun> {
    hip::run(opts, config)
}

#[cfg(not(feature = "hip"))]
fn hip_run(_opts: &DemoOptions, _config: ProfilerConfig) -> Result<DemoRun> {
    Err(brickprof::Error::FeatureMissing {
        what: "the demo on the hip timeline (--timeline hip)",
        feature: "the `hip` feature (rebuild with `--features hip`; needs libamdhip64 and \
                  HIP_PATH), or use --timeline cpu|sim",
    })
}

#[cfg(feature = "opencl")]
fn opencl_run(opts: &DemoOptions, config: ProfilerConfig) -> Result<DemoRun> {
    opencl::run(opts, config)
}

#[cfg(not(feature = "opencl"))]
fn opencl_run(_opts: &DemoOptions, _config: ProfilerConfig) -> Result<DemoRun> {
    Err(brickprof::Error::FeatureMissing {
        what: "the demo on the opencl timeline (--timeline opencl)",
        feature: "the `opencl` feature (rebuild with `--features opencl`; runs on any OpenCL \
                  driver, e.g. apt install pocl-opencl-icd), or use --timeline cpu|sim",
    })
}
