//! spec/traces.md "Command line": `demo --trace-format` and `brickprof convert`, run as a user
//! would. The demo's `.pftrace` is copied to `target/tmp/pftrace/` for CI's Perfetto check.

use std::path::Path;
use std::process::{Command, Output};

fn brickprof(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_brickprof"))
        .args(args)
        .output()
        .expect("run brickprof")
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn demo(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "demo",
        "--layers",
        "2",
        "--prompt",
        "2",
        "--tokens",
        "2",
        "--timeline",
        "sim",
        "--out",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ok(&brickprof(&args))
}

fn one_line_error(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "expected {needle:?} in {err:?}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
}

#[test]
fn demo_writes_the_formats_asked_for() {
    let both = tempfile::tempdir().unwrap();
    let out = demo(both.path(), &[]);
    assert!(
        out.contains("trace.pftrace") && out.contains("trace.json"),
        "{out}"
    );
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pftrace");
    std::fs::create_dir_all(&keep).unwrap();
    std::fs::copy(
        both.path().join("trace.pftrace"),
        keep.join("demo-sim.pftrace"),
    )
    .unwrap();

    let one = tempfile::tempdir().unwrap();
    demo(one.path(), &["--trace-format", "perfetto"]);
    assert!(one.path().join("trace.pftrace").exists());
    assert!(!one.path().join("trace.json").exists());
    let o = brickprof(&["demo", "--trace-format", "svg", "--no-save"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn convert_turns_each_format_into_the_other() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &["--trace-format", "perfetto"]);
    let pf = dir.path().join("trace.pftrace");
    let out = ok(&brickprof(&["convert", pf.to_str().unwrap()]));
    assert!(out.contains("trace.json"), "{out}");
    let json = dir.path().join("trace.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(doc["traceEvents"].as_array().unwrap().len() > 100);
    let again = dir.path().join("again.pftrace");
    ok(&brickprof(&[
        "convert",
        json.to_str().unwrap(),
        "-o",
        again.to_str().unwrap(),
    ]));
    assert_eq!(
        std::fs::read(&pf).unwrap().len(),
        std::fs::read(&again).unwrap().len(),
        "the same trace either way"
    );
}

#[test]
fn convert_rejects_bad_input_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pftrace");
    one_line_error(
        &brickprof(&["convert", missing.to_str().unwrap()]),
        "missing.pftrace",
    );
    let garbage = dir.path().join("garbage.pftrace");
    std::fs::write(&garbage, "garbage").unwrap();
    one_line_error(
        &brickprof(&["convert", garbage.to_str().unwrap()]),
        "expected a trace packet",
    );
    let odd = dir.path().join("trace.bin");
    std::fs::write(&odd, "{}").unwrap();
    one_line_error(&brickprof(&["convert", odd.to_str().unwrap()]), "--to");
}
