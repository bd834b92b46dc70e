//! [`ChromeTrace`]: a Chrome JSON trace held in memory, for small traces. Built by the same
//! path as a streamed Chrome file ([`super::slices::feed`] into a [`ChromeWriter`]), so both
//! follow one layout and one nesting rule. Specified in `spec/traces.md` ("Chrome JSON").

use std::path::Path;

use super::chrome::ChromeWriter;
use super::slices::{feed, TraceSink};
use crate::registry::BrickRegistry;
use crate::trace::{TraceBuffer, TraceHeader, TraceView};
use crate::{Error, Result, TimelineKind};

/// A Chrome trace ("Trace Event Format", JSON object form) held in memory, ready to open in
/// Perfetto UI or chrome://tracing. Made by [`chrome_trace`]; for large traces, stream to a
/// file instead with [`super::write_trace`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChromeTrace {
    json: String,
}

/// The Chrome trace of a profiler's trace `view`, in memory. Resolved measurements only: call
/// [`crate::BrickProfiler::finalize`] first.
///
/// ```
/// use brickprof::report::chrome_trace;
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
///
/// let mut prof = BrickProfiler::new(ProfilerConfig { trace_capacity: 64, ..Default::default() })?;
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.finalize()?;
/// let trace = chrome_trace(&prof.trace_view().expect("tracing is on"))?;
/// assert!(trace.as_json().contains("\"RmsNorm\""));
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn chrome_trace(view: &TraceView<'_>) -> Result<ChromeTrace> {
    let mut out = Vec::new();
    let mut w = ChromeWriter::new(&mut out, &view.header)?;
    feed(view, &mut w)?;
    w.finish()?;
    drop(w);
    ChromeTrace::from_bytes(out)
}

/// One thread's part of a multi-thread trace ([`ChromeTrace::build_threads`]).
pub(crate) struct ThreadTrace<'a> {
    pub(crate) buffer: &'a TraceBuffer,
    pub(crate) registry: &'a BrickRegistry,
    pub(crate) layers: usize,
    /// Process id of this thread's tracks.
    pub(crate) pid: u32,
    /// Name of that process track.
    pub(crate) name: &'a str,
    /// The timeline this thread marked.
    pub(crate) timeline: TimelineKind,
}

impl ChromeTrace {
    /// One trace of several threads: each is a process track (its `pid`, named `name (kind
    /// timeline)`) holding its layer tracks; `otherData` counts every thread's dropped events
    /// and names the threads' timeline (`mixed` when they differ).
    pub(crate) fn build_threads(parts: &[ThreadTrace<'_>]) -> ChromeTrace {
        let first = parts.first().map_or(TimelineKind::Cpu, |p| p.timeline);
        let timeline = if parts.iter().all(|p| p.timeline == first) {
            first
        } else {
            TimelineKind::custom("mixed").unwrap_or(first)
        };
        let header = TraceHeader {
            rank: 0,
            timeline,
            layers: parts.iter().map(|p| p.layers).max().unwrap_or(0),
            dropped: parts.iter().map(|p| p.buffer.dropped()).sum(),
            calibration_bound_ns: None,
        };
        let mut out = Vec::new();
        let built = (|| {
            let mut w = ChromeWriter::open(&mut out, &header)?;
            for part in parts {
                let name = format!("{} ({} timeline)", part.name, part.timeline.name());
                w.process(part.pid, &name, part.layers)?;
                let view = TraceView {
                    buffer: part.buffer,
                    registry: part.registry,
                    header: TraceHeader {
                        rank: part.pid,
                        timeline: part.timeline,
                        layers: part.layers,
                        dropped: part.buffer.dropped(),
                        calibration_bound_ns: None,
                    },
                };
                feed(&view, &mut w)?;
            }
            w.finish()
        })();
        // Writing into memory fails only on a slice out of order, which `feed` never sends:
        // the writer has closed the array either way.
        let _ = built;
        ChromeTrace::from_bytes(out).unwrap_or(ChromeTrace {
            json: String::new(),
        })
    }

    fn from_bytes(out: Vec<u8>) -> Result<ChromeTrace> {
        let json = String::from_utf8(out).map_err(|e| Error::Encode {
            what: "a Chrome trace",
            message: format!("not UTF-8: {e}"),
        })?;
        Ok(ChromeTrace { json })
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
