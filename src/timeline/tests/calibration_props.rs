//! spec/sync-modes.md "Calibration": the fitted map from device to host time.

use crate::timeline::calibrator::{Anchor, Calibrator};
use proptest::prelude::*;

/// A known linear clock: host = offset + device * (1 + ppm / 1e6).
fn truth(offset: u64, ppm: i32, device: u64) -> u64 {
    let d = device as f64;
    (offset as f64 + d + d * f64::from(ppm) / 1e6).round() as u64
}

/// Anchors on that clock: increasing device times, each bracket holding the true host time.
fn anchors(offset: u64, ppm: i32, steps: &[(u64, u64, u64)]) -> Vec<Anchor> {
    let mut device = 0u64;
    steps
        .iter()
        .map(|&(gap, before, after)| {
            device += gap;
            let host = truth(offset, ppm, device);
            Anchor {
                host_before_ns: host - before,
                device_ns: device,
                host_after_ns: host + after,
            }
        })
        .collect()
}

fn steps() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
    proptest::collection::vec((1u64..2_000_000_000, 0u64..50_000, 0u64..50_000), 1..40)
}

proptest! {
    /// Invariant: whatever the brackets, the fitted map recovers a known linear clock (any
    /// offset, drift within ±500 ppm) within the fit's own bound, everywhere between the first
    /// and the last anchor used.
    #[test]
    fn the_fit_recovers_a_linear_clock_within_its_bound(
        offset in 1_000_000u64..1_000_000_000_000,
        ppm in -500i32..500,
        steps in steps(),
        probes in proptest::collection::vec(0.0f64..=1.0, 1..20),
    ) {
        let all = anchors(offset, ppm, &steps);
        let mut c = Calibrator::default();
        for a in &all {
            c.add(*a);
        }
        let fit = c.calibration().expect("one anchor at least");
        let narrowest = c.narrowest_ns().unwrap();
        let used: Vec<_> = all
            .iter()
            .filter(|a| a.width_ns() as f64 <= narrowest as f64 * 1.5)
            .collect();
        let lo = used.iter().map(|a| a.device_ns).min().unwrap();
        let hi = used.iter().map(|a| a.device_ns).max().unwrap();
        for p in probes {
            let d = lo + ((hi - lo) as f64 * p) as u64;
            let err = fit.to_host_ns(d).abs_diff(truth(offset, ppm, d));
            // One more ns: the true clock is rounded too.
            prop_assert!(err <= fit.bound_ns + 1,
                "at device {}: off by {} ns, bound {} ns", d, err, fit.bound_ns);
        }
    }

    /// Invariant: a bracket wider than 1.5x the narrowest seen is rejected, so adding wide
    /// brackets never widens the bound (nor changes the fit).
    #[test]
    fn wide_brackets_never_widen_the_bound(
        offset in 1_000_000u64..1_000_000_000,
        ppm in -100i32..100,
        steps in steps(),
        wide in proptest::collection::vec((1u64..2_000_000_000, 0.0f64..1.0), 1..10),
    ) {
        let mut c = Calibrator::default();
        for a in anchors(offset, ppm, &steps) {
            c.add(a);
        }
        let before = c.calibration().unwrap();
        let narrowest = c.narrowest_ns().unwrap();
        for (device, skew) in wide {
            // Wider than 1.5x the narrowest, still holding the true time.
            let width = narrowest * 3 / 2 + 1 + (narrowest as f64 * 4.0 * skew) as u64;
            let host = truth(offset, ppm, device);
            let below = (width as f64 * skew) as u64;
            c.add(Anchor {
                host_before_ns: host - below.min(host),
                device_ns: device,
                host_after_ns: host + (width - below),
            });
        }
        let after = c.calibration().unwrap();
        prop_assert!(after.bound_ns <= before.bound_ns);
        prop_assert_eq!(after.anchors_used, before.anchors_used);
        prop_assert_eq!(after.to_host_ns(12_345_678), before.to_host_ns(12_345_678));
    }
}
