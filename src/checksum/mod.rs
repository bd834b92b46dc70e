//! Kernel checksums (spec/checksums.md): a hash of a whole output tensor ([`Algorithm`]: the
//! lane-parallel `fnv1a64-lanes8-v2` by default; byte-wise FNV-1a 64 and the first lane
//! algorithm `fnv1a64-lanes8` available for older files), a cheap
//! [`TensorSummary`] computed in the same pass, the [`DType`] of what was hashed, and the
//! [`ChecksumLog`] of [`KernelChecksum`]s keyed by (pass, layer, brick, call), saved to disk.
//!
//! | file | what lives there |
//! |---|---|
//! | `fnv.rs` | the hash algorithms, [`Algorithm`], the lane step |
//! | `dtype.rs` | [`DType`], [`Tensor`] views, f16/bf16 and GGUF block decoding |
//! | `lanes.rs` | the summary's lane accumulators (a leaf) |
//! | `summary.rs` | [`TensorSummary`], finished from the lanes |
//! | `pass.rs` | the one pass over memory (hash and summary lanes): portable, AVX2, AVX-512 ([`Simd`]) |
//! | `log.rs` | [`KernelKey`], [`KernelChecksum`], [`ChecksumLog`], the file format |

mod dtype;
mod fnv;
mod lanes;
mod log;
mod pass;
mod summary;

pub(crate) use dtype::HalfFormat;
pub use dtype::{DType, QuantBlocks, QuantFormat, Tensor};
pub use fnv::Algorithm;
pub(crate) use log::hex_u64;
pub(crate) use log::CHECKSUM_FORMAT_VERSION;
pub(crate) use log::OLDEST_CHECKSUM_FORMAT_VERSION;
pub use log::{ChecksumLog, KernelChecksum, KernelKey};
pub use pass::Simd;
pub use summary::TensorSummary;

use dtype::f16_to_f32;
use fnv::{fnv1a_elements, hash_elements, lane_step_v1, Element};
use lanes::Acc;
use pass::{AsIs, Decode};

/// The hash (with `algorithm`) and the summary of a tensor. With the default algorithm both
/// come from one pass over memory.
///
/// ```
/// use brickprof::checksum::{checksum, Algorithm, Tensor};
/// let x = [1.0f32, -2.0, 0.5];
/// let (hash, summary) = checksum(Algorithm::Fnv1a64Lanes8V2, Tensor::F32(&x));
/// let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
/// assert_eq!(hash, Algorithm::Fnv1a64Lanes8V2.hash(Tensor::Bytes(&bytes)));
/// assert_eq!(summary.sum, -0.5);
/// ```
pub fn checksum(algorithm: Algorithm, tensor: Tensor<'_>) -> (u64, TensorSummary) {
    checksum_with(Simd::detect(), algorithm, tensor)
}

/// [`checksum`] computed with the given code path (an unsupported one runs the portable code).
/// Every path gives the same hash and a bit-identical summary; this is for tests and
/// benchmarks.
///
/// ```
/// use brickprof::checksum::{checksum, checksum_with, Algorithm, Simd, Tensor};
/// let x: Vec<f32> = (0..1000).map(|i| (i as f32).sin()).collect();
/// let t = Tensor::F32(&x);
/// for simd in Simd::supported() {
///     assert_eq!(checksum_with(simd, Algorithm::default(), t), checksum(Algorithm::default(), t));
/// }
/// ```
pub fn checksum_with(simd: Simd, algorithm: Algorithm, tensor: Tensor<'_>) -> (u64, TensorSummary) {
    match tensor {
        Tensor::F32(x) => hash_and_summary(simd, algorithm, x, AsIs),
        Tensor::F16(x) => hash_and_summary(simd, algorithm, x, f16_to_f32),
        Tensor::Bf16(x) => hash_and_summary(simd, algorithm, x, |b| HalfFormat::Bf16.to_f32(b)),
        Tensor::I8(x) => hash_and_summary(simd, algorithm, x, f32::from),
        Tensor::U8(x) => hash_and_summary(simd, algorithm, x, f32::from),
        Tensor::Quantized(q) => (hash_only(algorithm, q.bytes()), quantized_summary(q)),
        Tensor::Bytes(x) => (hash_only(algorithm, x), TensorSummary::of_bytes(x.len())),
    }
}

/// The summary of quantized blocks, dequantized.
fn quantized_summary(q: QuantBlocks<'_>) -> TensorSummary {
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
            let mut values = [0.0f32; QuantFormat::BLOCK_VALUES];
            format.decode_block(block, &mut values);
            values
        });
    let n = q.bytes().len() / format.block_bytes() * QuantFormat::BLOCK_VALUES;
    acc.finish(ExactLen(decoded, n))
}

impl Algorithm {
    /// The hash of a tensor's little-endian bytes (every dtype hashes as its bytes; quantized
    /// blocks as they are), without a summary. Bit-exact: `+0.0` and `-0.0`, and NaNs with
    /// different payloads, hash differently.
    ///
    /// ```
    /// use brickprof::checksum::{Algorithm, Tensor};
    /// assert_eq!(Algorithm::Fnv1a64.hash(Tensor::Bytes(b"")), 0xcbf29ce484222325);
    /// assert_eq!(Algorithm::Fnv1a64.hash(Tensor::Bytes(b"a")), 0xaf63dc4c8601ec8c);
    /// assert_eq!(Algorithm::Fnv1a64.hash(Tensor::Bytes(b"foobar")), 0x85944171f73967e8);
    /// assert_eq!(Algorithm::Fnv1a64Lanes8.hash(Tensor::Bytes(b"")), 0xa95e5b4a082ac3ec);
    /// assert_ne!(Algorithm::Fnv1a64Lanes8V2.hash(Tensor::Bytes(b"")), 0xa95e5b4a082ac3ec);
    /// let x = [1.0f32, -0.0, f32::MAX];
    /// let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    /// for a in [Algorithm::Fnv1a64Lanes8V2, Algorithm::Fnv1a64Lanes8, Algorithm::Fnv1a64] {
    ///     assert_eq!(a.hash(Tensor::F32(&x)), a.hash(Tensor::Bytes(&bytes)));
    /// }
    /// assert_ne!(Algorithm::default().hash(Tensor::F32(&[0.0])), Algorithm::default().hash(Tensor::F32(&[-0.0])));
    /// assert_eq!(Algorithm::Fnv1a64.hash(Tensor::F16(&[0x3c00])), Algorithm::Fnv1a64.hash(Tensor::Bytes(&[0x00, 0x3c])));
    /// ```
    pub fn hash(self, tensor: Tensor<'_>) -> u64 {
        match tensor {
            Tensor::F32(x) => hash_only(self, x),
            Tensor::F16(x) | Tensor::Bf16(x) => hash_only(self, x),
            Tensor::I8(x) => hash_only(self, x),
            Tensor::U8(x) | Tensor::Bytes(x) => hash_only(self, x),
            Tensor::Quantized(q) => hash_only(self, q.bytes()),
        }
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
        Algorithm::Fnv1a64Lanes8 => hash_elements(data, lane_step_v1, |_| {}),
        Algorithm::Fnv1a64Lanes8V2 => pass::hash_pass(data),
    }
}

/// The hash and the summary; with the default algorithm, in one pass over memory.
#[inline(always)]
fn hash_and_summary<T: Element>(
    simd: Simd,
    algorithm: Algorithm,
    data: &[T],
    decode: impl Decode<T>,
) -> (u64, TensorSummary) {
    let values = data.iter().map(|&v| decode.value(v));
    match algorithm {
        // The older algorithms: the portable hash, then the summary pass.
        Algorithm::Fnv1a64 | Algorithm::Fnv1a64Lanes8 => (
            hash_only(algorithm, data),
            pass::summary_pass(simd, data, decode).finish(values),
        ),
        Algorithm::Fnv1a64Lanes8V2 => {
            let (hash, acc) = pass::hash_summary_pass(simd, data, decode);
            (hash, acc.finish(values))
        }
    }
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
        assert_eq!(Algorithm::Fnv1a64.hash(Tensor::F32(&data)), h.finish());
        let halves: Vec<u16> = (0..1000).map(|i| (i * 37) as u16).collect();
        let mut h = ::fnv::FnvHasher::default();
        for v in &halves {
            h.write(&v.to_le_bytes());
        }
        assert_eq!(Algorithm::Fnv1a64.hash(Tensor::F16(&halves)), h.finish());
    }

    #[test]
    fn every_element_counts_not_just_the_first_64() {
        let mut data = vec![0.5f32; 4096];
        let before = Algorithm::default().hash(Tensor::F32(&data));
        data[4000] = 0.25;
        assert_ne!(Algorithm::default().hash(Tensor::F32(&data)), before);
        data[4000] = 0.5;
        data[4095] = 0.25; // in the tail of the last block
        assert_ne!(Algorithm::default().hash(Tensor::F32(&data)), before);
    }

    /// Random bits with the special values mixed in: NaN (two payloads), ±Inf, ±0, subnormals,
    /// values whose squares overflow f32, and ordinary values.
    fn nasty_f32s(n: usize, seed: u64) -> Vec<f32> {
        super::fnv::tests::random_words(seed, n)
            .into_iter()
            .map(|x| {
                let bits = (x >> 32) as u32;
                match x % 16 {
                    0 => f32::NAN,
                    1 => f32::from_bits(0xffc0_0001),
                    2 => f32::INFINITY,
                    3 => f32::NEG_INFINITY,
                    4 => -0.0,
                    5 => f32::from_bits(bits & 0x807f_ffff), // subnormal
                    6 => f32::from_bits(bits),
                    _ => (bits as f32 / u32::MAX as f32 - 0.5) * 8.0,
                }
            })
            .collect()
    }

    #[test]
    fn the_detected_path_is_the_first_supported_and_any_path_checksums_alike() {
        // (the examples of `Simd::detect` and `checksum_with`, before `detect` became internal:
        // an unsupported path runs the portable code)
        assert!(Simd::detect().is_supported());
        assert_eq!(Simd::supported().next(), Some(Simd::detect()));
        let x: Vec<f32> = (0..1000).map(|i| (i as f32).sin()).collect();
        let t = Tensor::F32(&x);
        for simd in Simd::ALL {
            assert_eq!(
                checksum_with(simd, Algorithm::default(), t),
                checksum(Algorithm::default(), t)
            );
        }
    }

    #[test]
    fn every_simd_path_gives_the_same_hash_and_summary() {
        // spec/checksums.md "Summary": bit-identical on every path, every dtype, any length.
        let lens = [
            0, 1, 7, 15, 16, 17, 255, 256, 257, 511, 512, 1000, 4096, 4099, 10_007,
        ];
        for (k, &n) in lens.iter().enumerate() {
            for finite_only in [false, true] {
                let mut x = nasty_f32s(n, k as u64 + 1);
                if finite_only {
                    x.retain(|v| v.is_finite() && v.abs() < 1e6);
                }
                let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
                let halves: Vec<u16> = x.iter().map(|v| (v.to_bits() >> 16) as u16).collect();
                let signed: Vec<i8> = bytes.iter().map(|&b| b as i8).collect();
                let tensors = [
                    Tensor::F32(&x),
                    Tensor::F16(&halves),
                    Tensor::Bf16(&halves),
                    Tensor::I8(&signed),
                    Tensor::U8(&bytes),
                ];
                for t in tensors {
                    for a in Algorithm::ALL {
                        let reference = checksum_with(Simd::Portable, a, t);
                        for simd in Simd::ALL.into_iter().filter(|s| s.is_supported()) {
                            let (hash, s) = checksum_with(simd, a, t);
                            assert_eq!(hash, reference.0, "{simd} {a} {t:?}");
                            let bits = |s: TensorSummary| {
                                [s.min, s.max, s.sum, s.sum_sq].map(f64::to_bits)
                            };
                            assert_eq!(bits(s), bits(reference.1), "{simd} {a} n={n}");
                            assert_eq!(s, reference.1);
                        }
                    }
                }
                let lanes = Algorithm::default();
                assert_eq!(
                    checksum(lanes, Tensor::F32(&x)).0,
                    lanes.hash(Tensor::Bytes(&bytes))
                );
                assert_eq!(
                    checksum(lanes, Tensor::F32(&x)).1,
                    TensorSummary::of(Tensor::F32(&x))
                );
            }
        }
    }

    #[test]
    fn both_algorithms_summarize_identically() {
        let x: Vec<f32> = (0..1001).map(|i| (i as f32 * 0.3).cos() * 1e4).collect();
        for a in Algorithm::ALL {
            assert_eq!(
                checksum(a, Tensor::F32(&x)).1,
                TensorSummary::of(Tensor::F32(&x))
            );
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
        let (hash, s) = checksum(Algorithm::default(), Tensor::Quantized(q));
        assert_eq!(hash, Algorithm::default().hash(Tensor::Bytes(&q8)));
        assert_eq!((s.len, s.min, s.max), (96, 0.0, 33.0));
        let (_, bytes) = checksum(Algorithm::default(), Tensor::Bytes(&q8));
        assert_eq!((bytes.len, bytes.sum), (102, 0.0));
    }
}
