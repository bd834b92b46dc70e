//! The renames a run folder needs: swap a new folder in for an old one (one atomic step on
//! Linux, `renameat2(RENAME_EXCHANGE)`; two renames elsewhere), and move an entry without
//! replacing what may have appeared at its destination.

use std::io;
use std::path::{Path, PathBuf};

/// Put the folder `new` at `target` (which exists). Returns where the old folder is now: at
/// `new`'s path when the two were exchanged in one step, otherwise at `spare()`.
///
/// On Linux the exchange is atomic: a reader, or a crash, sees the old folder or the new one
/// at `target`, never neither. Where the file system or platform cannot exchange, the old
/// folder is renamed to `spare()` and the new one to `target`: a crash between the two leaves
/// no folder at `target` (the next run puts back what was not the old run's; see `retire`).
pub(super) fn swap(
    new: &Path,
    target: &Path,
    spare: impl FnOnce() -> PathBuf,
) -> io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    match renameat2(new, target, libc::RENAME_EXCHANGE) {
        Ok(()) => return Ok(new.to_path_buf()),
        Err(e) if !unsupported(&e) => return Err(e),
        Err(_) => {}
    }
    let spare = spare();
    std::fs::rename(target, &spare)?;
    if let Err(e) = std::fs::rename(new, target) {
        let _ = std::fs::rename(&spare, target);
        return Err(e);
    }
    Ok(spare)
}

/// Rename `from` to `to` unless something is at `to` (then `AlreadyExists`): atomic on Linux
/// (`RENAME_NOREPLACE`), checked first elsewhere.
pub(super) fn move_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    match renameat2(from, to, libc::RENAME_NOREPLACE) {
        Err(e) if unsupported(&e) => {}
        done => return done,
    }
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    std::fs::rename(from, to)
}

/// Whether `renameat2` failed because the kernel or the file system lacks the flag.
#[cfg(target_os = "linux")]
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS))
}

/// `renameat2(2)` through the system call (the C library's wrapper is missing before glibc
/// 2.28).
#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both paths are NUL-terminated C strings that outlive the call; the system call
    // reads them and nothing else.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_swap_exchanges_two_folders_whole() {
        // spec/profile-format.md "A run folder": the new folder takes the old one's place.
        let dir = tempfile::tempdir().unwrap();
        let (new, target) = (dir.path().join("new"), dir.path().join("target"));
        std::fs::create_dir(&new).unwrap();
        std::fs::create_dir(&target).unwrap();
        std::fs::write(new.join("a"), "new").unwrap();
        std::fs::write(target.join("a"), "old").unwrap();
        let old = swap(&new, &target, || dir.path().join("spare")).unwrap();
        assert_eq!(std::fs::read_to_string(target.join("a")).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(old.join("a")).unwrap(), "old");
        #[cfg(target_os = "linux")]
        assert_eq!(old, new, "one exchange on Linux");
    }

    #[test]
    fn a_move_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let e = move_noreplace(&a, &b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "b");
        std::fs::remove_file(&b).unwrap();
        move_noreplace(&a, &b).unwrap();
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "a");
    }
}
