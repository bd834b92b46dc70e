//! spec/profile-format.md "Trace": the Chrome trace obeys the format's rules.

use std::collections::{BTreeMap, BTreeSet};

mod common;

use brickprof::{BrickId, BrickProfiler, ProfilerConfig, SyncMode};
use serde_json::Value;

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

fn sim_trace(mode: SyncMode, capacity: usize) -> (Value, BrickProfiler<brickprof::SimTimeline>) {
    let prof = common::traced_sim_profiler(mode, capacity, 3);
    let json = prof
        .chrome_trace()
        .expect("tracing is on")
        .as_json()
        .to_string();
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
        let stats = prof.brick_stats(BrickId::Activation);
        assert!(
            (traced_ns - stats.total_ns() as f64).abs() < 1e-6,
            "{traced_ns} vs {}",
            stats.total_ns()
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
    let doc: Value = serde_json::from_str(prof.chrome_trace().unwrap().as_json()).unwrap();
    let tracks = validate(&doc);
    assert_eq!(tracks.values().map(Vec::len).sum::<usize>(), 5);
    assert_eq!(prof.counters().trace_dropped, 3);
    assert_eq!(doc["otherData"]["dropped_events"], 3);
    assert!(prof.profile().meta.counters.trace_dropped == 3);
}

#[test]
fn no_trace_unless_asked() {
    let prof = BrickProfiler::default();
    assert!(prof.chrome_trace().is_none());
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
    let odd = prof.register("weird \"op\"\n\\ {name}").unwrap();
    let t = prof.start_brick(odd);
    prof.stop_brick(t, 1);
    prof.finalize().unwrap();
    let doc: Value = serde_json::from_str(prof.chrome_trace().unwrap().as_json()).unwrap();
    validate(&doc);
    assert!(doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "weird \"op\"\n\\ {name}"));
}
