//! spec/profile-format.md "Trace": the Chrome trace obeys the format's rules.

use std::collections::{BTreeMap, BTreeSet};

use crate::common;

use brickprof::output::{output, Snapshot};
use brickprof::profile::TraceView;
use brickprof::{BrickId, BrickProfiler, ProfilerConfig, SyncMode, Timeline};
use serde_json::Value;

/// The profiler's trace in memory, when tracing.
fn chrome<T: Timeline>(prof: &BrickProfiler<T>) -> Option<String> {
    prof.view().trace_view().map(|v| chrome_trace(&v))
}

/// The Chrome trace of `view`, in memory.
fn chrome_trace(view: &TraceView<'_>) -> String {
    let mut out = Vec::new();
    output("chrome")
        .unwrap()
        .write(&Snapshot::Trace(view), &mut out)
        .expect("an in-memory trace");
    String::from_utf8(out).unwrap()
}

/// Complete events by (pid, tid): (ts µs, dur µs, name).
type Tracks = BTreeMap<(u64, u64), Vec<(f64, f64, String)>>;

/// Check a Chrome trace document against the rules Perfetto and chrome://tracing rely on.
/// Returns the complete ("X") events grouped by (pid, tid).
fn validate(doc: &Value) -> Tracks {
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    let mut tracks: Tracks = BTreeMap::new();
    let mut named: BTreeSet<(u64, u64)> = BTreeSet::new();
    for e in events {
        let ph = e["ph"].as_str().expect("every event has ph");
        let pid = e["pid"].as_u64().expect("pid");
        match ph {
            "X" => {
                let name = e["name"].as_str().expect("X has name").to_string();
                assert!(e["cat"].is_string(), "X has cat: {e}");
                let ts = e["ts"].as_f64().expect("X has numeric ts");
                let dur = e["dur"].as_f64().expect("X has numeric dur");
                assert!(ts >= 0.0 && dur >= 0.0, "{e}");
                let tid = e["tid"].as_u64().expect("tid");
                tracks.entry((pid, tid)).or_default().push((ts, dur, name));
            }
            "M" => {
                if e["name"] == "thread_name" {
                    assert!(e["args"]["name"].is_string());
                    named.insert((pid, e["tid"].as_u64().unwrap()));
                }
            }
            "C" => {
                assert!(e["ts"].as_f64().is_some());
                let args = e["args"].as_object().expect("counter args");
                assert!(args.values().all(Value::is_number), "{e}");
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    for (track, evs) in &mut tracks {
        assert!(named.contains(track), "track {track:?} has no thread_name");
        // Events on one track must nest: sort by start, longest first, keep a stack of ends.
        evs.sort_by(|a, b| {
            a.0.partial_cmp(&b.0)
                .unwrap()
                .then(b.1.partial_cmp(&a.1).unwrap())
        });
        let mut stack: Vec<f64> = Vec::new();
        for (ts, dur, name) in evs.iter() {
            while stack.last().is_some_and(|end| *end <= *ts) {
                stack.pop();
            }
            if let Some(end) = stack.last() {
                assert!(
                    ts + dur <= *end + 1e-9,
                    "{name} at {ts} overlaps its parent on {track:?}"
                );
            }
            stack.push(ts + dur);
        }
    }
    tracks
}

fn sim_trace(
    mode: SyncMode,
    capacity: usize,
) -> (Value, BrickProfiler<brickprof::timeline::SimTimeline>) {
    let prof = common::traced_sim_profiler(mode, capacity, 3);
    let json = chrome(&prof).expect("tracing is on");
    (serde_json::from_str(&json).expect("valid JSON"), prof)
}

#[test]
fn sim_trace_is_valid_with_host_and_device_tracks_apart() {
    for mode in [SyncMode::Deferred, SyncMode::Immediate, SyncMode::PerLayer] {
        let (doc, prof) = sim_trace(mode, 1024);
        let tracks = validate(&doc);
        // rank 3 is the pid; device tracks use the layer row, host tracks row + 1000.
        assert!(tracks.keys().all(|(pid, _)| *pid == 3));
        let device: usize = tracks
            .iter()
            .filter(|((_, t), _)| *t < 1000)
            .map(|(_, e)| e.len())
            .sum();
        let host: usize = tracks
            .iter()
            .filter(|((_, t), _)| *t >= 1000)
            .map(|(_, e)| e.len())
            .sum();
        assert_eq!(
            (device, host),
            (14, 14),
            "{mode}: 2 passes x 7 bricks on each clock"
        );
        // The device track carries exactly the resolved durations, sub-µs fractions kept.
        let traced_ns: f64 = tracks
            .iter()
            .filter(|((_, t), _)| *t < 1000)
            .flat_map(|(_, e)| e.iter())
            .filter(|(_, _, n)| n == "Activation")
            .map(|(_, dur, _)| dur * 1000.0)
            .sum();
        let stats = prof.view().brick_stats(BrickId::Activation);
        assert!(
            (traced_ns - stats.summary().total_ns as f64).abs() < 1e-6,
            "{traced_ns} vs {}",
            stats.summary().total_ns
        );
        assert!(tracks
            .values()
            .flatten()
            .any(|(_, dur, _)| dur.fract() != 0.0));
        let counters = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == "tokens/s")
            .count();
        assert_eq!(counters, 2, "one tokens/s sample per pass");
        assert!(doc["traceEvents"].as_array().unwrap().iter().any(|e| {
            e["name"] == "process_name" && e["args"]["name"] == "rank 3 (sim timeline)"
        }));
    }
}

#[test]
fn none_mode_traces_host_dispatch_only() {
    let (doc, _) = sim_trace(SyncMode::None, 1024);
    let tracks = validate(&doc);
    assert!(
        tracks.keys().all(|(_, tid)| *tid >= 1000),
        "no device track in mode none"
    );
}

#[test]
fn cpu_trace_is_valid_and_a_full_buffer_counts_drops() {
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 1,
        trace_capacity: 5,
        ..ProfilerConfig::default()
    })
    .unwrap();
    for _ in 0..4 {
        prof.begin_layer(0);
        let t = prof.start_brick(BrickId::RmsNorm);
        std::hint::black_box((0..100).sum::<u64>());
        prof.stop_brick(t, 1);
        prof.end_layer();
        let t = prof.start_brick(BrickId::Sampling);
        prof.stop_brick(t, 1);
        prof.end_pass(1).unwrap();
    }
    let doc: Value = serde_json::from_str(&chrome(&prof).unwrap()).unwrap();
    let tracks = validate(&doc);
    assert_eq!(tracks.values().map(Vec::len).sum::<usize>(), 5);
    assert_eq!(prof.view().counters.trace_dropped, 3);
    assert_eq!(doc["otherData"]["dropped_events"], 3);
    assert!(prof.profile().meta.counters.trace_dropped == 3);
}

#[test]
fn no_trace_unless_asked() {
    let prof = BrickProfiler::default();
    assert!(chrome(&prof).is_none());
}

#[test]
fn names_are_escaped_in_the_trace() {
    // A known peer builds its JSON by hand without escaping; a brick name must never break
    // the file.
    let mut prof = BrickProfiler::new(ProfilerConfig {
        trace_capacity: 16,
        ..ProfilerConfig::default()
    })
    .unwrap();
    let odd = prof
        .register("weird \"op\"\n\\ {name}", brickprof::BrickCategory::Other)
        .unwrap();
    let t = prof.start_brick(odd);
    prof.stop_brick(t, 1);
    prof.finalize().unwrap();
    let doc: Value = serde_json::from_str(&chrome(&prof).unwrap()).unwrap();
    validate(&doc);
    assert!(doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "weird \"op\"\n\\ {name}"));
}

// spec/traces.md "Slices": a child slice never outlasts its
// parent, in either format. The profiler converts a slice's start and its duration from host
// ticks separately, so each rounds on its own: at 0.3 ns per tick, a parent on ticks 3..37
// becomes start 0 (0.9 rounds down), duration 10 (34 ticks = 10.2 ns), ending at 10; its child
// on ticks 10..37 becomes start 3, duration 8 (27 ticks = 8.1 ns), ending at 11. These are those
// events, built directly, so the test does not depend on the machine's TSC.
fn rounded_nested_events() -> Vec<brickprof::profile::TraceEvent> {
    use brickprof::profile::{TraceEvent, Track};
    let event = |brick: BrickId, start_ns, dur_ns| TraceEvent {
        start_ns,
        dur_ns,
        slot: brick as u16,
        row: 0,
        track: Track::Cpu,
    };
    vec![
        event(BrickId::AttentionScore, 0, 10),
        event(BrickId::AttentionSoftmax, 3, 8),
        // The next parent/child pair back to back, rounded the same way.
        event(BrickId::AttentionScore, 10, 10),
        event(BrickId::AttentionSoftmax, 13, 8),
    ]
}

fn rounded_header() -> brickprof::profile::RunMeta {
    brickprof::profile::RunMeta {
        rank: Some(0),
        calibration_bound_ns: None,
        ..brickprof::profile::RunMeta::new(brickprof::timeline::TimelineKind::Cpu, 1)
    }
}

/// Complete events of a Chrome document as (ts ns, end ns, name), in file order.
fn ns_slices(doc: &Value) -> Vec<(u64, u64, String)> {
    doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let ts = (e["ts"].as_f64().unwrap() * 1e3).round() as u64;
            let dur = (e["dur"].as_f64().unwrap() * 1e3).round() as u64;
            (ts, ts + dur, e["name"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn a_rounded_child_is_clipped_to_its_parent_in_both_formats() {
    // spec/traces.md "Slices": the clipping rule holds for both writers, in memory and streamed.
    use brickprof::output::{convert, write_output};
    let events = rounded_nested_events();
    let registry = brickprof::model::BrickRegistry::default();
    let view = TraceView {
        events: &events,
        passes: &[],
        registry: &registry,
        meta: rounded_header(),
    };
    let memory: Value = serde_json::from_str(&chrome_trace(&view)).unwrap();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nesting");
    let path = dir.join("rounded.json");
    write_output(output("chrome").unwrap(), &Snapshot::Trace(&view), &path).unwrap();
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // The Perfetto file, read back as Chrome JSON (lossless for slices).
    let pf = dir.join("rounded.pftrace");
    write_output(output("perfetto").unwrap(), &Snapshot::Trace(&view), &pf).unwrap();
    let back = dir.join("rounded.from-pftrace.json");
    convert(&pf, &back, output("chrome").unwrap()).unwrap();
    let perfetto: Value = serde_json::from_str(&std::fs::read_to_string(&back).unwrap()).unwrap();
    for doc in [&memory, &file, &perfetto] {
        let expected = vec![
            (0, 10, "AttentionScore".to_string()),
            (3, 10, "AttentionSoftmax".to_string()),
            (10, 20, "AttentionScore".to_string()),
            (13, 20, "AttentionSoftmax".to_string()),
        ];
        assert_eq!(ns_slices(doc), expected, "the child ends with its parent");
        validate(doc);
    }
}

#[test]
fn sixty_thousand_tiny_nested_bricks_nest_in_both_chrome_paths() {
    // spec/traces.md "Slices": back-to-back nested bricks of a few ns,
    // timed on the real host clock, nest in the in-memory and the streamed Chrome trace.
    const PAIRS: usize = 30_000;
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 1,
        trace_capacity: 2 * PAIRS,
        ..ProfilerConfig::default()
    })
    .unwrap();
    for pass in 0..PAIRS / 1_000 {
        prof.begin_layer(0);
        for _ in 0..1_000 {
            let outer = prof.start_brick(BrickId::AttentionScore);
            let inner = prof.start_brick(BrickId::AttentionSoftmax);
            prof.stop_brick(inner, 1);
            prof.stop_brick(outer, 1);
        }
        prof.end_layer();
        prof.end_pass(1)
            .unwrap_or_else(|e| panic!("pass {pass}: {e}"));
    }
    assert_eq!(
        prof.view().trace_view().map(|v| v.events).unwrap().len(),
        2 * PAIRS
    );
    let memory: Value = serde_json::from_str(&chrome(&prof).unwrap()).unwrap();
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("nesting")
        .join("sixty-thousand.json");
    let view = prof.view().trace_view().unwrap();
    brickprof::output::write_output(
        brickprof::output::output("chrome").unwrap(),
        &Snapshot::Trace(&view),
        &path,
    )
    .unwrap();
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for doc in [&memory, &file] {
        let tracks = validate(doc);
        assert_eq!(tracks.values().map(Vec::len).sum::<usize>(), 2 * PAIRS);
        // Integer check too (validate works in µs floats): every child ends by its parent.
        let s = ns_slices(doc);
        for pair in s.chunks(2) {
            let (parent, child) = if pair[0].2 == "AttentionScore" {
                (&pair[0], &pair[1])
            } else {
                (&pair[1], &pair[0])
            };
            assert!(
                child.1 <= parent.1 && child.0 >= parent.0,
                "{child:?} outside {parent:?}"
            );
        }
    }
}
