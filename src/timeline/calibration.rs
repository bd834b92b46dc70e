//! The calibration a calibrated timeline reports: a map from device time to host time with
//! an error bound (spec/sync-modes.md "Calibration"), fitted over anchors by the device
//! timelines' calibrator (calibrator.rs).

/// A fitted map from device ns to host ns, and how far it can be off: a result a caller reads
/// (its map itself is internal; the profiler applies it).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Calibration {
    /// Host ns at device ns `device_ref_ns`.
    pub(crate) host_ref_ns: f64,
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub(crate) device_ref_ns: u64,
    /// Host ns per device ns, minus one: the drift of the device clock against the host's
    /// (0: the clocks tick at the same rate; `1e-6` is one µs per second).
    pub drift: f64,
    /// How far a mapped time can be from the true one, in ns, between the first and the last
    /// anchor used.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub bound_ns: u64,
    /// Anchors the fit used.
    #[serde(rename = "used")]
    pub anchors_used: u32,
    /// Anchors rejected as too wide.
    #[serde(rename = "rejected")]
    pub anchors_rejected: u32,
}

impl Calibration {
    /// One offset, no drift: `host = device + offset_ns`, within `bound_ns` (a model's, or
    /// a single anchor's).
    pub(crate) fn offset(offset_ns: i64, bound_ns: u64) -> Self {
        Calibration {
            host_ref_ns: offset_ns as f64,
            device_ref_ns: 0,
            drift: 0.0,
            bound_ns,
            anchors_used: 1,
            anchors_rejected: 0,
        }
    }

    /// Where device time `device_ns` lies on the host clock, in ns (0 at the earliest).
    #[cfg(any(feature = "hip", feature = "cuda", feature = "opencl", test))]
    pub(crate) fn to_host_ns(self, device_ns: u64) -> u64 {
        let d = device_ns as f64 - self.device_ref_ns as f64;
        (self.host_ref_ns + d * (1.0 + self.drift)).round().max(0.0) as u64
    }

    /// Host ns minus device ns at the reference device time (the map's offset).
    #[cfg(test)]
    pub(crate) fn offset_ns(&self) -> f64 {
        self.host_ref_ns - self.device_ref_ns as f64
    }

    /// The same map with its bound raised to at least `bound_ns` (a timeline reports the
    /// largest error of the timestamps it mapped, when that exceeds the fit's own).
    #[cfg(any(feature = "hip", feature = "cuda"))]
    pub(crate) fn widened(mut self, bound_ns: u64) -> Self {
        self.bound_ns = self.bound_ns.max(bound_ns);
        self
    }
}
