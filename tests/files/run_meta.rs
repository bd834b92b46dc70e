//! One home for a run's facts: a [`RunMeta`] with every field set survives a profile save and
//! load, both trace writers and `convert` in both directions, and traces written by brickprof
//! 0.3.0 still convert (spec/profile-format.md "The profile file", spec/traces.md "Run facts").

use std::path::{Path, PathBuf};

use brickprof::output::{convert, output, write_output, Snapshot};
use brickprof::{
    io::RunId,
    model::{BrickRegistry, Counters, Sampling},
    profile::{PassSample, RunMeta, TraceEvent, TraceView, Track},
    roofline::DevicePeaks,
    timeline::TimelineKind,
    BrickId, BrickProfiler, Phase, ProfilerConfig, SyncMode,
};
use serde_json::Value;

/// Every field away from its default (a struct literal, so a new field must be set here too).
fn every_field_set() -> RunMeta {
    RunMeta {
        tool_version: "0.1.0,9.9.9-test".into(),
        timeline: TimelineKind::Sim,
        sync_mode: SyncMode::Lagged,
        host: "node-7,node=8 \"quoted\"".into(),
        created_unix_s: 1_700_000_123,
        layers: 3,
        counters: Counters {
            passes: 1,
            tokens: 2,
            warmup_passes_excluded: 3,
            dropped: 4,
            syncs: 5,
            overflow_flushes: 6,
            out_of_range_layers: 7,
            trace_dropped: 8,
            unclosed: 9,
            stray_stops: 10,
            captured_passes: 11,
            blocking_waits: 12,
            sampled_out: 13,
            graph_replays: 14,
            untimed_replays: 15,
        },
        merged_from: 4,
        peaks: Some(DevicePeaks::new("test roof", 1234.5, 321.25).unwrap()),
        timer_resolution_ns: Some(7),
        mark_cost_ns: Some(3_300),
        sampling: "every-4".parse::<Sampling>().unwrap(),
        calibration_bound_ns: Some(250),
        run_id: Some("1718000000-4242-0-9f3c21aa".parse::<RunId>().unwrap()),
        rank: Some(3),
        phases: vec![Phase::Prefill, Phase::Decode],
        untimed_graphs: vec![0x7e00_0001, 0x7f3a_0000_1000],
        outside_bricks: Some(brickprof::stats::OutsideBricks {
            kernels: 16,
            memory_ops: 17,
            busy_ns: (1 << 53) + 1,
        }),
    }
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A few slices, two of them joined by a flow, and a tokens/s sample, written whole as a trace
/// of `format` with the run facts `meta`, so the readers have events to carry.
fn write_trace_of(format: &str, path: &Path, meta: &RunMeta) {
    let s = |track, start_ns| TraceEvent {
        start_ns,
        dur_ns: 10,
        slot: BrickId::RmsNorm as u16,
        row: 1,
        track,
    };
    // A device slice right before the host slice that launched it: the flow's two ends.
    let events = [s(Track::Device, 100), s(Track::Host, 50)];
    let passes = [PassSample {
        start_ns: 150,
        at_ns: 200,
        tokens_per_sec: 12.5,
        shape: None,
    }];
    let view = TraceView {
        events: &events,
        passes: &passes,
        registry: &BrickRegistry::default(),
        meta: meta.clone(),
    };
    write_output(output(format).unwrap(), &Snapshot::Trace(&view), path).unwrap();
}

/// The run facts a Chrome trace file states in `otherData`.
fn chrome_meta(path: &Path) -> RunMeta {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    serde_json::from_value(doc["otherData"].clone()).unwrap()
}

fn write_chrome(path: &Path, meta: &RunMeta) {
    write_trace_of("chrome", path, meta);
}

fn write_perfetto(path: &Path, meta: &RunMeta) {
    write_trace_of("perfetto", path, meta);
}

fn to(name: &str) -> &'static dyn brickprof::output::Output {
    output(name).unwrap()
}

#[test]
fn every_run_fact_survives_a_profile_save_and_load() {
    // spec/profile-format.md "The profile file": `meta` is the run's RunMeta.
    let dir = tmp();
    let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(3)).unwrap();
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
    let mut p = prof.profile();
    let meta = every_field_set();
    p.meta = meta.clone();
    let path = dir.path().join("profile.json");
    p.save(&path).unwrap();
    assert_eq!(brickprof::Profile::load(&path).unwrap().meta, meta);
}

#[test]
fn every_run_fact_survives_both_trace_formats_and_convert_both_ways() {
    // spec/traces.md "Run facts": written once per format, read back by serde.
    let dir = tmp();
    let meta = every_field_set();
    let json = dir.path().join("a.json");
    write_chrome(&json, &meta);
    assert_eq!(chrome_meta(&json), meta, "Chrome write");
    // Chrome -> Perfetto -> Chrome.
    let pf = dir.path().join("b.pftrace");
    convert(&json, &pf, to("perfetto")).unwrap();
    let back = dir.path().join("c.json");
    convert(&pf, &back, to("chrome")).unwrap();
    assert_eq!(chrome_meta(&back), meta, "Chrome -> Perfetto -> Chrome");
    // Perfetto written directly -> Chrome.
    let direct = dir.path().join("d.pftrace");
    write_perfetto(&direct, &meta);
    let from_pf = dir.path().join("e.json");
    convert(&direct, &from_pf, to("chrome")).unwrap();
    assert_eq!(chrome_meta(&from_pf), meta, "Perfetto write -> Chrome");
    // The human labels stay beside the one that carries the facts.
    let bytes = std::fs::read(&direct).unwrap();
    for label in [
        "clock=host",
        "rank=3",
        "timeline=sim",
        "layers=3",
        "sync_mode=lagged",
    ] {
        assert!(
            bytes.windows(label.len()).any(|w| w == label.as_bytes()),
            "{label}"
        );
    }
}

#[test]
fn a_profilers_profile_and_trace_carry_the_same_facts() {
    // spec/traces.md: the trace view's facts come from the profile's builder.
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 2,
        rank: 5,
        trace_capacity: 1,
        ..Default::default()
    })
    .unwrap();
    for _ in 0..3 {
        let t = prof.start_brick(BrickId::RmsNorm);
        prof.stop_brick(t, 1);
    }
    prof.end_pass(1).unwrap();
    let p = prof.profile();
    let mut view_meta = prof.view().trace_view().unwrap().meta;
    view_meta.created_unix_s = p.meta.created_unix_s; // taken a moment apart
    assert_eq!(view_meta, p.meta);
    assert_eq!(p.meta.rank, Some(5));
    assert_eq!(p.meta.counters.trace_dropped, 2, "one event kept of three");
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The complete events of a Chrome trace, sorted: what a conversion must keep.
fn chrome_slices(path: &Path) -> Vec<String> {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut v: Vec<String> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            format!(
                "{} {} {} {} {} {}",
                e["name"], e["ts"], e["dur"], e["pid"], e["tid"], e["args"]
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn traces_written_by_0_3_0_still_convert() {
    // spec/traces.md "Run facts": the frozen readers of 0.3.0's otherData and labels.
    // The fixtures are one run's two traces (`brickprof demo --timeline sim --layers 1
    // --prompt 1 --tokens 1`, brickprof 0.3.0): each converts, and both say the same.
    let dir = tmp();
    let old_json = fixture("trace-0.3.0.json");
    let old_pf = fixture("trace-0.3.0.pftrace");
    let from_pf = dir.path().join("from-pftrace.json");
    convert(&old_pf, &from_pf, to("chrome")).unwrap();
    let pf = dir.path().join("from-json.pftrace");
    convert(&old_json, &pf, to("perfetto")).unwrap();
    let round = dir.path().join("round.json");
    convert(&pf, &round, to("chrome")).unwrap();
    let expected = chrome_slices(&old_json);
    assert!(expected.len() > 10, "the fixture has slices");
    assert_eq!(
        chrome_slices(&from_pf),
        expected,
        "0.3.0 Perfetto -> Chrome"
    );
    assert_eq!(
        chrome_slices(&round),
        expected,
        "0.3.0 Chrome -> Perfetto -> Chrome"
    );
    for path in [&from_pf, &round] {
        let m = chrome_meta(path);
        let mut want = RunMeta::new(TimelineKind::Sim, 1);
        want.tool_version = "0.3.0".into();
        want.rank = Some(0);
        want.calibration_bound_ns = Some(0);
        assert_eq!(m, want, "{}", path.display());
    }
}
