//! The `brickprof` command line: `demo`, `report`, `diff`, `merge`, `convert`.
//!
//! Exit codes: 0 success, 2 an error (one line on stderr naming the file and the fault).

mod brick_tree;
mod demo;
mod output;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::TypedValueParser;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

use brickprof::report::{
    convert, diff_files_with, other_trace_output, outputs, trace_output_of, write_output,
    DiffOptions, HtmlOptions, Output, ReportOptions, Snapshot, SortKey, TableOptions, Takes,
};
use brickprof::{
    phase_profile, DevicePeaks, PhaseFilter, Profile, Result, Sampling, SyncMode, TimelineKind,
    Tolerance,
};

#[derive(Parser)]
#[command(
    name = "brickprof",
    version,
    about = "In-process profiler for LLM inference: per-brick timing, deferred GPU sync, kernel checksums"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per run
enum Command {
    /// Run a tiny Llama-style transformer on the CPU under brickprof and print its profile.
    Demo {
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
        #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = brickprof::capture::parse_bytes)]
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
    },
    /// Convert a saved trace between Perfetto (.pftrace) and Chrome JSON (.json), streaming.
    Convert {
        /// A trace written by brickprof (trace.pftrace or trace.json).
        input: PathBuf,
        /// Where to write (default: INPUT with the other format's extension).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Format to write (default: the other one).
        #[arg(long, value_parser = parse_trace_output)]
        to: Option<OutputArg>,
    },
    /// Compare two runs (profiles or checksum logs): the first kernel where they diverge, and
    /// the first generated token that differs when both runs saved tokens.json beside them.
    /// Exit 0 when nothing diverged, 1 when something did, 2 on an error.
    Diff {
        /// The reference run (profile.json or checksums.json).
        reference: PathBuf,
        /// The candidate run.
        candidate: PathBuf,
        /// Relative tolerance for "numerically close".
        #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
        rtol: f64,
        /// Absolute tolerance for "numerically close".
        #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
        atol: f64,
        /// List every differing kernel: how far max, min, mean and RMS moved.
        #[arg(long)]
        all: bool,
        /// The elementwise statistic that decides a captured kernel's verdict, e.g.
        /// cosine:0.9999, sqnr:40, max-rel:1e-3, max-abs:1e-4, mean-abs, p99-abs, nmse
        /// (repeatable: every check must pass).
        #[arg(long, value_name = "STAT:THRESHOLD")]
        check: Vec<brickprof::Check>,
        /// A second run of the reference setup (repeatable: more runs, a steadier band): each
        /// kernel's largest run-to-run distance sets its noise band; verdicts become "within
        /// noise" or "beyond noise".
        #[arg(long, value_name = "REF2")]
        noise: Vec<PathBuf>,
        /// Noise band = FACTOR x the run-to-run distance.
        #[arg(long, value_name = "FACTOR", default_value_t = brickprof::DEFAULT_NOISE_FACTOR)]
        noise_factor: f64,
        /// Which passes' timings to compare: prefill, decode, mixed, unspecified, or all
        /// (every phase, each compared with itself: prefill never with decode).
        #[arg(long, default_value = "all", value_name = "PHASE", value_parser = parse_phase)]
        phase: PhaseFilter,
        /// Exit 1 when a brick, TTFT, TPOT or a throughput is judged slower beyond noise by
        /// at least PCT, e.g. slower:5% or decode:slower:3% (repeatable). Without it, timing
        /// never changes the exit code.
        #[arg(long, value_name = "[PHASE:]slower:PCT%", value_parser = parse_gate)]
        fail_on: Vec<brickprof::report::Gate>,
        /// The smallest timing change judged faster or slower, percent.
        #[arg(long, value_name = "PCT", default_value_t = 3.0)]
        min_effect: f64,
        /// The smallest share of its phase's time a brick needs to be judged, percent.
        #[arg(long, value_name = "PCT", default_value_t = 1.0)]
        min_share: f64,
        /// Timing noise band = FACTOR x the largest change between any two runs of the
        /// reference setup (REF and the --noise runs), at least the phase's typical one.
        #[arg(long, value_name = "FACTOR", default_value_t = brickprof::report::DEFAULT_TIMING_NOISE_FACTOR)]
        timing_noise_factor: f64,
        /// Judge timings of runs from different machines, timelines or sync modes anyway.
        #[arg(long)]
        timing_across_machines: bool,
        /// Judge each brick and (layer, brick) cell in isolation, as measured, instead of
        /// against the run (where a change of the whole machine cancels).
        #[arg(long)]
        timing_absolute: bool,
        /// Exit 1 when a percentile of the candidate is over its budget, e.g.
        /// decode:LmHead:p99=40us or tpot:p50=30ms (repeatable).
        #[arg(long, value_name = "[PHASE:]BRICK:pN=DUR", value_parser = parse_budget)]
        budget: Vec<brickprof::report::Budget>,
        /// Write the gates' and budgets' results as a JUnit XML file (one test case per gated
        /// row and per budget).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Print text (default) or the whole comparison as JSON.
        #[arg(long, default_value = "text", value_parser = ["text", "json"])]
        format: String,
    },
    /// Merge profiles (threads, ranks, runs) into one.
    Merge {
        /// The profiles to merge.
        #[arg(required = true, num_args = 1..)]
        profiles: Vec<PathBuf>,
        /// Where to write the merged profile.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Print a saved profile.
    Report {
        /// A profile.json written by `brickprof demo` or `Profile::save`.
        profile: PathBuf,
        /// Output format printed on stdout.
        #[arg(long, default_value = "table", value_parser = parse_profile_output)]
        format: OutputArg,
        /// Column to sort by (total, calls, mean, min, p50, p99, max, host, throughput, gflops, gbps, name).
        #[arg(long, default_value = "total", value_parser = parse_sort)]
        sort: SortKey,
        /// Show only the top N rows.
        #[arg(long)]
        top: Option<usize>,
        /// One row per (layer, brick).
        #[arg(long)]
        by_layer: bool,
        /// Device peaks for the roofline (default: the profile's own).
        #[arg(long, value_name = "PRESET|GFLOPS,GBPS", value_parser = parse_peaks)]
        peaks: Option<DevicePeaks>,
        /// A second profile to compare with in the HTML report.
        #[arg(long, value_name = "PROFILE", requires = "html")]
        compare: Option<PathBuf>,
        /// A candidate run (profile.json or checksums.json, with its captures beside it) to
        /// diff this one against: the table on stdout is followed by the comparison of the
        /// passes --phase keeps (as `brickprof diff` prints it), and the HTML report draws an
        /// error heat map (layer × brick).
        #[arg(long, value_name = "RUN")]
        diff: Option<PathBuf>,
        /// Which passes to report: prefill, decode, mixed, unspecified, or all (every phase
        /// merged; the table then also shows each phase side by side).
        #[arg(long, default_value = "all", value_name = "PHASE", value_parser = parse_phase)]
        phase: PhaseFilter,
        /// Exit 1 when a percentile is over its budget, e.g. decode:LmHead:p99=40us,
        /// tpot:p50=30ms, ttft:p90=200ms (repeatable; a brick's per-call time, or latency).
        #[arg(long, value_name = "[PHASE:]BRICK:pN=DUR", value_parser = parse_budget)]
        budget: Vec<brickprof::report::Budget>,
        /// Write the budgets' results as a JUnit XML file (one test case per budget).
        #[arg(long, value_name = "FILE", requires = "budget")]
        junit: Option<PathBuf>,
    },
}

/// Every output the CLI offers: the library's list, then the CLI's own flamegraph. Flags are
/// built from it: `report --NAME FILE` and `--format NAME` for outputs made from a profile,
/// `demo --trace-format` and `convert --to` for traces (spec/profile-format.md "The CLI").
fn cli_outputs() -> impl Iterator<Item = &'static dyn Output> {
    outputs()
        .iter()
        .copied()
        .chain([&brick_tree::Flamegraph as &'static dyn Output])
}

fn names(takes: Takes) -> Vec<&'static str> {
    cli_outputs()
        .filter(|o| o.takes() == takes)
        .map(|o| o.name())
        .collect()
}

/// One output named on the command line.
#[derive(Clone, Copy)]
struct OutputArg(&'static dyn Output);

/// The trace outputs `demo --trace-format` names.
#[derive(Clone)]
struct TraceFormats(Vec<&'static dyn Output>);

fn parse_output(s: &str, takes: Takes) -> std::result::Result<OutputArg, String> {
    cli_outputs()
        .find(|o| o.takes() == takes && o.name() == s)
        .map(OutputArg)
        .ok_or_else(|| format!("unknown format {s:?} ({})", names(takes).join(", ")))
}

fn parse_profile_output(s: &str) -> std::result::Result<OutputArg, String> {
    parse_output(s, Takes::Profile)
}

fn parse_trace_output(s: &str) -> std::result::Result<OutputArg, String> {
    parse_output(s, Takes::Trace)
}

fn parse_trace_formats(s: &str) -> std::result::Result<TraceFormats, String> {
    if s == "both" || s == "all" {
        return Ok(TraceFormats(
            cli_outputs()
                .filter(|o| o.takes() == Takes::Trace)
                .collect(),
        ));
    }
    let mut formats: Vec<&'static dyn Output> = Vec::new();
    for name in s.split(',').map(str::trim) {
        let o = parse_trace_output(name)?.0;
        if !formats.iter().any(|f| f.name() == o.name()) {
            formats.push(o);
        }
    }
    Ok(TraceFormats(formats))
}

/// `--timeline`: every timeline brickprof ships (`TimelineKind::built_in`).
fn timeline_parser() -> impl TypedValueParser<Value = TimelineKind> {
    let names: Vec<&'static str> = TimelineKind::built_in().iter().map(|k| k.name()).collect();
    clap::builder::PossibleValuesParser::new(names).map(|s| {
        s.parse::<TimelineKind>()
            .expect("a built-in timeline's name parses")
    })
}

/// The command line: the derived one, with the flags the output list makes.
fn command() -> clap::Command {
    let with = |takes| names(takes).join(", ");
    Cli::command()
        .mut_subcommand("report", |mut c| {
            for o in cli_outputs().filter(|o| o.takes() == Takes::Profile) {
                c = c.arg(
                    clap::Arg::new(o.name())
                        .long(o.name())
                        .value_name(format!("OUT.{}", o.extension()))
                        .value_parser(clap::value_parser!(PathBuf))
                        .help(format!("Also write the {} output to this file", o.name())),
                );
            }
            c.mut_arg("format", |a| {
                a.help(format!(
                    "Output format printed on stdout: {}",
                    with(Takes::Profile)
                ))
            })
        })
        .mut_subcommand("demo", |c| {
            c.mut_arg("trace_format", |a| {
                a.help(format!(
                    "Trace file(s) to write into DIR as trace.EXTENSION: a comma-separated \
                     list of {}, or both (every one)",
                    with(Takes::Trace)
                ))
            })
        })
        .mut_subcommand("convert", |c| {
            c.mut_arg("to", |a| {
                a.help(format!(
                    "Format to write: {} (default: the other one)",
                    with(Takes::Trace)
                ))
            })
        })
}

/// The files `report --NAME FILE` asked for, in list order.
fn requested_files(matches: &ArgMatches) -> Vec<(&'static dyn Output, PathBuf)> {
    let Some(m) = matches.subcommand_matches("report") else {
        return Vec::new();
    };
    cli_outputs()
        .filter(|o| o.takes() == Takes::Profile)
        .filter_map(|o| Some((o, m.get_one::<PathBuf>(o.name())?.clone())))
        .collect()
}

/// Every file `command` reads and every file it writes, so that no output is one of its inputs
/// (spec/profile-format.md "Reading and writing files": compared by identity, refused before
/// anything is read or written). `demo` reads no file (its `--out` folder is checked by
/// `RunFolder::create`); `convert`'s default output is checked by `convert` itself.
fn inputs_and_outputs(
    command: &Command,
    files: &[(&'static dyn Output, PathBuf)],
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    use brickprof::report::run_files;
    let runs =
        |paths: &[&PathBuf]| -> Vec<PathBuf> { paths.iter().flat_map(|p| run_files(p)).collect() };
    match command {
        Command::Demo { .. } => (Vec::new(), Vec::new()),
        Command::Convert { input, output, .. } => {
            (vec![input.clone()], output.iter().cloned().collect())
        }
        Command::Diff {
            reference,
            candidate,
            noise,
            junit,
            ..
        } => {
            let mut all = vec![reference, candidate];
            all.extend(noise);
            (runs(&all), junit.iter().cloned().collect())
        }
        Command::Merge { profiles, output } => (profiles.clone(), vec![output.clone()]),
        Command::Report {
            profile,
            compare,
            diff,
            junit,
            ..
        } => {
            let mut inputs = match diff {
                Some(d) => runs(&[profile, d]),
                None => vec![profile.clone()],
            };
            inputs.extend(compare.iter().cloned());
            let outputs = files.iter().map(|(_, p)| p.clone()).chain(junit.clone());
            (inputs, outputs.collect())
        }
    }
}

/// What `report` says on stderr once it wrote `path`.
fn written_note(o: &dyn Output, path: &std::path::Path) -> String {
    let p = path.display();
    match o.name() {
        "html" => format!("HTML report written to {p}"),
        "flamegraph" => format!("flamegraph written to {p}"),
        "folded" => format!("folded stacks written to {p}"),
        "dot" => format!("execution graph written to {p} (render: dot -Tsvg {p} -o graph.svg)"),
        name => format!("{name} output written to {p}"),
    }
}

fn parse_sync_mode(s: &str) -> std::result::Result<SyncMode, String> {
    s.parse().map_err(|_| {
        format!("unknown sync mode {s:?} (deferred, lagged, immediate, per-layer, none)")
    })
}

fn parse_sort(s: &str) -> std::result::Result<SortKey, String> {
    s.parse()
        .map_err(|_| format!("unknown column {s:?} ({})", SortKey::NAMES))
}

fn parse_phase(s: &str) -> std::result::Result<PhaseFilter, String> {
    s.parse().map_err(|e: brickprof::Error| e.to_string())
}

fn parse_budget(s: &str) -> std::result::Result<brickprof::report::Budget, String> {
    s.parse().map_err(|e: brickprof::Error| e.to_string())
}

fn parse_gate(s: &str) -> std::result::Result<brickprof::report::Gate, String> {
    s.parse().map_err(|e: brickprof::Error| e.to_string())
}

fn parse_sampling(s: &str) -> std::result::Result<Sampling, String> {
    s.parse().map_err(|e: brickprof::Error| e.to_string())
}

/// `--duration SECS`: a number of seconds above 0, at most a week (fractions allowed).
fn parse_duration(s: &str) -> std::result::Result<std::time::Duration, String> {
    const WEEK: f64 = 7.0 * 24.0 * 3600.0;
    match s.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= WEEK => Ok(std::time::Duration::from_secs_f64(secs)),
        _ => Err(format!(
            "not a number of seconds above 0 and at most {WEEK} (a week)"
        )),
    }
}

fn parse_peaks(s: &str) -> std::result::Result<DevicePeaks, String> {
    DevicePeaks::parse(s).map_err(|e| e.to_string())
}

/// A short label for a profile file: its parent directory and name.
fn file_label(path: &std::path::Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let dir = path
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    match (dir, name) {
        (Some(d), Some(n)) => format!("{d}/{n}"),
        (None, Some(n)) => n,
        _ => path.display().to_string(),
    }
}

/// Say which file an error that names none came from.
fn in_file(path: &std::path::Path, e: brickprof::Error) -> brickprof::Error {
    brickprof::Error::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    }
}

fn main() -> ExitCode {
    let matches = command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let files = requested_files(&matches);
    let mut stdout = output::Stdout::default();
    match run(cli.command, files, &mut stdout) {
        Ok(code) => code,
        Err(e) => {
            output::print_error(&e.to_string());
            ExitCode::from(2)
        }
    }
}

fn run(
    command: Command,
    files: Vec<(&'static dyn Output, PathBuf)>,
    stdout: &mut output::Stdout,
) -> Result<ExitCode> {
    let (inputs, outputs) = inputs_and_outputs(&command, &files);
    brickprof::check_outputs_apart(
        &inputs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        &outputs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    )?;
    match command {
        Command::Demo {
            layers,
            tokens,
            prompt,
            prefill,
            seed,
            rank,
            timeline,
            sync_mode,
            warmup,
            out,
            no_save,
            checksums,
            checksum_every,
            checksum_layers,
            checksum_bricks,
            checksum_algorithm,
            perturb,
            nan,
            capture,
            capture_passes,
            capture_budget,
            nondeterministic,
            slow,
            sim_jitter,
            order_seed,
            peaks,
            sample,
            trace_format,
            serve,
            duration,
            serve_layer_labels,
            linger,
        } => {
            let capture_plan = brickprof::capture::CapturePlan {
                kernels: capture.map(|c| c.0).unwrap_or_default(),
                passes: capture_passes.map(|p| p.0),
                budget_bytes: capture_budget,
            };
            let sampled = checksum_every.is_some()
                || checksum_layers.is_some()
                || checksum_bricks.is_some()
                || checksum_algorithm.is_some();
            let layer_list = checksum_layers.unwrap_or_default();
            let checksum_plan = brickprof::ChecksumPlan {
                every: checksum_every.unwrap_or(std::num::NonZeroU64::MIN),
                outside_layers: layer_list.layers.is_none() || layer_list.model,
                layers: layer_list.layers,
                bricks: checksum_bricks.map(|b| b.0),
                algorithm: checksum_algorithm.unwrap_or_default(),
            };
            let opts = demo::DemoOptions {
                layers,
                tokens,
                prompt,
                prefill,
                seed,
                rank,
                timeline,
                sync_mode,
                warmup,
                out: (!no_save).then_some(out),
                checksums: checksums || sampled,
                checksum_plan,
                perturb,
                nan,
                capture_plan,
                nondeterministic,
                slow,
                order_seed,
                sim_jitter,
                peaks,
                sampling: sample,
                trace_formats: trace_format.0,
                serve: serve.map(|addr| demo::ServeOptions {
                    addr,
                    duration: duration.unwrap_or_default(),
                    layer_labels: serve_layer_labels,
                    linger: linger.unwrap_or_default(),
                }),
            };
            // Checked before the demo runs: a bad --out costs nothing. The run's files are
            // written beside --out and swapped in whole (spec/profile-format.md "A run folder").
            let folder = opts
                .out
                .as_deref()
                .map(brickprof::RunFolder::create)
                .transpose()?;
            let opts = demo::DemoOptions {
                out: folder.as_ref().map(|f| f.staging().to_path_buf()),
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
        }
        Command::Convert { input, output, to } => {
            let to = match to {
                Some(OutputArg(o)) => o,
                None => trace_output_of(&input)
                    .map_err(|e| match e {
                        brickprof::Error::Invalid { .. } => brickprof::Error::invalid_value(
                            "trace file",
                            input.display(),
                            "cannot tell its trace format from its name or its first bytes \
                             (convert reads brickprof's traces), so not which to write: say \
                             --to NAME",
                        ),
                        e => e,
                    })
                    .map(|from| other_trace_output(from).ok_or(from))?
                    .map_err(|from| {
                        brickprof::Error::invalid_value(
                            "trace file",
                            input.display(),
                            format!("it is a {} trace: say --to NAME", from.name()),
                        )
                    })?,
            };
            let output = output.unwrap_or_else(|| input.with_extension(to.extension()));
            let from = convert(&input, &output, to)?;
            stdout.safe_line(&format!(
                "converted {} ({}) to {} ({})",
                input.display(),
                from.name(),
                output.display(),
                to.name()
            ))?;
        }
        Command::Diff {
            reference,
            candidate,
            rtol,
            atol,
            all,
            check,
            noise,
            noise_factor,
            phase,
            fail_on,
            min_effect,
            min_share,
            timing_noise_factor,
            timing_across_machines,
            timing_absolute,
            budget,
            junit,
            format,
        } => {
            // Options that make the judgement meaningless are refused before any file is
            // read (DiffOptions::validate: finite tolerances, meaningful check thresholds).
            if !(min_share.is_finite() && (0.0..=100.0).contains(&min_share)) {
                return Err(brickprof::Error::invalid_value(
                    "--min-share",
                    min_share,
                    "a percentage from 0 to 100",
                ));
            }
            let settings = brickprof::report::VerdictSettings::new(
                min_effect / 100.0,
                timing_noise_factor,
                brickprof::report::BOOTSTRAP_RESAMPLES,
            )?;
            let options = DiffOptions {
                tolerance: Tolerance { rtol, atol },
                checks: check,
                noise,
                noise_factor: Some(noise_factor),
                phase,
                timing: brickprof::report::VerdictOptions {
                    settings,
                    across_machines: timing_across_machines,
                    min_share: min_share / 100.0,
                    absolute: timing_absolute,
                },
                gates: fail_on.clone(),
            };
            let outcome = diff_files_with(&reference, &candidate, &options)?;
            // spec/timing-verdicts.md "Gates, budgets and the exit code".
            let gate_list = fail_on
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ");
            let gates = match (&outcome.verdicts, fail_on.is_empty()) {
                (_, true) => None,
                (None, false) => {
                    return Err(brickprof::Error::invalid_value(
                        "--fail-on",
                        gate_list.as_str(),
                        "timing gates need two profiles (not checksum logs)",
                    ))
                }
                (Some(v), false) => Some(brickprof::report::apply_gates(&fail_on, v)),
            };
            if let Some(g) = gates.as_ref().filter(|g| g.nothing_judged()) {
                // spec/timing-verdicts.md "Cannot judge": bands wider than the gate are
                // named, as withheld rows are.
                let why = outcome
                    .verdicts
                    .as_ref()
                    .and_then(|v| v.withheld)
                    .map(|w| brickprof::report::withheld_text(w).to_string())
                    .or_else(|| {
                        g.gated
                            .iter()
                            .filter_map(|(r, _)| r.cannot_judge_text())
                            .next()
                    })
                    .or_else(|| {
                        g.gated
                            .iter()
                            .find_map(|(r, _)| r.withheld)
                            .map(|w| brickprof::report::withheld_text(w).to_string())
                    })
                    .unwrap_or_else(|| "no row of the gated phases".to_string());
                return Err(brickprof::Error::invalid_value(
                    "--fail-on",
                    gate_list.as_str(),
                    format!("no timing verdict to gate: {why}"),
                ));
            }
            // Budgets are checked on the candidate (spec/timing-verdicts.md).
            let budgets = if budget.is_empty() {
                Vec::new()
            } else {
                let c = Profile::load(&candidate)?;
                brickprof::report::check_budgets(&c, &budget).map_err(|e| in_file(&candidate, e))?
            };
            if let Some(path) = &junit {
                let xml = brickprof::report::render_junit(gates.as_ref(), &budgets);
                brickprof::OutputFile::write_whole(path, xml.as_bytes())?;
            }
            if format == "json" {
                stdout.print(&outcome.to_json(gates.as_ref()))?;
            } else {
                stdout.print(&outcome.text)?;
                if all {
                    if let Some(report) = &outcome.checksums {
                        stdout.print(&format!("\n{}", report.render_all()))?;
                    }
                }
                for b in &budgets {
                    stdout.safe_line(&format!("Budget: {}", b.line()))?;
                }
                if let Some(g) = &gates {
                    for (row, failed) in g.gated.iter().filter(|(_, f)| !f.is_empty()) {
                        let gates: Vec<String> = failed.iter().map(ToString::to_string).collect();
                        stdout.safe_line(&format!(
                            "REGRESSED [{}] {} fails {}",
                            row.phase,
                            row.label(),
                            gates.join(", ")
                        ))?;
                    }
                }
            }
            if outcome.diverged
                || gates.as_ref().is_some_and(|g| g.failed())
                || budgets.iter().any(|b| b.exceeded())
            {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Merge { profiles, output } => {
            let mut merged: Option<Profile> = None;
            for path in &profiles {
                let p = Profile::load(path)?;
                match merged.as_mut() {
                    None => merged = Some(p),
                    Some(m) => m.merge(&p).map_err(|e| in_file(path, e))?,
                }
            }
            if let Some(m) = merged {
                m.save(&output)?;
                stdout.line(&format!(
                    "merged {} profiles ({} passes, {} tokens) into {}",
                    profiles.len(),
                    m.meta.counters.passes,
                    m.meta.counters.tokens,
                    output.display()
                ))?;
            }
        }
        Command::Report {
            profile,
            format,
            sort,
            top,
            by_layer,
            peaks,
            compare,
            diff,
            phase,
            budget,
            junit,
        } => {
            let whole = Profile::load(&profile)?;
            // Budgets name their own phase: checked on every pass of the run.
            let budgets = brickprof::report::check_budgets(&whole, &budget)
                .map_err(|e| in_file(&profile, e))?;
            // One phase's passes, or all of them (spec/profile-format.md "Phases").
            let p = match phase {
                PhaseFilter::All => whole,
                only => phase_profile(&whole, only),
            };
            let label = file_label(&profile);
            let wants_html =
                files.iter().any(|(o, _)| o.name() == "html") || format.0.name() == "html";
            let other = compare
                .as_ref()
                .filter(|_| wants_html)
                .map(Profile::load)
                .transpose()?
                .map(|o| match phase {
                    PhaseFilter::All => o,
                    only => phase_profile(&o, only),
                });
            let other_label = compare.as_deref().map(file_label).unwrap_or_default();
            // The comparison of the passes --phase keeps (spec/profile-format.md "Comparing
            // runs"): printed after the table, drawn in the HTML report.
            let outcome = diff
                .as_ref()
                .map(|d| {
                    let options = DiffOptions {
                        phase,
                        ..DiffOptions::default()
                    };
                    diff_files_with(&profile, d, &options)
                })
                .transpose()?;
            let diff_label = diff.as_deref().map(file_label).unwrap_or_default();
            let opts = ReportOptions {
                table: TableOptions {
                    sort,
                    top,
                    by_layer,
                    peaks: peaks.clone(),
                },
                html: HtmlOptions {
                    peaks: peaks.as_ref(),
                    compare: other.as_ref().map(|o| (o, other_label.as_str())),
                    label: &label,
                    top: top.unwrap_or(0),
                    diff: outcome.as_ref().map(|o| (o, diff_label.as_str())),
                },
            };
            let snapshot = Snapshot::Profile(&p, &opts);
            for (o, path) in &files {
                write_output(*o, &snapshot, path)?;
                output::note(&written_note(*o, path));
            }
            let mut text = Vec::new();
            format.0.write(&snapshot, &mut text)?;
            stdout.print(&String::from_utf8_lossy(&text))?;
            if let (Some(o), "table") = (&outcome, format.0.name()) {
                stdout.safe_line(&format!("\nCompared with {diff_label}"))?;
                stdout.print(&o.text)?;
            }
            // spec/timing-verdicts.md "Gates, budgets and the exit code": on stdout under
            // the table, on stderr under any other format (which stays parseable).
            for b in &budgets {
                let line = format!("Budget: {}", b.line());
                if format.0.name() == "table" {
                    stdout.safe_line(&line)?;
                } else {
                    output::note(&line);
                }
            }
            if let Some(path) = &junit {
                let xml = brickprof::report::render_junit(None, &budgets);
                brickprof::OutputFile::write_whole(path, xml.as_bytes())?;
            }
            if budgets.iter().any(|b| b.exceeded()) {
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
