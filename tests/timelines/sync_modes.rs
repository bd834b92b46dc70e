//! spec/sync-modes.md: each mode's behaviour on the simulated device and the CPU timeline.

use brickprof::{
    model::OverflowPolicy,
    profile::RowKey,
    timeline::{HostClock, SimDevice},
    BrickId, BrickProfiler, CpuTimeline, ProfilerConfig, SyncMode, Work,
};

const US: u64 = 1_000;

fn sim_profiler(
    mode: SyncMode,
    overhead_ns: u64,
    layers: usize,
) -> (SimDevice, BrickProfiler<brickprof::timeline::SimTimeline>) {
    let device = SimDevice::new(overhead_ns);
    let config = ProfilerConfig {
        layers,
        sync_mode: mode,
        ..ProfilerConfig::default()
    };
    let prof = BrickProfiler::with_timeline(config, device.timeline(1024)).unwrap();
    (device, prof)
}

/// Three kernels of 100, 200, 300 µs launched back to back.
fn launch_three(device: &SimDevice, prof: &mut BrickProfiler<brickprof::timeline::SimTimeline>) {
    for (brick, us) in [
        (BrickId::RmsNorm, 100),
        (BrickId::QkvProjection, 200),
        (BrickId::AttentionScore, 300),
    ] {
        let t = prof.start_brick(brick);
        device.launch(us * US);
        prof.stop_brick(t, 1);
    }
}

#[test]
fn deferred_resolves_each_bricks_own_duration_after_one_sync() {
    // spec/sync-modes.md "Modes" (Deferred) and "A brick's duration is its own".
    let (device, mut prof) = sim_profiler(SyncMode::Deferred, 0, 0);
    launch_three(&device, &mut prof);
    assert_eq!(
        device.counts().syncs,
        0,
        "deferred must not sync on the hot path"
    );
    assert_eq!(prof.view().in_flight.pending, 3);
    prof.finalize().unwrap();
    assert_eq!(device.counts().syncs, 1);
    assert_eq!(prof.view().counters.syncs, 1);
    assert_eq!(
        prof.view().brick_stats(BrickId::RmsNorm).summary().total_ns,
        100 * US
    );
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::QkvProjection)
            .summary()
            .total_ns,
        200 * US
    );
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::AttentionScore)
            .summary()
            .total_ns,
        300 * US
    );
}

#[test]
fn immediate_gives_the_same_durations_with_a_sync_per_brick() {
    // spec/sync-modes.md "Modes" (Immediate).
    let (device, mut prof) = sim_profiler(SyncMode::Immediate, 0, 0);
    launch_three(&device, &mut prof);
    assert_eq!(device.counts().syncs, 3);
    assert_eq!(prof.view().in_flight.pending, 0);
    prof.finalize().unwrap();
    assert_eq!(device.counts().syncs, 3, "nothing left to sync");
    assert_eq!(prof.view().counters.syncs, 3);
    assert_eq!(
        prof.view().brick_stats(BrickId::RmsNorm).summary().total_ns,
        100 * US
    );
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::QkvProjection)
            .summary()
            .total_ns,
        200 * US
    );
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::AttentionScore)
            .summary()
            .total_ns,
        300 * US
    );
}

#[test]
fn per_layer_resolves_at_each_layer_end() {
    // spec/sync-modes.md "Modes" (PerLayer).
    let (device, mut prof) = sim_profiler(SyncMode::PerLayer, 0, 2);
    for layer in 0..2 {
        prof.begin_layer(layer);
        for _ in 0..2 {
            let t = prof.start_brick(BrickId::DownProjection);
            device.launch((layer as u64 + 1) * 50 * US);
            prof.stop_brick(t, 1);
        }
        assert_eq!(
            prof.view().in_flight.pending,
            2,
            "nothing resolved inside the layer"
        );
        assert_eq!(device.counts().syncs, layer as u64);
        prof.end_layer();
        assert_eq!(prof.view().in_flight.pending, 0);
        assert_eq!(device.counts().syncs, layer as u64 + 1);
    }
    prof.finalize().unwrap();
    assert_eq!(device.counts().syncs, 2);
    assert_eq!(
        prof.view()
            .row_stats(
                brickprof::model::PhaseFilter::All,
                brickprof::profile::RowKey::Layer(0),
                BrickId::DownProjection
            )
            .unwrap()
            .summary()
            .total_ns,
        100 * US
    );
    assert_eq!(
        prof.view()
            .row_stats(
                brickprof::model::PhaseFilter::All,
                brickprof::profile::RowKey::Layer(1),
                BrickId::DownProjection
            )
            .unwrap()
            .summary()
            .total_ns,
        200 * US
    );
}

#[test]
fn none_records_host_dispatch_only_and_never_syncs() {
    // spec/sync-modes.md "Modes" (None): the launch overhead is what is measured.
    let (device, mut prof) = sim_profiler(SyncMode::None, 7 * US, 0);
    launch_three(&device, &mut prof);
    prof.finalize().unwrap();
    assert_eq!(device.counts().syncs, 0);
    let s = prof.view().brick_stats(BrickId::AttentionScore);
    assert_eq!(
        s.summary().total_ns,
        7 * US,
        "host dispatch, not the 300 µs kernel"
    );
    assert_eq!(s.summary().host_total_ns, 7 * US);
}

#[test]
fn host_and_device_time_are_both_kept() {
    // spec/sync-modes.md "Host time and device time".
    let (device, mut prof) = sim_profiler(SyncMode::Deferred, 5 * US, 0);
    let warm = prof.start_brick(BrickId::Embedding);
    device.launch(10 * US);
    prof.stop_brick(warm, 1);
    launch_three(&device, &mut prof);
    prof.finalize().unwrap();
    let s = prof.view().brick_stats(BrickId::QkvProjection);
    assert_eq!(s.summary().total_ns, 200 * US, "device time");
    assert_eq!(s.summary().host_total_ns, 5 * US, "host dispatch time");
}

#[test]
fn deferred_durations_do_not_stretch_to_finalize_on_the_cpu() {
    // spec/sync-modes.md "A brick's duration is its own": busy-waits of 1 and 4 ms, then a long
    // wait before finalize. A start-to-finalize profiler would report ~20 ms for both.
    let mut prof = BrickProfiler::new(ProfilerConfig::default()).unwrap();
    let spin = |ms: u64| {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(ms) {}
    };
    for _ in 0..3 {
        let t = prof.start_brick(BrickId::RmsNorm);
        spin(1);
        prof.stop_brick(t, 1);
        let t = prof.start_brick(BrickId::LmHead);
        spin(4);
        prof.stop_brick(t, 1);
    }
    spin(20);
    prof.finalize().unwrap();
    // The best of three calls, and bounds wide enough for a loaded machine (a descheduled
    // spin only lengthens a brick), yet far from the 20+ ms a start-to-finalize profiler
    // reports for every call.
    let short = prof.view().brick_stats(BrickId::RmsNorm).summary().min_ns as f64 / 1e6;
    let long = prof.view().brick_stats(BrickId::LmHead).summary().min_ns as f64 / 1e6;
    assert!(
        (0.9..12.0).contains(&short),
        "RmsNorm best {short} ms, expected ~1"
    );
    assert!(
        (3.9..15.0).contains(&long),
        "LmHead best {long} ms, expected ~4"
    );
}

/// Ten 10 µs kernels through a pending buffer of four.
fn overflow_ten(overflow: OverflowPolicy) -> BrickProfiler<brickprof::timeline::SimTimeline> {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        pending_capacity: 4,
        overflow,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(64)).unwrap();
    for _ in 0..10 {
        let t = prof.start_brick(BrickId::Activation);
        device.launch(10 * US);
        prof.stop_brick(t, 1);
    }
    prof
}

#[test]
fn full_buffer_with_drop_policy_counts_and_keeps_the_rest() {
    // spec/sync-modes.md "Bounded pending buffer".
    let mut prof = overflow_ten(OverflowPolicy::Drop);
    assert_eq!(prof.view().in_flight.pending, 4);
    prof.finalize().unwrap();
    assert_eq!(prof.view().counters.dropped, 6);
    let s = prof.view().brick_stats(BrickId::Activation);
    assert_eq!((s.summary().count, s.summary().total_ns), (4, 40 * US));
}

#[test]
fn full_buffer_with_flush_policy_loses_nothing() {
    // spec/sync-modes.md "Bounded pending buffer".
    let mut prof = overflow_ten(OverflowPolicy::Flush);
    prof.finalize().unwrap();
    let c = prof.view().counters;
    assert_eq!(c.dropped, 0);
    assert_eq!(c.overflow_flushes, 2);
    assert_eq!(
        c.syncs, 3,
        "the 5th and 9th starts found the buffer full and flushed the 4 before them; \
         finalize resolved the last 2"
    );
    let s = prof.view().brick_stats(BrickId::Activation);
    assert_eq!((s.summary().count, s.summary().total_ns), (10, 100 * US));
}

#[test]
fn exhausted_event_pool_is_counted_not_a_panic() {
    // spec/sync-modes.md "Bounded pending buffer": the device's marks run out before the buffer.
    let device = SimDevice::new(0);
    let mut prof =
        BrickProfiler::with_timeline(ProfilerConfig::default(), device.timeline(4)).unwrap();
    for _ in 0..5 {
        let t = prof.start_brick(BrickId::Sampling);
        device.launch(US);
        prof.stop_brick(t, 1);
    }
    let err = prof.finalize().unwrap_err();
    assert!(err.to_string().contains("invalid"), "{err}");
    assert_eq!(prof.view().counters.dropped, 3);
    assert_eq!(
        prof.view().brick_stats(BrickId::Sampling).summary().count,
        2
    );
    // The pool is recycled after finalize: the next pass works again.
    let t = prof.start_brick(BrickId::Sampling);
    device.launch(US);
    prof.stop_brick(t, 1);
    prof.finalize().unwrap();
    assert_eq!(
        prof.view().brick_stats(BrickId::Sampling).summary().count,
        3
    );
}

#[test]
fn nested_bricks_in_immediate_mode_keep_their_outer_mark() {
    let (device, mut prof) = sim_profiler(SyncMode::Immediate, 0, 0);
    let outer = prof.start_brick(BrickId::LmHead);
    let inner = prof.start_brick(BrickId::Sampling);
    device.launch(30 * US);
    prof.stop_brick(inner, 1);
    device.launch(20 * US);
    prof.stop_brick(outer, 1);
    prof.finalize().unwrap();
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::Sampling)
            .summary()
            .total_ns,
        30 * US
    );
    assert_eq!(
        prof.view().brick_stats(BrickId::LmHead).summary().total_ns,
        50 * US
    );
}

#[test]
fn mock_cpu_timeline_is_exact_in_every_mode() {
    for mode in [
        SyncMode::Immediate,
        SyncMode::PerLayer,
        SyncMode::Deferred,
        SyncMode::None,
    ] {
        let (clock, mock) = HostClock::mock();
        let config = ProfilerConfig {
            layers: 1,
            sync_mode: mode,
            ..ProfilerConfig::default()
        };
        let mut prof =
            BrickProfiler::with_timeline(config, CpuTimeline::with_clock(clock)).unwrap();
        prof.begin_layer(0);
        let t = prof.start_brick(BrickId::GateProjection);
        mock.increment(1_234);
        prof.stop_brick_with(
            t,
            Work {
                elements: 2,
                flops: 10,
                bytes: 0,
            },
        );
        prof.end_layer();
        prof.finalize().unwrap();
        let s = prof
            .view()
            .row_stats(
                brickprof::model::PhaseFilter::All,
                RowKey::Layer(0),
                BrickId::GateProjection,
            )
            .unwrap();
        assert_eq!(
            (
                s.summary().count,
                s.summary().total_ns,
                s.summary().host_total_ns
            ),
            (1, 1_234, 1_234),
            "{mode}"
        );
        assert_eq!(s.summary().work.flops, 10);
    }
}
