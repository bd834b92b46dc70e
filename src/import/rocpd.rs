//! rocprofv3's rocpd SQLite database (`rocprofv3 --kernel-trace --marker-trace
//! --output-format rocpd`), spec/imports.md "rocpd": read through the views the database
//! carries (rocprofiler-sdk's `data_views.sql`), so that the tables' layout may change under
//! them: `kernels` (one row a dispatch: `tid`, `region` — the innermost roctx range's message
//! when the kernel was dispatched —, `start`, `end`) and `regions` (roctx ranges are the rows
//! of category `MARKER_CORE...` that last, named by their message). The same rules as the
//! rocprofv3 CSV: a kernel whose region is a range name is in that range; consecutive kernels
//! of a thread in one range are one call.

use std::collections::HashMap;
use std::path::Path;

use super::builder::{brick_of, Kernel, KernelTime, ProfileBuilder, MAX_CELLS};
use super::pass_ranges::PassRanges;
use super::rocprof_csv::{compare_calls, pass_of};
use super::sqlite_db::{has_schema_name, Db};
use super::{Imported, Importer};
use crate::model::row_key::RowKey;
use crate::{BrickId, Result};

/// The rocpd SQLite importer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rocpd;

const FORMAT: &str = "rocpd";

impl Importer for Rocpd {
    fn name(&self) -> &'static str {
        FORMAT
    }

    fn describe(&self) -> &'static str {
        "rocprofv3 rocpd database: rocprofv3 --kernel-trace --marker-trace --output-format rocpd"
    }

    fn recognise(&self, path: &Path, head: &[u8]) -> bool {
        has_schema_name(path, head, |n| n.starts_with("rocpd_kernel_dispatch"))
    }

    fn read(&self, path: &Path) -> Result<Imported> {
        read(path)
    }
}

/// Range name → pushes, counted by SQLite (one row a name); pass ranges are no ranges.
fn markers(db: &Db) -> Result<HashMap<String, u64>> {
    let what = "reading the regions view";
    let mut stmt = db
        .conn
        .prepare(
            "SELECT name, count(*) FROM regions \
             WHERE category LIKE 'MARKER_CORE%' AND \"end\" > start AND name NOT LIKE 'roctx%' \
             GROUP BY name",
        )
        .map_err(|e| db.sql(what, e))?;
    let mut rows = stmt.query([]).map_err(|e| db.sql(what, e))?;
    let mut ranges = HashMap::new();
    while let Some(row) = rows.next().map_err(|e| db.sql(what, e))? {
        if ranges.len() >= MAX_CELLS {
            return Err(db.err(format!("more than {MAX_CELLS} range names")));
        }
        let name: Option<String> = row.get(0).map_err(|e| db.sql(what, e))?;
        let n: i64 = row.get(1).map_err(|e| db.sql(what, e))?;
        match name {
            Some(name) if crate::Phase::of_pass_range(&name).is_some() => {}
            Some(name) => {
                ranges.insert(name, n.max(0) as u64);
            }
            None => {}
        }
    }
    Ok(ranges)
}

/// The pass ranges among the regions (spec/imports.md "Pass ranges", **By time**), one entry a
/// pass range.
fn pass_ranges(db: &Db) -> Result<PassRanges> {
    let what = "reading the regions view's pass ranges";
    let mut stmt = db
        .conn
        .prepare(
            "SELECT tid, start, \"end\", name FROM regions \
             WHERE category LIKE 'MARKER_CORE%' AND name LIKE 'pass/%' AND \"end\" <> start",
        )
        .map_err(|e| db.sql(what, e))?;
    let mut rows = stmt.query([]).map_err(|e| db.sql(what, e))?;
    let mut passes = PassRanges::default();
    while let Some(row) = rows.next().map_err(|e| db.sql(what, e))? {
        let name: Option<String> = row.get(3).map_err(|e| db.sql(what, e))?;
        let Some(name) = name.filter(|n| crate::Phase::of_pass_range(n).is_some()) else {
            continue;
        };
        let int = |i: usize| row.get::<_, i64>(i).map_err(|e| db.sql(what, e));
        let (tid, start, end) = (int(0)?, int(1)?, int(2)?);
        if tid < 0 || start < 0 || end < 0 {
            return Err(db.err(format!(
                "the pass range {:?} has a negative thread or time",
                crate::base::printable::printable(&name)
            )));
        }
        passes
            .add(tid as u64, (start as u64, end as u64), &name)
            .map_err(|m| db.err(m))?;
    }
    passes.sort();
    Ok(passes)
}

fn read(path: &Path) -> Result<Imported> {
    let db = Db::open(path, FORMAT)?;
    db.require(&["kernels", "regions"])?;
    let ranges = markers(&db)?;
    let passes = pass_ranges(&db)?;
    let mut fell = [0u64; 2];
    let mut builder = ProfileBuilder::new("rocprofv3", (false, false));
    if ranges.is_empty() {
        builder.note(
            "no roctx range in the regions (record with --marker-trace): kernels whose region is named L{layer}/{Brick} or after a built-in brick are taken as in that range"
                .to_string(),
        );
    }
    let what = "reading the kernels view";
    let mut stmt = db
        .conn
        .prepare("SELECT tid, region, start, \"end\" FROM kernels ORDER BY tid, start, id")
        .map_err(|e| db.sql(what, e))?;
    let mut rows = stmt.query([]).map_err(|e| db.sql(what, e))?;
    let err = |_: u64, m: String| db.err(m);
    let mut row_no = 0u64;
    while let Some(row) = rows.next().map_err(|e| db.sql(what, e))? {
        row_no += 1;
        let int = |i: usize, col: &str| -> Result<i64> {
            row.get::<_, i64>(i)
                .map_err(|e| db.sql(&format!("kernel {row_no}: {col}"), e))
        };
        let (tid, start, end) = (int(0, "tid")?, int(2, "start")?, int(3, "end")?);
        if end < start || start < 0 || tid < 0 {
            return Err(db.err(format!(
                "kernel {row_no}: thread {tid}, ends ({end}) before it starts ({start}) or a negative value"
            )));
        }
        let region: Option<String> = row
            .get(1)
            .map_err(|e| db.sql(&format!("kernel {row_no}: region"), e))?;
        let name = region.as_deref().unwrap_or("");
        let in_range = !name.is_empty()
            && if ranges.is_empty() {
                match brick_of(name) {
                    Ok((_, RowKey::Layer(_))) => true,
                    Ok((brick, _)) => BrickId::ALL.iter().any(|b| b.name() == brick),
                    Err(_) => false,
                }
            } else {
                ranges.contains_key(name)
            };
        builder.kernel(
            &Kernel {
                line: row_no,
                thread: tid as u64,
                range: in_range.then_some(name),
                instance: name,
                time: KernelTime::Span {
                    start: start as u64,
                    end: end as u64,
                },
                dram_bytes: None,
                flops: None,
                pass: pass_of(
                    Some(&passes),
                    tid as u64,
                    (start as u64, end as u64),
                    &mut fell,
                ),
            },
            &err,
        )?;
    }
    drop(rows);
    drop(stmt);
    for note in super::pass_ranges::notes(passes.count(), fell[0], fell[1]) {
        builder.note(note);
    }
    let mut imported = builder.finish(path)?;
    if !ranges.is_empty() {
        compare_calls(&mut imported, &ranges);
    }
    Ok(imported)
}
