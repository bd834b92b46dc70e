//! spec/imports.md "Memory", for the SQLite imports: a database over 100 times the fixture
//! (its runs repeated, later in time) imports with the same peak Rust heap as the fixture,
//! SQLite's own memory stays within its bounded page cache, and every call, time and kernel
//! outside the bricks is counted exactly the repeat count times.

use std::path::Path;

use super::{assert_bounded, fixture, peak_during};

/// The peak Rust heap above the current one while `f` runs, and SQLite's own high-water
/// mark (its allocations bypass Rust's allocator), bytes.
fn peak_and_sqlite<T>(f: impl FnOnce() -> T) -> (T, usize, i64) {
    // SAFETY: plain status calls of the one SQLite library linked in.
    unsafe { rusqlite::ffi::sqlite3_memory_highwater(1) };
    let (out, peak) = peak_during(f);
    let sqlite = unsafe { rusqlite::ffi::sqlite3_memory_highwater(1) };
    (out, peak, sqlite)
}

/// A copy of `src` whose rows of `tables` are there `times` times, each copy shifted by
/// `shift` ns on the columns `times_cols` and by a fresh range on `id_cols`.
fn repeated(src: &Path, dst: &Path, times: i64, tables: &[(&str, &[&str], &[&str])]) {
    std::fs::copy(src, dst).unwrap();
    let db = rusqlite::Connection::open(dst).unwrap();
    let shift = 1_000_000_000i64;
    let ids = 10_000_000i64;
    db.execute_batch("BEGIN").unwrap();
    for (table, time_cols, id_cols) in tables {
        let cols: Vec<String> = {
            let s = db
                .prepare(&format!("SELECT * FROM \"{table}\" LIMIT 0"))
                .unwrap();
            s.column_names().map(|c| c.to_string()).collect()
        };
        db.execute_batch(&format!(
            "CREATE TEMP TABLE orig AS SELECT * FROM \"{table}\""
        ))
        .unwrap();
        for i in 1..times {
            let exprs: Vec<String> = cols
                .iter()
                .map(|c| {
                    if time_cols.contains(&c.as_str()) {
                        format!("\"{c}\" + {}", i * shift)
                    } else if id_cols.contains(&c.as_str()) {
                        format!("\"{c}\" + {}", i * ids)
                    } else {
                        format!("\"{c}\"")
                    }
                })
                .collect();
            db.execute_batch(&format!(
                "INSERT INTO \"{table}\" SELECT {} FROM orig",
                exprs.join(", ")
            ))
            .unwrap();
        }
        db.execute_batch("DROP TABLE orig").unwrap();
    }
    db.execute_batch("COMMIT").unwrap();
}

/// How many times each fixture's runs are repeated: enough for a file 100 times the
/// fixture's size (the fixtures are mostly page slack; the strings are not repeated).
const NSYS_TIMES: i64 = 1100;
const ROCPD_TIMES: i64 = 1800;
/// The base the peak is compared with: 10 runs (the peak heap levels off from there on:
/// SQLite's statements and schema, the 64 KiB head read to sniff the format).
const BASE_TIMES: i64 = 10;

const NSYS_TABLES: &[(&str, &[&str], &[&str])] = &[
    ("NVTX_EVENTS", &["start", "end"], &[]),
    (
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        &["start", "end"],
        &["correlationId"],
    ),
    (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        &["start", "end"],
        &["correlationId"],
    ),
];
const ROCPD_TABLES: &[(&str, &[&str], &[&str])] = &[
    ("rocpd_event_0000abcd", &[], &["id"]),
    (
        "rocpd_region_0000abcd",
        &["start", "end"],
        &["id", "event_id"],
    ),
    (
        "rocpd_kernel_dispatch_0000abcd",
        &["start", "end"],
        &["id", "event_id"],
    ),
];

/// The SQLite formats' check (run by the one test of the binary).
pub fn a_database_100_times_the_fixture_imports_exactly_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    for (file, tables, times) in [
        ("nsys/brickprof_run.sqlite", NSYS_TABLES, NSYS_TIMES),
        ("rocpd/brickprof_run.db", ROCPD_TABLES, ROCPD_TIMES),
    ] {
        let small = fixture(file);
        let base = dir.path().join(format!(
            "base-{}",
            small.file_name().unwrap().to_str().unwrap()
        ));
        let big = dir.path().join(format!(
            "big-{}",
            small.file_name().unwrap().to_str().unwrap()
        ));
        repeated(&small, &base, BASE_TIMES, tables);
        repeated(&small, &big, times, tables);
        cases.push((small, base, big, times));
    }
    for (small, base, big, times) in cases {
        let one = brickprof::import::import(&small).unwrap();
        let (_, one_peak, one_sqlite) =
            peak_and_sqlite(|| brickprof::import::import(&base).unwrap());
        let (many, many_peak, many_sqlite) =
            peak_and_sqlite(|| brickprof::import::import(&big).unwrap());
        eprintln!(
            "{}: peak Rust heap {one_peak} B ({BASE_TIMES}x), {many_peak} B ({times}x); SQLite high-water {one_sqlite} B, {many_sqlite} B",
            small.display()
        );
        assert_bounded(
            &small,
            &big,
            (BASE_TIMES as u64, one_peak),
            (times as u64, many_peak),
        );
        // SQLite: its page caches and sorter (measured: 0.4 MB for the fixture, 6.3 MB for
        // 1000 runs, 8.7 MB for 3000), far below the file's rows.
        assert!(
            many_sqlite < 16 << 20,
            "{}: SQLite took {many_sqlite} bytes",
            small.display()
        );
        let times = times as u64;
        assert_eq!(one.profile.bricks.len(), many.profile.bricks.len());
        crate::assert_every_call_times(&one.profile, &many.profile, times);
        let outside = |p: &brickprof::Profile| p.meta.outside_bricks.unwrap_or_default();
        assert_eq!(
            outside(&many.profile).kernels,
            times * outside(&one.profile).kernels
        );
        assert_eq!(
            outside(&many.profile).busy_ns,
            times * outside(&one.profile).busy_ns
        );
    }
}
