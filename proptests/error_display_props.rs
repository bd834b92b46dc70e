//! spec/profile-format.md "Reports": text from files is escaped before it is printed, error
//! messages included.
//!
//! Invariant: for any string `s` (control characters, C1 controls, DEL and bidirectional
//! overrides mixed in), every `Error` that carries `s` (as a value, a message, a path, a nested
//! error) displays with no control character; and so does the error of loading a profile and a
//! checksum log whose fixed-choice field is `s`, or a capture file whose tensor is named `s`.

use std::path::PathBuf;

use brickprof::capture::CaptureStore;
use brickprof::{checksum::ChecksumLog, Error, Profile};
use proptest::prelude::*;

/// Text biased to what could drive a terminal: C0 and C1 controls, DEL, bidi overrides.
fn hostile_text() -> impl Strategy<Value = String> {
    let c = prop_oneof![
        any::<char>(),
        (0u32..0x20).prop_map(|u| char::from_u32(u).unwrap()),
        (0x7fu32..0xa0).prop_map(|u| char::from_u32(u).unwrap()),
        prop::sample::select(vec!['\u{202e}', '\u{2066}', '\u{200f}', ']', ';', 'a']),
    ];
    prop::collection::vec(c, 0..24).prop_map(String::from_iter)
}

/// Every variant that carries text, built from `s`.
fn errors_carrying(s: &str) -> Vec<Error> {
    let path = PathBuf::from(s);
    let inner = || Error::Invalid {
        path: path.clone(),
        message: s.into(),
    };
    vec![
        Error::Io {
            path: path.clone(),
            source: std::io::Error::other(s.to_string()),
        },
        Error::FileTooLarge {
            path: path.clone(),
            limit: 1,
        },
        Error::Parse {
            path: path.clone(),
            line: 1,
            column: 2,
            message: s.into(),
        },
        inner(),
        Error::UnsupportedVersion {
            path: path.clone(),
            what: "profile",
            found: 9,
            supported: 1,
        },
        Error::Hip {
            call: "hipMalloc",
            code: 1,
            message: s.into(),
        },
        Error::OpenCl {
            call: "clFinish",
            code: -5,
            message: s.into(),
        },
        Error::Cuda {
            call: "cuInit",
            message: s.into(),
        },
        Error::NoDevice {
            timeline: "cuda",
            reason: s.into(),
            install: "install a driver",
        },
        Error::Timeline(s.into()),
        Error::Merge(s.into()),
        Error::DuplicateKernel {
            path: Some(path.clone()),
            log: "reference",
            key: s.into(),
            first: 0,
            second: 1,
        },
        Error::InvalidValue {
            what: "value",
            value: s.into(),
            expected: s.into(),
        },
        Error::invalid_value("value", s, s),
        Error::TraceOrder {
            name: s.into(),
            start_ns: 1,
            previous_ns: 2,
        },
        Error::OutputIsInput {
            output: path.clone(),
            input: path.clone(),
        },
        Error::Encode {
            what: "a packet",
            message: s.into(),
        },
        Error::ThreadHasProfiler { timeline: s.into() },
        Error::InFile {
            path: path.clone(),
            source: Box::new(inner()),
        },
        Error::Peaks(s.into()),
        Error::NotAnOutput {
            path: path.clone(),
            what: "a directory",
        },
    ]
}

fn control(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn an_error_built_from_any_text_displays_no_control_character(s in hostile_text()) {
        for e in errors_carrying(&s) {
            let shown = e.to_string();
            prop_assert_eq!(control(&shown), None, "{:?} displays {:?}", e, shown);
        }
    }

    #[test]
    fn a_file_with_any_text_in_a_fixed_choice_field_errors_escaped(s in hostile_text()) {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("p.json");
        let mut p = serde_json::to_value(crate::common::nested_profile()).unwrap();
        p["meta"]["sync_mode"] = serde_json::Value::String(s.clone());
        std::fs::write(&profile, p.to_string()).unwrap();
        let log = dir.path().join("c.json");
        std::fs::write(
            &log,
            serde_json::json!({"kind": "checksums", "format_version": 2, "algorithm": s, "entries": []})
                .to_string(),
        )
        .unwrap();
        let captures = dir.path().join("captures.safetensors");
        let header = serde_json::json!({s.clone(): {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}});
        let header = serde_json::to_vec(&header).unwrap();
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(&header);
        bytes.extend_from_slice(&[0; 8]);
        std::fs::write(&captures, bytes).unwrap();
        for shown in [
            Profile::load(&profile).map(drop),
            ChecksumLog::load(&log).map(drop),
            CaptureStore::load(&captures).map(drop),
        ]
        .into_iter()
        .filter_map(|r| r.err().map(|e| e.to_string()))
        {
            prop_assert_eq!(control(&shown), None, "{:?}", shown);
        }
    }
}
