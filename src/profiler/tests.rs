//! Unit tests of the profiler's internals (moved from integration tests when the items they
//! test stopped being public).

/// From tests/timelines/vendor_ranges.rs (`VendorRanges` is internal; its tools are read with
/// `View::vendor_tools`).
#[cfg(any(feature = "nvtx", feature = "roctx"))]
#[test]
fn vendor_range_names_are_per_layer() {
    use super::vendor_ranges::VendorRanges;
    use crate::model::row_key::RowKey;
    assert_eq!(
        VendorRanges::name(RowKey::Layer(1), "moe_router"),
        "L1/moe_router"
    );
}

/// From tests/core/profiler.rs `disabled_profiler_records_nothing_and_reads_no_clock`: a
/// disabled profiler hands out inert tokens (spec/hot-path.md "Enable, disable, reset, merge").
#[test]
fn a_disabled_profiler_hands_out_inert_tokens() {
    use crate::{BrickId, BrickProfiler};
    let mut prof = BrickProfiler::default();
    prof.set_enabled(false);
    let t = prof.start_brick(BrickId::RmsNorm);
    assert!(!t.is_live());
    prof.stop_brick(t, 1);
    prof.set_enabled(true);
    let t = prof.start_brick(BrickId::RmsNorm);
    assert!(t.is_live());
    prof.stop_brick(t, 1);
}
