//! The OpenCL timeline (cargo feature `opencl`): marks are markers enqueued on an in-order
//! command queue with profiling enabled; a mark's position is the marker's
//! `CL_PROFILING_COMMAND_END`, the moment every command enqueued before it had finished.
//!
//! - **Hot path** (`mark`): one `clEnqueueMarkerWithWaitList`; the returned `cl_event` goes into
//!   a slot of a buffer allocated at construction. Nothing blocks, nothing is allocated on our
//!   side (the driver allocates its event object, as it does for every command).
//! - **Sync**: one anchor marker and one `clFinish` per call, so one wait per pass in Deferred
//!   mode. Right after the wait the host clock is read: the (anchor marker, host tick) pair
//!   re-anchors device timestamps on the host clock at every sync, so device slices line up with
//!   host slices in traces and precision never decays with the run's length.
//! - **Resolve**: `clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)` of the two markers, in ns.
//! - **Recycle** (after every pending brick is resolved): the events are released and the slots
//!   reused by the next generation of marks.
//!
//! The slot buffer is sized with the profiler's pending buffer (`2 * pending_capacity + 2`), so
//! the profiler's flush-when-full keeps it from running out; a mark beyond it is invalid and
//! counted as dropped (see `spec/sync-modes.md`, "OpenCL").

use std::ptr;

use opencl3::command_queue::{
    enqueue_marker_with_wait_list, finish, get_command_queue_info, release_command_queue,
    retain_command_queue, CommandQueue, CL_QUEUE_DEVICE, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
    CL_QUEUE_PROFILING_ENABLE, CL_QUEUE_PROPERTIES,
};
use opencl3::device::Device;
use opencl3::error_codes::error_text;
use opencl3::event::{get_event_profiling_info, release_event, CL_PROFILING_COMMAND_END};
use opencl3::types::{cl_command_queue, cl_event, cl_int};

use super::slots::{slots_for, MarkSlots};
use super::{Mark, Timeline, TimelineKind, FAILED_MARK, INVALID_MARK};
use crate::{Error, HostClock, Result};

/// Turn a raw OpenCL status into an [`Error::OpenCl`], naming the call and, when the failure
/// belongs to something else (earlier asynchronous work), saying so.
pub(crate) fn cl_error(call: &'static str, code: cl_int, context: &str) -> Error {
    Error::OpenCl {
        call,
        code,
        message: format!("{}{context}", error_text(code)),
    }
}

/// OpenCL markers on one in-order, profiling-enabled command queue. Not `Send`: use it on the
/// thread that enqueues the engine's work.
///
/// ```no_run
/// # fn main() -> brickprof::Result<()> {
/// use brickprof::{BrickId, BrickProfiler, OpenClDevice, ProfilerConfig};
/// let device = OpenClDevice::first()?; // context + profiling queue on the first device
/// let config = ProfilerConfig::default();
/// let timeline = device.timeline(config.pending_capacity)?;
/// let mut prof = BrickProfiler::with_timeline(config, timeline)?;
/// let t = prof.start_brick(BrickId::RmsNorm);
/// // enqueue the kernel on device.queue() here
/// prof.stop_brick(t, 1);
/// prof.finalize()?; // one clFinish, every brick resolved from its markers
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct OpenClTimeline {
    queue: cl_command_queue,
    /// Marker events of the current generation; capacity fixed at construction.
    events: Vec<cl_event>,
    slots: MarkSlots,
    clock: HostClock,
    /// Host ticks at construction: the origin of [`Timeline::timestamp_ns`].
    origin: u64,
    /// Device time of the last sync's anchor marker, and host ns since `origin` read right
    /// after the wait returned.
    anchor_device_ns: u64,
    anchor_host_ns: u64,
    resolution_ns: u64,
    syncs: u64,
    /// The first marker enqueue that failed since the last recycle (not a pool exhaustion).
    mark_error: Option<cl_int>,
}

impl OpenClTimeline {
    /// A timeline on the engine's `queue`, with room for the marks of `pending_capacity`
    /// measurements between resolves (`2 * pending_capacity + 2` marker slots: pass the
    /// profiler's [`crate::ProfilerConfig::pending_capacity`]). The queue must be in order and
    /// have `CL_QUEUE_PROFILING_ENABLE`; it is retained, so it outlives this timeline.
    pub fn new(queue: &CommandQueue, pending_capacity: usize) -> Result<Self> {
        let capacity = slots_for("opencl", pending_capacity)?;
        let raw = queue.get();
        let props = get_command_queue_info(raw, CL_QUEUE_PROPERTIES)
            .map_err(|c| cl_error("clGetCommandQueueInfo", c, ""))?
            .to_ulong();
        if props & CL_QUEUE_PROFILING_ENABLE == 0 {
            return Err(Error::InvalidArgument(
                "OpenCL timeline: the command queue was created without \
                 CL_QUEUE_PROFILING_ENABLE, so markers carry no timestamps; create it with that \
                 property (OpenClDevice::first does)"
                    .into(),
            ));
        }
        if props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0 {
            return Err(Error::InvalidArgument(
                "OpenCL timeline: the command queue is out of order, so a marker does not \
                 bound the kernels enqueued before it; use an in-order queue"
                    .into(),
            ));
        }
        let device = get_command_queue_info(raw, CL_QUEUE_DEVICE)
            .map_err(|c| cl_error("clGetCommandQueueInfo", c, ""))?
            .to_ptr();
        let resolution_ns = Device::new(device as _)
            .profiling_timer_resolution()
            .map_err(|e| cl_error("clGetDeviceInfo", e.0, ""))?
            .max(1) as u64;
        // SAFETY: raw is a live queue (we hold a reference to its owner); retained once here,
        // released once in Drop.
        unsafe { retain_command_queue(raw) }
            .map_err(|c| cl_error("clRetainCommandQueue", c, ""))?;
        let clock = HostClock::new();
        let origin = clock.ticks();
        let mut t = OpenClTimeline {
            queue: raw,
            events: Vec::with_capacity(capacity),
            slots: MarkSlots::new("opencl", capacity),
            clock,
            origin,
            anchor_device_ns: 0,
            anchor_host_ns: 0,
            resolution_ns,
            syncs: 0,
            mark_error: None,
        };
        t.anchor()?; // a first anchor, so timestamps are meaningful from the first sync on
        Ok(t)
    }

    /// Number of marker slots (marks between two recycles).
    pub fn capacity(&self) -> usize {
        self.events.capacity()
    }

    /// Waits on the queue so far (one per [`Timeline::sync`]).
    pub fn syncs(&self) -> u64 {
        self.syncs
    }

    /// Enqueue an anchor marker, wait for the queue, read the host clock, and keep the pair.
    fn anchor(&mut self) -> Result<()> {
        // SAFETY: the queue is retained by us; no wait list.
        let anchor = unsafe { enqueue_marker_with_wait_list(self.queue, 0, ptr::null()) }
            .map_err(|c| cl_error("clEnqueueMarkerWithWaitList", c, " (the sync's anchor)"))?;
        let waited = finish(self.queue);
        let host = self.clock.ticks();
        let device = waited
            .map_err(|c| {
                cl_error(
                    "clFinish",
                    c,
                    " (an error of earlier asynchronous work on the queue, surfacing at this \
                     sync: check the kernels enqueued since the previous sync)",
                )
            })
            .and_then(|()| marker_end("the sync's anchor", anchor));
        // SAFETY: anchor is our event, released once.
        let _ = unsafe { release_event(anchor) };
        self.anchor_device_ns = device?;
        self.anchor_host_ns = self.clock.ticks_to_ns(self.origin, host);
        Ok(())
    }

    fn event(&self, mark: Mark) -> Result<cl_event> {
        let index = self.slots.slot(mark, || {
            let code = self.mark_error.unwrap_or(-1);
            cl_error(
                "clEnqueueMarkerWithWaitList",
                code,
                " (a mark on the hot path; the measurement was dropped)",
            )
        })?;
        Ok(self.events[index])
    }

    fn device_ns(&self, mark: Mark) -> Result<u64> {
        marker_end("a brick's marker", self.event(mark)?)
    }

    fn release_all(&mut self) {
        for e in self.events.drain(..) {
            // SAFETY: each event came from clEnqueueMarkerWithWaitList and is released once.
            let _ = unsafe { release_event(e) };
        }
    }
}

/// `CL_PROFILING_COMMAND_END` of a completed marker, in device ns.
fn marker_end(what: &'static str, event: cl_event) -> Result<u64> {
    get_event_profiling_info(event, CL_PROFILING_COMMAND_END)
        .map(|v| v.to_ulong())
        .map_err(|c| {
            let context = match what {
                "the sync's anchor" => " (reading the sync's anchor marker)",
                _ => " (reading a brick's marker)",
            };
            cl_error("clGetEventProfilingInfo", c, context)
        })
}

impl Timeline for OpenClTimeline {
    fn kind(&self) -> TimelineKind {
        TimelineKind::OpenCl
    }

    fn host_clock(&self) -> HostClock {
        self.clock.clone()
    }

    /// The device's profiling timer resolution (`CL_DEVICE_PROFILING_TIMER_RESOLUTION`).
    fn resolution_ns(&self) -> u64 {
        self.resolution_ns
    }

    #[inline]
    fn mark(&mut self, _host_ticks: u64) -> Mark {
        if self.slots.free().is_none() {
            return INVALID_MARK; // pool exhausted: resolving says so, not a driver error
        }
        // SAFETY: the queue is retained by us; no wait list; the event is stored and released
        // in recycle/drop.
        match unsafe { enqueue_marker_with_wait_list(self.queue, 0, ptr::null()) } {
            Ok(e) => {
                self.events.push(e); // below the capacity reserved at construction
                self.slots.take()
            }
            Err(code) => {
                self.mark_error.get_or_insert(code);
                FAILED_MARK
            }
        }
    }

    fn sync(&mut self) -> Result<()> {
        self.syncs += 1;
        self.anchor()?;
        self.slots.synced();
        Ok(())
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        let a = self.device_ns(start)?;
        let b = self.device_ns(end)?;
        Ok(b.saturating_sub(a))
    }

    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        let at = self.device_ns(mark)?;
        Ok(if at <= self.anchor_device_ns {
            self.anchor_host_ns
                .saturating_sub(self.anchor_device_ns - at)
        } else {
            self.anchor_host_ns + (at - self.anchor_device_ns)
        })
    }

    fn recycle(&mut self) {
        self.release_all();
        self.slots.recycle();
        self.mark_error = None;
    }
}

impl Drop for OpenClTimeline {
    fn drop(&mut self) {
        self.release_all();
        // SAFETY: retained once in `new`, released once here.
        let _ = unsafe { release_command_queue(self.queue) };
    }
}
