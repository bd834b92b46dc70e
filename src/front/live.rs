//! Reading a running profiler from another thread: [`LiveHandle`] (snapshots of its profile,
//! captures of its next passes' trace), made by [`crate::BrickProfiler::live`]. The `serve`
//! feature's HTTP server ([`crate::front::serve`]) is built on it; spec/live.md is the contract.

pub use crate::profiler::{
    CaptureError, CapturedTrace, LiveHandle, LiveOptions, DEFAULT_CAPTURE_EVENTS,
    MAX_CAPTURE_EVENTS, MAX_CAPTURE_PASSES,
};
