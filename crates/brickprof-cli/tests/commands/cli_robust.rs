//! The `brickprof` binary under abuse: closed pipes, unwritable or shared `--out`
//! directories, kills during a save, sizes that overflow, huge diffs. Specified in
//! spec/profile-format.md ("Reading and writing files", "The CLI").

use super::special;
use crate::common;
use crate::common::cli;

use std::io::Read;
use std::path::Path;
use std::process::{Output, Stdio};

use brickprof::{
    checksum::{ChecksumLog, Tensor},
    Profile,
};
use cli::{assert_clean_error, bin, brickprof, text};

/// A quick demo on the simulated GPU (no CPU peak measurement): arguments.
fn demo_args<'a>(dir: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = cli::demo_args(dir, extra);
    args.extend(["--timeline", "sim"]);
    args
}

/// A quick demo on the simulated GPU; it must succeed.
fn demo(dir: &Path, extra: &[&str]) -> Output {
    cli::demo(dir, &[extra, &["--timeline", "sim"]].concat())
}

/// The checksums a profile carries equal the checksum log next to it: one demo's pair.
fn assert_consistent_pair(dir: &Path) {
    let p = Profile::load(dir.join("profile.json")).expect("profile.json loads");
    let log = ChecksumLog::load(dir.join("checksums.json")).expect("checksums.json loads");
    assert_eq!(p.checksums.as_ref(), Some(&log), "a mixed pair in {dir:?}");
    let trace = std::fs::read_to_string(dir.join("trace.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&trace).expect("trace.json is whole");
}

#[test]
fn a_closed_stdout_ends_quietly_with_exit_0() {
    // `brickprof report p.json | head`: the reader goes away early.
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &["--layers", "8"]);
    let profile = dir.path().join("profile.json");
    let profile = profile.to_str().unwrap();
    let trace = dir.path().join("trace.pftrace");
    let converted = dir.path().join("converted.json");
    let runs: [&[&str]; 4] = [
        &["report", "--by-layer", "--format", "json", profile],
        &["report", "--by-layer", profile],
        &["diff", profile, profile],
        // convert's one-line summary (it printed with println!, which panics on a closed pipe)
        &[
            "convert",
            trace.to_str().unwrap(),
            "-o",
            converted.to_str().unwrap(),
        ],
    ];
    for args in runs {
        for read_first_line in [false, true] {
            let mut child = bin()
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut out = child.stdout.take().unwrap();
            if read_first_line {
                let mut byte = [0u8; 1];
                while out.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {}
            }
            drop(out); // close the read end, like `head` does
            let o = child.wait_with_output().unwrap();
            let (_, err) = text(&o);
            assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            assert!(err.is_empty(), "{args:?}: quiet, but got {err:?}");
        }
    }
}

#[test]
fn a_demo_with_a_closed_stdout_still_writes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = bin()
        .args(demo_args(dir.path(), &["--checksums"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_consistent_pair(dir.path());
}

#[test]
fn a_full_stdout_is_a_clean_error() {
    // A full device made in this test's folder (root only), never the machine's /dev/full:
    // opened without creating, so a missing device cannot become a regular file.
    let dir = tempfile::tempdir().unwrap();
    let Some(full) = special::full_device(dir.path()) else {
        return;
    };
    let stdout = std::fs::OpenOptions::new().write(true).open(&full).unwrap();
    assert!(special::is_char_device(&full));
    let o = bin()
        .args(["demo", "--layers", "1", "--prompt", "1", "--tokens", "1"])
        .arg("--no-save")
        .stdout(stdout)
        .output()
        .unwrap();
    assert_clean_error(&o, "<standard output>");
}

#[test]
fn demo_checks_its_out_directory_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let o = brickprof(&demo_args(&file, &[]));
    assert_clean_error(&o, "a-file");
    assert!(o.stdout.is_empty(), "the demo ran: {:?}", text(&o));

    let below = file.join("sub");
    let o = brickprof(&demo_args(&below, &[]));
    assert_clean_error(&o, "cannot write there");
    assert!(o.stdout.is_empty(), "the demo ran: {:?}", text(&o));

    let taken = dir.path().join("taken");
    std::fs::create_dir_all(taken.join("profile.json")).unwrap();
    let o = brickprof(&demo_args(&taken, &[]));
    assert_clean_error(&o, "profile.json there is a directory");
    assert!(o.stdout.is_empty(), "the demo ran: {:?}", text(&o));
}

#[test]
fn demo_sizes_that_overflow_are_errors() {
    let max = u64::MAX.to_string();
    for args in [
        ["--prompt", max.as_str(), "--tokens", "1"],
        ["--prompt", "1", "--tokens", max.as_str()],
        ["--prompt", max.as_str(), "--tokens", max.as_str()],
    ] {
        let mut all = vec!["demo", "--no-save"];
        all.extend_from_slice(&args);
        assert_clean_error(&brickprof(&all), "exceeds the demo's");
    }
    let o = brickprof(&["demo", "--no-save", "--layers", &max]);
    assert_clean_error(&o, "--layers");
}

#[test]
fn a_demo_without_checksums_removes_an_earlier_runs_log() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &["--checksums"]);
    assert!(dir.path().join("checksums.json").is_file());
    let o = demo(dir.path(), &[]);
    assert!(!dir.path().join("checksums.json").exists());
    assert!(text(&o).0.contains("removed"), "{:?}", text(&o));
}

#[test]
fn two_demos_writing_one_out_leave_one_consistent_pair() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let children: Vec<_> = ["1", "2"]
            .iter()
            .map(|seed| {
                bin()
                    .args(demo_args(dir.path(), &["--checksums", "--seed", seed]))
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let o = child.wait_with_output().unwrap();
            assert_eq!(o.status.code(), Some(0), "round {round}: {:?}", text(&o));
        }
        assert_consistent_pair(dir.path());
    }
}

/// A profile file with `n` distinct bricks named `{prefix}{i}`, made from a real profile.
fn many_bricks(path: &Path, prefix: &str, n: usize) {
    let base = common::fixed_profile(false);
    let tmp = path.with_extension("base.json");
    base.save(&tmp).unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tmp).unwrap()).unwrap();
    let mut brick = v["bricks"][0].clone();
    brick["builtin"] = serde_json::Value::Bool(false);
    brick["rows"] = serde_json::json!([]);
    brick["tiles"] = serde_json::json!([]);
    let bricks: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let mut b = brick.clone();
            b["name"] = format!("{prefix}{i:06}").into();
            b
        })
        .collect();
    v["bricks"] = bricks.into();
    std::fs::write(path, serde_json::to_string(&v).unwrap()).unwrap();
}

#[test]
fn diff_of_twenty_thousand_bricks_finishes() {
    // Linear in the number of bricks: with nested lookups this took minutes.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    many_bricks(&a, "moe_expert_", 20_000);
    many_bricks(&b, "moe_expert_", 20_000);
    let o = brickprof(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains("moe_expert_019999"), "{}", &out[..500]);
    assert_eq!(out.matches("moe_expert_").count(), 20_000);
}

#[test]
fn merge_never_writes_a_profile_that_report_refuses() {
    // spec/profile-format.md "Merging": a file that loads merges into a file that loads, or
    // the merge fails with exit 2 naming the file. Before: exit 0, and `report` refused the
    // output ("line 0, column 0: ... its stats are not the merge of its rows").
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    common::fixed_profile(false).save(&good).unwrap();
    let mut v = serde_json::to_value(common::fixed_profile(false)).unwrap();
    v["bricks"][1].as_object_mut().unwrap().remove("rows");
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let o = brickprof(&["report", edited.to_str().unwrap()]);
    assert!(o.status.success(), "the edited file loads: {:?}", text(&o));
    let out = dir.path().join("merged.json");
    let o = brickprof(&[
        "merge",
        good.to_str().unwrap(),
        edited.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    if o.status.success() {
        let r = brickprof(&["report", out.to_str().unwrap()]);
        assert!(
            r.status.success(),
            "merge wrote a file report refuses: {:?}",
            text(&r)
        );
    } else {
        assert_clean_error(&o, "edited.json");
        assert!(!out.exists(), "a failed merge writes nothing");
    }
}

#[test]
fn diff_escapes_names_and_names_the_file_of_a_bad_checksum_log() {
    // spec/checksums.md "Comparing runs"; spec/profile-format.md "Reports": names from files
    // are escaped before they are printed, and a log's fault names its file. Before: the ESC
    // sequence and U+202E reached the terminal, and no path was given.
    let dir = tempfile::tempdir().unwrap();
    let key = brickprof::checksum::KernelKey {
        pass: 0,
        layer: Some(3),
        brick: "Attn\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}xam".into(),
        call: 1,
    };
    let mut dup = ChecksumLog::default();
    dup.record(key.clone(), Tensor::F32(&[1.0]));
    dup.record(key, Tensor::F32(&[2.0]));
    let (reference, candidate) = (dir.path().join("ref.json"), dir.path().join("cand.json"));
    ChecksumLog::default().save(&reference).unwrap();
    dup.save(&candidate).unwrap();
    let o = brickprof(&[
        "diff",
        reference.to_str().unwrap(),
        candidate.to_str().unwrap(),
    ]);
    assert_clean_error(&o, "cand.json");
    let (out, err) = text(&o);
    for c in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(
            !err.contains(c) && !out.contains(c),
            "{c:?} printed raw: {err:?}"
        );
    }
}

// spec/profile-format.md "Reports": the CLI's notes on standard error ("... written to PATH")
// and convert's summary show a path's control characters as spaces, never raw.
#[test]
fn notes_naming_a_path_show_no_control_character() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &["--layers", "2"]);
    let profile = dir.path().join("profile.json");
    let hostile = dir.path().join("x\u{1b}]0;pwned\u{7}");
    let folded = hostile.with_extension("folded");
    let o = bin()
        .args(["report", profile.to_str().unwrap(), "--folded"])
        .arg(&folded)
        .output()
        .unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("folded stacks written to"), "{err}");
    assert!(folded.exists());
    let converted = hostile.with_extension("json");
    let o = bin()
        .arg("convert")
        .arg(dir.path().join("trace.pftrace"))
        .arg("-o")
        .arg(&converted)
        .output()
        .unwrap();
    let (cout, cerr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{cerr}");
    assert!(cout.contains("converted"), "{cout}");
    for t in [&out, &err, &cout, &cerr] {
        assert!(
            !t.contains('\u{1b}') && !t.contains('\u{7}'),
            "a raw control character reached the terminal: {t:?}"
        );
    }
}
