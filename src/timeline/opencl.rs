//! The OpenCL timeline (cargo feature `opencl`): marks are markers enqueued on an in-order
//! command queue with profiling enabled; a mark's position is the marker's
//! `CL_PROFILING_COMMAND_END`, the moment every command enqueued before it had finished.
//!
//! - **Hot path** (`mark`): one `clEnqueueMarkerWithWaitList`; the returned `cl_event` goes into
//!   a slot of a ring allocated at construction. Nothing blocks, nothing is allocated on our
//!   side (the driver allocates its event object, as it does for every command).
//! - **Sync**: one `clFinish` of the engine's queue per call, so one wait per pass in Deferred
//!   mode; then one calibration anchor.
//! - **Reached** (Lagged mode): the marker's `CL_EVENT_COMMAND_EXECUTION_STATUS`, without
//!   waiting (and a `clFlush`, so that enqueued work is submitted).
//! - **Calibration**: anchors are markers on a queue of the same device that the timeline owns
//!   (never the engine's), bracketed by host readings; offset and drift are fitted over them
//!   (spec/sync-modes.md "Calibration"). Sixteen at construction, one per sync, and one every
//!   few passes in Lagged mode.
//! - **Resolve**: `clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)` of the two markers, in ns.
//! - **Release** (marks resolved, oldest first): the events are released and their slots
//!   reused.
//!
//! The ring is sized with the profiler's pending buffer (`2 * pending_capacity + 2` plus one
//! end-of-pass mark per pass in flight), so the profiler's flush-when-full keeps it from
//! running out; a mark beyond it is invalid and counted as dropped (see
//! `spec/sync-modes.md`, "OpenCL").

use std::ptr;

use opencl3::command_queue::{
    create_command_queue_with_properties, enqueue_marker_with_wait_list, finish, flush,
    get_command_queue_info, release_command_queue, retain_command_queue, CommandQueue,
    CL_QUEUE_CONTEXT, CL_QUEUE_DEVICE, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
    CL_QUEUE_PROFILING_ENABLE, CL_QUEUE_PROPERTIES,
};
use opencl3::device::Device;
use opencl3::error_codes::error_text;
use opencl3::event::{
    get_event_info, get_event_profiling_info, release_event, CL_COMPLETE,
    CL_EVENT_COMMAND_EXECUTION_STATUS, CL_PROFILING_COMMAND_END,
};
use opencl3::types::{cl_command_queue, cl_event, cl_int, cl_queue_properties};

use super::slots::{slots_for, MarkSlots};
use super::{Calibrated, LaggedPolling, Mark, Timeline, TimelineKind, FAILED_MARK, INVALID_MARK};
use crate::timeline::calibration::Calibration;
use crate::timeline::calibrator::{Anchor, Calibrator};
use crate::timeline::DeviceCounts;
use crate::{timeline::HostClock, Error, Result};

/// Anchors taken at construction (the narrowest ones are kept).
const FIRST_ANCHORS: usize = 16;

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
/// use brickprof::{BrickId, BrickProfiler, timeline::{OpenClDevice, OpenClTimeline}, ProfilerConfig};
/// let device = OpenClDevice::first()?; // context + profiling queue on the first device
/// let config = ProfilerConfig::default();
/// let timeline = OpenClTimeline::new(&device.queue, config.pending_capacity)?;
/// let mut prof = BrickProfiler::with_timeline(config, timeline)?;
/// let t = prof.start_brick(BrickId::RmsNorm);
/// // enqueue the kernel on device.queue here
/// prof.stop_brick(t, 1);
/// prof.finalize()?; // one clFinish, every brick resolved from its markers
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct OpenClTimeline {
    queue: cl_command_queue,
    /// A queue of the same device, owned by the timeline: calibration anchors go there.
    anchor_queue: cl_command_queue,
    /// Marker events, a ring indexed by mark number (null: a free slot); allocated at
    /// construction.
    events: Vec<cl_event>,
    slots: MarkSlots,
    clock: HostClock,
    /// Host ticks at construction: the origin of [`Timeline::timestamp_ns`].
    origin: u64,
    calibrator: Calibrator,
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
            return Err(Error::UnsuitableStream {
                timeline: "opencl",
                reason: "the command queue was created without \
                 CL_QUEUE_PROFILING_ENABLE, so markers carry no timestamps; create it with that \
                 property (OpenClDevice::first does)",
            });
        }
        if props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0 {
            return Err(Error::UnsuitableStream {
                timeline: "opencl",
                reason: "the command queue is out of order, so a marker does not \
                 bound the kernels enqueued before it; use an in-order queue",
            });
        }
        let device = get_command_queue_info(raw, CL_QUEUE_DEVICE)
            .map_err(|c| cl_error("clGetCommandQueueInfo", c, ""))?
            .to_ptr();
        let resolution_ns = Device::new(device as _)
            .profiling_timer_resolution()
            .map_err(|e| cl_error("clGetDeviceInfo", e.0, ""))?
            .max(1) as u64;
        let context = get_command_queue_info(raw, CL_QUEUE_CONTEXT)
            .map_err(|c| cl_error("clGetCommandQueueInfo", c, ""))?
            .to_ptr();
        let props: [cl_queue_properties; 3] =
            [CL_QUEUE_PROPERTIES as _, CL_QUEUE_PROFILING_ENABLE as _, 0];
        // SAFETY: context and device come from the live queue; props is 0-terminated. The new
        // queue is released once in Drop (or below on error).
        let anchor_queue = unsafe {
            create_command_queue_with_properties(context as _, device as _, props.as_ptr())
        }
        .map_err(|c| {
            cl_error(
                "clCreateCommandQueueWithProperties",
                c,
                " (the anchor queue)",
            )
        })?;
        // SAFETY: raw is a live queue (we hold a reference to its owner); retained once here,
        // released once in Drop.
        if let Err(c) = unsafe { retain_command_queue(raw) } {
            // SAFETY: created above, released once.
            let _ = unsafe { release_command_queue(anchor_queue) };
            return Err(cl_error("clRetainCommandQueue", c, ""));
        }
        let clock = HostClock::new();
        let origin = clock.ticks();
        let mut t = OpenClTimeline {
            queue: raw,
            anchor_queue,
            events: vec![ptr::null_mut(); capacity],
            slots: MarkSlots::new("opencl", capacity),
            clock,
            origin,
            calibrator: Calibrator::default(),
            resolution_ns,
            syncs: 0,
            mark_error: None,
        };
        for _ in 0..FIRST_ANCHORS {
            t.take_anchor()?;
        }
        Ok(t)
    }

    /// What the timeline counted so far (its marker slots, live marks at most; waits on the
    /// queue, one per [`Timeline::sync`]).
    pub fn counts(&self) -> DeviceCounts {
        DeviceCounts {
            capacity: self.events.len(),
            syncs: self.syncs,
            ..DeviceCounts::default()
        }
    }

    /// One calibration anchor: a host reading, a marker on the timeline's own queue, a wait
    /// for that queue only, a host reading.
    fn take_anchor(&mut self) -> Result<()> {
        let before = self.clock.ticks();
        // SAFETY: the anchor queue is ours; no wait list.
        let marker = unsafe { enqueue_marker_with_wait_list(self.anchor_queue, 0, ptr::null()) }
            .map_err(|c| cl_error("clEnqueueMarkerWithWaitList", c, " (a calibration anchor)"))?;
        let waited = finish(self.anchor_queue);
        let after = self.clock.ticks();
        let device = waited
            .map_err(|c| cl_error("clFinish", c, " (the anchor queue)"))
            .and_then(|()| marker_end("a calibration anchor", marker));
        // SAFETY: our event, released once.
        let _ = unsafe { release_event(marker) };
        self.calibrator.add(Anchor {
            host_before_ns: self.clock.ticks_to_ns(self.origin, before),
            device_ns: device?,
            host_after_ns: self.clock.ticks_to_ns(self.origin, after),
        });
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

    /// Release the events of live marks up to and including `last`.
    fn release_events_through(&mut self, last: Mark) {
        let (from, next) = self.slots.live();
        let to = next.min(last.saturating_add(1));
        for m in from..to {
            let size = self.events.len() as u64;
            let slot = &mut self.events[(m % size) as usize];
            if !slot.is_null() {
                // SAFETY: each event came from clEnqueueMarkerWithWaitList and is released
                // once (its slot is nulled).
                let _ = unsafe { release_event(*slot) };
                *slot = ptr::null_mut();
            }
        }
    }

    fn release_all(&mut self) {
        self.release_events_through(u64::MAX - 2);
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
                if let Some(slot) = self.slots.free() {
                    self.events[slot] = e; // a free slot of the ring allocated at construction
                }
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
        finish(self.queue).map_err(|c| {
            cl_error(
                "clFinish",
                c,
                " (an error of earlier asynchronous work on the queue, surfacing at this \
                 sync: check the kernels enqueued since the previous sync)",
            )
        })?;
        self.slots.synced();
        self.take_anchor()
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        let a = self.device_ns(start)?;
        let b = self.device_ns(end)?;
        Ok(b.saturating_sub(a))
    }

    /// The marker's device time mapped to host ns since the timeline's origin by the
    /// calibration fitted so far.
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        let at = self.device_ns(mark)?;
        let fit = self
            .calibrator
            .calibration()
            .ok_or_else(|| Error::Timeline("opencl: no calibration anchor".into()))?;
        Ok(fit.to_host_ns(at))
    }

    fn recycle(&mut self) {
        self.release_all();
        self.slots.recycle();
        self.mark_error = None;
    }

    capabilities!(polling, calibrated);
}

impl LaggedPolling for OpenClTimeline {
    fn reached(&mut self, mark: Mark) -> Result<bool> {
        let slot = self.slots.live_slot(mark)?;
        if self.slots.is_ready(mark) {
            return Ok(true);
        }
        let status = get_event_info(self.events[slot], CL_EVENT_COMMAND_EXECUTION_STATUS)
            .map_err(|c| cl_error("clGetEventInfo", c, " (asking whether a pass ended)"))?
            .to_int();
        if status == CL_COMPLETE as cl_int {
            self.slots.reached(mark);
            return Ok(true);
        }
        if status < 0 {
            return Err(cl_error(
                "clGetEventInfo",
                status,
                " (an error of earlier asynchronous work on the queue: check the kernels \
                 enqueued in the pass)",
            ));
        }
        // Not yet: make sure what was enqueued is submitted, without waiting.
        flush(self.queue).map_err(|c| cl_error("clFlush", c, ""))?;
        Ok(false)
    }

    fn release_through(&mut self, mark: Mark) {
        self.release_events_through(mark);
        self.slots.release_through(mark);
    }

    fn marks_left(&self) -> usize {
        self.slots.left()
    }
}

impl Calibrated for OpenClTimeline {
    fn calibration(&self) -> Option<Calibration> {
        self.calibrator.calibration()
    }

    fn anchor(&mut self) -> Result<()> {
        self.take_anchor()
    }

    fn origin_ticks(&self) -> Option<u64> {
        Some(self.origin)
    }
}

impl Drop for OpenClTimeline {
    fn drop(&mut self) {
        self.release_all();
        // SAFETY: retained once in `new`, released once here; the anchor queue was created
        // in `new` and is released once here.
        let _ = unsafe { release_command_queue(self.queue) };
        let _ = unsafe { release_command_queue(self.anchor_queue) };
    }
}
