//! The CUDA timeline (cargo feature `cuda`): marks are CUDA events recorded on the engine's
//! `cudarc` stream (`Arc<CudaStream>`, as candle holds it). `cudarc` loads the driver
//! (`libcuda.so`) at run time, so the feature builds and its tests run without CUDA installed.
//!
//! The same protocol as HIP (spec/sync-modes.md "CUDA"): a pool of `2 * pending_capacity + 2`
//! events created once with timing enabled (`CU_EVENT_DEFAULT`; cudarc's default event disables
//! timing), recorded on the hot path with one `cuEventRecord`; one `cuStreamSynchronize` per
//! sync; resolution about 0.5 µs.
//!
//! **Calibration** (spec/sync-modes.md "Calibration"): the timeline creates a stream of its own
//! on the engine's context (raw, so cudarc's multi-stream mode of the engine's context is left
//! as it is). An anchor is a host reading, a `cuEventRecord` on that stream, a
//! `cuEventSynchronize` of that event only (never the engine's stream), a host reading; its
//! device time is the elapsed time from a reference event on the same stream
//! ([`super::event_clock`]). Sixteen anchors at construction, one after every sync, and one
//! whenever the profiler asks ([`Calibrated::anchor`], Lagged mode); offset and drift are fitted
//! over them and [`Timeline::timestamp_ns`] maps through the fit.
//!
//! Once per pass, at the pass's first mark (never per mark), the timeline
//! - makes the stream's context current on the calling thread if it is not (cudarc's own calls
//!   bind the same way, and leave it current), since `cuEventRecord` is called raw; and
//! - asks whether the stream is being captured into a graph. A captured pass is not timed
//!   ([`Capture::captured`]): its marks record external event-record nodes into the graph
//!   (`cuEventRecordWithFlags` with `CU_EVENT_RECORD_EXTERNAL`), so that the graph's replays
//!   can be timed once the engine adopts it ([`super::GraphReplay`], the submodule `graph`,
//!   spec/sync-modes.md "Graph capture"); nothing is synchronized or queried during the
//!   capture.
//!
//! `tests/cuda/cuda_standin.rs` runs this file's FFI path against a stand-in driver.

use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaEvent, CudaStream, DriverError};

use super::event_clock::{EventClock, Rebase, ANCHOR_TRIES, FIRST_ANCHORS};
use super::slots::{ms_to_ns, slots_for, MarkSlots};
use super::{
    Calibrated, Capture, LaggedPolling, Mark, Timeline, TimelineKind, FAILED_MARK, INVALID_MARK,
};
use crate::timeline::calibration::Calibration;
use crate::timeline::DeviceCounts;
use crate::{timeline::HostClock, Error, Result};

mod graph;

use graph::{kind, Graphs, MarkKind};

/// The events' resolution, in ns.
const RESOLUTION_NS: u64 = 500;

/// What one `cuEventRecord` between two kernels adds to device time: the gap between kernels
/// grew from 1.45 µs to 4.79 µs eager and from 0.68 µs to 4.41 µs in a graph on an NVIDIA H200
/// (driver 580; the event-marks-cost fixture, spec/sync-modes.md "Observer effect").
pub(crate) const EVENT_MARK_COST_NS: u64 = 3_300;

/// What to install when there is no CUDA driver.
const INSTALL: &str = "install the NVIDIA driver (it provides libcuda.so.1; the CUDA toolkit is \
                       not needed), or use the cpu, sim or opencl timeline";

pub(super) fn cuda_error(call: &'static str, e: DriverError, context: &str) -> Error {
    Error::Cuda {
        call,
        message: format!("{e}{context}"),
    }
}

/// Where the current pass stands with its once-per-pass checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PassState {
    /// No mark yet this pass: the next mark binds the context and checks capture.
    Unchecked,
    /// Checked: marks record events.
    Timed,
    /// The stream is being captured into a graph: marks record external event-record nodes.
    Captured,
}

/// The timeline's own stream for calibration anchors, and its two events: the reference that
/// device time counts from, and the probe each anchor records.
#[derive(Debug)]
struct AnchorStream {
    /// Created raw on the engine's context; destroyed in Drop.
    stream: RawStream,
    reference: CudaEvent,
    probe: CudaEvent,
    clock: EventClock,
}

/// A stream handle the timeline created and owns (cudarc's `CudaStream` would count in its
/// context's multi-stream mode).
#[derive(Debug)]
struct RawStream(sys::CUstream);

// SAFETY: a CUDA stream handle may be used from any thread that has its context current (the
// timeline binds before each use); only `&mut` methods and Drop use it.
unsafe impl Send for RawStream {}
// SAFETY: as above; a shared reference gives no access to the handle.
unsafe impl Sync for RawStream {}

/// What the timeline counted.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    syncs: u64,
    binds: u64,
    captured_passes: u64,
}

/// CUDA events on one stream. Use it on one thread at a time: each pass's first mark makes the
/// stream's context current on the thread marking.
#[derive(Debug)]
pub struct CudaTimeline {
    stream: Arc<CudaStream>,
    events: Vec<CudaEvent>,
    slots: MarkSlots,
    pass: PassState,
    anchors: AnchorStream,
    counts: Counts,
    /// The first driver error of this generation's marks (the call that failed, the error).
    mark_error: Option<(&'static str, DriverError)>,
    /// Captures and the graphs adopted (spec/sync-modes.md "Graph capture").
    graphs: Graphs,
}

impl CudaTimeline {
    /// A timeline on the engine's `stream`, with an event pool for `pending_capacity`
    /// measurements (pass the profiler's [`crate::ProfilerConfig::pending_capacity`]).
    pub fn new(stream: Arc<CudaStream>, pending_capacity: usize) -> Result<Self> {
        let capacity = slots_for("cuda", pending_capacity)?;
        let ctx = stream.context().clone();
        let timed = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| cuda_error("cuEventCreate", e, ""))
        };
        let mut events = Vec::with_capacity(capacity);
        for _ in 0..capacity {
            events.push(timed()?);
        }
        let (reference, probe) = (timed()?, timed()?);
        ctx.bind_to_thread()
            .map_err(|e| cuda_error("cuCtxSetCurrent", e, " (the anchor stream)"))?;
        // Raw, not `ctx.new_stream()`: that would turn the engine's context to cudarc's
        // multi-stream mode (event tracking on every allocation).
        let anchor_stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .map_err(|e| cuda_error("cuStreamCreate", e, " (the anchor stream)"))?;
        let mut t = CudaTimeline {
            anchors: AnchorStream {
                stream: RawStream(anchor_stream),
                reference,
                probe,
                clock: EventClock::new("cuda", RESOLUTION_NS),
            },
            stream,
            events,
            slots: MarkSlots::new("cuda", capacity),
            pass: PassState::Unchecked,
            counts: Counts::default(),
            mark_error: None,
            graphs: Graphs::default(),
        };
        // The reference: recorded once, complete before the first anchor. (Drop destroys the
        // anchor stream if this fails.)
        let reference = t.anchors.reference.cu_event();
        // SAFETY: live event and stream of the current context.
        unsafe { result::event::record(reference, anchor_stream) }
            .map_err(|e| cuda_error("cuEventRecord", e, " (the calibration reference)"))?;
        // SAFETY: the reference was just recorded.
        unsafe { result::event::synchronize(reference) }
            .map_err(|e| cuda_error("cuEventSynchronize", e, " (the calibration reference)"))?;
        for _ in 0..FIRST_ANCHORS {
            t.take_anchor()?;
        }
        Ok(t)
    }

    /// Anchors until one is used (at most [`ANCHOR_TRIES`]); the context must be current.
    fn take_anchors(&mut self) -> Result<()> {
        for _ in 0..ANCHOR_TRIES {
            if self.take_anchor()? {
                break;
            }
        }
        Ok(())
    }

    /// One calibration anchor on the timeline's own stream (the context must be current): a
    /// host reading, the probe recorded, a wait for the probe alone, a host reading; the
    /// probe's device time is its elapsed time from the reference. Whether it was used.
    fn take_anchor(&mut self) -> Result<bool> {
        let a = &mut self.anchors;
        let before = a.clock.ticks();
        // SAFETY: live event and stream of the timeline's context.
        unsafe { result::event::record(a.probe.cu_event(), a.stream.0) }
            .map_err(|e| cuda_error("cuEventRecord", e, " (a calibration anchor)"))?;
        // SAFETY: the probe was just recorded.
        let waited = unsafe { result::event::synchronize(a.probe.cu_event()) };
        let after = a.clock.ticks();
        waited.map_err(|e| cuda_error("cuEventSynchronize", e, " (a calibration anchor)"))?;
        // SAFETY: both events are complete.
        let ms = unsafe { result::event::elapsed(a.reference.cu_event(), a.probe.cu_event()) }
            .map_err(|e| cuda_error("cuEventElapsedTime", e, " (a calibration anchor)"))?;
        let (used, rebase) = a.clock.add_anchor(before, ms, after);
        if rebase == Rebase::Swap {
            std::mem::swap(&mut a.reference, &mut a.probe);
        }
        Ok(used)
    }

    /// Anchor when the engine's stream is not being captured (a wait during a global-mode
    /// capture would invalidate it); binds the context first.
    fn anchor_unless_captured(&mut self) -> Result<()> {
        if self.pass == PassState::Captured {
            return Ok(());
        }
        self.bind()
            .map_err(|(call, e)| cuda_error(call, e, " (before a calibration anchor)"))?;
        if self.capture_status()? != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Ok(());
        }
        self.take_anchors()
    }

    /// A timeline on a new stream of device `ordinal`'s primary context (for engines without a
    /// stream of their own; launch on [`CudaTimeline::stream`]). With no CUDA driver, or a
    /// driver without a device `ordinal`, this is [`Error::NoDevice`] naming what to install,
    /// never a panic.
    pub fn on_device(ordinal: usize, pending_capacity: usize) -> Result<Self> {
        slots_for("cuda", pending_capacity)?;
        // SAFETY: only tries to open the library; cudarc would panic on first use without it.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDevice {
                timeline: "cuda",
                reason: "the CUDA driver library (libcuda.so) could not be loaded".into(),
                install: INSTALL,
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| match e.0 {
            sys::CUresult::CUDA_ERROR_NO_DEVICE | sys::CUresult::CUDA_ERROR_INVALID_DEVICE => {
                Error::NoDevice {
                    timeline: "cuda",
                    reason: format!("the CUDA driver has no device {ordinal} ({e})"),
                    install: INSTALL,
                }
            }
            _ => cuda_error("cuDevicePrimaryCtxRetain", e, ""),
        })?;
        let stream = ctx
            .new_stream()
            .map_err(|e| cuda_error("cuStreamCreate", e, ""))?;
        Self::new(stream, pending_capacity)
    }

    /// The stream marked.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// What the timeline counted so far (its event pool's size, syncs, rebases, context binds,
    /// captured passes).
    pub fn counts(&self) -> DeviceCounts {
        DeviceCounts {
            capacity: self.events.len(),
            syncs: self.counts.syncs,
            rebases: self.anchors.clock.rebases(),
            context_binds: self.counts.binds,
            captured_passes: self.counts.captured_passes,
            ..DeviceCounts::default()
        }
    }

    /// Keep the first driver error of this generation's marks.
    #[cold]
    fn keep_mark_error(&mut self, call: &'static str, e: DriverError) {
        self.mark_error.get_or_insert((call, e));
    }

    /// Whether the stream is being captured into a graph now.
    fn capture_status(&self) -> Result<sys::CUstreamCaptureStatus> {
        // SAFETY: the stream is live (we hold it).
        unsafe { result::stream::is_capturing(self.stream.cu_stream()) }
            .map_err(|e| cuda_error("cuStreamIsCapturing", e, ""))
    }

    /// Make the stream's context current on this thread if it is not (one `cuCtxGetCurrent`,
    /// and a `cuCtxSetCurrent` when another context or none is current). On failure, the call
    /// that failed.
    fn bind(&mut self) -> std::result::Result<(), (&'static str, DriverError)> {
        let ours = self.stream.context().cu_ctx();
        match result::ctx::get_current() {
            Ok(Some(current)) if current == ours => Ok(()),
            Ok(_) => {
                // SAFETY: the context is live: the stream we hold keeps it retained.
                unsafe { result::ctx::set_current(ours) }.map_err(|e| ("cuCtxSetCurrent", e))?;
                self.counts.binds += 1;
                Ok(())
            }
            Err(e) => Err(("cuCtxGetCurrent", e)),
        }
    }

    /// The pass's first mark: make the stream's context current on this thread (if it is not)
    /// and find out whether the stream is being captured.
    #[cold]
    #[inline(never)]
    fn begin_pass(&mut self) {
        if let Err((call, e)) = self.bind() {
            self.keep_mark_error(call, e);
        }
        // SAFETY: the stream is live.
        self.pass = match unsafe { result::stream::is_capturing(self.stream.cu_stream()) } {
            Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE) => PassState::Timed,
            Ok(_) => {
                self.counts.captured_passes += 1;
                self.graphs.capture_begun();
                PassState::Captured
            }
            Err(e) => {
                // Unknown: time the pass; the sync checks capture again before it waits.
                self.keep_mark_error("cuStreamIsCapturing", e);
                PassState::Timed
            }
        };
    }

    /// A mark that is not a plain record: the pass's first, or one of a captured pass (an
    /// external event-record node).
    #[cold]
    #[inline(never)]
    fn mark_cold(&mut self) -> Mark {
        if self.pass == PassState::Unchecked {
            self.begin_pass();
        }
        match self.pass {
            PassState::Timed => self.record(),
            PassState::Captured => self.record_capture(),
            PassState::Unchecked => INVALID_MARK,
        }
    }

    /// The pool's next mark (pool marks from it on are made after now).
    fn pool_next(&self) -> Mark {
        self.slots.live().1
    }

    /// Record the next pool event on the stream.
    #[inline(always)]
    fn record(&mut self) -> Mark {
        let Some(slot) = self.slots.free() else {
            return INVALID_MARK; // pool exhausted: not a driver error
        };
        let event = &self.events[slot];
        // SAFETY: a live event of the stream's context, recorded on that live stream.
        match unsafe { result::event::record(event.cu_event(), self.stream.cu_stream()) } {
            Ok(()) => self.slots.take(),
            Err(e) => {
                self.keep_mark_error("cuEventRecord", e);
                FAILED_MARK
            }
        }
    }

    /// The event of `mark` (a pool mark or a replay's), known complete.
    fn event(&self, mark: Mark) -> Result<&CudaEvent> {
        match kind(mark) {
            MarkKind::Pool => {}
            MarkKind::Replay { .. } => return self.graphs.event(mark),
            MarkKind::Capture => {
                return Err(Error::Timeline(
                    "cuda: a mark of a captured pass is a node of the graph, not a timestamp; \
                     resolve the marks of its replays"
                        .into(),
                ))
            }
        }
        let index = self.slots.slot(mark, || {
            let (call, e) = self.mark_error.unwrap_or((
                "cuEventRecord",
                DriverError(sys::CUresult::CUDA_ERROR_UNKNOWN),
            ));
            cuda_error(
                call,
                e,
                " (recording a brick's event; the measurement was dropped)",
            )
        })?;
        Ok(&self.events[index])
    }

    fn elapsed_ns(a: &CudaEvent, b: &CudaEvent) -> Result<u64> {
        // SAFETY: both events are live and were recorded before the last sync.
        let ms = unsafe { result::event::elapsed(a.cu_event(), b.cu_event()) }
            .map_err(|e| cuda_error("cuEventElapsedTime", e, ""))?;
        Ok(ms_to_ns(ms))
    }
}

impl Timeline for CudaTimeline {
    fn kind(&self) -> TimelineKind {
        TimelineKind::Cuda
    }

    fn host_clock(&self) -> HostClock {
        self.anchors.clock.host_clock().clone()
    }

    /// CUDA events resolve to about 0.5 µs.
    fn resolution_ns(&self) -> u64 {
        RESOLUTION_NS
    }

    /// About 3.3 µs of device time a mark, measured on an H200 (`EVENT_MARK_COST_NS`).
    fn mark_cost_ns(&self) -> Option<u64> {
        Some(EVENT_MARK_COST_NS)
    }

    /// One `cuEventRecord`; the pass's first mark also binds and checks capture (cold).
    #[inline]
    fn mark(&mut self, _host_ticks: u64) -> Mark {
        if self.pass != PassState::Timed {
            return self.mark_cold();
        }
        self.record()
    }

    fn sync(&mut self) -> Result<()> {
        if self.pass == PassState::Captured {
            return Ok(()); // nothing was recorded; a captured stream must not be synchronized
        }
        self.counts.syncs += 1;
        // The anchor is recorded raw too: the thread syncing needs the context as well.
        self.bind()
            .map_err(|(call, e)| cuda_error(call, e, " (before the sync)"))?;
        // A capture begun after the pass's first mark: synchronizing would invalidate it.
        let status = self.capture_status()?;
        if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(Error::Timeline(format!(
                "cuda: the stream began to be captured into a graph during a timed pass \
                 ({status:?}): it is not synchronized (that would invalidate the capture), and \
                 the pass's measurements are dropped; begin a capture before a pass's first brick \
                 or after its end_pass"
            )));
        }
        // SAFETY: the stream is live.
        unsafe { result::stream::synchronize(self.stream.cu_stream()) }.map_err(|e| {
            cuda_error(
                "cuStreamSynchronize",
                e,
                " (an error of earlier asynchronous work on the stream, surfacing at this sync: \
                 check the kernels launched since the previous sync)",
            )
        })?;
        self.slots.synced();
        self.graphs.synced();
        self.take_anchors()
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        Self::elapsed_ns(self.event(start)?, self.event(end)?)
    }

    /// The event's elapsed time from the calibration reference, mapped to host ns since
    /// construction through the fit. An event beyond the latest anchor (Lagged mode resolves
    /// passes without a sync) gets a new anchor first, so that it is mapped between anchors.
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        let reference = self.anchors.reference.cu_event();
        let event = self.event(mark)?.cu_event();
        // SAFETY: both events are live and complete (the mark was synced or reached).
        let elapsed = |reference| unsafe { result::event::elapsed(reference, event) };
        let mut ms = elapsed(reference).map_err(|e| cuda_error("cuEventElapsedTime", e, ""))?;
        if !self.anchors.clock.covers(ms) {
            self.anchor_unless_captured()?;
            // The anchor may have become the new reference.
            ms = elapsed(self.anchors.reference.cu_event())
                .map_err(|e| cuda_error("cuEventElapsedTime", e, ""))?;
        }
        self.anchors.clock.map_to_host_ns(ms)
    }

    fn recycle(&mut self) {
        self.slots.recycle();
        self.graphs.recycle();
        self.mark_error = None;
    }

    fn pass_ended(&mut self) {
        self.pass = PassState::Unchecked;
    }

    // CUDA graphs' replays are timed too (spec/sync-modes.md "Graph capture"; `graph`).
    capabilities!(polling, calibrated, capture, graphs);
}

impl Capture for CudaTimeline {
    fn captured(&self) -> bool {
        self.pass == PassState::Captured
    }
}

impl LaggedPolling for CudaTimeline {
    /// `cuEventQuery` of the mark's event (a pool mark or a replay's): `CUDA_ERROR_NOT_READY`
    /// is `Ok(false)`.
    fn reached(&mut self, mark: Mark) -> Result<bool> {
        let (event, ready) = if let MarkKind::Replay { .. } = kind(mark) {
            self.graphs.live_event(mark)?
        } else {
            let slot = self.slots.live_slot(mark)?;
            (self.events[slot].cu_event(), self.slots.is_ready(mark))
        };
        if ready {
            return Ok(true);
        }
        // SAFETY: a live event of our pool or of an adopted graph's slot.
        match unsafe { result::event::query(event) } {
            Ok(()) => {
                if let Some(pool_next) = self.graphs.replay_reached(mark) {
                    if let Some(before) = pool_next.checked_sub(1) {
                        self.slots.reached(before);
                    }
                } else {
                    self.slots.reached(mark);
                    self.graphs.pool_reached(mark);
                }
                Ok(true)
            }
            Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_READY)) => Ok(false),
            Err(e) => Err(cuda_error(
                "cuEventQuery",
                e,
                " (asking whether a pass ended; an error of earlier asynchronous work)",
            )),
        }
    }

    /// Releasing a replay's mark frees that replay's slot of events; releasing a pool
    /// mark releases the replays launched before it.
    fn release_through(&mut self, mark: Mark) {
        if let MarkKind::Replay { .. } = kind(mark) {
            self.graphs.replay_released(mark);
        } else {
            self.slots.release_through(mark);
            self.graphs.pool_released(mark);
        }
    }

    fn marks_left(&self) -> usize {
        self.slots.left()
    }
}

impl Calibrated for CudaTimeline {
    fn calibration(&self) -> Option<Calibration> {
        self.anchors.clock.calibration()
    }

    /// Anchors on the timeline's own stream. Skipped while the engine's stream is being
    /// captured into a graph (a wait during a global-mode capture would invalidate it).
    fn anchor(&mut self) -> Result<()> {
        self.anchor_unless_captured()
    }

    fn origin_ticks(&self) -> Option<u64> {
        Some(self.anchors.clock.origin())
    }
}

impl Drop for CudaTimeline {
    fn drop(&mut self) {
        // The context is retained by the engine's stream we still hold; destroying a stream
        // needs it current.
        let _ = self.stream.context().bind_to_thread();
        // SAFETY: created in `new`, destroyed once here; its last anchor completed.
        let _ = unsafe { result::stream::destroy(self.anchors.stream.0) };
    }
}
