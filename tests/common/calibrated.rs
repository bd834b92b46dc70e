//! spec/sync-modes.md "Calibration": the checks every calibrated device timeline's trace must
//! pass (HIP and CUDA on their stand-ins).

use brickprof::{profile::Track, BrickProfiler, Timeline};

/// The calibration is reported with a finite bound below `most_ns`, saved in the profile;
/// device slices are monotone on their track (in dispatch order, none overlapping the next
/// beyond the timeline's resolution); none starts before its host dispatch minus the bound.
/// Returns the bound and how far the earliest device slice started after its dispatch (ns,
/// negative when before).
pub fn check_calibrated_trace<T: Timeline>(
    prof: &BrickProfiler<T>,
    what: &str,
    most_ns: u64,
) -> (u64, i64) {
    let fit = prof
        .timeline()
        .calibrated()
        .and_then(|c| c.calibration())
        .unwrap_or_else(|| panic!("{what}: no calibration reported"));
    let bound = fit.bound_ns;
    assert!(fit.anchors_used >= 1, "{what}");
    assert!(bound < most_ns, "{what}: bound {bound} ns");
    assert!(fit.drift.is_finite(), "{what}");
    assert_eq!(
        prof.profile().meta.calibration_bound_ns,
        Some(bound),
        "{what}: the bound is saved in the profile"
    );
    let events = prof
        .view()
        .trace_view()
        .map(|v| v.events)
        .expect("tracing is on");
    let device: Vec<_> = events.iter().filter(|e| e.track == Track::Device).collect();
    let host: Vec<_> = events.iter().filter(|e| e.track == Track::Host).collect();
    assert_eq!(
        device.len(),
        host.len(),
        "{what}: a device slice per host slice"
    );
    assert!(!device.is_empty(), "{what}: no device slices");
    let mut by_dispatch: Vec<_> = device.iter().zip(&host).collect();
    by_dispatch.sort_by_key(|(_, h)| h.start_ns);
    let resolution = prof.timeline().resolution_ns();
    for w in by_dispatch.windows(2) {
        let (a, b) = (w[0].0, w[1].0);
        let nested = a.start_ns <= b.start_ns && b.start_ns + b.dur_ns <= a.start_ns + a.dur_ns;
        assert!(
            nested || a.start_ns + a.dur_ns <= b.start_ns + resolution,
            "{what}: device slices not monotone: {a:?} {b:?}"
        );
    }
    let mut earliest = i64::MAX;
    for (d, h) in &by_dispatch {
        earliest = earliest.min(d.start_ns as i64 - h.start_ns as i64);
        assert!(
            d.start_ns + bound >= h.start_ns,
            "{what}: a device slice at {} ns precedes its dispatch at {} ns by more than the \
             bound {bound} ns",
            d.start_ns,
            h.start_ns
        );
    }
    (bound, earliest)
}

/// The fitted drift recovers the stand-in's device clock: the device runs at `1 + device_drift`
/// of CLOCK_MONOTONIC and the host clock at `host_rate` of it, so the fit (host = device ×
/// (1 + drift)) must find `host_rate / (1 + device_drift) - 1` within 20 ppm. Also checks the
/// engine's stream was waited on by syncs only (`stream_waits`), and prints the figures.
pub fn check_fitted_drift<T: Timeline>(
    prof: &BrickProfiler<T>,
    label: &str,
    host_rate: f64,
    device_drift: f64,
    stream_waits: i64,
    (bound, earliest): (u64, i64),
    passes: u32,
) {
    let fit = prof
        .timeline()
        .calibrated()
        .and_then(|c| c.calibration())
        .expect("a calibrated timeline");
    let expected = host_rate / (1.0 + device_drift) - 1.0;
    assert!(
        (fit.drift - expected).abs() < 20e-6,
        "{label}: fitted drift {:e}, expected {expected:e}",
        fit.drift
    );
    assert_eq!(
        stream_waits,
        prof.view().counters.syncs as i64,
        "{label}: anchors never wait on the engine's stream"
    );
    println!(
        "{label}: calibration bound {bound} ns over {} anchors ({} rejected), drift {:.1} ppm \
         (expected {:.1}: device clock {:.1} ppm), earliest device slice {earliest} ns after its \
         dispatch, {passes} passes",
        fit.anchors_used,
        fit.anchors_rejected,
        fit.drift * 1e6,
        expected * 1e6,
        device_drift * 1e6
    );
}
