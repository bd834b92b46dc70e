//! The deterministic profiles both the library's and the CLI's integration tests use
//! (`fixed_profile`, `nested_chain`) and the mock-clock profiler they are made on
//! (`mock_profiler`); the CLI's tests include this file by path.

#![allow(dead_code)]

use brickprof::{
    stats::TileLevel,
    timeline::{HostClock, MockClock},
    BrickCategory, BrickId, BrickProfiler, CpuTimeline, Profile, ProfilerConfig, Work,
};

/// A profiler of `layers` layers on the CPU timeline of a mock clock, and the clock: every
/// duration is exactly what the test advances it by.
pub fn mock_profiler(layers: usize) -> (BrickProfiler, MockClock) {
    let (clock, mock) = HostClock::mock();
    let prof = BrickProfiler::with_timeline(
        ProfilerConfig::with_layers(layers),
        CpuTimeline::with_clock(clock),
    )
    .unwrap();
    (prof, mock)
}

/// One pass in layer 0 of bricks started one inside the other, `chain[0]` outermost: each
/// spends its ns before starting the next (the innermost, all of it), then they stop
/// innermost first. A name may come back (a brick inside itself).
pub fn nested_chain(chain: &[(&str, u64)]) -> Profile {
    let (mut prof, mock) = mock_profiler(1);
    prof.begin_layer(0);
    let mut open = Vec::new();
    for (name, ns) in chain {
        let h = prof
            .register(name, brickprof::BrickCategory::Other)
            .unwrap();
        open.push(prof.start_brick(h));
        mock.increment(*ns);
    }
    while let Some(t) = open.pop() {
        prof.stop_brick(t, 1);
    }
    prof.end_layer();
    prof.end_pass(1).unwrap();
    prof.profile()
}

/// A deterministic profile on a mock clock: 2 layers, 3 passes, a dynamic brick, tiles,
/// checksums when asked. Every duration is fixed, so reports are byte-for-byte stable.
pub fn fixed_profile(checksums: bool) -> Profile {
    let (clock, mock) = HostClock::mock();
    let config = ProfilerConfig {
        layers: 2,
        checksums,
        trace_capacity: 256,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, CpuTimeline::with_clock(clock)).unwrap();
    let router = prof.register("moe_router", BrickCategory::Ffn).unwrap();
    for pass in 0..3u64 {
        prof.begin_pass();
        let t = prof.start_brick(BrickId::Embedding);
        mock.increment(500 + pass);
        prof.stop_brick_with(
            t,
            Work {
                elements: 256,
                flops: 0,
                bytes: 2048,
            },
        );
        for layer in 0..2 {
            prof.begin_layer(layer);
            for (i, (brick, ns)) in [
                (BrickId::RmsNorm, 1_000u64),
                (BrickId::QkvProjection, 12_000),
                (BrickId::AttentionSoftmax, 3_000),
                (BrickId::DownProjection, 20_000),
            ]
            .into_iter()
            .enumerate()
            {
                let t = prof.start_brick(brick);
                if brick == BrickId::DownProjection {
                    for _ in 0..4 {
                        let tile = prof.start_tile(TileLevel::Micro);
                        mock.increment(ns / 5);
                        prof.stop_tile(
                            tile,
                            Work {
                                elements: 0,
                                flops: 65_536,
                                bytes: 131_072,
                            },
                        );
                    }
                    mock.increment(ns / 5);
                } else {
                    mock.increment(ns + (layer as u64) * 100 + pass * 10);
                }
                prof.stop_brick_with(
                    t,
                    Work {
                        elements: 256,
                        flops: 1_000 * (i as u64 + 1) * 256,
                        bytes: 4 * 256 * 256,
                    },
                );
                prof.checksums()
                    .record(Some(layer), brick, &[layer as f32, i as f32, pass as f32]);
            }
            let t = prof.start_brick(router);
            mock.increment(700);
            prof.stop_brick(t, 8);
            prof.end_layer();
        }
        let t = prof.start_brick(BrickId::LmHead);
        mock.increment(30_000);
        prof.stop_brick_with(
            t,
            Work {
                elements: 1024,
                flops: 524_288,
                bytes: 1_048_576,
            },
        );
        mock.increment(1_000);
        prof.end_pass(1).unwrap();
    }
    let mut p = prof.profile();
    p.meta.host = "golden-host".into();
    p.meta.created_unix_s = 1_700_000_000;
    p
}
