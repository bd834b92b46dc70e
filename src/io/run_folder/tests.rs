//! spec/profile-format.md "A run folder": a run folder is replaced whole, what is not a run's
//! survives, and a failure or a kill at any point leaves the earlier run or the new one.

use std::collections::BTreeMap;

use super::*;

/// Everything under `dir`: relative path -> file content, `-> TARGET` for a link, `/` for a
/// folder.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, format!("-> {}", t.display()));
            } else if m.is_dir() {
                out.insert(rel, "/".into());
                walk(root, &p, out);
            } else {
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The names in `dir` (to see staging folders beside a run folder).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A folder holding an earlier run (`old` in each file) and things that are not a run's: a
/// file, a folder with a file, a link.
fn earlier_run(x: &Path) {
    std::fs::create_dir_all(x.join("plots")).unwrap();
    for f in ["profile.json", "checksums.json", "trace.pftrace"] {
        std::fs::write(x.join(f), format!("old {f}")).unwrap();
    }
    std::fs::write(x.join("notes.txt"), "mine").unwrap();
    std::fs::write(x.join("plots").join("a.svg"), "svg").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("notes.txt", x.join("link")).unwrap();
}

/// What [`earlier_run`] holds that is not a run's.
fn foreign(snap: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    snap.iter()
        .filter(|(k, _)| !RUN_FILES.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The new run's files: `profile.json` and `trace.json`.
const NEW: [&str; 2] = ["profile.json", "trace.json"];

/// Write file `i` of the new run, or fail when `i == fail_at` (a writer failing mid-run).
fn write_file(folder: &RunFolder, i: usize, fail_at: Option<usize>) -> Result<()> {
    if Some(i) == fail_at {
        return Err(Error::io(
            folder.staging(),
            std::io::Error::other("disk full (test)"),
        ));
    }
    let name = NEW[i];
    std::fs::write(
        folder.path(name)?,
        format!("new {name} {}", folder.run_id()),
    )
    .map_err(|e| Error::io(folder.staging(), e))
}

/// Write the whole new run.
fn write_all(folder: &RunFolder, fail_at: Option<usize>) -> Result<()> {
    (0..NEW.len()).try_for_each(|i| write_file(folder, i, fail_at))
}

/// The run files of `snap` and whether they are all the earlier run's or all one new run's.
fn run_files_are_one_run(snap: &BTreeMap<String, String>) -> &'static str {
    let run: Vec<&String> = RUN_FILES.iter().filter_map(|f| snap.get(*f)).collect();
    if run.iter().all(|c| c.starts_with("old ")) && run.len() == 3 {
        return "old";
    }
    let ids: std::collections::HashSet<&str> =
        run.iter().map(|c| c.rsplit(' ').next().unwrap()).collect();
    assert!(
        run.len() == NEW.len() && run.iter().all(|c| c.starts_with("new ")) && ids.len() == 1,
        "a mixed run folder: {snap:?}"
    );
    "new"
}

#[test]
fn a_new_folder_is_created_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("out").join("run");
    let folder = RunFolder::create(&x).unwrap();
    assert!(!x.exists(), "nothing appears before the commit");
    write_all(&folder, None).unwrap();
    let done = folder.commit().unwrap();
    assert_eq!(done.path, x);
    assert_eq!(done.removed, Vec::<String>::new());
    assert_eq!(run_files_are_one_run(&snapshot(&x)), "new");
    assert_eq!(
        names(&tmp.path().join("out")),
        ["run"],
        "no staging folder left"
    );
}

#[test]
fn a_commit_replaces_the_run_and_keeps_what_is_not_a_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("run");
    earlier_run(&x);
    let before = snapshot(&x);
    let folder = RunFolder::create(&x).unwrap();
    write_all(&folder, None).unwrap();
    let done = folder.commit().unwrap();
    let after = snapshot(&x);
    assert_eq!(run_files_are_one_run(&after), "new");
    assert_eq!(
        foreign(&after),
        foreign(&before),
        "what was not the run's is kept"
    );
    assert_eq!(done.removed, ["checksums.json", "trace.pftrace"]);
    assert_eq!(done.kept, None);
    assert_eq!(names(tmp.path()), ["run"], "no staging folder left");
}

#[test]
fn a_writer_failing_at_any_file_leaves_the_earlier_run() {
    // The failure injected between files: the folder is as it was, nothing left beside it.
    for fail_at in 0..NEW.len() {
        let tmp = tempfile::tempdir().unwrap();
        let x = tmp.path().join("run");
        earlier_run(&x);
        let before = snapshot(&x);
        let folder = RunFolder::create(&x).unwrap();
        assert!(write_all(&folder, Some(fail_at)).is_err());
        drop(folder);
        assert_eq!(snapshot(&x), before, "failing at file {fail_at}");
        assert_eq!(names(tmp.path()), ["run"]);
    }
}

/// Simulate `kill -9` of a run that wrote `written` files (nothing cleaned, lock released).
fn killed(mut folder: RunFolder) {
    folder.done = true;
    folder._lock = None;
}

#[test]
fn a_kill_at_any_point_leaves_one_whole_run_and_the_next_run_cleans_up() {
    // Killed while writing (after each file), after carrying, after the swap: the folder holds
    // the earlier run or the new one whole, and a following run restores everything that was
    // not a run's and leaves no staging folder.
    enum At {
        Writing(usize),
        Commit(Step),
    }
    let points = (0..=NEW.len())
        .map(At::Writing)
        .chain([At::Commit(Step::Carried), At::Commit(Step::Swapped)]);
    for at in points {
        let tmp = tempfile::tempdir().unwrap();
        let x = tmp.path().join("run");
        earlier_run(&x);
        let before = snapshot(&x);
        let mut folder = RunFolder::create(&x).unwrap();
        match at {
            At::Writing(n) => {
                (0..n).for_each(|i| write_file(&folder, i, None).unwrap());
                killed(folder);
            }
            At::Commit(step) => {
                write_all(&folder, None).unwrap();
                folder.crash_at = Some(step);
                assert!(folder.commit().is_err());
            }
        }
        let after = snapshot(&x);
        let which = run_files_are_one_run(&after);
        for (k, v) in foreign(&before) {
            // Files are carried as links: never absent. A folder is moved just before the
            // swap, so a kill in that instant leaves it in the staging folder.
            if !k.starts_with("plots") {
                assert_eq!(after.get(&k), Some(&v), "{k} after a kill ({which})");
            }
        }
        // The next run into the folder retires the leftover and puts everything back.
        let next = RunFolder::create(&x).unwrap();
        drop(next);
        assert_eq!(names(tmp.path()), ["run"], "leftovers retired");
        let cleaned = snapshot(&x);
        assert_eq!(foreign(&cleaned), foreign(&before));
        assert_eq!(run_files_are_one_run(&cleaned), which);
    }
}

#[test]
fn a_live_runs_staging_folder_is_not_taken_for_a_leftover() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("run");
    let a = RunFolder::create(&x).unwrap();
    write_all(&a, None).unwrap();
    let b = RunFolder::create(&x).unwrap();
    #[cfg(unix)]
    assert!(
        a.staging().join("profile.json").is_file(),
        "a live run's files kept"
    );
    drop(b);
    a.commit().unwrap();
    assert_eq!(run_files_are_one_run(&snapshot(&x)), "new");
}

#[test]
fn an_abandoned_run_keeps_its_files_beside_until_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("run");
    earlier_run(&x);
    let before = snapshot(&x);
    let folder = RunFolder::create(&x).unwrap();
    write_file(&folder, 1, None).unwrap();
    let kept = folder.abandon().expect("the partial trace is kept");
    assert!(kept.join("trace.json").is_file());
    assert_eq!(snapshot(&x), before);
    drop(RunFolder::create(&x).unwrap());
    assert!(!kept.exists());
    assert!(
        RunFolder::create(&x).unwrap().abandon().is_none(),
        "empty: removed"
    );
    assert_eq!(names(tmp.path()), ["run"]);
}

#[cfg(unix)]
#[test]
fn a_linked_folder_is_replaced_behind_its_link() {
    let tmp = tempfile::tempdir().unwrap();
    let (real, link) = (tmp.path().join("real"), tmp.path().join("link"));
    earlier_run(&real);
    std::os::unix::fs::symlink("real", &link).unwrap();
    let folder = RunFolder::create(&link).unwrap();
    write_all(&folder, None).unwrap();
    folder.commit().unwrap();
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("real"),
        "the link stays"
    );
    assert_eq!(run_files_are_one_run(&snapshot(&link)), "new");
    assert_eq!(names(tmp.path()), ["link", "real"]);
}

#[test]
fn what_cannot_be_a_run_folder_is_refused_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let reason = |p: &Path| match RunFolder::create(p).unwrap_err() {
        Error::RunFolder { path, reason } => {
            assert_eq!(path, p);
            reason
        }
        other => panic!("{other:?}"),
    };
    assert!(reason(&file).contains("not a folder"));
    assert!(reason(&file.join("sub")).contains("cannot create the folder"));
    let taken = tmp.path().join("taken");
    std::fs::create_dir_all(taken.join("checksums.json")).unwrap();
    assert!(reason(&taken).contains("checksums.json there is a directory"));
    #[cfg(unix)]
    {
        let dangling = tmp.path().join("dangling");
        std::os::unix::fs::symlink("missing", &dangling).unwrap();
        assert!(reason(&dangling).contains("does not exist"));
    }
    let ok = RunFolder::create(tmp.path().join("ok")).unwrap();
    assert!(matches!(
        ok.path("notes.txt"),
        Err(Error::InvalidValue { .. })
    ));
    drop(ok);
    let mut left = names(tmp.path());
    left.retain(|n| n.starts_with('.'));
    assert!(left.is_empty(), "nothing left beside: {left:?}");
}

#[cfg(unix)]
#[test]
fn a_read_only_folder_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let x = tmp.path().join("run");
    earlier_run(&x);
    std::fs::set_permissions(&x, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(x.join("probe"), "").is_ok() {
        eprintln!("skipped: this user writes into read-only folders (root)");
        let _ = std::fs::remove_file(x.join("probe"));
    } else {
        let e = RunFolder::create(&x).unwrap_err();
        assert!(matches!(e, Error::RunFolder { .. }), "{e}");
    }
    std::fs::set_permissions(&x, std::fs::Permissions::from_mode(0o755)).unwrap();
}
