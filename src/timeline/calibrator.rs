//! Calibrated clocks: fitting a [`Calibration`], the map from device time to host time, over
//! anchors, with an error bound (spec/sync-modes.md "Calibration"). A leaf: plain numbers in,
//! plain numbers out. Built with a device timeline's feature (and for the unit tests).
//!
//! - An [`Anchor`] is a bracket: a host reading taken before a device mark was issued, the
//!   mark's device time, and a host reading taken after the mark was known complete. The
//!   mark's true host time lies inside the bracket, so the bracket's width is its error.
//! - Wide brackets (a preemption, a busy driver) are rejected: only anchors within
//!   [`WIDTH_TOLERANCE`] times the narrowest seen are used, as Tracy does for its calibrated
//!   timestamps.
//! - [`Calibration`] is the least-squares line through the used anchors' midpoints: an offset
//!   *and* a drift, instead of one offset per sync. The drift is fitted once the anchors span
//!   [`DRIFT_SPAN_WIDTHS`] times the narrowest bracket (one offset before that), and never
//!   beyond [`MAX_DRIFT`].
//! - Its bound is the farthest any used bracket lies from the line. The true clock map is
//!   linear and passes through every bracket, so between the first and the last anchor used,
//!   the fitted map is within the bound of the true one (the difference of two lines is
//!   largest at an end of the span). Beyond the last anchor the drift is extrapolated.

use super::calibration::Calibration;

/// Anchors within this factor of the narrowest seen are used; wider ones are rejected.
pub(crate) const WIDTH_TOLERANCE: f64 = 1.5;

/// Drift is fitted only once the anchors used span this many times the narrowest bracket in
/// device time (before that, the slope of brackets that close together is noise): one offset.
pub(crate) const DRIFT_SPAN_WIDTHS: u64 = 10_000;

/// The largest drift fitted, either way (1000 ppm: far beyond any real clock's).
pub(crate) const MAX_DRIFT: f64 = 1e-3;

/// Anchors a [`Calibrator`] keeps (the first one, for a long baseline, and the latest ones).
pub(crate) const MAX_ANCHORS: usize = 64;

/// One bracket: host ns before a device mark, the mark's device ns, host ns after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Anchor {
    /// Host ns read before the mark was issued.
    pub(crate) host_before_ns: u64,
    /// The mark's device time, in device ns.
    pub(crate) device_ns: u64,
    /// Host ns read after the mark was known complete.
    pub(crate) host_after_ns: u64,
}

impl Anchor {
    /// The bracket's width: its error bound, in ns.
    pub(crate) fn width_ns(&self) -> u64 {
        self.host_after_ns.saturating_sub(self.host_before_ns)
    }

    fn mid(&self) -> f64 {
        (self.host_before_ns as f64 + self.host_after_ns as f64) / 2.0
    }
}

/// Collects anchors and fits a [`Calibration`] over them. Holds at most `MAX_ANCHORS` (64)
/// anchors, allocated at construction.
#[derive(Debug, Clone)]
pub(crate) struct Calibrator {
    anchors: Vec<Anchor>,
    narrowest_ns: u64,
    /// Widths below this count as this (the device timestamps' resolution).
    floor_ns: u64,
    seen: u32,
    fit: Option<Calibration>,
}

impl Default for Calibrator {
    fn default() -> Self {
        Calibrator {
            anchors: Vec::with_capacity(MAX_ANCHORS),
            narrowest_ns: u64::MAX,
            floor_ns: 0,
            seen: 0,
            fit: None,
        }
    }
}

impl Calibrator {
    /// No anchor yet; brackets narrower than `floor_ns` (the device timestamps' resolution)
    /// count as that wide when choosing which to use, so that a lucky narrow bracket does not
    /// retire every other one for a gain below the resolution.
    #[cfg(any(feature = "hip", feature = "cuda", test))]
    pub(crate) fn with_floor(floor_ns: u64) -> Self {
        Calibrator {
            floor_ns,
            ..Self::default()
        }
    }

    /// Add an anchor: a bracket wider than `WIDTH_TOLERANCE` (1.5) times the narrowest seen is
    /// rejected (counted); a narrower one may retire earlier ones. Refits. Returns whether the
    /// anchor is used.
    pub(crate) fn add(&mut self, anchor: Anchor) -> bool {
        self.seen = self.seen.saturating_add(1);
        let width = anchor.width_ns();
        if anchor.host_after_ns < anchor.host_before_ns || !self.narrow_enough(width) {
            self.refit();
            return false;
        }
        self.narrowest_ns = self.narrowest_ns.min(width);
        let narrowest = self.narrowest_ns.max(self.floor_ns);
        self.anchors.retain(|a| within(a.width_ns(), narrowest));
        if self.anchors.len() == MAX_ANCHORS {
            self.anchors.remove(1); // keep the first, for the baseline, and the latest
        }
        self.anchors.push(anchor);
        self.refit();
        true
    }

    /// The earliest and the latest device time of the anchors used: between them, the fit is
    /// within its bound of the true map.
    #[cfg(any(feature = "hip", feature = "cuda"))]
    pub(crate) fn span_device_ns(&self) -> Option<(u64, u64)> {
        let lo = self.anchors.iter().map(|a| a.device_ns).min()?;
        let hi = self.anchors.iter().map(|a| a.device_ns).max()?;
        Some((lo, hi))
    }

    fn narrow_enough(&self, width: u64) -> bool {
        self.narrowest_ns == u64::MAX || within(width, self.narrowest_ns.max(self.floor_ns))
    }

    /// The current fit, once an anchor was used.
    pub(crate) fn calibration(&self) -> Option<Calibration> {
        self.fit
    }

    /// The narrowest bracket seen, in ns.
    #[cfg(test)]
    pub(crate) fn narrowest_ns(&self) -> Option<u64> {
        (self.narrowest_ns != u64::MAX).then_some(self.narrowest_ns)
    }

    fn refit(&mut self) {
        let used = self.anchors.len() as u32;
        let Some(first) = self.anchors.first() else {
            return;
        };
        let (d0, h0) = (first.device_ns, first.mid());
        let points = self
            .anchors
            .iter()
            .map(|a| (a.device_ns as f64 - d0 as f64, a.mid() - h0));
        let n = f64::from(used);
        let (mut sx, mut sy) = (0.0, 0.0);
        for (x, y) in points.clone() {
            sx += x;
            sy += y;
        }
        let (mx, my) = (sx / n, sy / n);
        let (mut sxx, mut sxy) = (0.0, 0.0);
        for (x, y) in points {
            sxx += (x - mx) * (x - mx);
            sxy += (x - mx) * (y - my);
        }
        let span = self
            .anchors
            .iter()
            .map(|a| a.device_ns)
            .max()
            .unwrap_or(d0)
            .saturating_sub(self.anchors.iter().map(|a| a.device_ns).min().unwrap_or(d0));
        let long_enough = span >= self.narrowest_ns.max(1).saturating_mul(DRIFT_SPAN_WIDTHS);
        let slope = if sxx > 0.0 && long_enough {
            (sxy / sxx).clamp(1.0 - MAX_DRIFT, 1.0 + MAX_DRIFT)
        } else {
            1.0
        };
        let mut fit = Calibration {
            host_ref_ns: h0 + my - slope * mx,
            device_ref_ns: d0,
            drift: slope - 1.0,
            bound_ns: 0,
            anchors_used: used,
            anchors_rejected: self.seen.saturating_sub(used),
        };
        let bound = self.anchors.iter().fold(0f64, |b, a| {
            let at = fit.host_ref_ns + (a.device_ns as f64 - d0 as f64) * slope;
            b.max((at - a.host_before_ns as f64).abs())
                .max((at - a.host_after_ns as f64).abs())
        });
        // Rounding of the map (to_host_ns rounds to whole ns) adds at most one.
        fit.bound_ns = bound.ceil() as u64 + 1;
        self.fit = Some(fit);
    }
}

fn within(width: u64, narrowest: u64) -> bool {
    width as f64 <= narrowest as f64 * WIDTH_TOLERANCE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bracket(true_host: u64, device: u64, before: u64, after: u64) -> Anchor {
        Anchor {
            host_before_ns: true_host - before,
            device_ns: device,
            host_after_ns: true_host + after,
        }
    }

    #[test]
    fn offset_and_drift_are_recovered_from_brackets() {
        // host = 1_000_000 + device * (1 + 50 ppm)
        let truth = |d: u64| 1_000_000 + d + d / 20_000;
        let mut c = Calibrator::default();
        for (i, d) in [0u64, 1_000_000_000, 2_000_000_000, 3_000_000_000]
            .iter()
            .enumerate()
        {
            c.add(bracket(truth(*d), *d, 300 + i as u64 * 10, 200));
        }
        let fit = c.calibration().unwrap();
        assert!((fit.drift - 5e-5).abs() < 1e-8, "{}", fit.drift);
        assert!(fit.bound_ns <= 400, "{}", fit.bound_ns);
        for d in [0, 1_500_000_000, 3_000_000_000] {
            let err = fit.to_host_ns(d).abs_diff(truth(d));
            assert!(err <= fit.bound_ns, "{d}: {err} > {}", fit.bound_ns);
        }
        assert_eq!((fit.anchors_used, fit.anchors_rejected), (4, 0));
    }

    #[test]
    fn wide_brackets_are_rejected_and_narrow_ones_retire_them() {
        let mut c = Calibrator::default();
        c.add(bracket(10_000, 0, 500, 500)); // width 1000
        c.add(bracket(20_000, 10_000, 600, 600)); // 1200: within 1.5x
        c.add(bracket(30_000, 20_000, 5_000, 5_000)); // 10000: rejected
        let fit = c.calibration().unwrap();
        assert_eq!((fit.anchors_used, fit.anchors_rejected), (2, 1));
        c.add(bracket(40_000, 30_000, 100, 100)); // 200: the two others retire
        let fit = c.calibration().unwrap();
        assert_eq!((fit.anchors_used, fit.anchors_rejected), (1, 3));
        assert_eq!(fit.to_host_ns(30_000), 40_000);
        assert_eq!(c.narrowest_ns(), Some(200));
        assert!(fit.bound_ns <= 101);
    }

    #[test]
    fn brackets_below_the_floor_count_as_the_floor() {
        let mut c = Calibrator::with_floor(1_000);
        c.add(bracket(10_000, 0, 100, 100)); // width 200: counts as 1000
        assert!(
            c.add(bracket(20_000, 10_000, 700, 700)),
            "1400 <= 1.5 x 1000"
        );
        assert!(
            !c.add(bracket(30_000, 20_000, 800, 800)),
            "1600 > 1.5 x 1000"
        );
        assert_eq!(c.calibration().unwrap().anchors_used, 2);
    }

    #[test]
    fn no_anchor_no_fit_and_a_fixed_offset() {
        assert!(Calibrator::default().calibration().is_none());
        let c = Calibration::offset(-5, 0);
        assert_eq!(c.to_host_ns(10), 5);
        assert_eq!(c.to_host_ns(2), 0, "clamped at the host origin");
        assert_eq!(c.offset_ns(), -5.0);
    }

    #[test]
    fn the_anchor_set_stays_bounded() {
        let mut c = Calibrator::default();
        for i in 0..(3 * MAX_ANCHORS as u64) {
            c.add(bracket(1_000 + i * 1_000, i * 1_000, 10, 10));
        }
        let fit = c.calibration().unwrap();
        assert_eq!(fit.anchors_used as usize, MAX_ANCHORS);
        assert_eq!(c.anchors.capacity(), MAX_ANCHORS, "never grows");
        assert_eq!(fit.to_host_ns(0), 1_000, "the first anchor is kept");
    }
}
