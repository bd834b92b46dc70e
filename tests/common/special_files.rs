//! Special files for the output tests, always made inside the test's own temporary folder
//! (never the machine's `/dev`): named pipes, character devices made with `mknod` when running
//! as root, a folder that cannot be written to. Where one cannot be made here, the helper
//! prints why and returns `None`, and the test skips that case. Shared by
//! `tests/files/output_files.rs` and the CLI's tests (included by path).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;

/// Print that a case is skipped, and why.
pub fn skip(case: &str, why: impl std::fmt::Display) {
    eprintln!("skipped: {case}: {why}");
}

/// A named pipe `dir/name`.
pub fn fifo(dir: &Path, name: &str) -> Option<PathBuf> {
    let path = dir.join(name);
    match Command::new("mkfifo").arg(&path).status() {
        Ok(s) if s.success() => Some(path),
        other => {
            skip("a named pipe", format!("mkfifo failed: {other:?}"));
            None
        }
    }
}

/// A character device `dir/name` with the Linux numbers `major, minor`, made with `mknod`:
/// only root can, and a container or a `nodev` mount may refuse to open it.
pub fn char_device(dir: &Path, name: &str, major: u32, minor: u32) -> Option<PathBuf> {
    let path = dir.join(name);
    let case = format!("a character device {major},{minor}");
    if !cfg!(target_os = "linux") {
        skip(&case, "the device numbers are Linux's");
        return None;
    }
    let made = Command::new("mknod")
        .arg(&path)
        .args(["c", &major.to_string(), &minor.to_string()])
        .output();
    match made {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            skip(
                &case,
                format!(
                    "mknod refused (needs root): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ),
            );
            return None;
        }
        Err(e) => {
            skip(&case, format!("no mknod: {e}"));
            return None;
        }
    }
    if let Err(e) = std::fs::OpenOptions::new().write(true).open(&path) {
        skip(&case, format!("made, but it cannot be opened here: {e}"));
        return None;
    }
    Some(path)
}

/// `dir/null`: a character device that takes everything (Linux's null device, 1,3).
pub fn null_device(dir: &Path) -> Option<PathBuf> {
    char_device(dir, "null", 1, 3)
}

/// `dir/full`: a character device on which every write fails with "no space left on device"
/// (Linux's full device, 1,7): a full disk.
pub fn full_device(dir: &Path) -> Option<PathBuf> {
    char_device(dir, "full", 1, 7)
}

/// `dir/zero`: a character device that reads as endless zero bytes (Linux's zero device, 1,5):
/// an input that never ends.
pub fn zero_device(dir: &Path) -> Option<PathBuf> {
    char_device(dir, "zero", 1, 5)
}

/// Whether `path` is (still) a character device.
pub fn is_char_device(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Whether `path` is (still) a named pipe.
pub fn is_fifo(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Whether `path` is (still) a symbolic link.
pub fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Read the pipe at `path` on another thread: everything written to it until the last writer
/// closes it.
pub fn read_fifo(path: &Path) -> JoinHandle<Vec<u8>> {
    let path = path.to_path_buf();
    std::thread::spawn(move || std::fs::read(path).expect("read the pipe"))
}

/// What `run` sends into the pipe at `fifo`, checked without ever waiting on an open that may
/// not be answered: the test opens the read end first without waiting for a writer
/// (non-blocking), then its own write end (which finds that reader at once), and a thread
/// drains the pipe while `run` runs, whether `run` writes or not. Then the test writes a
/// closing mark and closes its end; the drain ends when every writer has closed. No open can
/// block, whatever the scheduling, and the drain gives up (failing the test) after two
/// minutes instead of hanging it. Returns what came before the mark, and `run`'s result.
pub fn sent_through_fifo<T>(fifo: &Path, run: impl FnOnce() -> T) -> (Vec<u8>, T) {
    use std::io::{Read, Write};
    use std::os::unix::fs::OpenOptionsExt;
    use std::time::{Duration, Instant};
    const END: &[u8] = b"<end of test>";
    #[cfg(target_os = "linux")]
    const O_NONBLOCK: i32 = 0o4000;
    #[cfg(not(target_os = "linux"))]
    const O_NONBLOCK: i32 = 0x0004;
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NONBLOCK)
        .open(fifo)
        .expect("open the pipe's read end");
    let mut keeper = std::fs::OpenOptions::new()
        .write(true)
        .open(fifo)
        .expect("open the pipe's write end");
    let drain = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut got = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return got, // every writer has closed
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(
                        Instant::now() < deadline,
                        "the pipe was never closed by its writers"
                    );
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => panic!("read the pipe: {e}"),
            }
        }
    });
    let out = run();
    keeper.write_all(END).unwrap();
    drop(keeper);
    let mut got = drain.join().unwrap();
    assert!(
        got.ends_with(END),
        "the pipe lost the closing mark: {got:?}"
    );
    got.truncate(got.len() - END.len());
    (got, out)
}

/// A folder (`dir/name`) in which files cannot be created, made read-only for as long as the
/// guard lives. `None` (printed) when this user can write into it anyway: root ignores
/// permissions.
pub fn read_only_dir(dir: &Path, name: &str) -> Option<ReadOnlyDir> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("old.txt"), "old, complete").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o555)).unwrap();
        let guard = ReadOnlyDir { path };
        let probe = guard.path.join("probe");
        if std::fs::write(&probe, "x").is_ok() {
            let _ = std::fs::remove_file(&probe);
            skip(
                "a read-only folder",
                "this user writes into it anyway (root ignores permissions)",
            );
            return None;
        }
        Some(guard)
    }
    #[cfg(not(unix))]
    {
        let _ = (dir, name);
        skip("a read-only folder", "made with Unix permissions");
        None
    }
}

/// A read-only folder holding `old.txt` ("old, complete"); writable again when dropped, so
/// its temporary parent can be removed.
pub struct ReadOnlyDir {
    pub path: PathBuf,
}

impl Drop for ReadOnlyDir {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(0o755));
        }
    }
}

/// The temporary files (`.NAME.tmp-…`) left in `dir`.
pub fn temps_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect()
}

/// Every file name in `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
