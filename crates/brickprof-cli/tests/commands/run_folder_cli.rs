//! `brickprof demo --out DIR` as a run folder (spec/profile-format.md "A run folder"): killed at
//! any moment, DIR holds one whole run; files of two runs read together are named; what DIR
//! holds that is not a run's is kept, and an earlier run's files are not.

use crate::common::cli;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use brickprof::capture::CaptureStore;
use brickprof::{checksum::ChecksumLog, io::RunId, Profile};
use cli::{bin, brickprof, text};

/// Everything the demo below writes: every run file but `tokens.json`.
const WRITTEN: [&str; 5] = [
    "captures.safetensors",
    "checksums.json",
    "profile.json",
    "trace.json",
    "trace.pftrace",
];

/// A quick demo into `dir` writing all of [`WRITTEN`], with the seed `seed`.
fn args(dir: &Path, seed: &str) -> Vec<String> {
    let extra = [
        "--timeline",
        "sim",
        "--checksums",
        "--capture",
        "*:*",
        "--seed",
        seed,
    ];
    cli::demo_args(dir, &extra)
        .into_iter()
        .map(String::from)
        .collect()
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every file a run folder may hold (spec/profile-format.md "A run folder"): anything else in
/// the folder is not a run's.
const RUN_FILES: [&str; 6] = [
    "profile.json",
    "checksums.json",
    "captures.safetensors",
    "tokens.json",
    "trace.json",
    "trace.pftrace",
];

/// Assert that `dir` holds one whole run, and return its id: every file the demo writes, each
/// whole and carrying one run id, and a diff of the profile with itself that exits 0.
fn one_whole_run(dir: &Path) -> RunId {
    let run_files: Vec<String> = names(dir)
        .into_iter()
        .filter(|n| RUN_FILES.contains(&n.as_str()))
        .collect();
    assert_eq!(run_files, WRITTEN, "a run's files are missing or extra");
    let profile = Profile::load(dir.join("profile.json")).expect("profile.json whole");
    let log = ChecksumLog::load(dir.join("checksums.json")).expect("checksums.json whole");
    let captures = CaptureStore::load(&dir.join("captures.safetensors")).expect("captures whole");
    let trace = std::fs::read_to_string(dir.join("trace.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&trace).expect("trace.json whole");
    let id = profile
        .meta
        .run_id
        .clone()
        .expect("profile.json carries a run id");
    assert_eq!(
        log.run_id.as_ref(),
        Some(&id),
        "checksums.json of another run"
    );
    assert_eq!(
        captures.run_id.as_ref(),
        Some(&id),
        "captures of another run"
    );
    let p = dir.join("profile.json");
    let o = brickprof(&["diff", p.to_str().unwrap(), p.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "diff of a run with itself: {:?}",
        text(&o)
    );
    id
}

/// A staging folder of a run into `x` with `file` written in it, if there is one.
fn staging_with(x: &Path, file: &str) -> Option<PathBuf> {
    let parent = x.parent().unwrap();
    let prefix = format!(".{}.partial-", x.file_name().unwrap().to_string_lossy());
    std::fs::read_dir(parent)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .find(|p| p.join(file).is_file())
}

#[test]
fn kill_9_at_any_moment_leaves_one_whole_run() {
    // spec/profile-format.md "A run folder": 30 demos killed (SIGKILL) at moments spread over
    // the run and its save; after each, the folder holds one whole run (the earlier one or the
    // new one), the file that is not a run's is there, and the next run cleans up.
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("run");
    let started = Instant::now();
    let o = bin().args(args(&x, "1")).output().unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    let run_time = started.elapsed();
    std::fs::write(x.join("notes.txt"), "mine").unwrap();
    let mut ids = vec![one_whole_run(&x)];
    let (mut new, kills) = (0, 30);
    for i in 0..kills {
        let mut child = bin()
            .args(args(&x, &(i % 3).to_string()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if i % 2 == 0 {
            // Spread over the run: from its start to a little past its usual end.
            std::thread::sleep(run_time.mul_f64(1.2 * (f64::from(i) + 0.5) / f64::from(kills)));
        } else {
            // At a file of the save: the profile, the checksums, the captures being written.
            let file =
                ["profile.json", "checksums.json", "captures.safetensors"][(i / 2 % 3) as usize];
            let deadline = Instant::now() + Duration::from_secs(60);
            while staging_with(&x, file).is_none()
                && child.try_wait().unwrap().is_none()
                && Instant::now() < deadline
            {
                std::thread::yield_now();
            }
        }
        let _ = child.kill(); // it may have finished
        child.wait().unwrap();
        let id = one_whole_run(&x);
        assert_eq!(
            std::fs::read_to_string(x.join("notes.txt")).unwrap(),
            "mine"
        );
        if !ids.contains(&id) {
            new += 1;
            ids.push(id);
        }
    }
    eprintln!("{kills} kills: {new} left a new run, the others the earlier one");
    let o = bin().args(args(&x, "5")).output().unwrap();
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(!ids.contains(&one_whole_run(&x)));
    assert_eq!(
        names(tmp.path()),
        ["run"],
        "killed runs' staging folders are cleaned"
    );
    assert_eq!(
        std::fs::read_to_string(x.join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn files_of_two_runs_read_together_are_named() {
    // spec/profile-format.md "A run folder": the captures of another run beside a profile are
    // an error naming both files, even when their contents happen to agree (same seed).
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for dir in [&a, &b] {
        let o = brickprof(
            &args(dir, "3")
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        assert!(o.status.success(), "{:?}", text(&o));
    }
    std::fs::copy(
        b.join("captures.safetensors"),
        a.join("captures.safetensors"),
    )
    .unwrap();
    let p = a.join("profile.json");
    let o = brickprof(&["diff", p.to_str().unwrap(), p.to_str().unwrap()]);
    cli::assert_clean_error(&o, "from another run than");
    let err = text(&o).1;
    assert!(
        err.contains("a/captures.safetensors") && err.contains("a/profile.json"),
        "{err}"
    );
}

#[test]
fn a_run_replaces_the_earlier_runs_files_and_keeps_the_rest() {
    // spec/profile-format.md "A run folder": an earlier run's trace.pftrace does not stay
    // beside a run that wrote none; a report written into the folder, a folder of the user's
    // and a note stay.
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("run");
    let o = brickprof(&args(&x, "1").iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{:?}", text(&o));
    let html = x.join("report.html");
    let p = x.join("profile.json");
    let o = brickprof(&[
        "report",
        p.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    std::fs::create_dir(x.join("mine")).unwrap();
    std::fs::write(x.join("mine").join("notes.txt"), "mine").unwrap();
    let report = std::fs::read(&html).unwrap();
    let o = brickprof(&cli::demo_args(
        &x,
        &["--timeline", "sim", "--trace-format", "chrome"],
    ));
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(text(&o).0.contains("removed"), "{:?}", text(&o));
    assert_eq!(
        names(&x),
        ["mine", "profile.json", "report.html", "trace.json"],
        "the earlier run's checksums, captures and Perfetto trace are gone"
    );
    assert_eq!(std::fs::read(&html).unwrap(), report);
    assert_eq!(
        std::fs::read_to_string(x.join("mine").join("notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(names(tmp.path()), ["run"]);
}
