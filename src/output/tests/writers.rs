//! From tests/files/trace_formats.rs: the trace writers fed slices directly (spec/traces.md),
//! which only the crate can do (the public way in is a [`TraceView`](crate::profile::TraceView),
//! whose slices are always in order and finished).

use serde_json::Value;

use crate::output::formats::{trace_format, Output};
use crate::output::slices::{Flow, Slice};
use crate::output::{convert, output};
use crate::profile::{RunMeta, Track};
use crate::timeline::TimelineKind;

fn header() -> RunMeta {
    RunMeta {
        rank: Some(0),
        calibration_bound_ns: Some(250),
        ..RunMeta::new(TimelineKind::Sim, 1)
    }
}

fn slice(track: Track, start_ns: u64, dur_ns: u64) -> Slice<'static> {
    Slice {
        track,
        row: 0,
        name: "RmsNorm",
        category: "Norm",
        start_ns,
        dur_ns,
        flow: Flow::None,
    }
}

fn format(name: &str) -> &'static dyn crate::output::formats::TraceFormat {
    trace_format(output(name).unwrap()).unwrap()
}

/// The complete events of a Chrome trace: (start, duration) in ns, sorted.
fn slices(doc: &Value) -> Vec<(u64, u64)> {
    let mut v: Vec<_> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                (e["ts"].as_f64().unwrap() * 1e3).round() as u64,
                (e["dur"].as_f64().unwrap() * 1e3).round() as u64,
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_chrome_trace_dropped_half_way_still_closes_its_array() {
    let mut out = Vec::new();
    {
        let mut w = format("chrome")
            .open_trace(Box::new(&mut out), &header())
            .unwrap();
        w.slice(&slice(Track::Host, 0, 10)).unwrap();
        w.counter(10, 5.0).unwrap();
        // The run stops here on an error: no finish().
    }
    let doc: Value = serde_json::from_slice(&out).expect("closed, valid JSON");
    assert_eq!(doc["traceEvents"].as_array().unwrap().len(), 5);
}

#[test]
fn a_perfetto_trace_rejects_slices_out_of_order_and_still_ends_what_it_began() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stopped-on-error.pftrace");
    let file = crate::io::OutputFile::create(&path).unwrap();
    let mut w = format("perfetto")
        .open_trace(Box::new(file), &header())
        .unwrap();
    w.slice(&slice(Track::Host, 100, 50)).unwrap();
    w.slice(&slice(Track::Host, 110, 10)).unwrap(); // nested
    let err = w.slice(&slice(Track::Host, 90, 5)).unwrap_err();
    assert!(err.to_string().contains("start order"), "{err}");
    // The refused slice wrote nothing: finishing puts a well-formed trace in place.
    w.finish().unwrap();
    drop(w);
    // Converted back, both slices are there and nested.
    let json = dir.path().join("stopped-on-error.json");
    let to: &dyn Output = output("chrome").unwrap();
    convert(&path, &json, to).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let got = slices(&doc);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((got[0].0, got[0].1, got[1].0, got[1].1), (100, 50, 110, 10));
}
