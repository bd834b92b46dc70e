//! Kernel checksums: [`fnv1a_f32_checksum`] over a whole output tensor, a cheap
//! [`TensorSummary`] beside it, [`KernelChecksum`] records keyed by (pass, layer, brick, call),
//! and the [`ChecksumLog`] that holds them and is saved to disk. The algorithm is specified in
//! `spec/checksums.md`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::json_file::{self, save_json, FileKind};
use crate::Result;

/// FNV-1a 64-bit offset basis.
pub const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The checksum log format version this build writes and reads.
pub const CHECKSUM_FORMAT_VERSION: u32 = 1;

/// FNV-1a 64 of a byte string.
///
/// ```
/// use brickprof::checksum::fnv1a_bytes;
/// assert_eq!(fnv1a_bytes(b""), 0xcbf29ce484222325);
/// assert_eq!(fnv1a_bytes(b"a"), 0xaf63dc4c8601ec8c);
/// assert_eq!(fnv1a_bytes(b"foobar"), 0x85944171f73967e8);
/// ```
#[inline]
pub fn fnv1a_bytes(bytes: &[u8]) -> u64 {
    fnv1a_continue(FNV_OFFSET_BASIS, bytes)
}

#[inline(always)]
fn fnv1a_continue(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// FNV-1a 64 over the little-endian bytes of **every** f32 of the slice, in order.
///
/// Bit-exact: `+0.0` and `-0.0`, and NaNs with different payloads, hash differently. Equal to
/// the `fnv` crate's `FnvHasher` fed the same bytes.
///
/// ```
/// use brickprof::{fnv1a_f32_checksum, checksum::fnv1a_bytes};
/// let x = [1.0f32, -0.0, f32::MAX];
/// let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
/// assert_eq!(fnv1a_f32_checksum(&x), fnv1a_bytes(&bytes));
/// assert_ne!(fnv1a_f32_checksum(&[0.0]), fnv1a_f32_checksum(&[-0.0]));
/// ```
pub fn fnv1a_f32_checksum(data: &[f32]) -> u64 {
    let mut h = FNV_OFFSET_BASIS;
    for v in data {
        h = fnv1a_continue(h, &v.to_bits().to_le_bytes());
    }
    h
}

/// [`fnv1a_f32_checksum`] and [`TensorSummary::of_f32`] in one pass over the data: FNV-1a is a
/// serial chain of multiplies, and the summary's vector work runs in its shadow.
///
/// ```
/// use brickprof::{checksum::checksum_and_summary, fnv1a_f32_checksum, TensorSummary};
/// let x: Vec<f32> = (0..100).map(|i| i as f32 - 50.0).chain([f32::NAN]).collect();
/// assert_eq!(checksum_and_summary(&x), (fnv1a_f32_checksum(&x), TensorSummary::of_f32(&x)));
/// ```
pub fn checksum_and_summary(data: &[f32]) -> (u64, TensorSummary) {
    let mut h = FNV_OFFSET_BASIS;
    let mut acc = Lanes::<LANES>::default();
    let chunks = data.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (i, &v) in c.iter().enumerate() {
            h = fnv1a_continue(h, &v.to_bits().to_le_bytes());
            acc.update(i, v);
        }
    }
    for &v in tail {
        h = fnv1a_continue(h, &v.to_bits().to_le_bytes());
        acc.update(0, v);
    }
    (h, acc.finish(data.iter().copied()))
}

/// FNV-1a 64 over the little-endian bytes of every `u16` (f16 or bf16 bit patterns).
///
/// ```
/// use brickprof::checksum::{fnv1a_bytes, fnv1a_u16_checksum};
/// assert_eq!(fnv1a_u16_checksum(&[0x3c00]), fnv1a_bytes(&[0x00, 0x3c]));
/// ```
pub fn fnv1a_u16_checksum(data: &[u16]) -> u64 {
    let mut h = FNV_OFFSET_BASIS;
    for v in data {
        h = fnv1a_continue(h, &v.to_le_bytes());
    }
    h
}

/// The 16-bit float formats a `&[u16]` tensor can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HalfFormat {
    /// IEEE 754 binary16.
    F16,
    /// bfloat16 (the top half of an f32).
    Bf16,
}

impl HalfFormat {
    /// Decode one value to f32 (exact: every f16 and bf16 value is an f32).
    ///
    /// ```
    /// use brickprof::checksum::HalfFormat;
    /// assert_eq!(HalfFormat::F16.to_f32(0x3c00), 1.0);
    /// assert_eq!(HalfFormat::F16.to_f32(0x0001), 2f32.powi(-24));
    /// assert_eq!(HalfFormat::Bf16.to_f32(0xc000), -2.0);
    /// assert!(HalfFormat::F16.to_f32(0x7e00).is_nan());
    /// ```
    pub fn to_f32(self, bits: u16) -> f32 {
        match self {
            HalfFormat::Bf16 => f32::from_bits(u32::from(bits) << 16),
            HalfFormat::F16 => {
                let sign = u32::from(bits >> 15) << 31;
                let exp = u32::from((bits >> 10) & 0x1f);
                let mant = u32::from(bits & 0x3ff);
                let out = match (exp, mant) {
                    (0, 0) => sign,
                    (0, _) => {
                        // Subnormal: normalize the mantissa.
                        let (mut e, mut m) = (127 - 15 + 1, mant);
                        while m & 0x400 == 0 {
                            m <<= 1;
                            e -= 1;
                        }
                        sign | (e << 23) | ((m & 0x3ff) << 13)
                    }
                    (31, _) => sign | 0x7f80_0000 | (mant << 13),
                    _ => sign | ((exp + 127 - 15) << 23) | (mant << 13),
                };
                f32::from_bits(out)
            }
        }
    }
}

/// A cheap numeric summary of a tensor, so two runs can be compared with a tolerance and a
/// distance reported. NaN and ±Inf are counted, not summed: `min`, `max`, `sum` and `sum_sq`
/// cover the finite values only (f64 accumulators). `+0.0` and `-0.0` summarize equally.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TensorSummary {
    /// Number of elements.
    pub len: u64,
    /// Number of NaNs.
    pub nan: u64,
    /// Number of +Inf.
    pub pos_inf: u64,
    /// Number of -Inf.
    pub neg_inf: u64,
    /// Smallest finite value (0 when there is none).
    pub min: f64,
    /// Largest finite value (0 when there is none).
    pub max: f64,
    /// Sum of the finite values.
    pub sum: f64,
    /// Sum of squares of the finite values.
    pub sum_sq: f64,
}

impl TensorSummary {
    /// Summarize an f32 tensor. One vectorizable pass.
    ///
    /// ```
    /// use brickprof::TensorSummary;
    /// let s = TensorSummary::of_f32(&[1.0, -2.0, f32::NAN, f32::INFINITY]);
    /// assert_eq!((s.len, s.nan, s.pos_inf, s.neg_inf), (4, 1, 1, 0));
    /// assert_eq!((s.min, s.max, s.sum, s.sum_sq), (-2.0, 1.0, -1.0, 5.0));
    /// ```
    pub fn of_f32(data: &[f32]) -> TensorSummary {
        Self::of_decoded(data, |v| v)
    }

    /// Summarize an f16 or bf16 tensor given as raw `u16` bits.
    pub fn of_half(data: &[u16], format: HalfFormat) -> TensorSummary {
        Self::of_decoded(data, |b| format.to_f32(b))
    }

    /// One pass of branch-free lanes over the decoded values, so the loop vectorizes; NaN/Inf
    /// are counted in a second pass only when the first one saw any.
    fn of_decoded<X: Copy>(data: &[X], decode: impl Fn(X) -> f32) -> TensorSummary {
        let mut acc = Lanes::<LANES>::default();
        let chunks = data.chunks_exact(LANES);
        let tail = chunks.remainder();
        for c in chunks {
            for (i, &v) in c.iter().enumerate() {
                acc.update(i, decode(v));
            }
        }
        for &v in tail {
            acc.update(0, decode(v));
        }
        acc.finish(data.iter().map(|&v| decode(v)))
    }

    /// Number of finite values.
    pub fn finite(&self) -> u64 {
        self.len - self.nan - self.pos_inf - self.neg_inf
    }

    /// True when the tensor holds a NaN or an infinity.
    pub fn has_non_finite(&self) -> bool {
        self.nan + self.pos_inf + self.neg_inf > 0
    }

    /// Mean of the finite values (0 when none).
    pub fn mean(&self) -> f64 {
        match self.finite() {
            0 => 0.0,
            n => self.sum / n as f64,
        }
    }

    /// Root mean square of the finite values (0 when none).
    pub fn rms(&self) -> f64 {
        match self.finite() {
            0 => 0.0,
            n => (self.sum_sq / n as f64).sqrt(),
        }
    }
}

/// Independent accumulators per summary pass: enough to fill a vector register.
const LANES: usize = 8;

/// Per-lane accumulators of a [`TensorSummary`] pass.
struct Lanes<const L: usize> {
    min: [f64; L],
    max: [f64; L],
    sum: [f64; L],
    sum_sq: [f64; L],
    finite: [u64; L],
}

impl<const L: usize> Default for Lanes<L> {
    fn default() -> Self {
        Lanes {
            min: [f64::INFINITY; L],
            max: [f64::NEG_INFINITY; L],
            sum: [0.0; L],
            sum_sq: [0.0; L],
            finite: [0; L],
        }
    }
}

impl<const L: usize> Lanes<L> {
    /// The summary of `values`, every one of which went through [`Self::update`]. They are
    /// walked again, to count NaN and ±Inf, only when some value was not finite.
    fn finish(&self, values: impl ExactSizeIterator<Item = f32>) -> TensorSummary {
        let finite: u64 = self.finite.iter().sum();
        let mut s = TensorSummary {
            len: values.len() as u64,
            nan: 0,
            pos_inf: 0,
            neg_inf: 0,
            min: self.min.iter().copied().fold(f64::INFINITY, f64::min),
            max: self.max.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            sum: self.sum.iter().sum(),
            sum_sq: self.sum_sq.iter().sum(),
        };
        if finite < s.len {
            for v in values.filter(|v| !v.is_finite()) {
                if v.is_nan() {
                    s.nan += 1;
                } else if v > 0.0 {
                    s.pos_inf += 1;
                } else {
                    s.neg_inf += 1;
                }
            }
        }
        if finite == 0 {
            (s.min, s.max) = (0.0, 0.0);
        }
        s
    }

    #[inline(always)]
    fn update(&mut self, i: usize, v: f32) {
        let ok = v.is_finite();
        let x = if ok { f64::from(v) } else { 0.0 };
        self.min[i] = self.min[i].min(if ok { x } else { f64::INFINITY });
        self.max[i] = self.max[i].max(if ok { x } else { f64::NEG_INFINITY });
        self.sum[i] += x;
        self.sum_sq[i] += x * x;
        self.finite[i] += u64::from(ok);
    }
}

/// Where a checksum was taken: (forward pass, layer, brick, call index within the pass).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct KernelKey {
    /// Forward pass index (0-based, counting every `end_pass`, warm-up included).
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
        match self.layer {
            Some(l) => write!(f, "pass {} layer {} {}", self.pass, l, self.brick)?,
            None => write!(f, "pass {} {} (outside layers)", self.pass, self.brick)?,
        }
        if self.call > 0 {
            write!(f, " call #{}", self.call)?;
        }
        Ok(())
    }
}

/// One kernel's output checksum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelChecksum {
    /// Where it was taken.
    #[serde(flatten)]
    pub key: KernelKey,
    /// FNV-1a 64 of the output.
    #[serde(with = "hex_u64")]
    pub hash: u64,
    /// Numeric summary of the output.
    pub summary: TensorSummary,
}

/// Checksums in recording order, as saved to disk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChecksumLog {
    /// Always [`FileKind::Checksums`].
    pub kind: FileKind,
    /// Always [`CHECKSUM_FORMAT_VERSION`] for files this build writes.
    pub format_version: u32,
    /// The checksums, in recording order.
    pub entries: Vec<KernelChecksum>,
}

impl Default for ChecksumLog {
    fn default() -> Self {
        ChecksumLog {
            kind: FileKind::Checksums,
            format_version: CHECKSUM_FORMAT_VERSION,
            entries: Vec::new(),
        }
    }
}

impl ChecksumLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append a checksum of `data` taken at `key`.
    pub fn record_f32(&mut self, key: KernelKey, data: &[f32]) {
        let (hash, summary) = checksum_and_summary(data);
        self.entries.push(KernelChecksum { key, hash, summary });
    }

    /// Append a checksum of an f16/bf16 tensor given as raw bits.
    pub fn record_half(&mut self, key: KernelKey, data: &[u16], format: HalfFormat) {
        self.entries.push(KernelChecksum {
            key,
            hash: fnv1a_u16_checksum(data),
            summary: TensorSummary::of_half(data, format),
        });
    }

    /// Number of checksums.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Save as pretty JSON.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_json(path.as_ref(), self)
    }

    /// Load, rejecting bad files, other kinds and other versions with an error naming the file
    /// and the fault.
    pub fn load(path: impl AsRef<Path>) -> Result<ChecksumLog> {
        json_file::load(
            path.as_ref(),
            FileKind::Checksums,
            CHECKSUM_FORMAT_VERSION..=CHECKSUM_FORMAT_VERSION,
        )
    }
}

/// Hashes are saved as 16-digit hex strings: JSON numbers lose precision above 2^53.
pub(crate) mod hex_u64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:016x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let s = String::deserialize(d)?;
        u64::from_str_radix(s.trim_start_matches("0x"), 16)
            .map_err(|_| serde::de::Error::custom(format!("hash {s:?} is not a 64-bit hex number")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hasher;

    #[test]
    fn published_fnv1a_vectors() {
        // From the FNV reference test suite (64-bit FNV-1a).
        assert_eq!(fnv1a_bytes(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a_bytes(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a_bytes(b"b"), 0xaf63df4c8601f1a5);
        assert_eq!(fnv1a_bytes(b"foo"), 0xdcb27518fed9d577);
        assert_eq!(fnv1a_bytes(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn matches_the_fnv_crate() {
        let data: Vec<f32> = (0..1000).map(|i| (i as f32).sin() * 1e3).collect();
        let mut h = fnv::FnvHasher::default();
        for v in &data {
            h.write(&v.to_le_bytes());
        }
        assert_eq!(fnv1a_f32_checksum(&data), h.finish());
        let halves: Vec<u16> = (0..1000).map(|i| (i * 37) as u16).collect();
        let mut h = fnv::FnvHasher::default();
        for v in &halves {
            h.write(&v.to_le_bytes());
        }
        assert_eq!(fnv1a_u16_checksum(&halves), h.finish());
    }

    #[test]
    fn every_element_counts_not_just_the_first_64() {
        let mut data = vec![0.5f32; 4096];
        let before = fnv1a_f32_checksum(&data);
        data[4000] = 0.25;
        assert_ne!(fnv1a_f32_checksum(&data), before);
    }

    #[test]
    fn signed_zero_and_nan_payloads_differ_in_hash_not_summary() {
        assert_ne!(fnv1a_f32_checksum(&[0.0]), fnv1a_f32_checksum(&[-0.0]));
        assert_eq!(
            TensorSummary::of_f32(&[0.0]),
            TensorSummary::of_f32(&[-0.0])
        );
        let nan_a = f32::from_bits(0x7fc0_0001);
        let nan_b = f32::from_bits(0x7fc0_0002);
        assert_ne!(fnv1a_f32_checksum(&[nan_a]), fnv1a_f32_checksum(&[nan_b]));
        assert_eq!(
            TensorSummary::of_f32(&[nan_a]),
            TensorSummary::of_f32(&[nan_b])
        );
    }

    #[test]
    fn summary_of_empty_and_non_finite_tensors() {
        let e = TensorSummary::of_f32(&[]);
        assert_eq!(
            (e.len, e.min, e.max, e.mean(), e.rms()),
            (0, 0.0, 0.0, 0.0, 0.0)
        );
        let s = TensorSummary::of_f32(&[f32::NEG_INFINITY, f32::NAN]);
        assert_eq!((s.neg_inf, s.nan, s.finite()), (1, 1, 0));
        assert!(s.has_non_finite());
    }

    #[test]
    fn hashes_survive_json_exactly() {
        let mut log = ChecksumLog::new();
        log.record_f32(
            KernelKey {
                pass: 0,
                layer: Some(1),
                brick: "RmsNorm".into(),
                call: 0,
            },
            &[1.0, 2.0],
        );
        let json = serde_json::to_string(&log).unwrap();
        assert!(json.contains(&format!("{:016x}", log.entries[0].hash)));
        let back: ChecksumLog = serde_json::from_str(&json).unwrap();
        assert_eq!(back, log);
    }
}
