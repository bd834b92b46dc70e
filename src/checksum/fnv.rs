//! The checksum algorithms (spec/checksums.md "Algorithms"): byte-wise FNV-1a 64, the
//! lane-parallel `fnv1a64-lanes8-v2` that is the default, and its predecessor `fnv1a64-lanes8`
//! (kept so that files naming it still compare with a re-recorded run and their captures). All
//! hash the little-endian bytes of every element of a tensor; [`Algorithm`] names them in
//! checksum files.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// FNV-1a 64-bit offset basis.
pub(crate) const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
pub(super) const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Independent lanes of the lane algorithms.
pub(crate) const LANES: usize = 8;
/// Bytes one round of a lane algorithm consumes: one 64-bit word per lane.
pub(crate) const BLOCK_BYTES: usize = 8 * LANES;
/// The left rotation that ends each lane step of [`Algorithm::Fnv1a64Lanes8`].
const LANE_ROTATION: u32 = 27;
/// The right shift of the xor-shift after each multiply of [`Algorithm::Fnv1a64Lanes8V2`].
pub(super) const LANE_XOR_SHIFT: u32 = 32;

/// Which hash a checksum log was made with. Logs made with different algorithms never compare.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    /// Byte-wise FNV-1a 64 over the little-endian bytes (the `fnv` crate's `FnvHasher`);
    /// what version-1 files hold. About 1 byte per cycle.
    #[serde(rename = "fnv1a64")]
    Fnv1a64,
    /// The first lane algorithm (the files of brickprof 0.2 and 0.3): eight FNV-1a lanes over 64-bit
    /// words, each multiply followed by a rotation (`lane_step_v1`). It has a two-bit
    /// collision: a flipped sign bit in the high f32 of a word and bit 26 of the next word of
    /// the same lane cancel (spec/checksums.md "Algorithms"). Still
    /// computed (portable code, two passes) so that its files compare with a re-recorded run.
    #[serde(rename = "fnv1a64-lanes8")]
    Fnv1a64Lanes8,
    /// Eight independent lanes over 64-bit little-endian words, each multiply followed by an
    /// xor-shift (`lane_step`), combined at the end (spec/checksums.md). About 8 bytes per
    /// cycle.
    #[default]
    #[serde(rename = "fnv1a64-lanes8-v2")]
    Fnv1a64Lanes8V2,
}

impl Algorithm {
    /// Every algorithm, default first.
    pub(crate) const ALL: [Algorithm; 3] = [
        Algorithm::Fnv1a64Lanes8V2,
        Algorithm::Fnv1a64Lanes8,
        Algorithm::Fnv1a64,
    ];

    /// The name written in files and accepted on the command line (its `Display`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Algorithm::Fnv1a64 => "fnv1a64",
            Algorithm::Fnv1a64Lanes8 => "fnv1a64-lanes8",
            Algorithm::Fnv1a64Lanes8V2 => "fnv1a64-lanes8-v2",
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
            .ok_or_else(|| {
                format!(
                    "unknown checksum algorithm {s:?} (fnv1a64-lanes8-v2, fnv1a64-lanes8, fnv1a64)"
                )
            })
    }
}

/// FNV-1a 64 of a byte string (the public form is `Algorithm::Fnv1a64.hash(Tensor::Bytes(..))`).
#[cfg(test)]
pub(crate) fn fnv1a_bytes(bytes: &[u8]) -> u64 {
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

/// One lane step of [`Algorithm::Fnv1a64Lanes8V2`]: `x = (h ^ w) * P; x ^ (x >> 32)`. The
/// x86-64 assembly of `pass.rs` performs exactly these operations (same constants; tests
/// compare every code path). The xor-shift replaces the rotation of [`lane_step_v1`]: it too
/// brings the high bits down, costs one more instruction, and removes the collision.
///
/// A bijection of `h` for a fixed `w` and of `w` for a fixed `h` (xor, a multiply by an odd
/// number and an xor-shift are each invertible), so no single changed word can leave a lane's
/// state unchanged.
///
/// **Every single-bit difference of `h ^ w` becomes at least two bits.** The xor-shift is
/// linear over bits, so the output difference is `xs(D)` with `D = y * P ^ (y ^ 2^k) * P` and
/// `xs(D) = D ^ (D >> 32)`.
/// `y ^ 2^k = y ± 2^k`, so `D = a ^ (a ± c)` with `a = y * P` and `c = 2^k * P`, whose lowest
/// set bit is `k` (P is odd): `D`'s lowest set bit is `k`. `xs(D)` has one bit only if
/// (1) `D` is one bit below bit 32, or (2) `D = 2^k + 2^(k+32)`, `k < 32` (the high half,
/// one bit, cancels the same bit of the low half). Both need `c ≡ ±2^k` or
/// `c ≡ ±2^k ± 2^(k+32)` (mod 2^64), i.e. `P ≡ ±1` or `P ≡ ±1 ± 2^32` (mod 2^(64-k)) with
/// `64 - k >= 33`; but `P mod 2^33 = 0x1b3`, none of those. (`P ≡ -1 (mod 4)`: only bits 62
/// and 63 can pass the multiply as one bit, and the xor-shift copies them to bits 30 and 31.)
/// So a lane's state after a word with one flipped bit differs in at least two bits, and a
/// single flipped bit in the lane's next word cannot cancel it: two single-bit flips in two
/// consecutive words of a lane always change the hash. Tested: `single_bit_differences_spread`
/// checks the algebra, `no_two_bit_flip_pair_of_consecutive_words_cancels` every pair.
#[inline(always)]
pub(crate) fn lane_step(h: u64, w: u64) -> u64 {
    let x = (h ^ w).wrapping_mul(FNV_PRIME);
    x ^ (x >> LANE_XOR_SHIFT)
}

/// One lane step of [`Algorithm::Fnv1a64Lanes8`]: `rotl((h ^ w) * P, 27)`. A flip of bit 63
/// passes the multiply unchanged (`2^63 * P ≡ 2^63`) and the rotation moves it to bit 26, so a
/// flip of bit 26 in the lane's next word cancels it: the collision [`lane_step`] removes.
#[inline(always)]
pub(crate) fn lane_step_v1(h: u64, w: u64) -> u64 {
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

/// A lane step: [`lane_step`] (`fnv1a64-lanes8-v2`) or [`lane_step_v1`] (`fnv1a64-lanes8`).
/// The lane algorithms differ in their step only.
pub(crate) trait LaneStep: Fn(u64, u64) -> u64 + Copy {}

impl<F: Fn(u64, u64) -> u64 + Copy> LaneStep for F {}

/// The lane hash with `step` of the little-endian bytes of `data`, calling `visit` with every
/// block of [`BLOCK_BYTES`] bytes' worth of elements right after hashing it, and then once
/// with the remaining elements, so a summary can be computed in the same pass.
#[inline(always)]
pub(crate) fn hash_elements<T: Element>(
    data: &[T],
    step: impl LaneStep,
    visit: impl FnMut(&[T]),
) -> u64 {
    let len = std::mem::size_of_val(data) as u64;
    hash_continue([FNV_OFFSET_BASIS; LANES], data, len, step, visit)
}

/// [`hash_elements`] from given lane states: `data` is what is left of a tensor of `len` bytes
/// once whole blocks were hashed into `lanes` (it starts at a block boundary).
#[inline(always)]
pub(crate) fn hash_continue<T: Element>(
    mut lanes: [u64; LANES],
    data: &[T],
    len: u64,
    step: impl LaneStep,
    mut visit: impl FnMut(&[T]),
) -> u64 {
    let per_block = LANES * T::PER_WORD;
    let blocks = data.chunks_exact(per_block);
    let rest = blocks.remainder();
    for block in blocks {
        hash_block(&mut lanes, block, step);
        visit(block);
    }
    // Whole words of the last, partial block go to lanes 0, 1, ... in order.
    let words = rest.chunks_exact(T::PER_WORD);
    let tail = words.remainder();
    for (lane, word) in lanes.iter_mut().zip(words) {
        *lane = step(*lane, T::word(word));
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
    combine(&lanes, u64::from_le_bytes(t), len, step)
}

/// One round: word `i` of a block of [`BLOCK_BYTES`] bytes' worth of elements into lane `i`.
#[inline(always)]
pub(crate) fn hash_block<T: Element>(lanes: &mut [u64; LANES], block: &[T], step: impl LaneStep) {
    for (i, lane) in lanes.iter_mut().enumerate() {
        *lane = step(
            *lane,
            T::word(&block[i * T::PER_WORD..(i + 1) * T::PER_WORD]),
        );
    }
}

/// Fold the lanes in order, then the tail word, then the byte length, with the lane step.
fn combine(lanes: &[u64; LANES], tail: u64, len: u64, step: impl LaneStep) -> u64 {
    let g = lanes.iter().fold(FNV_OFFSET_BASIS, |g, &h| step(g, h));
    step(step(g, tail), len)
}

#[cfg(test)]
pub(super) mod tests {
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
        assert_eq!(
            hash_elements(&f, lane_step, |_| {}),
            hash_elements(&bytes, lane_step, |_| {})
        );
        assert_eq!(fnv1a_elements(&f), fnv1a_bytes(&bytes));
        let h: Vec<u16> = (0..37).map(|i| i * 1001).collect();
        let bytes: Vec<u8> = h.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            hash_elements(&h, lane_step, |_| {}),
            hash_elements(&bytes, lane_step, |_| {})
        );
        let i: Vec<i8> = (0..37).map(|i| (i * 7 - 100) as i8).collect();
        let bytes: Vec<u8> = i.iter().map(|&v| v as u8).collect();
        assert_eq!(
            hash_elements(&i, lane_step, |_| {}),
            hash_elements(&bytes, lane_step, |_| {})
        );
    }

    #[test]
    fn the_visitor_sees_every_element_once() {
        let data: Vec<u16> = (0..1000).collect();
        let mut seen = Vec::new();
        hash_elements(&data, lane_step, |c| seen.extend_from_slice(c));
        assert_eq!(seen, data);
    }

    #[test]
    fn sign_flips_in_one_lane_do_not_cancel() {
        // Without a rotation or an xor-shift, flipping bit 63 of two words of one lane cancels.
        let mut x = vec![1.0f32; 64];
        for step in [lane_step, lane_step_v1] {
            let before = hash_elements(&x, step, |_| {});
            x[1] = -x[1];
            x[17] = -x[17];
            assert_ne!(hash_elements(&x, step, |_| {}), before);
        }
    }

    /// xorshift64 random numbers (the exhaustive tests below, `nasty_f32s` of `mod.rs`).
    pub(in crate::checksum) fn random_words(seed: u64, n: usize) -> Vec<u64> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect()
    }

    #[test]
    fn single_bit_differences_spread() {
        // spec/checksums.md "Algorithms": for every state y and bit k, the output difference of
        // `lane_step` for `y` and `y ^ 2^k` has at least two bits. Checked over all y at once:
        // the difference is `xs(D)` with `D = y*P ^ (y*P + d)`, `d = ±2^k * P`; the
        // only D with a one-bit `xs(D)` are `xs(2^b)` (xs is an involution); and
        // `a ^ (a + d) = D` for some `a` exactly when `d` is a signed sum of D's bits.
        let xs = |x: u64| x ^ (x >> LANE_XOR_SHIFT);
        let signed_sums = |d: u64| {
            let bits: Vec<u64> = (0..64)
                .filter(|b| d >> b & 1 == 1)
                .map(|b| 1 << b)
                .collect();
            assert!(bits.len() <= 2, "{d:#x}");
            let mut sums = vec![0u64];
            for b in bits {
                sums = sums
                    .iter()
                    .flat_map(|&s| [s.wrapping_add(b), s.wrapping_sub(b)])
                    .collect();
            }
            sums
        };
        let one_bit_after: Vec<u64> = (0..64).map(|b| xs(1u64 << b)).collect();
        for k in 0..64 {
            let d = (1u64 << k).wrapping_mul(FNV_PRIME);
            for delta in [d, d.wrapping_neg()] {
                for &big_d in &one_bit_after {
                    assert!(
                        !signed_sums(big_d).contains(&delta),
                        "bit {k}: {big_d:#x} reachable"
                    );
                }
            }
        }
        // The old step has one: bit 63 passes the multiply and lands on bit 26.
        for y in random_words(7, 100) {
            let diff = lane_step_v1(y, 0) ^ lane_step_v1(y ^ 1 << 63, 0);
            assert_eq!(diff, 1 << 26);
        }
        // And on random states, every single-bit flip of the new step spreads.
        for y in random_words(11, 200) {
            for k in 0..64 {
                let diff = lane_step(y, 0) ^ lane_step(y ^ 1 << k, 0);
                assert!(diff.count_ones() >= 2, "y {y:#x} bit {k}");
            }
        }
    }

    #[test]
    fn no_two_bit_flip_pair_of_consecutive_words_cancels() {
        // spec/checksums.md "Algorithms": all 64 x 64 pairs of single-bit flips in two
        // consecutive words of one lane, from random lane states and words. The old step
        // cancels the pair (bit 63, bit 26), and sometimes (bit 62, bit 25).
        let words = random_words(3, 3 * 3);
        for base in words.chunks_exact(3) {
            let (h, w1, w2) = (base[0], base[1], base[2]);
            let new = lane_step(lane_step(h, w1), w2);
            let old = lane_step_v1(lane_step_v1(h, w1), w2);
            let mut old_cancels = Vec::new();
            for k1 in (0..64).rev() {
                for k2 in 0..64 {
                    let (f1, f2) = (w1 ^ 1 << k1, w2 ^ 1 << k2);
                    assert_ne!(lane_step(lane_step(h, f1), f2), new, "bits {k1}, {k2}");
                    if lane_step_v1(lane_step_v1(h, f1), f2) == old {
                        old_cancels.push((k1, k2));
                    }
                }
            }
            // Bit 62 passes the multiply as one bit too when bit 62 of `(h ^ w1) * P` is set
            // (P ≡ -1 mod 4), for about half the states.
            assert_eq!(old_cancels.first(), Some(&(63, 26)));
            assert!(old_cancels.iter().all(|&p| p == (63, 26) || p == (62, 25)));
        }
        // The same through the whole hash: 40 f32 (20 words), every pair of flips in words j
        // and j + 8 (one lane), three random tensors.
        for seed in [1, 2, 3] {
            let data: Vec<u8> = random_words(seed, 20)
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            let before = hash_elements(&data, lane_step, |_| {});
            for j in 0..12 {
                for k1 in 0..64 {
                    for k2 in 0..64 {
                        let mut x = data.clone();
                        x[8 * j + k1 / 8] ^= 1 << (k1 % 8);
                        x[8 * (j + 8) + k2 / 8] ^= 1 << (k2 % 8);
                        assert_ne!(hash_elements(&x, lane_step, |_| {}), before);
                    }
                }
            }
        }
    }
}
