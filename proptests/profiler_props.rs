//! spec/hot-path.md "Layers", "Categories" and "Enable, disable, reset, merge" on whole profilers.

use brickprof::{profile::RowKey, stats::BrickStats, BrickCategory, BrickId, ProfilerConfig};
use proptest::prelude::*;
use strum::IntoEnumIterator;

use crate::common::{mock_profiler, record, samples};

const LAYERS: usize = 3;

proptest! {
    /// Invariant: each category's totals equal the sum of its bricks' totals, and the categories
    /// together account for every recorded nanosecond and call.
    #[test]
    fn category_totals_equal_the_sum_of_their_bricks(s in samples(LAYERS, 120)) {
        let (mock, mut prof) = mock_profiler(ProfilerConfig::with_layers(LAYERS));
        record(&mut prof, &mock, &s);
        let mut all_calls = 0;
        let mut all_ns = 0;
        let profile = prof.profile();
        let cats: Vec<_> = profile.categories.iter().map(|c| (c.category, c.stats.clone())).collect();
        for cat in BrickCategory::iter() {
            let c = cats
                .iter()
                .find(|(k, _)| *k == cat)
                .map_or_else(BrickStats::default, |(_, s)| s.clone());
            let bricks: Vec<BrickStats> = BrickId::iter()
                .filter(|b| b.category() == cat)
                .map(|b| prof.view().brick_stats(b))
                .collect();
            prop_assert_eq!(c.summary().total_ns, bricks.iter().map(|b| b.summary().total_ns).sum::<u64>());
            prop_assert_eq!(c.summary().count, bricks.iter().map(|b| b.summary().count).sum::<u64>());
            all_calls += c.summary().count;
            all_ns += c.summary().total_ns;
        }
        prop_assert_eq!(all_calls, s.len() as u64);
        prop_assert_eq!(all_ns, s.iter().map(|x| x.2).sum::<u64>());
        prop_assert_eq!(all_ns, profile.total_ns());
    }

    /// Invariant: summed over every row (layers, model, unassigned), the row totals equal the
    /// brick totals; each sample lands in exactly the row its layer index names.
    #[test]
    fn layer_totals_equal_brick_totals(s in samples(LAYERS, 120)) {
        let (mock, mut prof) = mock_profiler(ProfilerConfig::with_layers(LAYERS));
        record(&mut prof, &mock, &s);
        let rows: Vec<RowKey> = (0..LAYERS).map(RowKey::Layer)
            .chain([RowKey::Model, RowKey::Unassigned]).collect();
        let profile = prof.profile();
        // A row's total: every brick's statistics in that row, read from the profile.
        let row_total = |r: RowKey| -> u64 {
            profile.bricks.iter().flat_map(|b| &b.rows).filter(|x| x.row == r)
                .map(|x| x.stats.summary().total_ns).sum()
        };
        let by_rows: u64 = rows.iter().map(|r| row_total(*r)).sum();
        let by_bricks: u64 = BrickId::iter().map(|b| prof.view().brick_stats(b).summary().total_ns).sum();
        prop_assert_eq!(by_rows, by_bricks);
        for r in rows {
            let expected: u64 = s.iter().filter(|(l, _, _)| match (r, l) {
                (RowKey::Layer(n), Some(l)) => *l == n,
                (RowKey::Model, None) => true,
                (RowKey::Unassigned, Some(l)) => *l >= LAYERS,
                _ => false,
            }).map(|x| x.2).sum();
            prop_assert_eq!(row_total(r), expected, "row {:?}", r);
        }
    }

    /// Invariant: merging profilers' snapshots is commutative and associative per brick and per
    /// row, and equals recording every sample into one profiler.
    #[test]
    fn profiler_merge_equals_recording_into_one(
        a in samples(LAYERS, 40), b in samples(LAYERS, 40), c in samples(LAYERS, 40),
    ) {
        let build = |parts: &[&[crate::common::Sample]]| {
            let (mock, mut p) = mock_profiler(ProfilerConfig::with_layers(LAYERS));
            for part in parts { record(&mut p, &mock, part); }
            p
        };
        let (pa, pb, pc) = (build(&[&a]).profile(), build(&[&b]).profile(), build(&[&c]).profile());
        let one = build(&[&a, &b, &c]).profile();
        let mut ab_c = build(&[]).profile();
        ab_c.merge(&pa).unwrap(); ab_c.merge(&pb).unwrap(); ab_c.merge(&pc).unwrap();
        let mut c_ba = build(&[]).profile();
        c_ba.merge(&pc).unwrap(); c_ba.merge(&pb).unwrap(); c_ba.merge(&pa).unwrap();
        let stats = |p: &brickprof::Profile, name: &str| p.brick(name).map(|b| b.stats.clone());
        let row = |p: &brickprof::Profile, name: &str, l: usize| {
            p.brick(name).map(|b| {
                b.rows
                    .iter()
                    .filter(|r| r.row == RowKey::Layer(l))
                    .fold(BrickStats::default(), |mut m, r| {
                        m.merge(&r.stats);
                        m
                    })
            })
        };
        for name in BrickId::iter().map(|b| b.name()) {
            prop_assert_eq!(stats(&ab_c, name), stats(&one, name));
            prop_assert_eq!(stats(&c_ba, name), stats(&one, name));
            for l in 0..LAYERS {
                prop_assert_eq!(row(&ab_c, name, l), row(&one, name, l));
            }
        }
    }
}
