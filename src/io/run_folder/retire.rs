//! Retiring a folder beside a run folder: a staging folder that was not swapped in (a failed
//! run, or one killed before its swap), or the earlier run's folder once the new one took its
//! place. A run's own files go; what was not the run's is never deleted: it is either the very
//! same file as one in the run folder (a hard link made when carrying it over), or it is moved
//! into the run folder.

use std::path::{Path, PathBuf};

use super::RUN_FILES;

/// What [`retire`] did.
#[derive(Debug, Default)]
pub(super) struct Retired {
    /// The run files it deleted.
    pub removed: Vec<String>,
    /// The folder, when it could not be emptied (it holds something that differs from what
    /// the run folder holds under that name); `None` once it is gone.
    pub kept: Option<PathBuf>,
}

/// Whether an entry of a run folder is the run's own: one of [`RUN_FILES`] as a regular file,
/// or what an interrupted brickprof save leaves (`.NAME.tmp-*` of a run file; the
/// `.brickprof-probe-*` file of brickprof 0.3).
pub(super) fn is_own(name: &str, meta: &std::fs::Metadata) -> bool {
    meta.is_file()
        && (RUN_FILES.contains(&name)
            || name.starts_with(".brickprof-probe-")
            || RUN_FILES.iter().any(|f| {
                name.strip_prefix('.')
                    .and_then(|n| n.strip_prefix(f))
                    .is_some_and(|r| r.starts_with(".tmp-"))
            }))
}

/// Whether `a` and `b` are one file (two hard links of it).
fn same_file(a: &std::fs::Metadata, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(b).is_ok_and(|b| a.dev() == b.dev() && a.ino() == b.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// Empty `folder` into the run folder `target` and remove it: its run files are deleted, an
/// entry that is the same file as `target`'s of that name is deleted, and any other entry is
/// moved into `target` (created when missing), never over something there. Best effort: what
/// cannot be moved stays, and so does the folder (`kept`).
pub(super) fn retire(folder: &Path, target: &Path) -> Retired {
    let mut retired = Retired::default();
    let Ok(entries) = std::fs::read_dir(folder) else {
        // Gone already (another run retired it), or unreadable: leave it.
        retired.kept = folder.exists().then(|| folder.to_path_buf());
        return retired;
    };
    for entry in entries.flatten() {
        let (path, name) = (entry.path(), entry.file_name());
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let name = name.to_string_lossy();
        let there = target.join(entry.file_name());
        if is_own(&name, &meta) {
            if std::fs::remove_file(&path).is_ok() && RUN_FILES.contains(&name.as_ref()) {
                retired.removed.push(name.into_owned());
            }
        } else if !meta.is_dir() && same_file(&meta, &there) {
            let _ = std::fs::remove_file(&path);
        } else {
            let _ = std::fs::create_dir_all(target);
            let _ = super::swap::move_noreplace(&path, &there);
        }
    }
    retired.removed.sort();
    if std::fs::remove_dir(folder).is_err() && folder.exists() {
        retired.kept = Some(folder.to_path_buf());
    }
    retired
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_files_are_run_files_and_interrupted_saves() {
        // spec/profile-format.md "A run folder": which entries are the run's own.
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, "x").unwrap();
            std::fs::symlink_metadata(&p).unwrap()
        };
        for own in [
            "profile.json",
            "captures.safetensors",
            ".profile.json.tmp-12-0-000000001",
            ".brickprof-probe-77",
        ] {
            assert!(is_own(own, &file(own)), "{own}");
        }
        for foreign in [
            "report.html",
            "profile.json.bak",
            ".profile.jsonx.tmp-1",
            "tmp-",
        ] {
            assert!(!is_own(foreign, &file(foreign)), "{foreign}");
        }
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let d = std::fs::symlink_metadata(dir.path().join("d")).unwrap();
        assert!(
            !is_own("profile.json", &d),
            "a directory is never a run file"
        );
    }

    #[test]
    fn retiring_deletes_run_files_and_links_and_moves_the_rest_back() {
        // spec/profile-format.md "A run folder": nothing that is not the run's is lost.
        let dir = tempfile::tempdir().unwrap();
        let (folder, target) = (dir.path().join(".x.partial-1-0"), dir.path().join("x"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(folder.join("profile.json"), "old").unwrap();
        std::fs::write(target.join("notes.txt"), "mine").unwrap();
        std::fs::hard_link(target.join("notes.txt"), folder.join("notes.txt")).unwrap();
        std::fs::create_dir(folder.join("plots")).unwrap();
        std::fs::write(folder.join("plots").join("a.svg"), "svg").unwrap();
        let r = retire(&folder, &target);
        assert_eq!(r.removed, ["profile.json"]);
        assert_eq!(r.kept, None);
        assert!(!folder.exists());
        assert_eq!(
            std::fs::read_to_string(target.join("notes.txt")).unwrap(),
            "mine"
        );
        assert_eq!(
            std::fs::read_to_string(target.join("plots").join("a.svg")).unwrap(),
            "svg"
        );
    }

    #[test]
    fn a_file_that_differs_from_the_run_folders_stays() {
        // spec/profile-format.md "A run folder": never over something there.
        let dir = tempfile::tempdir().unwrap();
        let (folder, target) = (dir.path().join(".x.partial-1-0"), dir.path().join("x"));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(folder.join("notes.txt"), "older").unwrap();
        std::fs::write(target.join("notes.txt"), "newer").unwrap();
        let r = retire(&folder, &target);
        assert_eq!(r.kept.as_deref(), Some(folder.as_path()));
        assert_eq!(
            std::fs::read_to_string(folder.join("notes.txt")).unwrap(),
            "older"
        );
        assert_eq!(
            std::fs::read_to_string(target.join("notes.txt")).unwrap(),
            "newer"
        );
    }
}
