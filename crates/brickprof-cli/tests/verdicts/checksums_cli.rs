//! spec/checksums.md through the `brickprof` CLI: `diff` of checksum logs (`--all`, a version-1
//! log, logs of different algorithms) and the demo's checksum flags. The library's checksum
//! tests: tests/compare/checksums.rs at the workspace root.

use std::path::{Path, PathBuf};
use std::process::Command;

use brickprof::checksum::ChecksumLog;
use brickprof::{BrickId, BrickProfiler, ProfilerConfig};

/// tests/golden/checksums_v1.json of the library: written by brickprof 0.1.0 (`demo --layers 1
/// --prompt 2 --tokens 1 --checksums`).
fn v1_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/checksums_v1.json")
}

/// A small version-2 log hashed with the default algorithm.
fn v2_log() -> ChecksumLog {
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 1,
        checksums: true,
        ..ProfilerConfig::default()
    })
    .unwrap();
    prof.begin_layer(0);
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 4);
    prof.checksums()
        .record(Some(0), BrickId::RmsNorm, &[1.0, 2.0, 3.0, 4.0]);
    prof.end_layer();
    prof.end_pass(1).unwrap();
    prof.checksums().take_log()
}

/// The demo run of the golden files (`demo --layers 1 --prompt 2 --tokens 1 --checksums`, the
/// prompt token by token as those versions ran it: `--prefill per-token`) into `dir/NAME`, with
/// `--checksum-algorithm` when given; its checksums file.
fn golden_demo(dir: &Path, algorithm: Option<&str>) -> PathBuf {
    let out = dir.join(algorithm.unwrap_or("default"));
    let mut args = vec![
        "demo",
        "--layers",
        "1",
        "--prompt",
        "2",
        "--tokens",
        "1",
        "--prefill",
        "per-token",
        "--checksums",
        "--out",
        out.to_str().unwrap(),
    ];
    if let Some(a) = algorithm {
        args.extend(["--checksum-algorithm", a]);
    }
    let o = brickprof(&args);
    assert!(o.status.success(), "{o:?}");
    out.join("checksums.json")
}

/// `golden` (a file of tests/golden) diffs clean against the demo re-recorded with `algorithm`:
/// all 54 kernels bitwise equal.
fn assert_rerecorded_matches(golden: &Path, algorithm: &str) {
    let dir = tempfile::tempdir().unwrap();
    let again = golden_demo(dir.path(), Some(algorithm));
    let o = brickprof(&["diff", golden.to_str().unwrap(), again.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("54 kernels compared, 54 bitwise equal"),
        "{out}"
    );
}

#[test]
fn a_version_1_file_diffs_clean_against_the_demo_rerecorded_with_its_algorithm() {
    // spec/checksums.md "File format" (the CLI half of tests/compare/checksums.rs's
    // a_version_1_file_still_loads_and_compares_with_its_algorithm).
    assert_rerecorded_matches(&v1_fixture(), "fnv1a64");
}

#[test]
fn a_fnv1a64_lanes8_file_diffs_clean_against_the_demo_rerecorded_with_its_algorithm() {
    // spec/checksums.md "Algorithms": tests/golden/checksums_lanes8.json was written by
    // brickprof 0.3.0 before fnv1a64-lanes8-v2 (tests/compare/checksums.rs
    // a_fnv1a64_lanes8_file_still_loads_and_compares_among_its_own); the old algorithm is still
    // computed bit for bit.
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden/checksums_lanes8.json");
    assert_rerecorded_matches(&fixture, "fnv1a64-lanes8");
    // The default run names the new algorithm; diffing it against the old file is an error
    // that says which algorithm to re-run with.
    let dir = tempfile::tempdir().unwrap();
    let new = golden_demo(dir.path(), None);
    assert!(std::fs::read_to_string(&new)
        .unwrap()
        .contains("\"algorithm\": \"fnv1a64-lanes8-v2\""));
    let o = brickprof(&["diff", fixture.to_str().unwrap(), new.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("different algorithms")
            && err.contains("--checksum-algorithm fnv1a64-lanes8,"),
        "{err}"
    );
}

fn brickprof(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_brickprof"))
        .args(args)
        .output()
        .expect("run brickprof")
}

/// A small demo run into `dir` with extra arguments; its checksums file.
fn demo(dir: &Path, extra: &[&str]) -> std::path::PathBuf {
    let mut args = vec![
        "demo",
        "--layers",
        "3",
        "--prompt",
        "3",
        "--tokens",
        "3",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = brickprof(&args);
    assert!(o.status.success(), "demo failed: {o:?}");
    dir.join("checksums.json")
}

#[test]
fn diff_all_shows_how_far_each_kernel_moved() {
    // spec/checksums.md "Reading a divergence".
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ca = demo(a.path(), &["--checksums"]);
    let cb = demo(b.path(), &["--checksums", "--perturb", "1:qkv"]);
    let o = brickprof(&[
        "diff",
        ca.to_str().unwrap(),
        cb.to_str().unwrap(),
        "--all",
        "--rtol",
        "1e-7",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("Every differing kernel"), "{out}");
    // The perturbation moves the first kernel's mean beyond 1e-7 relative (one element of the
    // prompt's batched QkvProjection output, diluted over all its tokens' outputs).
    assert!(
        out.contains("First beyond tolerance: pass 0 layer 1 QkvProjection"),
        "{out}"
    );
    let row = out
        .lines()
        .find(|l| l.starts_with("pass 0 layer 1 QkvProjection"))
        .expect("a row for the perturbed kernel");
    assert_eq!(row.split_whitespace().count(), 5 + 1 + 4, "{row}");
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("rel.")),
        "{out}"
    );
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
}

#[test]
fn demo_sampling_flags_bound_the_checksums() {
    // spec/checksums.md "Recording": --checksum-every, --checksum-layers, --checksum-bricks.
    let dir = tempfile::tempdir().unwrap();
    let path = demo(
        dir.path(),
        &[
            "--checksum-every",
            "2",
            "--checksum-layers",
            "0,2",
            "--checksum-bricks",
            "qkv,down_proj",
        ],
    );
    let log = ChecksumLog::load(&path).unwrap();
    assert!(!log.entries.is_empty());
    for e in &log.entries {
        assert_eq!(e.key.pass % 2, 0, "{}", e.key);
        assert!(matches!(e.key.layer, Some(0 | 2)), "{}", e.key);
        assert!(["QkvProjection", "DownProjection"].contains(&e.key.brick.as_str()));
    }
    for (flag, value, needle) in [
        ("--checksum-every", "0", "--checksum-every"),
        ("--checksum-layers", "0,9", "layer 9"),
        ("--checksum-bricks", "qkv,nope", "unknown brick"),
        ("--checksum-algorithm", "md5", "md5"),
    ] {
        let o = brickprof(&["demo", "--no-save", "--tokens", "1", flag, value]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(needle), "{flag} {value}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn diff_of_logs_with_different_algorithms_is_a_clear_error() {
    // spec/checksums.md "Comparing runs": never a false divergence.
    let dir = tempfile::tempdir().unwrap();
    let fixture = v1_fixture();
    let current = dir.path().join("v2.json");
    v2_log().save(&current).unwrap();
    let o = brickprof(&["diff", fixture.to_str().unwrap(), current.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("different algorithms"), "{err}");
    assert!(
        err.contains("fnv1a64-lanes8-v2") && err.contains("fnv1a64,"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
