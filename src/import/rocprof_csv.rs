//! rocprofv3's CSV output (`rocprofv3 --kernel-trace --marker-trace --kernel-rename
//! --output-format csv`), spec/imports.md "rocprofv3": `kernel_trace.csv`, one row a kernel
//! dispatch, whose `Kernel_Name` `--kernel-rename` replaces with the innermost roctx range's
//! message, and, beside it, `marker_api_trace.csv`, one row a roctx range (or mark, or roctx
//! call), which says which names are ranges and how many times each was pushed.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use super::builder::{brick_of, Kernel, KernelTime, ProfileBuilder, MAX_CELLS};
use super::csv_records::{column, CsvReader, Record};
use super::pass_ranges::{PassFound, PassRanges};
use super::{Imported, Importer};
use crate::model::row_key::RowKey;
use crate::{BrickId, Error, Result};

/// The rocprofv3 CSV importer: give it the `kernel_trace.csv`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RocprofCsv;

const KERNELS: &str = "kernel_trace.csv";
const MARKERS: &str = "marker_api_trace.csv";

impl Importer for RocprofCsv {
    fn name(&self) -> &'static str {
        "rocprofv3-csv"
    }

    fn describe(&self) -> &'static str {
        "rocprofv3 kernel_trace.csv: rocprofv3 --kernel-trace --marker-trace --kernel-rename"
    }

    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        let line = super::first_line(head);
        [
            "Kernel_Name",
            "Start_Timestamp",
            "End_Timestamp",
            "Correlation_Id",
        ]
        .iter()
        .all(|c| line.contains(&format!("\"{c}\"")) || line.split(',').any(|f| f == *c))
    }

    fn read(&self, path: &Path) -> Result<Imported> {
        read(path)
    }

    fn inputs(&self, path: &Path) -> Vec<PathBuf> {
        let mut files = vec![path.to_path_buf()];
        files.extend(markers_beside(path).filter(|m| m.is_file()));
        files
    }
}

/// The marker trace beside a kernel trace (`123_kernel_trace.csv` → `123_marker_api_trace.csv`).
pub(crate) fn markers_beside(kernels: &Path) -> Option<PathBuf> {
    let name = kernels.file_name()?.to_str()?;
    let prefix = name.strip_suffix(KERNELS)?;
    Some(kernels.with_file_name(format!("{prefix}{MARKERS}")))
}

fn error(path: &Path, line: u64, message: String) -> Error {
    Error::Import {
        path: path.to_path_buf(),
        format: "rocprofv3-csv",
        line,
        message,
    }
}

/// The header's column `name`, or an error naming it.
fn need(path: &Path, header: &Record, name: &str) -> Result<usize> {
    column(header, name).ok_or_else(|| {
        error(
            path,
            header.line,
            format!("the header has no column {name:?}"),
        )
    })
}

/// An integer field (timestamps, ids): plain digits.
fn integer(path: &Path, rec: &Record, header: &Record, at: usize) -> Result<u64> {
    let text = rec.get(at).unwrap_or("");
    text.trim().parse::<u64>().map_err(|_| {
        error(
            path,
            rec.line,
            format!(
                "column {:?}: {:?} is not a whole number",
                header.get(at).unwrap_or(""),
                crate::base::printable::printable(&text[..text.len().min(80)])
            ),
        )
    })
}

/// A reader of the CSV file at `path`, past its header; `empty` is the fault of a file
/// without one.
fn with_header(path: &Path, empty: &str) -> Result<(CsvReader<BufReader<File>>, Record)> {
    let mut csv = CsvReader::new(super::open(path)?, path, "rocprofv3-csv");
    let mut header = Record::default();
    if !csv.next_record(&mut header)? {
        return Err(error(path, 1, empty.to_string()));
    }
    Ok((csv, header))
}

/// What a marker trace says: range name → pushes, and the pass ranges (not counted as ranges).
#[derive(Debug, Default)]
struct Markers {
    ranges: HashMap<String, u64>,
    passes: PassRanges,
}

/// The ranges of a marker trace, streamed (its pass ranges kept one entry a pass). Marks
/// (start = end) and roctx's own calls (`roctx...`, the control domain) are not ranges.
fn read_markers(path: &Path) -> Result<Markers> {
    let (mut csv, header) = with_header(path, "the marker trace is empty")?;
    let function = need(path, &header, "Function")?;
    let thread = need(path, &header, "Thread_Id")?;
    let start = need(path, &header, "Start_Timestamp")?;
    let end = need(path, &header, "End_Timestamp")?;
    let domain = column(&header, "Domain");
    let mut m = Markers::default();
    let mut rec = Record::default();
    while csv.next_record(&mut rec)? {
        if rec.len() != header.len() {
            return Err(error(
                path,
                rec.line,
                format!(
                    "{} fields where the header has {}: a cut or damaged row",
                    rec.len(),
                    header.len()
                ),
            ));
        }
        let (s, e) = (
            integer(path, &rec, &header, start)?,
            integer(path, &rec, &header, end)?,
        );
        let name = rec.get(function).unwrap_or("");
        let control = domain
            .and_then(|d| rec.get(d))
            .is_some_and(|d| d != "MARKER_CORE_API" && d != "MARKER_CORE_RANGE_API");
        if control || name.starts_with("roctx") || e == s {
            continue;
        }
        if crate::Phase::of_pass_range(name).is_some() {
            let t = integer(path, &rec, &header, thread)?;
            m.passes
                .add(t, (s, e), name)
                .map_err(|msg| error(path, rec.line, msg))?;
            continue;
        }
        if e < s {
            continue;
        }
        if let Some(n) = m.ranges.get_mut(name) {
            *n += 1;
        } else {
            if m.ranges.len() >= MAX_CELLS {
                return Err(error(
                    path,
                    rec.line,
                    format!("more than {MAX_CELLS} range names"),
                ));
            }
            m.ranges.insert(name.to_string(), 1);
        }
    }
    m.passes.sort();
    Ok(m)
}

fn read(path: &Path) -> Result<Imported> {
    let markers = match markers_beside(path) {
        Some(m) if m.is_file() => Some((read_markers(&m)?, m)),
        _ => None,
    };
    let (mut csv, header) = with_header(path, "the file is empty")?;
    let name_at = need(path, &header, "Kernel_Name")?;
    let thread_at = need(path, &header, "Thread_Id")?;
    let start_at = need(path, &header, "Start_Timestamp")?;
    let end_at = need(path, &header, "End_Timestamp")?;
    let mut builder = ProfileBuilder::new("rocprofv3", (false, false));
    match &markers {
        Some((_, m)) => builder.note(format!(
            "ranges from {}",
            crate::base::printable::printable(&m.display().to_string())
        )),
        None => builder.note(format!(
            "no {MARKERS} beside the kernel trace: kernels named L{{layer}}/{{Brick}} or after a built-in brick are taken as renamed by their range"
        )),
    }
    let err = |line: u64, m: String| error(path, line, m);
    let mut fell = [0u64; 2];
    let mut rec = Record::default();
    while csv.next_record(&mut rec)? {
        if rec.len() != header.len() {
            return Err(err(
                rec.line,
                format!(
                    "{} fields where the header has {}: a cut or damaged row",
                    rec.len(),
                    header.len()
                ),
            ));
        }
        let thread = integer(path, &rec, &header, thread_at)?;
        let start = integer(path, &rec, &header, start_at)?;
        let end = integer(path, &rec, &header, end_at)?;
        if end < start {
            return Err(err(
                rec.line,
                format!("the kernel ends ({end}) before it starts ({start})"),
            ));
        }
        let name = rec.get(name_at).unwrap_or("");
        let in_range = match &markers {
            Some((m, _)) => m.ranges.contains_key(name),
            None => match brick_of(name) {
                Ok((_, RowKey::Layer(_))) => true,
                Ok((brick, _)) => BrickId::ALL.iter().any(|b| b.name() == brick),
                Err(_) => false,
            },
        };
        builder.kernel(
            &Kernel {
                line: rec.line,
                thread,
                range: in_range.then_some(name),
                instance: name,
                time: KernelTime::Span { start, end },
                dram_bytes: None,
                flops: None,
                pass: pass_of(
                    markers.as_ref().map(|(m, _)| &m.passes),
                    thread,
                    (start, end),
                    &mut fell,
                ),
            },
            &err,
        )?;
    }
    if let Some((m, _)) = &markers {
        for note in super::pass_ranges::notes(m.passes.count(), fell[0], fell[1]) {
            builder.note(note);
        }
    }
    let mut imported = builder.finish(path)?;
    if let Some((m, _)) = markers {
        compare_calls(&mut imported, &m.ranges);
    }
    Ok(imported)
}

/// The pass of a kernel of `thread` over `span`, by time (spec/imports.md "rocprofv3"), counting
/// in `fell` the kernels inside a pass range, and those outside every pass range after their
/// thread's first.
pub(crate) fn pass_of<'a>(
    passes: Option<&'a PassRanges>,
    thread: u64,
    (start, end): (u64, u64),
    fell: &mut [u64; 2],
) -> Option<super::builder::PassOf<'a>> {
    match passes?.of(thread, start, end) {
        PassFound::In(pass) => {
            fell[0] += 1;
            Some(pass)
        }
        PassFound::Outside => {
            fell[1] += 1;
            None
        }
        PassFound::NoPass => None,
    }
}

/// Say where the markers count other calls than the kernels make: a range pushed with no
/// kernel in it, or two pushes of one range back to back (their kernels read as one call).
pub(crate) fn compare_calls(imported: &mut Imported, ranges: &HashMap<String, u64>) {
    let mut seen = 0usize;
    for c in &imported.profile.hardware_counters {
        let name = match c.row {
            RowKey::Layer(n) => format!("L{n}/{}", c.brick),
            RowKey::Model | RowKey::Unassigned => c.brick.clone(),
        };
        let pushed = ranges.get(&name).copied().unwrap_or(0);
        seen += 1;
        if pushed != c.calls {
            imported.notes.push(format!(
                "{}: the markers push the range {pushed} times, its kernels make {} calls",
                crate::base::printable::printable(&name),
                c.calls
            ));
        }
    }
    let without = ranges.len().saturating_sub(seen);
    if without > 0 {
        imported
            .notes
            .push(format!("{without} range names have no kernel"));
    }
}
