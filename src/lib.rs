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
//! assert_eq!(prof.brick_stats(BrickId::RmsNorm).count(), 1);
//! # let _ = x;
//! # Ok::<(), brickprof::Error>(())
//! ```
//!
//! ## Map of the crate
//! Layers, data flowing one way (no module imports one above it; `src/` has no import cycle):
//! leaves (`brick`, `calibration`, `registry`, `stats`, `histogram`, `grid`, `clock`, `work`,
//! `tile`, `limits`, `counters`, `phase`, `pass_series`, `pass_bricks`, `splitmix`, `fit`, `error`, `printable`,
//! `exact_int`, `run_id`, `checksum`, `capture`, `sync`, `sampling`, `row_key`) → `timeline` → `profiler` (mark →
//! resolve → aggregate) → `profile`, `run_file`, `generated`, `divergence` → `report` (writers,
//! tables, diff), `run_folder` → front doors (`thread`, `tracing_layer`, `vendor_ranges`). The
//! command line and the demo models are the workspace member `crates/brickprof-cli`.
//!
//! | module | what lives there |
//! |---|---|
//! | `brick` | [`BrickId`], [`BrickCategory`], [`BrickHandle`] |
//! | `registry` | names of built-in and registered (dynamic) bricks |
//! | `stats` | [`BrickStats`]: O(1) statistics, merge, derived rates |
//! | [`histogram`] | [`LogHistogram`]: fixed log-linear histogram for percentiles |
//! | [`checksum`] | kernel checksums (lane-parallel FNV-1a), dtypes, [`TensorSummary`], [`ChecksumLog`] |
//! | [`capture`] | [`capture::CapturePlan`] (`--capture LAYER:BRICK`), [`capture::CaptureStore`] of whole kernel outputs within a byte budget, saved as safetensors |
//! | `divergence` | comparing two runs: checksums ([`DivergenceReport`]), elementwise metrics of captured tensors, noise bands, where error is born |
//! | `calibration` | [`Calibration`]: device time mapped to host time from bracketed [`Anchor`]s (offset, drift, error bound) |
//! | `clock` | [`HostClock`]: TSC ticks on the hot path, ns when resolving (`MockClock`: feature `mock-clock`) |
//! | [`timeline`] | [`Timeline`] trait (the dyn-compatible core: mark, sync, resolve) and its capabilities ([`LaggedPolling`]: the Lagged mode's non-blocking `reached`; [`Calibrated`]; [`Capture`]; [`GraphReplay`]); [`BoxedTimeline`] (any timeline, one type); [`CpuTimeline`], [`SimDevice`], `HipTimeline`, `OpenClTimeline`, `CudaTimeline` (and their devices' reported peaks) |
//! | `sync` | [`SyncMode`] (Immediate, PerLayer, Deferred, Lagged, None), [`OverflowPolicy`] |
//! | `profiler` | [`BrickProfiler`]: seven stage-owned parts (marker, books, checksums, sampler, tracer, names, passes); hot path, layers, passes, tiles, reading stats |
//! | `file_io` | bounded reads ([`MAX_FILE_BYTES`]) of whole files |
//! | `output_apart` | [`check_outputs_apart`]: an output is never one of its command's inputs (files compared by device and inode, not by spelling) |
//! | `output_file` | [`OutputFile`]: the one write path, whole or not at all; a regular file is replaced atomically, a link written through, a pipe or character device written in place, anything else refused |
//! | `json_file` | reading/writing JSON files with errors naming file, line, column (a leaf: JSON and headers only) |
//! | `grid` (private) | `Grid`: (slot, row) cells; `Rows`/`Row`: the one owner of the layer-row convention; [`LayerRow`] |
//! | `counters` (private), [`limits`] | [`Counters`]; the `MAX_*` limits and [`Limit`] (leaves shared by the profiler and the profile) |
//! | [`profile`] | [`Profile`]: the saved, versioned, mergeable form of a run (its nesting edges: `profile_nesting`; row keys: `row_key`; per-phase passes: `profile_phases`; the [`phase_profile`] fold: `phase_view`) |
//! | `run_file` | [`RunFile`]: a profile or a checksum log, whichever a file holds |
//! | `run_id` | [`RunId`]: one run's identity, written into each file of its run folder and checked where they are read together |
//! | `run_folder` | [`RunFolder`]: a folder of one run's files ([`RUN_FILES`]), written beside and swapped in whole |
//! | `generated` | [`GeneratedTokens`]: the tokens a run generated (`tokens.json`), the first [`TokenDifference`] of two runs |
//! | [`report`] | everything made from a run behind one curated list: the outputs ([`report::outputs`]: table, JSON, CSV, HTML, folded stacks, DOT, Perfetto and Chrome traces, each an [`report::Output`] that recognises its files and writes them whole), derived numbers, run-to-run diff, the trace writers (one slice-building path, streamed or [`ChromeTrace`] in memory) and `convert` |
//! | `run_meta` | [`RunMeta`]: a run's facts (timeline, sync mode, clocks, calibration, peaks, rank, host, versions), embedded by a [`Profile`] and a [`trace::TraceView`], written once per format |
//! | `sampling` | [`Sampling`]: mark every brick, only layer boundaries, or every Nth pass |
//! | [`roofline`] | [`DevicePeaks`] with a roof per memory level (`CacheRoof`, `MemLevel`), memory- vs compute-bound, the level a brick lives in, % of its roof, above-roof flags |
//! | [`roofline::peaks`] | [`measure_cpu_peaks`]: this CPU's measured GFLOP/s and GB/s per cache level from a working-set sweep ([`MeasuredPeaks`]); the cache topology (`CacheTopology`) |
//! | [`roofline::device`] | peaks from what an OpenCL/CUDA/HIP device reports, or a labelled preset |
//! | [`trace`] | the trace as plain data: bounded event log, the [`trace::TraceView`] a profiler hands out (written by [`report`]) |
//! | [`thread`] | thread-local front door: [`brick!`] guards, `layer`, `end_pass`, `collect` |
//! | `tracing_layer` | (feature `tracing`) `BrickLayer`: tracing spans become bricks |
//! | `pass_series` | [`PassSeries`]: one [`PassRecord`] per pass (shape, wall, device and per-category time), recorded in a bounded [`PassRing`], saved run by run, with each brick's time per pass (`pass_bricks`) |
//! | `fit` | [`FitSums`]: exact sums per (phase, brick) and their least-squares [`Fit`] of time against new tokens or context ([`Regressor`]) |
//! | `phase` | [`Phase`] (prefill, decode, mixed, unspecified) and [`PassShape`] (new tokens, sequences, context tokens) of a pass; [`PhaseFilter`] |
//! | `work` | [`Work`]: elements, FLOPs, bytes of a measured call (bytes per call also place a brick at a memory level) |
//! | `tile` | [`TileLevel`], [`TileTimer`], [`TileStats`] |
//! | `vendor_ranges` | NVTX / roctx ranges `L{layer}/{Brick}` (features `nvtx`, `roctx`) |
//! | `error` | [`Error`], [`Result`] |

#![warn(missing_docs)]

// The README's examples are compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

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
pub use profiler::{BrickProfiler, BrickToken, ChecksumPlan, LiveHandle, ProfilerConfig, Replay};
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
