//! What both trace writers ([`super::chrome`], [`super::perfetto`]) consume: a stream of
//! [`Slice`]s and tokens/s samples behind one [`TraceSink`] trait, fed from a profiler's
//! [`TraceBuffer`] by [`feed`], or from a saved trace by the readers ([`convert`]). Files are
//! written as a stream (bounded memory) to a temporary file renamed into place.
//! Specified in `spec/traces.md`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::registry::BrickRegistry;
use crate::trace::{TraceBuffer, Track};
use crate::{BrickHandle, Error, Result, TimelineKind};

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

/// What a trace says about the run as a whole, written before any event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceHeader {
    /// Rank (process) of the run.
    pub rank: u32,
    /// The timeline the run marked.
    pub timeline: TimelineKind,
    /// Model layers: row `layers` is "model", row `layers + 1` "unassigned".
    pub layers: usize,
    /// Measurements the trace buffer had no room for.
    pub dropped: u64,
}

impl TraceHeader {
    /// The display name of a layer row ("layer 3", "model", "unassigned").
    pub fn row_name(&self, row: u16) -> String {
        let r = usize::from(row);
        if r < self.layers {
            format!("layer {r}")
        } else if r == self.layers {
            "model".to_string()
        } else {
            "unassigned".to_string()
        }
    }
}

/// The arrow from a host dispatch slice to the device slice it launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// No arrow.
    None,
    /// The arrow with this id starts here (host dispatch).
    Out(u64),
    /// The arrow with this id ends here (device execution).
    In(u64),
}

/// One measurement on one track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice<'a> {
    /// Which clock.
    pub track: Track,
    /// Layer row.
    pub row: u16,
    /// Brick name.
    pub name: &'a str,
    /// Brick category name.
    pub category: &'a str,
    /// Start, ns since the clock's origin.
    pub start_ns: u64,
    /// Duration, ns.
    pub dur_ns: u64,
    /// Its flow arrow.
    pub flow: Flow,
}

/// Where a trace writer's bytes go: any [`Write`] that can say its name (for errors) and be
/// closed ([`StreamFile`] renames its file into place).
pub trait TraceOutput: Write {
    /// The file name errors name.
    fn name(&self) -> &Path {
        Path::new("<trace output>")
    }
    /// Everything is written: flush, and put the file in place.
    fn done(&mut self) -> Result<()> {
        self.flush().map_err(|e| Error::io(self.name(), e))
    }
}

impl TraceOutput for Vec<u8> {}
impl TraceOutput for std::io::Sink {}

impl TraceOutput for StreamFile {
    fn name(&self) -> &Path {
        &self.path
    }
    fn done(&mut self) -> Result<()> {
        self.commit()
    }
}

impl<T: TraceOutput + ?Sized> TraceOutput for &mut T {
    fn name(&self) -> &Path {
        (**self).name()
    }
    fn done(&mut self) -> Result<()> {
        (**self).done()
    }
}

/// A trace writer. Slices arrive in start order per track (a parent before the slices nested
/// in it); counters arrive in time order. Dropping a writer that was not finished still leaves
/// a well-formed file (the Chrome array closed, the Perfetto slices ended).
pub trait TraceSink {
    /// Write one slice.
    fn slice(&mut self, slice: &Slice<'_>) -> Result<()>;
    /// Write one tokens/s sample.
    fn counter(&mut self, at_ns: u64, tokens_per_sec: f64) -> Result<()>;
    /// Close the trace and flush it.
    fn finish(&mut self) -> Result<()>;
}

/// Feed every event of `buffer` to `sink` in start order (ties: the longer, enclosing slice
/// first), pairing each device slice with the host slice recorded with it as a flow, then the
/// tokens/s samples. Does not call [`TraceSink::finish`]. Extra memory: 4 bytes per event.
pub fn feed(
    buffer: &TraceBuffer,
    registry: &BrickRegistry,
    sink: &mut dyn TraceSink,
) -> Result<()> {
    let events = buffer.events();
    let mut order: Vec<u32> = (0..events.len() as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let e = &events[i as usize];
        (e.start_ns, std::cmp::Reverse(e.dur_ns), i)
    });
    // The profiler pushes a device event immediately followed by its host event.
    let partner = |i: usize| -> Flow {
        let e = &events[i];
        let same = |o: &crate::TraceEvent| o.slot == e.slot && o.row == e.row;
        match e.track {
            Track::Device
                if events
                    .get(i + 1)
                    .is_some_and(|h| h.track == Track::Host && same(h)) =>
            {
                Flow::In(i as u64)
            }
            Track::Host
                if i > 0 && events[i - 1].track == Track::Device && same(&events[i - 1]) =>
            {
                Flow::Out(i as u64 - 1)
            }
            _ => Flow::None,
        }
    };
    for &i in &order {
        let i = i as usize;
        let e = &events[i];
        let h = BrickHandle(e.slot);
        sink.slice(&Slice {
            track: e.track,
            row: e.row,
            name: registry.name(h).unwrap_or("?"),
            category: registry.category(h).map_or("Other", |c| c.name()),
            start_ns: e.start_ns,
            dur_ns: e.dur_ns,
            flow: partner(i),
        })?;
    }
    for p in buffer.passes() {
        sink.counter(p.at_ns, p.tokens_per_sec)?;
    }
    Ok(())
}

/// A file written as a stream into a temporary file next to it (a name no other writer shares)
/// and renamed into place when dropped (or [`StreamFile::commit`]ted), so a reader never sees
/// half a file under the final name, and two writers of one path never share a temporary file.
#[derive(Debug)]
pub struct StreamFile {
    path: PathBuf,
    tmp: PathBuf,
    out: Option<BufWriter<File>>,
}

impl StreamFile {
    /// Create `path`'s temporary file (and its parent directories).
    pub fn create(path: &Path) -> Result<StreamFile> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(d) => d,
            None => Path::new("."),
        };
        let name = path
            .file_name()
            .map_or_else(|| "trace".into(), |n| n.to_string_lossy());
        let (tmp, file) = crate::file_io::create_temp(dir, &name)?;
        Ok(StreamFile {
            path: path.to_path_buf(),
            tmp,
            out: Some(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flush and rename into place.
    pub fn commit(&mut self) -> Result<()> {
        let Some(out) = self.out.take() else {
            return Ok(());
        };
        let file = out
            .into_inner()
            .map_err(|e| Error::io(&self.tmp, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&self.tmp, e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| Error::io(&self.path, e))
    }
}

impl Write for StreamFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.out.as_mut() {
            Some(o) => o.write(buf),
            None => Err(std::io::Error::other("file already committed")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.as_mut().map_or(Ok(()), Write::flush)
    }
}

impl Drop for StreamFile {
    fn drop(&mut self) {
        let _ = self.commit();
    }
}

/// Write `buffer` as a trace file in `format` at `path`, streaming. When feeding fails half
/// way, the file still holds a well-formed trace of what came before, and the error is
/// returned.
pub fn write_trace(
    buffer: &TraceBuffer,
    registry: &BrickRegistry,
    header: &TraceHeader,
    format: TraceFormat,
    path: &Path,
) -> Result<()> {
    let mut sink = open_sink(format, header, path)?;
    feed(buffer, registry, sink.as_mut())?;
    sink.finish()
}

/// A streaming writer of `format` into a new file at `path`.
pub fn open_sink(
    format: TraceFormat,
    header: &TraceHeader,
    path: &Path,
) -> Result<Box<dyn TraceSink>> {
    let file = StreamFile::create(path)?;
    Ok(match format {
        TraceFormat::Perfetto => Box::new(super::perfetto::PerfettoWriter::new(file, header)?),
        TraceFormat::Chrome => Box::new(super::chrome::ChromeWriter::new(file, header)?),
    })
}

/// Convert the brickprof trace at `input` (either format, told by its content) to `format` at
/// `output`, streaming. Returns the input's format.
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
        return Err(Error::InvalidArgument(format!(
            "{}: converting a trace onto itself would destroy it; name another output",
            output.display()
        )));
    }
    let mut open = |header: &TraceHeader| open_sink(format, header, output);
    match from {
        TraceFormat::Chrome => super::chrome::read(input, reader, &mut open)?,
        TraceFormat::Perfetto => super::perfetto::read(input, reader, &mut open)?,
    }
    Ok(from)
}

/// Opens the output once a reader knows the header.
pub(crate) type OpenSink<'a> = dyn FnMut(&TraceHeader) -> Result<Box<dyn TraceSink>> + 'a;
