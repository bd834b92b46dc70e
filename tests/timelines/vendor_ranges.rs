//! spec/sync-modes.md "Vendor ranges": `vendor_ranges` needs the `nvtx` or `roctx` feature;
//! with one, every brick is a range named `L{layer}/{Brick}` and the hot path still allocates
//! nothing.

use brickprof::{BrickProfiler, ProfilerConfig};

fn config() -> ProfilerConfig {
    ProfilerConfig {
        layers: 2,
        vendor_ranges: true,
        ..ProfilerConfig::default()
    }
}

#[cfg(not(any(feature = "nvtx", feature = "roctx")))]
#[test]
fn without_a_vendor_feature_asking_for_ranges_is_an_error() {
    let e = BrickProfiler::with_timeline(config(), brickprof::CpuTimeline::default()).unwrap_err();
    assert!(e.to_string().contains("`nvtx` or `roctx`"), "{e}");
    // Off (the default), nothing is asked of the build.
    let off =
        BrickProfiler::with_timeline(ProfilerConfig::default(), brickprof::CpuTimeline::default());
    assert!(off.is_ok());
    assert_eq!(off.unwrap().view().vendor_tools, None);
}

#[cfg(any(feature = "nvtx", feature = "roctx"))]
#[test]
fn ranges_are_named_per_layer_and_bricks_still_record() {
    let mut prof =
        BrickProfiler::with_timeline(config(), brickprof::CpuTimeline::default()).unwrap();
    let router = prof
        .register("moe_router", brickprof::BrickCategory::Other)
        .unwrap();
    let tools = prof.view().vendor_tools.expect("on");
    assert!(
        cfg!(not(feature = "nvtx")) || tools.contains(&"nvtx"),
        "{tools:?}"
    );
    for _ in 0..3 {
        prof.begin_layer(1);
        let t = prof.start_brick(brickprof::BrickId::RmsNorm);
        let r = prof.start_brick(router);
        prof.stop_brick(r, 1);
        prof.stop_brick(t, 1);
        prof.end_layer();
        prof.end_pass(1).unwrap();
    }
    assert_eq!(
        prof.view()
            .brick_stats(brickprof::BrickId::RmsNorm)
            .summary()
            .count,
        3
    );
    assert_eq!(prof.view().brick_stats(router).summary().count, 3);
}
