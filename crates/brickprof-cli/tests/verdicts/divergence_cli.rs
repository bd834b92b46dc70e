//! spec/divergence.md through the `brickprof` CLI: the two-step workflow (checksums name the
//! first divergence, then captures judge it element by element), `--check`, the capture budget,
//! the noise floor on the demo's nondeterministic kernel, and bad capture files.

use crate::common;
use crate::common::cli;

use std::path::Path;

use cli::{assert_clean_error, brickprof, demo, text};

/// `brickprof diff A B [extra]`: exit code and stdout.
fn diff(a: &Path, b: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let (a, b) = (log(a), log(b));
    let mut args = vec!["diff", a.to_str().unwrap(), b.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = brickprof(&args);
    let (out, err) = text(&o);
    assert!(!err.contains("panicked"), "{err}");
    // Rows fit 100 columns (the summary lines of spec/checksums.md excepted).
    assert!(
        out.lines()
            .filter(|l| !l.starts_with("  reference ") && !l.starts_with("  candidate "))
            .all(|l| l.chars().count() <= 100),
        "{out}"
    );
    (o.status.code(), out)
}

/// The checksum log of the run in folder `dir`.
fn log(dir: &Path) -> std::path::PathBuf {
    dir.join("checksums.json")
}

/// The `--capture ... --capture-passes N` options `diff` prints after "re-run both sides with".
fn rerun_options(out: &str) -> Vec<String> {
    let line = out
        .lines()
        .find(|l| l.starts_with("Next: re-run both sides with `"))
        .unwrap_or_else(|| panic!("no re-run line in {out}"));
    let opts = line.split('`').nth(1).unwrap();
    opts.split_whitespace().map(str::to_string).collect()
}

#[test]
fn two_step_workflow_names_the_kernel_then_judges_it_element_by_element() {
    // spec/divergence.md "Two-step workflow" and "Elementwise comparison".
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    demo(&a, &["--checksums"]);
    demo(&b, &["--checksums", "--perturb", "1:up_proj"]);
    let (code, out) = diff(&a, &b, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("First divergence: pass 0 layer 1 UpProjection"),
        "{out}"
    );
    let opts = rerun_options(&out);
    assert_eq!(
        opts,
        ["--capture", "1:*,0:ResidualAdd", "--capture-passes", "0"],
        "{out}"
    );
    // Step two: both sides re-run with exactly those options.
    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
    let mut with = vec!["--checksums"];
    with.extend(&opts);
    let o = demo(&a, &with);
    assert!(text(&o).0.contains("captured tensors"), "{:?}", text(&o));
    with.extend(["--perturb", "1:up_proj"]);
    demo(&b, &with);
    let (_, out) = diff(&a, &b, &["--check", "cosine:0.9999"]);
    assert!(out.contains("Elementwise,"), "{out}");
    assert!(out.contains("verdict by cosine >= 0.9999"), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("p0 L1 UpProjection "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains(" pass "), "{row}");
    // Layer 1 passes its check; the next diverged kernel (layer 2, not captured) is named for
    // the next step.
    assert_eq!(
        rerun_options(&out),
        ["--capture", "2:*,1:ResidualAdd", "--capture-passes", "0"],
        "{out}"
    );
    // The perturbation is 1e-4 relative: max-rel 1e-6 fails it.
    let (code, out) = diff(&a, &b, &["--check", "max-rel:1e-6"]);
    assert_eq!(code, Some(1));
    let row = out
        .lines()
        .find(|l| l.starts_with("p0 L1 UpProjection "))
        .unwrap();
    assert!(row.contains(" FAIL "), "{row}");
    // Layer 0's output (the captured layer input) is bitwise equal: not listed.
    assert!(!out.contains("p0 L0 ResidualAdd"), "{out}");
}

#[test]
fn the_capture_budget_counts_and_reports_overflow() {
    // spec/divergence.md "Capture plans": overflow counted and reported.
    let dir = tempfile::tempdir().unwrap();
    let o = demo(dir.path(), &["--capture", "*:*", "--capture-budget", "8k"]);
    let (out, _) = text(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("capture budget: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("over --capture-budget 8192 were not captured"),
        "{line}"
    );
    let written = out
        .lines()
        .find(|l| l.contains("captured tensors ("))
        .unwrap();
    let bytes: u64 = written.split(['(', ' ']).nth(4).unwrap().parse().unwrap();
    assert!(bytes <= 8192 && bytes > 0, "{written}");
}

#[test]
fn capture_files_read_in_python() {
    // spec/divergence.md "Capture files": Python's safetensors/numpy read them, in their dtype.
    let has = std::process::Command::new("python3")
        .args(["-c", "import safetensors.numpy, numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        assert!(
            std::env::var_os("BRICKPROF_REQUIRE_SAFETENSORS_PY").is_none(),
            "python3 with safetensors and numpy is required here"
        );
        eprintln!("skipped: python3 with safetensors and numpy not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    demo(
        dir.path(),
        &[
            "--capture",
            "0:rms_norm,model:lm_head",
            "--capture-passes",
            "1",
        ],
    );
    let script = r#"
import json, sys
from safetensors import safe_open
from safetensors.numpy import load_file
path = sys.argv[1]
t = load_file(path)
with safe_open(path, "np") as f:
    meta = f.metadata()
assert meta["format"] == "brickprof-captures", meta
kernels = json.loads(meta["kernels"])
print(len(t), t["p1.L0.RmsNorm.0"].dtype, t["p1.model.LmHead.0"].shape, len(kernels))
"#;
    let o = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(dir.path().join("captures.safetensors"))
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // Two RmsNorm calls in layer 0, one LM head, all of pass 1.
    assert_eq!(out.trim(), "3 float32 (1024,) 3", "{err}");
}

/// Four runs with the nondeterministic kernel 1:down_proj, order seeds 10, 20, 30, 40: two
/// references, a candidate (perturbed at `perturb`), a third reference.
fn nondeterministic_runs(
    root: &Path,
    extra: &[&str],
    perturb: Option<&str>,
) -> [std::path::PathBuf; 4] {
    let names = ["ref", "ref2", "cand", "ref3"];
    let dirs = names.map(|n| root.join(n));
    for (i, d) in dirs.iter().enumerate() {
        let seed = (10 * (i + 1)).to_string();
        let mut args = vec![
            "--checksums",
            "--nondeterministic",
            "1:down_proj",
            "--order-seed",
            &seed,
        ];
        args.extend_from_slice(extra);
        if let (2, Some(p)) = (i, perturb) {
            args.extend(["--perturb", p]);
        }
        demo(d, &args);
    }
    dirs
}

#[test]
fn the_noise_floor_tells_the_nondeterministic_kernel_from_a_planted_error() {
    // spec/divergence.md "Noise floor", on the demo's nondeterministic kernel.
    let dir = tempfile::tempdir().unwrap();
    let [r, r2, c, r3] = nondeterministic_runs(dir.path(), &[], None);
    // Without a noise run, the split-K order alone diverges ...
    let (code, out) = diff(&r, &c, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("First divergence: pass 0 layer 1 DownProjection"),
        "{out}"
    );
    // ... and within its noise band it matches. (From summaries the band is an estimate from
    // one noise run: a wider factor than the default 3 keeps this check about the idea, not
    // about one draw of the split-K orders.)
    let (r2, r3) = (log(&r2), log(&r3));
    let noise = ["--noise", r2.to_str().unwrap(), "--noise-factor", "5"];
    let (code, out) = diff(&r, &c, &noise);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("(within noise)"), "{out}");
    assert!(out.contains(" 0 diverged"), "{out}");
    assert!(out.contains("Within noise: "), "{out}");
    assert!(
        out.contains("Every differing kernel is within noise."),
        "{out}"
    );
    // Two noise runs give a steadier band: the default factor suffices.
    let two = [
        "--noise",
        r2.to_str().unwrap(),
        "--noise",
        r3.to_str().unwrap(),
    ];
    let (code, out) = diff(&r, &c, &two);
    assert_eq!(code, Some(0), "{out}");
    // A planted error upstream of the nondeterministic kernel has no noise band at all.
    let dir = tempfile::tempdir().unwrap();
    let [r, r2, c, _] = nondeterministic_runs(dir.path(), &[], Some("0:up_proj"));
    let (code, out) = diff(&r, &c, &["--noise", log(&r2).to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("First beyond noise: pass 0 layer 0 UpProjection"),
        "{out}"
    );
}

#[test]
fn captures_sharpen_the_noise_band_to_find_an_error_inside_the_noisy_region() {
    // spec/divergence.md "Noise floor": downstream of the nondeterministic kernel, a 1e-4
    // perturbation of one element is within the summaries' noise but beyond the captures'.
    // The prompt token by token: one element among one token's outputs (in a batched prompt's
    // outputs, its share of the distance shrinks below the noise band, as it should).
    let dir = tempfile::tempdir().unwrap();
    let cap = [
        "--capture",
        "2:*,1:residual_add",
        "--capture-passes",
        "0",
        "--prefill",
        "per-token",
    ];
    let [r, r2, c, _] = nondeterministic_runs(dir.path(), &cap, Some("2:up_proj"));
    let (code, out) = diff(&r, &c, &["--noise", log(&r2).to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("First beyond noise: pass 0 layer 2 UpProjection (distance")
            && out.contains("by RMSE)"),
        "{out}"
    );
}

#[test]
fn bad_capture_files_are_one_line_errors_naming_the_file() {
    // spec/divergence.md "Capture files": typed errors, exit 2, never a panic.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let cap = ["--checksums", "--capture", "0:*"];
    demo(&a, &cap);
    demo(&b, &[&cap[..], &["--perturb", "0:rms_norm"]].concat());
    let file = a.join("captures.safetensors");
    let (a_log, b_log) = (log(&a), log(&b));
    let (la, lb) = (a_log.to_str().unwrap(), b_log.to_str().unwrap());
    let good = std::fs::read(&file).unwrap();
    for bad in [
        &good[..good.len() / 2],
        &good[..7],
        b"not a safetensors file at all",
    ] {
        std::fs::write(&file, bad).unwrap();
        let o = brickprof(&["diff", la, lb]);
        assert_clean_error(&o, "captures.safetensors");
    }
    // Another run's captures beside this run's checksums are refused, not compared: by their
    // run id (spec/profile-format.md "A run folder"), and without one (an older file) by
    // their contents.
    std::fs::copy(b.join("captures.safetensors"), &file).unwrap();
    let o = brickprof(&["diff", la, lb]);
    assert_clean_error(&o, "captures.safetensors: from another run than");
    let mut older = brickprof::capture::CaptureStore::load(&file).unwrap();
    older.run_id = None;
    older.save(&file).unwrap();
    let o = brickprof(&["diff", la, lb]);
    assert_clean_error(&o, "is not the output its run's checksum log recorded");
    // A bad --check is a usage error.
    let o = brickprof(&["diff", la, lb, "--check", "speed:1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("unknown statistic"), "{:?}", text(&o));
}

#[test]
fn report_html_with_a_diff_draws_the_error_heat_map() {
    // spec/html-report.md "Sections", `errors`: `report A --html OUT --diff B`.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    demo(&a, &["--checksums"]);
    demo(&b, &["--checksums", "--perturb", "1:up_proj"]);
    let html = dir.path().join("errors.html");
    let o = brickprof(&[
        "report",
        a.join("profile.json").to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--diff",
        b.join("profile.json").to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(common::xml::assert_svgs_well_formed("the report", &page) > 0);
    assert!(page.contains("<section id=\"errors\">"), "{page}");
    assert_eq!(page.matches("<rect class=\"cell born\"").count(), 1);
    assert!(page.contains("error is born at pass 0 layer 1 UpProjection"));
    // Layers 0 and 1 up to the planted kernel agree.
    assert!(page.contains("<rect class=\"cell equal\""));
}
