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
//! - `CuptiTimeline` (cargo feature `cupti`): CUPTI's own kernel records, nothing on the
//!   stream; `nvidia_timeline` chooses it or CUDA events (spec/sync-modes.md "CUPTI").
//!
//! The CUDA and HIP files beside them also read what the device reports about itself
//! (`CudaTimeline::device_report`, `HipTimeline::device_report`) for the roofline's peaks.
//!
//! [`Timeline`] is the dyn-compatible core; what only some timelines can do is a capability
//! trait in its own file ([`LaggedPolling`], [`Calibrated`], [`Capture`], [`GraphReplay`]),
//! reached through a getter whose default is `None` (spec/sync-modes.md "Timeline
//! capabilities"). [`BoxedTimeline`] puts any of them behind one type, for the per-thread front
//! doors.

/// The capability getters of a timeline that implements the capabilities itself, each
/// `Some(self)`: `capabilities!(polling, calibrated);` inside `impl Timeline for X`
/// (`calibrated` and `records` give both of their getters, so they never disagree).
macro_rules! capabilities {
    ($($cap:ident),+) => { $(capabilities!(@ $cap);)+ };
    (@ polling) => {
        fn polling(&mut self) -> Option<&mut dyn $crate::timeline::LaggedPolling> {
            Some(self)
        }
    };
    (@ calibrated) => {
        fn calibrated(&self) -> Option<&dyn $crate::timeline::Calibrated> {
            Some(self)
        }
        fn calibrated_mut(&mut self) -> Option<&mut dyn $crate::timeline::Calibrated> {
            Some(self)
        }
    };
    (@ capture) => {
        fn capture(&self) -> Option<&dyn $crate::timeline::Capture> {
            Some(self)
        }
    };
    (@ records) => {
        fn device_records(&self) -> Option<&dyn $crate::timeline::DeviceRecords> {
            Some(self)
        }
        fn device_records_mut(&mut self) -> Option<&mut dyn $crate::timeline::DeviceRecords> {
            Some(self)
        }
    };
    (@ graphs) => {
        fn graphs(&mut self) -> Option<&mut dyn $crate::timeline::GraphReplay> {
            Some(self)
        }
    };
}

mod boxed;
mod calibrated;
mod calibration;
#[cfg(any(feature = "hip", feature = "cuda", feature = "opencl", test))]
mod calibrator;
mod capture;
mod clock;
pub(crate) mod contract;
pub(crate) mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
#[cfg(feature = "cuda")]
mod cuda_device;
#[cfg(feature = "cupti")]
mod cupti;
mod device_counts;
mod device_records;
#[cfg(any(feature = "hip", feature = "cuda"))]
mod event_clock;
mod graph;
#[cfg(feature = "hip")]
mod hip;
#[cfg(feature = "hip")]
mod hip_device;
mod kind;
#[cfg(feature = "cupti")]
mod nvidia;
#[cfg(feature = "opencl")]
mod opencl;
#[cfg(feature = "opencl")]
mod opencl_device;
mod polling;
mod sim;
#[cfg(any(feature = "hip", feature = "cuda", feature = "opencl"))]
mod slots;
#[cfg(test)]
mod tests;

pub use boxed::BoxedTimeline;
pub use calibrated::Calibrated;
pub use calibration::Calibration;
pub use capture::Capture;
pub use clock::HostClock;
#[cfg(feature = "mock-clock")]
pub use clock::MockClock;
pub use contract::Mark;
pub(crate) use contract::INVALID_MARK;
pub(crate) use contract::{invalid_mark, is_captured, Timeline, FAILED_MARK};
pub(crate) use cpu::CpuTimeline;
#[cfg(feature = "cuda")]
pub use cuda::CudaTimeline;
#[cfg(feature = "cupti")]
pub use cupti::CuptiTimeline;
pub use device_counts::DeviceCounts;
pub use device_records::DeviceRecords;
pub use graph::{DeviceGraph, GraphProblem, GraphReplay, ReplayMarks};
#[cfg(feature = "hip")]
pub use hip::HipTimeline;
pub use kind::{TimelineKind, TimelineName};
#[cfg(feature = "cupti")]
pub(crate) use nvidia::default_thread_timeline;
#[cfg(feature = "cupti")]
pub use nvidia::{nvidia_timeline, NvidiaChoice, NvidiaTimeline};
#[cfg(feature = "opencl")]
pub use opencl::OpenClTimeline;
#[cfg(feature = "opencl")]
pub use opencl_device::OpenClDevice;
pub use polling::LaggedPolling;
pub use sim::{SimDevice, SimTimeline};
