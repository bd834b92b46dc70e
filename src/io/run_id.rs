//! [`RunId`]: the identity of one run, written into each file of its run folder (profile,
//! checksum log, captures, generated tokens) so that a reader that reads them together can tell
//! files of two runs apart (spec/profile-format.md "A run folder"). A leaf: files carry it, the
//! run folder writer makes it, readers compare it ([`same_run`]).

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The most bytes a run id holds.
pub(crate) const MAX_RUN_ID_LEN: usize = 64;

/// The identity of one run: unique per run (time, process, a per-process counter and a random
/// part), e.g. `1718000000-4242-0-9f3c21aa`. In files a string of 1 to `MAX_RUN_ID_LEN` (64)
/// ASCII letters, digits, `-`, `_`, `.` or `:` (checked on load, so an id never carries a
/// control character into a message).
///
/// A [`RunFolder`](crate::io::RunFolder) makes a new one for each run
/// ([`RunFolder::run_id`](crate::io::RunFolder::run_id)); one read from a file, or given, is
/// parsed:
///
/// ```
/// use brickprof::io::RunId;
/// let a: RunId = "1718000000-4242-0-9f3c21aa".parse()?;
/// assert_eq!(a.to_string().parse::<RunId>()?, a);
/// assert!("a\u{1b}b".parse::<RunId>().is_err());
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(String);

impl RunId {
    /// A new id, different from every other this process or another makes.
    #[allow(clippy::new_without_default)] // a new id each call: not a default value
    pub(crate) fn new() -> RunId {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let pid = std::process::id();
        // RandomState's keys are random per process: two processes started in one second with
        // a reused pid still differ here.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(now.as_nanos());
        h.write_u32(pid);
        h.write_u64(n);
        RunId(format!(
            "{}-{pid}-{n}-{:08x}",
            now.as_secs(),
            h.finish() as u32
        ))
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for RunId {
    type Err = Error;

    /// An id as written in files; anything else is an [`Error::InvalidValue`].
    fn from_str(s: &str) -> Result<RunId> {
        let ok = (1..=MAX_RUN_ID_LEN).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
        if !ok {
            return Err(Error::invalid_value(
                "run id",
                s,
                format!(
                    "1 to {MAX_RUN_ID_LEN} ASCII letters, digits, '-', '_', '.' or ':' \
                     (as brickprof writes it)"
                ),
            ));
        }
        Ok(RunId(s.to_string()))
    }
}

impl TryFrom<String> for RunId {
    type Error = String;

    fn try_from(s: String) -> std::result::Result<RunId, String> {
        s.parse().map_err(|e: Error| e.to_string())
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> String {
        id.0
    }
}

/// Check that files read together come from one run: every file that carries a run id carries
/// the same one. `files` are (file, its run id; `None`: a file written before run ids, which
/// cannot be checked). The first mismatch is an [`Error::MixedRun`] naming both files.
pub(crate) fn same_run(files: &[(&Path, Option<&RunId>)]) -> Result<()> {
    let mut ids = files
        .iter()
        .filter_map(|&(path, id)| id.map(|id| (path, id)));
    let Some((first, first_id)) = ids.next() else {
        return Ok(());
    };
    match ids.find(|&(_, id)| id != first_id) {
        None => Ok(()),
        Some((second, second_id)) => Err(Error::MixedRun {
            first: PathBuf::from(first),
            first_id: first_id.to_string(),
            second: PathBuf::from(second),
            second_id: second_id.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_round_trip() {
        // spec/profile-format.md "A run folder": a new id per run.
        let ids: std::collections::HashSet<RunId> = (0..1000).map(|_| RunId::new()).collect();
        assert_eq!(ids.len(), 1000);
        for id in ids.iter().take(5) {
            let json = serde_json::to_string(id).unwrap();
            assert_eq!(&serde_json::from_str::<RunId>(&json).unwrap(), id);
        }
    }

    #[test]
    fn ids_with_other_characters_or_lengths_are_refused() {
        // spec/profile-format.md "A run folder": an id never carries a control character.
        for bad in [
            "",
            "a b",
            "x\u{1b}]0;t\u{7}",
            &"9".repeat(MAX_RUN_ID_LEN + 1),
        ] {
            assert!(bad.parse::<RunId>().is_err(), "{bad:?}");
            assert!(serde_json::from_str::<RunId>(&format!("{bad:?}")).is_err());
        }
        let e = "x\u{1b}".parse::<RunId>().unwrap_err().to_string();
        assert!(!e.contains('\u{1b}'), "{e:?}");
    }

    #[test]
    fn files_of_two_runs_are_named_and_files_without_ids_pass() {
        // spec/profile-format.md "A run folder": the run id rule.
        let (a, b) = (RunId::new(), RunId::new());
        let (p, c, t) = (Path::new("p.json"), Path::new("c.st"), Path::new("t.json"));
        assert!(same_run(&[(p, Some(&a)), (c, None), (t, Some(&a))]).is_ok());
        assert!(same_run(&[(p, None), (c, None)]).is_ok());
        let e = same_run(&[(p, None), (c, Some(&a)), (t, Some(&b))]).unwrap_err();
        match &e {
            Error::MixedRun { first, second, .. } => {
                assert_eq!((first.as_path(), second.as_path()), (c, t));
            }
            other => panic!("{other:?}"),
        }
        let text = e.to_string();
        assert!(text.contains("c.st") && text.contains("t.json"), "{text}");
        assert!(
            text.contains(&a.to_string()) && text.contains(&b.to_string()),
            "{text}"
        );
    }
}
