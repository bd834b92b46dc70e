//! [`DeviceRecords`]: the capability of a timeline that times bricks from the device's own
//! activity records (CUPTI) rather than from marks on the stream (spec/sync-modes.md "CUPTI",
//! "Timeline capabilities"). Such a timeline knows two things a marking timeline cannot: that a
//! brick launched nothing on the device (host-only), and what ran outside any brick. The
//! profiler carries both into the profile: a per-brick count of host-only calls
//! (`BrickProfile::host_only`) and the run's `RunMeta::outside_bricks`.

use crate::stats::OutsideBricks;

/// What a record-reading timeline knows beyond durations.
pub trait DeviceRecords {
    /// Whether the brick [`super::Timeline::resolve_ns`] resolved last had no device record
    /// (it resolved to 0 ns): a host-only call. Asked only after a resolve that gave 0.
    fn last_host_only(&self) -> bool;

    /// Device activity outside any brick so far (kernels, copies, sets, their device time).
    fn outside_bricks(&self) -> OutsideBricks;
}
