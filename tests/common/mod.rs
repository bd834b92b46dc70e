//! Helpers shared by integration tests.

#![allow(dead_code)]

mod fixed;
#[allow(unused_imports)] // not every test uses it
pub use fixed::*;

use brickprof::{BrickId, BrickProfiler, ProfilerConfig};

pub mod calibrated;
pub mod hostile;
pub mod native;
/// Two traced passes of two layers on the simulated device (2 µs launch overhead): in each
/// layer a DownProjection enclosing two Activation launches (1.5 and 2.5 µs), then an LmHead
/// (10 µs) outside the layers.
pub fn traced_sim_profiler(
    mode: brickprof::SyncMode,
    capacity: usize,
    rank: u32,
) -> BrickProfiler<brickprof::SimTimeline> {
    let device = brickprof::SimDevice::new(2_000);
    let config = ProfilerConfig {
        layers: 2,
        sync_mode: mode,
        trace_capacity: capacity,
        rank,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(256)).unwrap();
    for _pass in 0..2 {
        prof.begin_pass();
        for layer in 0..2 {
            prof.begin_layer(layer);
            let outer = prof.start_brick(BrickId::DownProjection);
            for ns in [1_500u64, 2_500] {
                let inner = prof.start_brick(BrickId::Activation);
                device.launch(ns);
                prof.stop_brick(inner, 1);
            }
            prof.stop_brick(outer, 1);
            prof.end_layer();
        }
        let t = prof.start_brick(BrickId::LmHead);
        device.launch(10_000);
        prof.stop_brick(t, 1);
        prof.end_pass(1).unwrap();
    }
    prof
}
