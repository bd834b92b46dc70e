//! spec/timing-verdicts.md "Gates, budgets and the exit code": `brickprof diff --fail-on`
//! exits 1 on a planted regression and 0 on identical runs, writes a JUnit file, prints JSON,
//! keeps today's exit code without a gate, and refuses to gate runs from different machines
//! unless asked. Demo runs on the simulated device: exact times, so exact verdicts.

use crate::common;
use crate::common::cli;

use std::path::{Path, PathBuf};

use cli::{brickprof, demo, text};

/// A one-layer sim demo with 8 decode passes into `dir`, with `extra` flags; its profile.
fn run(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["--timeline", "sim", "--layers", "1", "--tokens", "8"];
    args.extend_from_slice(extra);
    demo(dir, &args);
    dir.join("profile.json").display().to_string()
}

/// The JUnit file at `path`, which must parse as XML 1.0.
fn junit_of(path: &Path) -> String {
    let xml = std::fs::read_to_string(path).unwrap();
    common::xml::assert_well_formed(&path.display().to_string(), &xml);
    xml
}

fn runs() -> (tempfile::TempDir, String, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let a = run(&dir.path().join("a"), &[]);
    let same = run(&dir.path().join("same"), &[]);
    let slow = run(&dir.path().join("slow"), &["--slow", "0:down_proj:10"]);
    (dir, a, same, slow)
}

#[test]
fn a_planted_regression_fails_the_gate_and_identical_runs_pass() {
    let (dir, a, same, slow) = runs();
    // Without a gate timing never changes the exit code, and the verdicts are printed.
    let o = brickprof(&["diff", &a, &slow]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("Timing verdicts"), "{out}");
    assert!(out.contains("within-run variation only"), "{out}");
    assert!(out.contains("[decode] DownProjection"), "{out}");
    // The gate: exit 1, the regression named.
    let junit = dir.path().join("junit.xml");
    let j = junit.to_str().unwrap();
    let o = brickprof(&[
        "diff",
        &a,
        &slow,
        "--fail-on",
        "decode:slower:5%",
        "--junit",
        j,
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("REGRESSED [decode] DownProjection fails decode:slower:5%"),
        "{out}"
    );
    let xml = junit_of(&junit);
    assert!(
        xml.contains("name=\"[decode] DownProjection\"><failure"),
        "{xml}"
    );
    assert!(!xml.contains("[prefill]"), "only the gated phase: {xml}");
    // A gate above the planted size passes.
    let o = brickprof(&["diff", &a, &slow, "--fail-on", "slower:20%"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    // Identical runs pass, and the JUnit file says so.
    let o = brickprof(&["diff", &a, &same, "--fail-on", "slower:5%", "--junit", j]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let xml = junit_of(&junit);
    assert!(xml.contains("failures=\"0\""), "{xml}");
    assert!(xml.contains("name=\"[decode] TPOT\"></testcase>"), "{xml}");
}

#[test]
fn json_output_carries_the_verdicts_and_the_gates() {
    let (_dir, a, _same, slow) = runs();
    let o = brickprof(&[
        "diff",
        &a,
        &slow,
        "--fail-on",
        "slower:5%",
        "--format",
        "json",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["gates"]["regressed"], true);
    let rows = v["verdicts"]["rows"].as_array().unwrap();
    let down = rows
        .iter()
        .find(|r| r["phase"] == "decode" && r["name"] == "DownProjection")
        .unwrap();
    assert_eq!(down["judgement"]["verdict"], "slower");
    let ratio = down["judgement"]["ratio"].as_f64().unwrap();
    assert!(ratio > 1.05 && ratio < 1.11, "{ratio}");
    assert_eq!(v["verdicts"]["noise_runs"], 0);
}

#[test]
fn runs_from_different_machines_are_not_gated_unless_asked() {
    let (dir, a, _same, slow) = runs();
    let mut p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&slow).unwrap()).unwrap();
    p["meta"]["host"] = "elsewhere".into();
    let moved: PathBuf = dir.path().join("elsewhere.json");
    std::fs::write(&moved, serde_json::to_string(&p).unwrap()).unwrap();
    let m = moved.to_str().unwrap();
    let o = brickprof(&["diff", &a, m, "--fail-on", "slower:5%"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("different machines"), "{err}");
    let o = brickprof(&["diff", &a, m]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        out.contains("withheld: the runs come from different machines"),
        "{out}"
    );
    let o = brickprof(&[
        "diff",
        &a,
        m,
        "--fail-on",
        "slower:5%",
        "--timing-across-machines",
    ]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
}

#[test]
fn budgets_are_checked_on_a_saved_profile() {
    // spec/timing-verdicts.md "Gates, budgets and the exit code": `report RUN --budget` exits
    // 1 when a percentile is over its budget, 0 when every one holds, 2 when a budget names
    // nothing the run measured; `--junit` writes one test case per budget.
    let (dir, a, _same, slow) = runs();
    let p = brickprof::Profile::load(&a).unwrap();
    let decode = brickprof::profile::phase_profile(
        &p,
        brickprof::model::PhaseFilter::Only(brickprof::Phase::Decode),
    );
    let p99 = decode.brick("LmHead").unwrap().stats.percentile_ns(0.99);
    let tpot = brickprof::figures::latency(p.pass_series.as_ref().unwrap())
        .unwrap()
        .tpot
        .percentile_ns(50)
        .unwrap();
    let at = |ns: u64| format!("{ns}ns");
    let holds = [
        format!("decode:LmHead:p99={}", at(p99)),
        format!("tpot:p50={}", at(tpot)),
    ];
    let junit = dir.path().join("budgets.xml");
    let j = junit.to_str().unwrap();
    let mut args = vec!["report", &a, "--junit", j];
    for b in &holds {
        args.extend(["--budget", b]);
    }
    let o = brickprof(&args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("Budget: [decode] LmHead p99"), "{out}");
    let xml = junit_of(&junit);
    assert!(xml.contains("tests=\"2\" failures=\"0\""), "{xml}");
    // One nanosecond less and the budget is exceeded.
    let over = format!("decode:lm_head:p99={}", at(p99 - 1));
    let o = brickprof(&["report", &a, "--budget", &over, "--junit", j]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("EXCEEDED"), "{out}");
    let xml = junit_of(&junit);
    assert!(
        xml.contains("name=\"budget [decode] LmHead p99\"><failure"),
        "{xml}"
    );
    // Under JSON the report stays parseable; the budget line goes to stderr.
    let o = brickprof(&["report", &a, "--format", "json", "--budget", &over]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(serde_json::from_str::<serde_json::Value>(&out).is_ok());
    assert!(err.contains("EXCEEDED"), "{err}");
    // A budget on a brick the run never called checks nothing: an error.
    let o = brickprof(&["report", &a, "--budget", "decode:Nope:p99=1us"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no call of this brick"), "{err}");
    // diff checks budgets on the candidate: the planted slowdown blows DownProjection's.
    let down = decode
        .brick("DownProjection")
        .unwrap()
        .stats
        .percentile_ns(0.99);
    let b = format!("decode:DownProjection:p99={}", at(down));
    let o = brickprof(&["diff", &a, &slow, "--budget", &b]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("Budget: [decode] DownProjection"), "{out}");
    let o = brickprof(&["diff", &a, &a, "--budget", &b]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}

#[test]
fn runs_of_another_workload_carry_a_note() {
    // spec/timing-verdicts.md "What a sample is": a phase whose pass shapes differ between the
    // runs is noted; identical workloads are not.
    let (dir, a, same, _slow) = runs();
    let longer_dir = dir.path().join("longer");
    demo(
        &longer_dir,
        &["--timeline", "sim", "--layers", "1", "--tokens", "9"],
    );
    let longer = longer_dir.join("profile.json").display().to_string();
    let o = brickprof(&["diff", &a, &longer]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.contains("note: the runs' decode passes differ in shape"),
        "{out}"
    );
    assert!(!out.contains("prefill passes differ"), "{out}");
    let o = brickprof(&["diff", &a, &same]);
    let (out, _) = text(&o);
    assert!(!out.contains("differ in shape"), "{out}");
}

#[test]
fn names_xml_cannot_hold_leave_the_junit_file_well_formed() {
    // spec/profile-format.md "Loading" (names from files): a brick whose name holds U+FFFE, U+FFFF, C0 and C1
    // controls or other non-characters, gated and budgeted: the JUnit file parses as XML 1.0,
    // the characters replaced by U+FFFD. Before: U+FFFE and U+FFFF went through.
    let (dir, a, _same, slow) = runs();
    let hostile = common::xml::HOSTILE_NAMES.concat();
    // A command line cannot hold U+0000: the budgeted brick's name is the rest.
    let budgeted = hostile.replace('\0', "");
    let rename = |path: &str, to: &str| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        rename_bricks(
            &mut v,
            &[("DownProjection", &hostile), ("LmHead", &budgeted)],
        );
        let out = dir.path().join(to);
        std::fs::write(&out, serde_json::to_string(&v).unwrap()).unwrap();
        out.display().to_string()
    };
    let (a, slow) = (rename(&a, "a.json"), rename(&slow, "slow.json"));
    let junit = dir.path().join("junit.xml");
    let j = junit.to_str().unwrap();
    let o = brickprof(&["diff", &a, &slow, "--fail-on", "slower:5%", "--junit", j]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    let xml = junit_of(&junit);
    assert!(xml.contains("bad\u{FFFD}\u{FFFD}name"), "{xml}");
    assert!(
        xml.contains("&lt;&amp;&gt;&quot;&#39;&#9;&#10;&#13;"),
        "{xml}"
    );
    // Budgets: the name as the file spells it is found (an alias cannot hold these).
    let budget = format!("decode:{budgeted}:p50=1ns");
    let o = brickprof(&["report", &a, "--budget", &budget, "--junit", j]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    let xml = junit_of(&junit);
    assert!(xml.contains("name=\"budget [decode] bad\u{FFFD}"), "{xml}");
}

/// Every string `from` in `v` (a value or a key) becomes `to`, and a brick so renamed is no
/// longer built in.
fn rename_bricks(v: &mut serde_json::Value, names: &[(&str, &str)]) {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            if let Some((_, to)) = names.iter().find(|(from, _)| s == from) {
                *s = (*to).to_string();
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| rename_bricks(x, names)),
        Value::Object(o) => {
            let renamed = o
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| names.iter().any(|(from, _)| n == *from));
            if renamed && o.contains_key("builtin") {
                o.insert("builtin".into(), Value::Bool(false));
            }
            for (from, to) in names {
                if let Some(x) = o.remove(*from) {
                    o.insert((*to).to_string(), x);
                }
            }
            o.values_mut().for_each(|x| rename_bricks(x, names));
        }
        _ => {}
    }
}

#[test]
fn numbers_with_a_sign_or_a_leading_zero_are_refused_with_exit_2() {
    // spec/timing-verdicts.md "Gates, budgets and the exit code": numbers are written plainly.
    // Before: `slower:-0%` was a 0 % gate, `p+99` and `p099` were p99.
    let cases: [&[&str]; 4] = [
        &["diff", "a.json", "b.json", "--fail-on", "slower:-0%"],
        &["diff", "a.json", "b.json", "--fail-on", "decode:slower:+5%"],
        &["report", "a.json", "--budget", "LmHead:p+99=1us"],
        &["report", "a.json", "--budget", "LmHead:p099=1us"],
    ];
    for args in cases {
        let o = brickprof(args);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("without a sign"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// A sim demo run into `root/name` with `args`; its profile's path.
fn sim_run(root: &Path, name: &str, args: &[&str]) -> String {
    let dir = root.join(name);
    let mut all = vec!["--timeline", "sim", "--prompt", "4", "--tokens", "24"];
    all.extend_from_slice(args);
    demo(&dir, &all);
    dir.join("profile.json").display().to_string()
}

#[test]
fn a_noise_run_of_another_model_is_an_error_naming_the_file() {
    // spec/timing-verdicts.md "Noise runs must be of the reference's model": a two-layer noise
    // run against a one-layer reference widened every band until a 50 % slower DownProjection
    // read "within noise" and the gate passed (exit 0). Now it is refused, exit 2, the file
    // named; a checksum log given as noise likewise, never silently left out.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let one = ["--layers", "1", "--seed", "1"];
    let reference = sim_run(root, "ref", &one);
    let cand = sim_run(
        root,
        "cand",
        &[&one[..], &["--slow", "*:down_proj:50"]].concat(),
    );
    let other = sim_run(root, "other", &["--layers", "2", "--seed", "2"]);
    let gate = ["--fail-on", "slower:5%"];
    let o = brickprof(&[&["diff", &reference, &cand, "--noise", &other][..], &gate].concat());
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains(&other), "{err}");
    assert!(
        err.contains("another model (2 layers, the reference 1)"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // Without the noise run, and with a noise run of the same model, the regression fails.
    let o = brickprof(&[&["diff", &reference, &cand][..], &gate].concat());
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    let same = sim_run(root, "same", &["--layers", "1", "--seed", "3"]);
    let o = brickprof(&[&["diff", &reference, &cand, "--noise", &same][..], &gate].concat());
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("REGRESSED [decode] DownProjection"), "{out}");
    // Other bricks (a model without the same kernels) are named too: a profile whose
    // DownProjection is renamed (and escaped).
    let mut p: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&same).unwrap()).unwrap();
    for b in p["bricks"].as_array_mut().unwrap() {
        if b["name"] == "DownProjection" {
            b["name"] = "Down\u{1b}Proj".into();
            b["builtin"] = false.into();
        }
    }
    let renamed = root.join("renamed.json");
    std::fs::write(&renamed, serde_json::to_string(&p).unwrap()).unwrap();
    let o = brickprof(&[
        "diff",
        &reference,
        &cand,
        "--noise",
        renamed.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains("renamed.json") && err.contains("bricks differ"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "escaped: {err:?}");
    // A checksum log as the noise run of two profiles: an error naming it.
    let logged = root.join("logged");
    demo(
        &logged,
        &[
            "--timeline",
            "sim",
            "--layers",
            "1",
            "--prompt",
            "4",
            "--tokens",
            "24",
            "--checksums",
        ],
    );
    let log = logged.join("checksums.json").display().to_string();
    let o = brickprof(&["diff", &reference, &cand, "--noise", &log]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        err.contains(&log) && err.contains("a checksum log gives no timings"),
        "{err}"
    );
}

#[test]
fn bands_wider_than_the_change_asked_for_cannot_judge() {
    // spec/timing-verdicts.md "Cannot judge": runs whose kernels vary by ±60 % each (the sim's
    // per-launch jitter) give bands near ±100 %; a planted 50 % slowdown is then not "within
    // noise" but "cannot judge", per brick and in the summary, and a gate that can judge
    // nothing it was asked about exits 2.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let run = |name: &str, seed: &str, extra: &[&str]| {
        let args = [
            &["--layers", "1", "--seed", seed, "--sim-jitter", "0,60"][..],
            extra,
        ]
        .concat();
        sim_run(root, name, &args)
    };
    let reference = run("ref", "1", &[]);
    let noise = [run("n2", "2", &[]), run("n3", "3", &[])];
    let cand = run("cand", "4", &["--slow", "*:down_proj:50"]);
    let base = [
        "diff", &reference, &cand, "--noise", &noise[0], "--noise", &noise[1],
    ];
    let o = brickprof(&base);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains("[decode] DownProjection") && l.contains("cannot judge"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("exceeds the 3 % asked for"), "{line}");
    assert!(out.contains(" 0 within noise, "), "{out}");
    assert!(out.contains("  cannot judge: noise ±"), "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
    // A gate asks about its own size; none of its rows can be judged: exit 2, said why.
    let o = brickprof(&[&base[..], &["--fail-on", "slower:5%"]].concat());
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("cannot judge: noise ±"), "{err}");
    assert!(err.contains("exceeds the 5 % asked for"), "{err}");
    // JSON marks the rows.
    let o = brickprof(&[&base[..], &["--format", "json"]].concat());
    let v: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    let rows = v["verdicts"]["rows"].as_array().unwrap();
    let down = rows
        .iter()
        .find(|r| r["phase"] == "decode" && r["name"] == "DownProjection")
        .unwrap();
    assert_eq!(down["cannot_judge"], true, "{down}");
    // A gate wider than the bands judges again: within noise, exit 0.
    let o = brickprof(&[&base[..], &["--fail-on", "slower:900%"]].concat());
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(!out.contains("cannot judge: noise"), "{out}");
}

#[test]
fn a_one_layer_slowdown_under_machine_wide_noise_is_named_with_its_layer() {
    // spec/timing-verdicts.md "Relative verdicts", "Cells: which layer": four-layer sim runs
    // whose speed differs by up to ±15 % from run to run (`--sim-jitter 15,5`); layer 1's
    // UpProjection planted 40 % slower. Judged against the run, the gate fails on that cell,
    // named with its layer; judged in isolation (`--timing-absolute`) the bands are too wide
    // to judge anything asked about: exit 2.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let run = |name: &str, seed: &str, extra: &[&str]| {
        let dir = root.join(name);
        let args = [
            &[
                "--timeline",
                "sim",
                "--layers",
                "4",
                "--prompt",
                "4",
                "--tokens",
                "48",
            ][..],
            &["--seed", seed, "--sim-jitter", "15,5"],
            extra,
        ]
        .concat();
        demo(&dir, &args);
        dir.join("profile.json").display().to_string()
    };
    let reference = run("ref", "11", &[]);
    let noise = [run("n12", "12", &[]), run("n13", "13", &[])];
    let cand = run("cand", "14", &["--slow", "1:up_proj:40"]);
    let base = [
        "diff",
        &reference,
        &cand,
        "--noise",
        &noise[0],
        "--noise",
        &noise[1],
        "--fail-on",
        "slower:5%",
    ];
    let o = brickprof(&base);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("REGRESSED [decode] UpProjection layer 1 fails slower:5%"),
        "{out}"
    );
    // Only UpProjection regressed: its layer-1 cell, and the brick as a whole where its +10 %
    // clears the brick's band; no other brick and no other layer's cell.
    let regressed: Vec<&str> = out.lines().filter(|l| l.starts_with("REGRESSED")).collect();
    assert!(
        regressed.iter().all(|l| l.contains("UpProjection")
            && (!l.contains("layer") || l.contains("UpProjection layer 1 "))),
        "{out}"
    );
    assert!(out.contains("judged against the run"), "{out}");
    let o = brickprof(&[&base[..], &["--timing-absolute"]].concat());
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("cannot judge"), "{err}");
}
