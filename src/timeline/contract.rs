//! The core every timeline implements: the [`Timeline`] trait and its marks. Its own file so
//! that the trait is reached by one path, the crate root's.

use super::{Calibrated, Capture, DeviceRecords, GraphReplay, LaggedPolling, TimelineKind};
use crate::{timeline::HostClock, Error, Result};

/// A position on a timeline, as the timeline encodes it (ticks, an event slot, ...).
pub type Mark = u64;

/// The mark a timeline returns when it could not mark (for example, its event pool is empty).
/// Resolving it is an error; the profiler counts such a measurement as dropped.
pub(crate) const INVALID_MARK: Mark = u64::MAX;

/// The mark a device timeline returns when the runtime refused to mark (as opposed to an
/// exhausted pool, [`INVALID_MARK`]), so that resolving it blames the right cause.
#[allow(dead_code)] // used by the device timelines behind cargo features
pub(crate) const FAILED_MARK: Mark = u64::MAX - 1;

/// The clock the profiler marks: the core every timeline implements (see the module docs and
/// `spec/sync-modes.md` "Timeline capabilities"). Dyn-compatible: [`BoxedTimeline`](super::BoxedTimeline) is a
/// `Box<dyn Timeline>`. What only some timelines can do is a capability trait, reached through
/// a getter whose default (`None`) is harmless: [`LaggedPolling`], [`Calibrated`], [`Capture`],
/// [`GraphReplay`]. A new concern gets a new capability, not more methods here.
pub trait Timeline {
    /// Which kind of timeline this is.
    fn kind(&self) -> TimelineKind;

    /// True when marks are host clock ticks, so device time and host time are the same reading
    /// and the profiler can skip the second one. Must not change over the timeline's life;
    /// implement it as a constant so that a generic profiler folds it (the CPU timeline's hot
    /// path reads the clock once per mark).
    #[inline(always)]
    fn host_is_device(&self) -> bool {
        false
    }

    /// The finest duration the timeline can tell apart, in ns (1 unless the timeline says
    /// otherwise). Recorded in profiles; bricks whose mean call is shorter are flagged.
    fn resolution_ns(&self) -> u64 {
        1
    }

    /// What one mark adds to the device time it measures, in ns, when the timeline knows it
    /// (spec/sync-modes.md "Observer effect"): a CUDA event costs the device about 3.3 µs on
    /// an H200. Recorded in profiles; the table flags bricks within 2x of it. `None` (the
    /// default) where a mark adds nothing measurable to device time (the host clock, CUPTI's
    /// records) or where it has not been measured.
    fn mark_cost_ns(&self) -> Option<u64> {
        None
    }

    /// The clock host (dispatch) time is measured with.
    fn host_clock(&self) -> HostClock;

    /// Mark the timeline now. Hot path: no allocation, no lock, no panic. `host_ticks` is the
    /// host clock reading the profiler just took. If it cannot mark, returns a mark its
    /// [`Timeline::resolve_ns`] rejects (the built-in timelines use `u64::MAX`).
    fn mark(&mut self, host_ticks: u64) -> Mark;

    /// Wait until every mark made so far has been reached.
    fn sync(&mut self) -> Result<()>;

    /// Nanoseconds from `start` to `end`; both must precede the last [`Timeline::sync`] (or a
    /// [`LaggedPolling::reached`] that answered true).
    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64>;

    /// Where `mark` lies, in ns since the timeline's origin (for traces); after a sync.
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64>;

    /// Every mark made so far has been resolved: resources behind marks (event slots) may be
    /// reused. Marks made before this call must not be resolved after it.
    fn recycle(&mut self) {}

    /// The profiler ended a pass: what a timeline checks once per pass (CUDA: the current
    /// context, stream capture) is checked again at the next mark.
    fn pass_ended(&mut self) {}

    /// The Lagged mode's polling, when the timeline can ask without waiting whether a mark was
    /// reached. `None` (the default): Lagged mode syncs at every pass end instead and counts
    /// each sync in [`crate::model::Counters::blocking_waits`] (correct, visible, but blocking).
    fn polling(&mut self) -> Option<&mut dyn LaggedPolling> {
        None
    }

    /// The device-to-host time map, when the timeline keeps one. `None` (the default): marks
    /// are host readings (CPU), or the timeline does not calibrate; no bound is reported.
    fn calibrated(&self) -> Option<&dyn Calibrated> {
        None
    }

    /// [`Timeline::calibrated`], to take anchors. Implement both or neither.
    fn calibrated_mut(&mut self) -> Option<&mut dyn Calibrated> {
        None
    }

    /// Stream capture, when the timeline's stream can be captured into a graph. `None` (the
    /// default): no pass is ever captured.
    fn capture(&self) -> Option<&dyn Capture> {
        None
    }

    /// The timeline's graph-replay capability, when it can time the replays of a graph captured
    /// from its stream (spec/sync-modes.md "Graph capture"). `None` (the default): replays are
    /// counted, not timed.
    fn graphs(&mut self) -> Option<&mut dyn GraphReplay> {
        None
    }

    /// What a timeline that reads the device's own records knows beyond durations: host-only
    /// bricks and activity outside any brick, and its tracing switched per pass
    /// ([`DeviceRecords`]: CUPTI). `None` (the default): a marking timeline, which cannot tell,
    /// and whose marks cost only when made.
    fn device_records(&self) -> Option<&dyn DeviceRecords> {
        None
    }

    /// [`Timeline::device_records`], to switch tracing. Implement both or neither.
    fn device_records_mut(&mut self) -> Option<&mut dyn DeviceRecords> {
        None
    }
}

/// Whether `timeline`'s current pass is being captured into a graph (false without
/// [`Capture`]).
#[inline]
pub(crate) fn is_captured<T: Timeline + ?Sized>(timeline: &T) -> bool {
    timeline.capture().is_some_and(Capture::captured)
}

/// The error for resolving [`INVALID_MARK`] or a mark of a recycled generation.
pub(crate) fn invalid_mark(timeline: &'static str) -> Error {
    Error::InvalidMark { timeline }
}
