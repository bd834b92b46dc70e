//! The capture file (spec/divergence.md "Capture files"): `captures.safetensors`, written and
//! read through the `safetensors` crate so that Python's `safetensors`/numpy read it too. Each
//! tensor is 1-D in its dtype (quantized blocks and opaque bytes as `U8`); the header's
//! `__metadata__` names the format and, per tensor, its key and brickprof dtype. Loading
//! validates everything and never panics: a fault is an [`Error`] naming the file.

use std::collections::{HashMap, HashSet};
use std::io::Read as _;
use std::path::Path;

use safetensors::tensor::{Dtype, TensorView};
use serde::{Deserialize, Serialize};

use super::{CaptureStore, CapturedTensor};
use crate::checksum::{DType, KernelKey};
use crate::{Error, Result};

/// What the `format` metadata of a capture file says.
pub const CAPTURE_FORMAT: &str = "brickprof-captures";
/// The capture file format version this build writes and reads.
pub const CAPTURE_FORMAT_VERSION: u32 = 1;
/// The largest capture file brickprof reads (64 GiB).
pub const MAX_CAPTURE_FILE_BYTES: u64 = 64 << 30;

/// One tensor's entry in the `kernels` metadata.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    name: String,
    pass: u64,
    layer: Option<u32>,
    brick: String,
    call: u32,
    dtype: DType,
}

/// The safetensors dtype a brickprof dtype is stored as.
fn stored_as(d: DType) -> Dtype {
    match d {
        DType::F32 => Dtype::F32,
        DType::F16 => Dtype::F16,
        DType::Bf16 => Dtype::BF16,
        DType::I8 => Dtype::I8,
        DType::U8 | DType::Q4_0 | DType::Q8_0 | DType::Bytes => Dtype::U8,
    }
}

/// A readable tensor name: `p0.L3.DownProjection.0`, `p0.model.LmHead.0` (the key is in the
/// metadata; the name is for people).
fn tensor_name(k: &KernelKey) -> String {
    let layer = k.layer.map_or("model".to_string(), |l| format!("L{l}"));
    format!("p{}.{layer}.{}.{}", k.pass, k.brick, k.call)
}

impl CaptureStore {
    /// Save the captures to `path` as safetensors (atomically).
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut names = HashSet::new();
        let mut entries = Vec::with_capacity(self.len());
        let mut views = Vec::with_capacity(self.len());
        for (i, t) in self.tensors().iter().enumerate() {
            let mut name = tensor_name(t.key());
            if !names.insert(name.clone()) {
                name = format!("{name}#{i}");
                names.insert(name.clone());
            }
            let dtype = stored_as(t.dtype());
            let n = t.bytes().len() / (dtype.bitsize() / 8).max(1);
            let view = TensorView::new(dtype, vec![n], t.bytes())
                .map_err(|e| Error::invalid(path, format!("tensor {name}: {e}")))?;
            let k = t.key();
            entries.push(Entry {
                name: name.clone(),
                pass: k.pass,
                layer: k.layer,
                brick: k.brick.clone(),
                call: k.call,
                dtype: t.dtype(),
            });
            views.push((name, view));
        }
        let kernels = serde_json::to_string(&entries)
            .map_err(|e| Error::invalid(path, format!("metadata: {e}")))?;
        let metadata: HashMap<String, String> = [
            ("format", CAPTURE_FORMAT.to_string()),
            ("format_version", CAPTURE_FORMAT_VERSION.to_string()),
            ("budget_bytes", self.budget_bytes().to_string()),
            ("overflow_tensors", self.overflow_tensors().to_string()),
            ("overflow_bytes", self.overflow_bytes().to_string()),
            ("kernels", kernels),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let bytes = safetensors::serialize(views, Some(metadata))
            .map_err(|e| Error::invalid(path, format!("cannot serialize: {e}")))?;
        crate::OutputFile::write_whole(path, &bytes)
    }

    /// Load a capture file written by [`Self::save`]. Every fault (not safetensors, another
    /// format, a missing or bad metadata field, a tensor whose bytes do not fit its dtype, a
    /// truncated file) is an [`Error`] naming the file; never a panic.
    pub fn load(path: &Path) -> Result<CaptureStore> {
        let bytes = read_limited(path)?;
        let bad = |m: String| Error::invalid(path, m);
        let st = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| bad(format!("not a safetensors file brickprof can read: {e}")))?;
        let (_, header) = safetensors::SafeTensors::read_metadata(&bytes)
            .map_err(|e| bad(format!("not a safetensors file brickprof can read: {e}")))?;
        let meta = header
            .metadata()
            .as_ref()
            .ok_or_else(|| bad("no __metadata__: not a brickprof capture file".into()))?;
        let field = |k: &str| {
            meta.get(k)
                .ok_or_else(|| bad(format!("metadata field {k:?} is missing")))
        };
        if field("format")? != CAPTURE_FORMAT {
            return Err(bad(format!(
                "metadata format is {:?}, not {CAPTURE_FORMAT:?}",
                crate::printable::printable(field("format")?)
            )));
        }
        let number = |k: &str| -> Result<u64> {
            field(k)?
                .parse()
                .map_err(|_| bad(format!("metadata field {k:?} is not a number")))
        };
        let version = number("format_version")?;
        if version != u64::from(CAPTURE_FORMAT_VERSION) {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                what: "capture file",
                found: u32::try_from(version).unwrap_or(u32::MAX),
                supported: CAPTURE_FORMAT_VERSION,
            });
        }
        let entries: Vec<Entry> = serde_json::from_str(field("kernels")?)
            .map_err(|e| bad(format!("metadata field \"kernels\": {e}")))?;
        let mut store = CaptureStore::default();
        store.set_counts(
            number("budget_bytes")?,
            number("overflow_tensors")?,
            number("overflow_bytes")?,
        );
        let mut seen = HashSet::new();
        for e in entries {
            let name = crate::printable::printable(&e.name).into_owned();
            let view = st
                .tensor(&e.name)
                .map_err(|_| bad(format!("tensor {name} is named in the metadata but absent")))?;
            if view.dtype() != stored_as(e.dtype) {
                return Err(bad(format!(
                    "tensor {name} is stored as {:?}, but its dtype {} is stored as {:?}",
                    view.dtype(),
                    e.dtype,
                    stored_as(e.dtype)
                )));
            }
            let key = KernelKey {
                pass: e.pass,
                layer: e.layer,
                brick: e.brick,
                call: e.call,
            };
            if !seen.insert(key.clone()) {
                return Err(bad(format!("kernel {key} is captured twice")));
            }
            let t = CapturedTensor::from_parts(key, e.dtype, view.data().to_vec()).ok_or_else(
                || {
                    bad(format!(
                        "tensor {name}: {} bytes are not whole {} values",
                        view.data().len(),
                        e.dtype
                    ))
                },
            )?;
            store.push_loaded(t);
        }
        Ok(store)
    }
}

/// The whole file, at most [`MAX_CAPTURE_FILE_BYTES`].
fn read_limited(path: &Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(Error::invalid(path, "not a regular file"));
    }
    if meta.len() > MAX_CAPTURE_FILE_BYTES {
        return Err(Error::FileTooLarge {
            path: path.to_path_buf(),
            limit: MAX_CAPTURE_FILE_BYTES,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(MAX_CAPTURE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::Tensor;

    fn store() -> CaptureStore {
        let mut s = CaptureStore::with_budget(1 << 20);
        let key = |layer, brick: &str, call| KernelKey {
            pass: 0,
            layer,
            brick: brick.into(),
            call,
        };
        s.record(key(Some(0), "RmsNorm", 0), Tensor::F32(&[1.0, -2.0, 3.5]));
        s.record(key(Some(0), "RmsNorm", 1), Tensor::Bf16(&[0x3f80]));
        s.record(key(None, "LmHead", 0), Tensor::I8(&[-1, 2]));
        s
    }

    #[test]
    fn a_capture_file_round_trips() {
        // spec/divergence.md "Capture files".
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("captures.safetensors");
        let s = store();
        s.save(&path).unwrap();
        let back = CaptureStore::load(&path).unwrap();
        assert_eq!(back.tensors(), s.tensors());
        assert_eq!(back.budget_bytes(), 1 << 20);
    }

    #[test]
    fn every_prefix_and_every_byte_flip_is_an_error_or_a_file_never_a_panic() {
        // spec/divergence.md "Capture files": mutated and truncated files never panic.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("captures.safetensors");
        store().save(&path).unwrap();
        let good = std::fs::read(&path).unwrap();
        let bad = dir.path().join("bad.safetensors");
        for cut in 0..good.len() {
            std::fs::write(&bad, &good[..cut]).unwrap();
            let e = CaptureStore::load(&bad).unwrap_err();
            assert!(e.to_string().contains("bad.safetensors"), "{e}");
        }
        for i in 0..good.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut b = good.clone();
                b[i] ^= flip;
                std::fs::write(&bad, &b).unwrap();
                if let Err(e) = CaptureStore::load(&bad) {
                    assert!(e.to_string().contains("bad.safetensors"), "{e}");
                }
            }
        }
    }
}
