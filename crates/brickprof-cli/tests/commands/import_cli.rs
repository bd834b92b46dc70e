//! `brickprof import` (spec/imports.md "Command line"): the table and the counters of a vendor
//! file, the profile saved with -o for every other command, and one line with exit 2 for a
//! file it cannot read.

use std::path::{Path, PathBuf};

use crate::common::cli::{assert_clean_error, brickprof, text};

fn vendor(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/vendor")
        .join(name)
}

/// `brickprof import FILE -o OUT`, which must succeed: its stdout and stderr.
fn import_saving(file: &Path, out: &Path) -> (String, String) {
    let o = brickprof(&[
        "import",
        file.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{}: {stderr}", file.display());
    (stdout, stderr)
}

#[test]
fn import_prints_the_table_and_the_counters_and_saves_with_o() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ncu.json");
    let ncu = vendor("ncu_raw_nvtx.csv");
    let (stdout, stderr) = import_saving(&ncu, &out);
    assert!(stdout.contains("timeline ncu"), "{stdout}");
    // spec/imports.md "Command line": no host dispatch was timed and no pass marked, so the
    // table has no host-vs-device section and no pass footer.
    assert!(!stdout.contains("Host vs device"), "{stdout}");
    assert!(
        stdout.contains("| no passes marked") && !stdout.contains("0 passes"),
        "{stdout}"
    );
    assert!(stdout.contains("DownProjection"), "{stdout}");
    assert!(
        stdout.contains("Hardware counters (ncu), per call:"),
        "{stdout}"
    );
    // DownProjection in layer 0: one call of two kernels, 4.12 FLOP a byte.
    let down = stdout
        .lines()
        .find(|l| l.starts_with("DownProjection") && l.contains("layer 0"))
        .unwrap();
    assert!(
        down.contains(" 1        2 ") && down.ends_with("4.12"),
        "{down}"
    );
    assert!(stderr.contains("profile written to"), "{stderr}");
    // The saved profile is one every command reads.
    let r = brickprof(&["report", out.to_str().unwrap(), "--by-layer"]);
    assert!(r.status.success(), "{:?}", text(&r));
    assert!(text(&r).0.contains("timeline ncu"));
}

#[test]
fn import_of_rocprofv3_shows_the_kernels_outside_bricks() {
    let k = vendor("rocprofv3/3141_kernel_trace.csv");
    let o = brickprof(&["import", k.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("timeline rocprofv3"), "{stdout}");
    assert!(stdout.contains("(outside any brick)"), "{stdout}");
    assert!(
        !stdout.contains("Hardware counters"),
        "no counters in a kernel trace"
    );
}

#[test]
fn a_file_import_cannot_read_is_one_line_naming_it_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "a,b\n1,2\n").unwrap();
    assert_clean_error(
        &brickprof(&["import", other.to_str().unwrap()]),
        "other.csv",
    );
    let cut = dir.path().join("cut.csv");
    let bytes = std::fs::read(vendor("ncu_raw_nvtx.csv")).unwrap();
    std::fs::write(&cut, &bytes[..20_000]).unwrap();
    let o = brickprof(&["import", cut.to_str().unwrap()]);
    assert_clean_error(&o, "cut.csv: line 9");
    let missing = dir.path().join("missing.csv");
    assert_clean_error(
        &brickprof(&["import", missing.to_str().unwrap()]),
        "missing.csv",
    );
    // The output is not the input.
    let ncu = vendor("ncu_raw_nvtx.csv");
    let copy = dir.path().join("ncu.csv");
    std::fs::copy(&ncu, &copy).unwrap();
    let o = brickprof(&[
        "import",
        copy.to_str().unwrap(),
        "-o",
        copy.to_str().unwrap(),
    ]);
    assert_clean_error(&o, "ncu.csv");
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&ncu).unwrap());
    // Nor the marker trace read from beside it.
    for f in ["5_kernel_trace.csv", "5_marker_api_trace.csv"] {
        std::fs::copy(
            vendor(&format!("rocprofv3/3141{}", &f[1..])),
            dir.path().join(f),
        )
        .unwrap();
    }
    let (k, m) = (
        dir.path().join("5_kernel_trace.csv"),
        dir.path().join("5_marker_api_trace.csv"),
    );
    let before = std::fs::read(&m).unwrap();
    let o = brickprof(&["import", k.to_str().unwrap(), "-o", m.to_str().unwrap()]);
    assert_clean_error(&o, "5_marker_api_trace.csv");
    assert_eq!(std::fs::read(&m).unwrap(), before);
}

#[test]
fn import_reads_the_sqlite_formats_and_refuses_a_damaged_database() {
    let dir = tempfile::tempdir().unwrap();
    for (file, timeline, note) in [
        (
            "nsys/brickprof_run.sqlite",
            "timeline nsys",
            "--cuda-graph-trace node",
        ),
        (
            "rocpd/brickprof_run.db",
            "timeline rocprofv3",
            "range names have no kernel",
        ),
    ] {
        let path = vendor(file);
        let out = dir.path().join("p.json");
        let (stdout, stderr) = import_saving(&path, &out);
        assert!(stdout.contains(timeline), "{stdout}");
        assert!(stdout.contains("DownProjection"), "{stdout}");
        assert!(stderr.contains(note), "{stderr}");
        let r = brickprof(&["report", out.to_str().unwrap(), "--by-layer"]);
        assert!(r.status.success(), "{:?}", text(&r));
    }
    // Half a database: one line naming the file, exit 2.
    let bytes = std::fs::read(vendor("rocpd/brickprof_run.db")).unwrap();
    let cut = dir.path().join("cut.db");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = brickprof(&["import", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert_clean_error(&o, cut.to_str().unwrap());
}

#[test]
fn pass_ranges_give_passes_and_phases_that_report_phase_keeps() {
    // spec/imports.md "Pass ranges": the footer counts the passes; the saved profile's
    // decode passes are what `report --phase decode` keeps.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("passes.json");
    let (stdout, _) = import_saving(&vendor("ncu_raw_nvtx_passes.csv"), &out);
    assert!(stdout.contains("| 3 passes, 0 tokens |"), "{stdout}");
    assert!(!stdout.contains("no passes marked"), "{stdout}");
    assert!(stdout.contains("Phases (self %, p50)"), "{stdout}");
    let r = brickprof(&["report", out.to_str().unwrap(), "--phase", "decode"]);
    let (report, stderr) = text(&r);
    assert!(r.status.success(), "{stderr}");
    assert!(report.contains("| 2 passes, 0 tokens |"), "{report}");
    let rms = report
        .lines()
        .find(|l| l.starts_with("RmsNorm "))
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(rms.split_whitespace().nth(1), Some("4"), "{rms}");
}
