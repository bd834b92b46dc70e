//! [`DeviceRecords`]: the capability of a timeline that times bricks from the device's own
//! activity records (CUPTI) rather than from marks on the stream (spec/sync-modes.md "CUPTI",
//! "Timeline capabilities"). Such a timeline knows two things a marking timeline cannot: that a
//! brick launched nothing on the device (host-only), and what ran outside any brick. The
//! profiler carries both into the profile: a per-brick count of host-only calls
//! (`BrickProfile::host_only`) and the run's `RunMeta::outside_bricks`.
//!
//! Collecting records can cost the device's launches something even when nothing is marked
//! (CUPTI's kernel records cost host time at each launch), so such a timeline may also switch
//! its tracing per pass ([`DeviceRecords::set_traced`]), for the passes the sampling plan picks
//! (spec/sync-modes.md "Sampled tracing"). The profiler decides once per pass, at the pass
//! boundary, and calls it only when the decision changes: nothing is chosen on the hot path.

use crate::stats::OutsideBricks;
use crate::Result;

/// What a record-reading timeline knows beyond durations, and its tracing switched per pass.
pub trait DeviceRecords {
    /// Whether the brick [`super::Timeline::resolve_ns`] resolved last had no device record
    /// (it resolved to 0 ns): a host-only call. Asked only after a resolve that gave 0.
    fn last_host_only(&self) -> bool;

    /// Device activity outside any brick so far (kernels, copies, sets, their device time).
    fn outside_bricks(&self) -> OutsideBricks;

    /// Trace the passes from now on (`true`) or stop tracing them (`false`). Stopping with
    /// `detach` also detaches from the tracer (`cuptiFinalize`), so that untraced passes cost
    /// exactly what no profiler costs; tracing again re-attaches. Records of calls made while
    /// tracing are kept: they still resolve. The default does nothing (records that cost
    /// nothing unmarked).
    fn set_traced(&mut self, traced: bool, detach: bool) -> Result<()> {
        let _ = (traced, detach);
        Ok(())
    }
}
