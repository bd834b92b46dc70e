//! spec/hot-path.md "Pass series", spec/profile-format.md "Pass series" and "Latency: TTFT and
//! TPOT", spec/work-accounting.md "Cost against shape".

use brickprof::figures::latency;
use brickprof::{
    stats::{FitSums, PassRecord, PassSeries, Regressor},
    BrickCategory, PassShape, Phase,
};
use proptest::prelude::*;

/// A run of up to 40 passes of random phases (prefill, decode, mixed, unshaped) and walls.
fn run() -> impl Strategy<Value = PassSeries> {
    (
        prop::collection::vec((0u8..4, 1u32..64, 0u64..1_000_000), 1..40),
        0u64..3,
    )
        .prop_map(|(passes, dropped)| {
            let records: Vec<PassRecord> = passes
                .into_iter()
                .map(|(kind, n, wall)| {
                    let shape = match kind {
                        0 => Some(PassShape::new(n + 1, 1, u64::from(n) + 1).unwrap()),
                        1 => Some(PassShape::new(1, 1, u64::from(n)).unwrap()),
                        2 => Some(
                            PassShape::new(n + 1, 1, 99)
                                .unwrap()
                                .with_phase(Phase::Mixed),
                        ),
                        _ => None,
                    };
                    let mut cats = [0; BrickCategory::COUNT];
                    cats[n as usize % BrickCategory::COUNT] = wall / 2;
                    PassRecord::new(shape, wall, cats)
                })
                .collect();
            let capacity = if dropped > 0 {
                records.len()
            } else {
                records.len() + 1
            };
            PassSeries::from_run(records, dropped, capacity).unwrap()
        })
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort();
    v
}

proptest! {
    /// Invariant: merging pass series is commutative and associative, keeps every run apart
    /// (no record lost or moved under the budget), and the TTFT and TPOT samples of a merge
    /// are exactly the union of each run's.
    #[test]
    fn series_merge_keeps_runs_apart_in_any_order(a in run(), b in run(), c in run()) {
        let mut ab = a.clone(); ab.merge(&b);
        let mut ba = b.clone(); ba.merge(&a);
        prop_assert_eq!(&ab, &ba);
        let mut ab_c = ab.clone(); ab_c.merge(&c);
        let mut bc = b.clone(); bc.merge(&c);
        let mut a_bc = a.clone(); a_bc.merge(&bc);
        prop_assert_eq!(&ab_c, &a_bc);
        prop_assert_eq!(ab_c.runs().len(), 3);
        prop_assert_eq!(ab_c.len(), a.len() + b.len() + c.len());
        prop_assert_eq!(ab_c.merge_dropped().records, 0);
        let parts = [&a, &b, &c].map(latency);
        if let Some(all) = latency(&ab_c) {
            let union = |f: fn(&brickprof::figures::Latency) -> &[u64]| {
                sorted(parts.iter().flatten().flat_map(|l| f(l).iter().copied()).collect())
            };
            let (ttft, tpot) = (union(|l| l.ttft.values()), union(|l| l.tpot.values()));
            prop_assert_eq!(all.ttft.values(), ttft.as_slice());
            prop_assert_eq!(all.tpot.values(), tpot.as_slice());
        } else {
            prop_assert!(parts.iter().all(Option::is_none));
        }
        let json = serde_json::to_string(&ab_c).unwrap();
        prop_assert_eq!(serde_json::from_str::<PassSeries>(&json).unwrap(), ab_c);
    }

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

    /// Invariant (spec/work-accounting.md "Trusted lines"): whatever the passes, no fit
    /// predicts a negative time at any context, a line over fewer than 16 passes is never
    /// trusted, and a trusted line is at or above zero from the smallest context seen to 16
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
