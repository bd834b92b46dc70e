//! Trace files that fail half way through `convert`, after slices were read: the fixtures of
//! the "whole or not at all" tests (spec/traces.md "Streaming and bounded memory"). Shared by
//! `tests/output_files.rs` and the CLI's tests (included by path).

#![allow(dead_code)]

use brickprof::report::{ChromeWriter, Flow, PerfettoWriter, Slice, TraceHeader, TraceSink};
use brickprof::{TimelineKind, Track};

fn header() -> TraceHeader {
    TraceHeader {
        rank: 0,
        timeline: TimelineKind::Sim,
        layers: 1,
        dropped: 0,
        calibration_bound_ns: None,
    }
}

/// Ten slices on one host track, in a writer of either format, finished.
fn feed(w: &mut dyn TraceSink) {
    for i in 0..10u64 {
        w.slice(&Slice {
            track: Track::Host,
            row: 0,
            name: "RmsNorm",
            category: "Norm",
            start_ns: 10_000 * (i + 1),
            dur_ns: 5_000,
            flow: Flow::None,
        })
        .unwrap();
    }
    w.finish().unwrap();
}

/// A good Chrome JSON trace of ten slices.
pub fn chrome_trace() -> String {
    let mut out = Vec::new();
    {
        let mut w = ChromeWriter::new(&mut out, &header()).unwrap();
        feed(&mut w);
    }
    String::from_utf8(out).unwrap()
}

/// A good Perfetto trace of ten slices.
pub fn perfetto_trace() -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = PerfettoWriter::new(&mut out, &header()).unwrap();
        feed(&mut w);
    }
    out
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
