//! spec/sync-modes.md "HIP", conformance without a GPU: the HIP timeline's real FFI path runs
//! against a stand-in runtime (`tests/hip_standin/standin.c`): each stream run by its own worker
//! thread, kernels of known durations, events that complete asynchronously, not-ready answers
//! before completion, a device clock with a known drift, and injected (also unknown) error
//! codes.
//!
//! The parent test compiles the stand-in with the system C compiler (`$CC`, else `cc`) and
//! re-runs this test binary with it in `LD_PRELOAD`, so its symbols take the place of
//! libamdhip64's; the child test then checks pool reuse across generations, one sync per pass,
//! measured durations, the calibration (spec/sync-modes.md "Calibration") and error mapping.

use crate::common;

use std::ffi::{c_char, c_int, c_void, CString};

const MAX_PASSES_IN_FLIGHT: usize = brickprof::model::Limit::PassesInFlight.max();
use brickprof::{
    timeline::HipTimeline, BrickId, BrickProfiler, Error, ProfilerConfig, SyncMode, Timeline,
};
use common::calibrated::{check_calibrated_trace, check_fitted_drift};
use common::native::{compile_c_library, run_child};

const CHILD_ENV: &str = "BRICKPROF_HIP_STANDIN";

#[test]
fn the_hip_timeline_conforms_on_a_stand_in_runtime() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lib = dir.path().join("libhipstandin.so");
    compile_c_library("tests/hip_standin/standin.c", &lib);
    let env = [("LD_PRELOAD", lib.as_os_str()), (CHILD_ENV, "1".as_ref())];
    let out = run_child(
        &common::native::test_name(module_path!(), "child_runs_the_real_ffi_path"),
        &env,
        "stand-in checks passed",
    );
    print!("{out}");
}

/// The stand-in's control functions, found at run time (they exist only in the preloaded
/// library, so this binary cannot link them).
struct StandIn {
    launch: extern "C" fn(*mut c_void, u64),
    fail_next: extern "C" fn(i32, i32),
    set_capturing: extern "C" fn(i32),
    counters: extern "C" fn(*mut i64, c_int) -> c_int,
    stream_waits: extern "C" fn(*mut c_void) -> i64,
    last_stream: extern "C" fn() -> *mut c_void,
    set_clock: extern "C" fn(f64, i64),
}

const F_RECORD: i32 = 1;
const F_SYNC: i32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    event_create: i64,
    event_destroy: i64,
    record: i64,
    sync: i64,
    elapsed: i64,
    stream_create: i64,
    stream_destroy: i64,
    query: i64,
    event_sync: i64,
}

unsafe extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn hipSetDevice(device: c_int) -> c_int;
}

impl StandIn {
    fn load() -> StandIn {
        let find = |name: &str| {
            let c = CString::new(name).unwrap();
            // SAFETY: RTLD_DEFAULT (null) searches the global scope, which holds LD_PRELOAD.
            let p = unsafe { dlsym(std::ptr::null_mut(), c.as_ptr()) };
            assert!(!p.is_null(), "{name} not found: is the stand-in preloaded?");
            p
        };
        // SAFETY: the symbols are the C functions of standin.c with these signatures.
        unsafe {
            StandIn {
                launch: std::mem::transmute::<*mut c_void, extern "C" fn(*mut c_void, u64)>(find(
                    "standin_launch",
                )),
                fail_next: std::mem::transmute::<*mut c_void, extern "C" fn(i32, i32)>(find(
                    "standin_fail_next",
                )),
                set_capturing: std::mem::transmute::<*mut c_void, extern "C" fn(i32)>(find(
                    "standin_set_capturing",
                )),
                counters: std::mem::transmute::<*mut c_void, extern "C" fn(*mut i64, c_int) -> c_int>(
                    find("standin_counters"),
                ),
                stream_waits: std::mem::transmute::<*mut c_void, extern "C" fn(*mut c_void) -> i64>(
                    find("standin_stream_waits"),
                ),
                last_stream: std::mem::transmute::<*mut c_void, extern "C" fn() -> *mut c_void>(
                    find("standin_last_stream"),
                ),
                set_clock: std::mem::transmute::<*mut c_void, extern "C" fn(f64, i64)>(find(
                    "standin_set_clock",
                )),
            }
        }
    }

    fn counts(&self) -> Counts {
        let mut c = [0i64; 16];
        let n = (self.counters)(c.as_mut_ptr(), c.len() as c_int);
        assert!(n >= 9, "the stand-in has {n} counters");
        Counts {
            event_create: c[0],
            event_destroy: c[1],
            record: c[2],
            sync: c[3],
            elapsed: c[4],
            stream_create: c[5],
            stream_destroy: c[6],
            query: c[7],
            event_sync: c[8],
        }
    }
}

const MS: u64 = 1_000_000;

#[test]
#[ignore = "run by the_hip_timeline_conforms_on_a_stand_in_runtime with the stand-in preloaded"]
fn child_runs_the_real_ffi_path() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let s = StandIn::load();
    pool_reuse_one_sync_per_pass_and_durations(&s);
    lagged_polls_with_hip_event_query(&s);
    calibration_recovers_a_drifting_device_clock(&s);
    error_mapping(&s);
    the_device_report_gives_the_reported_peaks();
    println!("stand-in checks passed");
}

fn pool_reuse_one_sync_per_pass_and_durations(s: &StandIn) {
    let before = s.counts();
    let config = ProfilerConfig {
        pending_capacity: 8,
        trace_capacity: 256,
        ..ProfilerConfig::default()
    };
    let timeline = HipTimeline::new(config.pending_capacity).expect("the stand-in has a device");
    assert!(
        !timeline.stream().is_null(),
        "no NULL stream by default: a dedicated one"
    );
    assert_eq!(
        timeline.counts().capacity,
        18 + MAX_PASSES_IN_FLIGHT,
        "2 * pending + 2 events, and one per pass in flight"
    );
    assert_eq!(timeline.resolution_ns(), 1_000);
    let engine = timeline.stream().cast::<c_void>();
    // The timeline's own stream for calibration anchors, made after the engine's.
    let anchor_stream = (s.last_stream)();
    assert_ne!(anchor_stream, engine, "anchors on a stream of their own");
    let built = s.counts();
    let engine_waits = (s.stream_waits)(engine);
    let mut prof = BrickProfiler::with_timeline(config, timeline).unwrap();
    let passes = 6;
    for _ in 0..passes {
        prof.begin_pass();
        for (brick, ms) in [(BrickId::QkvProjection, 2), (BrickId::LmHead, 6)] {
            let t = prof.start_brick(brick);
            (s.launch)(engine, ms * MS);
            prof.stop_brick(t, 1);
        }
        prof.end_pass(1).expect("resolve on the stand-in");
    }
    let after = s.counts();
    assert_eq!(
        after.stream_create - before.stream_create,
        2,
        "the engine's stream and the anchor stream"
    );
    assert_eq!(
        after.event_create - before.event_create,
        18 + MAX_PASSES_IN_FLIGHT as i64 + 2,
        "the pool (and the reference and probe) is created once and reused across generations"
    );
    assert_eq!(after.sync - before.sync, passes, "one sync per pass");
    let anchors = after.event_sync - built.event_sync;
    assert!(
        (passes..=4 * passes).contains(&anchors),
        "anchors (event waits) after each sync until one is used: {anchors} for {passes} passes"
    );
    assert_eq!(
        built.record - before.record,
        1 + 16,
        "construction: the reference and 16 anchors"
    );
    assert_eq!(
        after.record - built.record,
        passes * 4 + anchors,
        "4 marks a pass, and the anchors"
    );
    // spec/sync-modes.md "Calibration": anchors wait on their own stream, never the engine's.
    assert_eq!(
        (s.stream_waits)(engine) - engine_waits,
        passes,
        "the engine's stream: one sync a pass, no anchor wait"
    );
    assert_eq!((s.stream_waits)(anchor_stream), 1 + 16 + anchors);
    assert_eq!(prof.timeline().counts().syncs, passes as u64);
    for (brick, ms) in [(BrickId::QkvProjection, 2.0), (BrickId::LmHead, 6.0)] {
        let st = prof.view().brick_stats(brick);
        assert_eq!(st.summary().count, passes as u64);
        let min = st.summary().min_ns as f64 / MS as f64;
        assert!(
            (ms..ms * 1.5 + 2.0).contains(&min),
            "{brick}: {min} ms for a {ms} ms kernel"
        );
    }
    // Device slices, calibrated, sit in dispatch order without overlap.
    let trace = prof.view().trace_view().map(|v| v.events).unwrap();
    let mut device: Vec<_> = trace
        .iter()
        .filter(|e| e.track == brickprof::profile::Track::Device)
        .collect();
    device.sort_by_key(|e| e.start_ns);
    assert_eq!(device.len(), 2 * passes as usize);
    for w in device.windows(2) {
        assert!(
            w[0].start_ns + w[0].dur_ns <= w[1].start_ns + 1_000,
            "{w:?}"
        );
    }
    drop(prof);
    let end = s.counts();
    assert_eq!(
        end.event_destroy - before.event_destroy,
        18 + MAX_PASSES_IN_FLIGHT as i64 + 2,
        "every event destroyed"
    );
    assert_eq!(
        end.stream_destroy - before.stream_destroy,
        2,
        "the owned stream and the anchor stream destroyed"
    );
}

/// spec/sync-modes.md "Lagged" on the stand-in: `end_pass` asks `hipEventQuery` instead of
/// waiting. A host that runs ahead of the stream needs fewer blocking waits than passes; one
/// slower than the stream needs none; durations are the kernels' own; the event pool is
/// reused as a ring; every pass is resolved by the final flush.
fn lagged_polls_with_hip_event_query(s: &StandIn) {
    for (host_ms, most_waits) in [(0u64, 7i64), (12, 0)] {
        let before = s.counts();
        let config = ProfilerConfig {
            pending_capacity: 8,
            sync_mode: SyncMode::Lagged,
            ..ProfilerConfig::default()
        };
        let timeline = HipTimeline::new(config.pending_capacity).unwrap();
        let engine = timeline.stream().cast::<c_void>();
        let mut prof = BrickProfiler::with_timeline(config, timeline).unwrap();
        let passes = 16;
        for _ in 0..passes {
            prof.begin_pass();
            for (brick, ms) in [(BrickId::QkvProjection, 1), (BrickId::LmHead, 3)] {
                let t = prof.start_brick(brick);
                (s.launch)(engine, ms * MS);
                prof.stop_brick(t, 1);
            }
            std::thread::sleep(std::time::Duration::from_millis(host_ms));
            prof.end_pass(1).expect("lagged end_pass on the stand-in");
        }
        let c = prof.view().counters;
        assert!(
            (c.blocking_waits as i64) <= most_waits && c.blocking_waits < passes,
            "host {host_ms} ms a pass: {} blocking waits for {passes} passes",
            c.blocking_waits
        );
        prof.finalize().unwrap();
        let after = s.counts();
        assert!(after.query > before.query, "hipEventQuery was asked");
        assert_eq!(
            after.sync - before.sync,
            prof.view().counters.syncs as i64,
            "no sync beyond the blocking waits and the final flush"
        );
        assert_eq!(
            (s.stream_waits)(engine),
            prof.view().counters.syncs as i64,
            "the periodic anchors never wait on the engine's stream"
        );
        for (brick, ms) in [(BrickId::QkvProjection, 1.0), (BrickId::LmHead, 3.0)] {
            let st = prof.view().brick_stats(brick);
            assert_eq!(st.summary().count, passes);
            let min = st.summary().min_ns as f64 / MS as f64;
            assert!(
                (ms..ms * 1.5 + 2.0).contains(&min),
                "{brick}: {min} ms for a {ms} ms kernel"
            );
        }
        assert_eq!(prof.view().counters.dropped, 0);
        eprintln!(
            "HIP stand-in, Lagged, host {host_ms} ms a pass: {} blocking waits for {passes} passes",
            c.blocking_waits
        );
    }
}

fn error_mapping(s: &StandIn) {
    let config = ProfilerConfig {
        pending_capacity: 2,
        ..ProfilerConfig::default()
    };
    let fresh =
        || BrickProfiler::with_timeline(config.clone(), HipTimeline::new(2).unwrap()).unwrap();

    // A code the bindings do not know, from a record on the hot path.
    let mut prof = fresh();
    (s.fail_next)(F_RECORD, 4242);
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 1);
    match prof.end_pass(1) {
        Err(Error::Hip {
            call,
            code,
            message,
        }) => {
            assert_eq!((call, code), ("hipEventRecord", 4242));
            assert!(message.contains("unknown error"), "{message}");
            assert!(message.contains("recording a brick's event"), "{message}");
        }
        other => panic!("expected the record error, got {other:?}"),
    }
    assert_eq!(prof.view().counters.dropped, 1);

    // An error of earlier asynchronous work, surfacing at the sync.
    let mut prof = fresh();
    let t = prof.start_brick(BrickId::RmsNorm);
    (s.launch)(prof.timeline().stream().cast(), MS);
    prof.stop_brick(t, 1);
    (s.fail_next)(F_SYNC, 719);
    match prof.end_pass(1) {
        Err(Error::Hip { call, message, .. }) => {
            assert_eq!(call, "hipStreamSynchronize");
            assert!(message.contains("hipErrorLaunchFailure"), "{message}");
            assert!(message.contains("earlier asynchronous work"), "{message}");
        }
        other => panic!("expected the sync error, got {other:?}"),
    }

    // An exhausted pool is not blamed on the runtime: an outer brick stays open across
    // flushes, so the 22 events (6, and one per pass in flight) run out.
    let mut prof = fresh();
    let outer = prof.start_brick(BrickId::LmHead);
    for _ in 0..12 {
        let t = prof.start_brick(BrickId::RmsNorm);
        prof.stop_brick(t, 1);
    }
    prof.stop_brick(outer, 1);
    let err = prof.end_pass(1).expect_err("marks beyond the pool");
    assert!(
        matches!(err, Error::InvalidMark { timeline: "hip" }),
        "expected InvalidMark, got {err:?}"
    );
    assert!(prof.view().counters.dropped >= 1);

    // Stream capture: refused with the reason.
    let mut prof = fresh();
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 1);
    (s.set_capturing)(1);
    let err = prof
        .end_pass(1)
        .expect_err("a captured stream cannot be synced");
    (s.set_capturing)(0);
    assert!(
        err.to_string().contains("does not survive capture"),
        "{err}"
    );
    // spec/sync-modes.md "HIP": the error names ROCm's limitation, and the timeline offers no
    // graph replays to time (they are counted).
    assert!(err.to_string().contains("ROCm/rocm-systems#2380"), "{err}");
    assert!(HipTimeline::new(2).unwrap().graphs().is_none());
    (s.set_capturing)(1);
    let err = HipTimeline::new(2).expect_err("construction checks capture too");
    (s.set_capturing)(0);
    assert!(err.to_string().contains("captured"), "{err}");

    // Resolving before the sync never asks the runtime (it would answer not-ready).
    let mut t = HipTimeline::new(2).unwrap();
    let before = s.counts();
    let a = t.mark(0);
    (s.launch)(t.stream().cast(), MS);
    let b = t.mark(0);
    let err = t.resolve_ns(a, b).expect_err("not synced yet");
    assert!(err.to_string().contains("not known complete"), "{err}");
    assert_eq!(s.counts().elapsed, before.elapsed);
    t.sync().unwrap();
    assert!(t.resolve_ns(a, b).unwrap() >= MS);
}

/// spec/sync-modes.md "Calibration" on the stand-in, whose device clock runs `DRIFT` fast: the
/// fit recovers the drift, reports a bound (finite, below 1 ms), saved in the profile; device
/// slices are monotone on their track and none starts before its host dispatch minus the bound;
/// in Deferred and in Lagged mode. Anchors never wait on the engine's stream.
fn calibration_recovers_a_drifting_device_clock(s: &StandIn) {
    const DRIFT: f64 = 5e-4;
    (s.set_clock)(DRIFT, 123_456_789);
    for mode in [SyncMode::Deferred, SyncMode::Lagged] {
        let config = ProfilerConfig {
            pending_capacity: 8,
            trace_capacity: 1024,
            sync_mode: mode,
            ..ProfilerConfig::default()
        };
        let timeline = HipTimeline::new(config.pending_capacity).unwrap();
        let engine = timeline.stream().cast::<c_void>();
        let mut prof = BrickProfiler::with_timeline(config, timeline).unwrap();
        // The host clock (the TSC where quanta uses it) ticks at its own rate against
        // CLOCK_MONOTONIC, the stand-in's host time: measured over the run.
        let host_clock = prof.timeline().host_clock();
        let (ticks0, started) = (host_clock.ticks(), std::time::Instant::now());
        let mut passes = 0;
        // Long enough for the drift to be fitted (anchors spanning 10,000 brackets).
        while started.elapsed() < std::time::Duration::from_millis(400) {
            prof.begin_pass();
            for (brick, us) in [(BrickId::QkvProjection, 300), (BrickId::LmHead, 900)] {
                let t = prof.start_brick(brick);
                (s.launch)(engine, us * 1_000);
                prof.stop_brick(t, 1);
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
            prof.end_pass(1).unwrap();
            passes += 1;
        }
        let (ticks1, mono_ns) = (host_clock.ticks(), started.elapsed().as_nanos() as f64);
        let host_rate = host_clock.ticks_to_ns(ticks0, ticks1) as f64 / mono_ns;
        prof.finalize().unwrap();
        let checked = check_calibrated_trace(&prof, &format!("hip {mode}"), MS);
        check_fitted_drift(
            &prof,
            &format!("HIP stand-in, {mode}"),
            host_rate,
            DRIFT,
            (s.stream_waits)(engine),
            checked,
            passes,
        );
    }
    (s.set_clock)(0.0, 0);
}

/// spec/work-accounting.md "Device peaks": HIP's attributes become peaks labelled
/// device-reported (the stand-in's device has an MI250X GCD's figures); a device the runtime
/// refuses is a typed error naming the call.
fn the_device_report_gives_the_reported_peaks() {
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b;
    let t = HipTimeline::new(2).unwrap();
    // The stand-in's one device, the one the timeline made its stream on.
    let r = t
        .device_report()
        .expect("the stand-in reports its attributes");
    assert_eq!(r.name, "brickprof stand-in runtime");
    assert_eq!(
        (r.compute_units, r.clock_mhz, r.flops_per_cu_cycle),
        (Some(110), Some(1_700), Some(256)),
        "CUs, clock (kHz / 1000), 256 FLOPs per CU per cycle"
    );
    assert!(
        close(r.mem_gbps.unwrap(), 1_638.4),
        "2 x 1600 MHz x 4096 bits / 8"
    );
    assert_eq!((r.cache_bytes, r.cache), (Some(8 << 20), None));
    let p = r.peaks(None).unwrap().expect("every figure is reported");
    assert!(
        close(p.gflops(), 47_872.0),
        "110 x 1.7 GHz x 256: {}",
        p.gflops()
    );
    assert!(close(p.gbps(), 1_638.4));
    // Labelled "device-reported" (the label itself: src/roofline unit tests).
    assert_eq!(serde_json::to_value(&p).unwrap()["source"], "reported");
    assert_eq!(
        p.name(),
        "brickprof stand-in runtime: compute reported, memory reported"
    );
    assert_eq!(t.device_report().unwrap(), r, "the same report again");
    // A timeline made while device 1 is current reports device 1, which the stand-in refuses.
    // SAFETY: the stand-in's hipSetDevice (preloaded) only sets its current device.
    unsafe { hipSetDevice(1) };
    let on_1 = HipTimeline::new(2).unwrap();
    unsafe { hipSetDevice(0) };
    match on_1.device_report() {
        Err(Error::Hip { call, code, .. }) => {
            assert_eq!((call, code), ("hipDeviceGetName", 101));
        }
        other => panic!("expected a HIP error for device 1, got {other:?}"),
    }
    drop(t);
}
