//! Files whose fixed-choice fields hold a terminal escape sequence instead of a value brickprof
//! knows (spec/profile-format.md "Reports": text from files is escaped before it is printed,
//! error messages included). Shared by the library's tests (tests/files/escaped_errors.rs) and the
//! CLI's (crates/brickprof-cli/tests/commands/cli_robust.rs includes this file by path).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// An OSC sequence that retitles a terminal (ESC ] 0 ; ... BEL), plus a C1 control (CSI) and
/// DEL: each must reach no terminal raw.
pub const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{9b}2J\u{7f}";

/// Which loader reads a hostile file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// `Profile::load` (`brickprof report`).
    Profile,
    /// `ChecksumLog::load` (`brickprof diff`).
    Checksums,
    /// `CaptureStore::load` (`brickprof diff`, the capture file beside a checksum log).
    Captures,
}

/// One hostile file: the field that holds [`HOSTILE`], the file, and who reads it.
#[derive(Debug, Clone)]
pub struct Hostile {
    pub field: &'static str,
    pub path: PathBuf,
    pub reader: Reader,
}

/// The first control character of `text` (C0 but the newline, DEL, C1), if any.
pub fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|&c| c != '\n' && c.is_control())
}

/// `value`'s member at `path` (object keys; a number indexes an array, `*` picks the first
/// element that has the next key).
fn at<'a>(mut value: &'a mut Value, path: &[&str]) -> &'a mut Value {
    for (i, key) in path.iter().enumerate() {
        value = match *key {
            "*" => {
                let next = path[i + 1];
                value
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|v| {
                        v.get(next)
                            .is_some_and(|t| t.as_array().is_none_or(|a| !a.is_empty()))
                    })
                    .unwrap_or_else(|| panic!("no element with {next:?}"))
            }
            k => match k.parse::<usize>() {
                Ok(n) => &mut value[n],
                Err(_) => value.get_mut(k).unwrap_or_else(|| panic!("no {k:?}")),
            },
        };
    }
    value
}

/// A safetensors file: the header (its 8-byte length first), then `data`.
pub fn safetensors_file(path: &Path, header: &Value, data: &[u8]) {
    let header = serde_json::to_vec(header).unwrap();
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

/// The `__metadata__` of a brickprof capture file holding one f32 tensor named `t` whose
/// brickprof dtype is `dtype`.
pub fn capture_metadata(dtype: &str) -> Value {
    let kernels = json!([{
        "name": "t", "pass": 0, "layer": 0, "brick": "RmsNorm", "call": 0, "dtype": dtype
    }]);
    json!({
        "format": "brickprof-captures",
        "format_version": "1",
        "budget_bytes": "1024",
        "overflow_tensors": "0",
        "overflow_bytes": "0",
        "kernels": kernels.to_string(),
    })
}

/// Write every hostile file into `dir`: profiles and checksum logs edited from good ones, and
/// capture files (each in its own folder, beside an empty checksum log, as `diff` reads them).
pub fn hostile_files(dir: &Path, profile: &brickprof::Profile) -> Vec<Hostile> {
    let mut out = Vec::new();
    let good = dir.join("good.json");
    profile.save(&good).unwrap();
    let good: Value = serde_json::from_str(&std::fs::read_to_string(&good).unwrap()).unwrap();
    let log = profile
        .checksums
        .as_ref()
        .expect("a profile with checksums");
    let good_log = dir.join("good-log.json");
    log.save(&good_log).unwrap();
    let good_log: Value =
        serde_json::from_str(&std::fs::read_to_string(&good_log).unwrap()).unwrap();
    let mut edit = |field: &'static str, base: &Value, path: &[&str], reader| {
        let mut v = base.clone();
        *at(&mut v, path) = Value::String(HOSTILE.into());
        let file = dir.join(format!(
            "{}.json",
            field.replace(['.', '[', ']', ' ', '\''], "_")
        ));
        std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        out.push(Hostile {
            field,
            path: file,
            reader,
        });
    };
    edit("sync_mode", &good, &["meta", "sync_mode"], Reader::Profile);
    edit(
        "a brick's category",
        &good,
        &["bricks", "0", "category"],
        Reader::Profile,
    );
    edit(
        "a tile's level",
        &good,
        &["bricks", "*", "tiles", "0", "level"],
        Reader::Profile,
    );
    let mut with_levels = good.clone();
    with_levels["meta"]["peaks"] = json!({
        "name": "x", "gflops": 1000.0, "gbps": 100.0,
        "levels": [{"level": "l1", "bytes": 32768, "gbps": 150.0}],
    });
    edit(
        "peaks.levels[].level",
        &with_levels,
        &["meta", "peaks", "levels", "0", "level"],
        Reader::Profile,
    );
    let mut with_source = good.clone();
    with_source["meta"]["peaks"] =
        json!({"name": "x", "gflops": 1000.0, "gbps": 100.0, "source": "preset"});
    edit(
        "peaks.source",
        &with_source,
        &["meta", "peaks", "source"],
        Reader::Profile,
    );
    edit(
        "the checksum algorithm",
        &good_log,
        &["algorithm"],
        Reader::Checksums,
    );
    edit(
        "a checksum entry's dtype",
        &good_log,
        &["entries", "0", "dtype"],
        Reader::Checksums,
    );

    let one_f32 = |dtype: &str, name: &str, offsets: [u64; 2], metadata: Value| {
        json!({
            "__metadata__": metadata,
            name: {"dtype": dtype, "shape": [1], "data_offsets": offsets},
        })
    };
    let captures: [(&'static str, Value, usize); 3] = [
        (
            "the capture metadata dtype",
            one_f32("F32", "t", [0, 4], capture_metadata(HOSTILE)),
            4,
        ),
        (
            "the safetensors header dtype",
            one_f32(HOSTILE, "t", [0, 4], capture_metadata("f32")),
            4,
        ),
        (
            "safetensors' tensor name in an invalid offset",
            one_f32("F32", HOSTILE, [4, 8], capture_metadata("f32")),
            8,
        ),
    ];
    for (i, (field, header, data)) in captures.into_iter().enumerate() {
        let run = dir.join(format!("captures-{i}"));
        std::fs::create_dir_all(&run).unwrap();
        brickprof::checksum::ChecksumLog::default()
            .save(run.join("checksums.json"))
            .unwrap();
        let path = run.join("captures.safetensors");
        safetensors_file(&path, &header, &vec![0u8; data]);
        out.push(Hostile {
            field,
            path,
            reader: Reader::Captures,
        });
    }
    out
}
