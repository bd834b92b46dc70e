//! spec/hot-path.md "Statistics" and "Histogram" (moved from `proptests/stats_props.rs`).

use crate::stats::histogram::RELATIVE_ERROR;
use crate::{stats::BrickStats, Work};
use proptest::prelude::*;

/// A duration in ns, spread over the scales a brick takes (as `proptests/common.rs` draws it).
fn duration() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..100, 100u64..100_000, 100_000u64..10_000_000_000]
}

fn stats_of(xs: &[u64]) -> BrickStats {
    let mut s = BrickStats::new();
    for &x in xs {
        s.record(x, x / 2, Work::elements(1));
    }
    s
}

proptest! {
    /// Invariant: min <= p50 <= p90 <= p99 <= max; min <= mean <= max; count and total equal the
    /// recorded samples; the standard deviation is at most (max - min).
    #[test]
    fn stats_are_ordered_and_count_every_sample(xs in proptest::collection::vec(duration(), 1..300)) {
        let s = stats_of(&xs);
        prop_assert_eq!(s.count(), xs.len() as u64);
        prop_assert_eq!(s.total_ns(), xs.iter().sum::<u64>());
        prop_assert_eq!(s.min_ns(), *xs.iter().min().unwrap());
        prop_assert_eq!(s.max_ns(), *xs.iter().max().unwrap());
        prop_assert!(s.min_ns() <= s.p50_ns());
        prop_assert!(s.p50_ns() <= s.p90_ns());
        prop_assert!(s.p90_ns() <= s.p99_ns());
        prop_assert!(s.p99_ns() <= s.max_ns());
        prop_assert!(s.min_ns() as f64 <= s.mean_ns() + 1e-6);
        prop_assert!(s.mean_ns() <= s.max_ns() as f64 + 1e-6);
        prop_assert!(s.std_dev_ns() <= (s.max_ns() - s.min_ns()) as f64 + 1e-6);
    }

    /// Invariant: every percentile is within RELATIVE_ERROR of the exact nearest-rank value.
    #[test]
    fn percentiles_are_within_the_stated_error(
        xs in proptest::collection::vec(0u64..(1 << 35), 1..300),
        q in 0.0f64..=1.0,
    ) {
        let s = stats_of(&xs);
        let mut sorted = xs.clone();
        sorted.sort_unstable();
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        let exact = sorted[rank - 1] as f64;
        let got = s.percentile_ns(q) as f64;
        prop_assert!((got - exact).abs() <= exact * RELATIVE_ERROR + 1.0,
            "q={} got {} exact {}", q, got, exact);
    }

    /// Invariant: merge is commutative and associative, and equals recording everything into one.
    #[test]
    fn merge_is_associative_commutative_and_exact(
        a in proptest::collection::vec(duration(), 0..60),
        b in proptest::collection::vec(duration(), 0..60),
        c in proptest::collection::vec(duration(), 0..60),
    ) {
        let (sa, sb, sc) = (stats_of(&a), stats_of(&b), stats_of(&c));
        let mut ab = sa.clone(); ab.merge(&sb);
        let mut ba = sb.clone(); ba.merge(&sa);
        prop_assert_eq!(&ab, &ba);
        let mut ab_c = ab.clone(); ab_c.merge(&sc);
        let mut bc = sb.clone(); bc.merge(&sc);
        let mut a_bc = sa.clone(); a_bc.merge(&bc);
        prop_assert_eq!(&ab_c, &a_bc);
        let all: Vec<u64> = a.iter().chain(&b).chain(&c).copied().collect();
        prop_assert_eq!(&ab_c, &stats_of(&all));
    }
}
