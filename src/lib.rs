//! # brickprof
//!
//! An in-process profiler for LLM inference engines, built around an O(1) hot path.
//!
//! Wrap each compute brick of a forward pass in [`BrickProfiler::start_brick`] /
//! [`BrickProfiler::stop_brick`]; call [`BrickProfiler::end_pass`] after each pass. Timing costs
//! one clock read per call and never allocates; disabled, it costs a branch. On an asynchronous
//! device the profiler only *marks* a [`Timeline`] during the pass and resolves every brick's own
//! duration after one sync (see `spec/sync-modes.md`).
//!
//! ```
//! use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
//!
//! let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(1))?;
//! prof.begin_pass();
//! prof.begin_layer(0);
//! let t = prof.start_brick(BrickId::RmsNorm);
//! let x: f32 = (0..256).map(|i| i as f32).sum(); // your kernel
//! prof.stop_brick(t, 256);
//! prof.end_layer();
//! prof.end_pass(1)?; // one sync, every pending brick resolved
//! assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).count(), 1);
//! # let _ = x;
//! # Ok::<(), brickprof::Error>(())
//! ```
//!
//! ## Map of the crate
//! Folders are the layers, listed here bottom up: a module imports only modules above it in
//! this list, never one below (`scripts/import-cycles.py --modules src` finds no cycle, and CI
//! runs it). The command line and the demo models are the workspace member
//! `crates/brickprof-cli`.
//!
//! | module | layer: what lives there |
//! |---|---|
//! | `base` | leaves: [`Error`] and [`Result`] (and [`timeline::GraphProblem`], which `Error` names), the `MAX_*` [`limits`] and [`Limit`], integers above 2^53 as strings (`exact_int`), [`printable`] names, plain decimal numbers, SplitMix64 |
//! | `io` | files: bounded reads ([`MAX_FILE_BYTES`]), JSON files whose errors name file, line and column ([`FileKind`]), the one atomic write path ([`OutputFile`]), outputs apart from inputs ([`check_outputs_apart`]), [`RunId`], [`RunFolder`] ([`RUN_FILES`]) |
//! | `model` | what is measured: [`BrickId`], [`BrickCategory`], [`BrickHandle`], [`BrickRegistry`]; [`Phase`], [`PassShape`], [`PhaseFilter`]; [`Work`]; [`SyncMode`], [`OverflowPolicy`]; [`Sampling`]; [`Counters`]; the (row, slot) grid ([`LayerRow`]) and a saved profile's row keys |
//! | `stats` | numbers kept while recording: [`BrickStats`], [`histogram`] ([`LogHistogram`]), [`Fit`] / [`FitSums`] and whether to trust them ([`Distrust`]), the [`PassSeries`] ([`PassRecord`], [`PassRing`]) and per-pass brick times, tiles ([`TileLevel`], [`TileTimer`], [`TileStats`]), device time outside bricks ([`OutsideBricks`]) |
//! | [`roofline`] | [`DevicePeaks`] with a roof per memory level, memory- vs compute-bound, % of roof; [`roofline::peaks`] ([`measure_cpu_peaks`]); [`roofline::device`]: peaks a device reports |
//! | [`timeline`] | the [`Timeline`] trait (mark, sync, resolve) and its capabilities ([`LaggedPolling`], [`Calibrated`], [`Capture`], [`GraphReplay`]); [`BoxedTimeline`]; [`CpuTimeline`], [`SimDevice`], `HipTimeline`, `OpenClTimeline`, `CudaTimeline`, `CuptiTimeline`; the host clock ([`HostClock`]) and device-to-host [`Calibration`] |
//! | [`checksum`] | kernel checksums (lane-parallel FNV-1a), dtypes, [`TensorSummary`], [`ChecksumLog`] |
//! | [`capture`] | [`capture::CapturePlan`], [`capture::CaptureStore`]: whole kernel outputs within a byte budget, saved as safetensors |
//! | [`profile`] | [`Profile`]: the saved, versioned, mergeable run (its nesting edges, per-phase passes, the [`phase_profile`] fold), [`RunMeta`], the [`trace`] as plain data ([`trace::TraceView`]), untimed graphs, [`RunFile`], [`GeneratedTokens`] |
//! | `profiler` | [`BrickProfiler`]: seven stage-owned parts (mark → resolve → aggregate), the hot path, passes, layers, tiles, checksums, graph replays, live handles; it hands its books to [`Profile`] as plain data; vendor ranges (NVTX / roctx `L{layer}/{Brick}`, [`vendor_ranges`]) |
//! | `figures` | numbers derived from a profile: the table's rows, TTFT/TPOT and throughput, cost against shape, units |
//! | `compare` | comparing runs, returning data: checksums and tensors ([`DivergenceReport`], [`ErrorFlow`], noise bands), timing differences and verdicts, gates, `diff` of two run files |
//! | `output` | writers: each format an [`report::Output`] (table, JSON, CSV, HTML, folded stacks, DOT, Perfetto and Chrome traces); trace writers and readers apart; SVG and XML helpers |
//! | [`report`] | kept for compatibility: the 0.3 paths of `figures`, `compare` and `output`, re-exported; budgets and the JUnit rendering (CLI policy, moving to the CLI) |
//! | `front` | front doors: [`thread`] ([`brick!`] guards), `tracing_layer` (feature `tracing`: `BrickLayer`), [`live`] ([`LiveHandle`]), `serve` (feature `serve`: the HTTP server) |

#![warn(missing_docs)]

// The README's examples, and the guide's (docs/), are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/integration.md")]
struct GuideIntegrationDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/gpus.md")]
struct GuideGpusDoctests;
#[cfg(doctest)]
#[doc = include_str!("../docs/live.md")]
struct GuideLiveDoctests;

mod base;
pub mod capture;
pub mod checksum;
mod compare;
mod figures;
mod front;
mod io;
mod model;
mod output;
pub mod profile;
mod profiler;
pub mod report;
pub mod roofline;
mod stats;
pub mod timeline;
#[cfg(feature = "serve")]
pub use front::serve;
#[cfg(feature = "tracing")]
pub use front::tracing_layer;
pub use front::{live, thread};
pub use profile::trace;
#[cfg(any(feature = "nvtx", feature = "roctx"))]
pub use profiler::vendor_ranges;

pub use base::error::{Error, Result};
pub use base::limits;
pub use base::limits::Limit;
pub use base::printable::printable;
pub use checksum::{fnv1a_f32_checksum, ChecksumLog, KernelKey, TensorSummary};
pub use compare::divergence::{
    apply_captures, apply_noise, compare, error_flow, rerun_plan, Check, DivergenceInfo,
    DivergenceReport, ErrorFlow, ErrorStats, LayerFlow, NoiseBand, NoiseMeasure, PassDivergence,
    RerunPlan, Stat, Tolerance, Verdict, DEFAULT_NOISE_FACTOR,
};
pub use io::file_io::MAX_FILE_BYTES;
pub use io::json_file::FileKind;
pub use io::output_apart::check_outputs_apart;
pub use io::output_file::OutputFile;
pub use io::run_folder::{Committed, RunFolder, RUN_FILES};
pub use io::run_id::RunId;
pub use model::brick::{BrickCategory, BrickHandle, BrickId};
pub use model::counters::Counters;
pub use model::grid::LayerRow;
pub use model::phase::{PassShape, Phase, PhaseFilter};
pub use model::registry::BrickRegistry;
pub use model::sampling::{Sampling, TraceCost};
pub use model::sync::{OverflowPolicy, SyncMode};
pub use model::work::Work;
pub use profile::generated::{GeneratedTokens, TokenAt, TokenDifference, TOKENS_FILE};
pub use profile::phase_view::{has_phases, phase_profile, phases_of};
pub use profile::run_file::RunFile;
pub use profile::run_meta::RunMeta;
pub use profile::{Profile, PROFILE_FORMAT_VERSION};
pub use profiler::{
    BrickProfiler, BrickToken, ChecksumPlan, Checksums, Graphs, LiveHandle, ProfilerConfig, Replay,
    View,
};
pub use report::ChromeTrace;
pub use roofline::peaks::{measure_cpu_peaks, MeasuredPeaks};
pub use roofline::{Bound, DevicePeaks, Roofline};
pub use stats::brick_stats::BrickStats;
pub use stats::fit::{Fit, FitSums, Regressor};
pub use stats::fit_trust::Distrust;
pub use stats::histogram;
pub use stats::histogram::LogHistogram;
pub use stats::outside_bricks::OutsideBricks;
pub use stats::pass_bricks::DEFAULT_PASS_BRICKS;
pub use stats::pass_series::{
    MergeDropped, PassRecord, PassRing, PassRun, PassSeries, DEFAULT_PASS_SERIES,
};
pub use stats::tile::{TileLevel, TileStats, TileTimer};
pub use timeline::calibration::{Anchor, Calibration, Calibrator};
#[cfg(feature = "mock-clock")]
pub use timeline::clock::MockClock;
pub use timeline::clock::{ClockSource, HostClock};
#[cfg(feature = "cuda")]
pub use timeline::{cuda_device_report, CudaTimeline};
#[cfg(feature = "cupti")]
pub use timeline::{
    default_thread_timeline, nvidia_timeline, CuptiCounts, CuptiTimeline, NvidiaChoice,
    NvidiaTimeline,
};
#[cfg(feature = "hip")]
pub use timeline::{hip_device_report, HipTimeline};
pub use timeline::{
    BoxedTimeline, Calibrated, Capture, CpuTimeline, DeviceGraph, DeviceRecords, GraphProblem,
    GraphReplay, LaggedPolling, Mark, ReplayMarks, SimDevice, SimTimeline, Timeline, TimelineKind,
    TimelineName, TracedPasses,
};
#[cfg(feature = "opencl")]
pub use timeline::{OpenClDevice, OpenClTimeline};
pub use trace::{TraceBuffer, TraceEvent, Track};
