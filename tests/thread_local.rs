//! spec/front-doors.md "Thread-local profiler": guards, layers, passes, global enable/disable,
//! globally registered dynamic bricks, and `collect()` merging every thread.
//!
//! The thread-local front door is process-global state, so every test takes `SERIAL` and starts
//! from `thread::reset()`.

use std::sync::Mutex;

use brickprof::profile::RowKey;
use brickprof::{brick, thread as bp, BrickId, ProfilerConfig, Work};

mod common;

#[global_allocator]
static GLOBAL: common::native::ThreadCounting = common::native::ThreadCounting;

static SERIAL: Mutex<()> = Mutex::new(());

fn fresh(layers: usize, trace_capacity: usize) -> Serial {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    bp::reset();
    bp::configure(ProfilerConfig {
        layers,
        trace_capacity,
        ..ProfilerConfig::default()
    })
    .unwrap();
    bp::set_enabled(true);
    Serial(g)
}

/// Holds the lock for one test; detaches this test thread's profiler before releasing it, so
/// the thread's exit cannot publish into the next test's collector.
struct Serial(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

impl Drop for Serial {
    fn drop(&mut self) {
        bp::reset();
    }
}

fn spin() {
    std::hint::black_box((0..2_000u64).sum::<u64>());
}

#[test]
fn guards_record_per_layer_with_work() {
    let _s = fresh(3, 0);
    for pass in 0..2 {
        for layer in 0..3 {
            let _l = bp::layer(layer);
            let mut g = brick!(BrickId::RmsNorm);
            spin();
            g.set_work(Work {
                elements: 10,
                flops: 20,
                bytes: 0,
            });
            drop(g);
            let _g = brick!(BrickId::GateProjection, 7);
            spin();
        }
        let _head = brick!(BrickId::LmHead); // outside any layer: the model row
        drop(_head);
        bp::end_pass(1).unwrap();
        let _ = pass;
    }
    let p = bp::collect().unwrap();
    let norm = p.brick("RmsNorm").unwrap();
    assert_eq!(norm.stats.summary().count, 6);
    assert_eq!(norm.stats.summary().work.flops, 120);
    assert_eq!(norm.rows.len(), 3, "one row per layer");
    assert!(norm.rows.iter().all(|r| r.stats.summary().count == 2));
    assert_eq!(
        p.brick("GateProjection")
            .unwrap()
            .stats
            .summary()
            .work
            .elements,
        42
    );
    let head = p.brick("LmHead").unwrap();
    assert_eq!(head.rows.len(), 1);
    assert_eq!(head.rows[0].row.to_string(), "model");
    assert_eq!((p.meta.counters.passes, p.meta.counters.tokens), (2, 2));
}

#[test]
fn disabled_guards_record_nothing() {
    let _s = fresh(1, 0);
    bp::set_enabled(false);
    {
        let _l = bp::layer(0);
        let _g = brick!(BrickId::RmsNorm); // inert: src/front/thread/tests.rs
    }
    bp::end_pass(1).unwrap();
    bp::set_enabled(true);
    let g = brick!(BrickId::Sampling); // live: src/front/thread/tests.rs
    drop(g);
    let p = bp::collect().unwrap();
    assert!(
        p.brick("RmsNorm").is_none(),
        "nothing recorded while disabled"
    );
    assert_eq!(p.brick("Sampling").unwrap().stats.summary().count, 1);
    assert_eq!(
        p.meta.counters.passes, 0,
        "end_pass while disabled is a no-op"
    );
}

#[test]
fn layer_guards_nest_and_restore() {
    let _s = fresh(4, 0);
    {
        let _outer = bp::layer(1);
        {
            let _inner = bp::layer(3);
            let _g = brick!(BrickId::AttentionScore);
        }
        let _g = brick!(BrickId::AttentionOutput); // back in layer 1
    }
    let _g = brick!(BrickId::Embedding); // back outside any layer
    drop(_g);
    let p = bp::collect().unwrap();
    let row = |name: &str| p.brick(name).unwrap().rows[0].row;
    assert_eq!(row("AttentionScore"), RowKey::Layer(3));
    assert_eq!(row("AttentionOutput"), RowKey::Layer(1));
    assert_eq!(row("Embedding").to_string(), "model");
}

#[test]
fn collect_merges_every_thread_and_keeps_them_apart_in_the_trace() {
    let _s = fresh(2, 1024);
    let custom = bp::register("custom_op", brickprof::BrickCategory::Other).unwrap();
    let workers: Vec<_> = (0..3)
        .map(|i| {
            std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .spawn(move || {
                    for layer in 0..2 {
                        let _l = bp::layer(layer);
                        let _a = brick!(BrickId::DownProjection);
                        let _b = brick!(custom); // nested in DownProjection
                        spin();
                    }
                    bp::end_pass(1).unwrap();
                }) // the thread publishes when it exits
                .unwrap()
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    {
        let _g = brick!(custom);
    }
    let p = bp::collect().unwrap();
    assert_eq!(p.brick("DownProjection").unwrap().stats.summary().count, 6);
    assert_eq!(p.brick("custom_op").unwrap().stats.summary().count, 7);
    assert_eq!(p.meta.counters.passes, 3);
    assert_eq!(p.meta.merged_from, 4, "three workers and this thread");

    let trace = bp::collect_trace().unwrap();
    let json: serde_json::Value = serde_json::from_str(&trace).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    for i in 0..3 {
        let name = format!("worker-{i} (cpu timeline)");
        assert!(names.contains(&name.as_str()), "{names:?}");
    }
    let pids: std::collections::BTreeSet<u64> = events
        .iter()
        .filter(|e| e["name"] == "DownProjection")
        .map(|e| e["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(
        pids.len(),
        3,
        "each worker's bricks sit on its own process track"
    );
}

#[test]
fn a_brick_registered_after_a_thread_started_is_caught_up() {
    let _s = fresh(0, 0);
    bp::init_thread(None).unwrap();
    let late = bp::register("registered_late", brickprof::BrickCategory::Other).unwrap();
    // Found by its name in the global registry: src/front/thread/tests.rs.
    {
        let _g = brick!(late);
    }
    let p = bp::collect().unwrap();
    assert_eq!(p.brick("registered_late").unwrap().stats.summary().count, 1);
}

#[test]
fn collect_with_nothing_measured_says_how_to_fix_it() {
    let _s = fresh(0, 0);
    let err = std::thread::spawn(bp::collect).join().unwrap().unwrap_err();
    assert!(err.to_string().contains("enable"), "{err}");
}

#[test]
fn scoped_threads_are_collected_right_after_their_scope() {
    // spec/front-doors.md "Thread-local profiler": a thread's passes are published by the time
    // `end_pass` returns, so `collect()` right after `std::thread::scope` sees every pass.
    // Before: the scope returned before the threads' thread-local destructors ran, and
    // `collect()` missed threads (or failed: nothing published).
    const THREADS: u64 = 4;
    const PASSES: u64 = 3;
    let _s = fresh(2, 0);
    for round in 0..40 {
        bp::reset();
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..PASSES {
                        let _l = bp::layer(1);
                        {
                            let _g = brick!(BrickId::RmsNorm);
                            spin();
                        }
                        drop(_l);
                        bp::end_pass(1).unwrap();
                    }
                });
            }
        });
        let p = bp::collect().unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(
            p.brick("RmsNorm").map(|b| b.stats.summary().count),
            Some(THREADS * PASSES),
            "round {round}"
        );
        assert_eq!(p.meta.counters.passes, THREADS * PASSES, "round {round}");
        // Let this round's threads finish exiting before the next round's reset.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn reset_forgets_the_threads_of_a_scope_that_are_still_exiting() {
    // spec/front-doors.md "Collection": nothing a thread measured before `reset` is collected
    // after it. Before: a scoped thread's exit could publish again after `reset`, so the next
    // round's `collect` counted its pass a second time (24-37 rounds in 100 showed 2 passes).
    let _s = fresh(1, 0);
    for round in 0..100 {
        std::thread::scope(|s| {
            s.spawn(|| {
                {
                    let _g = brick!(BrickId::RmsNorm);
                    spin();
                }
                bp::end_pass(1).unwrap();
            });
        });
        let p = bp::collect().unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(p.meta.counters.passes, 1, "round {round}");
        assert_eq!(p.brick("RmsNorm").map(|b| b.stats.summary().count), Some(1));
        bp::reset();
    }
}

#[test]
fn a_thread_running_across_reset_is_collected_from_its_next_pass_on() {
    // spec/front-doors.md "Collection": a thread that keeps running across `reset` rejoins at
    // its next `end_pass`, which is dropped with everything it measured before; its later
    // passes are collected. Before: its next publication brought back every pass it had
    // measured before the reset.
    use std::sync::mpsc::channel;
    let _s = fresh(1, 0);
    let (go, wait) = channel::<()>();
    let (done, finished) = channel::<()>();
    let worker = std::thread::spawn(move || {
        while wait.recv().is_ok() {
            {
                let _g = brick!(BrickId::RmsNorm);
                spin();
            }
            bp::end_pass(1).unwrap();
            done.send(()).unwrap();
        }
    });
    let pass = || {
        go.send(()).unwrap();
        finished.recv().unwrap();
    };
    pass();
    pass();
    assert_eq!(bp::collect().unwrap().meta.counters.passes, 2);
    bp::reset();
    pass(); // ends a pass begun before the reset: dropped, and the worker rejoins
    let err = bp::collect().unwrap_err();
    assert!(err.to_string().contains("no thread has published"), "{err}");
    pass();
    let p = bp::collect().unwrap();
    assert_eq!(p.meta.counters.passes, 1);
    assert_eq!(p.brick("RmsNorm").map(|b| b.stats.summary().count), Some(1));
    drop(go);
    worker.join().unwrap();
}

#[test]
fn shaped_passes_land_in_their_phase_on_every_thread() {
    // spec/front-doors.md "Thread-local profiler" and spec/hot-path.md "Passes and phases".
    use brickprof::{PassShape, Phase};
    let _s = fresh(1, 0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                bp::begin_pass();
                bp::set_pass_shape(PassShape::new(8, 1, 8).unwrap());
                {
                    let _l = bp::layer(0);
                    let _g = brick!(BrickId::QkvProjection);
                    spin();
                }
                bp::end_pass(8).unwrap();
                for pos in 8..11 {
                    bp::begin_pass();
                    bp::set_pass_shape(PassShape::new(1, 1, pos + 1).unwrap());
                    {
                        let _l = bp::layer(0);
                        let _g = brick!(BrickId::QkvProjection);
                    }
                    bp::end_pass(1).unwrap();
                }
            });
        }
    });
    let p = bp::collect().unwrap();
    let rows: Vec<(Phase, RowKey, u64)> = p
        .brick("QkvProjection")
        .unwrap()
        .rows
        .iter()
        .map(|r| (r.phase, r.row, r.stats.summary().count))
        .collect();
    assert_eq!(
        rows,
        vec![
            (Phase::Prefill, RowKey::Layer(0), 2),
            (Phase::Decode, RowKey::Layer(0), 6)
        ]
    );
    assert_eq!(p.phase_passes(Phase::Prefill).summary().count, 2);
    assert_eq!(p.phase_passes(Phase::Decode).summary().work.elements, 6);
}

#[test]
fn publishing_a_pass_costs_the_same_whatever_the_run_length_or_the_trace() {
    // spec/front-doors.md "Publishing": a thread publishes at every `end_pass` without building
    // a profile or copying its trace, so a pass's publication does not grow with the run.
    // Before: each `end_pass` built a whole `Profile` and cloned the trace (allocations that
    // grew with the trace, and a cost quadratic in the run's length).
    const LAYERS: usize = 4;
    let _s = fresh(LAYERS, 1 << 16);
    bp::init_thread(None).unwrap();
    let pass = || {
        for layer in 0..LAYERS {
            let _l = bp::layer(layer);
            let _g = brick!(BrickId::RmsNorm);
            let _h = brick!(BrickId::GateProjection);
        }
        bp::end_pass(1).unwrap();
    };
    pass(); // the first pass publishes once (a lock and no profile), like every other
    let allocations =
        |passes: u64| common::native::allocations_during(|| (0..passes).for_each(|_| pass()));
    let (short, long) = (allocations(10), allocations(1000));
    assert_eq!(
        (short, long),
        (0, 0),
        "allocations in 10 and in 1000 traced passes: publishing must not build or copy"
    );
    // What was published is still all there: every pass, and the trace of every brick.
    let p = bp::collect().unwrap();
    assert_eq!(p.meta.counters.passes, 1011);
    assert_eq!(
        p.brick("RmsNorm").map(|b| b.stats.summary().count),
        Some(1011 * LAYERS as u64)
    );
    let trace = bp::collect_trace().expect("a trace");
    let json: serde_json::Value = serde_json::from_str(&trace).unwrap();
    let slices = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "RmsNorm")
        .count();
    assert_eq!(
        slices,
        1011 * LAYERS,
        "every traced RmsNorm, none lost or repeated"
    );
}
