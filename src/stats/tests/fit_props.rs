//! spec/work-accounting.md "Cost against shape" (trusted lines; moved from
//! `proptests/pass_series_props.rs` when `Fit::predict_ns` and `Fit::trusted` became
//! crate-internal).

use crate::stats::{FitSums, Regressor};
use crate::PassShape;
use proptest::prelude::*;

proptest! {
    /// Invariant: on points that lie on a line y = a + b·x (any integer a, b, and x taking at
    /// least two values over at least three passes), the fit is that line exactly with R² = 1,
    /// however the passes are split and merged.
    #[test]
    fn a_fit_recovers_any_exact_line(
        a in 0u64..10_000_000, b in 0u64..100_000,
        xs in prop::collection::vec(1u64..100_000, 3..60), split in 0usize..60,
    ) {
        prop_assume!(xs.iter().any(|&x| x != xs[0]));
        let (mut left, mut right) = (FitSums::new(), FitSums::new());
        for (i, &x) in xs.iter().enumerate() {
            let side = if i < split { &mut left } else { &mut right };
            side.add(&PassShape::new(1, 1, x).unwrap(), a + b * x, 1);
        }
        let mut all = right;
        all.merge(&left);
        let fit = all.solve(Regressor::Context).unwrap();
        prop_assert_eq!(fit.intercept_ns, a as f64);
        prop_assert_eq!(fit.slope_ns, b as f64);
        prop_assert_eq!(fit.r2, 1.0);
        prop_assert_eq!(fit.n, xs.len() as u64);
        prop_assert_eq!((fit.x_min, fit.x_max), (*xs.iter().min().unwrap(), *xs.iter().max().unwrap()));
        prop_assert!(all.solve(Regressor::NewTokens).is_none());
    }

    /// Invariant (spec/work-accounting.md "Cost against shape", trusted lines): whatever the
    /// passes, no fit predicts a negative time at any context, a line over fewer than 16 passes is
    /// never trusted, and a trusted line is at or above zero from the smallest context seen to 16
    /// times the largest; the shares table extrapolates only from passes that allow a trend.
    #[test]
    fn no_fit_predicts_a_negative_time_or_trusts_too_few_passes(
        passes in prop::collection::vec((1u64..5_000, 0u64..10_000_000), 3..40),
        at in prop::collection::vec(0u64..1_000_000, 1..8),
    ) {
        let mut sums = FitSums::new();
        for &(ctx, ns) in &passes {
            sums.add(&PassShape::new(1, 1, ctx).unwrap(), ns, 1);
        }
        let Some(fit) = sums.solve(Regressor::Context) else { return Ok(()) };
        for &x in at.iter().chain([0, fit.x_min, fit.x_max, u64::MAX].iter()) {
            prop_assert!(fit.predict_ns(x) >= 0.0, "{:?} at {}", fit, x);
        }
        if fit.n < 16 {
            prop_assert!(!fit.trusted());
        }
        if fit.trusted() {
            prop_assert!(fit.x_max >= 2 * fit.x_min && fit.r2 >= 0.5);
            for x in [fit.x_min, fit.x_max, fit.x_max * 16] {
                prop_assert!(fit.intercept_ns + fit.slope_ns * x as f64 >= 0.0, "{:?} at {}", fit, x);
            }
        }
    }
}
