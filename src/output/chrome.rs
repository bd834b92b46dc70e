//! Chrome's JSON "Trace Event Format" (what Perfetto calls "legacy JSON"), written one event at
//! a time through serde by [`ChromeWriter`], and read back one event at a time by `read`
//! (for `brickprof convert`). The writer always closes its array: finishing, or dropped half
//! way when a run stops on an error. Layout in `spec/traces.md` ("Chrome JSON").

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::path::Path;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::slices::{Flow, Nesting, OpenSink, PassSlice, Slice, TraceSink};
use super::trace_output::TraceOutput;
use crate::model::phase::{PassShape, Phase};
use crate::profile::trace::Track;
use crate::{Error, Result, RunMeta, TimelineKind};

/// What brickprof writes under `otherData`, before the events so a reader knows it first: the
/// run's facts ([`RunMeta`], flattened, so `timeline`, `layers` and `rank` are top-level keys),
/// the writing tool and the trace events dropped.
#[derive(Debug, Serialize)]
struct OtherData<'a> {
    tool: String,
    #[serde(serialize_with = "crate::base::exact_int::ser_u64")]
    dropped_events: u64,
    #[serde(flatten)]
    meta: &'a RunMeta,
}

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

#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Name {
        name: &'a str,
    },
    Sort {
        sort_index: u32,
    },
    Slice {
        layer: &'a str,
        clock: &'static str,
    },
    Counter {
        #[serde(rename = "tokens/s")]
        tokens_per_sec: f64,
    },
    Pass {
        new_tokens: u32,
        sequences: u32,
        #[serde(serialize_with = "crate::base::exact_int::ser_u64")]
        context_tokens: u64,
    },
    Context {
        // A counter's value is plotted: a number, as the trace format requires.
        #[serde(rename = "context tokens")]
        context_tokens: u64,
    },
}

#[derive(Serialize)]
struct Event<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'a str>,
    ph: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    bind_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_out: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_in: Option<bool>,
    args: Args<'a>,
}

impl<'a> Event<'a> {
    fn meta(name: &'a str, pid: u32, tid: u32, args: Args<'a>) -> Self {
        Event {
            name,
            cat: None,
            ph: "M",
            ts: None,
            dur: None,
            pid,
            tid,
            bind_id: None,
            flow_out: None,
            flow_in: None,
            args,
        }
    }
}

/// Nanoseconds as (fractional) microseconds, the format's unit. Exact below 2^53 ns (104
/// days): the shortest decimal that round-trips is the three-decimal one.
fn micros(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

fn clock_name(track: Track) -> &'static str {
    match track {
        Track::Cpu => "cpu",
        Track::Host => "host",
        Track::Device => "device",
    }
}

/// Thread ids: device and CPU tracks use the layer row; host tracks are offset by this.
const HOST_TID_OFFSET: u32 = 1000;
/// The thread id of the `passes` track: past every row's (rows are u16).
const PASS_TID: u32 = 1 << 20;
/// The category of a pass slice, and the name of the context counter.
const PASS_CATEGORY: &str = "pass";
const CONTEXT_COUNTER: &str = "context tokens";

fn tid(track: Track, row: u16) -> u32 {
    match track {
        Track::Cpu | Track::Device => u32::from(row),
        Track::Host => HOST_TID_OFFSET + u32::from(row),
    }
}

/// Streams a Chrome JSON trace into `out`. See the module docs.
#[derive(Debug)]
pub struct ChromeWriter<W: TraceOutput> {
    out: W,
    /// The run; `layers` is the current process's rows.
    meta: RunMeta,
    /// The pid of the current process.
    pid: u32,
    /// The lane (in `nesting`) of every track (tid) of the current process.
    lanes: HashMap<u32, usize>,
    nesting: Nesting,
    row_names: HashMap<u16, String>,
    /// No event written yet (the next one needs no separator).
    first: bool,
    /// The current process's `passes` track is named.
    pass_track: bool,
    finished: bool,
}

impl<W: TraceOutput> ChromeWriter<W> {
    /// Start a trace: the header, the opening of the event array and the process name.
    pub fn new(out: W, meta: &RunMeta) -> Result<Self> {
        let mut w = Self::open(out, meta)?;
        let rank = meta.rank.unwrap_or(0);
        let name = format!("rank {rank} ({} timeline)", meta.timeline.name());
        w.process(rank, &name, meta.layers)?;
        Ok(w)
    }

    /// Start a trace without a process: `otherData` from `meta` and the opening of the
    /// event array. [`Self::process`] starts each process.
    pub(crate) fn open(out: W, meta: &RunMeta) -> Result<Self> {
        let mut w = ChromeWriter {
            out,
            meta: meta.clone(),
            pid: meta.rank.unwrap_or(0),
            lanes: HashMap::new(),
            nesting: Nesting::default(),
            row_names: HashMap::new(),
            first: true,
            pass_track: false,
            finished: false,
        };
        let other = OtherData {
            tool: format!("brickprof {}", env!("CARGO_PKG_VERSION")),
            dropped_events: meta.counters.trace_dropped,
            meta,
        };
        w.raw(b"{\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        w.json(&other)?;
        w.raw(b",\"traceEvents\":[\n")?;
        Ok(w)
    }

    /// Start a process (`pid`, named `name`, its layer rows `layers`): the slices that follow
    /// sit on its tracks.
    pub(crate) fn process(&mut self, pid: u32, name: &str, layers: usize) -> Result<()> {
        self.pid = pid;
        self.meta.layers = layers;
        self.lanes.clear();
        self.nesting.clear();
        self.pass_track = false;
        self.row_names.clear();
        self.event(&Event::meta("process_name", pid, 0, Args::Name { name }))
    }

    fn raw(&mut self, bytes: &[u8]) -> Result<()> {
        write_raw(&mut self.out, bytes)
    }

    fn json(&mut self, value: &impl Serialize) -> Result<()> {
        write_json(&mut self.out, value)
    }

    /// The next event: a separator (but before the first), then the event.
    fn event(&mut self, e: &Event<'_>) -> Result<()> {
        if std::mem::take(&mut self.first) {
            self.json(e)
        } else {
            write_event(&mut self.out, e)
        }
    }
}

fn write_raw(out: &mut impl TraceOutput, bytes: &[u8]) -> Result<()> {
    out.write_all(bytes).map_err(|e| Error::io(out.name(), e))
}

fn write_json(out: &mut impl TraceOutput, value: &impl Serialize) -> Result<()> {
    serde_json::to_writer(&mut *out, value)
        .map_err(|e| Error::io(out.name(), std::io::Error::from(e)))
}

fn write_event(out: &mut impl TraceOutput, e: &Event<'_>) -> Result<()> {
    write_raw(out, b",\n")?;
    write_json(out, e)
}

impl<W: TraceOutput> TraceSink for ChromeWriter<W> {
    fn slice(&mut self, s: &Slice<'_>) -> Result<()> {
        let pid = self.pid;
        let t = tid(s.track, s.row);
        let (lane, new_track) = match self.lanes.get(&t) {
            Some(&lane) => (lane, false),
            None => {
                let lane = self.lanes.len();
                self.lanes.insert(t, lane);
                (lane, true)
            }
        };
        // Clipped to its parent's end (spec/traces.md "Slices"); Chrome has no end events.
        let end = self.nesting.place(lane, s, |_| Ok(()))?;
        if new_track {
            let name = format!("{}: {}", clock_name(s.track), self.meta.row_name(s.row));
            self.event(&Event::meta(
                "thread_name",
                pid,
                t,
                Args::Name { name: &name },
            ))?;
            self.event(&Event::meta(
                "thread_sort_index",
                pid,
                t,
                Args::Sort { sort_index: t },
            ))?;
        }
        let meta = &self.meta;
        let layer = self
            .row_names
            .entry(s.row)
            .or_insert_with(|| meta.row_name(s.row));
        let (bind_id, flow_out, flow_in) = match s.flow {
            Flow::None => (None, None, None),
            Flow::Out(id) => (Some(id), Some(true), None),
            Flow::In(id) => (Some(id), None, Some(true)),
        };
        let e = Event {
            name: s.name,
            cat: Some(s.category),
            ph: "X",
            ts: Some(micros(s.start_ns)),
            dur: Some(micros(end - s.start_ns)),
            pid,
            tid: t,
            bind_id,
            flow_out,
            flow_in,
            args: Args::Slice {
                layer,
                clock: clock_name(s.track),
            },
        };
        write_event(&mut self.out, &e)
    }

    fn counter(&mut self, at_ns: u64, tokens_per_sec: f64) -> Result<()> {
        let v = if tokens_per_sec.is_finite() {
            tokens_per_sec
        } else {
            0.0
        };
        self.event(&Event {
            name: "tokens/s",
            cat: None,
            ph: "C",
            ts: Some(micros(at_ns)),
            dur: None,
            pid: self.pid,
            tid: 0,
            bind_id: None,
            flow_out: None,
            flow_in: None,
            args: Args::Counter { tokens_per_sec: v },
        })
    }

    fn pass(&mut self, p: &PassSlice) -> Result<()> {
        let pid = self.pid;
        if !self.pass_track {
            self.pass_track = true;
            self.event(&Event::meta(
                "thread_name",
                pid,
                PASS_TID,
                Args::Name { name: "passes" },
            ))?;
        }
        let ts = Some(micros(p.start_ns));
        let shape = &p.shape;
        let phase: &'static str = shape.phase().into();
        self.event(&Event {
            name: phase,
            cat: Some(PASS_CATEGORY),
            ph: "X",
            ts,
            dur: Some(micros(p.dur_ns)),
            pid,
            tid: PASS_TID,
            bind_id: None,
            flow_out: None,
            flow_in: None,
            args: Args::Pass {
                new_tokens: shape.new_tokens(),
                sequences: shape.sequences(),
                context_tokens: shape.context_tokens(),
            },
        })?;
        self.event(&Event {
            name: CONTEXT_COUNTER,
            cat: None,
            ph: "C",
            ts,
            dur: None,
            pid,
            tid: 0,
            bind_id: None,
            flow_out: None,
            flow_in: None,
            args: Args::Context {
                context_tokens: shape.context_tokens(),
            },
        })
    }

    fn finish(&mut self) -> Result<()> {
        self.close()?;
        self.out.done()
    }
}

impl<W: TraceOutput> ChromeWriter<W> {
    /// Close the event array and the object (once).
    fn close(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        self.raw(b"\n]}\n")
    }
}

impl<W: TraceOutput> Drop for ChromeWriter<W> {
    /// An unfinished trace (the run stopped on an error) still closes its array, but is not
    /// put in place: an [`crate::OutputFile`] is put in place only by [`TraceSink::finish`].
    fn drop(&mut self) {
        let _ = self.close();
    }
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
