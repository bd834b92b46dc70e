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

/// The line of `stdout` starting with `start` and holding `has`, after the line `after`.
fn line_after<'a>(stdout: &'a str, after: &str, start: &str, has: &str) -> &'a str {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with(after))
        .find(|l| l.starts_with(start) && l.contains(has))
        .unwrap_or_else(|| panic!("no {start:?} {has:?} line after {after:?} in {stdout}"))
}

#[test]
fn spec_imports_command_line_counters_survive_o_and_report_shows_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ncu.json");
    let ncu = vendor("ncu_raw_nvtx.csv");
    let o = brickprof(&["import", ncu.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{:?}", text(&o));
    let imported = text(&o).0;
    let saved = std::fs::read_to_string(&out).unwrap();
    assert!(saved.contains("\"hardware_counters\""), "{saved}");
    // `report` of the saved profile prints the same counters, and the same hint.
    let r = brickprof(&["report", out.to_str().unwrap()]);
    let (stdout, stderr) = text(&r);
    assert!(r.status.success(), "{stderr}");
    let counters = |s: &str| -> String {
        s.lines()
            .skip_while(|l| !l.starts_with("Hardware counters"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(!counters(&stdout).is_empty(), "{stdout}");
    assert_eq!(counters(&stdout), counters(&imported));
    // `merge` of the saved profile with itself adds them: the same figures a call, twice the
    // calls.
    let merged = dir.path().join("merged.json");
    let m = brickprof(&[
        "merge",
        out.to_str().unwrap(),
        out.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert!(m.status.success(), "{:?}", text(&m));
    let r = brickprof(&["report", merged.to_str().unwrap()]);
    let (stdout, _) = text(&r);
    let lm = line_after(&stdout, "Hardware counters", "LmHead", "model");
    assert!(lm.contains("     2        2 "), "{lm}");
    assert!(lm.ends_with("63.97"), "{lm}");
}

#[test]
fn spec_imports_measured_roofline_with_peaks_and_a_hint_without() {
    let ncu = vendor("ncu_raw_nvtx.csv");
    let o = brickprof(&["import", ncu.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(
        stdout
            .matches("Measured roofline: give the device's peaks")
            .count(),
        1,
        "{stdout}"
    );
    let o = brickprof(&["import", ncu.to_str().unwrap(), "--peaks", "67000,4800"]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(!stdout.contains("give the device's peaks"), "{stdout}");
    assert!(
        stdout.contains("Measured roofline (user: 67000 GFLOP/s, 4800 GB/s DRAM):"),
        "{stdout}"
    );
    // RmsNorm, layer 0: 8,388,608 FLOPs, 34,443,008 bytes, 16,096 ns: 0.24 FLOP/B, 521.2
    // GFLOP/s under a roof of 0.2435 x 4800 = 1169.0: 44.6 %, memory-bound.
    let ai = 8_388_608.0 / 34_443_008.0;
    let roof = ai * 4_800.0;
    let pct = 8_388_608.0 / 16_096.0 / roof * 100.0;
    let rms = line_after(&stdout, "Measured roofline", "RmsNorm", "layer 0");
    let want = format!(
        "{:>8} {:>16} {:>16} {:>8} {:>8}",
        format!("{ai:.2}"),
        "521.2 GFLOP/s",
        format!("{roof:.1} GFLOP/s"),
        format!("{pct:.1}%"),
        "memory"
    );
    assert!(rms.ends_with(&want), "{rms} / {want}");
    // QkvProjection: 32 FLOP/B, compute-bound under 67 TFLOP/s.
    let qkv = line_after(&stdout, "Measured roofline", "QkvProjection", "layer 1");
    assert!(
        qkv.contains("67000.0 GFLOP/s") && qkv.ends_with("compute"),
        "{qkv}"
    );
    // A preset works as in `report`; a bad value is exit 2.
    let o = brickprof(&["import", ncu.to_str().unwrap(), "--peaks", "h100-sxm"]);
    assert!(text(&o).0.contains("Measured roofline (h100-sxm:"));
    let o = brickprof(&["import", ncu.to_str().unwrap(), "--peaks", "abacus"]);
    assert_eq!(o.status.code(), Some(2));
    // Reads only: bytes a call, the DRAM roof.
    let rename = vendor("ncu_raw_nvtx_rename.csv");
    let o = brickprof(&["import", rename.to_str().unwrap(), "--peaks", "67000,4800"]);
    let (stdout, _) = text(&o);
    let rms = line_after(&stdout, "Measured roofline", "RmsNorm", "layer 0");
    assert!(
        rms.contains("4800.0 GB/s") && rms.ends_with("memory"),
        "{rms}"
    );
    // No counters in the file: said once, on stderr.
    let k = vendor("rocprofv3/3141_kernel_trace.csv");
    let o = brickprof(&["import", k.to_str().unwrap(), "--peaks", "67000,4800"]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(!stdout.contains("Measured roofline"), "{stdout}");
    assert!(
        stderr.contains("the file counted no DRAM bytes or FLOPs"),
        "{stderr}"
    );
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
