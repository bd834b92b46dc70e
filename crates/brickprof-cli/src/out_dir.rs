//! The `--out` directory of `brickprof demo`: checked writable before the demo runs, and
//! locked while its files are written, so that two demos writing one directory leave one
//! demo's complete set of files, never a mix. Specified in `spec/profile-format.md` ("Reading
//! and writing files").

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use brickprof::{Error, Result};

/// The files a demo may write into its directory.
pub const FILES: [&str; 3] = ["profile.json", "trace.json", "checksums.json"];

/// A directory checked writable by [`OutDir::prepare`].
#[derive(Debug)]
pub struct OutDir {
    dir: PathBuf,
}

/// Held while a demo writes its files (released on drop, or when the process dies).
#[derive(Debug)]
pub struct DirLock {
    _file: Option<File>,
}

fn unwritable(dir: &Path, why: impl std::fmt::Display) -> Error {
    // An I/O error on the directory (typed, naming it), with what to do about it.
    Error::Io {
        path: dir.to_path_buf(),
        source: std::io::Error::other(format!(
            "--out: cannot write there ({why}); choose another directory or pass --no-save"
        )),
    }
}

impl OutDir {
    /// Create `dir` if needed and check that the demo's files can be written in it: a file
    /// is created and removed there, and none of [`FILES`] is a directory.
    pub fn prepare(dir: &Path) -> Result<OutDir> {
        if dir.exists() && !dir.is_dir() {
            return Err(unwritable(dir, "it is a file, not a directory"));
        }
        std::fs::create_dir_all(dir).map_err(|e| unwritable(dir, e))?;
        for name in FILES {
            if dir.join(name).is_dir() {
                return Err(unwritable(dir, format!("{name} there is a directory")));
            }
        }
        let probe = dir.join(format!(".brickprof-probe-{}", std::process::id()));
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .and_then(|mut f| f.write_all(b"probe"));
        let _ = std::fs::remove_file(&probe);
        written.map_err(|e| unwritable(dir, e))?;
        Ok(OutDir {
            dir: dir.to_path_buf(),
        })
    }

    /// The path of `name` in the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Lock the directory against other brickprof demos writing into it, waiting for one that
    /// holds it. On Unix the directory itself is locked (`flock`), so no lock file is left
    /// behind and a killed demo never leaves a stale lock; where a directory cannot be locked
    /// (other platforms, file systems without locks) the demo writes unlocked.
    pub fn lock(&self) -> Result<DirLock> {
        #[cfg(unix)]
        {
            let file = File::open(&self.dir).map_err(|e| unwritable(&self.dir, e))?;
            match file.lock() {
                Ok(()) => return Ok(DirLock { _file: Some(file) }),
                Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {}
                Err(e) => return Err(unwritable(&self.dir, e)),
            }
        }
        Ok(DirLock { _file: None })
    }
}
