//! `brickprof diff` across instruments (spec/imports.md "Cross-instrument diff"): the sim
//! demo's profile against the Nsight Compute fixture, two vendor files of different formats,
//! exit 0 (a comparison, not a verdict), and one line with exit 2 for a file it cannot read.

use std::path::{Path, PathBuf};

use crate::common::cli::{assert_clean_error, brickprof, demo, text};

fn vendor(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/vendor")
        .join(name)
}

/// The line of `brick` (and `row`) in the text.
fn line<'a>(stdout: &'a str, start: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no {start:?} line in {stdout}"))
}

#[test]
fn the_sim_demo_against_ncu_prints_each_bricks_two_times_and_their_ratio() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &["--timeline", "sim", "--layers", "2"]);
    let own = dir.path().join("profile.json");
    let ncu = vendor("ncu_raw_nvtx.csv");
    let o = brickprof(&["diff", own.to_str().unwrap(), ncu.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.starts_with(
            "Cross-instrument diff (no verdict): A = profile.json (timeline sim), B = ncu_raw_nvtx.csv (timeline ncu)"
        ),
        "{stdout}"
    );
    // The ratio, by value: ncu's DownProjection (48,896 + 48,448 ns over 2 calls) over the
    // demo's mean.
    let p = brickprof::Profile::load(&own).unwrap();
    let down = p.brick("DownProjection").unwrap();
    let mean = down.stats.summary().total_ns as f64 / down.stats.summary().count as f64;
    let ratio = format!("{:.2}", 48_672.0 / mean);
    let l = line(&stdout, "DownProjection ");
    assert!(l.ends_with(&format!(" {ratio}")), "{l} / {ratio}");
    assert!(
        l.contains(&format!(" {} ", down.stats.summary().count)),
        "{l}"
    );
    let calls = format!(
        "  calls differ: A {}, B 2 ({} calls one instrument saw and the other did not)",
        down.stats.summary().count,
        down.stats.summary().count - 2
    );
    assert!(stdout.contains(&calls), "{stdout}");
    // A brick the demo has and the ncu run had not.
    assert!(stdout.contains("  only A (sim) saw it"), "{stdout}");
    assert!(
        stdout.contains("Kernels outside bricks: A none recorded; B none recorded"),
        "{stdout}"
    );
    assert!(stdout
        .trim_end()
        .ends_with("vendor files carry no host push times."));
    // Gating a comparison that gives no verdict is refused.
    let o = brickprof(&[
        "diff",
        own.to_str().unwrap(),
        ncu.to_str().unwrap(),
        "--fail-on",
        "slower:5%",
    ]);
    assert_clean_error(&o, "a cross-instrument diff gives no verdict");
    // Two profiles of one timeline are the ordinary diff; --instruments asks for this one.
    let o = brickprof(&["diff", own.to_str().unwrap(), own.to_str().unwrap()]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(!text(&o).0.contains("Cross-instrument"));
    let o = brickprof(&[
        "diff",
        own.to_str().unwrap(),
        own.to_str().unwrap(),
        "--instruments",
    ]);
    let (stdout, _) = text(&o);
    assert!(o.status.success());
    let l = line(&stdout, "DownProjection ");
    assert!(l.ends_with(" 1.00"), "{l}");
    assert!(!stdout.contains("calls differ"), "{stdout}");
}

#[test]
fn two_vendor_files_compare_by_layer_and_as_json() {
    let (ncu, nsys) = (
        vendor("ncu_raw_nvtx.csv"),
        vendor("nsys/brickprof_run.sqlite"),
    );
    let o = brickprof(&[
        "diff",
        ncu.to_str().unwrap(),
        nsys.to_str().unwrap(),
        "--by-layer",
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // nsys's RmsNorm in layer 0: 2 calls, 6.00 µs (from the export's kernels); ncu's 16,096 ns.
    let l = line(&stdout, "RmsNorm ");
    assert!(l.contains(" L0 ") && l.ends_with(" 0.19"), "{l}");
    assert!(stdout.contains("  only B (nsys) saw it"), "{stdout}");
    assert!(
        stdout.contains(
            "Kernels outside bricks: A none recorded; B 2 kernels, 0 copies/sets, 6.23µs"
        ),
        "{stdout}"
    );
    // The import's note goes to stderr, prefixed by the file.
    assert!(
        stderr.contains("brickprof_run.sqlite: 1 CUDA graph launch"),
        "{stderr}"
    );
    let o = brickprof(&[
        "diff",
        ncu.to_str().unwrap(),
        nsys.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["instruments"][1]["timeline"], "nsys");
    let lm = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["brick"] == "LmHead")
        .unwrap();
    assert_eq!(lm["sides"][0]["calls"], 1);
    assert_eq!(lm["sides"][1]["calls"], 2);
    assert_eq!(lm["explanations"][0]["kind"], "calls_differ");
}

#[test]
fn a_file_it_cannot_read_is_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let ncu = vendor("ncu_raw_nvtx.csv");
    let missing = dir.path().join("nothere.json");
    let o = brickprof(&["diff", missing.to_str().unwrap(), ncu.to_str().unwrap()]);
    assert_clean_error(&o, "nothere.json");
    // A vendor file with a record of two fields: the import's error, naming the file.
    let bad = dir.path().join("bad.csv");
    let mut bytes = std::fs::read(&ncu).unwrap();
    bytes.extend_from_slice(b"\"1\",\"2\"\n");
    std::fs::write(&bad, bytes).unwrap();
    let o = brickprof(&["diff", ncu.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_clean_error(&o, "bad.csv");
}

#[test]
fn spec_imports_declared_and_measured_work_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &["--timeline", "sim", "--layers", "2"]);
    let own = dir.path().join("profile.json");
    let ncu = vendor("ncu_raw_nvtx.csv");
    let p = brickprof::Profile::load(&own).unwrap();
    let down = p.brick("DownProjection").unwrap();
    let declared = down.stats.summary().work.flops as f64 / down.stats.summary().count as f64;
    assert!(declared > 0.0, "the demo declares its work");
    // ncu's DownProjection: 138,395,648 FLOPs a call (2 FFMA + FADD + FMUL, both layers).
    let measured = 138_395_648.0;
    let o = brickprof(&["diff", own.to_str().unwrap(), ncu.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let after_down: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("DownProjection "))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    let flops = after_down
        .iter()
        .find(|l| l.starts_with("  FLOPs a call: declared "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        flops.ends_with(&format!(
            " (A), measured 138MFLOP (B), measured/declared {:.2}",
            measured / declared
        )),
        "{flops}"
    );
    assert!(
        after_down
            .iter()
            .any(|l| l.starts_with("  bytes a call: declared ") && l.contains(" (B, DRAM), ")),
        "{stdout}"
    );
    let o = brickprof(&[
        "diff",
        own.to_str().unwrap(),
        ncu.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["brick"] == "DownProjection")
        .unwrap();
    let w = &row["work"];
    assert_eq!(
        (w["declared_by"].as_u64(), w["measured_by"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(w["flops"]["measured"].as_f64(), Some(measured));
    assert_eq!(w["flops"]["declared"].as_f64(), Some(declared));
    let ratio = w["flops"]["ratio"].as_f64().unwrap();
    assert!((ratio - measured / declared).abs() < 1e-12, "{ratio}");
    // A brick ncu did not see has nothing to set beside: no `work`.
    let only = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["explanations"][0]["kind"] == "only_in")
        .unwrap();
    assert!(only.get("work").is_none(), "{only}");
}
