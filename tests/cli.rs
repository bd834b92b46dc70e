//! The `brickprof` binary, run as a user would: every subcommand, exit codes, bad input.

use std::path::Path;
use std::process::{Command, Output};

fn brickprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_brickprof"))
        .args(args)
        .output()
        .expect("run brickprof")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A small, quick demo run writing into `dir`, with extra arguments.
fn demo(dir: &Path, extra: &[&str]) -> Output {
    let out = dir.to_str().unwrap();
    let mut args = vec![
        "demo", "--layers", "3", "--prompt", "3", "--tokens", "3", "--out", out,
    ];
    args.extend_from_slice(extra);
    let o = brickprof(&args);
    assert!(o.status.success(), "demo failed: {:?}", text(&o));
    o
}

/// Assert a one-line error naming `needle`, exit 2, no panic.
fn assert_clean_error(o: &Output, needle: &str) {
    let (_, err) = text(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "expected {needle:?} in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
}

#[test]
fn demo_prints_a_table_and_writes_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let o = demo(dir.path(), &[]);
    let (out, _) = text(&o);
    for needle in ["QkvProjection", "Category", "tokens/s", "Attention", "p99"] {
        assert!(out.contains(needle), "{needle} missing from\n{out}");
    }
    assert!(dir.path().join("profile.json").is_file());
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
}

#[test]
fn diff_names_the_perturbed_kernel_and_exits_1() {
    // spec/checksums.md "Comparing runs", end to end.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    demo(a.path(), &["--checksums"]);
    demo(b.path(), &["--checksums", "--perturb", "1:qkv"]);
    let ca = a.path().join("checksums.json");
    let cb = b.path().join("checksums.json");
    let o = brickprof(&["diff", ca.to_str().unwrap(), cb.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("First divergence: pass 0 layer 1 QkvProjection"),
        "{out}"
    );
    let same = brickprof(&["diff", ca.to_str().unwrap(), ca.to_str().unwrap()]);
    assert_eq!(same.status.code(), Some(0), "{:?}", text(&same));
    assert!(text(&same).0.contains("MATCH"));
}

#[test]
fn diff_finds_the_nan_origin() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    demo(a.path(), &["--checksums"]);
    demo(b.path(), &["--checksums", "--nan", "2:down_proj"]);
    let o = brickprof(&[
        "diff",
        a.path().join("profile.json").to_str().unwrap(),
        b.path().join("checksums.json").to_str().unwrap(),
    ]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out.contains("NaN/Inf origin: pass 0 layer 2 DownProjection"),
        "{out}"
    );
}

#[test]
fn diff_bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &["--checksums"]);
    let good = dir.path().join("checksums.json");
    let good = good.to_str().unwrap();
    let missing = dir.path().join("nope.json");
    assert_clean_error(
        &brickprof(&["diff", good, missing.to_str().unwrap()]),
        "nope.json",
    );
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{ not json").unwrap();
    assert_clean_error(
        &brickprof(&["diff", garbage.to_str().unwrap(), good]),
        "garbage.json: line 1",
    );
    let o = brickprof(&["diff", good, good, "--rtol", "-1"]);
    assert_clean_error(&o, "non-negative");
    // A profile without checksums has nothing to compare.
    let plain = tempfile::tempdir().unwrap();
    demo(plain.path(), &[]);
    let p = plain.path().join("profile.json");
    assert_clean_error(
        &brickprof(&["diff", p.to_str().unwrap(), good]),
        "nothing to compare",
    );
}

#[test]
fn demo_rejects_a_bad_kernel_spot() {
    let o = brickprof(&["demo", "--no-save", "--perturb", "2:nonsense"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("unknown brick"), "{err}");
}
