//! spec/work-accounting.md "Tiles".

use brickprof::{stats::TileLevel, BrickId, ProfilerConfig, Work};
use proptest::prelude::*;

use crate::common::{brick, mock_profiler};

/// A brick call: idle before, then sequential (gap, tile duration) pairs, then idle after.
type Call = (BrickId, u64, Vec<(u64, u64)>, u64);

fn calls() -> impl Strategy<Value = Vec<Call>> {
    proptest::collection::vec(
        (
            brick(),
            0u64..1_000,
            proptest::collection::vec((0u64..500, 0u64..5_000), 0..6),
            0u64..1_000,
        ),
        0..30,
    )
}

proptest! {
    /// Invariant: when tiles run one after another inside a brick, each level's tile total
    /// never exceeds the brick's total, and equals the sum of the tile durations (mock clock).
    #[test]
    fn sequential_tiles_never_exceed_their_brick(calls in calls(), level in 0usize..3) {
        let level = [TileLevel::Macro, TileLevel::Midi, TileLevel::Micro][level];
        let (mock, mut prof) = mock_profiler(ProfilerConfig::default());
        let mut expected = [0u64; BrickId::ALL.len()];
        for (b, before, tiles, after) in &calls {
            let t = prof.start_brick(*b);
            mock.increment(*before);
            for (gap, ns) in tiles {
                mock.increment(*gap);
                let tile = prof.start_tile(level);
                mock.increment(*ns);
                prof.stop_tile(tile, Work { elements: 0, flops: 1, bytes: 0 });
                expected[*b as usize] += ns;
            }
            mock.increment(*after);
            prof.stop_brick(t, 1);
        }
        prof.finalize().unwrap();
        let p = prof.profile();
        for b in BrickId::ALL {
            let tile_total = p
                .brick(b.name())
                .and_then(|x| x.tiles.iter().find(|t| t.level == level))
                .map_or(0, |t| t.stats.summary().total_ns);
            prop_assert_eq!(tile_total, expected[b as usize]);
            prop_assert!(tile_total <= prof.view().brick_stats(b).summary().total_ns);
        }
    }

    /// Invariant: on the real clock too (rounding must not break it), tiles sum to at most
    /// their brick.
    #[test]
    fn sequential_tiles_on_the_real_clock(n in 1usize..20) {
        let mut prof = brickprof::BrickProfiler::default();
        let t = prof.start_brick(BrickId::DownProjection);
        for i in 0..n {
            let tile = prof.start_tile(TileLevel::Micro);
            std::hint::black_box((0..(i * 50) as u64).sum::<u64>());
            prof.stop_tile(tile, Work::default());
        }
        prof.stop_brick(t, 1);
        prof.finalize().unwrap();
        let p = prof.profile();
        let tiles = &p
            .brick("DownProjection")
            .and_then(|x| x.tiles.iter().find(|t| t.level == TileLevel::Micro))
            .unwrap()
            .stats;
        prop_assert_eq!(tiles.summary().count, n as u64);
        prop_assert!(tiles.summary().total_ns <= prof.view().brick_stats(BrickId::DownProjection).summary().total_ns);
    }
}
