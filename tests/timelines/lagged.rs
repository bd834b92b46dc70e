//! spec/sync-modes.md "Lagged": passes resolved without a blocking wait, on the simulated
//! device, against Deferred.

use brickprof::{
    model::Limit,
    timeline::{Calibrated, SimDevice, SimTimeline},
    BrickId, BrickProfiler, Error, ProfilerConfig, SyncMode,
};

const US: u64 = 1_000;

/// The bricks of one pass: (layer, brick, kernel µs).
const PASS: [(usize, BrickId, u64); 6] = [
    (0, BrickId::RmsNorm, 10),
    (0, BrickId::QkvProjection, 40),
    (0, BrickId::AttentionScore, 30),
    (1, BrickId::RmsNorm, 12),
    (1, BrickId::QkvProjection, 45),
    (1, BrickId::AttentionScore, 33),
];

struct Run {
    prof: BrickProfiler<SimTimeline>,
    device: SimDevice,
}

/// How the engine around the profiler behaves between passes.
#[derive(Clone, Copy)]
enum Engine {
    /// Reads its output back at the end of each pass (an LLM's sampled token): waits for the
    /// stream itself.
    ReadsBack,
    /// Spends `host_us` of its own after each pass, never waiting for the stream.
    HostWork(u64),
}

fn run(
    mode: SyncMode,
    passes: u64,
    engine: Engine,
    warmup: u64,
    pool: usize,
    scale: impl Fn(u64) -> u64,
) -> Run {
    run_with(mode, passes, engine, warmup, pool, scale, 0)
}

/// [`run`] with a launch overhead of `overhead_ns` per kernel.
fn run_with(
    mode: SyncMode,
    passes: u64,
    engine: Engine,
    warmup: u64,
    pool: usize,
    scale: impl Fn(u64) -> u64,
    overhead_ns: u64,
) -> Run {
    let device = SimDevice::new(overhead_ns);
    let config = ProfilerConfig {
        layers: 2,
        sync_mode: mode,
        warmup_passes: warmup,
        pending_capacity: 64,
        trace_capacity: 10_000,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(pool)).unwrap();
    for pass in 0..passes {
        prof.begin_pass();
        // An outer brick around the whole pass nests the others.
        let outer = prof.start_brick(BrickId::LmHead);
        for &(layer, brick, us) in &PASS {
            prof.begin_layer(layer);
            let t = prof.start_brick(brick);
            device.launch(scale(pass) * us * US);
            prof.stop_brick(t, 1);
            prof.end_layer();
        }
        prof.stop_brick(outer, 1);
        match engine {
            Engine::ReadsBack => device.synchronize(),
            Engine::HostWork(us) => device.host_work(us * US),
        }
        prof.end_pass(1).unwrap();
    }
    prof.finalize().unwrap();
    Run { prof, device }
}

fn totals(prof: &BrickProfiler<SimTimeline>) -> Vec<(u64, u64, u64)> {
    [
        BrickId::RmsNorm,
        BrickId::QkvProjection,
        BrickId::AttentionScore,
        BrickId::LmHead,
    ]
    .iter()
    .map(|&b| {
        let s = prof.view().brick_stats(b);
        (s.summary().count, s.summary().total_ns, s.summary().self_ns)
    })
    .collect()
}

fn pool_for(config_pending: usize) -> usize {
    2 * config_pending + 2 + brickprof::model::Limit::PassesInFlight.max()
}

/// spec/sync-modes.md "Lagged": the same per-brick durations as Deferred, with no blocking
/// wait when the engine reads its output back each pass (the realistic LLM loop), and far
/// fewer syncs.
#[test]
fn lagged_equals_deferred_and_never_waits_when_the_engine_reads_back() {
    let deferred = run(
        SyncMode::Deferred,
        20,
        Engine::ReadsBack,
        0,
        pool_for(64),
        |_| 1,
    );
    let lagged = run(
        SyncMode::Lagged,
        20,
        Engine::ReadsBack,
        0,
        pool_for(64),
        |_| 1,
    );
    assert_eq!(totals(&lagged.prof), totals(&deferred.prof));
    let (c, d) = (lagged.prof.view().counters, deferred.prof.view().counters);
    assert_eq!((c.passes, c.dropped, c.blocking_waits), (20, 0, 0));
    assert_eq!(d.syncs, 20, "Deferred: one sync per pass");
    assert!(
        c.syncs <= 1,
        "Lagged: only finalize may sync, got {}",
        c.syncs
    );
    assert_eq!(lagged.prof.profile().passes.summary().count, 20);
}

/// spec/sync-modes.md "Lagged": a host that runs ahead of the device keeps passes in flight;
/// the mode waits only when more than `max_passes_in_flight` are, so a steady stream of
/// passes needs fewer blocking waits than passes, and the results still equal Deferred's.
#[test]
fn a_steady_stream_needs_fewer_blocking_waits_than_passes() {
    // Kernels of 170 µs per pass, plus launch gaps; the host spends 50 µs between passes.
    let deferred = run(
        SyncMode::Deferred,
        40,
        Engine::HostWork(50),
        0,
        pool_for(64),
        |_| 1,
    );
    let lagged = run(
        SyncMode::Lagged,
        40,
        Engine::HostWork(50),
        0,
        pool_for(64),
        |_| 1,
    );
    assert_eq!(totals(&lagged.prof), totals(&deferred.prof));
    let c = lagged.prof.view().counters;
    assert!(
        c.blocking_waits > 0 && c.blocking_waits < 40 / 2,
        "{} blocking waits for 40 passes",
        c.blocking_waits
    );
    assert_eq!(c.dropped, 0);
    // With a launch overhead, Deferred's sync leaves the stream idle, so the first brick of
    // each pass includes its launch gap; Lagged keeps the stream busy and hides it
    // (spec/sync-modes.md "Modes"): each total lies in [Σ kernel, Σ (kernel + o)].
    let gap = run_with(
        SyncMode::Lagged,
        40,
        Engine::HostWork(50),
        0,
        pool_for(64),
        |_| 1,
        2 * US,
    );
    for (b, &(count, total, _)) in totals(&gap.prof).iter().zip(&totals(&lagged.prof)) {
        assert!(
            b.1 >= total && b.1 <= total + count * 2 * US,
            "{b:?} vs {total}"
        );
    }
    // A host slower than the device never waits.
    let slow_host = run(
        SyncMode::Lagged,
        40,
        Engine::HostWork(400),
        0,
        pool_for(64),
        |_| 1,
    );
    assert_eq!(slow_host.prof.view().counters.blocking_waits, 0);
    assert!(slow_host.device.counts().syncs <= 1);
}

/// spec/sync-modes.md "Lagged": with an event pool too small for `max_passes_in_flight`
/// passes, `end_pass` waits before the pool runs out: nothing is dropped, results are exact.
#[test]
fn a_tiny_pool_makes_it_wait_instead_of_dropping() {
    // 7 bricks per pass: 14 marks, plus one end-of-pass mark; 40 marks hold two passes,
    // fewer than the three allowed in flight. The host runs ahead of the device.
    let deferred = run(SyncMode::Deferred, 24, Engine::HostWork(50), 0, 40, |_| 1);
    let tiny = run(SyncMode::Lagged, 24, Engine::HostWork(50), 0, 40, |_| 1);
    let large = run(
        SyncMode::Lagged,
        24,
        Engine::HostWork(50),
        0,
        pool_for(64),
        |_| 1,
    );
    let c = tiny.prof.view().counters;
    assert_eq!(c.dropped, 0);
    assert!(
        c.blocking_waits > large.prof.view().counters.blocking_waits,
        "{} blocking waits with a tiny pool, {} with a large one",
        c.blocking_waits,
        large.prof.view().counters.blocking_waits
    );
    assert_eq!(totals(&tiny.prof), totals(&deferred.prof));
}

/// spec/sync-modes.md "Lagged": a warm-up pass that resolves after later passes ended has
/// its own measurements discarded, not the next pass's: passes 0 and 1 (warm-up) run 10x
/// longer kernels, and none of that time reaches the statistics.
#[test]
fn warm_up_passes_are_discarded_when_they_resolve() {
    let slow_first = |pass: u64| if pass < 2 { 10 } else { 1 };
    for engine in [
        Engine::ReadsBack,
        Engine::HostWork(50),
        Engine::HostWork(400),
    ] {
        let deferred = run(SyncMode::Deferred, 8, engine, 2, pool_for(64), slow_first);
        let lagged = run(SyncMode::Lagged, 8, engine, 2, pool_for(64), slow_first);
        assert_eq!(totals(&lagged.prof), totals(&deferred.prof));
        let qkv = lagged.prof.view().brick_stats(BrickId::QkvProjection);
        assert_eq!(
            qkv.summary().count,
            12,
            "six counted passes, two calls each"
        );
        assert_eq!(
            qkv.summary().total_ns,
            6 * 85 * US,
            "only the counted passes' kernels"
        );
        let c = lagged.prof.view().counters;
        assert_eq!((c.passes, c.warmup_passes_excluded), (6, 2));
    }
}

/// spec/sync-modes.md "Lagged": the trace has every pass's device slices, in order and
/// monotone on the device track, none before its host dispatch minus the calibration bound.
#[test]
fn lagged_traces_are_monotone_and_follow_their_dispatch() {
    let lagged = run(
        SyncMode::Lagged,
        10,
        Engine::HostWork(50),
        0,
        pool_for(64),
        |_| 1,
    );
    let bound = lagged.prof.timeline().calibration().unwrap().bound_ns;
    let view = lagged.prof.view().trace_view().unwrap();
    let events = view.events;
    let device: Vec<_> = events
        .iter()
        .filter(|e| {
            e.track == brickprof::profile::Track::Device && e.slot != BrickId::LmHead as u16
        })
        .collect();
    let host: Vec<_> = events
        .iter()
        .filter(|e| e.track == brickprof::profile::Track::Host && e.slot != BrickId::LmHead as u16)
        .collect();
    assert_eq!(device.len(), 60);
    let mut sorted = device.clone();
    sorted.sort_by_key(|e| e.start_ns);
    for w in sorted.windows(2) {
        assert!(
            w[0].start_ns + w[0].dur_ns <= w[1].start_ns,
            "overlap on the device track"
        );
    }
    for (d, h) in device.iter().zip(host.iter()) {
        assert!(
            d.start_ns + bound >= h.start_ns,
            "device slice before its dispatch"
        );
    }
    assert_eq!(view.passes.len(), 10);
}

#[test]
fn passes_in_flight_is_checked_against_its_limit() {
    for bad in [0, brickprof::model::Limit::PassesInFlight.max() + 1] {
        let config = ProfilerConfig {
            max_passes_in_flight: bad,
            ..ProfilerConfig::default()
        };
        match BrickProfiler::new(config) {
            Err(Error::OverLimit {
                limit: Limit::PassesInFlight,
                requested,
            }) => assert_eq!(requested, bad),
            other => panic!("{other:?}"),
        }
    }
}

/// spec/sync-modes.md "Lagged": bricks still open at `end_pass` are counted as unclosed and
/// never recorded, whatever pass resolves next; stray stops of them are counted.
#[test]
fn leaked_bricks_in_a_lagged_pass_are_unclosed_not_recorded() {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        sync_mode: SyncMode::Lagged,
        pending_capacity: 16,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(pool_for(16))).unwrap();
    let leaked = prof.start_brick(BrickId::LmHead);
    let t = prof.start_brick(BrickId::RmsNorm);
    device.launch(100 * US);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
    assert_eq!(
        prof.view().in_flight.passes,
        1,
        "the kernel is still running"
    );
    prof.stop_brick(leaked, 1);
    let t = prof.start_brick(BrickId::RmsNorm);
    device.launch(50 * US);
    prof.stop_brick(t, 1);
    device.host_work(1_000 * US);
    prof.end_pass(1).unwrap();
    assert_eq!(prof.view().in_flight.passes, 0);
    let c = prof.view().counters;
    assert_eq!((c.unclosed, c.stray_stops, c.blocking_waits), (1, 1, 0));
    assert_eq!(prof.view().brick_stats(BrickId::LmHead).summary().count, 0);
    assert_eq!(
        prof.view().brick_stats(BrickId::RmsNorm).summary().total_ns,
        150 * US
    );
}

/// spec/sync-modes.md "Lagged": a pass bigger than the pending buffer flushes within itself,
/// waiting for the device; that wait is the profiler's, not the engine's, so it stays out of
/// the pass's wall time (and so out of TTFT and TPOT), as `end_pass`'s own waits do. Before:
/// the wall time held every flush's wait for the device.
#[test]
fn a_pass_that_overflows_the_pending_buffer_keeps_its_wait_out_of_its_wall_time() {
    const BRICKS: u64 = 10;
    const OVERHEAD: u64 = 2 * US;
    const HOST: u64 = 5 * US;
    let device = SimDevice::new(OVERHEAD);
    let config = ProfilerConfig {
        layers: 1,
        sync_mode: SyncMode::Lagged,
        pending_capacity: 4,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(256)).unwrap();
    let passes = 4;
    for _ in 0..passes {
        prof.begin_pass();
        prof.set_pass_shape(brickprof::PassShape::new(1, 1, 8).unwrap());
        for _ in 0..BRICKS {
            let t = prof.start_brick(BrickId::QkvProjection);
            device.launch(100 * US); // the host runs far ahead of the device
            prof.stop_brick(t, 1);
        }
        device.host_work(HOST);
        prof.end_pass(1).unwrap();
    }
    prof.finalize().unwrap();
    let c = prof.view().counters;
    assert!(c.overflow_flushes >= passes, "every pass flushes: {c:?}");
    assert_eq!(c.dropped, 0);
    // The host's own time in a pass: its launches and its work, no wait for the device.
    let host = BRICKS * OVERHEAD + HOST;
    let p = prof.profile();
    let walls: Vec<u64> = p
        .pass_series
        .as_ref()
        .unwrap()
        .records()
        .map(|r| r.wall_ns())
        .collect();
    assert_eq!(walls, vec![host; passes as usize], "pass wall times");
    assert_eq!(p.passes.summary().total_ns, passes * host);
    // Every kernel still timed (a brick started on an idle device holds its launch overhead).
    let s = prof.view().brick_stats(BrickId::QkvProjection);
    let kernels = passes * BRICKS * 100 * US;
    assert_eq!(s.summary().count, passes * BRICKS);
    assert!((kernels..=kernels + passes * BRICKS * OVERHEAD).contains(&s.summary().total_ns));
}
