//! spec/sync-modes.md "OpenCL": `brickprof demo --timeline opencl` against a real asynchronous
//! driver (PoCL on CI). The timeline's own tests: tests/opencl.rs at the workspace root.
//!
//! Every test that uses the device takes the same lock, so they run one at a time.

use std::sync::Mutex;

static DEVICE_LOCK: Mutex<()> = Mutex::new(());

/// Runs the CLI built with this test's features.
fn brickprof(args: &[&str], env: Option<(&str, &std::path::Path)>) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_brickprof"));
    cmd.args(args);
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    cmd.output().expect("run brickprof")
}

#[test]
fn demo_outputs_read_back_from_the_device_match_the_cpu_demo() {
    let _g = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (cpu, ocl) = (dir.path().join("cpu"), dir.path().join("ocl"));
    let common = [
        "demo",
        "--layers",
        "2",
        "--tokens",
        "4",
        "--prompt",
        "4",
        "--checksums",
    ];
    for (timeline, out) in [("cpu", &cpu), ("opencl", &ocl)] {
        let mut args = common.to_vec();
        args.extend(["--timeline", timeline, "--out", out.to_str().unwrap()]);
        let run = brickprof(&args, None);
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            run.status.success(),
            "{timeline}: {stdout}{}",
            String::from_utf8_lossy(&run.stderr)
        );
        if timeline == "opencl" {
            assert!(stdout.contains("host dispatch time"), "{stdout}");
            assert!(stdout.contains("5 waits for 5 passes"), "{stdout}");
        }
    }
    let (a, b) = (cpu.join("checksums.json"), ocl.join("checksums.json"));
    let diff = brickprof(
        &[
            "diff",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--rtol",
            "1e-3",
            "--atol",
            "1e-4",
        ],
        None,
    );
    let text = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(diff.status.code(), Some(0), "{text}");
    assert!(text.contains("0 diverged"), "{text}");
    // Same kernels, same order, same count: every CPU checksum has its device twin.
    assert!(text.contains("Verdict: MATCH"), "{text}");
}

#[test]
fn demo_without_a_device_names_what_to_install() {
    let empty = tempfile::tempdir().unwrap();
    let run = brickprof(
        &["demo", "--timeline", "opencl", "--no-save"],
        Some(("OCL_ICD_VENDORS", empty.path())),
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no opencl device"), "{stderr}");
    assert!(stderr.contains("pocl-opencl-icd"), "{stderr}");
}
