//! The one way brickprof writes a file: [`OutputFile`]. Every file the library and the CLI write
//! (profiles, checksum logs, captures, traces, `merge -o`, `convert -o`, the HTML report,
//! flamegraphs, folded stacks, DOT graphs) goes through it, so every output is written whole or
//! not at all, and nothing that is not a regular file is ever replaced. Specified in
//! `spec/profile-format.md` ("Reading and writing files").
//!
//! What happens is decided once, from what the path is ([`Target::of`]):
//!
//! | the path is | written |
//! |---|---|
//! | a regular file, or nothing yet | into a temporary file beside it, fsynced, renamed over it at [`OutputFile::commit`] (permissions kept) |
//! | a symbolic link (a chain, a dangling one) | the same, at the link's final target; the link stays a link |
//! | a named pipe, a character device | into a temporary file in [`std::env::temp_dir`] (unnamed at once on Unix), copied into the pipe or device at commit (on Linux, a pipe that no reader opens within 5 seconds is an error, never a hang) |
//! | a directory, a block device, a socket | refused: [`Error::NotAnOutput`] |
//!
//! An [`OutputFile`] dropped without a commit (an error, a panic, an early return) removes its
//! temporary file and sends nothing: the old file, pipe or device is left as it was.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

/// Links followed for a path that does not exist yet before giving up (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Where an output's bytes go, decided from what its path is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A regular file or a path that does not exist yet (a link's final target, where the path
    /// is a link): replaced by renaming a temporary file beside it.
    Replace(PathBuf),
    /// A named pipe or a character device: opened (never created) and written in place, once
    /// the output is whole.
    InPlace(PathBuf),
}

impl Target {
    /// What `path` is, and so how it is written; a path that cannot be written to (a
    /// directory, a block device, a socket) is an [`Error::NotAnOutput`].
    fn of(path: &Path) -> Result<Target> {
        match std::fs::metadata(path) {
            Ok(meta) => {
                let kind = meta.file_type();
                if kind.is_file() {
                    let is_link = std::fs::symlink_metadata(path)
                        .map_err(|e| Error::io(path, e))?
                        .file_type()
                        .is_symlink();
                    return Ok(Target::Replace(if is_link {
                        std::fs::canonicalize(path).map_err(|e| Error::io(path, e))?
                    } else {
                        path.to_path_buf()
                    }));
                }
                match streamed_kind(&meta) {
                    // Opened by the path as given: the system follows any link (also the
                    // magic ones of /proc, like /dev/stdout to a pipe).
                    Ok(()) => Ok(Target::InPlace(path.to_path_buf())),
                    Err(what) => Err(Error::NotAnOutput {
                        path: path.to_path_buf(),
                        what,
                    }),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Ok(Target::Replace(end_of_links(path)?))
            }
            Err(e) => Err(Error::io(path, e)),
        }
    }
}

/// A named pipe or a character device is written in place; anything else that is not a
/// regular file is refused, with what it is.
fn streamed_kind(meta: &std::fs::Metadata) -> std::result::Result<(), &'static str> {
    if meta.is_dir() {
        return Err("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() || t.is_char_device() {
            return Ok(());
        }
        if t.is_block_device() {
            return Err("a block device");
        }
        if t.is_socket() {
            return Err("a socket");
        }
    }
    Err("not a regular file")
}

/// The name a path that does not exist yet stands for: itself, or where its chain of
/// (dangling) symbolic links ends.
fn end_of_links(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p).map_err(|e| Error::io(path, e))?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(Error::io(
        path,
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many levels of symbolic links",
        ),
    ))
}

/// A file being written: whole or not at all, never replacing what is not a regular file (see
/// the module docs and `spec/profile-format.md`, "Reading and writing files").
///
/// Write into it ([`Write`], buffered), then [`OutputFile::commit`]: only then does the new
/// content appear at its path. Dropped without a commit (an error, a panic, an early return),
/// it removes its temporary file and the old file stays as it was. A write that failed makes
/// the commit fail too, so a file with a hole is never put in place.
///
/// ```
/// use std::io::Write;
/// use brickprof::io::OutputFile;
///
/// let dir = std::env::temp_dir().join(format!("brickprof-doc-out-{}", std::process::id()));
/// let path = dir.join("report.txt");
/// let mut out = OutputFile::create(&path)?;
/// out.write_all(b"whole").map_err(|e| brickprof::Error::Io { path: path.clone(), source: e })?;
/// assert!(!path.exists(), "nothing appears before the commit");
/// out.commit()?;
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "whole");
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug)]
pub struct OutputFile {
    /// The path as given (errors name it).
    path: PathBuf,
    target: Target,
    /// A temporary file that still has a name (removed unless it was renamed into place).
    tmp: Option<PathBuf>,
    out: Option<BufWriter<File>>,
    /// A write failed: the commit is refused.
    failed: bool,
    committed: bool,
}

impl OutputFile {
    /// Start writing `path`: its temporary file is created (and, for a regular file or a new
    /// path, the parent directories). A directory, a block device or a socket at `path` is an
    /// [`Error::NotAnOutput`]; a folder that cannot be written to is an [`Error::Io`] naming
    /// `path`.
    pub fn create(path: impl AsRef<Path>) -> Result<OutputFile> {
        let path = path.as_ref();
        let target = Target::of(path)?;
        let (tmp, file) = match &target {
            Target::Replace(to) => {
                let dir = parent_of(to);
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(path, in_dir(&dir, e)))?;
                let name = to.file_name().ok_or_else(|| {
                    Error::io(
                        path,
                        io::Error::new(io::ErrorKind::InvalidInput, "has no file name"),
                    )
                })?;
                let (tmp, file) = create_temp(&dir, &name.to_string_lossy())
                    .map_err(|e| Error::io(path, in_dir(&dir, e)))?;
                (Some(tmp), file)
            }
            Target::InPlace(_) => {
                // Not beside the pipe or device (its folder may be /dev): in the system's
                // temporary folder, unnamed at once where the system allows (a kill leaves
                // nothing behind).
                let dir = std::env::temp_dir();
                let (tmp, file) = create_temp(&dir, "brickprof-output")
                    .map_err(|e| Error::io(path, in_dir(&dir, e)))?;
                #[cfg(unix)]
                let tmp = std::fs::remove_file(&tmp).err().map(|_| tmp);
                #[cfg(not(unix))]
                let tmp = Some(tmp);
                (tmp, file)
            }
        };
        Ok(OutputFile {
            path: path.to_path_buf(),
            target,
            tmp,
            out: Some(BufWriter::with_capacity(1 << 16, file)),
            failed: false,
            committed: false,
        })
    }

    /// Write `bytes` to `path`, whole or not at all: [`Self::create`], write, [`Self::commit`].
    pub(crate) fn write_whole(path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        write_atomic(path.as_ref(), |f| f.write_all(bytes))
    }

    /// The path being written, as given.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Put the output in place: flush and fsync the temporary file and rename it over the
    /// target (keeping an existing file's permissions), or copy it into the pipe or device.
    /// Until this returns `Ok`, the old file is untouched. On an error (an earlier write that
    /// failed, a full disk, a target that is no longer a regular file) nothing is put in place,
    /// the temporary file is removed, and the error names the path. Committing twice is a
    /// no-op.
    pub fn commit(&mut self) -> Result<()> {
        if self.committed {
            return Ok(());
        }
        let Some(out) = self.out.take() else {
            return Err(self.not_written());
        };
        if self.failed {
            self.discard();
            return Err(self.not_written());
        }
        match self.put_in_place(out) {
            Ok(()) => {
                self.committed = true;
                self.discard();
                Ok(())
            }
            Err(e) => {
                self.discard();
                Err(Error::io(&self.path, e))
            }
        }
    }

    fn put_in_place(&mut self, out: BufWriter<File>) -> io::Result<()> {
        let mut file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        match &self.target {
            Target::Replace(to) => {
                let tmp = self
                    .tmp
                    .clone()
                    .ok_or_else(|| io::Error::other("the temporary file is gone"))?;
                let old = std::fs::symlink_metadata(to).ok();
                if let Some(old) = &old {
                    if !old.is_file() {
                        // Made since `create` (a pipe, a link, a folder): never replaced.
                        return Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            "became something other than a regular file while it was written; not replaced",
                        ));
                    }
                    file.set_permissions(old.permissions())?;
                }
                file.sync_all()?;
                drop(file);
                std::fs::rename(&tmp, to)?;
                self.tmp = None;
                sync_dir(&parent_of(to));
            }
            Target::InPlace(to) => {
                file.seek(SeekFrom::Start(0))?;
                let mut dest = open_in_place(to)?;
                io::copy(&mut file, &mut dest)?;
                dest.flush()?;
            }
        }
        Ok(())
    }

    /// Close and remove the temporary file (if it still has a name).
    fn discard(&mut self) {
        self.out = None;
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }

    fn not_written(&self) -> Error {
        Error::io(
            &self.path,
            io::Error::other("not written: an earlier write or commit failed"),
        )
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = match self.out.as_mut() {
            Some(o) => o.write(buf),
            None => Err(io::Error::other(
                "the file is already committed or discarded",
            )),
        };
        self.failed |= written.is_err();
        written
    }

    fn flush(&mut self) -> io::Result<()> {
        let flushed = self.out.as_mut().map_or(Ok(()), Write::flush);
        self.failed |= flushed.is_err();
        flushed
    }
}

impl Drop for OutputFile {
    /// Without a commit: the temporary file is removed, nothing is put in place.
    fn drop(&mut self) {
        self.discard();
    }
}

/// How long a commit into a named pipe waits for a reader to open it (Linux): then the output
/// fails with an error naming the pipe instead of waiting for ever.
#[cfg(target_os = "linux")]
const PIPE_READER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Open a named pipe or a character device (never creating it) to write the whole output into.
fn open_in_place(to: &Path) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::FileTypeExt;
        if std::fs::metadata(to).is_ok_and(|m| m.file_type().is_fifo()) {
            return open_pipe(to, PIPE_READER_WAIT);
        }
    }
    OpenOptions::new().write(true).open(to)
}

/// Open the named pipe `to` for writing once a reader has it open, waiting at most `wait` for
/// one: a plain open would block until a reader comes, for ever if none does. The open does not
/// wait (`O_NONBLOCK`: no reader is `ENXIO`) and is retried; the pipe is then made blocking
/// again, so that writes wait for a slow reader as usual.
#[cfg(target_os = "linux")]
fn open_pipe(to: &Path, wait: std::time::Duration) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let deadline = std::time::Instant::now() + wait;
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(to)
        {
            Ok(file) => {
                let fd = file.as_raw_fd();
                // SAFETY: `fd` is the open descriptor `file` owns for the whole call; F_GETFL
                // reads its status flags, nothing else.
                let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
                if flags < 0 {
                    return Err(io::Error::last_os_error());
                }
                // SAFETY: as above; F_SETFL sets its status flags, nothing else.
                if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
                    return Err(io::Error::last_os_error());
                }
                return Ok(file);
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if std::time::Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::WouldBlock,
                        format!(
                            "a named pipe that no reader opened within {} seconds; nothing was \
                             written (start the reader first, or write to a regular file)",
                            wait.as_secs()
                        ),
                    ));
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Replace `path` with what `write` writes, whole or not at all (an [`OutputFile`] committed
/// when `write` succeeds; on an error the old file stays).
pub(crate) fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let mut out = OutputFile::create(path)?;
    write(&mut out).map_err(|e| Error::io(path, e))?;
    out.commit()
}

/// The folder a file is in (`.` for a bare name).
fn parent_of(path: &Path) -> PathBuf {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    }
}

/// An I/O error about a folder, saying which (the error itself names the output).
fn in_dir(dir: &Path, e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("cannot create a file in {}: {e}", dir.display()),
    )
}

/// Create a new temporary file in `dir`, named so that no two writers (processes or threads)
/// share one: `.NAME.tmp-PID-COUNTER-NANOS`, created exclusively, readable and writable.
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}-{nanos:09}", std::process::id()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("could not create a temporary file")))
}

/// Make a rename in `dir` durable (best effort: not every platform can open a directory).
pub(crate) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temps_in(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp-"))
            .collect()
    }

    // spec/profile-format.md "Reading and writing files": a failing write (a full disk) leaves
    // the previous file intact and no temporary file behind.
    #[test]
    fn a_failing_write_keeps_the_old_file_and_removes_the_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile.json");
        std::fs::write(&path, "old, complete").unwrap();
        let err = write_atomic(&path, |f| {
            f.write_all(b"new, but half")?;
            Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
        })
        .unwrap_err();
        assert!(err.to_string().contains("profile.json"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old, complete");
        assert!(
            temps_in(dir.path()).is_empty(),
            "{:?}",
            temps_in(dir.path())
        );
    }

    // A write that failed on the file itself (the disk filled up under the buffer) poisons it:
    // the commit refuses, even if the caller ignored the error and went on.
    #[test]
    fn a_file_whose_write_failed_is_never_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.json");
        std::fs::write(&path, "old, complete").unwrap();
        let mut out = OutputFile::create(&path).unwrap();
        out.write_all(b"new").unwrap();
        out.failed = true; // what a failed `write` or `flush` sets
        let err = out.commit().unwrap_err();
        assert!(err.to_string().contains("trace.json"), "{err}");
        assert!(out.commit().is_err(), "a second commit must not succeed");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old, complete");
        assert!(temps_in(dir.path()).is_empty());
    }

    // Only the rename makes the new content appear: while the writer runs (a crash or kill -9
    // could strike at any point of it) the target holds the old content, or does not exist.
    #[test]
    fn the_target_changes_only_at_the_rename() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        write_atomic(&path, |f| {
            assert!(!path.exists(), "the target appeared before the rename");
            f.write_all(b"first")
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
        write_atomic(&path, |f| {
            f.write_all(b"sec")?;
            f.flush()?;
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
            f.write_all(b"ond")
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        assert!(temps_in(dir.path()).is_empty());
    }

    // A path that became something other than a regular file while it was written (here: a
    // folder) is never renamed over.
    #[test]
    fn a_target_that_changed_kind_before_the_commit_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.json");
        let mut out = OutputFile::create(&path).unwrap();
        out.write_all(b"new").unwrap();
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("kept"), "x").unwrap();
        let err = out.commit().unwrap_err();
        assert!(err.to_string().contains("out.json"), "{err}");
        assert!(path.join("kept").is_file());
        assert!(temps_in(dir.path()).is_empty());
    }

    #[test]
    fn what_a_path_is_decides_how_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.json");
        assert_eq!(Target::of(&new).unwrap(), Target::Replace(new.clone()));
        std::fs::write(&new, "x").unwrap();
        assert_eq!(Target::of(&new).unwrap(), Target::Replace(new.clone()));
        assert!(matches!(
            Target::of(dir.path()),
            Err(Error::NotAnOutput {
                what: "a directory",
                ..
            })
        ));
        #[cfg(unix)]
        {
            let link = dir.path().join("link.json");
            std::os::unix::fs::symlink("new.json", &link).unwrap();
            assert_eq!(
                Target::of(&link).unwrap(),
                Target::Replace(std::fs::canonicalize(&new).unwrap())
            );
            let dangling = dir.path().join("dangling.json");
            std::os::unix::fs::symlink("not-yet.json", &dangling).unwrap();
            assert_eq!(
                Target::of(&dangling).unwrap(),
                Target::Replace(dir.path().join("not-yet.json"))
            );
        }
    }
}
