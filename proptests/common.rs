//! Shared strategies and helpers.

use brickprof::{BrickId, BrickProfiler, CpuTimeline, HostClock, MockClock, ProfilerConfig};
use proptest::prelude::*;

/// A built-in brick.
pub fn brick() -> impl Strategy<Value = BrickId> {
    (0..BrickId::COUNT).prop_map(|i| BrickId::ALL[i])
}

/// Durations from 0 ns to ~10 s, biased to the small values kernels take.
pub fn duration() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..100, 100u64..100_000, 100_000u64..10_000_000_000]
}

/// A CPU-timeline profiler on a mock clock.
pub fn mock_profiler(config: ProfilerConfig) -> (MockClock, BrickProfiler) {
    let (clock, mock) = HostClock::mock();
    (
        mock,
        BrickProfiler::with_timeline(config, CpuTimeline::with_clock(clock)).unwrap(),
    )
}

/// One measurement: (layer or none, brick, duration).
pub type Sample = (Option<usize>, BrickId, u64);

/// Record samples into a mock-clock profiler exactly.
pub fn record(prof: &mut BrickProfiler, mock: &MockClock, samples: &[Sample]) {
    for &(layer, brick, ns) in samples {
        if let Some(l) = layer {
            prof.begin_layer(l);
        }
        let t = prof.start_brick(brick);
        mock.increment(ns);
        prof.stop_brick(t, 1);
        if layer.is_some() {
            prof.end_layer();
        }
    }
    prof.finalize().unwrap();
}

/// Samples over `layers` layers (indices up to `layers + 1`, so some are out of range).
pub fn samples(layers: usize, max: usize) -> impl Strategy<Value = Vec<Sample>> {
    proptest::collection::vec(
        (proptest::option::of(0..layers + 2), brick(), duration()),
        0..max,
    )
}
