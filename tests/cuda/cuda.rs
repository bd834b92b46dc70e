//! spec/sync-modes.md "CUDA": without a driver, a typed error naming what to install (never
//! cudarc's load panic); with one, bricks resolve from timing-enabled pooled events with one
//! sync per pass.

use brickprof::{timeline::CudaTimeline, BrickId, BrickProfiler, Error, ProfilerConfig, Timeline};

#[test]
fn no_driver_is_a_typed_error_and_a_driver_works() {
    match CudaTimeline::on_device(0, 8) {
        Err(Error::NoDevice {
            timeline, install, ..
        }) => {
            assert_eq!(timeline, "cuda");
            assert!(install.contains("NVIDIA driver"), "{install}");
        }
        // A driver without a usable GPU: a driver error, named.
        Err(Error::Cuda { call, message }) => {
            assert!(call.starts_with("cu"), "{call}: {message}");
        }
        Err(other) => panic!("expected NoDevice or a CUDA error, got {other}"),
        Ok(t) => {
            // 2 * pending + 2 events, and one end-of-pass event per pass in flight (the same
            // rule tests/cuda/cuda_standin.rs checks on the stand-in).
            assert_eq!(
                t.counts().capacity,
                2 * 8 + 2 + brickprof::model::Limit::PassesInFlight.max()
            );
            assert_eq!(t.resolution_ns(), 500);
            let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), t).unwrap();
            for _ in 0..3 {
                let tok = prof.start_brick(BrickId::RmsNorm);
                prof.stop_brick(tok, 1);
                prof.end_pass(1).expect("resolve on a real GPU");
            }
            assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).summary().count, 3);
            assert_eq!(prof.timeline().counts().syncs, 3, "one sync per pass");
        }
    }
}

#[test]
fn a_pending_capacity_of_zero_is_refused_before_touching_the_driver() {
    let e = CudaTimeline::on_device(0, 0).unwrap_err();
    assert!(e.to_string().contains("pending capacity 0"), "{e}");
}
