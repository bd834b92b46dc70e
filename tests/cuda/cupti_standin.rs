//! spec/sync-modes.md "CUPTI", without a GPU: the real `CuptiTimeline` (libcupti loaded with
//! libloading, external correlation pushed and popped at each mark, buffers parsed and joined)
//! runs through `BrickProfiler` against a stand-in CUPTI (`tests/cupti_standin/standin.c`):
//! launches of known durations on a worker thread, records written when they complete and
//! delivered only when flushed, activity records before and in reverse of their API and
//! external-correlation records, captured launches with no kernel, and CUPTI held by another
//! subscriber (error 39) on demand.
//!
//! The parent tests compile the stand-in as `libcupti.so` (and the CUDA stand-in as
//! `libcuda.so`, for the event timeline the fallback builds) and re-run this binary's ignored
//! child tests with them on `LD_LIBRARY_PATH`: one child per process, since a process has one
//! CUPTI session.

use crate::common;

use std::ffi::{c_char, c_int, c_void, CString};

use crate::common::render::render_json;
use brickprof::output::{render_table, TableOptions};
use brickprof::{
    model::Sampling,
    stats::OutsideBricks,
    timeline::{
        nvidia_timeline, Calibrated, CudaTimeline, CuptiTimeline, DeviceGraph, DeviceRecords,
        LaggedPolling, NvidiaChoice,
    },
    BrickId, BrickProfiler, Error, Profile, ProfilerConfig, SyncMode, Timeline,
};
use common::native::{compile_c_library, run_child};

const CHILD_ENV: &str = "BRICKPROF_CUPTI_STANDIN";
const MS: u64 = 1_000_000;

/// Compile both stand-ins (libcupti.so in one folder, libcuda.so in another) and run `child`
/// with the folders in `LD_LIBRARY_PATH` (`with_cupti`: the CUPTI one too) and `extra` set.
fn run(child: &str, with_cupti: bool, extra: &[(&str, &str)]) -> String {
    let cupti = tempfile::tempdir().expect("temp dir");
    let cuda = tempfile::tempdir().expect("temp dir");
    compile_c_library(
        "tests/cupti_standin/standin.c",
        &cupti.path().join("libcupti.so"),
    );
    compile_c_library(
        "tests/cuda_standin/standin.c",
        &cuda.path().join("libcuda.so"),
    );
    let mut path = std::ffi::OsString::new();
    if with_cupti {
        path.push(cupti.path());
        path.push(":");
    }
    path.push(cuda.path());
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    let mut env: Vec<(&str, &std::ffi::OsStr)> = vec![
        ("LD_LIBRARY_PATH", path.as_os_str()),
        (CHILD_ENV, "1".as_ref()),
    ];
    for (k, v) in extra {
        env.push((k, v.as_ref()));
    }
    let out = run_child(
        &common::native::test_name(module_path!(), child),
        &env,
        "cupti checks passed",
    );
    print!("{out}");
    out
}

#[test]
fn the_cupti_timeline_conforms_on_a_stand_in() {
    run("child_times_bricks_from_records", true, &[]);
}

#[test]
fn sampled_passes_are_traced_and_the_others_cost_no_cupti_call() {
    run("child_samples_passes", true, &[]);
}

#[test]
fn cupti_held_by_another_tool_falls_back_to_events_with_one_line() {
    run("child_cupti_held", true, &[("CUPTI_STANDIN_HELD", "1")]);
}

#[test]
fn a_missing_libcupti_falls_back_to_events_with_one_line() {
    run(
        "child_cupti_missing",
        false,
        &[("BRICKPROF_CUPTI_LIB", "/nonexistent/libcupti.so")],
    );
}

/// The stand-in's hooks, from the libcupti.so the timeline loaded.
struct StandIn {
    launch: extern "C" fn(u32, u64) -> u32,
    memcpy: extern "C" fn(u32, u64) -> u32,
    api: extern "C" fn(),
    capture: extern "C" fn(c_int),
    sync: extern "C" fn(),
    spans: extern "C" fn() -> i64,
    span: extern "C" fn(i64, *mut u64, *mut u64) -> c_int,
    counters: extern "C" fn(*mut i64, c_int) -> c_int,
    captured_graph: extern "C" fn() -> u32,
    instantiate: extern "C" fn(u32) -> u32,
    graph_launch: extern "C" fn(u32) -> u32,
}

unsafe extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

impl StandIn {
    fn load() -> StandIn {
        let name = CString::new("libcupti.so").unwrap();
        // SAFETY: the library the search path finds first: the one the timeline opened.
        let lib = unsafe { dlopen(name.as_ptr(), 2) };
        assert!(!lib.is_null(), "libcupti.so not found");
        let find = |n: &str| {
            let c = CString::new(n).unwrap();
            // SAFETY: a symbol lookup in a live handle.
            let p = unsafe { dlsym(lib, c.as_ptr()) };
            assert!(!p.is_null(), "{n}: is this the stand-in?");
            p
        };
        // SAFETY: standin.c's functions with these C signatures.
        unsafe {
            StandIn {
                launch: std::mem::transmute::<*mut c_void, extern "C" fn(u32, u64) -> u32>(find(
                    "cupti_standin_launch",
                )),
                memcpy: std::mem::transmute::<*mut c_void, extern "C" fn(u32, u64) -> u32>(find(
                    "cupti_standin_memcpy",
                )),
                api: std::mem::transmute::<*mut c_void, extern "C" fn()>(find("cupti_standin_api")),
                capture: std::mem::transmute::<*mut c_void, extern "C" fn(c_int)>(find(
                    "cupti_standin_capture",
                )),
                sync: std::mem::transmute::<*mut c_void, extern "C" fn()>(find(
                    "cupti_standin_sync",
                )),
                spans: std::mem::transmute::<*mut c_void, extern "C" fn() -> i64>(find(
                    "cupti_standin_spans",
                )),
                span: std::mem::transmute::<
                    *mut c_void,
                    extern "C" fn(i64, *mut u64, *mut u64) -> c_int,
                >(find("cupti_standin_span")),
                counters: std::mem::transmute::<*mut c_void, extern "C" fn(*mut i64, c_int) -> c_int>(
                    find("cupti_standin_counters"),
                ),
                captured_graph: std::mem::transmute::<*mut c_void, extern "C" fn() -> u32>(find(
                    "cupti_standin_captured_graph",
                )),
                instantiate: std::mem::transmute::<*mut c_void, extern "C" fn(u32) -> u32>(find(
                    "cupti_standin_instantiate",
                )),
                graph_launch: std::mem::transmute::<*mut c_void, extern "C" fn(u32) -> u32>(find(
                    "cupti_standin_graph_launch",
                )),
            }
        }
    }

    /// The device start and end of the `i`-th launch run.
    fn span(&self, i: i64) -> (u64, u64) {
        let (mut s, mut e) = (0, 0);
        assert_eq!((self.span)(i, &mut s, &mut e), 0, "launch {i} has not run");
        (s, e)
    }

    /// flushes, buffers delivered, pushes, pops, launches run, records lost, enables,
    /// disables, finalizes, records written.
    fn counts(&self) -> [i64; 10] {
        let mut c = [0i64; 10];
        (self.counters)(c.as_mut_ptr(), 10);
        c
    }
}

fn config(mode: SyncMode) -> ProfilerConfig {
    ProfilerConfig {
        pending_capacity: 16,
        sync_mode: mode,
        ..ProfilerConfig::default()
    }
}

#[test]
#[ignore = "run by the_cupti_timeline_conforms_on_a_stand_in with the stand-in on the path"]
fn child_times_bricks_from_records() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let t = CuptiTimeline::new().expect("the stand-in loads");
    assert!(t.counts().library.is_some_and(|l| l.contains("libcupti")));
    let s = StandIn::load();
    assert_eq!(s.counts()[0], 0, "nothing flushed yet");
    deferred_bricks_are_their_kernels_exactly(&s, t);
    lagged_polls_never_wait(&s);
    launches_outside_bricks_are_counted_not_dropped(&s);
    captured_and_non_launch_calls_expect_no_record(&s);
    graph_replays_are_timed_node_by_node(&s, SyncMode::Deferred);
    graph_replays_are_timed_node_by_node(&s, SyncMode::Lagged);
    the_thread_front_door_uses_cupti_by_default(&s);
    the_explicit_door_uses_cupti_by_default(&s);
    assert_eq!(s.counts()[5], 0, "the stand-in lost no record");
    println!("cupti checks passed");
}

#[test]
#[ignore = "run by sampled_passes_are_traced_and_the_others_cost_no_cupti_call"]
fn child_samples_passes() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let s = StandIn::load();
    bursts_detach_between_them(&s);
    every_nth_pass_disables_records_between(&s);
    untraced_replays_are_counted_not_timed(&s);
    assert_eq!(s.counts()[5], 0, "the stand-in lost no record");
    println!("cupti checks passed");
}

/// One sampled pass of three bricks, a launch each; whether it wrote records or made a CUPTI
/// call, and the launches' device times.
fn sampled_pass<T: Timeline>(
    s: &StandIn,
    prof: &mut BrickProfiler<T>,
    traced: bool,
    ns: &mut Vec<u64>,
) {
    let before = s.counts();
    let first = (s.spans)();
    prof.begin_pass();
    for brick in [BrickId::RmsNorm, BrickId::QkvProjection, BrickId::LmHead] {
        let t = prof.start_brick(brick);
        (s.launch)(13, MS / 5);
        prof.stop_brick(t, 1);
    }
    prof.end_pass(1).expect("resolves on the stand-in");
    (s.sync)();
    let after = s.counts();
    let delta = |i: usize| after[i] - before[i];
    if traced {
        assert_eq!(delta(2), 6, "one push a mark in a traced pass");
        for i in 0..3 {
            let (a, b) = s.span(first + i);
            ns.push(b - a);
        }
    } else {
        assert_eq!(
            (delta(2), delta(3)),
            (0, 0),
            "an untraced pass pushes and pops nothing"
        );
        assert_eq!(delta(9), 0, "an untraced pass writes no record");
        assert_eq!(delta(4), 3, "its launches ran");
    }
}

/// spec/sync-modes.md "Sampled tracing": bursts of 2 passes, 3 untraced after each. CUPTI is
/// detached (`cuptiFinalize`) after each burst and attached again before the next; untraced
/// passes cost no CUPTI call a brick and write no record; traced passes are exact; the
/// report says how many passes were traced.
fn bursts_detach_between_them(s: &StandIn) {
    let plan = "bursts-2-3".parse::<Sampling>().unwrap();
    let config = ProfilerConfig {
        sampling: plan,
        ..config(SyncMode::Deferred)
    };
    let t = CuptiTimeline::new().expect("the stand-in loads");
    let start = s.counts();
    let mut prof = BrickProfiler::with_timeline(config, t).unwrap();
    let mut ns = Vec::new();
    for pass in 0..10u64 {
        sampled_pass(s, &mut prof, [0, 1, 5, 6].contains(&pass), &mut ns);
    }
    let c = s.counts();
    assert_eq!(c[8] - start[8], 2, "one detach after each burst");
    assert_eq!(
        c[6] - start[6],
        12,
        "re-attached before passes 5 and 10: the 6 kinds enabled again each time"
    );
    assert_eq!(c[7] - start[7], 0, "detaching needs no disable");
    let counts = prof.timeline().counts();
    assert_eq!((counts.tracing_stops, counts.records_stopped), (2, 2));
    // Traced passes are exact: each brick is its kernel's own time.
    for (i, brick) in [BrickId::RmsNorm, BrickId::QkvProjection, BrickId::LmHead]
        .into_iter()
        .enumerate()
    {
        let stats = prof.view().brick_stats(brick);
        assert_eq!(stats.summary().count, 4, "{brick:?}: the 4 traced passes");
        let want = ns.iter().skip(i).step_by(3).min().copied().unwrap();
        assert_eq!(stats.summary().min_ns, want, "{brick:?}");
    }
    assert_eq!(prof.view().counters.dropped, 0);
    let p = prof.profile();
    assert_eq!(p.meta.counters.passes, 10, "untraced passes are counted");
    let table = render_table(&p, &TableOptions::default());
    assert!(
        table.contains(
            "Sampling in bursts of 2 passes, 3 untraced after each: 4 of 10 passes traced"
        ),
        "{table}"
    );
}

/// spec/sync-modes.md "Sampled tracing": one pass in 3 traced; between them the records are
/// disabled (no detach: the plan spreads no detach cost) and enabled again.
fn every_nth_pass_disables_records_between(s: &StandIn) {
    let config = ProfilerConfig {
        sampling: "every-3".parse::<Sampling>().unwrap(),
        ..config(SyncMode::Deferred)
    };
    let t = CuptiTimeline::new().expect("the stand-in loads");
    let start = s.counts();
    let mut prof = BrickProfiler::with_timeline(config, t).unwrap();
    let mut ns = Vec::new();
    for pass in 0..7u64 {
        sampled_pass(s, &mut prof, pass % 3 == 0, &mut ns);
    }
    let c = s.counts();
    assert_eq!(c[8] - start[8], 0, "no detach");
    assert_eq!(
        c[7] - start[7],
        18,
        "disabled before passes 1, 4 and 7, 6 kinds each"
    );
    assert_eq!(c[6] - start[6], 12, "enabled before passes 3 and 6");
    assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).summary().count, 3);
    let want = ns.iter().step_by(3).min().copied().unwrap();
    assert_eq!(
        prof.view().brick_stats(BrickId::RmsNorm).summary().min_ns,
        want
    );
}

/// spec/sync-modes.md "Sampled tracing" and "Graph capture" ("Sampling"): under bursts of 1
/// pass, 1 untraced after, the captured pass 0 is traced; replays in untraced passes write no
/// record and are counted as passes the plan left unmarked; replays in traced passes (CUPTI attached again) are
/// timed node by node, exactly.
fn untraced_replays_are_counted_not_timed(s: &StandIn) {
    let config = ProfilerConfig {
        sampling: "bursts-1-1".parse::<Sampling>().unwrap(),
        ..config(SyncMode::Deferred)
    };
    let t = CuptiTimeline::new().unwrap();
    let mut prof = BrickProfiler::with_timeline(config, t).unwrap();
    (s.capture)(1);
    prof.begin_pass();
    let b = prof.start_brick(BrickId::RmsNorm);
    (s.launch)(13, MS);
    prof.stop_brick(b, 1);
    prof.end_pass(1).unwrap();
    (s.capture)(0);
    let captured = (s.captured_graph)();
    let exec = (s.instantiate)(captured);
    let graph = DeviceGraph::from_raw(u64::from(captured), u64::from(exec));
    prof.graphs().adopt(graph).unwrap();
    let mut want = Vec::new();
    for pass in 1..=6 {
        (s.sync)();
        let before = s.counts();
        let first = (s.spans)();
        let r = prof.graphs().begin_replay(graph).unwrap();
        (s.graph_launch)(exec);
        prof.graphs().end_replay(r, 1).unwrap();
        (s.sync)();
        let after = s.counts();
        if pass % 2 == 1 {
            assert_eq!(after[9], before[9], "replay {pass}: untraced, no record");
        } else {
            let (a, b) = s.span(first);
            want.push(b - a);
        }
    }
    prof.finalize().unwrap();
    let c = prof.view().counters;
    // The captured pass is not a counted pass; the 6 replays are.
    assert_eq!(
        (c.passes, c.graph_replays, c.untimed_replays),
        (6, 3, 0),
        "the untraced replays are passes the plan left unmarked, counted, not untimed"
    );
    let st = prof.view().brick_stats(BrickId::RmsNorm);
    assert_eq!(st.summary().count, 3, "the traced replays");
    assert_eq!(st.summary().min_ns, *want.iter().min().unwrap(), "exactly");
    assert_eq!(st.summary().max_ns, *want.iter().max().unwrap(), "exactly");
}

/// spec/sync-modes.md "CUPTI": a brick's device time is its first kernel's start to its last
/// record's end, exactly as the records say (children and copies included); a brick with no
/// launch is host-only (0, counted); a pass costs one push and one pop a mark, and its records
/// arrive only through the flushes the timeline makes itself at `end_pass`.
fn deferred_bricks_are_their_kernels_exactly(s: &StandIn, t: CuptiTimeline) {
    let mut prof = BrickProfiler::with_timeline(config(SyncMode::Deferred), t).unwrap();
    let passes = 3;
    let before = s.counts();
    let mut want = Vec::new();
    for _ in 0..passes {
        let first = (s.spans)();
        prof.begin_pass();
        let outer = prof.start_brick(BrickId::LmHead);
        let inner = prof.start_brick(BrickId::RmsNorm);
        (s.launch)(13, MS);
        prof.stop_brick(inner, 1);
        (s.launch)(13, 2 * MS);
        prof.stop_brick(outer, 1);
        let qkv = prof.start_brick(BrickId::QkvProjection);
        (s.launch)(14, MS);
        (s.memcpy)(14, MS / 2);
        prof.stop_brick(qkv, 1);
        let host = prof.start_brick(BrickId::Activation);
        prof.stop_brick(host, 1);
        prof.end_pass(1).expect("resolves on the stand-in");
        let k = |i| s.span(first + i);
        want.push((k(0).1 - k(0).0, k(1).1 - k(0).0, k(3).1 - k(2).0));
    }
    let after = s.counts();
    assert!(after[0] > before[0], "end_pass flushed");
    assert_eq!(after[2] - before[2], passes * 8, "one push a mark");
    assert_eq!(
        after[3] - before[3],
        passes * 8 - 1,
        "one pop a mark after the first"
    );
    let min = |i: usize| want.iter().map(|w| [w.0, w.1, w.2][i]).min().unwrap();
    assert_eq!(
        prof.view().brick_stats(BrickId::RmsNorm).summary().min_ns,
        min(0)
    );
    assert_eq!(
        prof.view().brick_stats(BrickId::LmHead).summary().min_ns,
        min(1)
    );
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::QkvProjection)
            .summary()
            .min_ns,
        min(2),
        "a kernel and a copy on another stream"
    );
    assert_eq!(
        prof.view().brick_stats(BrickId::RmsNorm).summary().count,
        passes as u64
    );
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::Activation)
            .summary()
            .max_ns,
        0
    );
    assert_eq!(prof.timeline().counts().host_only_bricks, passes as u64);
    assert_eq!(prof.view().counters.dropped, 0);
    assert!(prof.timeline().calibration().is_some());
    host_only_bricks_reach_the_profile(&prof, passes as u64);
}

/// spec/sync-modes.md "CUPTI" and spec/profile-format.md "The profile file" (a brick's
/// `host_only`): the host-only brick is flagged in the saved profile (`host_only`), the table and
/// the JSON; bricks with kernels are not; the flag survives a save and a load.
fn host_only_bricks_reach_the_profile<T: Timeline>(prof: &BrickProfiler<T>, passes: u64) {
    let p = prof.profile();
    assert_eq!(p.brick("Activation").unwrap().host_only, passes);
    assert_eq!(p.brick("RmsNorm").unwrap().host_only, 0);
    assert_eq!(p.brick("LmHead").unwrap().host_only, 0);
    assert_eq!(
        p.meta.outside_bricks,
        Some(OutsideBricks::default()),
        "no launch outside a brick yet, and the row is there, empty"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    p.save(&path).unwrap();
    let back = Profile::load(&path).unwrap();
    assert_eq!(
        back, p,
        "host-only counts and the outside row survive a save"
    );
    let table = render_table(&back, &TableOptions::default());
    assert!(
        table.contains(&format!(
            "HOST-ONLY calls (no device work): Activation (all {passes})"
        )),
        "{table}"
    );
    assert!(!table.contains("RmsNorm ("), "{table}");
    let json = render_json(&back, &TableOptions::default());
    assert!(json.contains(&format!("\"host_only\": {passes}")), "{json}");
    assert!(json.contains("\"outside_bricks\""), "{json}");
}

/// spec/sync-modes.md "CUPTI" ("Completion"): Lagged asks with one flush and never waits; a
/// mark is reached once every call before it has its record.
fn lagged_polls_never_wait(s: &StandIn) {
    let mut t = CuptiTimeline::new().unwrap();
    let a = t.mark(0);
    (s.launch)(13, 30 * MS);
    let b = t.mark(0);
    let first = (s.spans)();
    assert!(!t.reached(b).unwrap(), "the 30 ms kernel is still running");
    assert_eq!(t.counts().sync_waits, 0, "no wait");
    (s.sync)();
    assert!(
        t.reached(b).unwrap(),
        "its record arrived at the next flush"
    );
    let (start, end) = s.span(first);
    assert_eq!(t.resolve_ns(a, b).unwrap(), end - start);
    t.release_through(b);

    // The same through the profiler: end_pass does not block, and the pass resolves later.
    let mut prof = BrickProfiler::with_timeline(config(SyncMode::Lagged), t).unwrap();
    prof.begin_pass();
    let k = prof.start_brick(BrickId::RmsNorm);
    (s.launch)(13, 20 * MS);
    prof.stop_brick(k, 1);
    prof.end_pass(1).unwrap();
    assert_eq!(
        prof.view().in_flight.passes,
        1,
        "the kernel is still running"
    );
    (s.sync)();
    prof.finalize().unwrap();
    assert_eq!(prof.view().in_flight.passes, 0);
    assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).summary().count, 1);
    assert!(prof.view().brick_stats(BrickId::RmsNorm).summary().min_ns >= 20 * MS);
    assert_eq!(prof.view().counters.blocking_waits, 0);
}

/// spec/sync-modes.md "CUPTI": a kernel launched between bricks, and one launched on a thread
/// with no brick, are counted outside any brick, never dropped.
fn launches_outside_bricks_are_counted_not_dropped(s: &StandIn) {
    let mut t = CuptiTimeline::new().unwrap();
    let before = t.outside_bricks();
    let a = t.mark(0);
    (s.launch)(13, MS);
    let b = t.mark(0);
    (s.launch)(13, MS); // between bricks
    let c = t.mark(0);
    let launch = s.launch;
    std::thread::spawn(move || {
        launch(15, MS); // no brick on this thread
    })
    .join()
    .unwrap();
    t.sync().unwrap();
    assert!(t.resolve_ns(a, b).unwrap() >= MS);
    t.recycle();
    let _ = c;
    // Every launch has run; the next flush delivers the last one, two more decide that it has
    // no external id (spec/sync-modes.md "CUPTI", "Completion": two flushes).
    (s.sync)();
    for _ in 0..3 {
        t.sync().unwrap();
    }
    let after = t.outside_bricks();
    assert_eq!(after.kernels - before.kernels, 2);
    assert!(after.busy_ns - before.busy_ns >= 2 * MS);

    // Through the profiler: a kernel launched between two bricks of a pass is the profile's
    // row outside any brick (its count and device time), in the file, the table and the JSON.
    let mut prof = BrickProfiler::with_timeline(config(SyncMode::Deferred), t).unwrap();
    let start = prof.timeline().outside_bricks();
    prof.begin_pass();
    let k = prof.start_brick(BrickId::RmsNorm);
    (s.launch)(13, MS);
    prof.stop_brick(k, 1);
    (s.sync)();
    let first = (s.spans)();
    (s.launch)(13, 3 * MS); // between bricks
    let k = prof.start_brick(BrickId::Activation);
    (s.launch)(13, MS);
    prof.stop_brick(k, 1);
    prof.end_pass(1).unwrap();
    prof.begin_pass();
    prof.end_pass(1).unwrap(); // the next pass releases the first's positions
    let (a, b) = s.span(first);
    let outside = prof.profile().meta.outside_bricks.expect("the CUPTI row");
    assert_eq!(outside.kernels - start.kernels, 1);
    assert_eq!(outside.busy_ns - start.busy_ns, b - a);
    let table = render_table(&prof.profile(), &TableOptions::default());
    let row = table
        .lines()
        .find(|l| l.starts_with("(outside any brick)"))
        .unwrap_or_else(|| panic!("no outside row: {table}"));
    assert!(
        row.contains(&format!("{} kernels", outside.kernels)),
        "{row}"
    );
    let json = render_json(&prof.profile(), &TableOptions::default());
    assert!(
        json.contains(&format!("\"busy_ns\": {}", outside.busy_ns)),
        "{json}"
    );
}

/// spec/sync-modes.md "CUPTI": a launch during a stream capture runs nothing, and a call that
/// launches nothing (cudaMalloc) expects nothing: neither holds a pass.
fn captured_and_non_launch_calls_expect_no_record(s: &StandIn) {
    let mut t = CuptiTimeline::new().unwrap();
    (s.capture)(1);
    let a = t.mark(0);
    (s.launch)(13, MS);
    (s.api)();
    let b = t.mark(0);
    (s.capture)(0);
    t.sync().unwrap();
    assert_eq!(t.resolve_ns(a, b).unwrap(), 0, "captured: host-only");
    let (missing, captured) = (t.counts().launches_missing, t.counts().launches_captured);
    assert_eq!(missing, 0);
    assert!(captured >= 1);
}

/// spec/sync-modes.md "CUPTI" ("Graphs"): a pass captured into a graph (known from the
/// graph-node callbacks), adopted after instantiation (the executable's nodes have new ids),
/// then replayed: each replay is one pass, and each brick is exactly its kernels' span, by
/// node, with nothing added to the graph and one mark a replay. A brick with no node is
/// host-only. In Lagged, a replay whose first kernel is in but not its second (20 ms) is not
/// resolved yet (it was, short, when a graph launch completed at its first kernel).
fn graph_replays_are_timed_node_by_node(s: &StandIn, mode: SyncMode) {
    let t = CuptiTimeline::new().unwrap();
    let mut prof = BrickProfiler::with_timeline(config(mode), t).unwrap();
    (s.capture)(1);
    prof.begin_pass();
    let outer = prof.start_brick(BrickId::LmHead);
    let inner = prof.start_brick(BrickId::RmsNorm);
    (s.launch)(13, MS);
    prof.stop_brick(inner, 1);
    (s.launch)(13, 20 * MS);
    prof.stop_brick(outer, 1);
    let qkv = prof.start_brick(BrickId::QkvProjection);
    (s.launch)(13, MS);
    (s.launch)(13, MS / 2);
    prof.stop_brick(qkv, 1);
    let host = prof.start_brick(BrickId::Activation);
    prof.stop_brick(host, 1);
    prof.end_pass(1).unwrap();
    (s.capture)(0);
    assert_eq!(
        prof.view().counters.captured_passes,
        1,
        "the capture is known"
    );
    let graph = (s.captured_graph)();
    let exec = (s.instantiate)(graph);
    assert!(exec > graph);
    let device = DeviceGraph::from_raw(u64::from(graph), u64::from(exec));
    prof.graphs().adopt(device).unwrap();
    let replays = 3;
    let mut want = Vec::new();
    let pushes = s.counts()[2];
    for _ in 0..replays {
        (s.sync)();
        let first = (s.spans)();
        let r = prof.graphs().begin_replay(device).unwrap();
        (s.graph_launch)(exec);
        prof.graphs().end_replay(r, 1).unwrap();
        if mode == SyncMode::Lagged {
            // The first kernel has run, the 20 ms one not: the replay must stay in flight.
            while (s.spans)() <= first {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            prof.begin_pass();
            prof.end_pass(1).unwrap();
            assert!(
                prof.view().in_flight.passes >= 1,
                "resolved before its kernels were in"
            );
        }
        (s.sync)();
        let k = |i| s.span(first + i);
        want.push((k(0).1 - k(0).0, k(1).1 - k(0).0, k(3).1 - k(2).0));
    }
    // One mark a replay (Lagged: and the pass's end mark, as for every pass in flight).
    let per_replay = if mode == SyncMode::Lagged { 2 } else { 1 };
    assert_eq!(
        s.counts()[2] - pushes,
        replays * per_replay,
        "marks a replay"
    );
    prof.finalize().unwrap();
    assert_eq!(prof.view().in_flight.passes, 0);
    assert_eq!(prof.view().counters.graph_replays, replays as u64);
    assert_eq!(prof.view().counters.untimed_replays, 0);
    let min = |i: usize| want.iter().map(|w| [w.0, w.1, w.2][i]).min().unwrap();
    let max = |i: usize| want.iter().map(|w| [w.0, w.1, w.2][i]).max().unwrap();
    for (brick, i) in [
        (BrickId::RmsNorm, 0),
        (BrickId::LmHead, 1),
        (BrickId::QkvProjection, 2),
    ] {
        let st = prof.view().brick_stats(brick);
        assert_eq!(st.summary().count, replays as u64, "{brick:?}");
        assert_eq!(
            (st.summary().min_ns, st.summary().max_ns),
            (min(i), max(i)),
            "{brick:?} exactly"
        );
    }
    assert!(prof.view().brick_stats(BrickId::LmHead).summary().min_ns >= 21 * MS);
    assert_eq!(
        prof.profile().brick("Activation").unwrap().host_only,
        replays as u64
    );
    if mode == SyncMode::Lagged {
        assert_eq!(prof.view().counters.blocking_waits, 0);
    }
    let missing = prof.timeline().counts().launches_missing;
    assert_eq!(missing, 0);
}

/// spec/front-doors.md "Device timelines" and spec/sync-modes.md "CUPTI" ("One subscriber;
/// choosing"): with the `cupti` feature, a thread of the thread-local front door that no factory or
/// call gave a timeline marks CUPTI, with no code change: its bricks are its kernels' own time;
/// `BRICKPROF_NVIDIA_TIMELINE=events` leaves such a thread on the host clock.
fn the_thread_front_door_uses_cupti_by_default(s: &StandIn) {
    use brickprof::thread as bp;
    bp::configure(ProfilerConfig::with_layers(1)).unwrap();
    bp::set_enabled(true);
    let launch = s.launch;
    let spans = s.spans;
    let sync = s.sync;
    let span = s.span;
    let (kind, got, want) = std::thread::spawn(move || {
        let kind = bp::init_thread(None).ok();
        let mut want = u64::MAX;
        for _ in 0..2 {
            sync();
            let first = spans();
            {
                let _l = bp::layer(0);
                let _g = brickprof::brick!(BrickId::QkvProjection);
                launch(13, MS);
            }
            bp::end_pass(1).unwrap();
            let (mut a, mut b) = (0, 0);
            assert_eq!(span(first, &mut a, &mut b), 0);
            want = want.min(b - a);
        }
        let got = bp::collect().unwrap();
        (kind, got, want)
    })
    .join()
    .unwrap();
    assert_eq!(kind.map(|k| k.name().to_owned()), Some("cupti".to_owned()));
    assert_eq!(got.meta.timeline.name(), "cupti");
    let qkv = &got.brick("QkvProjection").unwrap().stats;
    assert_eq!(
        (qkv.summary().count, qkv.summary().min_ns),
        (2, want),
        "the kernel's own time"
    );
    bp::reset();
    std::env::set_var("BRICKPROF_NVIDIA_TIMELINE", "events");
    let kind = std::thread::spawn(|| bp::init_thread(None).ok())
        .join()
        .unwrap();
    assert_eq!(kind, Some(brickprof::timeline::TimelineKind::Cpu));
    std::env::remove_var("BRICKPROF_NVIDIA_TIMELINE");
    bp::set_enabled(false);
    bp::reset();
}

/// spec/sync-modes.md "CUPTI", "One subscriber; choosing": with the `cupti` feature,
/// `BrickProfiler::nvidia` (the explicit API's door on NVIDIA) times bricks from CUPTI's records
/// when CUPTI can be had: a brick reads its kernel's own time and the profile records no marking
/// cost.
fn the_explicit_door_uses_cupti_by_default(s: &StandIn) {
    let stream = CudaTimeline::on_device(0, 8).unwrap().stream().clone();
    let mut prof = BrickProfiler::nvidia(config(SyncMode::Deferred), stream).unwrap();
    assert_eq!(prof.timeline().kind().name(), "cupti");
    let mut want = u64::MAX;
    for _ in 0..2 {
        (s.sync)();
        let first = (s.spans)();
        let t = prof.start_brick(BrickId::AttentionScore);
        (s.launch)(21, MS);
        prof.stop_brick(t, 1);
        prof.end_pass(1).unwrap();
        let (mut a, mut b) = (0, 0);
        assert_eq!((s.span)(first, &mut a, &mut b), 0);
        want = want.min(b - a);
    }
    let got = prof.profile();
    assert_eq!(got.meta.timeline.name(), "cupti");
    assert_eq!(
        got.meta.mark_cost_ns, None,
        "CUPTI adds no mark to the stream"
    );
    let attn = &got.brick("AttentionScore").unwrap().stats;
    assert_eq!(
        (attn.summary().count, attn.summary().min_ns),
        (2, want),
        "the kernel's own time"
    );
}

#[test]
#[ignore = "run by cupti_held_by_another_tool_falls_back_to_events_with_one_line"]
fn child_cupti_held() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    match CuptiTimeline::new() {
        Err(Error::Cupti { code, .. }) => assert_eq!(code, 39),
        other => panic!("expected error 39, got {other:?}"),
    }
    let stream = CudaTimeline::on_device(0, 8).unwrap().stream().clone();
    let chosen = nvidia_timeline(stream.clone(), 8, NvidiaChoice::Auto).unwrap();
    assert!(!chosen.cupti);
    assert_eq!(chosen.timeline.kind().name(), "cuda");
    let line = chosen.fallback.expect("one line saying why");
    assert!(line.contains("another tool holds CUPTI"), "{line}");
    assert_eq!(line.lines().count(), 1);
    println!("{line}");
    assert!(nvidia_timeline(stream.clone(), 8, NvidiaChoice::Cupti).is_err());
    let events = nvidia_timeline(stream.clone(), 8, NvidiaChoice::Events).unwrap();
    assert!(!events.cupti && events.fallback.is_none());
    // The explicit door falls back the same way, and its profile states the events' cost.
    let mut prof = BrickProfiler::nvidia(config(SyncMode::Deferred), stream).unwrap();
    assert_eq!(prof.timeline().kind().name(), "cuda");
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
    assert_eq!(prof.profile().meta.mark_cost_ns, Some(3_300));
    println!("cupti checks passed");
}

#[test]
#[ignore = "run by a_missing_libcupti_falls_back_to_events_with_one_line"]
fn child_cupti_missing() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    match CuptiTimeline::new() {
        Err(Error::NoDevice { timeline, .. }) => assert_eq!(timeline, "cupti"),
        other => panic!("expected no libcupti, got {other:?}"),
    }
    let stream = CudaTimeline::on_device(0, 8).unwrap().stream().clone();
    let chosen = nvidia_timeline(stream, 8, NvidiaChoice::Auto).unwrap();
    assert!(!chosen.cupti);
    let line = chosen.fallback.expect("one line saying why");
    assert!(line.contains("libcupti could not be loaded"), "{line}");
    assert_eq!(
        "events".parse::<NvidiaChoice>().unwrap(),
        NvidiaChoice::Events
    );
    assert!("gpu".parse::<NvidiaChoice>().is_err());
    println!("cupti checks passed");
}
