//! Shared strategies and helpers.

use brickprof::{
    timeline::{HostClock, MockClock},
    BrickId, BrickProfiler, CpuTimeline, ProfilerConfig,
};
use proptest::prelude::*;

/// A built-in brick.
pub fn brick() -> impl Strategy<Value = BrickId> {
    (0..BrickId::ALL.len()).prop_map(|i| BrickId::ALL[i])
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

/// A realistic profile on a mock clock: 2 layers, a composite brick around nested ones, a
/// registered brick, tiles with work, device peaks. Deterministic.
pub fn nested_profile() -> brickprof::Profile {
    use brickprof::{stats::TileLevel, Work};
    let (mock, mut prof) = mock_profiler(ProfilerConfig::with_layers(2));
    let block = prof
        .register("block", brickprof::BrickCategory::Other)
        .unwrap();
    for pass in 0..3u64 {
        for layer in 0..2 {
            prof.begin_layer(layer);
            let outer = prof.start_brick(block);
            for (i, b) in [
                BrickId::RmsNorm,
                BrickId::QkvProjection,
                BrickId::DownProjection,
            ]
            .into_iter()
            .enumerate()
            {
                let t = prof.start_brick(b);
                let tile = prof.start_tile(TileLevel::Micro);
                mock.increment(100 * (i as u64 + 1) + pass);
                prof.stop_tile(
                    tile,
                    Work {
                        elements: 8,
                        flops: 64,
                        bytes: 32,
                    },
                );
                prof.stop_brick_with(
                    t,
                    Work {
                        elements: 64,
                        flops: 4096,
                        bytes: 512,
                    },
                );
            }
            mock.increment(7);
            prof.stop_brick(outer, 1);
            prof.end_layer();
        }
        let t = prof.start_brick(BrickId::LmHead);
        mock.increment(1_000);
        prof.stop_brick(t, 1);
        prof.end_pass(1).unwrap();
    }
    let mut p = prof.profile();
    p.meta.peaks = Some(brickprof::roofline::DevicePeaks::new("test", 100.0, 50.0).unwrap());
    p
}
