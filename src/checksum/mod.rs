//! Kernel checksums (spec/checksums.md): a hash of a whole output tensor ([`Algorithm`]: the
//! lane-parallel `fnv1a64-lanes8` by default, byte-wise FNV-1a 64 available), a cheap
//! [`TensorSummary`] computed in the same pass, the [`DType`] of what was hashed, and the
//! [`ChecksumLog`] of [`KernelChecksum`]s keyed by (pass, layer, brick, call), saved to disk.
//!
//! | file | what lives there |
//! |---|---|
//! | `fnv.rs` | the two hash algorithms, [`Algorithm`] |
//! | `dtype.rs` | [`DType`], [`Tensor`] views, f16/bf16 and GGUF block decoding |
//! | `summary.rs` | [`TensorSummary`] and its lane accumulators |
//! | `log.rs` | [`KernelKey`], [`KernelChecksum`], [`ChecksumLog`], the file format |

mod dtype;
mod fnv;
mod log;
mod summary;

pub use dtype::{DType, HalfFormat, QuantBlocks, QuantFormat, Tensor};
pub use fnv::{
    fnv1a_bytes, Algorithm, BLOCK_BYTES, FNV_OFFSET_BASIS, FNV_PRIME, LANES, LANE_ROTATION,
};
pub(crate) use log::hex_u64;
pub use log::{
    ChecksumLog, KernelChecksum, KernelKey, CHECKSUM_FORMAT_VERSION, OLDEST_CHECKSUM_FORMAT_VERSION,
};
pub use summary::{TensorSummary, MAX_COUNT};

use dtype::f16_to_f32;
use fnv::{fnv1a_elements, hash_elements, Element};
use summary::Acc;

/// The hash (with `algorithm`) and the summary of a tensor. With the default algorithm both
/// come from one pass over memory.
///
/// ```
/// use brickprof::checksum::{checksum, Algorithm, Tensor};
/// let x = [1.0f32, -2.0, 0.5];
/// let (hash, summary) = checksum(Algorithm::Fnv1a64Lanes8, Tensor::F32(&x));
/// let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
/// assert_eq!(hash, Algorithm::Fnv1a64Lanes8.hash_bytes(&bytes));
/// assert_eq!(summary.sum(), -0.5);
/// ```
pub fn checksum(algorithm: Algorithm, tensor: Tensor<'_>) -> (u64, TensorSummary) {
    match tensor {
        Tensor::F32(x) => hash_and_summary(algorithm, x, |v| v),
        Tensor::F16(x) => hash_and_summary(algorithm, x, f16_to_f32),
        Tensor::Bf16(x) => hash_and_summary(algorithm, x, |b| HalfFormat::Bf16.to_f32(b)),
        Tensor::I8(x) => hash_and_summary(algorithm, x, f32::from),
        Tensor::U8(x) => hash_and_summary(algorithm, x, f32::from),
        Tensor::Quantized(q) => {
            let hash = hash_only(algorithm, q.bytes());
            let format = q.format();
            let mut acc = Acc::default();
            let mut values = [0.0f32; QuantFormat::BLOCK_VALUES]; // 32: a multiple of the lanes
            for block in q.bytes().chunks_exact(format.block_bytes()) {
                format.decode_block(block, &mut values);
                acc.block(&values, |v| v);
            }
            let decoded = q
                .bytes()
                .chunks_exact(format.block_bytes())
                .flat_map(|block| {
                    let mut values = [0.0f32; QuantFormat::BLOCK_VALUES]; // 32: a multiple of the lanes
                    format.decode_block(block, &mut values);
                    values
                });
            let n = q.bytes().len() / format.block_bytes() * QuantFormat::BLOCK_VALUES;
            (hash, acc.finish(ExactLen(decoded, n)))
        }
        Tensor::Bytes(x) => (hash_only(algorithm, x), TensorSummary::of_bytes(x.len())),
    }
}

/// An iterator with a known length (for [`Acc::finish`]).
struct ExactLen<I>(I, usize);

impl<I: Iterator<Item = f32>> Iterator for ExactLen<I> {
    type Item = f32;
    fn next(&mut self) -> Option<f32> {
        self.0.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.1, Some(self.1))
    }
}

impl<I: Iterator<Item = f32>> ExactSizeIterator for ExactLen<I> {}

fn hash_only<T: Element>(algorithm: Algorithm, data: &[T]) -> u64 {
    match algorithm {
        Algorithm::Fnv1a64 => fnv1a_elements(data),
        Algorithm::Fnv1a64Lanes8 => hash_elements(data, |_| {}),
    }
}

#[inline(always)]
fn hash_and_summary<T: Element>(
    algorithm: Algorithm,
    data: &[T],
    decode: impl Fn(T) -> f32 + Copy,
) -> (u64, TensorSummary) {
    match algorithm {
        Algorithm::Fnv1a64 => (
            fnv1a_elements(data),
            TensorSummary::of_decoded(data, decode),
        ),
        Algorithm::Fnv1a64Lanes8 => {
            let (hash, acc) = lanes_pass_wide(data, decode);
            (hash, acc.finish(data.iter().map(|&v| decode(v))))
        }
    }
}

/// The hash and the summary lanes in one loop: per block, the lanes' scalar multiplies and the
/// summary's vector instructions interleave.
#[inline(always)]
fn lanes_pass<T: Element>(data: &[T], decode: impl Fn(T) -> f32 + Copy) -> (u64, Acc) {
    let mut acc = Acc::default();
    let hash = hash_elements(data, |block| acc.block(block, decode));
    (hash, acc)
}

/// [`lanes_pass`] compiled for AVX2 when the CPU has it (the same code, so the results are
/// bit-identical; only faster).
fn lanes_pass_wide<T: Element>(data: &[T], decode: impl Fn(T) -> f32 + Copy) -> (u64, Acc) {
    #[cfg(target_arch = "x86_64")]
    if summary::Wide::detect().avx2() {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { lanes_pass_avx2(data, decode) };
    }
    lanes_pass(data, decode)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn lanes_pass_avx2<T: Element>(data: &[T], decode: impl Fn(T) -> f32 + Copy) -> (u64, Acc) {
    lanes_pass(data, decode)
}

/// The default algorithm's hash of every f32 of the slice (their little-endian bytes).
///
/// Bit-exact: `+0.0` and `-0.0`, and NaNs with different payloads, hash differently.
///
/// ```
/// use brickprof::checksum::{Algorithm, f32_checksum};
/// let x = [1.0f32, -0.0, f32::MAX];
/// let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
/// assert_eq!(f32_checksum(&x), Algorithm::Fnv1a64Lanes8.hash_bytes(&bytes));
/// assert_ne!(f32_checksum(&[0.0]), f32_checksum(&[-0.0]));
/// ```
pub fn f32_checksum(data: &[f32]) -> u64 {
    hash_only(Algorithm::Fnv1a64Lanes8, data)
}

/// Byte-wise FNV-1a 64 over the little-endian bytes of **every** f32 of the slice, in order:
/// the `fnv` crate's `FnvHasher` fed the same bytes (the version-1 algorithm).
///
/// ```
/// use brickprof::{fnv1a_f32_checksum, checksum::fnv1a_bytes};
/// let x = [1.0f32, -0.0, f32::MAX];
/// let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
/// assert_eq!(fnv1a_f32_checksum(&x), fnv1a_bytes(&bytes));
/// ```
pub fn fnv1a_f32_checksum(data: &[f32]) -> u64 {
    fnv1a_elements(data)
}

/// Byte-wise FNV-1a 64 over the little-endian bytes of every `u16` (f16 or bf16 bit patterns).
///
/// ```
/// use brickprof::checksum::{fnv1a_bytes, fnv1a_u16_checksum};
/// assert_eq!(fnv1a_u16_checksum(&[0x3c00]), fnv1a_bytes(&[0x00, 0x3c]));
/// ```
pub fn fnv1a_u16_checksum(data: &[u16]) -> u64 {
    fnv1a_elements(data)
}

/// The default algorithm's hash and the [`TensorSummary`] of an f32 tensor, in one pass.
///
/// ```
/// use brickprof::checksum::{checksum_and_summary, f32_checksum};
/// use brickprof::TensorSummary;
/// let x: Vec<f32> = (0..100).map(|i| i as f32 - 50.0).chain([f32::NAN]).collect();
/// assert_eq!(checksum_and_summary(&x), (f32_checksum(&x), TensorSummary::of_f32(&x)));
/// ```
pub fn checksum_and_summary(data: &[f32]) -> (u64, TensorSummary) {
    checksum(Algorithm::Fnv1a64Lanes8, Tensor::F32(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hasher;

    #[test]
    fn byte_wise_matches_the_fnv_crate() {
        let data: Vec<f32> = (0..1000).map(|i| (i as f32).sin() * 1e3).collect();
        let mut h = ::fnv::FnvHasher::default();
        for v in &data {
            h.write(&v.to_le_bytes());
        }
        assert_eq!(fnv1a_f32_checksum(&data), h.finish());
        let halves: Vec<u16> = (0..1000).map(|i| (i * 37) as u16).collect();
        let mut h = ::fnv::FnvHasher::default();
        for v in &halves {
            h.write(&v.to_le_bytes());
        }
        assert_eq!(fnv1a_u16_checksum(&halves), h.finish());
    }

    #[test]
    fn every_element_counts_not_just_the_first_64() {
        let mut data = vec![0.5f32; 4096];
        let before = f32_checksum(&data);
        data[4000] = 0.25;
        assert_ne!(f32_checksum(&data), before);
        data[4000] = 0.5;
        data[4095] = 0.25; // in the tail of the last block
        assert_ne!(f32_checksum(&data), before);
    }

    #[test]
    fn the_avx2_pass_and_the_portable_pass_agree_bit_for_bit() {
        // spec/checksums.md "Summary": bit-identical on every CPU.
        let x: Vec<f32> = (0..10_007)
            .map(|i| ((i as f32) * 0.37).tan() * 10f32.powi(i % 7 - 3))
            .collect();
        let (h1, a1) = lanes_pass(&x, |v| v);
        let (h2, a2) = lanes_pass_wide(&x, |v| v);
        assert_eq!(h1, h2);
        assert_eq!(a1.finish(x.iter().copied()), a2.finish(x.iter().copied()));
    }

    #[test]
    fn both_algorithms_summarize_identically() {
        let x: Vec<f32> = (0..1001).map(|i| (i as f32 * 0.3).cos() * 1e4).collect();
        for a in Algorithm::ALL {
            assert_eq!(checksum(a, Tensor::F32(&x)).1, TensorSummary::of_f32(&x));
        }
    }

    #[test]
    fn quantized_summaries_decode_every_block() {
        let mut q8 = Vec::new();
        for b in 0..3u8 {
            q8.extend([0x00, 0x3c]); // d = 1.0
            q8.extend((0..32).map(|i| i as u8 + b));
        }
        let q = QuantBlocks::new(QuantFormat::Q8_0, &q8).unwrap();
        let (hash, s) = checksum(Algorithm::Fnv1a64Lanes8, Tensor::Quantized(q));
        assert_eq!(hash, Algorithm::Fnv1a64Lanes8.hash_bytes(&q8));
        assert_eq!((s.len(), s.min(), s.max()), (96, 0.0, 33.0));
        let (_, bytes) = checksum(Algorithm::Fnv1a64Lanes8, Tensor::Bytes(&q8));
        assert_eq!((bytes.len(), bytes.sum()), (102, 0.0));
    }
}
