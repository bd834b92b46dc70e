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
//! assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).summary().count, 1);
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
//! | `base` (private) | leaves: [`Error`] and [`Result`], the limits ([`model::Limit`]), names made safe to print ([`output::printable`]), integers above 2^53 as strings, plain decimal numbers, SplitMix64 |
//! | [`io`] | files: bounded reads (at most 1 GiB a file), JSON files whose errors name file, line and column, the one atomic write path ([`io::OutputFile`]), outputs apart from inputs ([`io::check_outputs_apart`]), [`io::RunId`], [`io::RunFolder`] |
//! | [`model`] | what is measured: [`BrickId`], [`BrickCategory`], [`BrickHandle`], [`model::BrickRegistry`]; [`Phase`], [`PassShape`], [`model::PhaseFilter`]; [`Work`]; [`SyncMode`], [`model::OverflowPolicy`]; [`model::Sampling`]; [`model::Counters`]; the limits ([`model::Limit`]) |
//! | [`stats`] | numbers kept while recording: [`stats::BrickStats`], the log-linear histogram, [`stats::Fit`] / [`stats::FitSums`] and whether to trust them, the [`stats::PassSeries`], tiles ([`stats::TileLevel`], [`stats::TileTimer`]), device time outside bricks ([`stats::OutsideBricks`]) |
//! | [`roofline`] | [`roofline::DevicePeaks`] with a roof per memory level, memory- vs compute-bound, % of roof; measured CPU peaks ([`roofline::measure_cpu_peaks`]); [`roofline::device`]: peaks a device reports |
//! | [`timeline`] | the [`Timeline`] trait (mark, sync, resolve) and its capabilities ([`timeline::LaggedPolling`], [`timeline::Calibrated`], [`timeline::Capture`], [`timeline::GraphReplay`]); [`timeline::BoxedTimeline`]; [`CpuTimeline`], [`timeline::SimDevice`], `HipTimeline`, `OpenClTimeline`, `CudaTimeline`, `CuptiTimeline`; the host clock ([`timeline::HostClock`]) and device-to-host [`timeline::Calibration`] |
//! | [`checksum`] | kernel checksums (lane-parallel FNV-1a), dtypes, [`checksum::TensorSummary`], [`checksum::ChecksumLog`] |
//! | [`capture`] | [`capture::CapturePlan`], [`capture::CaptureStore`]: whole kernel outputs within a byte budget, saved as safetensors |
//! | [`profile`] | [`Profile`]: the saved, versioned, mergeable run (its nesting edges, per-phase passes, the [`profile::phase_profile`] fold), [`profile::RunMeta`], the trace as plain data ([`profile::TraceView`]), untimed graphs, [`profile::GeneratedTokens`] |
//! | [`profiler`] | [`BrickProfiler`] ([`ProfilerConfig`], [`BrickToken`]): stage-owned parts (mark → resolve → aggregate), the hot path, passes, layers, tiles, checksums, graph replays; the module itself holds the handles: reading ([`profiler::View`]), checksum recording ([`profiler::Checksums`]), graph replays ([`profiler::Graphs`]), live reading ([`profiler::LiveHandle`]); vendor ranges (NVTX / roctx `L{layer}/{Brick}`) are pushed from here |
//! | [`figures`] | numbers derived from a profile: the table's rows, TTFT/TPOT and throughput, cost against shape, units |
//! | [`compare`] | comparing runs, returning data: checksums and tensors ([`compare::divergence()`], [`compare::DivergenceReport`], [`compare::ErrorFlow`], noise bands), timing differences and verdicts, `diff` of two run files |
//! | [`import`] | vendor profilers' files read back as profiles: one [`import::Importer`] a format (Nsight Compute raw CSV, rocprofv3 CSV), the file sniffed ([`import::import`]), each brick's hardware counters in the profile ([`import::BrickCounters`], with their measured roofline) |
//! | [`output`] | writers: each format an [`output::Output`] (table, JSON, CSV, HTML, folded stacks, DOT, Perfetto and Chrome traces); trace writers and readers apart; SVG and XML helpers |
//! | `front` (private) | front doors, each public at the root: [`thread`] ([`brick!`] guards), `tracing_layer` (feature `tracing`: `BrickLayer`), `serve` (feature `serve`: the HTTP server over [`profiler::LiveHandle`]) |
//!
//! The root holds the names an integration writes; everything else is reached through the
//! module of its layer, by one path.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

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
pub mod compare;
pub mod figures;
mod front;
pub mod import;
pub mod io;
pub mod model;
pub mod output;
pub mod profile;
pub mod profiler;
pub mod roofline;
pub mod stats;
pub mod timeline;

#[cfg(feature = "serve")]
pub use front::serve;
pub use front::thread;
#[cfg(feature = "tracing")]
pub use front::tracing_layer;

// The names an integration writes, each reached here only.
pub use base::error::{Error, Result};
pub use model::brick::{BrickCategory, BrickHandle, BrickId};
pub use model::phase::{PassShape, Phase};
pub use model::sync::SyncMode;
pub use model::work::Work;
pub use profile::saved::Profile;
pub use profiler::config::ProfilerConfig;
pub use profiler::recorder::BrickProfiler;
pub use profiler::token::BrickToken;
pub use timeline::contract::Timeline;
pub use timeline::cpu::CpuTimeline;
