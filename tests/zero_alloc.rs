//! spec/hot-path.md "Never on the hot path" (no allocation): a counting global allocator around
//! 10,000 start/stop pairs, for enum bricks, dynamic handles and tiles, in every sync mode,
//! including a full pending buffer under both overflow policies and a full trace buffer.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use brickprof::{
    brick, model::OverflowPolicy, stats::TileLevel, thread as bp, timeline::SimDevice, BrickId,
    BrickProfiler, PassShape, Phase, ProfilerConfig, SyncMode, Work,
};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Only the measuring thread counts: the test harness's own threads allocate concurrently.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        ALLOCS.fetch_add(1, Ordering::SeqCst);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCS.load(Ordering::SeqCst) - before
}

// One test function: the counter is process-wide, so tests must not run concurrently.
#[test]
fn hot_path_never_allocates() {
    for mode in [
        SyncMode::Immediate,
        SyncMode::PerLayer,
        SyncMode::Deferred,
        SyncMode::None,
    ] {
        for overflow in [OverflowPolicy::Flush, OverflowPolicy::Drop] {
            let config = ProfilerConfig {
                layers: 4,
                sync_mode: mode,
                pending_capacity: 256, // smaller than the loop: overflow is exercised
                overflow,
                trace_capacity: 4096, // tracing on, and full before the loop ends
                checksums: true,      // on, but never called on the hot path
                ..ProfilerConfig::default()
            };
            let mut prof = BrickProfiler::new(config).unwrap();
            let dynamic = prof
                .register("custom_op", brickprof::BrickCategory::Other)
                .unwrap();
            let n = allocations_during(|| {
                for i in 0..10_000usize {
                    prof.begin_layer(i % 5); // 4 is out of range on purpose
                    let t = prof.start_brick(BrickId::QkvProjection);
                    let tile = prof.start_tile(TileLevel::Micro);
                    prof.stop_tile(
                        tile,
                        Work {
                            elements: 0,
                            flops: 2,
                            bytes: 0,
                        },
                    );
                    prof.stop_brick(t, 1);
                    let t = prof.start_brick(dynamic);
                    prof.stop_brick_with(
                        t,
                        Work {
                            elements: 1,
                            flops: 0,
                            bytes: 4,
                        },
                    );
                    prof.end_layer();
                }
            });
            assert_eq!(
                n, 0,
                "{mode} / {overflow:?}: {n} allocations on the hot path"
            );
            prof.finalize().unwrap();
            let c = prof
                .view()
                .brick_stats(BrickId::QkvProjection)
                .summary()
                .count
                + prof.view().counters.dropped;
            assert!(
                c >= 10_000,
                "{mode}: every measurement is recorded or counted"
            );
        }
    }

    // spec/hot-path.md "Passes and phases": shaped passes allocate nothing either, neither at
    // set_pass_shape (every phase's books exist from construction) nor at end_pass, in every
    // sync mode, prefill and decode passes alternating.
    for mode in [
        SyncMode::Immediate,
        SyncMode::PerLayer,
        SyncMode::Deferred,
        SyncMode::Lagged,
        SyncMode::None,
    ] {
        let config = ProfilerConfig {
            layers: 4,
            sync_mode: mode,
            pending_capacity: 64,
            // A ring smaller than the run: it wraps, still without allocating
            // (spec/hot-path.md "Pass series").
            pass_series: 256,
            ..ProfilerConfig::default()
        };
        let mut prof = BrickProfiler::new(config).unwrap();
        let prefill = PassShape::new(16, 1, 16).unwrap();
        let n = allocations_during(|| {
            for i in 0..1_000u64 {
                if i % 4 == 0 {
                    prof.begin_pass();
                    prof.set_pass_shape(prefill);
                } else {
                    prof.begin_pass();
                    prof.set_pass_shape(PassShape::new(1, 1, 16 + i).unwrap());
                }
                for layer in 0..4 {
                    prof.begin_layer(layer);
                    let t = prof.start_brick(BrickId::QkvProjection);
                    prof.stop_brick(t, 1);
                    prof.end_layer();
                }
                prof.end_pass(1).unwrap();
            }
        });
        assert_eq!(n, 0, "{mode}: {n} allocations in shaped passes");
        prof.finalize().unwrap();
        assert_eq!(
            prof.view()
                .row_stats(
                    brickprof::model::PhaseFilter::Only(Phase::Prefill),
                    None,
                    BrickId::QkvProjection
                )
                .unwrap()
                .summary()
                .count,
            4 * 250,
            "{mode}"
        );
        assert_eq!(
            prof.profile().phase_passes(Phase::Decode).summary().count,
            750,
            "{mode}"
        );
        // Every pass was tallied: the ring kept the newest 256 and the fits saw all of them.
        let p = prof.profile();
        let run = p.pass_series.as_ref().expect("a series");
        assert_eq!((run.records().count(), run.dropped()), (256, 744), "{mode}");
        let qkv = p.brick("QkvProjection").unwrap();
        // The passes each fit summed: `n` of its saved sums (spec/profile-format.md).
        let passes = |f: &brickprof::profile::PhaseFit| {
            serde_json::to_value(f.sums).unwrap()["n"].as_u64().unwrap()
        };
        let fitted: u64 = qkv.fits.iter().map(passes).sum();
        assert_eq!(fitted, 1_000, "{mode}");
    }

    // The simulated device too: its events live in a buffer reserved up front.
    let device = SimDevice::new(100);
    let mut prof =
        BrickProfiler::with_timeline(ProfilerConfig::default(), device.timeline(8192)).unwrap();
    let n = allocations_during(|| {
        for _ in 0..4_000 {
            let t = prof.start_brick(BrickId::RmsNorm);
            device.launch(1_000);
            prof.stop_brick(t, 1);
        }
    });
    assert_eq!(n, 0, "sim timeline: {n} allocations on the hot path");
    prof.finalize().unwrap();
    assert_eq!(
        prof.view().brick_stats(BrickId::RmsNorm).summary().count,
        4_000
    );

    // spec/sync-modes.md "Graph capture": once a graph is adopted, its replays allocate
    // nothing (the template is copied into the pending buffer reserved at construction), in
    // every mode that times them, Lagged with replays in flight included.
    for mode in [
        SyncMode::Immediate,
        SyncMode::PerLayer,
        SyncMode::Deferred,
        SyncMode::Lagged,
    ] {
        let device = SimDevice::new(100);
        let config = ProfilerConfig {
            layers: 4,
            sync_mode: mode,
            pending_capacity: 256,
            trace_capacity: 1024,
            ..ProfilerConfig::default()
        };
        let mut prof = BrickProfiler::with_timeline(config, device.timeline(2 * 256 + 18)).unwrap();
        let graph = device
            .capture(|| {
                for layer in 0..4 {
                    prof.begin_layer(layer);
                    let t = prof.start_brick(BrickId::QkvProjection);
                    device.launch(1_000);
                    prof.stop_brick(t, 1);
                    prof.end_layer();
                }
                prof.end_pass(1)
            })
            .unwrap();
        prof.graphs().adopt(graph).unwrap();
        let decode = PassShape::new(1, 1, 64).unwrap();
        let n = allocations_during(|| {
            for i in 0..1_000 {
                let r = prof.graphs().begin_replay(graph).unwrap();
                prof.set_pass_shape(decode);
                device.launch_graph(&graph).unwrap();
                prof.graphs().end_replay(r, 1).unwrap();
                if i % 2 == 0 {
                    device.host_work(3_000);
                }
            }
        });
        assert_eq!(n, 0, "{mode}: {n} allocations in graph replays");
        prof.finalize().unwrap();
        assert_eq!(prof.view().counters.graph_replays, 1_000, "{mode}");
        assert_eq!(
            prof.view()
                .brick_stats(BrickId::QkvProjection)
                .summary()
                .total_ns,
            4_000_000,
            "{mode}"
        );
    }

    // spec/front-doors.md "Thread-local profiler": guards and layer guards never allocate once
    // the thread's profiler exists, enabled or disabled, for enum and registered bricks, past a
    // full pending buffer and a full trace buffer.
    bp::configure(ProfilerConfig {
        layers: 4,
        pending_capacity: 256,
        trace_capacity: 4096,
        ..ProfilerConfig::default()
    })
    .unwrap();
    let dynamic = bp::register("custom_guarded_op", brickprof::BrickCategory::Other).unwrap();
    bp::init_thread(None).unwrap();
    for on in [true, false] {
        if on {
            bp::set_enabled(true);
        } else {
            bp::set_enabled(false);
        }
        let n = allocations_during(|| {
            for i in 0..10_000usize {
                let _l = bp::layer(i % 5); // 4 is out of range on purpose
                let mut g = brick!(BrickId::QkvProjection);
                g.set_work(Work {
                    elements: 1,
                    flops: 0,
                    bytes: 4,
                });
                let _inner = brick!(dynamic, 1);
            }
        });
        assert_eq!(
            n, 0,
            "guards (enabled: {on}): {n} allocations on the hot path"
        );
    }
    bp::set_enabled(true);
    let p = bp::collect().unwrap();
    let c = p.brick("QkvProjection").unwrap().stats.summary().count + p.meta.counters.dropped;
    assert!(
        c >= 10_000,
        "every guarded measurement is recorded or counted"
    );
    bp::set_enabled(false);
}
