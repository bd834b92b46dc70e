//! Unit tests of the stats layer that read its internals (moved from `proptests/stats_props.rs`
//! and `tests/core/nesting.rs` when the accessors they read became crate-internal).

mod fit_props;
mod stats_props;

/// The standard deviation and the rate of the two measurements in `BrickStats::record`'s
/// example (moved from its doctest when they became crate-internal).
#[test]
fn two_measurements_have_their_deviation_and_rate() {
    use crate::{stats::BrickStats, Work};
    let mut s = BrickStats::new();
    s.record(100, 100, Work::elements(10));
    s.record(300, 300, Work::elements(10));
    assert_eq!(
        (s.count(), s.total_ns(), s.min_ns(), s.max_ns()),
        (2, 400, 100, 300)
    );
    assert_eq!(s.mean_ns(), 200.0);
    assert_eq!(s.std_dev_ns(), 100.0);
    assert_eq!(s.elements_per_sec(), 20.0 / 400e-9);
}

/// Was the doc example of `FitSums::solve` (crate-internal since 0.4): 2 µs + 0.38 µs per
/// token of context, fitted exactly.
#[test]
fn three_passes_on_a_line_give_that_line() -> crate::Result<()> {
    use crate::stats::{FitSums, Regressor};
    use crate::PassShape;
    let mut s = FitSums::new();
    for ctx in [16u64, 40, 80] {
        s.add(&PassShape::new(1, 1, ctx)?, 2_000 + 380 * ctx, 1);
    }
    let fit = s.solve(Regressor::Context).unwrap();
    assert_eq!(
        (fit.intercept_ns, fit.slope_ns, fit.r2),
        (2_000.0, 380.0, 1.0)
    );
    assert_eq!((fit.x_min, fit.x_max, fit.n), (16, 80, 3));
    assert!(s.solve(Regressor::NewTokens).is_none()); // one new token in every pass
    Ok(())
}

/// spec/hot-path.md "Histogram": 2,112 bytes of histogram, 2,208 bytes a cell.
#[test]
fn a_statistics_cell_costs_what_the_spec_says() {
    assert_eq!(crate::stats::histogram::LogHistogram::MEMORY_BYTES, 2_112);
    assert_eq!(crate::stats::BrickStats::MEMORY_BYTES, 2_208);
}

/// spec/hot-path.md "Pass series": the ring keeps the newest passes and counts the dropped ones
/// (moved from `tests/core/pass_series.rs`, whose latency half stays there).
#[test]
fn a_ring_keeps_the_newest_passes() {
    use crate::stats::{pass_series::PassRing, PassRecord};
    use crate::{BrickCategory, PassShape};
    let pass = |new: u32, ctx: u64, wall: u64| {
        let mut cats = [0; BrickCategory::COUNT];
        cats[BrickCategory::Attention as usize] = wall / 3;
        PassRecord::new(Some(PassShape::new(new, 1, ctx).unwrap()), wall, cats)
    };
    // prompt A (2 chunks), 2 decodes, prompt B (2 chunks), 1 decode; the ring keeps 6.
    let records = [
        pass(8, 8, 1_000),
        pass(8, 16, 2_000),
        pass(1, 17, 100),
        pass(1, 18, 110),
        pass(8, 8, 3_000),
        pass(8, 16, 4_000),
        pass(1, 17, 120),
    ];
    let mut ring = PassRing::new(6).unwrap();
    for r in &records {
        ring.push(*r);
    }
    assert_eq!((ring.iter().count(), ring.dropped()), (6, 1));
    let kept: Vec<u64> = ring.iter().map(|r| r.wall_ns()).collect();
    assert_eq!(kept, [2_000, 100, 110, 3_000, 4_000, 120]);
    let series = ring.series();
    assert_eq!(series.runs()[0].dropped(), 1);
    // The ring's series is the run `PassSeries::from_run` builds of the same records.
    assert_eq!(
        series,
        crate::stats::PassSeries::from_run(records[1..].to_vec(), 1, 6).unwrap()
    );
}
