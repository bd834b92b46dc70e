//! Running the built `brickprof` binary as a user would (shared by the files of
//! tests/commands/ and tests/verdicts/, modules of tests/cli.rs).

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// The binary, ready for arguments.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_brickprof"))
}

/// Run the binary to completion.
pub fn brickprof(args: &[&str]) -> Output {
    bin().args(args).output().expect("run brickprof")
}

/// Standard output and standard error as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Arguments of a small, quick demo writing into `dir` (3 layers, 3 prompt tokens, 3 generated
/// tokens), then `extra`, which may override those sizes.
pub fn demo_args<'a>(dir: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["demo", "--out", dir.to_str().unwrap()];
    for (flag, value) in [("--layers", "3"), ("--prompt", "3"), ("--tokens", "3")] {
        if !extra.contains(&flag) {
            args.extend([flag, value]);
        }
    }
    args.extend_from_slice(extra);
    args
}

/// A small, quick demo run writing into `dir` (see [`demo_args`]); it must succeed.
pub fn demo(dir: &Path, extra: &[&str]) -> Output {
    let o = brickprof(&demo_args(dir, extra));
    assert!(o.status.success(), "demo failed: {:?}", text(&o));
    o
}

/// Assert a one-line error naming `needle`, exit 2, no panic.
pub fn assert_clean_error(o: &Output, needle: &str) {
    let (_, err) = text(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert!(err.contains(needle), "expected {needle:?} in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
}
