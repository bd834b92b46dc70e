//! spec/sync-modes.md "A brick's duration is its own" on the simulated device.

use brickprof::{BrickId, BrickProfiler, ProfilerConfig, SimDevice, SyncMode};
use proptest::prelude::*;
use strum::IntoEnumIterator;

use crate::common::brick;

/// One step of a launch sequence: maybe enter a layer, then time one kernel of `us` µs.
type Step = (Option<usize>, BrickId, u64);

fn run(
    mode: SyncMode,
    steps: &[Step],
    capacity: usize,
) -> (BrickProfiler<brickprof::SimTimeline>, SimDevice) {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: 4,
        sync_mode: mode,
        pending_capacity: capacity,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(2 * capacity + 2)).unwrap();
    for &(layer, b, ns) in steps {
        if let Some(l) = layer {
            prof.begin_layer(l);
        }
        let t = prof.start_brick(b);
        device.launch(ns);
        prof.stop_brick(t, 1);
        if layer.is_some() {
            prof.end_layer();
        }
    }
    prof.finalize().unwrap();
    (prof, device)
}

proptest! {
    /// Invariant: for any launch sequence, each brick's resolved total equals the sum of its
    /// kernels' virtual durations, whatever the sync mode (Immediate, PerLayer, Deferred) and
    /// however often a small pending buffer is flushed; and Deferred syncs at most once per
    /// full buffer.
    #[test]
    fn resolved_totals_equal_kernel_durations_in_every_mode(
        steps in proptest::collection::vec(
            (proptest::option::of(0usize..4), brick(), 1u64..5_000_000), 0..80),
        capacity in 1usize..32,
    ) {
        let mut expected = [0u64; BrickId::COUNT];
        for &(_, b, ns) in &steps {
            expected[b as usize] += ns;
        }
        for mode in [SyncMode::Immediate, SyncMode::PerLayer, SyncMode::Deferred] {
            let (prof, device) = run(mode, &steps, capacity);
            for b in BrickId::iter() {
                prop_assert_eq!(prof.brick_stats(b).total_ns(), expected[b as usize],
                    "{} {}", mode, b);
            }
            prop_assert_eq!(prof.counters().dropped, 0);
            if mode == SyncMode::Deferred {
                let most = steps.len().div_ceil(capacity).max(1) as u64;
                prop_assert!(device.syncs() <= most, "{} syncs for {} steps", device.syncs(), steps.len());
            }
        }
    }
}
