//! spec/timing-verdicts.md "Effect size and its interval" and "The verdict rule".
//!
//! Invariants, for any per-pass samples:
//! - identical runs are never judged faster or slower (ratio exactly 1);
//! - the bootstrap interval holds its point estimate, and is the same for the same seed;
//! - the verdict does not depend on the unit: scaling every sample by the same power of two
//!   changes nothing;
//! - swapping reference and candidate inverts the ratio and never gives the same change twice
//!   (a run cannot be slower than a run that is slower than it).

use crate::compare::timing_verdict::VerdictSettings;
use crate::compare::timing_verdict::{bootstrap_ratio, judge, ratio_of_medians, Direction};
use crate::compare::TimingVerdict;
use proptest::prelude::*;

fn samples() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(1u32..1_000_000, 5..60)
        .prop_map(|v| v.into_iter().map(f64::from).collect())
}

fn settings() -> VerdictSettings {
    VerdictSettings::new(0.03, 2.0, 200).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn identical_runs_are_never_flagged(a in samples(), noise in samples(), seed in any::<u64>()) {
        for n in [vec![], vec![noise.as_slice()]] {
            let j = judge(&a, &a, &n, Direction::HigherIsSlower, &settings(), seed).unwrap();
            prop_assert_eq!(j.ratio, 1.0);
            prop_assert_eq!(j.verdict, TimingVerdict::WithinNoise);
        }
    }

    #[test]
    fn the_interval_holds_the_estimate_and_is_repeatable(
        a in samples(), b in samples(), seed in any::<u64>()
    ) {
        let r = ratio_of_medians(&a, &b).unwrap();
        let i = bootstrap_ratio(&a, &b, 200, seed).unwrap();
        prop_assert!(i.lo <= i.hi);
        prop_assert_eq!(i, bootstrap_ratio(&a, &b, 200, seed).unwrap());
        // The medians of resamples range over the samples, so the interval lies within the
        // extreme ratios.
        let (amin, amax) = a.iter().fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
        let (bmin, bmax) = b.iter().fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
        prop_assert!(i.lo >= bmin / amax && i.hi <= bmax / amin);
        prop_assert!(r >= bmin / amax && r <= bmax / amin);
    }

    #[test]
    fn verdicts_do_not_depend_on_the_unit(
        a in samples(), b in samples(), seed in any::<u64>(), shift in 1i32..20
    ) {
        let k = 2f64.powi(shift);
        let scale = |v: &[f64]| v.iter().map(|x| x * k).collect::<Vec<f64>>();
        let j = judge(&a, &b, &[], Direction::HigherIsSlower, &settings(), seed).unwrap();
        let js = judge(&scale(&a), &scale(&b), &[], Direction::HigherIsSlower, &settings(), seed)
            .unwrap();
        prop_assert_eq!(j, js);
    }

    #[test]
    fn swapping_the_runs_never_repeats_a_verdict(
        a in samples(), b in samples(), seed in any::<u64>()
    ) {
        let fwd = judge(&a, &b, &[], Direction::HigherIsSlower, &settings(), seed).unwrap();
        let back = judge(&b, &a, &[], Direction::HigherIsSlower, &settings(), seed).unwrap();
        // The point estimates are reciprocal, so the minimum size cannot hold both ways.
        prop_assert!((fwd.ratio * back.ratio - 1.0).abs() < 1e-12);
        if fwd.verdict != TimingVerdict::WithinNoise {
            prop_assert_ne!(fwd.verdict, back.verdict);
        }
    }
}
