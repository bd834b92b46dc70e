//! Whole-file reads that cannot hurt the tool: every load ([`crate::Profile::load`],
//! [`crate::checksum::ChecksumLog::load`], [`crate::profile::RunFile::load`]) reads at most [`MAX_FILE_BYTES`],
//! refuses devices (`/dev/zero` is an error, not a hang), accepts a UTF-8 byte-order mark and
//! names the place of invalid UTF-8. Specified in `spec/profile-format.md` ("Reading and
//! writing files"). Every write goes through [`crate::io::OutputFile`] instead.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::{Error, Result};

/// The largest file brickprof reads: 1 GiB. A profile of 64 layers × 1,000 bricks is about
/// 100 MiB; anything larger is not a brickprof file (or is an input like `/dev/zero`).
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 30;

/// Read a whole UTF-8 text file of at most [`MAX_FILE_BYTES`], with errors naming it.
///
/// Refused with an [`Error`]: a directory, a device (`/dev/zero`, a terminal), a file over the
/// limit ([`Error::FileTooLarge`]), text that is not UTF-8 (the line and column of the first bad
/// byte), an empty file. A leading UTF-8 byte-order mark is stripped. Pipes are read, bounded.
pub(crate) fn read_text(path: &Path) -> Result<String> {
    read_text_limited(path, MAX_FILE_BYTES)
}

fn read_text_limited(path: &Path, limit: u64) -> Result<String> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if let Some(what) = not_readable_kind(&meta) {
        return Err(Error::io(
            path,
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("is {what}, not a file brickprof can read"),
            ),
        ));
    }
    if meta.is_file() && meta.len() > limit {
        return Err(Error::FileTooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    // A regular file's size sizes the buffer: reading costs the file once, not a doubling.
    let size = if meta.is_file() { meta.len() } else { 0 };
    let bytes = read_bounded(file, limit, size).map_err(|e| match e {
        Bounded::Io(e) => Error::io(path, e),
        Bounded::TooLarge => Error::FileTooLarge {
            path: path.to_path_buf(),
            limit,
        },
    })?;
    let text = decode_utf8(path, bytes)?;
    if text.trim().is_empty() {
        return Err(Error::invalid(path, "the file is empty"));
    }
    Ok(text)
}

/// What a file is when it is not something brickprof reads (a directory, a device).
fn not_readable_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    if meta.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
    }
    None
}

/// Why [`read_bounded`] failed.
#[derive(Debug)]
enum Bounded {
    Io(io::Error),
    TooLarge,
}

/// Read everything from `r` (`size` bytes expected), failing as soon as more than `limit`
/// bytes arrive.
fn read_bounded(r: impl Read, limit: u64, size: u64) -> std::result::Result<Vec<u8>, Bounded> {
    let mut bytes = Vec::with_capacity(usize::try_from(size.min(limit)).unwrap_or(0));
    r.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Bounded::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Bounded::TooLarge);
    }
    Ok(bytes)
}

/// UTF-8 text without a leading byte-order mark; invalid UTF-8 is an [`Error::Parse`] at the
/// first bad byte.
fn decode_utf8(path: &Path, mut bytes: Vec<u8>) -> Result<String> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = 1 + String::from_utf8_lossy(&valid[line_start..])
            .chars()
            .count();
        let byte = e.as_bytes()[valid.len()];
        Error::Parse {
            path: path.to_path_buf(),
            line,
            column,
            message: format!("not UTF-8 text (byte 0x{byte:02X}); brickprof files are UTF-8 JSON"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stop_one_byte_past_the_limit() {
        // An endless source (like /dev/zero through a pipe) ends in an error, not a hang.
        assert!(matches!(
            read_bounded(io::repeat(0), 1000, 0),
            Err(Bounded::TooLarge)
        ));
        assert_eq!(read_bounded(&b"12345"[..], 5, 5).unwrap(), b"12345");
        assert!(matches!(
            read_bounded(&b"123456"[..], 5, 0),
            Err(Bounded::TooLarge)
        ));
    }

    #[test]
    fn a_file_over_a_small_limit_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, "{\"kind\": \"profile\"}").unwrap();
        let err = read_text_limited(&path, 8).unwrap_err();
        assert!(matches!(err, Error::FileTooLarge { limit: 8, .. }), "{err}");
        assert!(read_text_limited(&path, 64).is_ok());
    }

    #[test]
    fn invalid_utf8_names_line_and_column() {
        let err = decode_utf8(Path::new("x.json"), b"{\n  \"a\": \"\xFF\"}".to_vec()).unwrap_err();
        match err {
            Error::Parse {
                line,
                column,
                message,
                ..
            } => {
                assert_eq!((line, column), (2, 9));
                assert!(
                    message.contains("UTF-8") && message.contains("0xFF"),
                    "{message}"
                );
            }
            other => panic!("{other}"),
        }
        assert_eq!(
            decode_utf8(Path::new("x"), b"\xEF\xBB\xBF{}".to_vec()).unwrap(),
            "{}"
        );
    }
}
