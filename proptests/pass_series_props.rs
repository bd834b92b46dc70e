//! spec/hot-path.md "Pass series", spec/profile-format.md "Pass series" and "Latency: TTFT and
//! TPOT" (the fits' properties, spec/work-accounting.md "Cost against shape", are unit tests of
//! the stats layer: `src/stats/tests/fit_props.rs`).

use brickprof::figures::latency;
use brickprof::{
    stats::{PassRecord, PassSeries},
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
        // Series merge as the profiles (of no brick) that carry them do.
        let base = brickprof::BrickProfiler::default().profile();
        let merged = |x: &PassSeries, y: &PassSeries| {
            let (mut p, mut q) = (base.clone(), base.clone());
            p.pass_series = Some(x.clone());
            q.pass_series = Some(y.clone());
            p.merge(&q).unwrap();
            p.pass_series.unwrap()
        };
        let ab = merged(&a, &b);
        let ba = merged(&b, &a);
        prop_assert_eq!(&ab, &ba);
        let ab_c = merged(&ab, &c);
        let bc = merged(&b, &c);
        let a_bc = merged(&a, &bc);
        prop_assert_eq!(&ab_c, &a_bc);
        // Three runs in the saved series, and nothing left out by the merges (no
        // `merge_dropped`).
        let saved = serde_json::to_value(&ab_c).unwrap();
        prop_assert_eq!(saved["runs"].as_array().unwrap().len(), 3);
        prop_assert_eq!(
            ab_c.records().count(),
            a.records().count() + b.records().count() + c.records().count()
        );
        prop_assert!(saved.get("merge_dropped").is_none());
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
}
