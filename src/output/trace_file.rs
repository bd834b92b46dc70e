//! Trace files: [`convert`] (a saved trace read back by the output that recognises it, and
//! written by another) and [`trace_output_of`]. A trace is written (by
//! [`super::write_output`]) and converted through the one slice-building path ([`super::slices`]) into a
//! writer ([`super::chrome_writer`], [`super::perfetto_writer`]) writing an [`OutputFile`], put
//! in place only when the trace is whole. Specified in `spec/traces.md`.

use std::fs::File;
use std::path::Path;

use super::formats::{outputs, trace_format, Output, Takes, TraceFormat};
use crate::{io::OutputFile, profile::RunMeta, Error, Result};

/// An error unless `output` writes traces.
fn check_trace(output: &dyn Output) -> Result<()> {
    if output.takes() == Takes::Trace {
        return Ok(());
    }
    Err(Error::invalid_value(
        "trace format",
        output.name(),
        format!(
            "not a trace format; the trace formats are {}",
            trace_names()
        ),
    ))
}

/// The crate's writer and reader of the trace output `output`.
fn format_of(output: &dyn Output) -> Result<&'static dyn TraceFormat> {
    trace_format(output).ok_or_else(|| {
        Error::invalid_value(
            "trace format",
            output.name(),
            format!(
                "brickprof does not read or convert {} traces",
                output.name()
            ),
        )
    })
}

/// The names of the trace outputs, `a|b`.
fn trace_names() -> String {
    let names: Vec<&str> = outputs()
        .iter()
        .filter(|o| o.takes() == Takes::Trace)
        .map(|o| o.name())
        .collect();
    names.join("|")
}

/// How many bytes of a file [`Output::recognise`] sees.
const HEAD_BYTES: usize = 4096;

/// Convert the brickprof trace at `input` (any trace output's, told by
/// [`Output::recognise`]) to the trace output `to` at `output`, streaming. Returns the input's
/// output. Whole or not at all: when the input turns out bad half way (a slice out of order, a
/// truncated file, an event that does not parse), the error is returned and whatever was at
/// `output` stays as it was.
pub fn convert(input: &Path, output: &Path, to: &dyn Output) -> Result<&'static dyn Output> {
    check_trace(to)?;
    let to = format_of(to)?;
    // By identity, not spelling: `./t.json`, a link to it, a hard link of it are `t.json`.
    crate::io::check_outputs_apart(&[input], &[output])?;
    let file = File::open(input).map_err(|e| Error::io(input, e))?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let head = std::io::BufRead::fill_buf(&mut reader).map_err(|e| Error::io(input, e))?;
    let from = recognised(input, head)?;
    let reader_of = format_of(from)?;
    let mut open = |meta: &RunMeta| to.open_trace(Box::new(OutputFile::create(output)?), meta);
    // Slices out of order are the input's fault: name it (spec/traces.md "Command line").
    reader_of
        .read(input, &mut reader, &mut open)
        .map_err(|e| match e {
            Error::TraceOrder { .. } => Error::InFile {
                path: input.to_path_buf(),
                source: Box::new(e),
            },
            e => e,
        })?;
    Ok(from)
}

/// The trace output that wrote the file at `input`, told by [`Output::recognise`] from its name
/// and first bytes: an error naming the file when none did (or it is empty).
pub fn trace_output_of(input: &Path) -> Result<&'static dyn Output> {
    let file = File::open(input).map_err(|e| Error::io(input, e))?;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    std::io::Read::read_to_end(&mut std::io::Read::take(file, HEAD_BYTES as u64), &mut head)
        .map_err(|e| Error::io(input, e))?;
    recognised(input, &head)
}

fn recognised(input: &Path, head: &[u8]) -> Result<&'static dyn Output> {
    if head.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::invalid(input, "the file is empty"));
    }
    let head = &head[..head.len().min(HEAD_BYTES)];
    outputs()
        .iter()
        .copied()
        .find(|o| o.takes() == Takes::Trace && o.recognise(input, head))
        .ok_or_else(|| {
            Error::invalid(
                input,
                format!("not a trace brickprof reads ({})", trace_names()),
            )
        })
}
