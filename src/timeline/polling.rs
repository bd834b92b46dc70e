//! [`LaggedPolling`]: the capability the Lagged sync mode polls (spec/sync-modes.md "Timeline
//! capabilities"). A timeline without it still works in Lagged mode: the profiler syncs at
//! every pass end instead and counts each one in [`crate::model::Counters::blocking_waits`].

use super::Mark;
use crate::Result;

/// Asking, without waiting, whether marks were reached, and releasing marks in order, so that
/// several passes can be in flight (`cuEventQuery`, `hipEventQuery`, an OpenCL event's status).
pub trait LaggedPolling {
    /// Whether the work enqueued before `mark` has completed, without waiting. After
    /// `Ok(true)`, `mark` and every mark made before it resolve as after a sync.
    fn reached(&mut self, mark: Mark) -> Result<bool>;

    /// `mark` and every mark made before it have been resolved: their resources may be reused
    /// (the Lagged mode resolves passes in the order they ended, and releases each pass's marks
    /// through its last). Marks made after `mark` stay valid.
    fn release_through(&mut self, mark: Mark);

    /// How many more marks the timeline can make before its pool runs out (`usize::MAX`: no
    /// pool). The Lagged mode waits before a pass rather than let it run out.
    fn marks_left(&self) -> usize;
}
