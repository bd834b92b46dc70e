//! Real engines' habits: stops in any order, leaked tokens (early returns), tokens from another
//! profiler, composite bricks around others (self vs inclusive time), bricks registered at run
//! time and checksummed twice. spec/hot-path.md "Tokens", "Self time", "One grid".

use brickprof::{
    timeline::{HostClock, MockClock, SimDevice, SimTimeline},
    BrickId, BrickProfiler, ProfilerConfig, SyncMode,
};

const US: u64 = 1_000;

fn sim(layers: usize, mode: SyncMode, events: usize) -> (SimDevice, BrickProfiler<SimTimeline>) {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers,
        sync_mode: mode,
        pending_capacity: 64,
        ..ProfilerConfig::default()
    };
    let prof = BrickProfiler::with_timeline(config, device.timeline(events)).unwrap();
    (device, prof)
}

fn cpu(mode: SyncMode) -> (MockClock, BrickProfiler) {
    let (clock, mock) = HostClock::mock();
    let config = ProfilerConfig {
        layers: 2,
        sync_mode: mode,
        ..ProfilerConfig::default()
    };
    let prof =
        BrickProfiler::with_timeline(config, brickprof::CpuTimeline::with_clock(clock)).unwrap();
    (mock, prof)
}

const MODES: [SyncMode; 4] = [
    SyncMode::Deferred,
    SyncMode::Immediate,
    SyncMode::PerLayer,
    SyncMode::None,
];

#[test]
fn stops_in_any_order_record_their_own_time_and_later_passes_are_unharmed() {
    // spec/hot-path.md "Tokens": start A, start B, stop A, stop B.
    for mode in [SyncMode::Deferred, SyncMode::Immediate, SyncMode::PerLayer] {
        let (device, mut prof) = sim(2, mode, 8);
        prof.begin_layer(0);
        let a = prof.start_brick(BrickId::RmsNorm);
        device.launch(10 * US);
        let b = prof.start_brick(BrickId::QkvProjection);
        device.launch(20 * US);
        prof.stop_brick(a, 1); // out of order: A before B
        device.launch(5 * US);
        prof.stop_brick(b, 1);
        prof.end_layer();
        prof.end_pass(1).unwrap();
        let (a, b) = (
            prof.view().brick_stats(BrickId::RmsNorm),
            prof.view().brick_stats(BrickId::QkvProjection),
        );
        assert_eq!(
            a.summary().total_ns,
            30 * US,
            "{mode}: A runs from its start to its stop"
        );
        assert_eq!(
            b.summary().total_ns,
            25 * US,
            "{mode}: B runs from its start to its stop"
        );
        assert_eq!(
            a.summary().self_ns,
            10 * US,
            "{mode}: A minus its overlap with B"
        );
        assert_eq!(b.summary().self_ns, 25 * US, "{mode}");
        // 40 more passes, each with 4 marks per brick pair, on a pool of 8 events: every one
        // records, none is dropped, no end_pass fails.
        for _ in 0..40 {
            let t = prof.start_brick(BrickId::LmHead);
            device.launch(US);
            prof.stop_brick(t, 1);
            let t = prof.start_brick(BrickId::Sampling);
            device.launch(US);
            prof.stop_brick(t, 1);
            prof.end_pass(1).unwrap();
        }
        let c = prof.view().counters;
        assert_eq!((c.dropped, c.unclosed, c.stray_stops), (0, 0, 0), "{mode}");
        assert_eq!(
            prof.view().brick_stats(BrickId::LmHead).summary().count,
            40,
            "{mode}"
        );
        assert_eq!(
            prof.view().brick_stats(BrickId::Sampling).summary().count,
            40,
            "{mode}"
        );
    }
}

#[test]
fn every_stop_order_of_three_nested_bricks_records_all_three() {
    // spec/hot-path.md "Tokens": any of the 6 stop orders, in every mode.
    let orders = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    for mode in MODES {
        for order in orders {
            let (mock, mut prof) = cpu(mode);
            let bricks = [BrickId::Embedding, BrickId::RmsNorm, BrickId::LmHead];
            let mut tokens: Vec<Option<_>> = bricks
                .iter()
                .map(|&b| {
                    let t = prof.start_brick(b);
                    mock.increment(100);
                    Some(t)
                })
                .collect();
            let mut stop_at = [0u64; 3];
            for (k, &i) in order.iter().enumerate() {
                mock.increment(10 * (k as u64 + 1));
                stop_at[i] = mock.value(); // 1 tick = 1 ns
                prof.stop_brick(tokens[i].take().unwrap(), 1);
            }
            prof.end_pass(1).unwrap();
            for (i, b) in bricks.iter().enumerate() {
                let s = prof.view().brick_stats(*b);
                assert_eq!(s.summary().count, 1, "{mode} {order:?} {b}");
                assert_eq!(
                    s.summary().total_ns,
                    stop_at[i] - 100 * i as u64,
                    "{mode} {order:?} {b}: its own start to its own stop"
                );
                assert!(s.summary().self_ns <= s.summary().total_ns);
            }
            assert_eq!(prof.view().in_flight.open, 0);
            assert_eq!(prof.view().counters.stray_stops, 0);
        }
    }
}

fn early_return(
    prof: &mut BrickProfiler<SimTimeline>,
    device: &SimDevice,
    fail: bool,
) -> Result<(), String> {
    let t = prof.start_brick(BrickId::AttentionScore);
    device.launch(7 * US);
    if fail {
        return Err("kernel failed".into()); // the token leaks
    }
    prof.stop_brick(t, 1);
    Ok(())
}

#[test]
fn a_leaked_token_costs_only_its_measurement_and_end_pass_leaves_the_profiler_clean() {
    // spec/hot-path.md "Tokens": an early `?` between start and stop.
    for mode in [SyncMode::Deferred, SyncMode::Immediate, SyncMode::PerLayer] {
        let (device, mut prof) = sim(1, mode, 6);
        for pass in 0..30 {
            prof.begin_layer(0);
            let outer = prof.start_brick(BrickId::RmsNorm);
            device.launch(US);
            let _ = early_return(&mut prof, &device, pass % 3 == 0);
            prof.stop_brick(outer, 1);
            prof.end_layer();
            prof.end_pass(1).unwrap();
            assert_eq!(prof.view().in_flight.open, 0, "{mode}: nothing left open");
            assert_eq!(
                prof.view().in_flight.pending,
                0,
                "{mode}: nothing left pending"
            );
        }
        let c = prof.view().counters;
        assert_eq!(c.unclosed, 10, "{mode}");
        assert_eq!(c.dropped, 0, "{mode}: the pool was recycled every pass");
        assert_eq!(
            prof.view()
                .brick_stats(BrickId::AttentionScore)
                .summary()
                .count,
            20
        );
        assert_eq!(
            prof.view().brick_stats(BrickId::RmsNorm).summary().count,
            30
        );
    }
}

#[test]
fn a_token_stopped_after_end_pass_is_stray_not_recorded() {
    // spec/hot-path.md "Tokens".
    let (mock, mut prof) = cpu(SyncMode::Deferred);
    let t = prof.start_brick(BrickId::RmsNorm);
    mock.increment(100);
    prof.end_pass(1).unwrap();
    let u = prof.start_brick(BrickId::LmHead); // reuses the entry index
    prof.stop_brick(t, 1);
    prof.stop_brick(u, 1);
    prof.end_pass(1).unwrap();
    let c = prof.view().counters;
    assert_eq!((c.unclosed, c.stray_stops), (1, 1));
    assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).summary().count, 0);
    assert_eq!(prof.view().brick_stats(BrickId::LmHead).summary().count, 1);
}

#[test]
fn a_token_from_another_profiler_is_counted_never_recorded_into_another_cell() {
    // spec/hot-path.md "Tokens": a layer-20 RmsNorm token stopped on a 2-layer profiler.
    let mut big = BrickProfiler::new(ProfilerConfig::with_layers(32)).unwrap();
    let mut small = BrickProfiler::new(ProfilerConfig::with_layers(2)).unwrap();
    big.begin_layer(20);
    let t = big.start_brick(BrickId::RmsNorm);
    let mine = small.start_brick(BrickId::AttentionSoftmax);
    small.stop_brick(t, 1);
    small.stop_brick(mine, 1);
    small.end_pass(1).unwrap();
    assert_eq!(small.view().counters.stray_stops, 1);
    assert_eq!(
        small.view().brick_stats(BrickId::RmsNorm).summary().count,
        0
    );
    assert_eq!(
        small
            .view()
            .brick_stats(BrickId::AttentionSoftmax)
            .summary()
            .count,
        1
    );
    big.end_pass(1).unwrap();
    assert_eq!(big.view().counters.unclosed, 1);

    // Two simulated devices: a token never resolves against the other's event pool.
    let (d1, mut p1) = sim(0, SyncMode::Deferred, 8);
    let (_d2, mut p2) = sim(0, SyncMode::Deferred, 8);
    let t = p1.start_brick(BrickId::LmHead);
    d1.launch(US);
    p2.stop_brick(t, 1);
    p2.finalize().unwrap();
    assert_eq!(p2.view().counters.stray_stops, 1);
    assert_eq!(p2.view().counters.dropped, 0);
    assert_eq!(p2.view().brick_stats(BrickId::LmHead).summary().count, 0);
}

#[test]
fn a_composite_brick_counts_once_self_time_sums_to_the_wall() {
    // spec/hot-path.md "Self time": wrapping a composite brick never pushes shares past 100 %.
    for mode in MODES {
        let (mock, mut prof) = cpu(mode);
        let block = prof
            .register("transformer_block", brickprof::BrickCategory::Other)
            .unwrap();
        prof.begin_layer(0);
        let outer = prof.start_brick(block);
        mock.increment(5);
        for (b, ns) in [(BrickId::RmsNorm, 100), (BrickId::QkvProjection, 300)] {
            let t = prof.start_brick(b);
            mock.increment(ns);
            prof.stop_brick(t, 1);
        }
        mock.increment(20);
        prof.stop_brick(outer, 1);
        prof.end_layer();
        prof.end_pass(1).unwrap();
        let s = prof.view().brick_stats(block);
        assert_eq!(
            (s.summary().total_ns, s.summary().self_ns),
            (425, 25),
            "{mode}"
        );
        let p = prof.profile();
        assert_eq!(p.total_ns(), 425, "{mode}: the wall time, counted once");
        let sum_pct: f64 = brickprof::figures::Derived::of(&p, None)
            .bricks
            .iter()
            .map(|r| r.pct)
            .sum();
        assert!(
            (sum_pct - 100.0).abs() < 1e-9,
            "{mode}: shares sum to {sum_pct}"
        );
    }
}

#[test]
fn a_registered_brick_checksummed_twice_in_a_layer_gets_two_calls() {
    // spec/hot-path.md "One grid": register grows the checksum call counters too.
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 2,
        checksums: true,
        ..ProfilerConfig::default()
    })
    .unwrap();
    let expert = prof
        .register("moe_expert", brickprof::BrickCategory::Other)
        .unwrap();
    for _ in 0..2 {
        prof.checksums().record(Some(1), expert, &[1.0, 2.0]);
        prof.checksums().record(Some(1), expert, &[3.0, 4.0]);
        prof.end_pass(1).unwrap();
    }
    let calls: Vec<(u64, u32)> = prof
        .view()
        .checksum_log
        .entries
        .iter()
        .map(|e| (e.key.pass, e.key.call))
        .collect();
    assert_eq!(calls, vec![(0, 0), (0, 1), (1, 0), (1, 1)]);
    let log = prof.view().checksum_log.clone();
    let report =
        brickprof::compare::divergence(&log, &log, brickprof::compare::Tolerance::default())
            .unwrap();
    assert!(report.is_match(), "{report:?}");
}

#[test]
fn limits_are_checked_before_allocating() {
    // spec/hot-path.md "Limits".
    let too_many = ProfilerConfig::with_layers(brickprof::model::Limit::Layers.max() + 1);
    let err = BrickProfiler::new(too_many).unwrap_err().to_string();
    assert!(err.contains("layers"), "{err}");
    assert!(BrickProfiler::new(ProfilerConfig {
        pending_capacity: 0,
        ..ProfilerConfig::default()
    })
    .is_err());
    let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(0)).unwrap();
    let mut last = Ok(BrickId::RmsNorm.into());
    for i in 0..70_000 {
        last = prof.register(&format!("b{i}"), brickprof::BrickCategory::Other);
        if last.is_err() {
            break;
        }
    }
    let err = last.unwrap_err().to_string();
    assert!(err.contains("at most"), "{err}");
    assert_eq!(
        prof.view().registry.handles().count(),
        brickprof::model::Limit::Bricks.max()
    );
}

#[test]
fn limit_errors_name_the_limit_a_caller_can_match_on() {
    // spec/hot-path.md "Limits": the error carries the limit and what was asked for.
    use brickprof::{model::Limit, Error};
    let over = |config: ProfilerConfig| match BrickProfiler::new(config) {
        Err(Error::OverLimit { limit, requested }) => (limit, requested),
        other => panic!("expected OverLimit, got {other:?}"),
    };
    assert_eq!(
        over(ProfilerConfig::with_layers(Limit::Layers.max() + 1)),
        (Limit::Layers, Limit::Layers.max() + 1)
    );
    assert_eq!(
        over(ProfilerConfig {
            pending_capacity: 0,
            ..ProfilerConfig::default()
        }),
        (Limit::PendingCapacity, 0)
    );
    assert_eq!(Limit::Layers.max(), 4096);
    // As many rows as the built-in bricks leave room for: the first registration is over.
    let layers = Limit::Cells.max() / BrickId::ALL.len() - 2;
    let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(layers)).unwrap();
    let err = (0..100)
        .find_map(|i| {
            prof.register(&format!("b{i}"), brickprof::BrickCategory::Other)
                .err()
        })
        .expect("the cell limit is reached");
    match err {
        Error::OverLimit {
            limit: Limit::Cells,
            requested,
        } => assert!(requested > Limit::Cells.max()),
        other => panic!("expected the cell limit, got {other:?}"),
    }
}

#[test]
fn merge_keeps_trace_drops_and_refuses_other_modes() {
    // spec/hot-path.md "Enable, disable, reset, merge": profilers merge as snapshots.
    let config = ProfilerConfig {
        trace_capacity: 1,
        ..ProfilerConfig::default()
    };
    let a = BrickProfiler::new(config.clone()).unwrap();
    let mut b = BrickProfiler::new(config.clone()).unwrap();
    for _ in 0..3 {
        let t = b.start_brick(BrickId::LmHead);
        b.stop_brick(t, 1);
    }
    b.end_pass(1).unwrap();
    assert_eq!(b.view().counters.trace_dropped, 2);
    let mut merged = a.profile();
    merged.merge(&b.profile()).unwrap();
    assert_eq!(merged.meta.counters.trace_dropped, 2);
    let c = BrickProfiler::new(ProfilerConfig {
        sync_mode: SyncMode::None,
        ..config
    })
    .unwrap();
    assert!(merged.merge(&c.profile()).is_err());
    let device = SimDevice::new(0);
    let d = BrickProfiler::with_timeline(ProfilerConfig::default(), device.timeline(4)).unwrap();
    assert!(merged.merge(&d.profile()).is_err());
}

/// A timeline on a mock clock whose resolving costs 1 µs of host time per call, like a
/// driver query would.
struct SlowResolve {
    clock: HostClock,
    mock: MockClock,
}

impl brickprof::Timeline for SlowResolve {
    fn kind(&self) -> brickprof::timeline::TimelineKind {
        brickprof::timeline::TimelineKind::Sim
    }
    fn host_clock(&self) -> HostClock {
        self.clock.clone()
    }
    fn mark(&mut self, host_ticks: u64) -> u64 {
        host_ticks
    }
    fn sync(&mut self) -> brickprof::Result<()> {
        Ok(())
    }
    fn resolve_ns(&mut self, start: u64, end: u64) -> brickprof::Result<u64> {
        self.mock.increment(US);
        Ok(end - start)
    }
    fn timestamp_ns(&mut self, mark: u64) -> brickprof::Result<u64> {
        Ok(mark)
    }
}

#[test]
fn tokens_per_second_does_not_bill_the_resolve_to_the_model() {
    // spec/hot-path.md "Passes and tokens": the pass ends after the sync, before resolving.
    let (clock, mock) = HostClock::mock();
    let timeline = SlowResolve {
        clock,
        mock: mock.clone(),
    };
    let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), timeline).unwrap();
    prof.begin_pass();
    for _ in 0..100 {
        let t = prof.start_brick(BrickId::Activation);
        mock.increment(10 * US);
        prof.stop_brick(t, 1);
    }
    prof.end_pass(1).unwrap();
    assert_eq!(
        prof.view().brick_stats(BrickId::Activation).summary().count,
        100
    );
    // 100 kernels of 10 µs; the 100 µs spent resolving are the profiler's, not the model's.
    assert_eq!(prof.profile().passes.summary().total_ns, 1000 * US);
}
