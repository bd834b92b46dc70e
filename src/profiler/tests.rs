//! Unit tests of the profiler's internals (moved from integration tests when the items they
//! test stopped being public).

/// From tests/timelines/vendor_ranges.rs (`VendorRanges` is internal; its tools are read with
/// `View::vendor_tools`).
#[cfg(any(feature = "nvtx", feature = "roctx"))]
#[test]
fn vendor_range_names_are_per_layer() {
    use super::vendor_ranges::VendorRanges;
    use crate::model::LayerRow;
    assert_eq!(
        VendorRanges::name(LayerRow::Layer(1), "moe_router"),
        "L1/moe_router"
    );
}
