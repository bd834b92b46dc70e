//! spec/traces.md: the streamed writers (Perfetto protobuf, Chrome JSON), conversion between
//! them, and a Chrome array that is closed even when a run stops half way.
//!
//! Every `.pftrace` these tests write lands in `target/tmp/pftrace/`, where CI's
//! `tests/perfetto_check.py` parses it with Perfetto's own protos.

use crate::common;

use std::path::PathBuf;

use brickprof::output::{convert, output, write_output, Snapshot};
use brickprof::{
    model::BrickRegistry,
    profile::{RunMeta, TraceEvent, TraceView, Track},
    timeline::TimelineKind,
    BrickId, BrickProfiler, ProfilerConfig, SyncMode,
};
use serde_json::Value;

/// Where this test's traces go (kept for the Python check).
fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pftrace");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn sim_profiler(mode: SyncMode) -> BrickProfiler<brickprof::timeline::SimTimeline> {
    common::traced_sim_profiler(mode, 1024, 1)
}

fn cpu_profiler() -> BrickProfiler {
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 2,
        trace_capacity: 256,
        ..ProfilerConfig::default()
    })
    .unwrap();
    for _ in 0..3 {
        prof.begin_pass();
        for layer in 0..2 {
            prof.begin_layer(layer);
            let outer = prof.start_brick(BrickId::AttentionScore);
            let inner = prof.start_brick(BrickId::AttentionSoftmax);
            std::hint::black_box((0..200).sum::<u64>());
            prof.stop_brick(inner, 1);
            prof.stop_brick(outer, 1);
            prof.end_layer();
        }
        prof.end_pass(1).unwrap();
    }
    prof
}

/// The complete events of a Chrome trace, as comparable tuples.
fn slices(doc: &Value) -> Vec<(String, u64, u64, u64, Option<u64>)> {
    let mut v: Vec<_> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["tid"].as_u64().unwrap(),
                (e["ts"].as_f64().unwrap() * 1e3).round() as u64,
                (e["dur"].as_f64().unwrap() * 1e3).round() as u64,
                e["bind_id"].as_u64(),
            )
        })
        .collect();
    v.sort();
    v
}

fn load(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn perfetto_and_chrome_files_carry_the_same_slices_and_convert_both_ways() {
    let dir = out_dir();
    for (name, mode) in [
        ("sim-deferred", SyncMode::Deferred),
        ("sim-immediate", SyncMode::Immediate),
        ("sim-none", SyncMode::None),
    ] {
        let prof = sim_profiler(mode);
        let pf = dir.join(format!("{name}.pftrace"));
        let js = dir.join(format!("{name}.json"));
        let view = prof.view().trace_view().expect("tracing is on");
        write_output(output("perfetto").unwrap(), &Snapshot::Trace(&view), &pf).unwrap();
        write_output(output("chrome").unwrap(), &Snapshot::Trace(&view), &js).unwrap();
        let direct = load(&js);
        // pftrace -> JSON gives back the very slices (ns exact), flows included.
        let back = dir.join(format!("{name}.from-pftrace.json"));
        assert_eq!(
            convert(&pf, &back, output("chrome").unwrap())
                .unwrap()
                .name(),
            "perfetto"
        );
        let converted = load(&back);
        assert_eq!(slices(&direct), slices(&converted), "{name}");
        assert_eq!(
            direct["otherData"]["layers"],
            converted["otherData"]["layers"]
        );
        assert_eq!(direct["otherData"]["rank"], 1);
        // JSON -> pftrace -> JSON is the identity on slices too.
        let again = dir.join(format!("{name}.from-json.pftrace"));
        convert(&js, &again, output("perfetto").unwrap()).unwrap();
        let twice = dir.join(format!("{name}.roundtrip.json"));
        convert(&again, &twice, output("chrome").unwrap()).unwrap();
        assert_eq!(slices(&direct), slices(&load(&twice)), "{name}");
        // Flows: in every mode but none, each device slice has its host partner.
        let flows = slices(&direct).iter().filter(|s| s.4.is_some()).count();
        let expected = if mode == SyncMode::None { 0 } else { 28 };
        assert_eq!(flows, expected, "{name}: 14 host + 14 device ends");
        // The native format is the smaller one.
        let (a, b) = (
            std::fs::metadata(&pf).unwrap().len(),
            std::fs::metadata(&js).unwrap().len(),
        );
        assert!(a * 2 < b, "{name}: pftrace {a} bytes vs JSON {b}");
    }
    let prof = cpu_profiler();
    let view = prof.view().trace_view().expect("tracing is on");
    write_output(
        output("perfetto").unwrap(),
        &Snapshot::Trace(&view),
        &dir.join("cpu.pftrace"),
    )
    .unwrap();
}

fn header() -> RunMeta {
    RunMeta {
        rank: Some(0),
        calibration_bound_ns: Some(250),
        ..RunMeta::new(TimelineKind::Sim, 1)
    }
}

/// An `RmsNorm` slice on the host track of layer 0.
fn host(start_ns: u64, dur_ns: u64) -> TraceEvent {
    TraceEvent {
        start_ns,
        dur_ns,
        slot: BrickId::RmsNorm as u16,
        row: 0,
        track: Track::Host,
    }
}

#[test]
fn a_child_that_outlasts_its_parent_by_rounding_is_clipped_to_it() {
    let events = [host(0, 100), host(50, 51)];
    let view = TraceView {
        events: &events,
        passes: &[],
        registry: &BrickRegistry::default(),
        meta: header(),
    };
    let mut out = Vec::new();
    output("perfetto")
        .unwrap()
        .write(&Snapshot::Trace(&view), &mut out)
        .unwrap();
    let dir = out_dir();
    let pf = dir.join("clipped.pftrace");
    std::fs::write(&pf, &out).unwrap();
    let json = dir.join("clipped.json");
    convert(&pf, &json, output("chrome").unwrap()).unwrap();
    let got = slices(&load(&json));
    assert_eq!((got[1].2, got[1].3), (50, 50));
}

#[test]
fn convert_refuses_what_is_not_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.pftrace");
    std::fs::write(&bad, b"hello").unwrap();
    let err = convert(&bad, &dir.path().join("x.json"), output("chrome").unwrap()).unwrap_err();
    assert!(err.to_string().contains("expected a trace packet"), "{err}");
    let json = dir.path().join("foreign.json");
    std::fs::write(&json, br#"{"traceEvents":[]}"#).unwrap();
    let err = convert(
        &json,
        &dir.path().join("x.pftrace"),
        output("perfetto").unwrap(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("otherData"), "{err}");
}

/// The pass slices of a Chrome trace: (name, ts µs, dur µs, new_tokens, sequences,
/// context_tokens), and its context counter's values.
type PassEvent = (String, f64, f64, u64, u64, u64);
fn pass_events(doc: &Value) -> (Vec<PassEvent>, Vec<u64>) {
    let events = doc["traceEvents"].as_array().unwrap();
    let passes = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "pass")
        .map(|e| {
            let a = |k: &str| e["args"][k].as_u64().unwrap();
            (
                e["name"].as_str().unwrap().to_string(),
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap(),
                a("new_tokens"),
                a("sequences"),
                a("context_tokens"),
            )
        })
        .collect();
    let context = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "context tokens")
        .map(|e| e["args"]["context tokens"].as_u64().unwrap())
        .collect();
    (passes, context)
}

#[test]
fn shaped_passes_become_slices_with_their_shape_and_a_context_counter() {
    // spec/traces.md "Passes": one slice per shaped pass on a `passes` track, named after its
    // phase, with new_tokens, sequences and context_tokens; a `context tokens` counter; in both
    // formats (the Perfetto file checked by converting it back), none for unshaped passes.
    let dir = out_dir();
    let prof = common::shaped_sim_profiler(1024);
    let view = prof.view().trace_view().expect("tracing is on");
    let (pf, js) = (dir.join("shaped.pftrace"), dir.join("shaped.json"));
    write_output(output("perfetto").unwrap(), &Snapshot::Trace(&view), &pf).unwrap();
    write_output(output("chrome").unwrap(), &Snapshot::Trace(&view), &js).unwrap();
    let (passes, context) = pass_events(&load(&js));
    let expected: Vec<_> = common::SHAPED_PASSES
        .iter()
        .map(|&(new, seqs, ctx, wall)| {
            let phase = if new == seqs { "decode" } else { "prefill" };
            (phase.to_string(), wall as f64 / 1e3, new, seqs, ctx)
        })
        .collect();
    let got: Vec<_> = passes
        .iter()
        .map(|p| (p.0.clone(), p.2, p.3 as u32, p.4 as u32, p.5))
        .collect();
    assert_eq!(
        got, expected,
        "one slice per shaped pass, the unshaped one left out"
    );
    assert!(passes.windows(2).all(|w| w[0].1 + w[0].2 <= w[1].1));
    let contexts: Vec<u64> = common::SHAPED_PASSES.iter().map(|s| s.2).collect();
    assert_eq!(context, contexts);
    // The Perfetto file: a passes track and a context counter track, the slices' annotations
    // read back into the same passes.
    let bytes = std::fs::read(&pf).unwrap();
    for name in [&b"passes"[..], b"context tokens", b"context_tokens"] {
        assert!(bytes.windows(name.len()).any(|w| w == name));
    }
    let back = dir.join("shaped.from-pftrace.json");
    convert(&pf, &back, output("chrome").unwrap()).unwrap();
    let converted = load(&back);
    assert_eq!(pass_events(&converted), (passes.clone(), context.clone()));
    // The tokens/s counter does not take the context's values.
    let tps = |doc: &Value| {
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == "tokens/s")
            .count()
    };
    assert_eq!(tps(&converted), common::SHAPED_PASSES.len() + 1);
    // JSON -> pftrace -> JSON keeps them too.
    let again = dir.join("shaped.from-json.pftrace");
    convert(&js, &again, output("perfetto").unwrap()).unwrap();
    let twice = dir.join("shaped.roundtrip.json");
    convert(&again, &twice, output("chrome").unwrap()).unwrap();
    assert_eq!(pass_events(&load(&twice)), (passes, context));
    // An unshaped run: no pass slice, no context counter.
    let plain = sim_profiler(SyncMode::Deferred);
    let view = plain.view().trace_view().unwrap();
    let js = dir.join("unshaped.json");
    write_output(output("chrome").unwrap(), &Snapshot::Trace(&view), &js).unwrap();
    let (p, c) = pass_events(&load(&js));
    assert!(p.is_empty() && c.is_empty());
}
