//! Timelines and devices (spec/sync-modes.md): the sync modes, Lagged with and without polling,
//! a timeline's own kind and resolution, graph capture and replay on the simulated device and
//! the profiler's side of CUDA graph capture, vendor ranges, and (with the `hip` feature) the
//! HIP timeline on its stand-in runtime. A module of the library's test binary
//! (tests/library.rs); each file is a module.
//!
//! `hip_standin` re-runs this binary's child test alone (`--exact`) with the stand-in in
//! `LD_PRELOAD`; no other test runs in that process, and this process never loads it.

mod cuda_graph_capture;
mod graph_replay;
#[cfg(feature = "hip")]
mod hip_standin;
mod lagged;
mod lagged_without_polling;
mod sync_modes;
mod timeline_kind;
mod vendor_ranges;
