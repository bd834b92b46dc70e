//! spec/divergence.md "Metrics": invariants of the elementwise error statistics.

use crate::compare::divergence::ErrorStats;
use proptest::prelude::*;

/// Finite values; tiny magnitudes flushed to 0 so that scaling by 2^-8 stays exact in f32.
fn value() -> impl Strategy<Value = f32> {
    (-1e3f32..1e3).prop_map(|v| if v.abs() < 1e-20 { 0.0 } else { v })
}

fn finite_f32s() -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(value(), 1..300)
}

/// Two tensors of one length.
fn pair() -> impl Strategy<Value = (Vec<f32>, Vec<f32>)> {
    finite_f32s().prop_flat_map(|a| {
        let n = a.len();
        (Just(a), proptest::collection::vec(value(), n))
    })
}

proptest! {
    /// Invariant: a tensor compared with itself has max abs 0, max rel 0, cosine 1, SQNR +inf
    /// and NMSE 0.
    #[test]
    fn identical_tensors_have_no_error(a in finite_f32s()) {
        let s = ErrorStats::between(&a, &a).unwrap();
        prop_assert_eq!((s.max_abs, s.max_rel, s.mean_abs, s.p99_abs, s.nmse), (0.0, 0.0, 0.0, 0.0, 0.0));
        prop_assert_eq!(s.sqnr_db, f64::INFINITY);
        // Exactly 1: sqrt(x * x) == x in binary floating point (and 1 for two zero tensors).
        prop_assert_eq!(s.cosine, 1.0);
    }

    /// Invariant: NMSE >= 0, p99 <= max, mean <= max, |cosine| <= 1 (up to rounding), and
    /// SQNR = -10 log10(NMSE).
    #[test]
    fn bounds_hold((a, b) in pair()) {
        let s = ErrorStats::between(&a, &b).unwrap();
        prop_assert!(s.nmse >= 0.0);
        prop_assert!(s.p99_abs <= s.max_abs && s.mean_abs <= s.max_abs);
        prop_assert!(s.cosine.abs() <= 1.0 + 1e-12);
        if s.nmse > 0.0 && s.nmse.is_finite() {
            prop_assert!((s.sqnr_db + 10.0 * s.nmse.log10()).abs() <= 1e-9 * s.sqnr_db.abs().max(1.0));
        }
    }

    /// Invariant: scaling both tensors by a power of two scales the absolute errors by it
    /// exactly and leaves max rel (away from the epsilon), cosine, SQNR and NMSE unchanged.
    #[test]
    fn power_of_two_scaling_is_exact((a, b) in pair(), k in -8i32..8) {
        let f = 2f32.powi(k);
        let (sa, sb): (Vec<f32>, Vec<f32>) = (a.iter().map(|v| v * f).collect(), b.iter().map(|v| v * f).collect());
        let s = ErrorStats::between(&a, &b).unwrap();
        let t = ErrorStats::between(&sa, &sb).unwrap();
        let f = f64::from(f);
        prop_assert_eq!(t.max_abs, s.max_abs * f);
        prop_assert_eq!(t.p99_abs, s.p99_abs * f);
        prop_assert_eq!((t.cosine, t.nmse, t.sqnr_db), (s.cosine, s.nmse, s.sqnr_db));
        if a.iter().all(|v| v.abs() >= 1e-3) {
            prop_assert_eq!(t.max_rel, s.max_rel);
        }
    }

    /// Invariant: swapping reference and candidate keeps max abs, mean abs, p99 and cosine.
    #[test]
    fn absolute_errors_and_cosine_are_symmetric((a, b) in pair()) {
        let (s, t) = (ErrorStats::between(&a, &b).unwrap(), ErrorStats::between(&b, &a).unwrap());
        prop_assert_eq!((s.max_abs, s.mean_abs, s.p99_abs, s.cosine), (t.max_abs, t.mean_abs, t.p99_abs, t.cosine));
    }
}
