//! spec/sync-modes.md "A brick's duration is its own" and "Modes" on the simulated device.

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
    overhead: u64,
) -> (BrickProfiler<brickprof::SimTimeline>, SimDevice) {
    let device = SimDevice::new(overhead);
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
            let (prof, device) = run(mode, &steps, capacity, 0);
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

proptest! {
    /// Invariant (spec/sync-modes.md "Modes"), with a launch overhead `o` per kernel:
    /// Immediate includes the launch gap after each sync, so each brick's total is exactly
    /// `Σ (kernel + o)`; Deferred and PerLayer hide the gap while the stream is busy, so each
    /// brick's total lies in `[Σ kernel, Σ (kernel + o)]`. Nothing is dropped.
    #[test]
    fn with_launch_overhead_immediate_includes_the_gap_and_deferred_is_bounded_by_it(
        steps in proptest::collection::vec(
            (proptest::option::of(0usize..4), brick(), 1u64..200_000), 1..60),
        capacity in 1usize..32,
        overhead in 1u64..50_000,
    ) {
        let mut kernels = [0u64; BrickId::COUNT];
        let mut calls = [0u64; BrickId::COUNT];
        for &(_, b, ns) in &steps {
            kernels[b as usize] += ns;
            calls[b as usize] += 1;
        }
        for mode in [SyncMode::Immediate, SyncMode::PerLayer, SyncMode::Deferred] {
            let (prof, _device) = run(mode, &steps, capacity, overhead);
            prop_assert_eq!(prof.counters().dropped, 0);
            for b in BrickId::iter() {
                let total = prof.brick_stats(b).total_ns();
                let (low, high) = (kernels[b as usize], kernels[b as usize] + calls[b as usize] * overhead);
                if mode == SyncMode::Immediate {
                    prop_assert_eq!(total, high, "{} {}", mode, b);
                } else {
                    prop_assert!(low <= total && total <= high, "{} {}: {} not in [{}, {}]", mode, b, total, low, high);
                }
            }
        }
    }
}
