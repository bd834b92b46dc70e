//! Reading Chrome's JSON "Trace Event Format" back (written by [`ChromeWriter`], and brickprof
//! 0.3.0's): one event at a time through serde, never the whole file in memory, fed to a
//! [`TraceSink`] (for `brickprof convert`). Layout in `spec/traces.md` ("Chrome JSON").
//!
//! [`ChromeWriter`]: super::chrome_writer::ChromeWriter

use std::cell::RefCell;
use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::chrome_writer::{CONTEXT_COUNTER, HOST_TID_OFFSET, PASS_CATEGORY};
use super::slices::{Flow, OpenSink, PassSlice, Slice, TraceSink};
use crate::model::phase::{PassShape, Phase};
use crate::profile::trace::Track;
use crate::{profile::RunMeta, timeline::TimelineKind, Error, Result};

/// The run's facts in an `otherData` read back: serde for a trace that carries them (it has
/// `tool_version`), else the frozen reader of 0.3.0's.
fn meta_of(other: serde_json::Value) -> std::result::Result<RunMeta, serde_json::Error> {
    if other.get("tool_version").is_some() {
        serde_json::from_value(other)
    } else {
        serde_json::from_value(other).map(legacy_meta)
    }
}

/// `otherData` as brickprof 0.3.0 wrote it. Frozen: it never gains a field.
#[derive(Deserialize)]
struct LegacyOtherData {
    #[serde(default)]
    tool: String,
    rank: u32,
    timeline: TimelineKind,
    layers: usize,
    dropped_events: u64,
    #[serde(default)]
    calibration_bound_ns: Option<u64>,
}

/// The facts a 0.3.0 Chrome trace states; the rest take [`RunMeta::new`]'s defaults. Frozen.
fn legacy_meta(o: LegacyOtherData) -> RunMeta {
    let mut m = RunMeta::new(o.timeline, o.layers);
    if let Some(v) = o.tool.strip_prefix("brickprof ") {
        m.tool_version = v.to_string();
    }
    m.rank = Some(o.rank);
    m.counters.trace_dropped = o.dropped_events;
    m.calibration_bound_ns = o.calibration_bound_ns;
    m
}

/// One event as read back.
#[derive(Deserialize)]
struct InEvent {
    name: String,
    #[serde(default)]
    cat: Option<String>,
    ph: String,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(default)]
    dur: Option<f64>,
    #[serde(default)]
    tid: Option<u64>,
    #[serde(default)]
    bind_id: Option<u64>,
    #[serde(default)]
    flow_in: Option<bool>,
    #[serde(default)]
    flow_out: Option<bool>,
    #[serde(default)]
    args: Option<serde_json::Value>,
}

/// Read a brickprof Chrome JSON trace from `input`, one event at a time, and feed it to the sink
/// `open` makes (opened when `otherData` has been read).
pub(crate) fn read(path: &Path, input: impl Read, open: &mut OpenSink<'_>) -> Result<()> {
    let failure: RefCell<Option<Error>> = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_reader(input);
    let top = Top {
        open,
        failure: &failure,
    };
    // The output is put in place only once the whole input has been read.
    let result = top
        .deserialize(&mut de)
        .and_then(|sink| de.end().map(|()| sink));
    if let Some(e) = failure.into_inner() {
        return Err(e);
    }
    result.map_err(|e| Error::json(path, &e))?.finish()
}

struct Top<'a, 'b> {
    open: &'a mut OpenSink<'b>,
    failure: &'a RefCell<Option<Error>>,
}

/// Keep the first brickprof error (serde can only carry a message) and abort parsing.
fn fail<E: serde::de::Error>(failure: &RefCell<Option<Error>>, e: Error) -> E {
    let msg = e.to_string();
    failure.borrow_mut().get_or_insert(e);
    E::custom(msg)
}

/// The sink that was written, not yet finished.
type Written = Box<dyn TraceSink>;

impl<'de> DeserializeSeed<'de> for Top<'_, '_> {
    type Value = Written;
    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Written, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_, '_> {
    type Value = Written;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a brickprof Chrome trace object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Written, A::Error> {
        let mut header: Option<RunMeta> = None;
        let mut written: Option<Written> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "otherData" => {
                    let o: serde_json::Value = map.next_value()?;
                    let meta = meta_of(o)
                        .map_err(|e| serde::de::Error::custom(format!("\"otherData\": {e}")))?;
                    header = Some(meta);
                }
                "traceEvents" => {
                    let Some(h) = header.as_ref() else {
                        return Err(serde::de::Error::custom(
                            "not a brickprof trace: no \"otherData\" before \"traceEvents\"",
                        ));
                    };
                    if written.is_some() {
                        return Err(serde::de::Error::custom(
                            "not a brickprof trace: more than one \"traceEvents\" array",
                        ));
                    }
                    let mut sink = (self.open)(h).map_err(|e| fail(self.failure, e))?;
                    map.next_value_seed(Events {
                        sink: sink.as_mut(),
                        failure: self.failure,
                    })?;
                    written = Some(sink);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        written.ok_or_else(|| serde::de::Error::custom("no \"traceEvents\" array"))
    }
}

struct Events<'a> {
    sink: &'a mut dyn TraceSink,
    failure: &'a RefCell<Option<Error>>,
}

impl<'de> DeserializeSeed<'de> for Events<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Events<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let ns = |us: Option<f64>| (us.unwrap_or(0.0) * 1_000.0).round().max(0.0) as u64;
        while let Some(e) = seq.next_element::<InEvent>()? {
            let done = match e.ph.as_str() {
                "X" if e.cat.as_deref() == Some(PASS_CATEGORY) => match pass_of(&e) {
                    Some(p) => self.sink.pass(&p),
                    None => Ok(()),
                },
                "X" => {
                    let arg = |k: &str| {
                        e.args
                            .as_ref()
                            .and_then(|a| a.get(k))
                            .and_then(serde_json::Value::as_str)
                    };
                    let track = match arg("clock") {
                        Some("host") => Track::Host,
                        Some("device") => Track::Device,
                        _ => Track::Cpu,
                    };
                    let tid = e.tid.unwrap_or(0);
                    let row = match track {
                        Track::Host => tid.saturating_sub(u64::from(HOST_TID_OFFSET)),
                        _ => tid,
                    };
                    let flow = match (e.bind_id, e.flow_out, e.flow_in) {
                        (Some(id), Some(true), _) => Flow::Out(id),
                        (Some(id), _, Some(true)) => Flow::In(id),
                        _ => Flow::None,
                    };
                    self.sink.slice(&Slice {
                        track,
                        row: u16::try_from(row).unwrap_or(u16::MAX),
                        name: &e.name,
                        category: e.cat.as_deref().unwrap_or("Other"),
                        start_ns: ns(e.ts),
                        dur_ns: ns(e.dur),
                        flow,
                    })
                }
                "C" if e.name == CONTEXT_COUNTER => Ok(()),
                "C" => {
                    let v = e
                        .args
                        .as_ref()
                        .and_then(|a| a.get("tokens/s"))
                        .and_then(serde_json::Value::as_f64)
                        .unwrap_or(0.0);
                    self.sink.counter(ns(e.ts), v)
                }
                _ => Ok(()),
            };
            done.map_err(|err| fail(self.failure, err))?;
        }
        Ok(())
    }
}

/// The pass a `passes` slice describes (spec/traces.md "Passes"); `None` when its arguments do
/// not make a shape (the slice is then left out, like any event brickprof does not know).
fn pass_of(e: &InEvent) -> Option<PassSlice> {
    let ns = |us: Option<f64>| (us.unwrap_or(0.0) * 1_000.0).round().max(0.0) as u64;
    // A number, or a decimal string above 2^53 (spec/profile-format.md "Large integers").
    let arg = |k: &str| {
        let v = e.args.as_ref()?.get(k)?;
        v.as_u64().or_else(|| v.as_str()?.parse().ok())
    };
    let shape = PassShape::new(
        u32::try_from(arg("new_tokens")?).ok()?,
        u32::try_from(arg("sequences")?).ok()?,
        arg("context_tokens")?,
    )
    .ok()?;
    let shape = match e.name.parse::<Phase>() {
        Ok(Phase::Mixed) => shape.with_phase(Phase::Mixed),
        _ => shape,
    };
    Some(PassSlice {
        start_ns: ns(e.ts),
        dur_ns: ns(e.dur),
        shape,
    })
}
