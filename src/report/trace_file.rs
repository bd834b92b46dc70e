//! Trace files: the [`TraceFormat`]s, [`write_trace`] (a profiler's [`TraceView`] streamed
//! to a file in either format) and [`convert`] (a saved trace read back and written in the
//! other). Both go through the one slice-building path ([`super::slices`]) into a writer
//! ([`super::chrome`], [`super::perfetto`]) writing an [`OutputFile`], put in place only
//! when the trace is whole. Specified in `spec/traces.md`.

use std::fs::File;
use std::path::Path;

use super::slices::{feed, TraceSink};
use crate::trace::TraceView;
use crate::{Error, OutputFile, Result, RunMeta};

/// A trace file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// Perfetto's native TrackEvent protobuf (`.pftrace`).
    Perfetto,
    /// Chrome's JSON "Trace Event Format" (`.json`).
    Chrome,
}

impl TraceFormat {
    /// The file name extension brickprof uses ("pftrace", "json").
    pub fn extension(self) -> &'static str {
        match self {
            TraceFormat::Perfetto => "pftrace",
            TraceFormat::Chrome => "json",
        }
    }

    /// The format a file name's extension names, if any.
    pub fn of_path(path: &Path) -> Option<TraceFormat> {
        match path.extension()?.to_str()? {
            "pftrace" | "perfetto-trace" | "pb" => Some(TraceFormat::Perfetto),
            "json" => Some(TraceFormat::Chrome),
            _ => None,
        }
    }

    /// The other format.
    pub fn other(self) -> TraceFormat {
        match self {
            TraceFormat::Perfetto => TraceFormat::Chrome,
            TraceFormat::Chrome => TraceFormat::Perfetto,
        }
    }
}

/// Write a profiler's trace as a file in `format` at `path` (creating parent directories),
/// streaming with bounded memory. Resolved measurements only: call
/// [`crate::BrickProfiler::finalize`] first. Whole or not at all: when writing fails, the error
/// is returned and whatever was at `path` stays as it was ([`OutputFile`]).
///
/// ```
/// use brickprof::report::{write_trace, TraceFormat};
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
///
/// let mut prof = BrickProfiler::new(ProfilerConfig { trace_capacity: 64, ..Default::default() })?;
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.finalize()?;
/// let dir = std::env::temp_dir().join(format!("brickprof-doc-{}", std::process::id()));
/// if let Some(view) = prof.trace_view() {
///     write_trace(&view, dir.join("trace.pftrace"), TraceFormat::Perfetto)?;
/// }
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn write_trace(
    view: &TraceView<'_>,
    path: impl AsRef<Path>,
    format: TraceFormat,
) -> Result<()> {
    let mut sink = open_sink(format, &view.meta, path.as_ref())?;
    feed(view, sink.as_mut())?;
    sink.finish()
}

/// A streaming writer of `format` into `path`, put in place by its `finish`.
pub(crate) fn open_sink(
    format: TraceFormat,
    meta: &RunMeta,
    path: &Path,
) -> Result<Box<dyn TraceSink>> {
    let file = OutputFile::create(path)?;
    Ok(match format {
        TraceFormat::Perfetto => Box::new(super::perfetto::PerfettoWriter::new(file, meta)?),
        TraceFormat::Chrome => Box::new(super::chrome::ChromeWriter::new(file, meta)?),
    })
}

/// Convert the brickprof trace at `input` (either format, told by its content) to `format` at
/// `output`, streaming. Returns the input's format. Whole or not at all: when the input turns
/// out bad half way (a slice out of order, a truncated file, an event that does not parse),
/// the error is returned and whatever was at `output` stays as it was.
pub fn convert(input: &Path, output: &Path, format: TraceFormat) -> Result<TraceFormat> {
    let file = File::open(input).map_err(|e| Error::io(input, e))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let first = {
        let buf = std::io::BufRead::fill_buf(&mut reader).map_err(|e| Error::io(input, e))?;
        buf.iter().copied().find(|b| !b.is_ascii_whitespace())
    };
    // The extension decides; the content is the fallback (a protobuf's first byte, 0x0a, reads
    // as white space to a JSON sniffer).
    let from = match (TraceFormat::of_path(input), first) {
        (_, None) => None,
        (Some(f), _) => Some(f),
        (None, Some(b'{')) => Some(TraceFormat::Chrome),
        (None, Some(_)) => Some(TraceFormat::Perfetto),
    };
    let Some(from) = from else {
        return Err(Error::invalid(input, "the file is empty"));
    };
    if input == output {
        return Err(Error::SameFile {
            path: output.to_path_buf(),
            what: "converting a trace",
        });
    }
    let mut open = |meta: &RunMeta| open_sink(format, meta, output);
    let read = match from {
        TraceFormat::Chrome => super::chrome::read(input, reader, &mut open),
        TraceFormat::Perfetto => super::perfetto::read(input, reader, &mut open),
    };
    // Slices out of order are the input's fault: name it (spec/traces.md "Command line").
    read.map_err(|e| match e {
        Error::TraceOrder { .. } => Error::InFile {
            path: input.to_path_buf(),
            source: Box::new(e),
        },
        e => e,
    })?;
    Ok(from)
}
