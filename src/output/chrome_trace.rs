//! The thread-local front door's Chrome JSON trace of several threads ([`build_threads`]),
//! built in memory by the same writer as a streamed Chrome file ([`ChromeWriter`]), so both
//! follow one layout and one nesting rule. Specified in `spec/traces.md` ("Chrome JSON").

use super::chrome_writer::ChromeWriter;
use super::slices::{feed, TraceSink};
use crate::model::registry::BrickRegistry;
use crate::profile::trace::{TraceBuffer, TraceView};
use crate::{profile::RunMeta, timeline::TimelineKind, Error, Result};

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
