//! `brickprof demo`: runs the tiny transformer of [`crate::model`] under the profiler on the
//! chosen timeline, prints the table and saves the profile.

use std::path::PathBuf;

use brickprof::report::{render_table, write_trace, TableOptions, TraceFormat};
use brickprof::{
    BrickId, BrickProfiler, CpuTimeline, DevicePeaks, Profile, ProfilerConfig, Result, SimDevice,
    SyncMode, TileLevel, TileTimer, Timeline, TimelineKind, Work,
};

use crate::model::{Bricks, Model, ModelConfig, SplitMix};
use crate::out_dir::OutDir;
use crate::output::Stdout;

/// Options of `brickprof demo`.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    pub layers: usize,
    pub tokens: usize,
    pub prompt: usize,
    pub seed: u64,
    pub timeline: TimelineKind,
    pub sync_mode: SyncMode,
    pub warmup: u64,
    pub out: Option<PathBuf>,
    pub checksums: bool,
    /// What to mark (every brick, layer boundaries, every Nth pass).
    pub sampling: brickprof::Sampling,
    /// Which kernels are checksummed, with which algorithm.
    pub checksum_plan: brickprof::ChecksumPlan,
    /// Add a tiny perturbation to this kernel's output (every pass).
    pub perturb: Option<KernelSpot>,
    /// Put a NaN into this kernel's output (every pass).
    pub nan: Option<KernelSpot>,
    /// Device peaks for the roofline; `None`: measured (cpu) or the simulated GPU's (sim).
    pub peaks: Option<DevicePeaks>,
    /// Trace files to write into `out`.
    pub trace_formats: Vec<TraceFormat>,
}

/// A kernel of the demo model: a brick in a layer (`None`: outside the layers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSpot {
    pub layer: Option<usize>,
    pub brick: BrickId,
}

impl std::str::FromStr for KernelSpot {
    type Err = String;

    /// `LAYER:BRICK`, LAYER a number or `model` (outside the layers), e.g. `2:softmax`.
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (layer, brick) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?} is not LAYER:BRICK (e.g. 2:softmax or model:lm_head)"))?;
        let layer =
            match layer.trim() {
                "model" | "none" | "-" => None,
                n => Some(n.parse::<usize>().map_err(|_| {
                    format!("layer {n:?} in {s:?} is neither a number nor \"model\"")
                })?),
            };
        let brick = brick.trim().parse::<BrickId>().map_err(|_| {
            format!(
                "unknown brick {brick:?} in {s:?}; bricks: {}",
                BrickId::names().join(", ")
            )
        })?;
        Ok(KernelSpot { layer, brick })
    }
}

/// `--checksum-layers`: layer numbers, and `model` for kernels outside the layers.
#[derive(Debug, Clone, Default)]
pub struct LayerList {
    /// The layers (`None`: every layer).
    pub layers: Option<Vec<usize>>,
    /// Whether `model` was listed.
    pub model: bool,
}

/// Parse `0,3,model`.
pub fn parse_layer_list(s: &str) -> std::result::Result<LayerList, String> {
    let mut out = LayerList {
        layers: Some(Vec::new()),
        model: false,
    };
    for item in s.split(',').map(str::trim) {
        match item {
            "model" => out.model = true,
            n => {
                out.layers
                    .get_or_insert_with(Vec::new)
                    .push(n.parse().map_err(|_| {
                        format!("{n:?} in {s:?} is neither a layer number nor \"model\"")
                    })?)
            }
        }
    }
    Ok(out)
}

/// `--checksum-bricks`: brick names.
#[derive(Debug, Clone)]
pub struct BrickList(pub Vec<String>);

/// Parse `qkv,down_proj` into brick names.
pub fn parse_brick_list(s: &str) -> std::result::Result<BrickList, String> {
    s.split(',')
        .map(|b| {
            b.trim()
                .parse::<BrickId>()
                .map(|id| id.name().to_string())
                .map_err(|_| {
                    format!(
                        "unknown brick {b:?} in {s:?}; bricks: {}",
                        BrickId::names().join(", ")
                    )
                })
        })
        .collect::<std::result::Result<_, _>>()
        .map(BrickList)
}

/// The simulated GPU the `sim` timeline runs on: a roofline device with a launch overhead.
pub mod sim_gpu {
    /// Host cost of one kernel launch.
    pub const LAUNCH_OVERHEAD_NS: u64 = 3_000;
    /// Fixed cost of any kernel on the device.
    pub const KERNEL_FLOOR_NS: u64 = 1_000;
    /// Peak FLOPs per ns (2 TFLOP/s: a small integrated GPU).
    pub const FLOPS_PER_NS: f64 = 2_000.0;
    /// Peak bytes per ns (100 GB/s).
    pub const BYTES_PER_NS: f64 = 100.0;

    /// The simulated GPU's peaks, for the roofline.
    pub fn peaks() -> brickprof::Result<brickprof::DevicePeaks> {
        brickprof::DevicePeaks::new("sim-gpu", FLOPS_PER_NS, BYTES_PER_NS)
    }

    /// The virtual duration of a kernel that does `work`.
    pub fn kernel_ns(work: brickprof::Work) -> u64 {
        let compute = work.flops as f64 / FLOPS_PER_NS;
        let memory = work.bytes as f64 / BYTES_PER_NS;
        KERNEL_FLOOR_NS + compute.max(memory).ceil() as u64
    }
}

/// Wires the model's bricks to a profiler (and to the simulated device, when there is one).
struct Instrument<'a, T: Timeline> {
    prof: &'a mut BrickProfiler<T>,
    device: Option<&'a SimDevice>,
    open: Option<brickprof::BrickToken>,
    tiles: [Option<TileTimer>; 3],
    opts: &'a DemoOptions,
}

impl<T: Timeline> Bricks for Instrument<'_, T> {
    fn begin(&mut self, _layer: Option<usize>, brick: BrickId) {
        self.open = Some(self.prof.start_brick(brick));
    }

    fn end(&mut self, layer: Option<usize>, brick: BrickId, work: Work, out: &mut [f32]) {
        if let Some(device) = self.device {
            device.launch(sim_gpu::kernel_ns(work));
        }
        if let Some(t) = self.open.take() {
            self.prof.stop_brick_with(t, work);
        }
        let here = Some(KernelSpot { layer, brick });
        if let Some(x) = out.get_mut(out.len() / 2) {
            if self.opts.perturb == here {
                *x += 1e-4 * x.abs().max(1e-3);
            }
            if self.opts.nan == here {
                *x = f32::NAN;
            }
        }
        self.prof.record_checksum(layer, brick, out);
    }

    fn tile_begin(&mut self, level: TileLevel) {
        self.tiles[level as usize] = Some(self.prof.start_tile(level));
    }

    fn tile_end(&mut self, level: TileLevel, work: Work) {
        if let Some(t) = self.tiles[level as usize].take() {
            self.prof.stop_tile(t, work);
        }
    }

    fn layer(&mut self, layer: usize, entering: bool) {
        if entering {
            self.prof.begin_layer(layer);
        } else {
            self.prof.end_layer();
        }
    }
}

/// Trace events the demo keeps (the default demo makes about 3,000; more are counted as dropped).
const TRACE_CAPACITY: usize = 1 << 16;

/// What a demo run produced.
pub struct DemoRun {
    pub profile: Profile,
    /// Trace files written.
    pub traces: Vec<PathBuf>,
    pub generated: Vec<usize>,
    /// Lines printed after the table (what a timeline has to say about the run).
    pub notes: Vec<String>,
    /// This CPU's measured peaks, when the roofline uses them.
    pub cpu_peaks: Option<crate::peaks::MeasuredPeaks>,
}

/// Run the demo and return its profile.
/// Largest model the demo builds (each layer holds about 3 MiB of weights).
pub const MAX_LAYERS: usize = 64;
/// Longest sequence (prompt plus generated tokens) the demo runs.
pub const MAX_SEQ: usize = 8192;

/// Prompt plus generated tokens (`None` when the sum overflows).
fn seq_len(opts: &DemoOptions) -> Option<usize> {
    opts.prompt.checked_add(opts.tokens)
}

/// Reject sizes the demo model cannot run in reasonable time and memory. Every size product
/// in `model.rs` (at most layers × max_seq × hidden = 64 × 8192 × 256 floats per cache) is
/// bounded by these checks, so none can overflow; the one sum of user sizes is checked.
fn check(opts: &DemoOptions) -> Result<()> {
    let bad = |m: String| Err(brickprof::Error::InvalidArgument(m));
    if opts.layers > MAX_LAYERS {
        return bad(format!(
            "--layers {} is too many for the demo model (at most {MAX_LAYERS})",
            opts.layers
        ));
    }
    if seq_len(opts).is_none_or(|n| n > MAX_SEQ) {
        return bad(format!(
            "--prompt {} plus --tokens {} exceeds the demo's {MAX_SEQ}-token context",
            opts.prompt, opts.tokens
        ));
    }
    if let Some(l) = opts
        .checksum_plan
        .layers
        .iter()
        .flatten()
        .find(|&&l| l >= opts.layers)
    {
        return bad(format!(
            "--checksum-layers names layer {l}: the demo model has layers 0..{}",
            opts.layers
        ));
    }
    for spot in [opts.perturb, opts.nan].into_iter().flatten() {
        if let Some(l) = spot.layer.filter(|&l| l >= opts.layers) {
            return bad(format!(
                "layer {l} in {l}:{} does not exist: the demo model has layers 0..{}",
                spot.brick, opts.layers
            ));
        }
    }
    Ok(())
}

pub fn run(opts: &DemoOptions) -> Result<DemoRun> {
    check(opts)?;
    let config = ProfilerConfig {
        layers: opts.layers,
        sync_mode: opts.sync_mode,
        warmup_passes: opts.warmup,
        checksums: opts.checksums,
        checksum_plan: opts.checksum_plan.clone(),
        trace_capacity: TRACE_CAPACITY,
        sampling: opts.sampling,
        ..ProfilerConfig::default()
    };
    match opts.timeline {
        TimelineKind::Cpu => {
            let prof = BrickProfiler::with_timeline(config, CpuTimeline::new())?;
            drive(opts, prof, None)
        }
        TimelineKind::Sim => {
            let device = SimDevice::new(sim_gpu::LAUNCH_OVERHEAD_NS);
            let timeline =
                device.timeline(config.pending_capacity.saturating_mul(2).saturating_add(2));
            let prof = BrickProfiler::with_timeline(config, timeline)?;
            drive(opts, prof, Some(&device))
        }
        TimelineKind::Hip => hip_run(opts, config),
        TimelineKind::OpenCl => opencl_run(opts, config),
        other => Err(brickprof::Error::InvalidArgument(format!(
            "the demo does not run on the {other} timeline (cpu, sim, hip, opencl)"
        ))),
    }
}

#[cfg(feature = "hip")]
fn hip_run(opts: &DemoOptions, config: ProfilerConfig) -> Result<DemoRun> {
    // The demo's kernels run on the CPU; on a HIP device the marks are recorded on a stream
    // the timeline creates, so the report shows that (empty) stream's timeline: this checks
    // the event path.
    let timeline = brickprof::HipTimeline::new(config.pending_capacity)?;
    let prof = BrickProfiler::with_timeline(config, timeline)?;
    drive(opts, prof, None)
}

#[cfg(not(feature = "hip"))]
fn hip_run(_opts: &DemoOptions, _config: ProfilerConfig) -> Result<DemoRun> {
    Err(brickprof::Error::InvalidArgument(
        "this brickprof was built without the `hip` feature; rebuild with `--features hip` \
         (needs libamdhip64 and HIP_PATH) or use --timeline cpu|sim"
            .into(),
    ))
}

#[cfg(feature = "opencl")]
fn opencl_run(opts: &DemoOptions, config: ProfilerConfig) -> Result<DemoRun> {
    crate::opencl_model::run(opts, config)
}

#[cfg(not(feature = "opencl"))]
fn opencl_run(_opts: &DemoOptions, _config: ProfilerConfig) -> Result<DemoRun> {
    Err(brickprof::Error::InvalidArgument(
        "this brickprof was built without the `opencl` feature; rebuild with `--features \
         opencl` (runs on any OpenCL driver, e.g. apt install pocl-opencl-icd) or use \
         --timeline cpu|sim"
            .into(),
    ))
}

fn drive<T: Timeline>(
    opts: &DemoOptions,
    mut prof: BrickProfiler<T>,
    device: Option<&SimDevice>,
) -> Result<DemoRun> {
    let cfg = ModelConfig {
        layers: opts.layers,
        max_seq: seq_len(opts).unwrap_or(MAX_SEQ).max(1),
        ..ModelConfig::default()
    };
    let model = Model::new(cfg, opts.seed);
    let mut rng = SplitMix::new(opts.seed ^ 0xB41C);
    let prompt: Vec<usize> = (0..opts.prompt.max(1))
        .map(|_| (rng.next_u64() % cfg.vocab as u64) as usize)
        .collect();

    let mut generated = Vec::with_capacity(opts.tokens);
    let passes = generate(&model, &prompt, opts, &mut prof, device, &mut generated);
    // The trace is written even when the run stopped on an error: what was recorded is there.
    let traces = write_traces(opts, &prof);
    if let Err(e) = passes {
        for path in traces.iter().flatten() {
            eprintln!("partial trace written to {}", path.display());
        }
        return Err(e);
    }
    let traces = traces?;
    let mut profile = prof.profile();
    let mut cpu_peaks = None;
    profile.meta.peaks = match (&opts.peaks, opts.timeline) {
        (Some(p), _) => Some(p.clone()),
        (None, TimelineKind::Sim) => Some(sim_gpu::peaks()?),
        // A measurement that came out as zero (a clock too coarse) leaves no roof.
        (None, _) => crate::peaks::measure_cpu_peaks().ok().map(|m| {
            let p = m.peaks.clone();
            cpu_peaks = Some(m);
            p
        }),
    };
    Ok(DemoRun {
        profile,
        traces,
        generated,
        notes: Vec::new(),
        cpu_peaks,
    })
}

/// The prefill pass, then one decode pass per generated token.
fn generate<T: Timeline>(
    model: &Model,
    prompt: &[usize],
    opts: &DemoOptions,
    prof: &mut BrickProfiler<T>,
    device: Option<&SimDevice>,
    generated: &mut Vec<usize>,
) -> Result<()> {
    let mut state = model.state();
    let mut pos = 0;
    let mut next = 0;
    // Prefill: the prompt as one pass.
    prof.begin_pass();
    for &tok in prompt {
        let mut ins = Instrument {
            prof: &mut *prof,
            device,
            open: None,
            tiles: [None; 3],
            opts,
        };
        next = model.forward(&mut state, tok, pos, &mut ins);
        pos += 1;
    }
    prof.end_pass(prompt.len() as u64)?;
    // Decode: one pass per generated token.
    for _ in 0..opts.tokens {
        generated.push(next);
        prof.begin_pass();
        let mut ins = Instrument {
            prof: &mut *prof,
            device,
            open: None,
            tiles: [None; 3],
            opts,
        };
        next = model.forward(&mut state, next, pos, &mut ins);
        pos += 1;
        prof.end_pass(1)?;
    }
    Ok(())
}

/// Stream the trace into `out` in each requested format; the paths written.
pub(crate) fn write_traces<T: Timeline>(
    opts: &DemoOptions,
    prof: &BrickProfiler<T>,
) -> Result<Vec<PathBuf>> {
    let (Some(dir), Some(view)) = (&opts.out, prof.trace_view()) else {
        return Ok(Vec::new());
    };
    let mut written = Vec::new();
    for &format in &opts.trace_formats {
        let path = dir.join(format!("trace.{}", format.extension()));
        write_trace(&view, &path, format)?;
        written.push(path);
    }
    Ok(written)
}

/// Print the demo's report and save its files into `out` (locked while they are written, so
/// two demos writing one directory leave one demo's complete set; traces are streamed during
/// the run).
pub fn report(run: &DemoRun, out: Option<&OutDir>, stdout: &mut Stdout) -> Result<()> {
    stdout.print(&render_table(&run.profile, &TableOptions::default()))?;
    for note in &run.notes {
        stdout.line(note)?;
    }
    if let Some(m) = &run.cpu_peaks {
        stdout.line(&m.describe())?;
    }
    stdout.line(&format!(
        "generated {} tokens: {:?}",
        run.generated.len(),
        &run.generated[..run.generated.len().min(16)]
    ))?;
    let Some(dir) = out else { return Ok(()) };
    let mut said = Vec::new();
    {
        let _lock = dir.lock()?;
        let path = dir.join("profile.json");
        run.profile.save(&path)?;
        said.push(format!("profile written to {}", path.display()));
        for path in &run.traces {
            said.push(format!(
                "trace written to {} (open it in ui.perfetto.dev)",
                path.display()
            ));
        }
        if let Some(log) = &run.profile.checksums {
            let path = dir.join("checksums.json");
            log.save(&path)?;
            said.push(format!(
                "{} kernel checksums written to {}",
                log.len(),
                path.display()
            ));
        } else {
            // A checksum log left by an earlier run would pair with this run's profile.
            let stale = dir.join("checksums.json");
            if stale.is_file() {
                std::fs::remove_file(&stale).map_err(|e| brickprof::Error::Io {
                    path: stale.clone(),
                    source: e,
                })?;
                said.push(format!(
                    "removed {} of an earlier run (this run has no checksums)",
                    stale.display()
                ));
            }
        }
    }
    for line in said {
        stdout.line(&line)?;
    }
    Ok(())
}
