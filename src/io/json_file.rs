//! Reading and writing brickprof's JSON files (profiles, checksum logs): every fault becomes an
//! [`Error`] naming the file and, for JSON faults, the line and column. A file's header
//! (`kind`, `format_version`) is checked before the body, so a file of another kind or version
//! gets an error that says so instead of a confusing field error. Reads are bounded
//! ([`crate::io::file_io`]) and saves whole or not at all ([`crate::io::OutputFile`]).

use std::ops::RangeInclusive;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

pub(crate) use crate::io::file_io::read_text;

/// What a brickprof JSON file holds: its `kind` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum FileKind {
    /// A [`crate::Profile`].
    Profile,
    /// A [`crate::checksum::ChecksumLog`].
    Checksums,
    /// A [`crate::profile::GeneratedTokens`] (`tokens.json`).
    Tokens,
}

impl FileKind {
    /// The kind's name as written in files and messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FileKind::Profile => "profile",
            FileKind::Checksums => "checksums",
            FileKind::Tokens => "tokens",
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
    crate::base::limits::take_tripped();
    serde_json::from_str(text).map_err(|e| match crate::base::limits::take_tripped() {
        // A limit checked while streaming (spec/profile-format.md "Limits while reading"):
        // typed, so a caller can tell it from a malformed file.
        Some(limit) => Error::InFile {
            path: path.to_path_buf(),
            source: Box::new(Error::OverLimit {
                limit,
                requested: limit.max().saturating_add(1),
            }),
        },
        None => Error::json(path, &e),
    })
}

/// Write a value as pretty JSON, atomically, creating parent directories.
pub(crate) fn save_json<V: Serialize>(path: &Path, value: &V) -> Result<()> {
    crate::io::output_file::write_atomic(path, |f| write_json(f, value))
}

/// `value` as the pretty JSON [`save_json`] writes, into `out` (a file, or a buffer: the live
/// server's `/profile`).
pub(crate) fn write_json<V: Serialize>(
    out: &mut (impl std::io::Write + ?Sized),
    value: &V,
) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(std::io::Error::from)?;
    out.write_all(b"\n")
}
