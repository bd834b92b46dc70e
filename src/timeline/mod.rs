//! Timelines: what the profiler marks on the hot path, and how marks become durations.
//!
//! A [`Timeline`] is marked at `start_brick` and `stop_brick`, synchronized once, then asked for
//! the duration between each pair of marks. This is how GPU events work (record on a stream,
//! synchronize, read elapsed time), and it is also how the CPU clock is used, so one profiler
//! serves both. Implementations:
//! - [`CpuTimeline`] (the default): marks are host clock ticks, so host and device time coincide.
//! - [`SimDevice`]/[`SimTimeline`]: a simulated device stream whose kernels take known virtual
//!   durations asynchronously to the host; used by tests and the demo, exact and deterministic.
//! - `HipTimeline` (cargo feature `hip`): HIP events recorded on a `hipStream_t`.
//! - `OpenClTimeline` (cargo feature `opencl`): markers on a profiling OpenCL command queue;
//!   `OpenClDevice` opens the first device with such a queue.
//! - `CudaTimeline` (cargo feature `cuda`): CUDA events on the engine's `cudarc` stream.
//!
//! The CUDA and HIP files beside them also read what the device reports about itself
//! (`cuda_device_report`, `hip_device_report`) for the roofline's peaks.
//!
//! [`BoxedTimeline`] puts any of them behind one type, for the per-thread front doors.

mod boxed;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "cuda")]
mod cuda_device;
#[cfg(any(feature = "hip", feature = "cuda"))]
mod event_clock;
mod graph;
#[cfg(feature = "hip")]
mod hip;
#[cfg(feature = "hip")]
mod hip_device;
mod kind;
#[cfg(feature = "opencl")]
mod opencl;
#[cfg(feature = "opencl")]
mod opencl_device;
mod sim;
#[cfg(any(feature = "hip", feature = "cuda", feature = "opencl"))]
mod slots;

pub use boxed::BoxedTimeline;
pub use cpu::CpuTimeline;
#[cfg(feature = "cuda")]
pub use cuda::CudaTimeline;
#[cfg(feature = "cuda")]
pub use cuda_device::cuda_device_report;
pub use graph::{DeviceGraph, GraphProblem, GraphReplay, ReplayMarks};
#[cfg(feature = "hip")]
pub use hip::HipTimeline;
#[cfg(feature = "hip")]
pub use hip_device::hip_device_report;
pub use kind::{TimelineKind, TimelineName};
#[cfg(feature = "opencl")]
pub use opencl::OpenClTimeline;
#[cfg(feature = "opencl")]
pub use opencl_device::OpenClDevice;
pub use sim::{SimDevice, SimTimeline};

use crate::calibration::Calibration;
use crate::{Error, HostClock, Result};

/// A position on a timeline, as the timeline encodes it (ticks, an event slot, ...).
pub type Mark = u64;

/// The mark a timeline returns when it could not mark (for example, its event pool is empty).
/// Resolving it is an error; the profiler counts such a measurement as dropped.
pub const INVALID_MARK: Mark = u64::MAX;

/// The mark a device timeline returns when the runtime refused to mark (as opposed to an
/// exhausted pool, [`INVALID_MARK`]), so that resolving it blames the right cause.
#[allow(dead_code)] // used by the device timelines behind cargo features
pub(crate) const FAILED_MARK: Mark = u64::MAX - 1;

/// The clock the profiler marks. See the module docs and `spec/sync-modes.md`.
pub trait Timeline {
    /// True when marks are host clock ticks, so device time and host time are the same reading
    /// and the profiler can skip the second one. Known at compile time.
    const HOST_IS_DEVICE: bool = false;

    /// Which kind of timeline this is.
    fn kind(&self) -> TimelineKind;

    /// The finest duration the timeline can tell apart, in ns (1 unless the timeline says
    /// otherwise). Recorded in profiles; bricks whose mean call is shorter are flagged.
    fn resolution_ns(&self) -> u64 {
        1
    }

    /// The clock host (dispatch) time is measured with.
    fn host_clock(&self) -> HostClock;

    /// Mark the timeline now. Hot path: no allocation, no lock, no panic. `host_ticks` is the
    /// host clock reading the profiler just took. Returns [`INVALID_MARK`] if it cannot mark.
    fn mark(&mut self, host_ticks: u64) -> Mark;

    /// Wait until every mark made so far has been reached.
    fn sync(&mut self) -> Result<()>;

    /// Nanoseconds from `start` to `end`; both must precede the last [`Timeline::sync`].
    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64>;

    /// Where `mark` lies, in ns since the timeline's origin (for traces); after a sync.
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64>;

    /// Every mark made so far has been resolved: resources behind marks (event slots) may be
    /// reused. Marks made before this call must not be resolved after it.
    fn recycle(&mut self) {}

    /// Whether this pass's marks fell on a stream being captured into a graph (CUDA graphs), as
    /// the timeline found at the pass's first mark: they are not timestamps, so the profiler
    /// resolves none of them and counts the pass in [`crate::Counters::captured_passes`]
    /// (spec/sync-modes.md "CUDA"). False for timelines without capture.
    fn captured(&self) -> bool {
        false
    }

    /// The profiler ended a pass: what a timeline checks once per pass (CUDA: the current
    /// context, stream capture) is checked again at the next mark.
    fn pass_ended(&mut self) {}

    /// Whether the work enqueued before `mark` has completed, without waiting (the Lagged sync
    /// mode's poll: `cuEventQuery`, `hipEventQuery`, an OpenCL event's execution status).
    /// After `Ok(true)`, `mark` and every mark made before it resolve as after a sync.
    ///
    /// The default syncs and answers true: correct, but it waits; device timelines override
    /// it.
    fn reached(&mut self, mark: Mark) -> Result<bool> {
        let _ = mark;
        self.sync().map(|()| true)
    }

    /// `mark` and every mark made before it have been resolved: their resources may be reused
    /// (the Lagged mode resolves passes in the order they ended, and releases each pass's marks
    /// through its last). Marks made after `mark` stay valid. The default keeps everything
    /// until [`Timeline::recycle`].
    fn release_through(&mut self, mark: Mark) {
        let _ = mark;
    }

    /// How many more marks the timeline can make before its pool runs out (`usize::MAX`:
    /// no pool). The Lagged mode waits before a pass rather than let it run out.
    fn marks_left(&self) -> usize {
        usize::MAX
    }

    /// The map from device time to host time, with its error bound, when the timeline keeps
    /// one (spec/sync-modes.md "Calibration"). `None`: marks are host readings (CPU), or the
    /// timeline does not calibrate.
    fn calibration(&self) -> Option<Calibration> {
        None
    }

    /// Take one more calibration anchor, when the timeline calibrates: a bracket of two host
    /// readings around a device mark on a stream or queue the profiler owns, so it never
    /// waits for the engine's work. The default does nothing.
    fn anchor(&mut self) -> Result<()> {
        Ok(())
    }

    /// The host ticks that [`Timeline::timestamp_ns`] counts from, when it counts host ns (a
    /// calibrated device timeline). The profiler's trace then counts host slices from the same
    /// ticks, so that a device slice and its host dispatch line up (spec/sync-modes.md
    /// "Calibration"). `None` (the default): the trace keeps its own origin, the profiler's
    /// construction (the simulated device, whose clock is its own).
    fn origin_ticks(&self) -> Option<u64> {
        None
    }

    /// The timeline's graph-replay capability, when it can time the replays of a graph captured
    /// from its stream (spec/sync-modes.md "Graph capture"). `None` (the default): replays are
    /// counted, not timed.
    fn graphs(&mut self) -> Option<&mut dyn GraphReplay> {
        None
    }
}

/// The error for resolving [`INVALID_MARK`] or a mark of a recycled generation.
pub(crate) fn invalid_mark(timeline: &'static str) -> Error {
    Error::InvalidMark { timeline }
}
