//! An output is never one of its command's inputs: [`check_outputs_apart`] compares files by
//! identity (device and inode, after following symbolic links), not by spelling, so
//! `./p.json`, a symbolic link to `p.json` and a hard link of it are all `p.json`. Specified in
//! `spec/profile-format.md` ("Reading and writing files").

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// What makes a file itself, whatever path names it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileId {
    /// Device and inode.
    #[cfg(unix)]
    Node(u64, u64),
    /// Where there are no inodes: the canonical path (links resolved).
    #[cfg(not(unix))]
    Canonical(PathBuf),
}

impl FileId {
    /// The file `path` names, following links; `None` when nothing is there (or it cannot be
    /// looked at: the read or the write reports that, naming the path).
    fn of(path: &Path) -> Option<FileId> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(path).ok()?;
            Some(FileId::Node(m.dev(), m.ino()))
        }
        #[cfg(not(unix))]
        {
            std::fs::canonicalize(path).ok().map(FileId::Canonical)
        }
    }
}

/// Refuse a command whose output is one of its inputs: [`Error::OutputIsInput`] naming both
/// paths as given, checked before anything is read or written, so the input stays byte for
/// byte. Two paths are one file when they reach the same file (device and inode) after
/// following symbolic links: `p.json` and `./p.json`, a link to `p.json`, a hard link of it,
/// `/dev/stdout` redirected into it. An output or an input that does not exist (yet) is no
/// conflict.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("brickprof-doc-apart-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let profile = dir.join("p.json");
/// std::fs::write(&profile, "{}").unwrap();
/// let err = brickprof::io::check_outputs_apart(&[&profile], &[&dir.join(".").join("p.json")]);
/// assert!(matches!(err, Err(brickprof::Error::OutputIsInput { .. })));
/// assert!(brickprof::io::check_outputs_apart(&[&profile], &[&dir.join("out.html")]).is_ok());
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
pub fn check_outputs_apart(inputs: &[&Path], outputs: &[&Path]) -> Result<()> {
    let inputs: Vec<(&Path, FileId)> = inputs
        .iter()
        .filter_map(|p| Some((*p, FileId::of(p)?)))
        .collect();
    for output in outputs {
        let Some(id) = FileId::of(output) else {
            continue;
        };
        if let Some((input, _)) = inputs.iter().find(|(_, i)| *i == id) {
            return Err(Error::OutputIsInput {
                output: output.to_path_buf(),
                input: PathBuf::from(input),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_by_any_name_is_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.json");
        std::fs::write(&p, "x").unwrap();
        let other = dir.path().join("q.json");
        std::fs::write(&other, "x").unwrap();
        let dotted = dir.path().join(".").join("p.json");
        assert_eq!(FileId::of(&p), FileId::of(&dotted));
        assert_ne!(FileId::of(&p), FileId::of(&other));
        assert_eq!(FileId::of(&dir.path().join("none")), None);
        let err = check_outputs_apart(&[&other, &p], &[&dir.path().join("new"), &dotted]);
        match err {
            Err(Error::OutputIsInput { output, input }) => {
                assert_eq!((output, input), (dotted, p));
            }
            other => panic!("{other:?}"),
        }
    }
}
