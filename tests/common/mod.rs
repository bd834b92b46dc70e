//! Helpers shared by integration tests.

#![allow(dead_code)]

mod fixed;
#[allow(unused_imports)] // not every test uses it
pub use fixed::*;

use brickprof::{BrickId, BrickProfiler, ProfilerConfig};

pub mod attackers;
pub mod calibrated;
#[cfg(feature = "cuda")]
pub mod cuda_standin;
pub mod hostile;
pub mod native;
pub mod render;
pub mod scrape;
pub mod xml;
/// Two traced passes of two layers on the simulated device (2 µs launch overhead): in each
/// layer a DownProjection enclosing two Activation launches (1.5 and 2.5 µs), then an LmHead
/// (10 µs) outside the layers.
pub fn traced_sim_profiler(
    mode: brickprof::SyncMode,
    capacity: usize,
    rank: u32,
) -> BrickProfiler<brickprof::timeline::SimTimeline> {
    let device = brickprof::timeline::SimDevice::new(2_000);
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

/// The shaped passes of [`shaped_sim_profiler`]: (new tokens, sequences, context tokens, host
/// wall ns), oldest first: a prompt in two prefill chunks, then four decode steps of a batch of
/// two sequences.
pub const SHAPED_PASSES: [(u32, u32, u64, u64); 6] = [
    (8, 1, 8, 300_000),
    (8, 1, 16, 500_000),
    (2, 2, 34, 100_000),
    (2, 2, 36, 110_000),
    (2, 2, 38, 120_000),
    (2, 2, 40, 130_000),
];

/// A traced run of [`SHAPED_PASSES`] on the simulated device: per pass, per layer of two, an
/// UpProjection (3 µs), then the host works the pass's wall time. Then one unshaped pass.
pub fn shaped_sim_profiler(capacity: usize) -> BrickProfiler<brickprof::timeline::SimTimeline> {
    let device = brickprof::timeline::SimDevice::new(0);
    let config = ProfilerConfig {
        layers: 2,
        trace_capacity: capacity,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(256)).unwrap();
    let pass = |prof: &mut BrickProfiler<_>, wall: u64| {
        for layer in 0..2 {
            prof.begin_layer(layer);
            let t = prof.start_brick(BrickId::UpProjection);
            device.launch(3_000);
            prof.stop_brick(t, 1);
            prof.end_layer();
        }
        device.host_work(wall);
    };
    for (tokens, sequences, context, wall) in SHAPED_PASSES {
        let shape = brickprof::PassShape::new(tokens, sequences, context).unwrap();
        prof.begin_pass();
        prof.set_pass_shape(shape);
        pass(&mut prof, wall);
        prof.end_pass(u64::from(tokens)).unwrap();
    }
    prof.begin_pass();
    pass(&mut prof, 50_000);
    prof.end_pass(1).unwrap();
    prof
}
