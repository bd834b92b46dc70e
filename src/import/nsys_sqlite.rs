//! Nsight Systems' SQLite export (`nsys export --type sqlite`), spec/imports.md "Nsight
//! Systems": NVTX push/pop ranges (`NVTX_EVENTS`, event type 59, the name in `text` or
//! `textId` → `StringIds`), the CUDA runtime calls (`CUPTI_ACTIVITY_KIND_RUNTIME`) of the
//! same thread that start inside a range, and the kernels (`CUPTI_ACTIVITY_KIND_KERNEL`) those
//! calls launched, joined by `correlationId`. A kernel belongs to the innermost range open on
//! its launching thread when the launch call started.
//!
//! Two statements are stepped side by side, both ordered by thread then time: the ranges,
//! and the kernels by their launch. One stack of open ranges, for the current thread only, is
//! all that is held: memory grows with the nesting depth, never with the rows.

use std::path::Path;

use rusqlite::Row;

use super::builder::{Kernel, KernelTime, PassOf, ProfileBuilder};
use super::sqlite_db::{has_schema_name, Db};
use super::{Imported, Importer};
use crate::Result;

/// The Nsight Systems SQLite importer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NsysSqlite;

const FORMAT: &str = "nsys-sqlite";
/// `NVTX_EVENTS.eventType` of a push/pop range (NvtxPushPopRange).
const PUSH_POP: i64 = 59;
/// The deepest range nesting read on one thread.
const MAX_DEPTH: usize = 4096;

impl Importer for NsysSqlite {
    fn name(&self) -> &'static str {
        FORMAT
    }

    fn describe(&self) -> &'static str {
        "Nsight Systems SQLite export: nsys profile --trace cuda,nvtx, then nsys export --type sqlite"
    }

    fn recognise(&self, path: &Path, head: &[u8]) -> bool {
        has_schema_name(path, head, |n| {
            n == "CUPTI_ACTIVITY_KIND_KERNEL" || n == "NVTX_EVENTS"
        })
    }

    fn read(&self, path: &Path) -> Result<Imported> {
        read(path)
    }
}

/// One push/pop range as read.
struct Range {
    tid: i64,
    start: i64,
    end: i64,
    id: i64,
    name: Option<String>,
}

/// An open range on the current thread's stack.
struct Open {
    start: i64,
    end: i64,
    instance: String,
    name: String,
}

fn range_of(db: &Db, row: &Row<'_>) -> Result<Range> {
    let get = |i: usize, what: &str| -> Result<i64> {
        row.get::<_, i64>(i)
            .map_err(|e| db.sql(&format!("NVTX_EVENTS.{what}"), e))
    };
    let end: Option<i64> = row.get(2).map_err(|e| db.sql("NVTX_EVENTS.end", e))?;
    Ok(Range {
        tid: get(0, "globalTid")?,
        start: get(1, "start")?,
        // A range still open when the capture stopped lasts to the end.
        end: end.unwrap_or(i64::MAX),
        id: get(3, "rowid")?,
        name: row
            .get::<_, Option<String>>(4)
            .map_err(|e| db.sql("NVTX_EVENTS.text", e))?,
    })
}

/// Kernels by their launch: a kernel without its runtime call has thread -1 (outside).
const KERNELS_SQL: &str = "SELECT IFNULL(r.globalTid, -1), IFNULL(r.start, 0), k.start, k.end \
     FROM CUPTI_ACTIVITY_KIND_KERNEL k \
     LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId \
       AND (k.globalPid IS NULL OR r.globalTid IS NULL \
            OR k.globalPid = r.globalTid - (r.globalTid % 16777216)) \
     ORDER BY 1, 2, k.start, k.rowid";

/// The push/pop ranges by thread and start, outermost first (none without `NVTX_EVENTS`).
fn ranges_sql(db: &Db, has_nvtx: bool, has_strings: bool) -> Result<String> {
    let name = match (db.has_column("NVTX_EVENTS", "textId")?, has_strings) {
        (true, true) => "COALESCE(n.text, (SELECT s.value FROM StringIds s WHERE s.id = n.textId))",
        _ => "n.text",
    };
    Ok(if has_nvtx {
        format!(
            "SELECT n.globalTid, n.start, n.end, n.rowid, {name} FROM NVTX_EVENTS n \
             WHERE n.eventType = {PUSH_POP} AND n.globalTid IS NOT NULL \
             ORDER BY n.globalTid, n.start, n.end IS NULL DESC, n.end DESC, n.rowid"
        )
    } else {
        "SELECT 0, 0, 0, 0, NULL WHERE 0".to_string()
    })
}

/// The ranges query, stepped beside the kernels query: one range read ahead.
struct RangeCursor<'r, 's> {
    rows: &'r mut rusqlite::Rows<'s>,
    pending: Option<Range>,
    done: bool,
}

impl RangeCursor<'_, '_> {
    /// Push onto `stack` every range of thread `tid` that starts by `launch` (popping the ones
    /// that ended before it); ranges of earlier threads are passed over.
    fn open_until(
        &mut self,
        db: &Db,
        tid: i64,
        launch: i64,
        stack: &mut Vec<Open>,
        unnamed: &mut u64,
    ) -> Result<()> {
        loop {
            if self.pending.is_none() && !self.done {
                match self
                    .rows
                    .next()
                    .map_err(|e| db.sql("reading NVTX_EVENTS", e))?
                {
                    Some(r) => self.pending = Some(range_of(db, r)?),
                    None => self.done = true,
                }
            }
            let Some(r) = self.pending.as_ref() else {
                return Ok(());
            };
            if r.tid < tid {
                self.pending = None;
                continue;
            }
            if r.tid > tid || r.start > launch || tid < 0 {
                return Ok(());
            }
            let r = self.pending.take().expect("a pending range");
            while stack.last().is_some_and(|o| o.end <= r.start) {
                stack.pop();
            }
            let Some(name) = r.name else {
                *unnamed += 1;
                continue;
            };
            if stack.len() >= MAX_DEPTH {
                return Err(db.err(format!(
                    "NVTX ranges nest deeper than {MAX_DEPTH} on one thread"
                )));
            }
            stack.push(Open {
                start: r.start,
                end: r.end,
                instance: r.id.to_string(),
                name,
            });
        }
    }
}

fn read(path: &Path) -> Result<Imported> {
    let db = Db::open(path, FORMAT)?;
    db.require(&["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"])?;
    let has_nvtx = db.has("NVTX_EVENTS")?;
    let has_strings = db.has("StringIds")?;
    let mut builder = ProfileBuilder::new("nsys", (false, false));
    if !has_nvtx {
        builder.note(
            "no NVTX_EVENTS table: every kernel is outside the bricks (record with --trace cuda,nvtx)"
                .to_string(),
        );
    }
    graph_note(&db, &mut builder, has_strings)?;

    let ranges_sql = ranges_sql(&db, has_nvtx, has_strings)?;

    let mut range_stmt = db
        .conn
        .prepare(&ranges_sql)
        .map_err(|e| db.sql("reading NVTX_EVENTS", e))?;
    let mut ranges = range_stmt
        .query([])
        .map_err(|e| db.sql("reading NVTX_EVENTS", e))?;
    let mut kernel_stmt = db
        .conn
        .prepare(KERNELS_SQL)
        .map_err(|e| db.sql("reading the kernels", e))?;
    let mut kernels = kernel_stmt
        .query([])
        .map_err(|e| db.sql("reading the kernels", e))?;

    let mut cursor = RangeCursor {
        rows: &mut ranges,
        pending: None,
        done: false,
    };
    let mut stack: Vec<Open> = Vec::new();
    let mut current: Option<i64> = None;
    let mut unnamed = 0u64;
    let mut row_no = 0u64;
    let err = |_: u64, m: String| db.err(m);
    while let Some(row) = kernels
        .next()
        .map_err(|e| db.sql("reading the kernels", e))?
    {
        row_no += 1;
        let col = |i: usize, what: &str| -> Result<i64> {
            row.get::<_, i64>(i)
                .map_err(|e| db.sql(&format!("kernel {row_no}: {what}"), e))
        };
        let (tid, launch, start, end) = (
            col(0, "globalTid")?,
            col(1, "launch start")?,
            col(2, "start")?,
            col(3, "end")?,
        );
        if end < start || start < 0 {
            return Err(db.err(format!(
                "kernel {row_no} ends ({end}) before it starts ({start})"
            )));
        }
        if current != Some(tid) {
            stack.clear();
            current = Some(tid);
        }
        // Take every range of this thread that starts by the launch.
        cursor.open_until(&db, tid, launch, &mut stack, &mut unnamed)?;
        while stack.last().is_some_and(|o| o.end <= launch) {
            stack.pop();
        }
        // The innermost brick range, and the innermost pass range (spec/imports.md "Pass
        // ranges"): the bricks' ranges nest inside the pass's.
        let innermost = |pass: bool| {
            let mut open = stack.iter().rev();
            let found = open.find(|o| crate::Phase::of_pass_range(&o.name).is_some() == pass);
            found.filter(|_| tid >= 0)
        };
        let (top, pass) = (innermost(false), innermost(true));
        builder.kernel(
            &Kernel {
                line: row_no,
                thread: tid as u64,
                range: top.map(|o| o.name.as_str()),
                instance: top.map_or("", |o| o.instance.as_str()),
                time: KernelTime::Span {
                    start: start as u64,
                    end: end as u64,
                },
                dram_bytes: None,
                flops: None,
                pass: pass.map(|o| PassOf {
                    name: &o.name,
                    // A range open to the end of the capture: its kernels' time.
                    wall_ns: (o.end != i64::MAX).then(|| o.end.saturating_sub(o.start) as u64),
                }),
            },
            &err,
        )?;
    }
    if unnamed > 0 {
        builder.note(format!(
            "{unnamed} NVTX ranges without a name were passed over (their kernels belong to the enclosing range)"
        ));
    }
    drop(kernels);
    drop(cursor);
    drop(ranges);
    drop(kernel_stmt);
    drop(range_stmt);
    builder.finish(path)
}

/// Say when the file has CUDA graph launches but no kernel of theirs: Nsight Systems records
/// a graph's kernels one by one only with `--cuda-graph-trace node`.
fn graph_note(db: &Db, builder: &mut ProfileBuilder, has_strings: bool) -> Result<()> {
    if !has_strings {
        return Ok(());
    }
    let (launches, kernels): (i64, i64) = db
        .conn
        .query_row(
            "SELECT count(*), IFNULL(SUM(EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL k \
                 WHERE k.correlationId = r.correlationId)), 0) \
             FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
             WHERE s.value LIKE 'cudaGraphLaunch%'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(|e| db.sql("counting graph launches", e))?;
    if launches > 0 && kernels == 0 {
        let what = if launches == 1 {
            "1 CUDA graph launch".to_string()
        } else {
            format!("{launches} CUDA graph launches")
        };
        builder.note(format!(
            "{what} but no kernel of theirs: their kernels are missing from the bricks (record with --cuda-graph-trace node)"
        ));
    } else if launches > kernels {
        builder.note(format!(
            "{} of {launches} CUDA graph launches have no kernel (record with --cuda-graph-trace node)",
            launches - kernels
        ));
    }
    Ok(())
}
