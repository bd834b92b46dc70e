//! spec/profile-format.md "Reports": text from a file never reaches the terminal raw, error
//! messages included. An unknown value of a fixed-choice field is quoted by the parser that
//! rejects it (serde's "unknown variant", the safetensors crate's messages); `Error`'s Display
//! escapes every message, so none can forget.

use crate::common;

use brickprof::capture::CaptureStore;
use brickprof::{checksum::ChecksumLog, Profile};
use common::hostile::{hostile_files, raw_control, Reader};

#[test]
fn an_unknown_fixed_choice_value_is_escaped_in_the_error() {
    // Before: every field below was quoted raw, so ESC ] 0 ; ... BEL retitled the terminal.
    let dir = tempfile::tempdir().unwrap();
    let files = hostile_files(dir.path(), &common::fixed_profile(true));
    assert_eq!(files.len(), 10);
    let mut raw = Vec::new();
    for h in files {
        let err = match h.reader {
            Reader::Profile => Profile::load(&h.path).map(drop),
            Reader::Checksums => ChecksumLog::load(&h.path).map(drop),
            Reader::Captures => CaptureStore::load(&h.path).map(drop),
        }
        .expect_err(h.field);
        let shown = err.to_string();
        // The message quotes the value (so it is about the field) and names the file.
        assert!(shown.contains("pwned"), "{}: {shown}", h.field);
        let name = h.path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(shown.contains(&name), "{}: {shown}", h.field);
        if let Some(c) = raw_control(&shown) {
            raw.push((h.field, c));
        }
    }
    assert!(raw.is_empty(), "raw control characters for {raw:?}");
}
