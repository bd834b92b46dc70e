//! spec/checksums.md "Algorithms" and "Summary".

use std::hash::Hasher;

use brickprof::checksum::TensorSummary;
use brickprof::checksum::{checksum, checksum_with, Algorithm, Simd, Tensor};
use proptest::prelude::*;

fn any_f32s() -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(any::<u32>().prop_map(f32::from_bits), 1..200)
}

/// Any bits, with the values a summary must get right weighted in: NaN, ±Inf, ±0, subnormals,
/// and ordinary magnitudes.
fn nasty_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => any::<u32>().prop_map(f32::from_bits),
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(-0.0f32),
        1 => Just(0.0f32),
        1 => (any::<bool>(), 1u32..0x80_0000).prop_map(|(neg, m)| f32::from_bits(m | (u32::from(neg) << 31))),
        6 => -1e3f32..1e3,
    ]
}

/// Lengths that cross 256-value windows and 64-byte blocks, with remainders of any size.
fn nasty_f32s() -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(nasty_f32(), 0..1100)
}

/// The text between `start` and the next `end` in `line`.
fn between<'a>(line: &'a str, start: &str, end: &str) -> &'a str {
    let s = &line[line.find(start).expect(start) + start.len()..];
    &s[..s.find(end).expect(end)]
}

/// spec/checksums.md "Algorithms": the case `two_bit_flips_change_the_lane_hash` shrank to when
/// it found the collision of `fnv1a64-lanes8`, read back from the comment of its saved seed in
/// proptest-regressions/checksum_props.txt (a seed replays only while the strategy is
/// unchanged; the case itself replays here whatever happens to the strategy).
#[test]
fn the_saved_two_bit_flip_case_changes_the_hash() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/proptest-regressions/checksum_props.txt"
    );
    let text = std::fs::read_to_string(path).expect("the saved case");
    let line = text
        .lines()
        .find(|l| l.contains("data = ["))
        .expect("a shrunk case");
    let data: Vec<f32> = between(line, "data = [", "]")
        .split(", ")
        .map(|v| v.parse().expect("an f32"))
        .collect();
    // `prop::sample::Index::index`: the fixed-point product of the raw value and the length.
    let index = |name: &str| {
        let raw: u64 = between(line, &format!("{name} = Index("), ")")
            .parse()
            .unwrap();
        ((u128::from(raw) * data.len() as u128) >> 64) as usize
    };
    let bits: Vec<u32> = between(line, "bits = (", ")")
        .split(", ")
        .map(|b| b.parse().unwrap())
        .collect();
    let (a, b) = (index("i"), index("j"));
    // Bit 26 of the low element of word 41 and the sign of the high element of word 33: two
    // consecutive words of lane 1.
    assert_eq!((a, b, bits.as_slice()), (82, 67, [26, 31].as_slice()));
    let mut changed = data.clone();
    changed[a] = f32::from_bits(changed[a].to_bits() ^ (1 << bits[0]));
    changed[b] = f32::from_bits(changed[b].to_bits() ^ (1 << bits[1]));
    assert_ne!(
        Algorithm::default().hash(Tensor::F32(&changed)),
        Algorithm::default().hash(Tensor::F32(&data))
    );
    // The old algorithm, kept for its files, still collides on it.
    let old = |x: &[f32]| checksum(Algorithm::Fnv1a64Lanes8, Tensor::F32(x)).0;
    assert_eq!(old(&changed), old(&data));
}

proptest! {
    /// Invariant: with either algorithm, flipping any single bit of any element of any slice
    /// changes the hash (the whole tensor is hashed, and every step is a bijection of the state
    /// for a fixed input and of the input for a fixed state).
    #[test]
    fn any_single_bit_flip_changes_the_hash(data in any_f32s(), i in any::<prop::sample::Index>(), bit in 0u32..32) {
        let mut changed = data.clone();
        let k = i.index(changed.len());
        changed[k] = f32::from_bits(changed[k].to_bits() ^ (1 << bit));
        prop_assert_ne!(Algorithm::default().hash(Tensor::F32(&changed)), Algorithm::default().hash(Tensor::F32(&data)));
        prop_assert_ne!(Algorithm::Fnv1a64.hash(Tensor::F32(&changed)), Algorithm::Fnv1a64.hash(Tensor::F32(&data)));
    }

    /// Invariant: flipping two bits in two different elements changes the lane hash (in
    /// particular two sign bits in the same lane, which cancel without the rotation, and a
    /// sign bit and bit 26 of the lane's next word, which cancel in `fnv1a64-lanes8`: the saved
    /// case in proptest-regressions/checksum_props.txt).
    #[test]
    fn two_bit_flips_change_the_lane_hash(data in proptest::collection::vec(any::<u32>().prop_map(f32::from_bits), 2..200), i in any::<prop::sample::Index>(), j in any::<prop::sample::Index>(), bits in (0u32..32, 0u32..32)) {
        let (a, b) = (i.index(data.len()), j.index(data.len()));
        prop_assume!(a != b);
        let mut changed = data.clone();
        changed[a] = f32::from_bits(changed[a].to_bits() ^ (1 << bits.0));
        changed[b] = f32::from_bits(changed[b].to_bits() ^ (1 << bits.1));
        prop_assert_ne!(Algorithm::default().hash(Tensor::F32(&changed)), Algorithm::default().hash(Tensor::F32(&data)));
    }

    /// Invariant: two single-bit flips in two consecutive words of one lane (words `j` and
    /// `j + 8`, elements `2j, 2j+1` and `2j+16, 2j+17`) change the default hash, whatever the
    /// data (spec/checksums.md "Algorithms": every single-bit difference leaves a lane step as
    /// at least two bits).
    #[test]
    fn flips_in_consecutive_words_of_a_lane_change_the_hash(data in proptest::collection::vec(any::<u32>().prop_map(f32::from_bits), 18..600), j in any::<prop::sample::Index>(), bits in (0u32..64, 0u32..64)) {
        let word = j.index(data.len() / 2 - 8);
        let mut changed = data.clone();
        for (w, bit) in [(word, bits.0), (word + 8, bits.1)] {
            let k = 2 * w + (bit / 32) as usize;
            changed[k] = f32::from_bits(changed[k].to_bits() ^ (1 << (bit % 32)));
        }
        prop_assert_ne!(Algorithm::default().hash(Tensor::F32(&changed)), Algorithm::default().hash(Tensor::F32(&data)));
        prop_assert_ne!(checksum(Algorithm::default(), Tensor::F32(&changed)).0, Algorithm::default().hash(Tensor::F32(&data)));
    }

    /// Invariant: the byte-wise checksum equals the fnv crate's FnvHasher fed the same
    /// little-endian bytes; every algorithm hashes a typed tensor exactly like its
    /// little-endian bytes; the one-pass checksum+summary equals the separate computations.
    #[test]
    fn typed_tensors_hash_their_bytes(data in any_f32s(), halves in proptest::collection::vec(any::<u16>(), 0..100)) {
        let mut h = fnv::FnvHasher::default();
        for v in &data { h.write(&v.to_le_bytes()); }
        prop_assert_eq!(Algorithm::Fnv1a64.hash(Tensor::F32(&data)), h.finish());
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        let half_bytes: Vec<u8> = halves.iter().flat_map(|v| v.to_le_bytes()).collect();
        for a in [Algorithm::Fnv1a64Lanes8V2, Algorithm::Fnv1a64Lanes8, Algorithm::Fnv1a64] {
            prop_assert_eq!(checksum(a, Tensor::F32(&data)).0, a.hash(Tensor::Bytes(&bytes)));
            prop_assert_eq!(checksum(a, Tensor::Bf16(&halves)).0, a.hash(Tensor::Bytes(&half_bytes)));
            prop_assert_eq!(checksum(a, Tensor::Bytes(&bytes)).0, a.hash(Tensor::Bytes(&bytes)));
        }
        let (one_pass_hash, one_pass_summary) = checksum(Algorithm::default(), Tensor::F32(&data));
        prop_assert_eq!(one_pass_hash, Algorithm::default().hash(Tensor::F32(&data)));
        prop_assert_eq!(one_pass_summary, TensorSummary::of(Tensor::F32(&data)));
        let mut h = fnv::FnvHasher::default();
        for v in &halves { h.write(&v.to_le_bytes()); }
        prop_assert_eq!(Algorithm::Fnv1a64.hash(Tensor::F16(&halves)), h.finish());
    }

    // summary_accounts_for_every_element: a unit test in src/checksum/summary.rs (it reads
    // the derived `finite()` and `mean()`, internal since 0.4).

    // typed_summaries_equal_the_decoded_f32_summary: a unit test in src/checksum/summary.rs
    // (it decodes with `HalfFormat`, internal since 0.4).

    /// Invariant (spec/checksums.md "Summary"): every code path (`Simd`: portable, AVX2,
    /// AVX-512, where the CPU has them) gives the same hash and a bit-identical summary, for
    /// every dtype and both algorithms, whatever the bits (NaN, ±Inf, ±0, subnormals) and the
    /// length (whole 256-value windows, partial blocks, odd tails).
    #[test]
    fn every_simd_path_gives_identical_checksums(data in nasty_f32s(), cut in 0usize..64) {
        let data = &data[..data.len().saturating_sub(cut)];
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        let halves: Vec<u16> = data.iter().map(|v| (v.to_bits() >> 16) as u16).collect();
        let signed: Vec<i8> = bytes.iter().map(|&b| b as i8).collect();
        let tensors = [
            Tensor::F32(data),
            Tensor::F16(&halves),
            Tensor::Bf16(&halves),
            Tensor::I8(&signed),
            Tensor::U8(&bytes),
        ];
        for tensor in tensors {
            for a in [Algorithm::Fnv1a64Lanes8V2, Algorithm::Fnv1a64Lanes8, Algorithm::Fnv1a64] {
                let (hash, s) = checksum_with(Simd::Portable, a, tensor);
                for simd in Simd::supported() {
                    let (h, t) = checksum_with(simd, a, tensor);
                    prop_assert_eq!(h, hash, "{} {}", simd, a);
                    let bits = |s: TensorSummary| [s.min, s.max, s.sum, s.sum_sq].map(f64::to_bits);
                    prop_assert_eq!(bits(t), bits(s), "{} {}", simd, a);
                    prop_assert_eq!(t, s);
                }
            }
        }
        prop_assert_eq!(checksum(Algorithm::default(), Tensor::F32(data)).0, Algorithm::default().hash(Tensor::Bytes(&bytes)));
    }

    /// Invariant (spec/checksums.md "Summary", precision): over finite values,
    /// |sum - Σx| <= 1e-6 Σ|x| and |sum_sq - Σx²| <= 1e-6 Σx² + n 2^-149, the exact sums taken
    /// in f64 (whose own error is below 1e-12 of them here); whether the f32 window sums
    /// overflow (|x| beyond about 1.8e19: the f64 second pass) or not.
    #[test]
    fn summary_sums_are_within_the_stated_bound(
        data in proptest::collection::vec(any::<u32>().prop_map(f32::from_bits), 0..3000),
        small in any::<bool>(),
    ) {
        let data: Vec<f32> = data
            .into_iter()
            .filter(|v| v.is_finite())
            .map(|v| if small { v.clamp(-1e6, 1e6) } else { v })
            .collect();
        let s = TensorSummary::of(Tensor::F32(&data));
        let sum: f64 = data.iter().map(|&v| f64::from(v)).sum();
        let abs: f64 = data.iter().map(|&v| f64::from(v).abs()).sum();
        let sq: f64 = data.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
        prop_assert!((s.sum - sum).abs() <= 1e-6 * abs, "sum {} vs {} (Σ|x| {})", s.sum, sum, abs);
        let floor = data.len() as f64 * 2f64.powi(-149);
        prop_assert!((s.sum_sq - sq).abs() <= 1e-6 * sq + floor, "sum_sq {} vs {}", s.sum_sq, sq);
        prop_assert_eq!(checksum(Algorithm::default(), Tensor::F32(&data)).1, s);
    }
}
