//! spec/checksums.md "Algorithm".

use std::hash::Hasher;

use brickprof::checksum::{checksum_and_summary, fnv1a_u16_checksum, HalfFormat};
use brickprof::{fnv1a_f32_checksum, TensorSummary};
use proptest::prelude::*;

fn any_f32s() -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(any::<u32>().prop_map(f32::from_bits), 1..200)
}

proptest! {
    /// Invariant: flipping any single bit of any element of any slice changes the hash (the
    /// whole tensor is hashed, and each FNV-1a step is a bijection of the state).
    #[test]
    fn any_single_bit_flip_changes_the_hash(data in any_f32s(), i in any::<prop::sample::Index>(), bit in 0u32..32) {
        let before = fnv1a_f32_checksum(&data);
        let mut changed = data.clone();
        let k = i.index(changed.len());
        changed[k] = f32::from_bits(changed[k].to_bits() ^ (1 << bit));
        prop_assert_ne!(fnv1a_f32_checksum(&changed), before);
    }

    /// Invariant: the checksum equals the fnv crate's FnvHasher fed the same little-endian bytes,
    /// and the one-pass checksum+summary equals the two separate computations.
    #[test]
    fn equals_the_fnv_crate(data in any_f32s(), halves in proptest::collection::vec(any::<u16>(), 0..100)) {
        let mut h = fnv::FnvHasher::default();
        for v in &data { h.write(&v.to_le_bytes()); }
        prop_assert_eq!(fnv1a_f32_checksum(&data), h.finish());
        let (one_pass_hash, one_pass_summary) = checksum_and_summary(&data);
        prop_assert_eq!(one_pass_hash, h.finish());
        prop_assert_eq!(one_pass_summary, TensorSummary::of_f32(&data));
        let mut h = fnv::FnvHasher::default();
        for v in &halves { h.write(&v.to_le_bytes()); }
        prop_assert_eq!(fnv1a_u16_checksum(&halves), h.finish());
    }

    /// Invariant: the summary counts every element exactly once, and min <= mean <= max over
    /// the finite values.
    #[test]
    fn summary_accounts_for_every_element(data in any_f32s()) {
        let s = TensorSummary::of_f32(&data);
        prop_assert_eq!(s.len, data.len() as u64);
        prop_assert_eq!(s.nan, data.iter().filter(|v| v.is_nan()).count() as u64);
        prop_assert_eq!(s.finite(), data.iter().filter(|v| v.is_finite()).count() as u64);
        if s.finite() > 0 && s.sum.is_finite() {
            prop_assert!(s.min <= s.max);
            prop_assert!(s.mean() >= s.min - 1e-9 * s.min.abs() && s.mean() <= s.max + 1e-9 * s.max.abs());
        }
    }

    /// Invariant: an f16/bf16 tensor summarizes exactly like the f32 tensor of its decoded
    /// values (one summary algorithm for every element type).
    #[test]
    fn half_summaries_equal_the_decoded_f32_summary(bits in proptest::collection::vec(any::<u16>(), 0..100)) {
        for format in [HalfFormat::F16, HalfFormat::Bf16] {
            let decoded: Vec<f32> = bits.iter().map(|&b| format.to_f32(b)).collect();
            prop_assert_eq!(TensorSummary::of_half(&bits, format), TensorSummary::of_f32(&decoded));
        }
    }
}
