//! Nsight Compute's raw CSV (`ncu --nvtx --csv --page raw --metrics ...`), spec/imports.md
//! "Nsight Compute": lines before the header (`==PROF==` and the program's own output), a
//! header row, a units row, then one row a kernel. The NVTX push/pop stack of the launching
//! thread is one column; durations, DRAM bytes and FP instruction counts are metric columns,
//! their numbers with thousands separators, scaled by the units row.

use std::path::Path;

use super::builder::{Kernel, KernelTime, PassOf, ProfileBuilder};
use super::csv_records::{column, column_starting, number, CsvReader, Record};
use super::{Imported, Importer};
use crate::{Error, Result};

/// The Nsight Compute raw CSV importer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NcuCsv;

const NVTX_COLUMN: &str = "thread Domain:Push/Pop_Range";
const DURATION: &str = "gpu__time_duration.sum";
const DRAM_READ: &str = "dram__bytes_read.sum";
const DRAM_WRITE: &str = "dram__bytes_write.sum";
const FFMA: &str = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
const FADD: &str = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
const FMUL: &str = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
/// Lines read looking for the header before giving up.
const MAX_PREAMBLE_LINES: u64 = 100_000;

impl Importer for NcuCsv {
    fn name(&self) -> &'static str {
        "ncu-csv"
    }

    fn describe(&self) -> &'static str {
        "Nsight Compute raw CSV: ncu --nvtx --csv --page raw"
    }

    fn recognise(&self, _path: &Path, head: &[u8]) -> bool {
        let text = String::from_utf8_lossy(head);
        text.lines()
            .any(|l| l.starts_with("\"ID\",") && l.contains("\"Kernel Name\""))
    }

    fn read(&self, path: &Path) -> Result<Imported> {
        read(path)
    }
}

/// A metric column and the factor its unit scales values by.
#[derive(Debug, Clone, Copy)]
struct Metric {
    at: usize,
    factor: f64,
}

/// The columns a row is read from.
struct Columns {
    id: usize,
    width: usize,
    nvtx: Option<usize>,
    duration: Metric,
    /// DRAM bytes read and written: the columns present (none: no DRAM bytes).
    dram: Vec<Metric>,
    flops: Option<[Metric; 3]>,
}

fn read(path: &Path) -> Result<Imported> {
    let mut csv = CsvReader::new(super::open(path)?, path, "ncu-csv");
    let err = |line: u64, m: String| Error::Import {
        path: path.to_path_buf(),
        format: "ncu-csv",
        line,
        message: m,
    };
    // Skip what comes before the header.
    let mut header = Record::default();
    loop {
        let Some((line, text)) = csv.raw_line()? else {
            return Err(err(csv.line().max(1), "no header row (\"ID\",...,\"Kernel Name\",...): is this `ncu --csv --page raw` output?".into()));
        };
        if text.starts_with("\"ID\",") {
            csv.parse_from(line, &text, &mut header)?;
            break;
        }
        if line >= MAX_PREAMBLE_LINES {
            return Err(err(
                line,
                format!("no header row in the first {MAX_PREAMBLE_LINES} lines"),
            ));
        }
    }
    let need = |name: &str| {
        column(&header, name).ok_or_else(|| {
            err(
                header.line,
                format!("the header has no column {name:?}: collect it with --metrics {name}"),
            )
        })
    };
    let id = need("ID")?;
    need("Kernel Name")?;
    let duration_at = need(DURATION)?;
    let nvtx = column_starting(&header, NVTX_COLUMN);
    let dram_at = [column(&header, DRAM_READ), column(&header, DRAM_WRITE)];
    let flops_at = [
        column(&header, FFMA),
        column(&header, FADD),
        column(&header, FMUL),
    ];
    // The units row.
    let mut units = Record::default();
    if !csv.next_record(&mut units)? {
        return Err(err(
            header.line + 1,
            "the file ends after the header: no units row".into(),
        ));
    }
    if units.len() != header.len() || units.get(id) != Some("") {
        return Err(err(
            units.line,
            "the row after the header is not a units row (its \"ID\" is not empty)".into(),
        ));
    }
    let metric = |at: usize, kind: Unit| -> Result<Metric> {
        let unit = units.get(at).unwrap_or("");
        let factor = kind.factor(unit).ok_or_else(|| {
            err(
                units.line,
                format!(
                    "column {:?}: unit {unit:?} is not one of {}",
                    header.get(at).unwrap_or(""),
                    kind.known()
                ),
            )
        })?;
        Ok(Metric { at, factor })
    };
    let cols = Columns {
        id,
        width: header.len(),
        nvtx,
        duration: metric(duration_at, Unit::Time)?,
        dram: dram_at
            .iter()
            .flatten()
            .map(|&at| metric(at, Unit::Bytes))
            .collect::<Result<_>>()?,
        flops: match flops_at {
            [Some(a), Some(b), Some(c)] => Some([
                metric(a, Unit::Count)?,
                metric(b, Unit::Count)?,
                metric(c, Unit::Count)?,
            ]),
            _ => None,
        },
    };
    let mut builder = ProfileBuilder::new("ncu", (!cols.dram.is_empty(), cols.flops.is_some()));
    if cols.nvtx.is_none() {
        builder.note(
            "no NVTX column: every kernel is outside the bricks (run ncu with --nvtx)".to_string(),
        );
    }
    match dram_at {
        [Some(_), Some(_)] => {}
        [None, None] => builder.note(format!("no DRAM byte columns ({DRAM_READ}, {DRAM_WRITE})")),
        [Some(_), None] => {
            builder.note(format!("no {DRAM_WRITE} column: DRAM bytes are reads only"))
        }
        [None, Some(_)] => {
            builder.note(format!("no {DRAM_READ} column: DRAM bytes are writes only"))
        }
    }
    if cols.flops.is_none() {
        builder.note(format!(
            "no FP instruction columns ({FFMA}, {FADD}, {FMUL})"
        ));
    }
    let mut rec = Record::default();
    while csv.next_record(&mut rec)? {
        row(&rec, &cols, &header, &mut builder, &err)?;
    }
    builder.finish(path)
}

fn row(
    rec: &Record,
    cols: &Columns,
    header: &Record,
    builder: &mut ProfileBuilder,
    err: &dyn Fn(u64, String) -> Error,
) -> Result<()> {
    if rec.len() != cols.width {
        return Err(err(
            rec.line,
            format!(
                "{} fields where the header has {}: a cut or damaged row",
                rec.len(),
                cols.width
            ),
        ));
    }
    let value = |m: Metric, required: bool| -> Result<Option<u64>> {
        let text = rec.get(m.at).unwrap_or("");
        if !required && matches!(text.trim(), "n/a" | "") {
            return Ok(None);
        }
        let v = number(text)
            .filter(|v| *v >= 0.0)
            .map(|v| (v * m.factor).round())
            .filter(|v| *v < 1.8e19)
            .ok_or_else(|| {
                err(
                    rec.line,
                    format!(
                        "column {:?}: {:?} is not a count or duration",
                        header.get(m.at).unwrap_or(""),
                        crate::base::printable::printable(clip(text))
                    ),
                )
            })?;
        Ok(Some(v as u64))
    };
    if rec.get(cols.id).is_some_and(|s| s.trim().is_empty()) {
        return Err(err(
            rec.line,
            "a row without an \"ID\": a second units row?".into(),
        ));
    }
    let duration = value(cols.duration, true)?.unwrap_or(0);
    let mut dram_bytes = (!cols.dram.is_empty()).then_some(0u64);
    for &m in &cols.dram {
        let v = value(m, false)?;
        dram_bytes = dram_bytes.and_then(|d| Some(d.saturating_add(v?)));
    }
    let flops = match cols.flops {
        Some([ffma, fadd, fmul]) => match (
            value(ffma, false)?,
            value(fadd, false)?,
            value(fmul, false)?,
        ) {
            (Some(a), Some(b), Some(c)) => {
                Some(a.saturating_mul(2).saturating_add(b).saturating_add(c))
            }
            _ => None,
        },
        None => None,
    };
    let stack = cols.nvtx.and_then(|i| rec.get(i)).unwrap_or("");
    let (thread, range, pass) = nvtx_stack(stack).map_err(|m| err(rec.line, m))?;
    builder.kernel(
        &Kernel {
            line: rec.line,
            thread,
            range,
            instance: stack,
            time: KernelTime::Duration(duration),
            pass: pass.map(|name| PassOf {
                name,
                wall_ns: None,
            }),
            dram_bytes,
            flops,
        },
        err,
    )
}

/// What a push/pop stack cell says of a kernel: its launching thread, its innermost range that
/// is no pass range (the brick), and its innermost pass range (`pass/{phase}/{n}`).
type Stack<'a> = (u64, Option<&'a str>, Option<&'a str>);

/// The launching thread, the innermost brick range and the innermost pass range of a push/pop
/// stack cell, `512  "<default domain>:L0/RmsNorm:none:none:none:none:none:none" ` (one quoted
/// entry a range, outermost first; each `Domain:Name:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg`,
/// the name possibly holding `:`). An empty cell: thread 0, no range.
pub(crate) fn nvtx_stack(cell: &str) -> std::result::Result<Stack<'_>, String> {
    let cell = cell.trim();
    if cell.is_empty() {
        return Ok((0, None, None));
    }
    let digits = cell.bytes().take_while(u8::is_ascii_digit).count();
    let thread = cell[..digits].parse::<u64>().map_err(|_| {
        format!(
            "NVTX stack {:?} does not start with a thread id",
            crate::base::printable::printable(clip(cell))
        )
    })?;
    let mut rest = cell[digits..].trim_start();
    let (mut innermost, mut pass) = (None, None);
    while !rest.is_empty() {
        let Some(body) = rest.strip_prefix('"') else {
            return Err(format!(
                "NVTX stack {:?}: a range is not in quotes",
                crate::base::printable::printable(clip(cell))
            ));
        };
        let Some(end) = body.find('"') else {
            return Err(format!(
                "NVTX stack {:?}: a range's quote is not closed",
                crate::base::printable::printable(clip(cell))
            ));
        };
        let entry = &body[..end];
        // Domain first, then the name, then six fields: split the six off the end.
        let (front, _) = split_last(entry, 6).ok_or_else(|| {
            format!(
                "NVTX range {:?} is not Domain:Name:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
                crate::base::printable::printable(clip(entry))
            )
        })?;
        let name = match front.find(':') {
            Some(i) => &front[i + 1..],
            None => {
                return Err(format!(
                    "NVTX range {:?} has no domain",
                    crate::base::printable::printable(clip(entry))
                ))
            }
        };
        if crate::Phase::of_pass_range(name).is_some() {
            pass = Some(name);
        } else {
            innermost = Some(name);
        }
        rest = body[end + 1..].trim_start();
    }
    Ok((thread, innermost, pass))
}

/// `s` without its last `n` `:`-separated fields: (the front, the fields).
fn split_last(s: &str, n: usize) -> Option<(&str, &str)> {
    let mut cut = s.len();
    for _ in 0..n {
        cut = s[..cut].rfind(':')?;
    }
    Some((&s[..cut], &s[cut + 1..]))
}

fn clip(s: &str) -> &str {
    let mut end = s.len().min(80);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// What a metric measures, for its unit.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Time,
    Bytes,
    Count,
}

impl Unit {
    fn factor(self, unit: &str) -> Option<f64> {
        let u = unit.trim();
        match self {
            Unit::Time => match u {
                "ns" | "nsecond" => Some(1.0),
                "us" | "usecond" => Some(1e3),
                "ms" | "msecond" => Some(1e6),
                "s" | "second" => Some(1e9),
                _ => None,
            },
            Unit::Bytes => scaled(u, "byte"),
            Unit::Count => {
                if u.is_empty() {
                    Some(1.0)
                } else {
                    scaled(u, "inst")
                }
            }
        }
    }

    fn known(self) -> &'static str {
        match self {
            Unit::Time => "ns, us, ms, s (or nsecond, usecond, msecond, second)",
            Unit::Bytes => "byte, Kbyte, Mbyte, Gbyte, Tbyte",
            Unit::Count => "inst, Kinst, Minst, Ginst, Tinst (or none)",
        }
    }
}

/// The factor of `unit` as `base` with a decimal prefix (K, M, G, T).
fn scaled(unit: &str, base: &str) -> Option<f64> {
    let prefix = unit.strip_suffix(base)?;
    match prefix {
        "" => Some(1.0),
        "K" => Some(1e3),
        "M" => Some(1e6),
        "G" => Some(1e9),
        "T" => Some(1e12),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks() {
        let (t, r, p) =
            nvtx_stack("512  \"<default domain>:L0/RmsNorm:none:none:none:none:none:none\" ")
                .unwrap();
        assert_eq!((t, r, p), (512, Some("L0/RmsNorm"), None));
        let (_, r, _) = nvtx_stack(
            "7 \"d:pass:none:none:none:none:none:none\" \"d:a:b:none:none:none:none:none:none\"",
        )
        .unwrap();
        assert_eq!(r, Some("a:b"));
        assert_eq!(nvtx_stack("").unwrap(), (0, None, None));
        assert_eq!(nvtx_stack("12").unwrap(), (12, None, None));
        // spec/imports.md "Pass ranges": the pass range is no brick; the brick inside it is.
        let d = |n: &str| format!("\"d:{n}:none:none:none:none:none:none\"");
        let cell = format!("3 {} {}", d("pass/decode/4"), d("L1/RmsNorm"));
        assert_eq!(
            nvtx_stack(&cell).unwrap(),
            (3, Some("L1/RmsNorm"), Some("pass/decode/4"))
        );
        let cell = format!("3 {}", d("pass/prefill/0"));
        assert_eq!(
            nvtx_stack(&cell).unwrap(),
            (3, None, Some("pass/prefill/0"))
        );
        assert!(nvtx_stack("x \"d:a\"").is_err());
        assert!(nvtx_stack("1 \"d:a:b\"").is_err());
        assert!(nvtx_stack("1 \"d:a:1:2:3:4:5:6").is_err());
    }
}
