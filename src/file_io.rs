//! Whole-file I/O that cannot hurt the tool or the user's files: bounded reads and atomic
//! replacement. Specified in `spec/profile-format.md` ("Reading and writing files").
//!
//! - Every load ([`crate::Profile::load`], [`crate::ChecksumLog::load`], [`crate::RunFile::load`])
//!   reads at most [`MAX_FILE_BYTES`], refuses devices (`/dev/zero` is an error, not a hang),
//!   accepts a UTF-8 byte-order mark and names the place of invalid UTF-8.
//! - Every save ([`crate::Profile::save`], [`crate::ChecksumLog::save`],
//!   [`crate::ChromeTrace::save`]) writes a temporary file in the target's directory, flushes
//!   and fsyncs it, then renames it over the target: a reader, a crash or a full disk sees the
//!   old file or the new one, never a mix or a truncation.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

/// The largest file brickprof reads: 1 GiB. A profile of 64 layers × 1,000 bricks is about
/// 100 MiB; anything larger is not a brickprof file (or is an input like `/dev/zero`).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Read a whole UTF-8 text file of at most [`MAX_FILE_BYTES`], with errors naming it.
///
/// Refused with an [`Error`]: a directory, a device (`/dev/zero`, a terminal), a file over the
/// limit ([`Error::FileTooLarge`]), text that is not UTF-8 (the line and column of the first bad
/// byte), an empty file. A leading UTF-8 byte-order mark is stripped. Pipes are read, bounded.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    read_text_limited(path, MAX_FILE_BYTES)
}

fn read_text_limited(path: &Path, limit: u64) -> Result<String> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if let Some(what) = not_readable_kind(&meta) {
        return Err(Error::io(
            path,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("is {what}, not a file brickprof can read"),
            ),
        ));
    }
    if meta.is_file() && meta.len() > limit {
        return Err(Error::FileTooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    let bytes = read_bounded(file, limit).map_err(|e| match e {
        Bounded::Io(e) => Error::io(path, e),
        Bounded::TooLarge => Error::FileTooLarge {
            path: path.to_path_buf(),
            limit,
        },
    })?;
    let text = decode_utf8(path, bytes)?;
    if text.trim().is_empty() {
        return Err(Error::invalid(path, "the file is empty"));
    }
    Ok(text)
}

/// What a file is when it is not something brickprof reads (a directory, a device).
fn not_readable_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    if meta.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    None
}

/// Why [`read_bounded`] failed.
#[derive(Debug)]
enum Bounded {
    Io(io::Error),
    TooLarge,
}

/// Read everything from `r`, failing as soon as more than `limit` bytes arrive.
fn read_bounded(r: impl Read, limit: u64) -> std::result::Result<Vec<u8>, Bounded> {
    let mut bytes = Vec::new();
    r.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Bounded::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Bounded::TooLarge);
    }
    Ok(bytes)
}

/// UTF-8 text without a leading byte-order mark; invalid UTF-8 is an [`Error::Parse`] at the
/// first bad byte.
fn decode_utf8(path: &Path, mut bytes: Vec<u8>) -> Result<String> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = 1 + String::from_utf8_lossy(&valid[line_start..])
            .chars()
            .count();
        let byte = e.as_bytes()[valid.len()];
        Error::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message: format!("not UTF-8 text (byte 0x{byte:02X}); brickprof files are UTF-8 JSON"),
        }
    })
}

/// Replace `path` with `text` atomically (see [`write_atomic`]).
pub(crate) fn write_text_atomic(path: &Path, text: &str) -> Result<()> {
    write_atomic(path, |f| f.write_all(text.as_bytes()))
}

/// Replace the file at `path` atomically with what `write` writes, creating parent directories.
///
/// `write` fills a new, uniquely named temporary file in the target's directory
/// (`.NAME.tmp-PID-COUNTER-NANOS`, created exclusively); the file is then flushed, fsynced and
/// renamed over `path`, and the directory is fsynced. Until the rename the target is untouched;
/// after it, the target is the complete new file. On any failure the temporary file is removed
/// and the old file (if any) stays as it was. An existing target's permissions are kept; a
/// symbolic link is followed (its target is replaced, the link stays). An existing target that
/// is neither a regular file nor a directory (`/dev/null`, `/dev/stdout`, a named pipe) is
/// written in place: it cannot be replaced, and must not be.
pub(crate) fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return write_in_place(path, write);
    }
    let target = resolve_link(path);
    let dir = match target.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    if target.is_dir() {
        return Err(Error::io(
            path,
            io::Error::new(
                io::ErrorKind::IsADirectory,
                "is a directory; cannot write a file there",
            ),
        ));
    }
    let name = target
        .file_name()
        .ok_or_else(|| {
            Error::io(
                path,
                io::Error::new(io::ErrorKind::InvalidInput, "has no file name"),
            )
        })?
        .to_string_lossy()
        .into_owned();
    let (tmp_path, mut tmp) = create_temp(&dir, &name)?;
    let written = (|| {
        write(&mut tmp)?;
        tmp.flush()?;
        if let Ok(old) = std::fs::metadata(&target) {
            tmp.set_permissions(old.permissions())?;
        }
        tmp.sync_all()
    })();
    drop(tmp);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp_path);
        return Err(Error::io(path, e));
    }
    if let Err(e) = std::fs::rename(&tmp_path, &target) {
        let _ = std::fs::remove_file(&tmp_path);
        return Err(Error::io(path, e));
    }
    sync_dir(&dir);
    Ok(())
}

/// Write into an existing device or pipe (no temporary file, no rename, no fsync).
fn write_in_place(path: &Path, write: impl FnOnce(&mut File) -> io::Result<()>) -> Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    write(&mut f)
        .and_then(|()| f.flush())
        .map_err(|e| Error::io(path, e))
}

/// The file a path names: a symbolic link's target (so saving through a link replaces the
/// linked file), otherwise the path itself.
fn resolve_link(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).unwrap_or_else(|_| {
            // A dangling link: write where it points.
            std::fs::read_link(path)
                .map(|t| match path.parent() {
                    Some(p) if t.is_relative() => p.join(t),
                    _ => t,
                })
                .unwrap_or_else(|_| path.to_path_buf())
        }),
        _ => path.to_path_buf(),
    }
}

/// Create a new temporary file next to the target, named so that no two writers (processes or
/// threads) share one.
pub(crate) fn create_temp(dir: &Path, name: &str) -> Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}-{nanos:09}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(Error::io(&tmp, e)),
        }
    }
    Err(Error::io(
        dir,
        last.unwrap_or_else(|| io::Error::other("could not create a temporary file")),
    ))
}

/// Make a rename in `dir` durable (best effort: not every platform can open a directory).
fn sync_dir(dir: &Path) {
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
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
            f.write_all(b"ond")
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "second");
        assert!(temps_in(dir.path()).is_empty());
    }

    #[test]
    fn permissions_of_the_old_file_are_kept() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("p.json");
            std::fs::write(&path, "x").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
            write_text_atomic(&path, "y").unwrap();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640);
        }
    }

    #[test]
    fn a_link_is_followed_not_replaced() {
        #[cfg(unix)]
        {
            let dir = tempfile::tempdir().unwrap();
            let real = dir.path().join("real.json");
            let link = dir.path().join("link.json");
            std::fs::write(&real, "old").unwrap();
            std::os::unix::fs::symlink(&real, &link).unwrap();
            write_text_atomic(&link, "new").unwrap();
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        }
    }

    #[test]
    fn a_named_pipe_is_written_in_place_not_replaced() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            let dir = tempfile::tempdir().unwrap();
            let fifo = dir.path().join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if !made.is_ok_and(|s| s.success()) {
                return; // no mkfifo here: nothing to check
            }
            let reader = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
            };
            write_text_atomic(&fifo, "through the pipe").unwrap();
            let kind = std::fs::metadata(&fifo).unwrap().file_type();
            assert!(kind.is_fifo(), "the pipe was replaced: {kind:?}");
            assert_eq!(reader.join().unwrap(), "through the pipe");
            assert!(temps_in(dir.path()).is_empty());
        }
    }

    #[test]
    fn reads_stop_one_byte_past_the_limit() {
        // An endless source (like /dev/zero through a pipe) ends in an error, not a hang.
        assert!(matches!(
            read_bounded(io::repeat(0), 1000),
            Err(Bounded::TooLarge)
        ));
        assert_eq!(read_bounded(&b"12345"[..], 5).unwrap(), b"12345");
        assert!(matches!(
            read_bounded(&b"123456"[..], 5),
            Err(Bounded::TooLarge)
        ));
    }

    #[test]
    fn a_file_over_a_small_limit_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, "{\"kind\": \"profile\"}").unwrap();
        let err = read_text_limited(&path, 8).unwrap_err();
        assert!(matches!(err, Error::FileTooLarge { limit: 8, .. }), "{err}");
        assert!(read_text_limited(&path, 64).is_ok());
    }

    #[test]
    fn invalid_utf8_names_line_and_column() {
        let err = decode_utf8(Path::new("x.json"), b"{\n  \"a\": \"\xFF\"}".to_vec()).unwrap_err();
        match err {
            Error::Parse {
                line,
                column,
                message,
                ..
            } => {
                assert_eq!((line, column), (2, 9));
                assert!(
                    message.contains("UTF-8") && message.contains("0xFF"),
                    "{message}"
                );
            }
            other => panic!("{other}"),
        }
        assert_eq!(
            decode_utf8(Path::new("x"), b"\xEF\xBB\xBF{}".to_vec()).unwrap(),
            "{}"
        );
    }
}
