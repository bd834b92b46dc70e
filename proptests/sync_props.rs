//! spec/sync-modes.md "A brick's duration is its own" and "Modes" on the simulated device.

use brickprof::{timeline::SimDevice, BrickId, BrickProfiler, ProfilerConfig, SyncMode};
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
) -> (BrickProfiler<brickprof::timeline::SimTimeline>, SimDevice) {
    let device = SimDevice::new(overhead);
    let config = ProfilerConfig {
        layers: 4,
        sync_mode: mode,
        pending_capacity: capacity,
        ..ProfilerConfig::default()
    };
    let pool = 2 * capacity + 2 + brickprof::model::Limit::PassesInFlight.max();
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(pool)).unwrap();
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
    /// however often a small pending buffer is flushed; and Deferred (like Lagged) syncs at
    /// most once per full buffer.
    #[test]
    fn resolved_totals_equal_kernel_durations_in_every_mode(
        steps in proptest::collection::vec(
            (proptest::option::of(0usize..4), brick(), 1u64..5_000_000), 0..80),
        capacity in 1usize..32,
    ) {
        let mut expected = [0u64; BrickId::ALL.len()];
        for &(_, b, ns) in &steps {
            expected[b as usize] += ns;
        }
        for mode in [SyncMode::Immediate, SyncMode::PerLayer, SyncMode::Deferred, SyncMode::Lagged] {
            let (prof, device) = run(mode, &steps, capacity, 0);
            for b in BrickId::iter() {
                prop_assert_eq!(prof.view().brick_stats(b).summary().total_ns, expected[b as usize],
                    "{} {}", mode, b);
            }
            prop_assert_eq!(prof.view().counters.dropped, 0);
            if matches!(mode, SyncMode::Deferred | SyncMode::Lagged) {
                let most = steps.len().div_ceil(capacity).max(1) as u64;
                prop_assert!(device.counts().syncs <= most, "{} syncs for {} steps", device.counts().syncs, steps.len());
            }
        }
    }
}

proptest! {
    /// Invariant (spec/sync-modes.md "Modes"), with a launch overhead `o` per kernel:
    /// Immediate includes the launch gap after each sync, so each brick's total is exactly
    /// `Σ (kernel + o)`; Deferred, Lagged and PerLayer hide the gap while the stream is busy, so each
    /// brick's total lies in `[Σ kernel, Σ (kernel + o)]`. Nothing is dropped.
    #[test]
    fn with_launch_overhead_immediate_includes_the_gap_and_deferred_is_bounded_by_it(
        steps in proptest::collection::vec(
            (proptest::option::of(0usize..4), brick(), 1u64..200_000), 1..60),
        capacity in 1usize..32,
        overhead in 1u64..50_000,
    ) {
        let mut kernels = [0u64; BrickId::ALL.len()];
        let mut calls = [0u64; BrickId::ALL.len()];
        for &(_, b, ns) in &steps {
            kernels[b as usize] += ns;
            calls[b as usize] += 1;
        }
        for mode in [SyncMode::Immediate, SyncMode::PerLayer, SyncMode::Deferred, SyncMode::Lagged] {
            let (prof, _device) = run(mode, &steps, capacity, overhead);
            prop_assert_eq!(prof.view().counters.dropped, 0);
            for b in BrickId::iter() {
                let total = prof.view().brick_stats(b).summary().total_ns;
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

/// Run `passes` (each a launch sequence, then `gap` ns of host work) with `end_pass` after
/// each, then `finalize`.
fn run_passes(
    mode: SyncMode,
    passes: &[(Vec<Step>, u64)],
    capacity: usize,
    warmup: u64,
    in_flight: usize,
) -> (BrickProfiler<brickprof::timeline::SimTimeline>, SimDevice) {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: 4,
        sync_mode: mode,
        pending_capacity: capacity,
        warmup_passes: warmup,
        max_passes_in_flight: in_flight,
        ..ProfilerConfig::default()
    };
    let pool = 2 * capacity + 2 + brickprof::model::Limit::PassesInFlight.max();
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(pool)).unwrap();
    for (steps, gap) in passes {
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
        device.host_work(*gap);
        prof.end_pass(1).unwrap();
    }
    prof.finalize().unwrap();
    (prof, device)
}

proptest! {
    /// Invariant (spec/sync-modes.md "Lagged"): over many passes, whether the host runs ahead
    /// of the device or behind it, with warm-up passes and any limit on passes in flight,
    /// Lagged records exactly what Deferred records (zero launch overhead: every brick's
    /// count, inclusive and self total), drops nothing, counts the same passes, and syncs no
    /// more often than Deferred.
    #[test]
    fn lagged_records_what_deferred_records_over_many_passes(
        passes in proptest::collection::vec(
            (proptest::collection::vec(
                (proptest::option::of(0usize..4), brick(), 1u64..200_000), 0..12),
             0u64..600_000),
            1..20),
        capacity in 1usize..32,
        warmup in 0u64..3,
        in_flight in 1usize..5,
    ) {
        let (deferred, _) = run_passes(SyncMode::Deferred, &passes, capacity, warmup, in_flight);
        let (lagged, _) = run_passes(SyncMode::Lagged, &passes, capacity, warmup, in_flight);
        for b in BrickId::iter() {
            let (l, d) = (lagged.view().brick_stats(b), deferred.view().brick_stats(b));
            prop_assert_eq!((l.summary().count, l.summary().total_ns, l.summary().self_ns), (d.summary().count, d.summary().total_ns, d.summary().self_ns), "{}", b);
        }
        let (lc, dc) = (lagged.view().counters, deferred.view().counters);
        prop_assert_eq!(lc.dropped, 0);
        prop_assert_eq!((lc.passes, lc.warmup_passes_excluded), (dc.passes, dc.warmup_passes_excluded));
        prop_assert!(lc.syncs <= dc.syncs + 1, "{} syncs vs {}", lc.syncs, dc.syncs);
        prop_assert!(lc.blocking_waits <= lc.syncs);
        prop_assert_eq!(lagged.view().in_flight.passes, 0, "finalize resolves every pass");
    }
}
