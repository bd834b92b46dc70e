//! The capture file (spec/divergence.md "Capture files"): `captures.safetensors`, written and
//! read through the `safetensors` crate so that Python's `safetensors`/numpy read it too. Each
//! tensor is 1-D in its dtype (quantized blocks and opaque bytes as `U8`); the header's
//! `__metadata__` names the format and, per tensor, its key and brickprof dtype. Loading
//! validates everything and never panics: a fault is an [`Error`] naming the file.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use safetensors::tensor::{Dtype, Metadata, TensorView};
use serde::{Deserialize, Serialize};

use super::{CaptureStore, CapturedTensor};
use crate::checksum::{DType, KernelKey};
use crate::{Error, Result};

/// What the `format` metadata of a capture file says.
pub(crate) const CAPTURE_FORMAT: &str = "brickprof-captures";
/// The capture file format version this build writes and reads.
pub(crate) const CAPTURE_FORMAT_VERSION: u32 = 1;
/// The largest capture file brickprof reads (64 GiB).
pub(crate) const MAX_CAPTURE_FILE_BYTES: u64 = 64 << 30;

/// One tensor's entry in the `kernels` metadata.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    name: String,
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
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
        let mut entries = Vec::with_capacity(self.tensors.len());
        let mut views = Vec::with_capacity(self.tensors.len());
        for (i, t) in self.tensors.iter().enumerate() {
            let mut name = tensor_name(&t.key);
            if !names.insert(name.clone()) {
                name = format!("{name}#{i}");
                names.insert(name.clone());
            }
            let dtype = stored_as(t.dtype);
            let n = t.bytes.len() / (dtype.bitsize() / 8).max(1);
            let view = TensorView::new(dtype, vec![n], &t.bytes)
                .map_err(|e| Error::invalid(path, format!("tensor {name}: {e}")))?;
            let k = &t.key;
            entries.push(Entry {
                name: name.clone(),
                pass: k.pass,
                layer: k.layer,
                brick: k.brick.clone(),
                call: k.call,
                dtype: t.dtype,
            });
            views.push((name, view));
        }
        let kernels = serde_json::to_string(&entries)
            .map_err(|e| Error::invalid(path, format!("metadata: {e}")))?;
        let run_id = self.run_id.as_ref().map(|id| ("run_id", id.to_string()));
        let metadata: HashMap<String, String> = [
            ("format", CAPTURE_FORMAT.to_string()),
            ("format_version", CAPTURE_FORMAT_VERSION.to_string()),
            ("budget_bytes", self.budget_bytes.to_string()),
            ("overflow_tensors", self.overflow_tensors.to_string()),
            ("overflow_bytes", self.overflow_bytes.to_string()),
            ("kernels", kernels),
        ]
        .into_iter()
        .chain(run_id)
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let bytes = safetensors::serialize(views, Some(metadata))
            .map_err(|e| Error::invalid(path, format!("cannot serialize: {e}")))?;
        crate::io::OutputFile::write_whole(path, &bytes)
    }

    /// Load a capture file written by [`Self::save`]. Every fault (not safetensors, another
    /// format, a missing or bad metadata field, a tensor whose bytes do not fit its dtype, a
    /// truncated file) is an [`Error`] naming the file; never a panic.
    ///
    /// The header is read and checked against the file's size first, so a file whose header
    /// does not describe it exactly costs the header, never the file; then only the tensors the
    /// metadata names are read, each once (spec/divergence.md "Capture files").
    pub fn load(path: &Path) -> Result<CaptureStore> {
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
        load_from(path, std::io::BufReader::new(file), meta.len())
    }
}

/// The largest safetensors header brickprof reads (the `safetensors` crate's own limit).
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// [`CaptureStore::load`] from `input`, a file of `len` bytes.
fn load_from(path: &Path, mut input: impl Read + Seek, len: u64) -> Result<CaptureStore> {
    let (header, data_start) = read_header(path, &mut input, len)?;
    let (mut store, entries) = store_of(path, &header)?;
    read_tensors(path, input, &header, entries, data_start, &mut store)?;
    Ok(store)
}

/// The safetensors header and where the tensor data starts: the header's 8-byte length, then
/// the JSON, checked against the file's size before any tensor byte is read.
fn read_header(path: &Path, input: &mut impl Read, len: u64) -> Result<(Metadata, u64)> {
    let bad = |m: String| Error::invalid(path, m);
    let io = |e| Error::io(path, e);
    let mut n = [0u8; 8];
    if len < 8 {
        return Err(bad(format!(
            "not a safetensors file brickprof can read: {len} bytes, shorter than the 8-byte header length"
        )));
    }
    input.read_exact(&mut n).map_err(io)?;
    let n = u64::from_le_bytes(n);
    if n > MAX_HEADER_BYTES {
        return Err(bad(format!(
            "not a safetensors file brickprof can read: a header of {n} bytes (at most {MAX_HEADER_BYTES})"
        )));
    }
    if n > len - 8 {
        return Err(bad(format!(
            "the header of {n} bytes runs past the end of the file ({len} bytes): truncated?"
        )));
    }
    let mut header = vec![0u8; n as usize];
    input.read_exact(&mut header).map_err(io)?;
    let header: Metadata = serde_json::from_slice(&header)
        .map_err(|e| bad(format!("not a safetensors file brickprof can read: {e}")))?;
    let data_start = 8 + n;
    let data = len - data_start;
    if header.data_len() as u64 != data {
        return Err(bad(format!(
            "the header describes {} bytes of tensor data, but the file holds {data} after it: \
             truncated, or not one whole capture file",
            header.data_len()
        )));
    }
    Ok((header, data_start))
}

/// An empty store with the file's metadata (format, version, budget, overflow, run id) and the
/// kernels it names.
fn store_of(path: &Path, header: &Metadata) -> Result<(CaptureStore, Vec<Entry>)> {
    let bad = |m: String| Error::invalid(path, m);
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
            crate::base::printable::printable(field("format")?)
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
    let mut store = CaptureStore {
        budget_bytes: number("budget_bytes")?,
        overflow_tensors: number("overflow_tensors")?,
        overflow_bytes: number("overflow_bytes")?,
        ..CaptureStore::default()
    };
    // Optional: files written before run ids, or captures saved alone, have none.
    if let Some(id) = meta.get("run_id") {
        let id = id
            .parse()
            .map_err(|e: Error| bad(format!("metadata field \"run_id\": {e}")))?;
        store.run_id = Some(id);
    }
    Ok((store, entries))
}

/// Each kernel's tensor, read once (memory stays within the file's size) and checked against
/// its entry.
fn read_tensors(
    path: &Path,
    mut input: impl Read + Seek,
    header: &Metadata,
    entries: Vec<Entry>,
    data_start: u64,
    store: &mut CaptureStore,
) -> Result<()> {
    let bad = |m: String| Error::invalid(path, m);
    let io = |e| Error::io(path, e);
    let mut seen = HashSet::new();
    let mut names = HashSet::new();
    for e in entries {
        let name = crate::base::printable::printable(&e.name).into_owned();
        let info = header
            .info(&e.name)
            .ok_or_else(|| bad(format!("tensor {name} is named in the metadata but absent")))?;
        // Each tensor is read once: memory stays within the file's size.
        if !names.insert(e.name.clone()) {
            return Err(bad(format!("tensor {name} is named by two kernels")));
        }
        if info.dtype != stored_as(e.dtype) {
            return Err(bad(format!(
                "tensor {name} is stored as {:?}, but its dtype {} is stored as {:?}",
                info.dtype,
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
        let (begin, end) = info.data_offsets;
        let size = end - begin;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(size)
            .map_err(|_| bad(format!("tensor {name}: {size} bytes do not fit in memory")))?;
        input
            .seek(SeekFrom::Start(data_start + begin as u64))
            .map_err(io)?;
        (&mut input)
            .take(size as u64)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() != size {
            return Err(bad(format!(
                "tensor {name}: the file ends inside it (it changed while being read?)"
            )));
        }
        let t = CapturedTensor::from_parts(key, e.dtype, bytes).ok_or_else(|| {
            bad(format!(
                "tensor {name}: {size} bytes are not whole {} values",
                e.dtype
            ))
        })?;
        store.push_loaded(t);
    }
    Ok(())
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
    fn a_pass_above_2_pow_53_is_a_string_in_the_kernel_index() {
        // spec/profile-format.md "Large integers", spec/divergence.md "Capture files".
        let big = crate::base::exact_int::MAX_SAFE + 1;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("captures.safetensors");
        let mut s = CaptureStore::with_budget(1 << 20);
        let key = KernelKey {
            pass: big,
            layer: Some(0),
            brick: "RmsNorm".into(),
            call: 0,
        };
        s.record(key, Tensor::F32(&[1.0]));
        s.save(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + len]).unwrap();
        let kernels = header["__metadata__"]["kernels"].as_str().unwrap();
        let index: serde_json::Value = serde_json::from_str(kernels).unwrap();
        assert_eq!(index[0]["pass"], serde_json::Value::from(big.to_string()));
        assert_eq!(CaptureStore::load(&path).unwrap().tensors, s.tensors);
    }

    #[test]
    fn a_capture_file_round_trips() {
        // spec/divergence.md "Capture files".
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("captures.safetensors");
        let s = store();
        s.save(&path).unwrap();
        let back = CaptureStore::load(&path).unwrap();
        assert_eq!(back.tensors, s.tensors);
        assert_eq!(back.budget_bytes, 1 << 20);
        assert_eq!(back.run_id, None);
    }

    #[test]
    fn a_capture_files_run_id_round_trips_and_a_bad_one_is_refused() {
        // spec/profile-format.md "A run folder": the captures carry the run id.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("captures.safetensors");
        let mut s = store();
        let id = crate::io::RunId::new();
        s.run_id = Some(id.clone());
        s.save(&path).unwrap();
        assert_eq!(CaptureStore::load(&path).unwrap().run_id, Some(id.clone()));
        let bytes = std::fs::read(&path).unwrap();
        let id_text = id.to_string();
        let at = bytes
            .windows(id_text.len())
            .position(|w| w == id_text.as_bytes())
            .unwrap();
        let mut bad = bytes.clone();
        bad[at] = b' ';
        std::fs::write(&path, &bad).unwrap();
        let e = CaptureStore::load(&path).unwrap_err().to_string();
        assert!(e.contains("run_id"), "{e}");
    }

    /// A file of `len` bytes, `head` then zeros, that counts the bytes read from it.
    struct Counted {
        head: Vec<u8>,
        len: u64,
        pos: u64,
        read: u64,
    }

    impl Read for Counted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = (self.len.saturating_sub(self.pos)).min(buf.len() as u64) as usize;
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = self.head.get(self.pos as usize + i).copied().unwrap_or(0);
            }
            self.pos += n as u64;
            self.read += n as u64;
            Ok(n)
        }
    }

    impl Seek for Counted {
        fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
            self.pos = match to {
                SeekFrom::Start(p) => p,
                SeekFrom::End(d) => self.len.saturating_add_signed(d),
                SeekFrom::Current(d) => self.pos.saturating_add_signed(d),
            };
            Ok(self.pos)
        }
    }

    #[test]
    fn the_header_is_checked_against_the_file_size_before_any_tensor_is_read() {
        // spec/divergence.md "Capture files": before, a 3 GiB file with a valid 560-byte
        // header was read whole (3 GB, 10 s) before "file not fully covered".
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("captures.safetensors");
        store().save(&path).unwrap();
        let good = std::fs::read(&path).unwrap();
        let header_end = 8 + u64::from_le_bytes(good[..8].try_into().unwrap());
        let counted = |len| Counted {
            head: good.clone(),
            len,
            pos: 0,
            read: 0,
        };
        // Whole: the header, then each tensor once.
        let mut whole = counted(good.len() as u64);
        let back = load_from(&path, &mut whole, good.len() as u64).unwrap();
        assert_eq!(back.tensors, store().tensors);
        assert_eq!(whole.read, good.len() as u64);
        // 3 GiB of zeros past the tensors: refused having read the header only.
        let len = 3 << 30;
        let mut huge = counted(len);
        let err = load_from(&path, &mut huge, len).unwrap_err();
        assert!(huge.read <= header_end, "read {} bytes", huge.read);
        let data = good.len() as u64 - header_end;
        assert!(
            err.to_string().contains(&format!(
                "describes {data} bytes of tensor data, but the file holds {}",
                len - header_end
            )),
            "{err}"
        );
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
