//! Unit tests of the stats layer that read its internals (moved from `proptests/stats_props.rs`
//! and `tests/core/nesting.rs` when the accessors they read became crate-internal).

mod stats_props;

/// spec/hot-path.md "Histogram": 2,112 bytes of histogram, 2,208 bytes a cell.
#[test]
fn a_statistics_cell_costs_what_the_spec_says() {
    assert_eq!(crate::stats::histogram::LogHistogram::MEMORY_BYTES, 2_112);
    assert_eq!(crate::stats::BrickStats::MEMORY_BYTES, 2_208);
}
