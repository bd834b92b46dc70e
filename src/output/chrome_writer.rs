//! Chrome's JSON "Trace Event Format" (what Perfetto calls "legacy JSON"), written one event at
//! a time through serde by [`ChromeWriter`] (read back by `chrome_reader`, for `brickprof
//! convert`). The writer always closes its array: finishing, or dropped half
//! way when a run stops on an error. Layout in `spec/traces.md` ("Chrome JSON").

use std::collections::HashMap;

use serde::Serialize;

use super::slices::{Flow, Nesting, PassSlice, Slice, TraceSink};
use super::trace_output::TraceOutput;
use crate::profile::trace::Track;
use crate::{profile::RunMeta, Error, Result};

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
pub(super) const HOST_TID_OFFSET: u32 = 1000;
/// The thread id of the `passes` track: past every row's (rows are u16).
const PASS_TID: u32 = 1 << 20;
/// The category of a pass slice, and the name of the context counter.
pub(super) const PASS_CATEGORY: &str = "pass";
pub(super) const CONTEXT_COUNTER: &str = "context tokens";

fn tid(track: Track, row: u16) -> u32 {
    match track {
        Track::Cpu | Track::Device => u32::from(row),
        Track::Host => HOST_TID_OFFSET + u32::from(row),
    }
}

/// Streams a Chrome JSON trace into `out`. See the module docs.
#[derive(Debug)]
pub(crate) struct ChromeWriter<W: TraceOutput> {
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
    pub(crate) fn new(out: W, meta: &RunMeta) -> Result<Self> {
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
    /// put in place: an [`crate::io::OutputFile`] is put in place only by [`TraceSink::finish`].
    fn drop(&mut self) {
        let _ = self.close();
    }
}
