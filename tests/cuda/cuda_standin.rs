//! spec/sync-modes.md "CUDA", conformance without a GPU: the real `CudaTimeline` (cudarc's
//! dynamic-loading driver bindings, brickprof's raw event calls) runs through `BrickProfiler`
//! against a stand-in driver (`tests/cuda_standin/standin.c`): each stream run by its own worker
//! thread, kernels of known durations, events that complete asynchronously, not-ready answers
//! before completion, per-thread current contexts, stream-capture status, a device clock with a
//! known drift, injected errors.
//!
//! cudarc opens `libcuda.so` (then `libcuda.so.1`, ...) through the library search path, and
//! looks each driver function up at its first call. The parent test compiles the stand-in with
//! the system C compiler (`$CC`, else `cc`) as `libcuda.so` in a temporary directory and re-runs
//! this test binary with that directory first in `LD_LIBRARY_PATH`; the child test checks
//! durations, pool reuse, one sync per pass, the context binding (at most once per pass, never
//! per mark), graph capture (a captured pass is counted, not timed, never synchronized), the
//! calibration (spec/sync-modes.md "Calibration") and error mapping.

use crate::common;

use std::ffi::c_void;
use std::sync::Arc;

use brickprof::output::{render_table, TableOptions};
use brickprof::{
    profile::Track, roofline::DevicePeaks, timeline::CudaTimeline, BrickId, BrickProfiler, Error,
    ProfilerConfig, SyncMode, Timeline,
};
use common::calibrated::{check_calibrated_trace, check_fitted_drift};
use common::cuda_standin::*;
use cudarc::driver::{result, sys, CudaStream};

const CHILD_ENV: &str = "BRICKPROF_CUDA_STANDIN";
const MS: u64 = 1_000_000;

#[test]
fn the_cuda_timeline_conforms_on_a_stand_in_driver() {
    let out = run_on_standin(
        &common::native::test_name(module_path!(), "child_runs_the_real_ffi_path"),
        CHILD_ENV,
        "stand-in checks passed",
    );
    print!("{out}");
}

#[test]
#[ignore = "run by the_cuda_timeline_conforms_on_a_stand_in_driver with the stand-in on the path"]
fn child_runs_the_real_ffi_path() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let s = StandIn::load();
    the_stand_in_keeps_the_driver_rules(&s);
    durations_pool_reuse_and_one_sync_per_pass(&s);
    a_thread_without_the_context_gets_it_once_per_pass(&s);
    captured_passes_are_counted_not_timed(&s);
    calibration_recovers_a_drifting_device_clock(&s);
    error_mapping(&s);
    the_device_report_gives_the_reported_peaks();
    println!("stand-in checks passed");
}

fn config(pending: usize) -> ProfilerConfig {
    ProfilerConfig {
        pending_capacity: pending,
        trace_capacity: 256,
        ..ProfilerConfig::default()
    }
}

/// What the stand-in must do for the tests below to mean anything: events complete only when
/// the stream reaches them, and records need the stream's context current.
fn the_stand_in_keeps_the_driver_rules(s: &StandIn) {
    let t = CudaTimeline::on_device(0, 2).expect("the stand-in has a device");
    let stream = t.stream().clone();
    let ctx = stream.context().clone();
    let event = ctx
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        .unwrap();
    let before = s.counts();
    (s.launch)(stream.cu_stream().cast(), 30 * MS);
    event.record(&stream).unwrap();
    assert!(
        !event.try_is_complete().unwrap(),
        "cuEventQuery: not ready until the stream reaches the event"
    );
    event.synchronize().unwrap();
    assert!(
        event.try_is_complete().unwrap(),
        "reached after cuEventSynchronize"
    );
    let after = s.counts();
    assert_eq!(after.query - before.query, 2);
    assert_eq!(after.event_sync - before.event_sync, 1);

    // A thread with no current context cannot record (the rule the timeline must respect).
    let raw_event = SendPtr(event.cu_event().cast());
    let raw_stream = SendPtr(stream.cu_stream().cast());
    let code = std::thread::spawn(move || {
        let (e, st) = (raw_event, raw_stream);
        // SAFETY: live event and stream (joined before they drop).
        unsafe { result::event::record(e.0.cast(), st.0.cast()) }
    })
    .join()
    .unwrap();
    assert_eq!(
        code,
        Err(cudarc::driver::DriverError(
            sys::CUresult::CUDA_ERROR_INVALID_CONTEXT
        )),
        "the stand-in refuses a record without a current context"
    );
    drop(event);
    drop(t);
}

/// A raw driver handle moved to another thread in a test.
#[derive(Clone, Copy)]
struct SendPtr(*mut c_void);
// SAFETY: driver handles are plain pointers the driver accepts from any thread.
unsafe impl Send for SendPtr {}

fn durations_pool_reuse_and_one_sync_per_pass(s: &StandIn) {
    let before = s.counts();
    let cfg = config(8);
    let timeline = CudaTimeline::on_device(0, cfg.pending_capacity).unwrap();
    let pool = 2 * 8 + 2 + brickprof::model::Limit::PassesInFlight.max();
    assert_eq!(
        timeline.counts().capacity,
        pool,
        "2 * pending + 2 events, and one end-of-pass event per pass in flight"
    );
    assert_eq!(timeline.resolution_ns(), 500);
    let engine: *mut c_void = timeline.stream().cu_stream().cast();
    let mut prof = BrickProfiler::with_timeline(cfg, timeline).unwrap();
    let built = s.counts();
    let engine_waits = (s.stream_waits)(engine);
    let passes = 6i64;
    let marks_per_pass = 6i64;
    for _ in 0..passes {
        prof.begin_pass();
        // Nested: LmHead (4 ms of its own kernel) around RmsNorm (1 ms).
        let outer = prof.start_brick(BrickId::LmHead);
        let inner = prof.start_brick(BrickId::RmsNorm);
        (s.launch)(engine, MS);
        prof.stop_brick(inner, 1);
        (s.launch)(engine, 4 * MS);
        prof.stop_brick(outer, 1);
        let t = prof.start_brick(BrickId::QkvProjection);
        (s.launch)(engine, 2 * MS);
        prof.stop_brick(t, 1);
        prof.end_pass(1).expect("resolve on the stand-in");
    }
    let after = s.counts();
    assert_eq!(
        after.stream_create - before.stream_create,
        2,
        "the engine's stream and the anchor stream"
    );
    assert_eq!(
        built.record - before.record,
        1 + 16,
        "construction: the reference and 16 anchors"
    );
    assert_eq!(
        after.event_create - before.event_create,
        pool as i64 + 2,
        "the pool (and the reference and probe) is created once and reused across passes"
    );
    // spec/sync-modes.md "Calibration": anchors wait on their own stream, never the engine's.
    assert_eq!(
        (s.stream_waits)(engine) - engine_waits,
        passes,
        "the engine's stream: one sync a pass, no anchor wait"
    );
    let anchors = after.event_sync - built.event_sync;
    assert!(
        (passes..=4 * passes).contains(&anchors),
        "anchors (event waits) after each sync until one is used: {anchors} for {passes} passes"
    );
    assert_eq!(
        after.stream_sync - before.stream_sync,
        passes,
        "one sync per pass"
    );
    assert_eq!(prof.timeline().counts().syncs, passes as u64);
    assert_eq!(prof.view().counters.syncs, passes as u64);
    assert_eq!(
        after.record - built.record,
        passes * marks_per_pass + anchors,
        "6 marks a pass, and the anchors"
    );
    // Once per pass, never per mark: the capture check at the first mark and before the sync;
    // the context looked up at the first mark and by cudarc's synchronize.
    assert_eq!(after.is_capturing - built.is_capturing, 2 * passes);
    assert_eq!(after.get_current - built.get_current, 2 * passes);
    assert_eq!(
        prof.timeline().counts().context_binds,
        0,
        "the constructing thread has the context current already"
    );
    assert_eq!(after.invalid_context, before.invalid_context);
    for (brick, ms, count) in [
        (BrickId::RmsNorm, 1.0, passes),
        (BrickId::LmHead, 5.0, passes),
        (BrickId::QkvProjection, 2.0, passes),
    ] {
        let st = prof.view().brick_stats(brick);
        assert_eq!(st.summary().count, count as u64);
        let min = st.summary().min_ns as f64 / MS as f64;
        assert!(
            (ms..ms * 1.5 + 2.0).contains(&min),
            "{brick}: {min} ms for {ms} ms of kernels"
        );
    }
    let lm = prof.view().brick_stats(BrickId::LmHead);
    let self_ms = lm.summary().self_ns as f64 / passes as f64 / MS as f64;
    assert!(
        (4.0..6.0).contains(&self_ms),
        "LmHead's self time excludes its nested RmsNorm: {self_ms} ms"
    );
    // Device slices, calibrated, sit in dispatch order on their track.
    let trace = prof.view().trace_view().map(|v| v.events).unwrap();
    let mut device: Vec<_> = trace.iter().filter(|e| e.track == Track::Device).collect();
    device.sort_by_key(|e| e.start_ns);
    assert_eq!(device.len(), 3 * passes as usize);
    drop(prof);
    let end = s.counts();
    assert_eq!(
        end.event_destroy - before.event_destroy,
        pool as i64 + 2,
        "every event destroyed"
    );
    assert_eq!(
        end.stream_destroy - before.stream_destroy,
        2,
        "the stream and the anchor stream destroyed"
    );
}

/// The risk of issue 19: `mark` records without binding. A profiler used on a thread with no
/// current context (or another device's) gets the stream's context made current once per
/// pass, at the pass's first mark: never per mark.
fn a_thread_without_the_context_gets_it_once_per_pass(s: &StandIn) {
    let cfg = config(8);
    let timeline = CudaTimeline::on_device(0, cfg.pending_capacity).unwrap();
    let other = cudarc::driver::CudaContext::new(1).expect("the stand-in's second device");
    let other_ctx = SendPtr(other.cu_ctx().cast());
    let engine = SendPtr(timeline.stream().cu_stream().cast());
    let mut prof = BrickProfiler::with_timeline(cfg, timeline).unwrap();
    let launch = s.launch;
    let before = s.counts();
    let passes = 4u64;
    let prof = std::thread::spawn(move || {
        let (other_ctx, engine) = (other_ctx, engine);
        // SAFETY: plain query on this new thread.
        assert_eq!(result::ctx::get_current().unwrap(), None, "a fresh thread");
        for pass in 0..passes {
            if pass >= 2 {
                // A multi-GPU engine left device 1's context current.
                // SAFETY: the context is live (retained by `other`, alive in the parent).
                unsafe { result::ctx::set_current(other_ctx.0.cast()) }.unwrap();
            }
            for _ in 0..5 {
                let t = prof.start_brick(BrickId::DownProjection);
                launch(engine.0, MS);
                prof.stop_brick(t, 1);
            }
            prof.end_pass(1)
                .expect("marks record on a thread that had no context");
        }
        prof
    })
    .join()
    .unwrap();
    let after = s.counts();
    assert_eq!(
        after.invalid_context, before.invalid_context,
        "no record failed for want of a context"
    );
    // Pass 0 binds (none current); pass 1 finds it current; passes 2 and 3 find device 1's.
    assert_eq!(prof.timeline().counts().context_binds, 3);
    let engine_sets = 2; // the "engine" above, in passes 2 and 3
    assert_eq!(
        (after.set_current - before.set_current) as u64,
        prof.timeline().counts().context_binds + engine_sets,
        "every cuCtxSetCurrent is the engine's or a counted bind"
    );
    assert!(
        prof.timeline().counts().context_binds <= passes,
        "binds <= passes"
    );
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::DownProjection)
            .summary()
            .count,
        5 * passes
    );
    assert_eq!(prof.view().counters.dropped, 0);
    drop(other);
}

/// spec/sync-modes.md "CUDA" (graph capture): a pass whose stream is being captured records
/// external event-record nodes only, is never synchronized (that would invalidate the engine's
/// graph), is not timed, and is counted and named in the report.
fn captured_passes_are_counted_not_timed(s: &StandIn) {
    let cfg = config(8);
    let timeline = CudaTimeline::on_device(0, cfg.pending_capacity).unwrap();
    let mut prof = BrickProfiler::with_timeline(cfg, timeline).unwrap();
    let before = s.counts();
    for pass in 0..3 {
        if pass == 1 {
            (s.set_capturing)(CAPTURE_ACTIVE);
        }
        for _ in 0..4 {
            let t = prof.start_brick(BrickId::UpProjection);
            (s.launch)(prof.timeline().stream().cu_stream().cast(), MS);
            prof.stop_brick(t, 1);
        }
        prof.end_pass(1).expect("a captured pass is not an error");
        if pass == 1 {
            assert_eq!(
                (s.capturing)(),
                CAPTURE_ACTIVE,
                "the capture was not invalidated (never synchronized)"
            );
            (s.set_capturing)(0);
        }
    }
    let after = s.counts();
    assert_eq!(after.record_while_capturing, before.record_while_capturing);
    // spec/sync-modes.md "Graph capture": each mark of the captured pass is an external
    // event-record node (recorded at every replay), never a plain record.
    assert_eq!(after.record_external - before.record_external, 8);
    assert_eq!(
        after.stream_sync - before.stream_sync,
        2,
        "the captured pass is not synced"
    );
    let c = prof.view().counters;
    assert_eq!((c.passes, c.captured_passes, c.dropped), (2, 1, 0));
    assert_eq!(prof.timeline().counts().captured_passes, 1);
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::UpProjection)
            .summary()
            .count,
        8
    );
    let table = render_table(&prof.profile(), &TableOptions::default());
    assert!(
        table.contains("1 passes captured into graphs (not timed themselves)"),
        "{table}"
    );

    // A capture begun after a pass's first mark: the pass is dropped with the reason, and
    // the stream is not synchronized.
    let syncs = s.counts().stream_sync;
    let t = prof.start_brick(BrickId::UpProjection);
    (s.set_capturing)(CAPTURE_ACTIVE);
    prof.stop_brick(t, 1);
    let err = prof.end_pass(1).expect_err("a capture begun mid-pass");
    assert!(err.to_string().contains("during a timed pass"), "{err}");
    assert_eq!((s.capturing)(), CAPTURE_ACTIVE, "not invalidated");
    assert_eq!(s.counts().stream_sync, syncs);
    (s.set_capturing)(0);
    // The next pass is timed again.
    let t = prof.start_brick(BrickId::UpProjection);
    (s.launch)(prof.timeline().stream().cu_stream().cast(), MS);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::UpProjection)
            .summary()
            .count,
        9
    );
}

fn error_mapping(s: &StandIn) {
    let fresh =
        || BrickProfiler::with_timeline(config(2), CudaTimeline::on_device(0, 2).unwrap()).unwrap();

    // A record refused on the hot path: named at the resolve, the measurement dropped.
    let mut prof = fresh();
    let t = prof.start_brick(BrickId::RmsNorm); // the pass's first mark binds and checks
    (s.fail_next)(F_RECORD, CUDA_ERROR_INVALID_HANDLE);
    prof.stop_brick(t, 1);
    match prof.end_pass(1) {
        Err(Error::Cuda { call, message }) => {
            assert_eq!(call, "cuEventRecord");
            assert!(message.contains("invalid resource handle"), "{message}");
            assert!(message.contains("recording a brick's event"), "{message}");
        }
        other => panic!("expected the record error, got {other:?}"),
    }
    assert_eq!(prof.view().counters.dropped, 1);

    // An error of earlier asynchronous work, surfacing at the sync.
    let mut prof = fresh();
    let t = prof.start_brick(BrickId::RmsNorm);
    (s.launch)(prof.timeline().stream().cu_stream().cast(), MS);
    prof.stop_brick(t, 1);
    (s.fail_next)(F_STREAM_SYNC, CUDA_ERROR_LAUNCH_FAILED);
    match prof.end_pass(1) {
        Err(Error::Cuda { call, message }) => {
            assert_eq!(call, "cuStreamSynchronize");
            assert!(message.contains("CUDA_ERROR_LAUNCH_FAILED"), "{message}");
            assert!(message.contains("earlier asynchronous work"), "{message}");
        }
        other => panic!("expected the sync error, got {other:?}"),
    }

    // A failed elapsed-time query.
    let mut prof = fresh();
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 1);
    (s.fail_next)(F_ELAPSED, CUDA_ERROR_UNKNOWN);
    match prof.end_pass(1) {
        Err(Error::Cuda { call, .. }) => assert_eq!(call, "cuEventElapsedTime"),
        other => panic!("expected the elapsed-time error, got {other:?}"),
    }

    // The bind failing on a thread without a context: the bind is named, not the record.
    let mut prof = fresh();
    let fail_next = s.fail_next;
    let prof_err = std::thread::spawn(move || {
        fail_next(F_SET_CURRENT, CUDA_ERROR_INVALID_VALUE);
        let t = prof.start_brick(BrickId::RmsNorm);
        prof.stop_brick(t, 1);
        prof.end_pass(1)
    })
    .join()
    .unwrap();
    match prof_err {
        Err(Error::Cuda { call, .. }) => assert_eq!(call, "cuCtxSetCurrent"),
        other => panic!("expected the bind error, got {other:?}"),
    }

    // Construction: a failed event creation is named.
    (s.fail_next)(F_EVENT_CREATE, CUDA_ERROR_UNKNOWN);
    match CudaTimeline::on_device(0, 2) {
        Err(Error::Cuda { call, .. }) => assert_eq!(call, "cuEventCreate"),
        other => panic!("expected the event-create error, got {other:?}"),
    }
    // No such device: the typed NoDevice, as with no driver at all.
    match CudaTimeline::on_device(7, 2) {
        Err(Error::NoDevice { timeline, .. }) => assert_eq!(timeline, "cuda"),
        other => panic!("expected NoDevice, got {other:?}"),
    }

    // Resolving before the sync never asks the driver (it would answer not-ready).
    let mut t = CudaTimeline::on_device(0, 2).unwrap();
    let stream: Arc<CudaStream> = t.stream().clone();
    let before = s.counts();
    let a = t.mark(0);
    (s.launch)(stream.cu_stream().cast(), MS);
    let b = t.mark(0);
    let err = t.resolve_ns(a, b).expect_err("not synced yet");
    assert!(err.to_string().contains("not known complete"), "{err}");
    assert_eq!(s.counts().elapsed, before.elapsed);
    t.sync().unwrap();
    assert!(t.resolve_ns(a, b).unwrap() >= MS);
    drop(stream);
}

/// spec/sync-modes.md "Calibration" on the stand-in, whose device clock runs `DRIFT` slow: the
/// fit recovers the drift, reports a bound (finite, below 1 ms), saved in the profile; device
/// slices are monotone on their track and none starts before its host dispatch minus the bound;
/// in Deferred and in Lagged mode. Anchors never wait on the engine's stream.
fn calibration_recovers_a_drifting_device_clock(s: &StandIn) {
    const DRIFT: f64 = -4e-4;
    (s.set_clock)(DRIFT, -987_654_321);
    for mode in [SyncMode::Deferred, SyncMode::Lagged] {
        let cfg = ProfilerConfig {
            sync_mode: mode,
            trace_capacity: 1024,
            ..config(8)
        };
        let timeline = CudaTimeline::on_device(0, cfg.pending_capacity).unwrap();
        let engine: *mut c_void = timeline.stream().cu_stream().cast();
        let mut prof = BrickProfiler::with_timeline(cfg, timeline).unwrap();
        // The host clock (the TSC where quanta uses it) ticks at its own rate against
        // CLOCK_MONOTONIC, the stand-in's host time: measured over the run.
        let host_clock = prof.timeline().host_clock();
        let (ticks0, started) = (host_clock.ticks(), std::time::Instant::now());
        let mut passes = 0;
        // Long enough for the drift to be fitted (anchors spanning 10,000 brackets).
        while started.elapsed() < std::time::Duration::from_millis(400) {
            prof.begin_pass();
            let outer = prof.start_brick(BrickId::LmHead);
            let inner = prof.start_brick(BrickId::RmsNorm);
            (s.launch)(engine, 300_000);
            prof.stop_brick(inner, 1);
            (s.launch)(engine, 600_000);
            prof.stop_brick(outer, 1);
            std::thread::sleep(std::time::Duration::from_millis(2));
            prof.end_pass(1).unwrap();
            passes += 1;
        }
        let (ticks1, mono_ns) = (host_clock.ticks(), started.elapsed().as_nanos() as f64);
        let host_rate = host_clock.ticks_to_ns(ticks0, ticks1) as f64 / mono_ns;
        prof.finalize().unwrap();
        let checked = check_calibrated_trace(&prof, &format!("cuda {mode}"), MS);
        check_fitted_drift(
            &prof,
            &format!("CUDA stand-in, {mode}"),
            host_rate,
            DRIFT,
            (s.stream_waits)(engine),
            checked,
            passes,
        );
    }
    (s.set_clock)(0.0, 0);
}

/// spec/work-accounting.md "Device peaks": the driver's attributes become peaks labelled
/// device-reported; a figure the driver does not report (device 1: no memory clock, an L2 size
/// refused as unknown) comes from the fallback, and the name says so.
fn the_device_report_gives_the_reported_peaks() {
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b;
    // Device 0: an H100 SXM's figures (132 SMs, 1980 MHz, compute capability 9.0, a 2619 MHz
    // memory clock on a 5120-bit bus, 50 MiB of L2).
    let t = CudaTimeline::on_device(0, 2).unwrap();
    let r = t
        .device_report()
        .expect("the stand-in reports its attributes");
    assert_eq!(r.name, "brickprof stand-in driver");
    assert_eq!(
        (r.compute_units, r.clock_mhz, r.flops_per_cu_cycle),
        (Some(132), Some(1_980), Some(256)),
        "SMs, clock (kHz / 1000), 9.0: 128 FP32 lanes x 2"
    );
    assert!(
        close(r.mem_gbps.unwrap(), 3_352.32),
        "2 x 2619 MHz x 5120 bits / 8"
    );
    assert_eq!(r.cache_bytes, Some(50 << 20));
    assert_eq!(
        r.cache, None,
        "the driver reports no L2 bandwidth: no roof of it"
    );
    let p = r.peaks(None).unwrap().expect("every figure is reported");
    assert!(
        close(p.gflops(), 66_908.16),
        "132 x 1.98 GHz x 256: {}",
        p.gflops()
    );
    assert!(close(p.gbps(), 3_352.32));
    // Labelled "device-reported" (the label itself: src/roofline unit tests).
    assert_eq!(serde_json::to_value(&p).unwrap()["source"], "reported");
    assert_eq!(
        p.name(),
        "brickprof stand-in driver: compute reported, memory reported"
    );
    drop(t);

    // Device 1: an A100's compute (8.0: 64 lanes), no memory clock, no L2 size.
    let r = CudaTimeline::on_device(1, 2)
        .unwrap()
        .device_report()
        .unwrap();
    assert_eq!(
        (r.compute_units, r.clock_mhz, r.flops_per_cu_cycle),
        (Some(108), Some(1_410), Some(128))
    );
    assert_eq!((r.mem_gbps, r.cache_bytes), (None, None));
    assert_eq!(
        r.peaks(None).unwrap(),
        None,
        "memory unreported, no fallback"
    );
    let preset = DevicePeaks::parse("a100-sxm").unwrap();
    let p = r.peaks(Some(&preset)).unwrap().unwrap();
    assert!(
        close(p.gflops(), 19_491.84),
        "108 x 1.41 GHz x 128 (reported)"
    );
    assert_eq!(p.gbps(), preset.gbps(), "memory from the preset");
    assert_eq!(serde_json::to_value(&p).unwrap()["source"], "preset");
    assert!(p.name().contains("compute reported, memory from a100-sxm"));
}
