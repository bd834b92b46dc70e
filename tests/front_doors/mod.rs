//! Front doors and live metrics (spec/front-doors.md, spec/live.md): `BrickLayer` and the
//! thread-local front door on device timelines (with the `tracing` feature), the live handle's
//! captures, and (with the `serve` feature) the live server. A module of the library's test
//! binary (tests/library.rs); each file is a module.
//!
//! The thread-local front door is process-global state: every test of `tracing_layer` and
//! `front_doors_device` takes the binary's one lock, `crate::SERIAL` (tests/library.rs; the
//! replay test in `timelines::graph_replay` takes it too), and starts from `thread::reset()`.
//! The other modules here do not touch it.

#[cfg(feature = "tracing")]
mod front_doors_device;
mod live;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "tracing")]
mod tracing_layer;
