//! [`KernelKey`], [`KernelChecksum`] and the [`ChecksumLog`] saved to disk (spec/checksums.md
//! "File format"): version 2 names its algorithm and each entry's dtype; version-1 files still
//! load. Every loaded file is validated; a fault names the file, the entry and the field.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::summary::MAX_COUNT;
use super::{checksum, Algorithm, DType, Tensor, TensorSummary};
use crate::io::json_file::{self, save_json, FileKind};
use crate::{io::RunId, Error, Result};

/// The checksum log format version this build writes.
pub(crate) const CHECKSUM_FORMAT_VERSION: u32 = 2;
/// The oldest checksum log format version this build reads.
pub(crate) const OLDEST_CHECKSUM_FORMAT_VERSION: u32 = 1;

/// Where a checksum was taken: (forward pass, layer, brick, call index within the pass).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct KernelKey {
    /// Forward pass index (0-based, counting every `end_pass`, warm-up included).
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub pass: u64,
    /// Layer, or `None` outside any layer.
    pub layer: Option<u32>,
    /// Brick name (a `BrickId` name, or a registered brick's name).
    pub brick: String,
    /// How many times this (layer, brick) was checksummed earlier in the same pass.
    pub call: u32,
}

impl std::fmt::Display for KernelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The brick name comes from a file: escaped, in reports and error messages alike.
        let brick = crate::base::printable::printable(&self.brick);
        match self.layer {
            Some(l) => write!(f, "pass {} layer {} {brick}", self.pass, l)?,
            None => write!(f, "pass {} {brick} (outside layers)", self.pass)?,
        }
        if self.call > 0 {
            write!(f, " call #{}", self.call)?;
        }
        Ok(())
    }
}

/// One kernel's output checksum. In files the hash is 16 hex digits; loading validates it,
/// the pass and the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "EntryFile", into = "EntryFile")]
pub struct KernelChecksum {
    /// Where it was taken.
    pub key: KernelKey,
    /// The output's element type (`None`: a version-1 file, which did not record it).
    pub dtype: Option<DType>,
    /// The hash of the output's bytes, with the log's [`Algorithm`].
    pub hash: u64,
    /// Numeric summary of the output.
    pub summary: TensorSummary,
}

/// Checksums in recording order, all made with one [`Algorithm`], as saved to disk: plain data
/// (`ChecksumLog::default()` is an empty log with the default algorithm,
/// [`Algorithm::Fnv1a64Lanes8V2`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "LogFile", into = "LogFile")]
pub struct ChecksumLog {
    /// The algorithm every hash of this log was made with.
    pub algorithm: Algorithm,
    /// The checksums, in recording order.
    pub entries: Vec<KernelChecksum>,
    /// The run the log belongs to, when saved into a run folder (spec/profile-format.md "A run
    /// folder"); `None` in older files and logs saved alone.
    pub run_id: Option<RunId>,
}

impl ChecksumLog {
    /// An empty log using `algorithm`.
    pub(crate) fn with_algorithm(algorithm: Algorithm) -> Self {
        ChecksumLog {
            algorithm,
            entries: Vec::new(),
            run_id: None,
        }
    }

    /// Append a checksum of `tensor` taken at `key`.
    ///
    /// ```
    /// use brickprof::checksum::{ChecksumLog, DType, KernelKey, Tensor};
    /// let mut log = ChecksumLog::default();
    /// let key = KernelKey { pass: 0, layer: Some(0), brick: "RmsNorm".into(), call: 0 };
    /// log.record(key, Tensor::Bf16(&[0x3f80, 0xc000]));
    /// assert_eq!(log.entries[0].dtype, Some(DType::Bf16));
    /// assert_eq!(log.entries[0].summary.sum, -1.0);
    /// ```
    pub fn record(&mut self, key: KernelKey, tensor: Tensor<'_>) {
        let (hash, summary) = checksum(self.algorithm, tensor);
        self.entries.push(KernelChecksum {
            key,
            dtype: Some(tensor.dtype()),
            hash,
            summary,
        });
    }

    /// An error naming the first key recorded twice (`which`: "reference" or "candidate"; the
    /// log's file when it was read from one).
    pub(crate) fn check_unique(&self, which: &'static str, path: Option<&Path>) -> Result<()> {
        let mut seen: fnv::FnvHashMap<&KernelKey, usize> = fnv::FnvHashMap::default();
        for (i, e) in self.entries.iter().enumerate() {
            if let Some(first) = seen.insert(&e.key, i) {
                return Err(Error::DuplicateKernel {
                    path: path.map(Path::to_path_buf),
                    log: which,
                    key: e.key.to_string(),
                    first,
                    second: i,
                });
            }
        }
        Ok(())
    }

    /// Save as pretty JSON (format version 2).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_json(path.as_ref(), self)
    }

    /// Load a version 1 or 2 file, rejecting bad files, other kinds and other versions with an
    /// error naming the file and the fault (for a bad entry: its index and field).
    pub fn load(path: impl AsRef<Path>) -> Result<ChecksumLog> {
        json_file::load(
            path.as_ref(),
            FileKind::Checksums,
            OLDEST_CHECKSUM_FORMAT_VERSION..=CHECKSUM_FORMAT_VERSION,
        )
    }
}

/// The file form of a log (both versions).
#[derive(Serialize, Deserialize)]
struct LogFile {
    kind: FileKind,
    format_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    algorithm: Option<Algorithm>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_id: Option<RunId>,
    entries: Vec<KernelChecksum>,
}

/// The file form of an entry: the hash as 16 hex digits (JSON numbers lose precision above
/// 2^53), checked when converted.
#[derive(Serialize, Deserialize)]
struct EntryFile {
    #[serde(flatten)]
    key: KernelKey,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dtype: Option<DType>,
    hash: String,
    summary: TensorSummary,
}

impl From<ChecksumLog> for LogFile {
    fn from(log: ChecksumLog) -> Self {
        LogFile {
            kind: FileKind::Checksums,
            format_version: CHECKSUM_FORMAT_VERSION,
            algorithm: Some(log.algorithm),
            run_id: log.run_id,
            entries: log.entries,
        }
    }
}

impl From<KernelChecksum> for EntryFile {
    fn from(e: KernelChecksum) -> Self {
        EntryFile {
            key: e.key,
            dtype: e.dtype,
            hash: format!("{:016x}", e.hash),
            summary: e.summary,
        }
    }
}

impl TryFrom<EntryFile> for KernelChecksum {
    type Error = String;

    fn try_from(e: EntryFile) -> std::result::Result<Self, String> {
        let fault = |what: String| format!("entry for {}: {what}", e.key);
        let hash = parse_hash(&e.hash).map_err(fault)?;
        if e.key.pass > MAX_COUNT {
            return Err(fault(format!("pass {} exceeds 2^53", e.key.pass)));
        }
        if e.key.brick.is_empty() {
            return Err(fault("brick is empty".into()));
        }
        e.summary.validate().map_err(fault)?;
        Ok(KernelChecksum {
            key: e.key,
            dtype: e.dtype,
            hash,
            summary: e.summary,
        })
    }
}

impl TryFrom<LogFile> for ChecksumLog {
    type Error = String;

    fn try_from(f: LogFile) -> std::result::Result<Self, String> {
        let algorithm = match (f.format_version, f.algorithm) {
            (1, None | Some(Algorithm::Fnv1a64)) => Algorithm::Fnv1a64,
            (1, Some(a)) => {
                return Err(format!(
                    "a version-1 file cannot use algorithm {a} (only fnv1a64)"
                ))
            }
            (CHECKSUM_FORMAT_VERSION, Some(a)) => a,
            (CHECKSUM_FORMAT_VERSION, None) => {
                return Err("no \"algorithm\" field (required from format version 2)".into())
            }
            (v, _) => return Err(format!("format version {v} is not supported")),
        };
        Ok(ChecksumLog {
            algorithm,
            entries: f.entries,
            run_id: f.run_id,
        })
    }
}

/// Exactly 16 hex digits.
fn parse_hash(s: &str) -> std::result::Result<u64, String> {
    if s.len() != 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("hash {s:?} is not 16 hex digits"));
    }
    u64::from_str_radix(s, 16).map_err(|_| format!("hash {s:?} is not 16 hex digits"))
}

/// 64-bit values saved as 16-digit hex strings (for reports that carry hashes).
pub(crate) mod hex_u64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:016x}"))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let s = String::deserialize(d)?;
        super::parse_hash(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_build_writes_version_2() {
        // (was tests/compare/checksums.rs; the file's `"format_version": 2` is checked there)
        assert_eq!(CHECKSUM_FORMAT_VERSION, 2);
    }

    fn key() -> KernelKey {
        KernelKey {
            pass: 0,
            layer: Some(1),
            brick: "RmsNorm".into(),
            call: 0,
        }
    }

    #[test]
    fn hashes_survive_json_exactly() {
        let mut log = ChecksumLog::default();
        log.record(key(), Tensor::F32(&[1.0, 2.0]));
        let json = serde_json::to_string(&log).unwrap();
        assert!(json.contains(&format!("\"{:016x}\"", log.entries[0].hash)));
        assert!(json.contains("\"format_version\":2"));
        assert!(json.contains("\"algorithm\":\"fnv1a64-lanes8-v2\""));
        assert!(json.contains("\"dtype\":\"f32\""));
        let back: ChecksumLog = serde_json::from_str(&json).unwrap();
        assert_eq!(back, log);
    }

    #[test]
    fn hashes_must_be_exactly_16_hex_digits() {
        assert_eq!(parse_hash("00000000000000ff"), Ok(255));
        for bad in [
            "ff",
            "0x000000000000ff",
            "00000000000000fg",
            "000000000000000ff",
            "+0000000000000ff",
        ] {
            assert!(parse_hash(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn duplicate_keys_are_named() {
        let mut log = ChecksumLog::default();
        log.record(key(), Tensor::F32(&[1.0]));
        log.record(key(), Tensor::F32(&[2.0]));
        let err = log.check_unique("candidate", None).unwrap_err().to_string();
        assert!(
            err.contains("candidate") && err.contains("pass 0 layer 1 RmsNorm"),
            "{err}"
        );
    }
}
