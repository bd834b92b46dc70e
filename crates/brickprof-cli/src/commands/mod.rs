//! One module a command: its flags (a clap `Args` struct) and its `run`, which returns the exit
//! code (0 success, 1 what the command judges a failure: a divergence, a failed gate, an
//! exceeded budget). Errors become exit code 2 in `main`.

pub mod convert;
pub mod demo;
pub mod diff;
pub mod import;
pub(crate) mod instruments;
pub mod merge;
pub mod report;
pub mod vendor;

use std::path::Path;

/// A short label for a profile file: its parent directory and name.
pub fn file_label(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let dir = path
        .parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned());
    match (dir, name) {
        (Some(d), Some(n)) => format!("{d}/{n}"),
        (None, Some(n)) => n,
        _ => path.display().to_string(),
    }
}

/// Say which file an error that names none came from.
pub fn in_file(path: &Path, e: brickprof::Error) -> brickprof::Error {
    brickprof::Error::InFile {
        path: path.to_path_buf(),
        source: Box::new(e),
    }
}
