//! spec/imports.md "Nsight Systems" and "rocpd": the notes say what the file lacks, and
//! damaged databases (cut, mutated, missing tables, values of the wrong type) give an error
//! naming the file, never a panic. (That each SQLite fixture imports exactly what
//! scripts/vendor-check.py finds is checked with the other formats', in fixtures.rs.)

use std::path::{Path, PathBuf};

use brickprof::import::import;
use brickprof::Error;

use super::fixture;
use super::fixtures::sqlite_cases;

#[test]
fn nsys_bricks_threads_graphs_and_kernels_outside() {
    let imp = import(fixture("nsys/brickprof_run.sqlite")).unwrap();
    let p = &imp.profile;
    assert_eq!(p.meta.timeline.name(), "nsys");
    assert_eq!(p.meta.layers, 2);
    // The warm-up kernel (before any range) and the one without its runtime row.
    let outside = p.meta.outside_bricks.unwrap();
    assert_eq!((outside.kernels, outside.busy_ns), (2, 5000 + 1234));
    // A range named through textId (QkvProjection in layer 1) is read like a text one.
    let qkv = p.brick("QkvProjection").unwrap();
    assert_eq!(qkv.rows.len(), 2);
    assert!(qkv.builtin);
    // A call runs from its first kernel's start to its last kernel's end, across streams:
    // Sampling's second kernel starts before its first.
    let sampling = p.brick("Sampling").unwrap();
    assert_eq!(
        (
            sampling.stats.summary().count,
            sampling.stats.summary().total_ns
        ),
        (1, 4400)
    );
    // The pass ranges hold no kernel directly: no brick of theirs.
    assert!(p.brick("pass 0").is_none());
    assert_eq!(imp.notes.len(), 1, "{:?}", imp.notes);
    assert!(
        imp.notes[0].contains("1 CUDA graph launch but no kernel of theirs")
            && imp.notes[0].contains("--cuda-graph-trace node"),
        "{:?}",
        imp.notes
    );
}

#[test]
fn a_real_nsys_export_without_brickprof_names_gives_custom_bricks() {
    // Extra-P's test data: Nsight Systems 2022.1 on Windows, ranges named by call path.
    let imp = import(fixture("nsys/extrap_profile1.sqlite")).unwrap();
    let p = &imp.profile;
    assert_eq!(p.meta.layers, 0);
    assert_eq!(p.bricks.len(), 12);
    assert!(p.bricks.iter().all(|b| !b.builtin));
    assert!(p.brick("main->process->phase2->kernel2").is_some());
    assert!(p.meta.outside_bricks.is_none());
    assert!(imp.notes.is_empty(), "{:?}", imp.notes);
}

#[test]
fn rocpd_bricks_markers_and_kernels_outside() {
    let imp = import(fixture("rocpd/brickprof_run.db")).unwrap();
    let p = &imp.profile;
    assert_eq!(p.meta.timeline.name(), "rocprofv3");
    assert_eq!(p.meta.layers, 2);
    let outside = p.meta.outside_bricks.unwrap();
    assert_eq!((outside.kernels, outside.busy_ns), (2, 6000 + 400));
    // L1/ResidualAdd was pushed with no kernel: a note, no brick.
    assert!(p.brick("ResidualAdd").is_none());
    assert!(
        imp.notes
            .iter()
            .any(|n| n.contains("L1/ResidualAdd") || n.contains("1 range names have no kernel")),
        "{:?}",
        imp.notes
    );
}

/// A copy of a fixture in a temporary folder.
fn copy(dir: &Path, file: &str) -> PathBuf {
    let to = dir.join(Path::new(file).file_name().unwrap());
    std::fs::copy(fixture(file), &to).unwrap();
    to
}

/// The error must name the file and carry no raw control character.
fn fails(path: &Path) -> Error {
    let e = import(path).expect_err("a damaged database imports");
    let text = e.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
    e
}

fn edit(path: &Path, sql: &str) {
    let db = rusqlite::Connection::open(path).unwrap();
    db.execute_batch(sql).unwrap();
}

#[test]
fn missing_tables_and_bad_values_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    for (file, sql, says) in [
        (
            "nsys/brickprof_run.sqlite",
            "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
        ),
        (
            "nsys/brickprof_run.sqlite",
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE rowid = 3",
            "start",
        ),
        (
            "nsys/brickprof_run.sqlite",
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 1 WHERE rowid = 3",
            "before it starts",
        ),
        (
            "nsys/brickprof_run.sqlite",
            "UPDATE NVTX_EVENTS SET text = 'L99999/RmsNorm' WHERE text = 'L0/RmsNorm'",
            "over the limit",
        ),
        (
            "nsys/brickprof_run.sqlite",
            "UPDATE NVTX_EVENTS SET start = x'00ff' WHERE rowid = 2",
            "NVTX_EVENTS",
        ),
        ("rocpd/brickprof_run.db", "DROP VIEW kernels", "kernels"),
        (
            "rocpd/brickprof_run.db",
            "UPDATE rocpd_kernel_dispatch_0000abcd SET \"end\" = 0 WHERE id = 2",
            "before it starts",
        ),
        (
            "rocpd/brickprof_run.db",
            "UPDATE rocpd_kernel_dispatch_0000abcd SET start = 'x' WHERE id = 2",
            "start",
        ),
    ] {
        let path = copy(dir.path(), file);
        edit(&path, sql);
        let e = fails(&path);
        assert!(e.to_string().contains(says), "{sql}: {e}");
    }
    // Neither format's tables: not a file brickprof imports, saying why.
    let path = copy(dir.path(), "rocpd/brickprof_run.db");
    edit(
        &path,
        "DROP VIEW kernels; DROP VIEW rocpd_kernel_dispatch; DROP TABLE rocpd_kernel_dispatch_0000abcd",
    );
    assert!(fails(&path)
        .to_string()
        .contains("neither an Nsight Systems export"));
}

#[test]
fn cut_and_mutated_databases_give_errors_or_profiles_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    for (file, _, _) in sqlite_cases() {
        let bytes = std::fs::read(fixture(file)).unwrap();
        let path = dir.path().join("cut.sqlite");
        let mut errors = 0;
        for cut in [
            20,
            100,
            4096,
            bytes.len() / 3,
            bytes.len() / 2,
            bytes.len() - 4096,
            bytes.len() - 1,
        ] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            if import(&path).is_err() {
                fails(&path);
                errors += 1;
            }
        }
        assert!(errors >= 3, "{file}: cut files read as whole ones");
        // Bytes overwritten page by page: an error or a profile, never a panic.
        let page = 4096;
        for at in (page..bytes.len()).step_by(page * 2) {
            let mut m = bytes.clone();
            for b in &mut m[at..(at + 64).min(bytes.len())] {
                *b ^= 0x5a;
            }
            std::fs::write(&path, &m).unwrap();
            if import(&path).is_err() {
                fails(&path);
            }
        }
    }
}
