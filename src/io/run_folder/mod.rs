//! [`RunFolder`]: a folder of one run's files (`brickprof demo --out DIR`, `brickprof-candle
//! generate --out DIR`) written whole or not at all (spec/profile-format.md "A run folder").
//!
//! The run's files are written into a new staging folder beside `DIR`
//! (`.DIR.partial-PID-N`), which then takes `DIR`'s place in one step (Linux:
//! `renameat2(RENAME_EXCHANGE)`; elsewhere two renames, not atomic). What `DIR` held that is
//! not a run's file is carried into the new folder first (hard links for files, so that it is
//! never absent from `DIR`; a folder is moved just before the swap), and the earlier run's
//! folder is then retired ([`retire`]). A crash leaves `DIR` holding the earlier run or the new
//! one, whole; a killed run's staging folder is ignored by readers (it is beside `DIR`, not in
//! it) and retired by the next run into `DIR`.

mod retire;
mod swap;

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::io::output_file::sync_dir;
use crate::io::run_id::RunId;
use crate::{Error, Result};
use retire::{is_own, retire};

/// Every file a run folder may hold: a run writes some of them, and the earlier run's files of
/// these names are replaced (or removed) by the next run; anything else in the folder is not a
/// run's and is kept.
pub(crate) const RUN_FILES: [&str; 6] = [
    "profile.json",
    "checksums.json",
    "captures.safetensors",
    "tokens.json",
    "trace.json",
    "trace.pftrace",
];

/// A run folder being written: create it before the run, write the run's files at
/// [`RunFolder::path`], stamp them with [`RunFolder::run_id`], then [`RunFolder::commit`]. Dropped
/// without a commit (an error), it leaves the folder as it was.
///
/// ```
/// use brickprof::io::RunFolder;
/// # let tmp = tempfile::tempdir()?;
/// # let dir = tmp.path().join("run");
/// let folder = RunFolder::create(&dir)?;
/// let mut tokens = brickprof::profile::GeneratedTokens::new(vec![7], vec![" a".into()])?;
/// tokens.set_run_id(Some(folder.run_id().clone()));
/// tokens.save(folder.path("tokens.json")?)?;
/// let done = folder.commit()?;
/// assert!(done.path.join("tokens.json").is_file());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RunFolder {
    /// The folder as named (for messages).
    given: PathBuf,
    /// The folder itself: a symbolic link resolved, absolute.
    target: PathBuf,
    /// Where the run's files are written.
    staging: PathBuf,
    run_id: RunId,
    /// Held on the staging folder while the run writes it, so that another run does not take
    /// it for a killed run's leftover (released by the system when the process dies).
    _lock: Option<File>,
    /// Swapped in, or given up: nothing left for `drop` to undo.
    done: bool,
    /// Tests: stop as if killed at this step.
    #[cfg(test)]
    crash_at: Option<Step>,
}

/// What [`RunFolder::commit`] did: plain data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The run folder, as it was named to [`RunFolder::create`].
    pub path: PathBuf,
    /// The earlier run's files that this run did not write (gone with the earlier run).
    pub removed: Vec<String>,
    /// The earlier run's folder, when it still holds something that could not be carried into
    /// the new one (something of that name appeared in the folder meanwhile); `None` when it is
    /// gone, as it normally is.
    pub kept: Option<PathBuf>,
}

/// Points of [`RunFolder::commit`] where a test stops as if the process were killed.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// What was not the run's is carried into the staging folder; nothing swapped yet.
    Carried,
    /// The new folder is in place; the earlier one not yet retired.
    Swapped,
}

/// `.NAME.partial-`: how the staging folders beside a run folder named NAME begin.
fn staging_prefix(name: &std::ffi::OsStr) -> OsString {
    let mut s = OsString::from(".");
    s.push(name);
    s.push(".partial-");
    s
}

/// Lock a staging folder: `Ok(Some)` held, `Ok(None)` where folders cannot be locked (other
/// platforms, file systems without locks), `Err` when another process holds it.
fn lock(dir: &Path) -> std::result::Result<Option<File>, ()> {
    #[cfg(unix)]
    {
        let Ok(file) = File::open(dir) else {
            return Ok(None);
        };
        match file.try_lock() {
            Ok(()) => Ok(Some(file)),
            Err(std::fs::TryLockError::WouldBlock) => Err(()),
            Err(std::fs::TryLockError::Error(_)) => Ok(None),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(None)
    }
}

impl RunFolder {
    /// Get ready to write a run into `dir` (created on commit when missing), checking it before
    /// the run so that a bad `dir` costs nothing: it must be a folder (or a symbolic link to
    /// one, which stays), writable, neither a mount point nor the current folder (nor hold it),
    /// and its run files (spec/profile-format.md "A run folder": `profile.json`,
    /// `checksums.json`, `captures.safetensors`, `tokens.json`, `trace.json`, `trace.pftrace`)
    /// regular files. Staging folders of killed runs into
    /// `dir` are retired here. Errors: [`Error::RunFolder`] naming `dir` and why.
    pub fn create(dir: impl AsRef<Path>) -> Result<RunFolder> {
        let given = dir.as_ref().to_path_buf();
        let refuse = |reason: String| Error::RunFolder {
            path: given.clone(),
            reason,
        };
        let target = resolve(&given).map_err(refuse)?;
        let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
            return Err(refuse("it names no folder that can be replaced".into()));
        };
        std::fs::create_dir_all(parent).map_err(|e| {
            refuse(format!(
                "cannot create the folder {}: {e}",
                parent.display()
            ))
        })?;
        if target.is_dir() {
            check_existing(&target, parent).map_err(refuse)?;
        }
        retire_leftovers(parent, name, &target);
        let prefix = staging_prefix(name);
        let (staging, lock) = make_staging(parent, &prefix).map_err(|e| {
            refuse(format!(
                "cannot create a staging folder beside it in {}: {e}",
                parent.display()
            ))
        })?;
        Ok(RunFolder {
            given,
            target,
            staging,
            run_id: RunId::new(),
            _lock: lock,
            done: false,
            #[cfg(test)]
            crash_at: None,
        })
    }

    /// This run's id: stamp it into every file of the run.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The folder the run's files are written into until [`Self::commit`] (beside the run
    /// folder, named `.NAME.partial-PID-N`).
    #[cfg(test)]
    pub(crate) fn staging(&self) -> &Path {
        &self.staging
    }

    /// Where to write the run file `name` (one of the run files: `profile.json`,
    /// `checksums.json`, `captures.safetensors`, `tokens.json`, `trace.json`, `trace.pftrace`;
    /// another name is an [`Error::InvalidValue`]).
    pub fn path(&self, name: &str) -> Result<PathBuf> {
        if !RUN_FILES.contains(&name) {
            return Err(Error::invalid_value(
                "run folder file",
                name,
                format!("one of {}", RUN_FILES.join(", ")),
            ));
        }
        Ok(self.staging.join(name))
    }

    /// Swap the written run in for the folder's earlier content, whole: afterwards the folder
    /// holds this run's files and what it held that was not a run's file; the earlier run's
    /// files are gone. On an error the folder is as it was.
    pub fn commit(mut self) -> Result<Committed> {
        let given = self.given.clone();
        let io = |e: std::io::Error| Error::io(&given, e);
        for _ in 0..2 {
            match std::fs::symlink_metadata(&self.target) {
                Ok(m) if m.is_dir() => return self.replace(),
                Ok(_) => {
                    return Err(Error::RunFolder {
                        path: given.clone(),
                        reason: "it is no longer a folder".into(),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match swap::move_noreplace(&self.staging, &self.target) {
                        Ok(()) => {
                            self.done = true;
                            sync_parent(&self.target);
                            return Ok(Committed {
                                path: given.clone(),
                                removed: Vec::new(),
                                kept: None,
                            });
                        }
                        // Made meanwhile (another run): replace it as any other.
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(io(e)),
                    }
                }
                Err(e) => return Err(io(e)),
            }
        }
        Err(io(std::io::Error::other(
            "the folder keeps appearing and disappearing",
        )))
    }

    /// Give the run up, keeping what it wrote for inspection (a failed run's partial trace):
    /// the run folder keeps its earlier run, and the next run into it removes the staging
    /// folder. Returns the staging folder when it holds anything (it is removed otherwise).
    pub fn abandon(mut self) -> Option<PathBuf> {
        let empty = std::fs::read_dir(&self.staging).map_or(true, |mut d| d.next().is_none());
        if empty {
            return None; // `drop` removes it
        }
        self.done = true;
        Some(self.staging.clone())
    }

    /// The swap, for a run folder that exists.
    fn replace(&mut self) -> Result<Committed> {
        let io = |path: &Path, e: std::io::Error| Error::io(path, e);
        check_run_files(&self.target).map_err(|reason| Error::RunFolder {
            path: self.given.clone(),
            reason,
        })?;
        let staged: Vec<&str> = RUN_FILES
            .iter()
            .copied()
            .filter(|f| self.staging.join(f).is_file())
            .collect();
        carry(&self.target, &self.staging)?;
        #[cfg(test)]
        self.stop_here_in_tests(Step::Carried)?;
        let perms = std::fs::metadata(&self.target)
            .map_err(|e| io(&self.given, e))?
            .permissions();
        std::fs::set_permissions(&self.staging, perms).map_err(|e| io(&self.given, e))?;
        sync_dir(&self.staging);
        let parent = self.staging.parent().unwrap_or(Path::new("."));
        let prefix = staging_prefix(self.target.file_name().unwrap_or_default());
        let old = swap::swap(&self.staging, &self.target, || next_name(parent, &prefix))
            .map_err(|e| io(&self.given, e))?;
        // The new run is in place: whatever happens now, `drop` has nothing to undo.
        self.done = true;
        sync_parent(&self.target);
        #[cfg(test)]
        self.stop_here_in_tests(Step::Swapped)?;
        let retired = retire(&old, &self.target);
        Ok(Committed {
            path: self.given.clone(),
            removed: retired
                .removed
                .into_iter()
                .filter(|f| !staged.contains(&f.as_str()))
                .collect(),
            kept: retired.kept,
        })
    }

    /// Tests: at `step`, stop as a killed process would (nothing cleaned, the lock released).
    #[cfg(test)]
    fn stop_here_in_tests(&mut self, step: Step) -> Result<()> {
        if self.crash_at == Some(step) {
            self.done = true;
            self._lock = None;
            return Err(Error::io(
                &self.given,
                std::io::Error::other(format!("killed at {step:?} (test)")),
            ));
        }
        Ok(())
    }
}

impl Drop for RunFolder {
    /// Not committed: the staging folder is retired, and the run folder stays as it was.
    fn drop(&mut self) {
        if !self.done {
            retire(&self.staging, &self.target);
        }
    }
}

/// The folder `given` names: a symbolic link's target (so that the link stays), made absolute.
/// A reason when it is not a folder.
fn resolve(given: &Path) -> std::result::Result<PathBuf, String> {
    match std::fs::symlink_metadata(given) {
        Ok(m) if m.is_dir() => std::fs::canonicalize(given).map_err(|e| e.to_string()),
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(given) {
            Ok(t) if t.is_dir() => Ok(t),
            Ok(t) => Err(format!(
                "it is a link to {}, which is not a folder",
                t.display()
            )),
            Err(_) => Err(
                "it is a symbolic link to a folder that does not exist: create \
                           that folder, or name another"
                    .into(),
            ),
        },
        Ok(_) => Err("it is a file, not a folder".into()),
        Err(_) => std::path::absolute(given).map_err(|e| e.to_string()),
    }
}

/// Check an existing run folder before a run: not the current folder (nor holding it), not a
/// mount point, writable, its run files regular files.
fn check_existing(target: &Path, parent: &Path) -> std::result::Result<(), String> {
    if std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .is_ok_and(|cwd| cwd.starts_with(target))
    {
        return Err(
            "it is the current folder or holds it, and a run folder is replaced \
                    whole when a run is saved"
                .into(),
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
        if dev(target) != dev(parent) {
            return Err(
                "it is a mount point; a run folder is swapped in whole beside it, \
                        which cannot cross file systems: name a folder inside it"
                    .into(),
            );
        }
    }
    check_run_files(target)?;
    let probe = target.join(format!(".brickprof-probe-{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe);
    let _ = std::fs::remove_file(&probe);
    written.map(drop).map_err(|e| e.to_string())
}

/// Every entry of a [`RUN_FILES`] name in `target` is a regular file (a folder, a link or a
/// device of that name is not a run's, and would be lost or overwritten).
fn check_run_files(target: &Path) -> std::result::Result<(), String> {
    for name in RUN_FILES {
        if let Ok(m) = std::fs::symlink_metadata(target.join(name)) {
            let what = if m.is_dir() {
                "a directory"
            } else if m.file_type().is_symlink() {
                "a symbolic link"
            } else if !m.is_file() {
                "not a regular file"
            } else {
                continue;
            };
            return Err(format!(
                "{name} there is {what}, not a file brickprof wrote: move it away"
            ));
        }
    }
    Ok(())
}

/// Retire the staging folders of killed runs into `target` (those no live run holds locked).
fn retire_leftovers(parent: &Path, name: &std::ffi::OsStr, target: &Path) {
    let prefix = staging_prefix(name);
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let is_staging = entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(prefix.as_encoded_bytes());
        if !is_staging || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        // Locked: a live run is writing it. Unlockable: it cannot be told from one; left.
        if let Ok(Some(_held)) = lock(&entry.path()) {
            retire(&entry.path(), target);
        }
    }
}

/// A new, unused name `PREFIX PID-N` in `parent`.
fn next_name(parent: &Path, prefix: &OsString) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut name = prefix.clone();
    name.push(format!(
        "{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    parent.join(name)
}

/// Create a new staging folder in `parent`, locked. Another run may take it for a killed
/// run's in the instant before it is locked, and retire it: then it is made again.
fn make_staging(parent: &Path, prefix: &OsString) -> std::io::Result<(PathBuf, Option<File>)> {
    let mut tries = 0;
    loop {
        let path = next_name(parent, prefix);
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
        tries += 1;
        match lock(&path) {
            Ok(Some(held)) if tries < 16 && !is_at(&held, &path) => {}
            Ok(held) => return Ok((path, held)),
            Err(()) if tries < 16 => {}
            Err(()) => return Err(std::io::Error::other("another run keeps retiring it")),
        }
    }
}

/// Whether the folder `held` is still the one at `path` (not retired meanwhile).
fn is_at(held: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (held.metadata(), std::fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (held, path);
        true
    }
}

/// Carry what `target` holds that is not a run's into `staging`: files as hard links (the
/// file stays in `target` too), then folders (and what cannot be linked) moved.
fn carry(target: &Path, staging: &Path) -> Result<()> {
    let entries = std::fs::read_dir(target).map_err(|e| Error::io(target, e))?;
    let mut moves = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(target, e))?;
        let (from, to) = (entry.path(), staging.join(entry.file_name()));
        let meta = std::fs::symlink_metadata(&from).map_err(|e| Error::io(&from, e))?;
        if is_own(&entry.file_name().to_string_lossy(), &meta) {
            continue;
        }
        // Linux links a symbolic link itself; elsewhere a link may follow it: moved.
        let linkable = !meta.is_dir() && (cfg!(target_os = "linux") || !meta.is_symlink());
        if !(linkable && std::fs::hard_link(&from, &to).is_ok()) {
            moves.push((from, to));
        }
    }
    for (from, to) in moves {
        swap::move_noreplace(&from, &to).map_err(|e| Error::io(&from, e))?;
    }
    Ok(())
}

/// Make a rename in `path`'s folder durable.
fn sync_parent(path: &Path) {
    if let Some(p) = path.parent() {
        sync_dir(p);
    }
}

#[cfg(test)]
mod tests;
