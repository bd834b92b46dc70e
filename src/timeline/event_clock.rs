//! The device clock of CUDA and HIP events, and its calibration on the host clock
//! (spec/sync-modes.md "Calibration").
//!
//! CUDA and HIP events carry no absolute time: only the elapsed time between two completed
//! events (`cuEventElapsedTime`, `hipEventElapsedTime`), as an `f32` in ms. So device time is
//! expressed as ns since a *reference* event the timeline recorded on its own anchor stream:
//! `base_ns` (the reference's device ns since the first reference) plus the elapsed time from
//! the reference to the event.
//!
//! An `f32` has a 24-bit significand: the further an event lies from the reference, the coarser
//! the reading (a step of 0.24 µs from 2 s to 4 s, 0.98 µs from 8 s to 16 s, 0.2 ms at 1 h).
//! So when an anchor finds its event more than [`REBASE_AFTER_MS`] from the reference, that
//! anchor's event becomes the new reference (the caller swaps the two events): readings then
//! stay within a few seconds of the reference, where their rounding (half a step, 0.12 µs) is
//! below the events' own resolution (about 0.5 µs). The chain of re-bases adds at most that
//! rounding per link to device time; it shows in the anchors, so the fitted bound covers it.
//!
//! Anchors (a host reading, an event on the anchor stream waited for alone, a host reading)
//! go into a [`Calibrator`]; [`EventClock::map_to_host_ns`] maps an event through the fit.
//!
//! **The bound reported covers every timestamp mapped**, not only the current fit's anchors:
//! timestamps are mapped when their pass is resolved, with the fit of that moment, and a later
//! fit may have a smaller bound. Each mapping's own error bound is kept (the largest is
//! reported, [`Calibration::widened`]): the fit's bound when the event lies between the
//! anchors used; when it lies beyond them but before the latest anchor (one rejected as wide),
//! the larger of the fit's bound and that bracket's distance from the line (the true map is a
//! line through both); beyond every anchor, the fit's bound plus [`MAX_DRIFT`] per ns of
//! extrapolation. The timelines anchor before mapping an event beyond the latest anchor, so the
//! last case arises only when they must not wait (a stream being captured).

use crate::timeline::calibration::Calibration;
use crate::timeline::calibrator::{Anchor, Calibrator, MAX_DRIFT};
use crate::{timeline::HostClock, Error, Result};

/// An anchor this far (ms) from the reference becomes the new reference.
pub(crate) const REBASE_AFTER_MS: f32 = 4_000.0;

/// Anchors taken at construction (the narrowest are kept by the calibrator).
pub(crate) const FIRST_ANCHORS: usize = 16;

/// At a sync (or when asked), anchors are taken until one is used, at most this many: an
/// anchor on a stream that was idle is often slower (wider) than the next, back to back.
pub(crate) const ANCHOR_TRIES: usize = 4;

/// Device time from event readings, and the fit that maps it to host time.
#[derive(Debug)]
pub(crate) struct EventClock {
    timeline: &'static str,
    host: HostClock,
    /// Host ticks at construction: the origin of host ns.
    origin: u64,
    /// The current reference event's device ns (since the first reference).
    base_ns: u64,
    calibrator: Calibrator,
    /// The last anchor added, used or not.
    latest: Option<Anchor>,
    /// The largest error bound of a timestamp mapped so far.
    mapped_bound_ns: u64,
    rebases: u64,
}

/// Whether an anchor's event must become the new reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Rebase {
    /// Keep the reference.
    Keep,
    /// The anchor's event is the new reference: swap the two events.
    Swap,
}

impl EventClock {
    /// No anchor yet; host ns count from now. `resolution_ns`: the events' resolution (the
    /// calibrator's floor on bracket widths).
    pub(crate) fn new(timeline: &'static str, resolution_ns: u64) -> Self {
        let host = HostClock::new();
        let origin = host.ticks();
        EventClock {
            timeline,
            host,
            origin,
            base_ns: 0,
            calibrator: Calibrator::with_floor(resolution_ns),
            latest: None,
            mapped_bound_ns: 0,
            rebases: 0,
        }
    }

    /// The host clock read around anchors (the profiler's clock too).
    pub(crate) fn host_clock(&self) -> &HostClock {
        &self.host
    }

    /// The host ticks host ns count from.
    pub(crate) fn origin(&self) -> u64 {
        self.origin
    }

    /// Host ticks now (an anchor's bracket ends).
    pub(crate) fn ticks(&self) -> u64 {
        self.host.ticks()
    }

    /// Device ns of an event `ms` (elapsed time, possibly negative) after the reference.
    fn device_ns(&self, ms: f32) -> u64 {
        let delta = (f64::from(ms) * 1e6).round();
        (self.base_ns as f64 + delta).max(0.0) as u64
    }

    /// One anchor: host ticks before the event was recorded, its elapsed time from the
    /// reference, host ticks after it was known complete. Whether the calibrator used it, and
    /// whether its event becomes the new reference.
    pub(crate) fn add_anchor(&mut self, before: u64, ms: f32, after: u64) -> (bool, Rebase) {
        let device_ns = self.device_ns(ms);
        let anchor = Anchor {
            host_before_ns: self.host.ticks_to_ns(self.origin, before),
            device_ns,
            host_after_ns: self.host.ticks_to_ns(self.origin, after),
        };
        let used = self.calibrator.add(anchor);
        self.latest = Some(anchor);
        let rebase = if ms > REBASE_AFTER_MS {
            self.base_ns = device_ns;
            self.rebases += 1;
            Rebase::Swap
        } else {
            Rebase::Keep
        };
        (used, rebase)
    }

    /// Whether an event `ms` after the reference lies at or before the latest anchor (so its
    /// mapping is not an extrapolation).
    pub(crate) fn covers(&self, ms: f32) -> bool {
        self.latest
            .is_some_and(|a| self.device_ns(ms) <= a.device_ns)
    }

    /// Host ns (since construction) of an event `ms` after the reference, through the fit;
    /// its error bound is kept for [`EventClock::calibration`].
    pub(crate) fn map_to_host_ns(&mut self, ms: f32) -> Result<u64> {
        let fit = self
            .calibrator
            .calibration()
            .ok_or_else(|| Error::Timeline(format!("{}: no calibration anchor", self.timeline)))?;
        let device_ns = self.device_ns(ms);
        let bound = self.mapping_bound(&fit, device_ns);
        self.mapped_bound_ns = self.mapped_bound_ns.max(bound);
        Ok(fit.to_host_ns(device_ns))
    }

    /// How far `fit` can be from the true map at `device_ns` (see the module docs).
    fn mapping_bound(&self, fit: &Calibration, device_ns: u64) -> u64 {
        let Some((lo, hi)) = self.calibrator.span_device_ns() else {
            return fit.bound_ns;
        };
        if (lo..=hi).contains(&device_ns) {
            return fit.bound_ns;
        }
        if let Some(a) = self
            .latest
            .filter(|a| device_ns > hi && device_ns <= a.device_ns)
        {
            let at = fit.to_host_ns(a.device_ns);
            let off = at
                .abs_diff(a.host_before_ns)
                .max(at.abs_diff(a.host_after_ns))
                .saturating_add(1);
            return fit.bound_ns.max(off);
        }
        let beyond = if device_ns > hi {
            device_ns - hi
        } else {
            lo - device_ns
        };
        fit.bound_ns
            .saturating_add((beyond as f64 * MAX_DRIFT).ceil() as u64)
    }

    /// The fit so far, its bound raised to the largest error bound of a timestamp mapped.
    pub(crate) fn calibration(&self) -> Option<Calibration> {
        self.calibrator
            .calibration()
            .map(|fit| fit.widened(self.mapped_bound_ns))
    }

    /// Times an anchor became the new reference.
    pub(crate) fn rebases(&self) -> u64 {
        self.rebases
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spec/sync-modes.md "Calibration": a re-base keeps device time continuous, and readings
    /// after it are measured from the new reference.
    #[test]
    fn a_rebase_keeps_device_time_continuous() {
        let mut c = EventClock::new("test", 0);
        let t0 = c.ticks();
        assert_eq!(c.add_anchor(t0, 1.0, t0).1, Rebase::Keep);
        assert_eq!(c.device_ns(1.0), 1_000_000);
        assert_eq!(c.add_anchor(t0, 5_000.0, t0).1, Rebase::Swap);
        assert_eq!(c.rebases(), 1);
        // Now 0 ms is the new reference, 5 s of device time after the first one.
        assert_eq!(c.device_ns(0.0), 5_000_000_000);
        assert_eq!(
            c.device_ns(-2.0),
            4_998_000_000,
            "an event before the reference"
        );
        assert_eq!(c.add_anchor(t0, 10.0, t0).1, Rebase::Keep);
    }

    /// spec/sync-modes.md "Calibration": the bound reported covers every mapped timestamp,
    /// also one mapped beyond the anchors used (extrapolated), not only the fit's anchors.
    #[test]
    fn the_bound_covers_extrapolated_timestamps() {
        let mut c = EventClock::new("test", 0);
        let ms_per_tick = c.host.ticks_to_ns(0, 1_000_000) as f64 / 1e6 / 1e6;
        assert!(ms_per_tick > 0.0);
        // Two narrow anchors (width 0) at device 0 and 1 ms: an exact fit.
        let tick = |ms: f64| (ms / ms_per_tick) as u64 + c.origin;
        let (a, b) = (tick(0.0), tick(1.0));
        assert!(c.add_anchor(a, 0.0, a).0);
        assert!(c.add_anchor(b, 1.0, b).0);
        let fit_bound = c.calibration().unwrap().bound_ns;
        assert!(c.covers(1.0) && !c.covers(2.0));
        c.map_to_host_ns(0.5).unwrap();
        assert_eq!(c.calibration().unwrap().bound_ns, fit_bound, "interpolated");
        // 1 s beyond the last anchor: up to MAX_DRIFT per ns, 1 ms.
        c.map_to_host_ns(1_001.0).unwrap();
        let widened = c.calibration().unwrap().bound_ns;
        assert!(widened >= 1_000_000, "{widened}");
    }

    #[test]
    fn no_anchor_is_a_timeline_error() {
        let mut c = EventClock::new("cuda", 500);
        assert!(c.calibration().is_none());
        match c.map_to_host_ns(1.0) {
            Err(Error::Timeline(m)) => assert!(m.contains("cuda: no calibration anchor")),
            other => panic!("{other:?}"),
        }
    }
}
