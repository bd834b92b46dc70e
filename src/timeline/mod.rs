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
//! [`BoxedTimeline`] puts any of them behind one type, for the per-thread front doors.

mod boxed;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "hip")]
mod hip;
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
#[cfg(feature = "hip")]
pub use hip::HipTimeline;
pub use kind::{TimelineKind, TimelineName};
#[cfg(feature = "opencl")]
pub use opencl::OpenClTimeline;
#[cfg(feature = "opencl")]
pub use opencl_device::OpenClDevice;
pub use sim::{SimDevice, SimTimeline};

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
}

/// The error for resolving [`INVALID_MARK`] or a mark of a recycled generation.
pub(crate) fn invalid_mark(timeline: &'static str) -> Error {
    Error::InvalidMark { timeline }
}
