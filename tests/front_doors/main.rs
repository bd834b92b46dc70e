//! Front doors and live metrics (spec/front-doors.md, spec/live.md): `BrickLayer` and the
//! thread-local front door on device timelines (with the `tracing` feature), the live handle's
//! captures, and (with the `serve` feature) the live server. One test binary for the layer;
//! each file is a module.
//!
//! The thread-local front door is process-global state: every test of `tracing_layer` and
//! `front_doors_device` takes the one lock [`SERIAL`] below (each file had its own when it was
//! its own process) and starts from `thread::reset()`. The other modules here do not touch it.

#[path = "../common/mod.rs"]
mod common;

#[cfg(feature = "tracing")]
mod front_doors_device;
mod live;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "tracing")]
mod tracing_layer;

/// The thread-local front door's lock, shared by every module here that uses it.
#[cfg(feature = "tracing")]
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
