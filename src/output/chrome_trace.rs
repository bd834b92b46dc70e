//! [`chrome_trace`]: a Chrome JSON trace built in memory, for small traces. Built by the same
//! path as a streamed Chrome file ([`super::slices::feed`] into a [`ChromeWriter`]), so both
//! follow one layout and one nesting rule. Specified in `spec/traces.md` ("Chrome JSON").

use super::chrome_writer::ChromeWriter;
use super::slices::{feed, TraceSink};
use crate::model::registry::BrickRegistry;
use crate::profile::trace::{TraceBuffer, TraceView};
use crate::{profile::RunMeta, timeline::TimelineKind, Error, Result};

/// The Chrome trace ("Trace Event Format", JSON object form) of a profiler's trace `view`, as
/// JSON text in memory, ready to open in Perfetto UI or chrome://tracing. Resolved
/// measurements only: call [`crate::BrickProfiler::finalize`] first. For large traces, stream
/// to a file instead with [`super::write_trace`].
///
/// ```
/// use brickprof::output::chrome_trace;
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
///
/// let mut prof = BrickProfiler::new(ProfilerConfig { trace_capacity: 64, ..Default::default() })?;
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.finalize()?;
/// let trace = chrome_trace(&prof.view().trace_view().expect("tracing is on"))?;
/// assert!(trace.contains("\"RmsNorm\""));
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn chrome_trace(view: &TraceView<'_>) -> Result<String> {
    let mut out = Vec::new();
    let mut w = ChromeWriter::new(&mut out, &view.meta)?;
    feed(view, &mut w)?;
    w.finish()?;
    drop(w);
    from_bytes(out)
}

/// One thread's part of a multi-thread trace ([`build_threads`]).
pub(crate) struct ThreadTrace<'a> {
    pub(crate) buffer: &'a TraceBuffer,
    pub(crate) registry: &'a BrickRegistry,
    /// The facts of this thread's run (its timeline, layers, ...).
    pub(crate) meta: RunMeta,
    /// Process id of this thread's tracks.
    pub(crate) pid: u32,
    /// Name of that process track.
    pub(crate) name: &'a str,
}

/// One trace of several threads: each is a process track (its `pid`, named `name (kind
/// timeline)`) holding its layer tracks. `otherData` holds the first thread's run facts,
/// with the threads' timeline (`mixed` when they differ), the most layers, every thread's
/// dropped events and no rank.
pub(crate) fn build_threads(parts: &[ThreadTrace<'_>]) -> String {
    let mut meta = parts
        .first()
        .map_or_else(|| RunMeta::new(TimelineKind::Cpu, 0), |p| p.meta.clone());
    if parts.iter().any(|p| p.meta.timeline != meta.timeline) {
        meta.timeline = TimelineKind::custom("mixed").unwrap_or(meta.timeline);
    }
    meta.layers = parts.iter().map(|p| p.meta.layers).max().unwrap_or(0);
    meta.counters.trace_dropped = parts.iter().map(|p| p.buffer.dropped()).sum();
    meta.rank = None;
    let mut out = Vec::new();
    let built = (|| {
        let mut w = ChromeWriter::open(&mut out, &meta)?;
        for part in parts {
            let name = format!("{} ({} timeline)", part.name, part.meta.timeline.name());
            w.process(part.pid, &name, part.meta.layers)?;
            let view = TraceView {
                events: part.buffer.events(),
                passes: part.buffer.passes(),
                registry: part.registry,
                meta: part.meta.clone(),
            };
            feed(&view, &mut w)?;
        }
        w.finish()
    })();
    // Writing into memory fails only on a slice out of order, which `feed` never sends:
    // the writer has closed the array either way.
    let _ = built;
    from_bytes(out).unwrap_or_default()
}

fn from_bytes(out: Vec<u8>) -> Result<String> {
    let json = String::from_utf8(out).map_err(|e| Error::Encode {
        what: "a Chrome trace",
        message: format!("not UTF-8: {e}"),
    })?;
    Ok(json)
}
