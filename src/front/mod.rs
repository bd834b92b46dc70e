//! The front doors above the explicit API: the thread-local profiler and its guards, the
//! `tracing` layer that turns spans into bricks, live reading of a running profiler, and the
//! HTTP server that exposes it (feature `serve`).

#[cfg(feature = "serve")]
pub mod serve;
pub mod thread;
#[cfg(feature = "tracing")]
pub mod tracing_layer;
