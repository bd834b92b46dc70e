//! The output formats as one list: each is a type implementing [`Output`] (its name, its file
//! extension, how to recognise a file it wrote, how to write it, and for traces how to read it
//! back), and [`outputs`] lists them. The CLI builds its flags from this list and `convert`
//! picks its input format by [`Output::recognise`], so a new format needs no edit anywhere
//! else. Files are written whole or not at all through [`OutputFile`] ([`write_output`]).
//! Specified in spec/profile-format.md "The CLI" and spec/traces.md "Command line".

use std::io::BufRead;
use std::path::Path;

use super::slices::{feed, OpenSink, TraceSink};
use super::trace_output::TraceOutput;
use super::{HtmlOptions, TableOptions};
use crate::profile::trace::TraceView;
use crate::{io::OutputFile, profile::RunMeta, Error, Profile, Result};

/// What an output is made from.
#[derive(Debug, Clone, Copy)]
pub enum Snapshot<'a> {
    /// A saved run, with the options of the reports made from it.
    Profile(&'a Profile, &'a ReportOptions<'a>),
    /// A profiler's trace.
    Trace(&'a TraceView<'a>),
}

/// Which snapshot an output takes: it decides which CLI flags the output gets (`report
/// --NAME FILE` and `--format NAME` for profiles; `demo --trace-format NAME` and `convert
/// --to NAME` for traces).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Takes {
    /// A [`Profile`].
    Profile,
    /// A [`TraceView`].
    Trace,
}

/// The options of the reports made from a profile.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions<'a> {
    /// The terminal table, JSON and CSV.
    pub table: TableOptions,
    /// The HTML report.
    pub html: HtmlOptions<'a>,
}

/// One output format.
pub trait Output: Sync {
    /// Its name, as the CLI spells it ("table", "chrome", ...).
    fn name(&self) -> &'static str;
    /// The extension of the files it writes, without the dot.
    fn extension(&self) -> &'static str;
    /// Whether the file at `path`, which begins with `head` (its first bytes, up to a few
    /// kilobytes), is one this output wrote.
    fn recognise(&self, path: &Path, head: &[u8]) -> bool;
    /// Which snapshot it is made from.
    fn takes(&self) -> Takes {
        Takes::Profile
    }
    /// Write the output of `snapshot` into `out` (a trace output also finishes it, which puts
    /// an [`OutputFile`] in place). The wrong kind of snapshot is an
    /// [`Error::InvalidValue`].
    fn write(&self, snapshot: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()>;
}

/// A trace output's writer and reader, inside the crate: what [`Output::write`] streams a
/// [`TraceView`] into, and what `convert` reads a file back with.
pub(crate) trait TraceFormat: Output {
    /// A streaming writer of the run `meta` into `out`, put in place by its
    /// [`TraceSink::finish`].
    fn open_trace<'a>(
        &self,
        out: Box<dyn TraceOutput + 'a>,
        meta: &RunMeta,
    ) -> Result<Box<dyn TraceSink + 'a>>;
    /// Read a file this format wrote (at `path`) back into the sink `open` makes once the
    /// run's facts are known: what `convert` does.
    fn read(&self, path: &Path, input: &mut dyn BufRead, open: &mut OpenSink<'_>) -> Result<()>;
}

/// The trace formats, as the crate reads and writes them.
pub(crate) fn trace_format(output: &dyn Output) -> Option<&'static dyn TraceFormat> {
    let all: [&'static dyn TraceFormat; 2] = [&Perfetto, &Chrome];
    all.into_iter().find(|f| f.name() == output.name())
}

/// [`Output::write`] of a trace format: its streaming writer, fed the view.
fn write_view(
    format: &dyn TraceFormat,
    snapshot: &Snapshot<'_>,
    out: &mut dyn TraceOutput,
) -> Result<()> {
    match snapshot {
        Snapshot::Trace(view) => {
            let mut sink = format.open_trace(Box::new(out), &view.meta)?;
            feed(view, sink.as_mut())?;
            sink.finish()
        }
        Snapshot::Profile(..) => Err(wrong_snapshot(format.name(), "a profile")),
    }
}

fn wrong_snapshot(name: &str, what: &str) -> Error {
    Error::invalid_value(
        "output",
        name,
        format!("the {name} output is not made from {what}"),
    )
}

impl std::fmt::Debug for dyn Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Every output format of the library, profiles' first.
pub fn outputs() -> &'static [&'static dyn Output] {
    &[
        &Table, &Json, &Csv, &Html, &Folded, &Dot, &Perfetto, &Chrome,
    ]
}

/// The output called `name`.
pub fn output(name: &str) -> Option<&'static dyn Output> {
    outputs().iter().copied().find(|o| o.name() == name)
}

/// Write `snapshot` as `output` to `path` (creating parent directories): whole or not at all,
/// through an [`OutputFile`]; on an error whatever was at `path` stays as it was. A profiler's
/// trace ([`Snapshot::Trace`]) is streamed with bounded memory; resolved measurements only:
/// call [`crate::BrickProfiler::finalize`] first.
///
/// ```
/// use brickprof::output::{output, write_output, Snapshot};
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
///
/// let mut prof = BrickProfiler::new(ProfilerConfig { trace_capacity: 64, ..Default::default() })?;
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.finalize()?;
/// let dir = std::env::temp_dir().join(format!("brickprof-doc-{}", std::process::id()));
/// if let Some(view) = prof.view().trace_view() {
///     let perfetto = output("perfetto").expect("a trace output");
///     write_output(perfetto, &Snapshot::Trace(&view), &dir.join("trace.pftrace"))?;
/// }
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn write_output(output: &dyn Output, snapshot: &Snapshot<'_>, path: &Path) -> Result<()> {
    let mut file = OutputFile::create(path)?;
    output.write(snapshot, &mut file)?;
    file.commit()
}

/// Text made from a profile, written whole.
fn write_text(
    name: &str,
    snapshot: &Snapshot<'_>,
    out: &mut dyn TraceOutput,
    render: impl FnOnce(&Profile, &ReportOptions<'_>) -> String,
) -> Result<()> {
    let Snapshot::Profile(p, opts) = snapshot else {
        return Err(wrong_snapshot(name, "a trace"));
    };
    let text = render(p, opts);
    out.write_all(text.as_bytes())
        .map_err(|e| Error::io(out.name(), e))
}

/// `head` without leading white space.
fn trimmed(head: &[u8]) -> &[u8] {
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    &head[start..]
}

/// The first key of the JSON object `head` begins with, if it does.
fn first_key(head: &[u8]) -> Option<&[u8]> {
    let rest = trimmed(trimmed(head).strip_prefix(b"{")?);
    let rest = rest.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&b| b == b'"')?;
    Some(&rest[..end])
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn has_extension(path: &Path, extensions: &[&str]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// The terminal table ([`super::render_table`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Table;

impl Output for Table {
    fn name(&self) -> &'static str {
        "table"
    }
    fn extension(&self) -> &'static str {
        "txt"
    }
    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        let line = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
        line.starts_with(b"brickprof ") && contains(line, b" | timeline ")
    }
    fn write(&self, s: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()> {
        write_text(self.name(), s, out, |p, o| super::render_table(p, &o.table))
    }
}

/// The derived numbers as JSON ([`super::export::render_json`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Json;

impl Output for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn extension(&self) -> &'static str {
        "json"
    }
    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        first_key(head) == Some(b"tool_version")
    }
    fn write(&self, s: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()> {
        write_text(self.name(), s, out, |p, o| {
            super::export::render_json(p, &o.table)
        })
    }
}

/// The derived numbers as CSV ([`super::export::render_csv`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Csv;

impl Output for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn extension(&self) -> &'static str {
        "csv"
    }
    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        head.starts_with(b"name,category,layer,calls,")
    }
    fn write(&self, s: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()> {
        write_text(self.name(), s, out, |p, o| {
            super::export::render_csv(p, &o.table)
        })
    }
}

/// The self-contained HTML report ([`super::html::render_html`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Html;

impl Output for Html {
    fn name(&self) -> &'static str {
        "html"
    }
    fn extension(&self) -> &'static str {
        "html"
    }
    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        trimmed(head).starts_with(b"<!DOCTYPE html>") && contains(head, b"brickprof report:")
    }
    fn write(&self, s: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()> {
        write_text(self.name(), s, out, |p, o| {
            super::html::render_html(p, &o.html)
        })
    }
}

/// Folded stacks for flamegraph tools ([`super::folded::render_folded`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Folded;

impl Output for Folded {
    fn name(&self) -> &'static str {
        "folded"
    }
    fn extension(&self) -> &'static str {
        "folded"
    }
    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        // `stack weight` lines: a stack (never starting like JSON, markup or DOT) and a count.
        let line = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
        let Some(space) = line.iter().rposition(|&b| b == b' ') else {
            return false;
        };
        let (stack, weight) = (&line[..space], &line[space + 1..]);
        !stack.is_empty()
            && !matches!(stack[0], b'{' | b'<' | b' ')
            && !stack.starts_with(b"digraph")
            && !weight.is_empty()
            && weight.iter().all(u8::is_ascii_digit)
    }
    fn write(&self, s: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()> {
        write_text(self.name(), s, out, |p, _| super::folded::render_folded(p))
    }
}

/// The execution graph in Graphviz DOT ([`super::dot::render_dot`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dot;

impl Output for Dot {
    fn name(&self) -> &'static str {
        "dot"
    }
    fn extension(&self) -> &'static str {
        "dot"
    }
    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        trimmed(head).starts_with(b"digraph brickprof")
    }
    fn write(&self, s: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()> {
        write_text(self.name(), s, out, |p, _| super::dot::render_dot(p))
    }
}

/// Chrome's JSON trace (`ChromeWriter`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chrome;

impl Output for Chrome {
    fn name(&self) -> &'static str {
        "chrome"
    }
    fn extension(&self) -> &'static str {
        "json"
    }
    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        // The object form of the Trace Event Format: brickprof writes `displayTimeUnit` first.
        matches!(
            first_key(head),
            Some(b"displayTimeUnit" | b"otherData" | b"traceEvents")
        )
    }
    fn takes(&self) -> Takes {
        Takes::Trace
    }
    fn write(&self, s: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()> {
        write_view(self, s, out)
    }
}

impl TraceFormat for Chrome {
    fn open_trace<'a>(
        &self,
        out: Box<dyn TraceOutput + 'a>,
        meta: &RunMeta,
    ) -> Result<Box<dyn TraceSink + 'a>> {
        Ok(Box::new(super::chrome_writer::ChromeWriter::new(
            out, meta,
        )?))
    }
    fn read(&self, path: &Path, input: &mut dyn BufRead, open: &mut OpenSink<'_>) -> Result<()> {
        super::chrome_reader::read(path, input, open)
    }
}

/// Perfetto's native protobuf trace (`PerfettoWriter`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Perfetto;

impl Output for Perfetto {
    fn name(&self) -> &'static str {
        "perfetto"
    }
    fn extension(&self) -> &'static str {
        "pftrace"
    }
    fn recognise(&self, path: &Path, head: &[u8]) -> bool {
        // A trace packet's tag first; a file named as a Perfetto trace is read as one, so a
        // damaged one gets the reader's error (where the packets go wrong).
        head.first() == Some(&super::perfetto_proto::TRACE_PACKET_TAG)
            || (has_extension(path, &["pftrace", "perfetto-trace", "pb"])
                && !head.is_empty()
                && first_key(head).is_none())
    }
    fn takes(&self) -> Takes {
        Takes::Trace
    }
    fn write(&self, s: &Snapshot<'_>, out: &mut dyn TraceOutput) -> Result<()> {
        write_view(self, s, out)
    }
}

impl TraceFormat for Perfetto {
    fn open_trace<'a>(
        &self,
        out: Box<dyn TraceOutput + 'a>,
        meta: &RunMeta,
    ) -> Result<Box<dyn TraceSink + 'a>> {
        Ok(Box::new(super::perfetto_writer::PerfettoWriter::new(
            out, meta,
        )?))
    }
    fn read(&self, path: &Path, input: &mut dyn BufRead, open: &mut OpenSink<'_>) -> Result<()> {
        super::perfetto_reader::read(path, input, open)
    }
}
