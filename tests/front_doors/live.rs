//! The live handle (spec/live.md "Captures"): a capture of N passes holds exactly those
//! passes' bricks, in every sync mode, whether or not the profiler keeps a trace of its own.

use std::time::Duration;

use brickprof::profile::Track;
use brickprof::profiler::CapturedTrace;
use brickprof::{timeline::SimDevice, BrickId, BrickProfiler, PassShape, ProfilerConfig, SyncMode};

const LAYERS: usize = 2;
const BRICKS: [BrickId; 2] = [BrickId::QkvProjection, BrickId::DownProjection];

/// Run passes on a simulated device until the captures of 1, 2, ..., 6 passes (asked for one
/// after the other from another thread, so they start at passes the scheduler picks) are back.
fn capture_while_running(mode: SyncMode, trace_capacity: usize) -> Vec<CapturedTrace> {
    let device = SimDevice::new(2_000);
    let config = ProfilerConfig {
        sync_mode: mode,
        trace_capacity,
        ..ProfilerConfig::with_layers(LAYERS)
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(4096)).unwrap();
    let live = prof.live();
    let capture = std::thread::spawn(move || {
        (1..=6)
            .map(|n| live.capture_trace(n, Duration::from_secs(600)).unwrap())
            .collect::<Vec<_>>()
    });
    let mut i = 0u64;
    while !capture.is_finished() {
        assert!(i < 1_000_000, "the capture never finished");
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(1, 1, 8 + i % 8).unwrap());
        for layer in 0..LAYERS {
            prof.begin_layer(layer);
            for b in BRICKS {
                let t = prof.start_brick(b);
                device.launch(10_000 + 1_000 * (i % 5));
                prof.stop_brick(t, 1);
            }
            prof.end_layer();
        }
        device.host_work(3_000);
        prof.end_pass(1).unwrap();
        i += 1;
    }
    prof.finalize().unwrap();
    capture.join().unwrap()
}

/// spec/sync-modes.md "Sampled tracing": a capture is a burst on demand. Under a plan that
/// marks pass 0 only (bursts of 1 pass, 1,000 unmarked after), the captured passes are marked
/// all the same, and once the capture is over the plan holds again.
#[test]
fn a_capture_marks_its_passes_whatever_the_sampling_plan() {
    let device = SimDevice::new(2_000);
    let config = ProfilerConfig {
        sampling: "bursts-1-1000"
            .parse::<brickprof::model::Sampling>()
            .unwrap(),
        ..ProfilerConfig::with_layers(LAYERS)
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(4096)).unwrap();
    let live = prof.live();
    let capture = std::thread::spawn(move || live.capture_trace(3, Duration::from_secs(600)));
    let pass = |prof: &mut BrickProfiler<_>| {
        for layer in 0..LAYERS {
            prof.begin_layer(layer);
            for b in BRICKS {
                let t = prof.start_brick(b);
                device.launch(10_000);
                prof.stop_brick(t, 1);
            }
            prof.end_layer();
        }
        prof.end_pass(1).unwrap();
    };
    let mut i = 0u64;
    while !capture.is_finished() {
        assert!(i < 1_000_000, "the capture never finished");
        pass(&mut prof);
        i += 1;
    }
    let trace = capture.join().unwrap().unwrap();
    let view = trace.view();
    let host = view
        .events
        .iter()
        .filter(|e| e.track == Track::Host)
        .count();
    assert_eq!(
        host,
        3 * LAYERS * BRICKS.len(),
        "every captured brick marked"
    );
    let before = prof.view().brick_stats(BRICKS[0]).summary().count;
    for _ in 0..5 {
        pass(&mut prof);
    }
    prof.finalize().unwrap();
    assert_eq!(
        prof.view().brick_stats(BRICKS[0]).summary().count,
        before,
        "after the capture, the plan leaves the passes unmarked again"
    );
}

// spec/live.md "Captures": exactly the captured passes' bricks, one host event each (and its
// device event where the timeline marks the device), all inside the captured passes.
#[test]
fn a_capture_holds_exactly_its_passes_in_every_sync_mode() {
    for mode in [
        SyncMode::Deferred,
        SyncMode::Lagged,
        SyncMode::PerLayer,
        SyncMode::Immediate,
        SyncMode::None,
    ] {
        for trace_capacity in [0, 1 << 12] {
            for (n, trace) in (1..).zip(capture_while_running(mode, trace_capacity)) {
                let view = trace.view();
                let (events, passes) = (view.events, view.passes);
                assert_eq!(passes.len(), n, "{mode:?}");
                let per_pass = LAYERS * BRICKS.len();
                let host = events.iter().filter(|e| e.track == Track::Host).count();
                assert_eq!(
                    host,
                    n * per_pass,
                    "{mode:?} trace {trace_capacity}, {n} passes"
                );
                let first = passes[0].start_ns;
                let last = passes[n - 1].at_ns;
                for e in events.iter().filter(|e| e.track == Track::Host) {
                    assert!(
                        (first..=last).contains(&e.start_ns),
                        "{mode:?}: event at {} outside the captured passes {first}..={last}",
                        e.start_ns
                    );
                }
                let device = events.iter().filter(|e| e.track == Track::Device).count();
                let expect_device = if mode == SyncMode::None {
                    0
                } else {
                    n * per_pass
                };
                assert_eq!(device, expect_device, "{mode:?}");
                assert_eq!(view.meta.counters.trace_dropped, 0);
            }
        }
    }
}
