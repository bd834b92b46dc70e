//! [`RunFile`]: either kind of brickprof file (a profile or a checksum log), told apart by its
//! header and loaded. It sits above both kinds; [`crate::io::json_file`] below them knows only JSON
//! and headers.

use std::path::Path;

use crate::checksum::{CHECKSUM_FORMAT_VERSION, OLDEST_CHECKSUM_FORMAT_VERSION};
use crate::io::json_file::{parse, sniff, FileKind};
use crate::profile::PROFILE_FORMATS_READ;
use crate::Result;

/// Either kind of brickprof file, as loaded by [`RunFile::load`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunFile {
    /// A profile (may carry checksums).
    Profile(Box<crate::Profile>),
    /// A checksum log.
    Checksums(crate::checksum::ChecksumLog),
}

impl RunFile {
    /// Load a profile or a checksum log, whichever `path` holds.
    pub(crate) fn load(path: impl AsRef<Path>) -> Result<RunFile> {
        let path = path.as_ref();
        let (text, kind) = sniff(path)?;
        Ok(match kind {
            FileKind::Profile => RunFile::Profile(Box::new(crate::Profile::from_loaded(
                path,
                parse(path, &text, kind, PROFILE_FORMATS_READ)?,
            )?)),
            FileKind::Checksums => RunFile::Checksums(parse(
                path,
                &text,
                kind,
                OLDEST_CHECKSUM_FORMAT_VERSION..=CHECKSUM_FORMAT_VERSION,
            )?),
            FileKind::Tokens => {
                return Err(crate::Error::invalid(
                    path,
                    "this is a generated-tokens file, not a run: give the run's profile.json \
                     or checksums.json (its tokens.json beside it is read too)",
                ))
            }
        })
    }

    /// The checksums the file carries, if any.
    pub(crate) fn checksums(&self) -> Option<&crate::checksum::ChecksumLog> {
        match self {
            RunFile::Profile(p) => p.checksums.as_ref(),
            RunFile::Checksums(c) => Some(c),
        }
    }

    /// The run the file belongs to, when it was saved into a run folder (spec/profile-format.md
    /// "A run folder").
    pub(crate) fn run_id(&self) -> Option<&crate::io::RunId> {
        match self {
            RunFile::Profile(p) => p.meta.run_id.as_ref(),
            RunFile::Checksums(c) => c.run_id.as_ref(),
        }
    }

    /// The profile, if the file is one.
    pub(crate) fn profile(&self) -> Option<&crate::Profile> {
        match self {
            RunFile::Profile(p) => Some(p),
            RunFile::Checksums(_) => None,
        }
    }
}
