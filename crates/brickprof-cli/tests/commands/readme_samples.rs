//! The samples of README.md and the guide (docs/*.md) are real output of the command beside
//! them (scripts/readme-samples.py reads them all): the quick, deterministic ones (tag `quick`:
//! the demo's divergence diff, the CLI's one-line errors) are re-run here against this build's
//! `brickprof`, in a temporary folder, and must match their blocks line for line. The real
//! model's samples need the model and a release build:
//! `python3 scripts/readme-samples.py --check --model` (docs/real-model.md).

use std::path::Path;
use std::process::Command;

#[test]
fn readme_quick_samples_are_the_commands_real_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = Path::new(env!("CARGO_BIN_EXE_brickprof"));
    let work = tempfile::tempdir().unwrap();
    let out = match Command::new("python3")
        .arg(root.join("scripts/readme-samples.py"))
        .args(["--check", "--tags", "quick", "--no-cargo", "--bin-dir"])
        .arg(bin.parent().unwrap())
        .arg("--workdir")
        .arg(work.path())
        .output()
    {
        Ok(out) => out,
        Err(e) if std::env::var_os("BRICKPROF_REQUIRE_PYTHON").is_none() => {
            eprintln!("skipped: python3 not found ({e})");
            return;
        }
        Err(e) => panic!("python3: {e}"),
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains(" samples, 0 failed"), "{text}");
    assert!(
        !text.starts_with("0 samples"),
        "no sample tagged quick: {text}"
    );
}
