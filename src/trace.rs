//! The opt-in timeline of every measurement: a bounded [`TraceBuffer`] filled by the profiler
//! (capacity fixed at construction, overflow counted), and its Chrome JSON held in memory
//! ([`ChromeTrace`]). The streaming writers (Perfetto protobuf, Chrome JSON) live in
//! [`crate::report`]. Specified in `spec/traces.md`.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::registry::BrickRegistry;
use crate::report::chrome::ChromeWriter;
use crate::report::trace_sink::{feed, TraceHeader, TraceSink};
use crate::BrickHandle;
use crate::{Error, Result};

/// Which clock a trace event was measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Track {
    /// CPU timeline: host and device time are one clock.
    Cpu,
    /// Host dispatch time (start to stop call) on an asynchronous timeline.
    Host,
    /// Device time (resolved marks) on an asynchronous timeline.
    Device,
}

/// One measurement on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    /// Start, ns since the track's origin.
    pub start_ns: u64,
    /// Duration, ns.
    pub dur_ns: u64,
    /// Brick slot.
    pub slot: u16,
    /// Layer row (`layers` = model, `layers + 1` = unassigned).
    pub row: u16,
    /// Which clock.
    pub track: Track,
}

/// A tokens/s sample at the end of a pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PassSample {
    /// End of the pass, ns since the host origin.
    pub at_ns: u64,
    /// Tokens per second over that pass.
    pub tokens_per_sec: f64,
}

/// The bounded event log. Allocated once; pushing never allocates.
#[derive(Debug, Clone)]
pub struct TraceBuffer {
    events: Vec<TraceEvent>,
    passes: Vec<PassSample>,
    capacity: usize,
    dropped: u64,
}

impl TraceBuffer {
    /// A buffer for `capacity` events (and as many pass samples).
    pub fn with_capacity(capacity: usize) -> Self {
        TraceBuffer {
            events: Vec::with_capacity(capacity),
            passes: Vec::with_capacity(capacity.min(1 << 16)),
            capacity,
            dropped: 0,
        }
    }

    /// Record an event, or count it as dropped when the buffer is full.
    #[inline]
    pub fn push(&mut self, e: TraceEvent) {
        if self.events.len() < self.capacity {
            self.events.push(e);
        } else {
            self.dropped += 1;
        }
    }

    /// Record a pass sample (dropped silently past its capacity).
    pub fn push_pass(&mut self, p: PassSample) {
        if self.passes.len() < self.passes.capacity() {
            self.passes.push(p);
        }
    }

    /// The events, in recording order.
    pub fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// The pass samples.
    pub fn passes(&self) -> &[PassSample] {
        &self.passes
    }

    /// Events that did not fit.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Forget everything (keeps the capacity).
    pub fn clear(&mut self) {
        self.events.clear();
        self.passes.clear();
        self.dropped = 0;
    }
}

/// A Chrome trace ("Trace Event Format", JSON object form) held in memory, ready to open in
/// Perfetto UI or chrome://tracing. For large traces, stream to a file instead with
/// [`crate::BrickProfiler::write_trace`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChromeTrace {
    json: String,
}

/// Thread ids: device/cpu tracks use the layer row; host tracks are offset by this.
pub const HOST_TID_OFFSET: u32 = 1000;

/// One thread's part of a multi-thread trace ([`ChromeTrace::build_threads`]).
pub(crate) struct ThreadTrace<'a> {
    pub(crate) buffer: &'a TraceBuffer,
    pub(crate) registry: &'a BrickRegistry,
    pub(crate) layers: usize,
    /// Process id of this thread's tracks.
    pub(crate) pid: u32,
    /// Name of that process track.
    pub(crate) name: &'a str,
}

/// JSON lines separated by commas.
struct Lines {
    out: String,
    first: bool,
}

impl Lines {
    fn push(&mut self, s: String) {
        if !self.first {
            self.out.push_str(",\n");
        }
        self.first = false;
        self.out.push_str(&s);
    }
}

impl ChromeTrace {
    /// Build the trace of `buffer`.
    pub(crate) fn build(
        buffer: &TraceBuffer,
        registry: &BrickRegistry,
        header: &TraceHeader,
    ) -> Result<ChromeTrace> {
        let mut out = Vec::new();
        let mut w = ChromeWriter::new(&mut out, header)?;
        feed(buffer, registry, &mut w)?;
        w.finish()?;
        drop(w);
        let json = String::from_utf8(out)
            .map_err(|e| Error::InvalidArgument(format!("trace is not UTF-8: {e}")))?;
        Ok(ChromeTrace { json })
    }

    /// Build one trace of several threads: each is a process track (its `pid` and `name`)
    /// holding its layer tracks.
    pub(crate) fn build_threads(parts: &[ThreadTrace<'_>]) -> ChromeTrace {
        let mut lines = Lines {
            out: String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"),
            first: true,
        };
        for part in parts {
            Self::write_part(&mut lines, part);
        }
        let dropped: u64 = parts.iter().map(|p| p.buffer.dropped).sum();
        let mut out = lines.out;
        let _ = write!(
            out,
            "\n],\"otherData\":{{\"tool\":\"brickprof {}\",\"dropped_events\":{}}}}}\n",
            env!("CARGO_PKG_VERSION"),
            dropped
        );
        ChromeTrace { json: out }
    }

    fn write_part(lines: &mut Lines, part: &ThreadTrace<'_>) {
        let (buffer, registry, layers, pid) = (part.buffer, part.registry, part.layers, part.pid);
        lines.push(format!(
            "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":0,\"args\":{{\"name\":{}}}}}",
            json_str(part.name)
        ));
        // Name every track that has events, sorted so host tracks follow device tracks.
        let mut tracks: Vec<(Track, u16)> =
            buffer.events.iter().map(|e| (e.track, e.row)).collect();
        tracks.sort_unstable_by_key(|&(t, r)| (tid(t, r), t as u8));
        tracks.dedup();
        for &(track, row) in &tracks {
            let kind = match track {
                Track::Cpu => "cpu",
                Track::Host => "host",
                Track::Device => "device",
            };
            let name = format!("{kind}: {}", row_name(row, layers));
            let t = tid(track, row);
            lines.push(format!(
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{t},\"args\":{{\"name\":{}}}}}",
                json_str(&name)
            ));
            lines.push(format!(
                "{{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{t},\"args\":{{\"sort_index\":{t}}}}}"
            ));
        }
        for e in &buffer.events {
            let h = BrickHandle(e.slot);
            let name = registry.name(h).unwrap_or("?");
            let cat = registry.category(h).map(|c| c.name()).unwrap_or("Other");
            lines.push(format!(
                "{{\"name\":{},\"cat\":{},\"ph\":\"X\",\"ts\":{},\"dur\":{},\"pid\":{pid},\"tid\":{},\"args\":{{\"layer\":{},\"clock\":\"{}\"}}}}",
                json_str(name),
                json_str(cat),
                micros(e.start_ns),
                micros(e.dur_ns),
                tid(e.track, e.row),
                json_str(&row_name(e.row, layers)),
                match e.track {
                    Track::Cpu => "cpu",
                    Track::Host => "host",
                    Track::Device => "device",
                }
            ));
        }
        for p in &buffer.passes {
            let v = if p.tokens_per_sec.is_finite() {
                p.tokens_per_sec
            } else {
                0.0
            };
            lines.push(format!(
                "{{\"name\":\"tokens/s\",\"ph\":\"C\",\"ts\":{},\"pid\":{pid},\"tid\":0,\"args\":{{\"tokens/s\":{v:.3}}}}}",
                micros(p.at_ns)
            ));
        }
    }

    /// The trace as JSON text.
    pub fn as_json(&self) -> &str {
        &self.json
    }

    /// Write the trace to `path` (creating parent directories).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        crate::json_file::write_text(path.as_ref(), &self.json)
    }
}

// Helpers of the multi-thread Chrome trace built in memory (`build_threads`).

fn tid(track: Track, row: u16) -> u32 {
    match track {
        Track::Cpu | Track::Device => u32::from(row),
        Track::Host => HOST_TID_OFFSET + u32::from(row),
    }
}

fn row_name(row: u16, layers: usize) -> String {
    let r = row as usize;
    if r < layers {
        format!("layer {r}")
    } else if r == layers {
        "model".to_string()
    } else {
        "unassigned".to_string()
    }
}

/// Nanoseconds as microseconds with three decimals, by integer arithmetic (exact).
fn micros(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000, ns % 1_000)
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_buffer_counts_drops() {
        let mut b = TraceBuffer::with_capacity(2);
        let e = TraceEvent {
            start_ns: 0,
            dur_ns: 1,
            slot: 0,
            row: 0,
            track: Track::Cpu,
        };
        for _ in 0..5 {
            b.push(e);
        }
        assert_eq!((b.events().len(), b.dropped()), (2, 3));
    }
}
