//! `brickprof demo`: run the demo model under brickprof, print its profile and save its run
//! folder.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use brickprof::{model::Sampling, roofline::DevicePeaks, timeline::TimelineKind, Result, SyncMode};

use crate::demo;
use crate::flags::{
    parse_bytes, parse_duration, parse_peaks, parse_sampling, parse_sync_mode, parse_trace_formats,
    timeline_parser, TraceFormats,
};
use crate::output::Stdout;

/// `brickprof demo`'s flags.
#[derive(Args)]
pub struct DemoArgs {
    /// Transformer layers.
    #[arg(long, default_value_t = 4)]
    layers: usize,
    /// Tokens to generate (one forward pass each) after the prompt.
    #[arg(long, default_value_t = 32)]
    tokens: usize,
    /// Prompt length in tokens (one prefill pass).
    #[arg(long, default_value_t = 16)]
    prompt: usize,
    /// How the prefill pass runs the prompt: batched (every brick one call over all its
    /// tokens, matrix-matrix projections, as an engine does) or per-token (one forward call
    /// a token, as the demo did up to 0.3; checksum files recorded then compare with it).
    #[arg(long, value_name = "HOW", default_value = "batched")]
    prefill: demo::Prefill,
    /// Seed of the weights and the prompt.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// The rank (process) of this run, written into the profile and its traces (so that
    /// `brickprof merge` of several ranks keeps them apart in a trace).
    #[arg(long, value_name = "N", default_value_t = 0)]
    rank: u32,
    /// Timeline to mark: cpu (host clock), sim (simulated GPU), hip (needs --features hip),
    /// opencl (the demo's kernels in OpenCL C on the first device; needs --features
    /// opencl); cuda is profiled with brickprof-candle, not the demo.
    #[arg(long, default_value = "cpu", value_parser = timeline_parser())]
    timeline: TimelineKind,
    /// When to synchronize: deferred, lagged, immediate, per-layer, none.
    #[arg(long, default_value = "deferred", value_parser = parse_sync_mode)]
    sync_mode: SyncMode,
    /// Leading passes to exclude from the statistics.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    /// Run folder for profile.json, the traces, checksums.json and captures.safetensors:
    /// replaced whole by this run's files (other files there are kept).
    #[arg(long, default_value = "brickprof-out")]
    out: PathBuf,
    /// Do not write any file.
    #[arg(long)]
    no_save: bool,
    /// Record a checksum of every kernel's output (written to DIR/checksums.json).
    #[arg(long)]
    checksums: bool,
    /// Checksum only passes 0, N, 2N, ... (implies --checksums).
    #[arg(long, value_name = "N")]
    checksum_every: Option<std::num::NonZeroU64>,
    /// Checksum only these layers, e.g. 0,3,model (implies --checksums; `model`: kernels
    /// outside the layers).
    #[arg(long, value_name = "LIST", value_parser = demo::parse_layer_list)]
    checksum_layers: Option<demo::LayerList>,
    /// Checksum only these bricks, e.g. qkv,down_proj (implies --checksums).
    #[arg(long, value_name = "LIST", value_parser = demo::parse_brick_list)]
    checksum_bricks: Option<demo::BrickList>,
    /// Checksum algorithm: fnv1a64-lanes8-v2 (default), fnv1a64-lanes8 (as in files of
    /// brickprof 0.2 and 0.3) or fnv1a64 (byte-wise, as in version-1 files).
    #[arg(long, value_name = "NAME")]
    checksum_algorithm: Option<brickprof::checksum::Algorithm>,
    /// Add a tiny perturbation to one kernel's output, e.g. 2:softmax or model:lm_head.
    #[arg(long, value_name = "LAYER:BRICK")]
    perturb: Option<demo::KernelSpot>,
    /// Put a NaN into one kernel's output, e.g. 1:down_proj.
    #[arg(long, value_name = "LAYER:BRICK")]
    nan: Option<demo::KernelSpot>,
    /// Capture these kernels' whole outputs to DIR/captures.safetensors, e.g.
    /// 2:*,1:residual_add (LAYER a number, `model` or `*`; BRICK a name or `*`).
    #[arg(long, value_name = "LAYER:BRICK[,...]", value_parser = demo::parse_capture_list)]
    capture: Option<demo::CaptureList>,
    /// Capture only in these passes, e.g. 0 or 0,5 (default: every pass).
    #[arg(long, value_name = "LIST", value_parser = demo::parse_pass_list, requires = "capture")]
    capture_passes: Option<demo::PassList>,
    /// Keep at most this many bytes of captures (e.g. 64M); tensors past it are counted and
    /// reported, not kept.
    #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = parse_bytes)]
    capture_budget: u64,
    /// Make one matrix-vector kernel's split-K reduction order vary from run to run (as
    /// split-K with atomics does), e.g. 1:down_proj.
    #[arg(long, value_name = "LAYER:BRICK")]
    nondeterministic: Option<demo::KernelSpot>,
    /// Plant a slowdown: stretch one kernel by PCT percent of its own time, e.g.
    /// 1:down_proj:10, or *:down_proj:10 in every layer (cpu, sim and hip timelines).
    #[arg(long, value_name = "LAYER:BRICK:PCT")]
    slow: Option<demo::SlowSpot>,
    /// Noise on the simulated GPU, drawn from --seed: every kernel of the run slower or
    /// faster by one factor within ±RUN % (machine-wide, as a loaded machine moves a whole
    /// run), each launch further within ±KERNEL %, e.g. 15 or 15,5 (sim timeline).
    #[arg(long, value_name = "RUN[,KERNEL]")]
    sim_jitter: Option<demo::SimJitter>,
    /// Seed of the --nondeterministic orders (default: a new one each run).
    #[arg(long, value_name = "N", requires = "nondeterministic", hide = true)]
    order_seed: Option<u64>,
    /// Device peaks for the roofline: a preset (mi300x, h100-sxm, ...) or GFLOPS,GBPS.
    /// Default: measured on this CPU (cpu timeline) or the simulated GPU's (sim).
    #[arg(long, value_name = "PRESET|GFLOPS,GBPS", value_parser = parse_peaks)]
    peaks: Option<DevicePeaks>,
    /// What to mark: all (every brick), layers (only layer boundaries), every-N (every
    /// brick of one pass in N), bursts-N-M (N passes, then M unmarked). Bounds the marking
    /// cost on device timelines.
    #[arg(long, default_value = "all", value_parser = parse_sampling)]
    sample: Sampling,
    /// Trace file(s) to write into DIR, as trace.EXTENSION: a comma-separated list of trace
    /// formats, or `both` (every one). The formats are listed below.
    #[arg(long, default_value = "both", value_name = "LIST", value_parser = parse_trace_formats)]
    trace_format: TraceFormats,
    /// Serve live metrics while the demo runs, on ADDR (e.g. 127.0.0.1:9184; port 0: any
    /// free port): GET /metrics (Prometheus text), /profile (profile JSON) and
    /// /trace?passes=N (a Perfetto trace of the next N passes). The address is printed on
    /// stderr. Needs --duration. No authentication: an address beyond loopback (0.0.0.0)
    /// lets anyone who reaches the port read the profile and traces (warned on stderr).
    #[arg(long, value_name = "ADDR", requires = "duration")]
    serve: Option<String>,
    /// With --serve: keep generating (the prompt and its tokens, again and again) for SECS
    /// seconds while serving, then save as usual.
    #[arg(long, value_name = "SECS", requires = "serve", value_parser = parse_duration)]
    duration: Option<std::time::Duration>,
    /// With --serve: label each brick's series with its layer too (one series per layer).
    #[arg(long, requires = "serve")]
    serve_layer_labels: bool,
    /// With --serve: once --duration has passed, stop generating and keep serving the
    /// final state for SECS seconds more (so that a scraper sees exactly what is saved),
    /// then save.
    #[arg(long, value_name = "SECS", requires = "serve", value_parser = parse_duration)]
    linger: Option<std::time::Duration>,
}

/// Run the demo in a staging folder beside `--out`, then swap its files in (or leave them
/// beside `--out` for a look when the run fails).
pub fn run(args: DemoArgs, stdout: &mut Stdout) -> Result<ExitCode> {
    let opts = args.options();
    // Checked before the demo runs: a bad --out costs nothing. The run's files are
    // written beside --out and swapped in whole (spec/profile-format.md "A run folder").
    let folder = opts
        .out
        .as_deref()
        .map(brickprof::io::RunFolder::create)
        .transpose()?;
    let trace_files = match &folder {
        Some(f) => opts
            .trace_formats
            .iter()
            .map(|&format| Ok((format, f.path(&format!("trace.{}", format.extension()))?)))
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    let opts = demo::DemoOptions {
        trace_files,
        ..opts
    };
    match demo::run(&opts) {
        Ok(run) => demo::report(run, folder, stdout)?,
        Err(e) => {
            // A partial trace stays beside --out for a look; --out keeps its run.
            if let Some(folder) = folder {
                folder.abandon();
            }
            return Err(e);
        }
    }
    Ok(ExitCode::SUCCESS)
}

impl DemoArgs {
    /// The demo's options as the flags give them.
    fn options(self) -> demo::DemoOptions {
        let capture_plan = brickprof::capture::CapturePlan {
            kernels: self.capture.map(|c| c.0).unwrap_or_default(),
            passes: self.capture_passes.map(|p| p.0),
            budget_bytes: self.capture_budget,
        };
        let sampled = self.checksum_every.is_some()
            || self.checksum_layers.is_some()
            || self.checksum_bricks.is_some()
            || self.checksum_algorithm.is_some();
        let layer_list = self.checksum_layers.unwrap_or_default();
        let checksum_plan = brickprof::profiler::ChecksumPlan {
            every: self.checksum_every.unwrap_or(std::num::NonZeroU64::MIN),
            outside_layers: layer_list.layers.is_none() || layer_list.model,
            layers: layer_list.layers,
            bricks: self.checksum_bricks.map(|b| b.0),
            algorithm: self.checksum_algorithm.unwrap_or_default(),
        };
        let serve = self.serve.map(|addr| demo::ServeOptions {
            addr,
            duration: self.duration.unwrap_or_default(),
            layer_labels: self.serve_layer_labels,
            linger: self.linger.unwrap_or_default(),
        });
        demo::DemoOptions {
            layers: self.layers,
            tokens: self.tokens,
            prompt: self.prompt,
            prefill: self.prefill,
            seed: self.seed,
            rank: self.rank,
            timeline: self.timeline,
            sync_mode: self.sync_mode,
            warmup: self.warmup,
            out: (!self.no_save).then_some(self.out),
            checksums: self.checksums || sampled,
            checksum_plan,
            perturb: self.perturb,
            nan: self.nan,
            capture_plan,
            nondeterministic: self.nondeterministic,
            slow: self.slow,
            order_seed: self.order_seed,
            sim_jitter: self.sim_jitter,
            peaks: self.peaks,
            sampling: self.sample,
            trace_formats: self.trace_format.0,
            trace_files: Vec::new(),
            serve,
        }
    }
}
