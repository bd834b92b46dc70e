//! Reading and writing brickprof's JSON files (profiles, checksum logs): every fault becomes an
//! [`Error`] naming the file and, for JSON faults, the line and column. A file's header
//! (`kind`, `format_version`) is checked before the body, so a file of another kind or version
//! gets an error that says so instead of a confusing field error.

use std::ops::RangeInclusive;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Read a whole text file, with errors naming it (a directory and an empty file included).
pub(crate) fn read_text(path: &Path) -> Result<String> {
    if path.is_dir() {
        return Err(Error::io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a directory, not a file",
            ),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    if text.trim().is_empty() {
        return Err(Error::Parse {
            path: path.to_path_buf(),
            line: 0,
            column: 0,
            message: "the file is empty".into(),
        });
    }
    Ok(text)
}

/// What a brickprof JSON file holds: its `kind` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileKind {
    /// A [`crate::Profile`].
    Profile,
    /// A [`crate::ChecksumLog`].
    Checksums,
}

impl FileKind {
    /// The kind's name as written in files and messages.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Profile => "profile",
            FileKind::Checksums => "checksums",
        }
    }
}

#[derive(Deserialize)]
struct Header {
    kind: Option<serde_json::Value>,
    format_version: Option<serde_json::Value>,
}

/// Read `path` and tell which kind of brickprof file it is (checking nothing else yet).
pub(crate) fn sniff(path: &Path) -> Result<(String, FileKind)> {
    let text = read_text(path)?;
    let header: Header = serde_json::from_str(&text).map_err(|e| Error::json(path, &e))?;
    let kind = match header.kind {
        Some(v) => serde_json::from_value::<FileKind>(v.clone()).map_err(|_| Error::Parse {
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            message: format!("unknown \"kind\" {v}: expected \"profile\" or \"checksums\""),
        })?,
        None => {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line: 1,
                column: 1,
                message: "not a brickprof file: no \"kind\" field".into(),
            })
        }
    };
    Ok((text, kind))
}

/// Check the header of a document already read: the kind must be `expected` and the format
/// version within `supported`. Returns the version.
pub(crate) fn check_header(
    path: &Path,
    text: &str,
    expected: FileKind,
    supported: RangeInclusive<u32>,
) -> Result<u32> {
    let header: Header = serde_json::from_str(text).map_err(|e| Error::json(path, &e))?;
    let fault = |message: String| Error::Parse {
        path: path.to_path_buf(),
        line: 1,
        column: 1,
        message,
    };
    match header.kind {
        Some(serde_json::Value::String(k)) if k == expected.name() => {}
        Some(other) => {
            return Err(fault(format!(
                "this is not a brickprof {} file (its \"kind\" is {other})",
                expected.name()
            )))
        }
        None => {
            return Err(fault(format!(
                "not a brickprof {} file: no \"kind\" field",
                expected.name()
            )))
        }
    }
    match header.format_version.as_ref().and_then(|v| v.as_u64()) {
        Some(v) if u32::try_from(v).is_ok_and(|v| supported.contains(&v)) => Ok(v as u32),
        Some(v) => Err(Error::UnsupportedVersion {
            path: path.to_path_buf(),
            what: expected.name(),
            found: u32::try_from(v).unwrap_or(u32::MAX),
            supported: *supported.end(),
        }),
        None => Err(fault(format!(
            "not a brickprof {} file: no numeric \"format_version\" field",
            expected.name()
        ))),
    }
}

/// Read and parse a brickprof file of kind `expected`, a version within `supported`.
pub(crate) fn load<T: serde::de::DeserializeOwned>(
    path: &Path,
    expected: FileKind,
    supported: RangeInclusive<u32>,
) -> Result<T> {
    let text = read_text(path)?;
    parse(path, &text, expected, supported)
}

/// Parse a document already read (see [`load`]).
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    path: &Path,
    text: &str,
    expected: FileKind,
    supported: RangeInclusive<u32>,
) -> Result<T> {
    check_header(path, text, expected, supported)?;
    serde_json::from_str(text).map_err(|e| Error::json(path, &e))
}

/// Write a value as pretty JSON, creating parent directories.
pub(crate) fn save_json<V: Serialize>(path: &Path, value: &V) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("could not serialize: {e}"),
    })?;
    write_text(path, &(text + "\n"))
}

/// Write `text` to `path`, creating parent directories; errors name the path.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// Either kind of brickprof file, as loaded by [`RunFile::load`].
#[derive(Debug, Clone, PartialEq)]
pub enum RunFile {
    /// A profile (may carry checksums).
    Profile(Box<crate::Profile>),
    /// A checksum log.
    Checksums(crate::ChecksumLog),
}

impl RunFile {
    /// Load a profile or a checksum log, whichever `path` holds.
    pub fn load(path: impl AsRef<Path>) -> Result<RunFile> {
        let path = path.as_ref();
        let (text, kind) = sniff(path)?;
        Ok(match kind {
            FileKind::Profile => RunFile::Profile(Box::new(crate::Profile::from_loaded(
                path,
                parse(path, &text, kind, crate::profile::PROFILE_FORMATS_READ)?,
            )?)),
            FileKind::Checksums => RunFile::Checksums(parse(
                path,
                &text,
                kind,
                crate::checksum::CHECKSUM_FORMAT_VERSION..=crate::checksum::CHECKSUM_FORMAT_VERSION,
            )?),
        })
    }

    /// The checksums the file carries, if any.
    pub fn checksums(&self) -> Option<&crate::ChecksumLog> {
        match self {
            RunFile::Profile(p) => p.checksums.as_ref(),
            RunFile::Checksums(c) => Some(c),
        }
    }

    /// The profile, if the file is one.
    pub fn profile(&self) -> Option<&crate::Profile> {
        match self {
            RunFile::Profile(p) => Some(p),
            RunFile::Checksums(_) => None,
        }
    }
}
