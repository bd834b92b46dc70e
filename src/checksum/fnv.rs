//! The two checksum algorithms (spec/checksums.md "Algorithms"): byte-wise FNV-1a 64, and the
//! lane-parallel `fnv1a64-lanes8` that is the default. Both hash the little-endian bytes of
//! every element of a tensor; [`Algorithm`] names them in checksum files.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// FNV-1a 64-bit offset basis.
pub(crate) const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
pub(super) const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Independent lanes of [`Algorithm::Fnv1a64Lanes8`].
pub(crate) const LANES: usize = 8;
/// Bytes one round of [`Algorithm::Fnv1a64Lanes8`] consumes: one 64-bit word per lane.
pub(crate) const BLOCK_BYTES: usize = 8 * LANES;
/// The left rotation after each multiply of [`Algorithm::Fnv1a64Lanes8`].
pub(super) const LANE_ROTATION: u32 = 27;

/// Which hash a checksum log was made with. Logs made with different algorithms never compare.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    /// Byte-wise FNV-1a 64 over the little-endian bytes (the `fnv` crate's `FnvHasher`);
    /// what version-1 files hold. About 1 byte per cycle.
    #[serde(rename = "fnv1a64")]
    Fnv1a64,
    /// Eight independent FNV-1a lanes over 64-bit little-endian words, each multiply followed
    /// by a rotation, combined at the end (spec/checksums.md). About 8 bytes per cycle.
    #[default]
    #[serde(rename = "fnv1a64-lanes8")]
    Fnv1a64Lanes8,
}

impl Algorithm {
    /// Every algorithm, default first.
    pub const ALL: [Algorithm; 2] = [Algorithm::Fnv1a64Lanes8, Algorithm::Fnv1a64];

    /// The name written in files and accepted on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Fnv1a64 => "fnv1a64",
            Algorithm::Fnv1a64Lanes8 => "fnv1a64-lanes8",
        }
    }

    /// The hash of a byte string.
    ///
    /// ```
    /// use brickprof::checksum::Algorithm;
    /// assert_eq!(Algorithm::Fnv1a64.hash_bytes(b"a"), 0xaf63dc4c8601ec8c);
    /// assert_eq!(Algorithm::Fnv1a64Lanes8.hash_bytes(b""), 0xa95e5b4a082ac3ec);
    /// ```
    pub fn hash_bytes(self, bytes: &[u8]) -> u64 {
        match self {
            Algorithm::Fnv1a64 => fnv1a_bytes(bytes),
            Algorithm::Fnv1a64Lanes8 => hash_elements(bytes, |_| {}),
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("unknown checksum algorithm {s:?} (fnv1a64-lanes8, fnv1a64)"))
    }
}

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
pub(crate) fn fnv1a_continue(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// Byte-wise FNV-1a 64 over the little-endian bytes of every element.
pub(crate) fn fnv1a_elements<T: Element>(data: &[T]) -> u64 {
    data.iter().fold(FNV_OFFSET_BASIS, |h, v| {
        fnv1a_continue(h, v.le_bytes().as_ref())
    })
}

/// One lane step: `rotl((h ^ w) * prime, 27)`. A bijection of `h` for a fixed `w` and of `w`
/// for a fixed `h`, so no single changed word can leave a lane's state unchanged.
#[inline(always)]
pub(crate) fn lane_step(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(FNV_PRIME).rotate_left(LANE_ROTATION)
}

/// An element type whose little-endian bytes are hashed: f32, u16 (f16/bf16 bits), i8, u8.
pub(crate) trait Element: Copy {
    /// The little-endian bytes of one element.
    type Bytes: AsRef<[u8]>;
    /// Elements in one 64-bit word.
    const PER_WORD: usize;
    /// The element's little-endian bytes.
    fn le_bytes(self) -> Self::Bytes;
    /// The little-endian word of exactly [`Self::PER_WORD`] elements.
    fn word(c: &[Self]) -> u64;
}

impl Element for f32 {
    type Bytes = [u8; 4];
    const PER_WORD: usize = 2;
    #[inline(always)]
    fn le_bytes(self) -> [u8; 4] {
        self.to_bits().to_le_bytes()
    }
    #[inline(always)]
    fn word(c: &[f32]) -> u64 {
        u64::from(c[0].to_bits()) | u64::from(c[1].to_bits()) << 32
    }
}

impl Element for u16 {
    type Bytes = [u8; 2];
    const PER_WORD: usize = 4;
    #[inline(always)]
    fn le_bytes(self) -> [u8; 2] {
        self.to_le_bytes()
    }
    #[inline(always)]
    fn word(c: &[u16]) -> u64 {
        u64::from(c[0]) | u64::from(c[1]) << 16 | u64::from(c[2]) << 32 | u64::from(c[3]) << 48
    }
}

impl Element for u8 {
    type Bytes = [u8; 1];
    const PER_WORD: usize = 8;
    #[inline(always)]
    fn le_bytes(self) -> [u8; 1] {
        [self]
    }
    #[inline(always)]
    fn word(c: &[u8]) -> u64 {
        let mut w = [0u8; 8];
        w.copy_from_slice(&c[..8]);
        u64::from_le_bytes(w)
    }
}

impl Element for i8 {
    type Bytes = [u8; 1];
    const PER_WORD: usize = 8;
    #[inline(always)]
    fn le_bytes(self) -> [u8; 1] {
        self.to_le_bytes()
    }
    #[inline(always)]
    fn word(c: &[i8]) -> u64 {
        let mut w = [0u8; 8];
        for (o, &v) in w.iter_mut().zip(c) {
            *o = v as u8;
        }
        u64::from_le_bytes(w)
    }
}

/// `fnv1a64-lanes8` of the little-endian bytes of `data`, calling `visit` with every block of
/// [`BLOCK_BYTES`] bytes' worth of elements right after hashing it, and then once with the
/// remaining elements, so a summary can be computed in the same pass.
#[inline(always)]
pub(crate) fn hash_elements<T: Element>(data: &[T], visit: impl FnMut(&[T])) -> u64 {
    let len = std::mem::size_of_val(data) as u64;
    hash_continue([FNV_OFFSET_BASIS; LANES], data, len, visit)
}

/// [`hash_elements`] from given lane states: `data` is what is left of a tensor of `len` bytes
/// once whole blocks were hashed into `lanes` (it starts at a block boundary).
#[inline(always)]
pub(crate) fn hash_continue<T: Element>(
    mut lanes: [u64; LANES],
    data: &[T],
    len: u64,
    mut visit: impl FnMut(&[T]),
) -> u64 {
    let per_block = LANES * T::PER_WORD;
    let blocks = data.chunks_exact(per_block);
    let rest = blocks.remainder();
    for block in blocks {
        hash_block(&mut lanes, block);
        visit(block);
    }
    // Whole words of the last, partial block go to lanes 0, 1, ... in order.
    let words = rest.chunks_exact(T::PER_WORD);
    let tail = words.remainder();
    for (lane, word) in lanes.iter_mut().zip(words) {
        *lane = lane_step(*lane, T::word(word));
    }
    visit(rest);
    // The last 0..=7 bytes, zero-padded to one word.
    let mut t = [0u8; 8];
    for (o, b) in t
        .iter_mut()
        .zip(tail.iter().flat_map(|v| v.le_bytes().as_ref().to_vec()))
    {
        *o = b;
    }
    combine(&lanes, u64::from_le_bytes(t), len)
}

/// One round: word `i` of a block of [`BLOCK_BYTES`] bytes' worth of elements into lane `i`.
#[inline(always)]
pub(crate) fn hash_block<T: Element>(lanes: &mut [u64; LANES], block: &[T]) {
    for (i, lane) in lanes.iter_mut().enumerate() {
        *lane = lane_step(
            *lane,
            T::word(&block[i * T::PER_WORD..(i + 1) * T::PER_WORD]),
        );
    }
}

/// Fold the lanes in order, then the tail word, then the byte length, with the lane step.
fn combine(lanes: &[u64; LANES], tail: u64, len: u64) -> u64 {
    let g = lanes.iter().fold(FNV_OFFSET_BASIS, |g, &h| lane_step(g, h));
    lane_step(lane_step(g, tail), len)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn every_element_type_hashes_its_little_endian_bytes() {
        let f: Vec<f32> = (0..37).map(|i| i as f32 * -0.7).collect();
        let bytes: Vec<u8> = f.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(hash_elements(&f, |_| {}), hash_elements(&bytes, |_| {}));
        assert_eq!(fnv1a_elements(&f), fnv1a_bytes(&bytes));
        let h: Vec<u16> = (0..37).map(|i| i * 1001).collect();
        let bytes: Vec<u8> = h.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(hash_elements(&h, |_| {}), hash_elements(&bytes, |_| {}));
        let i: Vec<i8> = (0..37).map(|i| (i * 7 - 100) as i8).collect();
        let bytes: Vec<u8> = i.iter().map(|&v| v as u8).collect();
        assert_eq!(hash_elements(&i, |_| {}), hash_elements(&bytes, |_| {}));
    }

    #[test]
    fn the_visitor_sees_every_element_once() {
        let data: Vec<u16> = (0..1000).collect();
        let mut seen = Vec::new();
        hash_elements(&data, |c| seen.extend_from_slice(c));
        assert_eq!(seen, data);
    }

    #[test]
    fn sign_flips_in_one_lane_do_not_cancel() {
        // Without the rotation, flipping bit 63 of two words of the same lane cancels.
        let mut x = vec![1.0f32; 64];
        let before = hash_elements(&x, |_| {});
        x[1] = -x[1];
        x[17] = -x[17];
        assert_ne!(hash_elements(&x, |_| {}), before);
    }
}
