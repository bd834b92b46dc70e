//! [`CaptureStore`]: the captured tensors of a run, bounded by the plan's byte budget, with the
//! overflow counted (spec/divergence.md "Capture plans"). [`CapturedTensor`] holds one kernel's
//! whole output as little-endian bytes in the dtype the engine computed.

use crate::checksum::{DType, HalfFormat, KernelKey, QuantFormat, Tensor};

/// One captured kernel output: its key, dtype and little-endian bytes (plain data to read; made
/// by a [`CaptureStore`] or read from a capture file).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CapturedTensor {
    /// Where it was captured.
    pub key: KernelKey,
    /// Its dtype.
    pub dtype: DType,
    /// Its little-endian bytes.
    pub bytes: Vec<u8>,
}

impl CapturedTensor {
    /// A copy of `tensor`, captured at `key`.
    pub(crate) fn of(key: KernelKey, tensor: Tensor<'_>) -> Self {
        let mut bytes = Vec::with_capacity(byte_len(tensor));
        match tensor {
            Tensor::F32(x) => x
                .iter()
                .for_each(|v| bytes.extend_from_slice(&v.to_le_bytes())),
            Tensor::F16(x) | Tensor::Bf16(x) => x
                .iter()
                .for_each(|v| bytes.extend_from_slice(&v.to_le_bytes())),
            Tensor::I8(x) => bytes.extend(x.iter().map(|&v| v as u8)),
            Tensor::U8(x) | Tensor::Bytes(x) => bytes.extend_from_slice(x),
            Tensor::Quantized(q) => bytes.extend_from_slice(q.bytes()),
        }
        CapturedTensor {
            key,
            dtype: tensor.dtype(),
            bytes,
        }
    }

    /// Build from parts read from a file; `None` when the byte length does not fit the dtype
    /// (not a whole number of elements or blocks).
    pub(crate) fn from_parts(key: KernelKey, dtype: DType, bytes: Vec<u8>) -> Option<Self> {
        let unit = match dtype {
            DType::F32 => 4,
            DType::F16 | DType::Bf16 => 2,
            DType::I8 | DType::U8 | DType::Bytes => 1,
            DType::Q4_0 => QuantFormat::Q4_0.block_bytes(),
            DType::Q8_0 => QuantFormat::Q8_0.block_bytes(),
        };
        bytes
            .len()
            .is_multiple_of(unit)
            .then_some(CapturedTensor { key, dtype, bytes })
    }

    /// The hash of the bytes with `algorithm`: the checksum the recorder took of the original
    /// output (every dtype hashes as its little-endian bytes), so a capture can be matched to
    /// its run's checksum log.
    pub(crate) fn hash(&self, algorithm: crate::checksum::Algorithm) -> u64 {
        algorithm.hash(Tensor::Bytes(&self.bytes))
    }

    /// The values decoded to f32 (exact for every numeric dtype; quantized blocks
    /// dequantized); `None` for opaque bytes.
    pub(crate) fn values(&self) -> Option<Vec<f32>> {
        let b = &self.bytes;
        let half = |f: HalfFormat| {
            b.chunks_exact(2)
                .map(|c| f.to_f32(u16::from_le_bytes([c[0], c[1]])))
                .collect()
        };
        Some(match self.dtype {
            DType::F32 => b
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            DType::F16 => half(HalfFormat::F16),
            DType::Bf16 => half(HalfFormat::Bf16),
            DType::I8 => b.iter().map(|&v| f32::from(v as i8)).collect(),
            DType::U8 => b.iter().map(|&v| f32::from(v)).collect(),
            DType::Q4_0 | DType::Q8_0 => {
                let format = if self.dtype == DType::Q4_0 {
                    QuantFormat::Q4_0
                } else {
                    QuantFormat::Q8_0
                };
                let mut out = Vec::with_capacity(b.len() / format.block_bytes() * 32);
                let mut block = [0f32; QuantFormat::BLOCK_VALUES];
                for c in b.chunks_exact(format.block_bytes()) {
                    format.decode_block(c, &mut block);
                    out.extend_from_slice(&block);
                }
                out
            }
            DType::Bytes => return None,
        })
    }
}

/// Bytes of a tensor's data.
fn byte_len(tensor: Tensor<'_>) -> usize {
    match tensor {
        Tensor::F32(x) => 4 * x.len(),
        Tensor::F16(x) | Tensor::Bf16(x) => 2 * x.len(),
        Tensor::I8(x) => x.len(),
        Tensor::U8(x) | Tensor::Bytes(x) => x.len(),
        Tensor::Quantized(q) => q.bytes().len(),
    }
}

/// The captured tensors of a run, in capture order, within a byte budget: plain data, taken from
/// the profiler (`prof.checksums().take_captures()`) or read from a capture file
/// ([`CaptureStore::load`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaptureStore {
    /// The captured tensors, in capture order.
    pub tensors: Vec<CapturedTensor>,
    /// Bytes of tensor data kept.
    pub bytes: u64,
    /// The byte budget.
    pub budget_bytes: u64,
    /// Tensors the plan selected that did not fit the budget.
    pub overflow_tensors: u64,
    /// Bytes of those tensors.
    pub overflow_bytes: u64,
    /// The run the captures belong to, when saved into a run folder (spec/profile-format.md
    /// "A run folder"); `None` in older files and captures saved alone.
    pub run_id: Option<crate::io::RunId>,
}

impl CaptureStore {
    /// An empty store keeping at most `budget_bytes` of tensor data.
    pub(crate) fn with_budget(budget_bytes: u64) -> Self {
        CaptureStore {
            budget_bytes,
            ..Self::default()
        }
    }

    /// Capture `tensor` at `key` when it fits the budget; count it as overflow otherwise.
    /// True when it was kept.
    pub(crate) fn record(&mut self, key: KernelKey, tensor: Tensor<'_>) -> bool {
        let n = byte_len(tensor) as u64;
        if self.bytes.saturating_add(n) > self.budget_bytes {
            self.overflow_tensors = self.overflow_tensors.saturating_add(1);
            self.overflow_bytes = self.overflow_bytes.saturating_add(n);
            return false;
        }
        self.bytes += n;
        self.tensors.push(CapturedTensor::of(key, tensor));
        true
    }

    /// Add a tensor read from a file (budget not applied).
    pub(crate) fn push_loaded(&mut self, t: CapturedTensor) {
        self.bytes = self.bytes.saturating_add(t.bytes.len() as u64);
        self.tensors.push(t);
    }

    /// Forget every capture and count.
    pub(crate) fn clear(&mut self) {
        let budget = self.budget_bytes;
        *self = Self::with_budget(budget);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(call: u32) -> KernelKey {
        KernelKey {
            pass: 0,
            layer: Some(0),
            brick: "RmsNorm".into(),
            call,
        }
    }

    #[test]
    fn the_budget_keeps_what_fits_and_counts_the_rest() {
        // spec/divergence.md "Capture plans": overflow counted.
        let mut s = CaptureStore::with_budget(20);
        assert!(s.record(key(0), Tensor::F32(&[1.0; 4]))); // 16 bytes
        assert!(!s.record(key(1), Tensor::F32(&[1.0; 2]))); // 24 > 20
        assert!(s.record(key(2), Tensor::I8(&[1; 4]))); // 20
        assert_eq!((s.tensors.len(), s.bytes), (2, 20));
        assert_eq!((s.overflow_tensors, s.overflow_bytes), (1, 8));
    }

    #[test]
    fn values_decode_every_dtype() {
        // (the example of `values`' doc, before it became internal)
        let mut store = CaptureStore::with_budget(1024);
        assert!(store.record(key(0), Tensor::Bf16(&[0x3f80, 0xc000])));
        assert_eq!(store.tensors[0].values(), Some(vec![1.0, -2.0]));
        let t = CapturedTensor::of(key(0), Tensor::F32(&[1.5, -0.0]));
        assert_eq!(t.values().unwrap(), [1.5, -0.0]);
        assert_eq!(t.bytes.len(), 8);
        let t = CapturedTensor::of(key(0), Tensor::I8(&[-3, 4]));
        assert_eq!(t.values().unwrap(), [-3.0, 4.0]);
        let mut q8 = vec![0x00, 0x40]; // d = 2
        q8.extend([1u8; 32]);
        let q = crate::checksum::QuantBlocks::new(QuantFormat::Q8_0, &q8).unwrap();
        let t = CapturedTensor::of(key(0), Tensor::Quantized(q));
        assert_eq!(t.values().unwrap(), vec![2.0; 32]);
        assert!(CapturedTensor::of(key(0), Tensor::Bytes(&[1]))
            .values()
            .is_none());
        assert!(CapturedTensor::from_parts(key(0), DType::F32, vec![0; 6]).is_none());
    }
}
