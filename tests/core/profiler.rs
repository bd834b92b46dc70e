//! spec/hot-path.md: enable/disable, layers, dynamic bricks, passes and warm-up, merge, reset.

use brickprof::{
    profile::RowKey,
    stats::TileLevel,
    timeline::{HostClock, MockClock},
    BrickCategory, BrickId, BrickProfiler, CpuTimeline, ProfilerConfig, Work,
};

fn mock_profiler(config: ProfilerConfig) -> (MockClock, BrickProfiler) {
    let (clock, mock) = HostClock::mock();
    (
        mock,
        BrickProfiler::with_timeline(config, CpuTimeline::with_clock(clock)).unwrap(),
    )
}

#[test]
fn disabled_profiler_records_nothing_and_reads_no_clock() {
    // spec/hot-path.md "Enable, disable, reset, merge": the token is inert; nothing is recorded.
    let (mock, mut prof) = mock_profiler(ProfilerConfig::default());
    prof.set_enabled(false);
    let t = prof.start_brick(BrickId::RmsNorm); // inert: src/profiler/tests.rs checks it
    mock.increment(100);
    prof.stop_brick(t, 1);
    let tile = prof.start_tile(TileLevel::Micro);
    prof.stop_tile(tile, Work::default());
    prof.finalize().unwrap();
    assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).summary().count, 0);
    assert_eq!(prof.view().in_flight.pending, 0);
    prof.set_enabled(true);
    let t = prof.start_brick(BrickId::RmsNorm);
    mock.increment(100);
    prof.stop_brick(t, 1);
    prof.finalize().unwrap();
    assert_eq!(
        prof.view().brick_stats(BrickId::RmsNorm).summary().total_ns,
        100
    );
}

#[test]
fn layers_out_of_range_go_to_the_unassigned_row() {
    // spec/hot-path.md "Layers".
    let (mock, mut prof) = mock_profiler(ProfilerConfig::with_layers(2));
    for layer in [0, 1, 2, 99] {
        prof.begin_layer(layer);
        let t = prof.start_brick(BrickId::ResidualAdd);
        mock.increment(10 * (layer as u64 + 1));
        prof.stop_brick(t, 1);
        prof.end_layer();
    }
    let t = prof.start_brick(BrickId::LmHead);
    mock.increment(7);
    prof.stop_brick(t, 1);
    prof.finalize().unwrap();
    assert_eq!(
        prof.view()
            .row_stats(
                brickprof::model::PhaseFilter::All,
                brickprof::profile::RowKey::Layer(0),
                BrickId::ResidualAdd
            )
            .unwrap()
            .summary()
            .total_ns,
        10
    );
    assert_eq!(
        prof.view()
            .row_stats(
                brickprof::model::PhaseFilter::All,
                brickprof::profile::RowKey::Layer(1),
                BrickId::ResidualAdd
            )
            .unwrap()
            .summary()
            .total_ns,
        20
    );
    assert!(prof
        .view()
        .row_stats(
            brickprof::model::PhaseFilter::All,
            brickprof::profile::RowKey::Layer(2),
            BrickId::ResidualAdd
        )
        .is_none());
    let un = prof
        .view()
        .row_stats(
            brickprof::model::PhaseFilter::All,
            RowKey::Unassigned,
            BrickId::ResidualAdd,
        )
        .unwrap();
    assert_eq!((un.summary().count, un.summary().total_ns), (2, 30 + 1000));
    assert_eq!(prof.view().counters.out_of_range_layers, 2);
    assert_eq!(
        prof.view()
            .row_stats(
                brickprof::model::PhaseFilter::All,
                RowKey::Model,
                BrickId::LmHead
            )
            .unwrap()
            .summary()
            .total_ns,
        7
    );
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::ResidualAdd)
            .summary()
            .total_ns,
        1060
    );
}

#[test]
fn dynamic_bricks_time_like_enum_bricks() {
    // spec/hot-path.md "Dynamic bricks".
    let (mock, mut prof) = mock_profiler(ProfilerConfig::with_layers(1));
    let router = prof.register("moe_router", BrickCategory::Ffn).unwrap();
    prof.begin_layer(0);
    let t = prof.start_brick(router);
    mock.increment(40);
    prof.stop_brick(t, 4);
    let named = prof
        .register("moe_router", brickprof::BrickCategory::Other)
        .unwrap();
    let t = prof.start_brick(named);
    mock.increment(60);
    prof.stop_brick(t, 4);
    let gemm = prof
        .register("expert_gemm", brickprof::BrickCategory::Other)
        .unwrap();
    let t = prof.start_brick(gemm);
    mock.increment(5);
    prof.stop_brick(t, 1);
    prof.end_layer();
    prof.finalize().unwrap();
    let s = prof.view().brick_stats(router);
    assert_eq!(
        (
            s.summary().count,
            s.summary().total_ns,
            s.summary().work.elements
        ),
        (2, 100, 8)
    );
    assert_eq!(
        prof.view()
            .row_stats(
                brickprof::model::PhaseFilter::All,
                brickprof::profile::RowKey::Layer(0),
                router
            )
            .unwrap()
            .summary()
            .count,
        2
    );
    let categories: Vec<_> = prof
        .profile()
        .categories
        .into_iter()
        .map(|c| (c.category, c.stats))
        .collect();
    let category_ns = |c: BrickCategory| {
        categories
            .iter()
            .find(|(k, _)| *k == c)
            .map_or(0, |(_, s)| s.summary().total_ns)
    };
    assert_eq!(category_ns(BrickCategory::Ffn), 100);
    let expert = prof.view().registry.lookup("expert_gemm").unwrap();
    assert_eq!(prof.view().brick_stats(expert).summary().total_ns, 5);
    assert_eq!(category_ns(BrickCategory::Other), 5);
}

#[test]
fn passes_count_tokens_and_exclude_warmup() {
    // spec/hot-path.md "Passes and tokens".
    let config = ProfilerConfig {
        warmup_passes: 2,
        ..ProfilerConfig::default()
    };
    let (mock, mut prof) = mock_profiler(config);
    for pass in 0..5u64 {
        prof.begin_pass();
        let t = prof.start_brick(BrickId::Embedding);
        mock.increment(1_000 * (pass + 1));
        prof.stop_brick(t, 1);
        mock.increment(1_000);
        prof.end_pass(4).unwrap();
    }
    let c = prof.view().counters;
    assert_eq!((c.passes, c.tokens, c.warmup_passes_excluded), (3, 12, 2));
    let s = prof.view().brick_stats(BrickId::Embedding);
    assert_eq!(
        (s.summary().count, s.summary().total_ns),
        (3, 3_000 + 4_000 + 5_000)
    );
    // Pass wall time: 4+5+6 µs for 12 tokens.
    assert_eq!(prof.profile().passes.summary().total_ns, 15_000);
    assert_eq!(
        prof.profile().passes.summary().elements_per_sec,
        12.0 / 15e-6
    );
}

#[test]
fn tiles_are_attributed_to_the_enclosing_brick() {
    // spec/work-accounting.md "Tiles".
    let (mock, mut prof) = mock_profiler(ProfilerConfig::default());
    let t = prof.start_brick(BrickId::DownProjection);
    for _ in 0..2 {
        let macro_tile = prof.start_tile(TileLevel::Macro);
        for _ in 0..3 {
            let micro = prof.start_tile(TileLevel::Micro);
            mock.increment(10);
            prof.stop_tile(
                micro,
                Work {
                    elements: 0,
                    flops: 100,
                    bytes: 50,
                },
            );
        }
        prof.stop_tile(
            macro_tile,
            Work {
                elements: 0,
                flops: 300,
                bytes: 150,
            },
        );
    }
    prof.stop_brick(t, 1);
    let stray = prof.start_tile(TileLevel::Midi);
    mock.increment(3);
    prof.stop_tile(stray, Work::default());
    prof.finalize().unwrap();
    let p = prof.profile();
    let tile = |brick: &str, level| {
        p.brick(brick)
            .and_then(|b| b.tiles.iter().find(|t| t.level == level))
            .map(|t| &t.stats)
    };
    let micro = tile("DownProjection", TileLevel::Micro).unwrap();
    assert_eq!(
        (
            micro.summary().count,
            micro.summary().total_ns,
            micro.summary().work.flops
        ),
        (6, 60, 600)
    );
    let mac = tile("DownProjection", TileLevel::Macro).unwrap();
    assert_eq!((mac.summary().count, mac.summary().total_ns), (2, 60));
    assert_eq!(
        tile("RmsNorm", TileLevel::Micro).map_or(0, |s| s.summary().count),
        0
    );
    // Tiles outside any brick are in the profile apart.
    let unattributed = prof.profile().unattributed_tiles;
    let midi = unattributed.iter().find(|t| t.level == TileLevel::Midi);
    assert_eq!(midi.map(|t| t.stats.summary().total_ns), Some(3));
}

#[test]
fn profile_merge_equals_recording_into_one_and_checks_layers() {
    // Profilers are merged as snapshots: `Profile::merge` (BrickProfiler::merge is gone).
    let (mock_a, mut a) = mock_profiler(ProfilerConfig::with_layers(1));
    let (mock_b, mut b) = mock_profiler(ProfilerConfig::with_layers(1));
    let (mock_c, mut all) = mock_profiler(ProfilerConfig::with_layers(1));
    let ha = a
        .register("custom", brickprof::BrickCategory::Other)
        .unwrap();
    let pad = b
        .register("other_first", brickprof::BrickCategory::Other)
        .unwrap();
    let hb = b
        .register("custom", brickprof::BrickCategory::Other)
        .unwrap();
    let hc = all
        .register("custom", brickprof::BrickCategory::Other)
        .unwrap();
    for (p, m, h, ns) in [(&mut a, &mock_a, ha, 5u64), (&mut b, &mock_b, hb, 9)] {
        p.begin_layer(0);
        let t = p.start_brick(h);
        m.increment(ns);
        p.stop_brick(t, 1);
        p.end_layer();
        p.finalize().unwrap();
    }
    for ns in [5u64, 9] {
        all.begin_layer(0);
        let t = all.start_brick(hc);
        mock_c.increment(ns);
        all.stop_brick(t, 1);
        all.end_layer();
    }
    all.finalize().unwrap();
    // A brick `a` lacks (a snapshot holds timed bricks only: time it once outside any layer).
    let t = b.start_brick(pad);
    mock_b.increment(1);
    b.stop_brick(t, 1);
    b.finalize().unwrap();
    assert_eq!(a.view().brick_stats(ha).summary().count, 1);
    let mut merged = a.profile();
    merged.merge(&b.profile()).unwrap();
    let want = all.profile();
    let custom = |p: &brickprof::Profile| p.brick("custom").cloned().unwrap();
    assert_eq!(custom(&merged).stats, custom(&want).stats);
    let layer0 = |p: &brickprof::Profile| {
        let b = custom(p);
        b.rows
            .into_iter()
            .filter(|r| r.row == brickprof::profile::RowKey::Layer(0))
            .map(|r| r.stats)
            .collect::<Vec<_>>()
    };
    assert_eq!(layer0(&merged), layer0(&want));
    assert!(merged.brick("other_first").is_some());
    let (_, other_layers) = mock_profiler(ProfilerConfig::with_layers(3));
    assert!(merged.merge(&other_layers.profile()).is_err());
}

#[test]
fn reset_clears_everything_but_registrations() {
    let (mock, mut prof) = mock_profiler(ProfilerConfig::default());
    let h = prof.register("x", brickprof::BrickCategory::Other).unwrap();
    let t = prof.start_brick(h);
    mock.increment(5);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
    prof.reset();
    assert_eq!(prof.view().brick_stats(h).summary().count, 0);
    assert_eq!(prof.view().counters, Default::default());
    assert_eq!(prof.profile().total_ns(), 0);
    assert_eq!(prof.view().registry.lookup("x"), Some(h));
}

#[test]
fn a_handle_from_a_bigger_registry_is_dropped_not_a_panic() {
    let mut big = BrickProfiler::default();
    let foreign = big
        .register("only_in_big", brickprof::BrickCategory::Other)
        .unwrap();
    let (_, mut small) = mock_profiler(ProfilerConfig::default());
    let t = small.start_brick(foreign);
    small.stop_brick(t, 1);
    small.finalize().unwrap();
    assert_eq!(small.view().counters.dropped, 1);
    assert!(!small.view().registry.handles().any(|h| h == foreign));
    assert_eq!(small.view().brick_stats(foreign).summary().count, 0);
}

/// A user-written timeline that counts what the profiler asks of it.
#[derive(Default)]
struct CountingTimeline {
    marks: u64,
    syncs: u64,
}

impl brickprof::Timeline for CountingTimeline {
    fn kind(&self) -> brickprof::timeline::TimelineKind {
        brickprof::timeline::TimelineKind::Sim
    }
    fn host_clock(&self) -> HostClock {
        HostClock::mock().0
    }
    fn mark(&mut self, _host_ticks: u64) -> brickprof::timeline::Mark {
        self.marks += 1;
        self.marks
    }
    fn sync(&mut self) -> brickprof::Result<()> {
        self.syncs += 1;
        Ok(())
    }
    fn resolve_ns(&mut self, start: u64, end: u64) -> brickprof::Result<u64> {
        Ok(end - start)
    }
    fn timestamp_ns(&mut self, mark: u64) -> brickprof::Result<u64> {
        Ok(mark)
    }
}

#[test]
fn disabled_profiler_touches_neither_timeline_nor_buffer() {
    // spec/hot-path.md "Costs": disabled, start_brick returns after one branch.
    let mut prof = BrickProfiler::with_timeline(
        ProfilerConfig {
            enabled: false,
            ..ProfilerConfig::default()
        },
        CountingTimeline::default(),
    )
    .unwrap();
    for _ in 0..100 {
        let t = prof.start_brick(BrickId::Activation);
        prof.stop_brick(t, 1);
    }
    prof.finalize().unwrap();
    assert_eq!((prof.timeline().marks, prof.timeline().syncs), (0, 0));
    prof.set_enabled(true);
    let t = prof.start_brick(BrickId::Activation);
    prof.stop_brick(t, 1);
    prof.finalize().unwrap();
    assert_eq!((prof.timeline().marks, prof.timeline().syncs), (2, 1));
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::Activation)
            .summary()
            .total_ns,
        1
    );
}

#[test]
fn tokens_are_small() {
    // spec/hot-path.md "Tokens". That a token is move-only (a second stop does not compile)
    // is checked by the compile_fail doctest on `BrickToken`.
    fn is_copy<T: Copy>() {}
    is_copy::<brickprof::stats::TileTimer>();
    assert_eq!(std::mem::size_of::<brickprof::BrickToken>(), 12);
    assert_eq!(std::mem::size_of::<brickprof::stats::TileTimer>(), 16);
}

#[test]
fn one_profiler_per_thread_then_merge() {
    // spec/hot-path.md "Enable, disable, reset, merge": profilers are Send; threads merge.
    fn is_send<T: Send>() {}
    is_send::<BrickProfiler>();
    let handles: Vec<_> = (0..4u64)
        .map(|i| {
            std::thread::spawn(move || {
                let (mock, mut prof) = mock_profiler(ProfilerConfig::with_layers(1));
                for _ in 0..=i {
                    prof.begin_layer(0);
                    let t = prof.start_brick(BrickId::Activation);
                    mock.increment(100);
                    prof.stop_brick(t, 1);
                    prof.end_layer();
                }
                prof.end_pass(1).unwrap();
                prof.profile()
            })
        })
        .collect();
    let mut merged: Option<brickprof::Profile> = None;
    for h in handles {
        let p = h.join().unwrap();
        match merged.as_mut() {
            None => merged = Some(p),
            Some(m) => m.merge(&p).unwrap(),
        }
    }
    let m = merged.unwrap();
    let s = &m.brick("Activation").unwrap().stats;
    assert_eq!(
        (s.summary().count, s.summary().total_ns),
        (1 + 2 + 3 + 4, 1_000)
    );
    assert_eq!(m.meta.merged_from, 4);
}
