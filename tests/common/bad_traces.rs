//! Trace files that fail half way through `convert`, after slices were read: the fixtures of
//! the "whole or not at all" tests (spec/traces.md "Streaming and bounded memory"); and traces
//! not in order or not whole (spec/traces.md "Command line"). Shared by `tests/files/output_files.rs`,
//! `tests/files/convert_faults.rs` and the CLI's tests (included by path).

#![allow(dead_code)]

use std::path::Path;

use brickprof::output::{output, Snapshot};
use brickprof::{
    model::BrickRegistry,
    profile::{RunMeta, TraceEvent, TraceView, Track},
    timeline::TimelineKind,
    BrickCategory, BrickId, BrickProfiler, ProfilerConfig,
};

fn header() -> RunMeta {
    RunMeta {
        rank: Some(0),
        calibration_bound_ns: None,
        ..RunMeta::new(TimelineKind::Sim, 1)
    }
}

/// A host slice of the brick in `slot`, on layer 0.
fn host(slot: u16, start_ns: u64, dur_ns: u64) -> TraceEvent {
    TraceEvent {
        start_ns,
        dur_ns,
        slot,
        row: 0,
        track: Track::Host,
    }
}

/// `events` written whole by the trace output `format`.
fn written(format: &str, events: &[TraceEvent], registry: &BrickRegistry) -> Vec<u8> {
    let view = TraceView {
        events,
        passes: &[],
        registry,
        meta: header(),
    };
    let mut out = Vec::new();
    output(format)
        .unwrap()
        .write(&Snapshot::Trace(&view), &mut out)
        .unwrap();
    out
}

/// Ten `RmsNorm` slices on one host track, in a trace of `format`.
fn ten_slices(format: &str) -> Vec<u8> {
    let events: Vec<TraceEvent> = (0..10u64)
        .map(|i| host(BrickId::RmsNorm as u16, 10_000 * (i + 1), 5_000))
        .collect();
    written(format, &events, &BrickRegistry::default())
}

/// A good Chrome JSON trace of ten slices.
pub fn chrome_trace() -> String {
    String::from_utf8(ten_slices("chrome")).unwrap()
}

/// A good Perfetto trace of ten slices.
pub fn perfetto_trace() -> Vec<u8> {
    ten_slices("perfetto")
}

/// Bad traces that fail half way, after some slices were written: (file name, bytes).
pub fn bad_traces() -> Vec<(&'static str, Vec<u8>)> {
    let good = chrome_trace();
    let last_ts = good.rfind("\"ts\":").unwrap();
    let value_end = last_ts + good[last_ts..].find(',').unwrap();
    // The last slice starts before the one ahead of it on its track.
    let out_of_order = format!("{}\"ts\":1.0{}", &good[..last_ts], &good[value_end..]);
    let nan = format!("{}\"ts\":\"NaN\"{}", &good[..last_ts], &good[value_end..]);
    // Cut after the event array: every slice was read, the object is not closed.
    let after_array = good.trim_end().strip_suffix('}').unwrap().to_string();
    // A second event array after the first: which one is the trace?
    let two_arrays = format!(
        "{},\"traceEvents\":[]}}\n",
        good.trim_end().strip_suffix('}').unwrap()
    );
    let pf = perfetto_trace();
    vec![
        ("out-of-order.json", out_of_order.into_bytes()),
        ("nan.json", nan.into_bytes()),
        ("cut-after-events.json", after_array.into_bytes()),
        ("two-arrays.json", two_arrays.into_bytes()),
        ("truncated.pftrace", pf[..pf.len() - 7].to_vec()),
    ]
}

/// A Chrome JSON trace whose two slices on one track come out of start order.
pub fn out_of_order_chrome(path: &Path) {
    let event = |ts: u64| {
        serde_json::json!({"name": "RmsNorm", "cat": "Norm", "ph": "X", "ts": ts, "dur": 1,
                           "pid": 0, "tid": 0, "args": {"layer": "layer 0", "clock": "cpu"}})
    };
    let doc = serde_json::json!({
        "displayTimeUnit": "ns",
        "otherData": {"tool": "brickprof", "rank": 0, "timeline": "cpu", "layers": 1,
                      "dropped_events": 0},
        "traceEvents": [event(20), event(10)],
    });
    std::fs::write(path, doc.to_string()).unwrap();
}

/// The offset of every packet of a `.pftrace` (a tag byte, a varint length, the packet).
pub fn packet_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        offsets.push(i);
        let (mut len, mut shift) = (0usize, 0);
        i += 1;
        loop {
            let b = bytes[i];
            i += 1;
            len |= usize::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        i += len;
    }
    offsets
}

/// A `.pftrace` cut after a whole packet, before its outermost slice's end: an outer slice
/// "Outer" at 1000 ns holding `children` slices, all ended but it.
pub fn unended_perfetto(path: &Path, children: u64) {
    // The two dynamic bricks' slots, as a profiler's trace names them: "Outer" traced first,
    // then "Inner".
    let mut prof = BrickProfiler::new(ProfilerConfig {
        trace_capacity: 2,
        ..ProfilerConfig::default()
    })
    .unwrap();
    let mut slots = Vec::new();
    for name in ["Outer", "Inner"] {
        let brick = prof.register(name, BrickCategory::Other).unwrap();
        let t = prof.start_brick(brick);
        prof.stop_brick(t, 0);
        prof.finalize().unwrap();
        let view = prof.view();
        let traced = view.trace_view().unwrap();
        let slot = traced
            .events
            .iter()
            .map(|e| e.slot)
            .find(|s| !slots.contains(s));
        slots.push(slot.unwrap());
    }
    let (outer, inner) = (slots[0], slots[1]);
    let view = prof.view();
    let traced = view.trace_view().unwrap();
    let mut events = vec![host(outer, 1000, 100 * children + 100)];
    events.extend((0..children).map(|i| host(inner, 1000 + 100 * i + 1, 50)));
    let out = written("perfetto", &events, traced.registry);
    // The last packet ends the outer slice (finish ends the open slices innermost first).
    let last = *packet_offsets(&out).last().unwrap();
    std::fs::write(path, &out[..last]).unwrap();
}
