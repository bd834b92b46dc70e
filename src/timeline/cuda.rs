//! The CUDA timeline (cargo feature `cuda`): marks are CUDA events recorded on the engine's
//! `cudarc` stream (`Arc<CudaStream>`, as candle holds it). `cudarc` loads the driver
//! (`libcuda.so`) at run time, so the feature builds and its tests run without CUDA installed.
//!
//! The same protocol as HIP (spec/sync-modes.md "CUDA"): a pool of `2 * pending_capacity + 2`
//! events created once with timing enabled (`CU_EVENT_DEFAULT`; cudarc's default event disables
//! timing), recorded on the hot path with one `cuEventRecord`; one `cuStreamSynchronize` per
//! sync after an anchor event, re-anchoring device timestamps on the host clock; resolution
//! about 0.5 µs.
//!
//! Once per pass, at the pass's first mark (never per mark), the timeline
//! - makes the stream's context current on the calling thread if it is not (cudarc's own calls
//!   bind the same way, and leave it current), since `cuEventRecord` is called raw; and
//! - asks whether the stream is being captured into a graph: a captured pass records no event
//!   and is not timed ([`Timeline::captured`]; the profiler counts it).
//!
//! `tests/cuda_standin.rs` runs this file's FFI path against a stand-in driver.

use std::sync::Arc;

use cudarc::driver::{result, sys, CudaContext, CudaEvent, CudaStream, DriverError};

use super::slots::{ms_to_ns, slots_for, MarkSlots};
use super::{Mark, Timeline, TimelineKind, FAILED_MARK, INVALID_MARK};
use crate::{Error, HostClock, Result};

/// What to install when there is no CUDA driver.
const INSTALL: &str = "install the NVIDIA driver (it provides libcuda.so.1; the CUDA toolkit is \
                       not needed), or use the cpu, sim or opencl timeline";

fn cuda_error(call: &'static str, e: DriverError, context: &str) -> Error {
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
    /// The stream is being captured into a graph: marks record nothing.
    Captured,
}

/// The last sync's anchor, which re-anchors device timestamps on the host clock.
#[derive(Debug)]
struct Anchor {
    event: CudaEvent,
    /// Host ns (since `origin`) read right after the last sync's wait returned.
    host_ns: u64,
    clock: HostClock,
    origin: u64,
}

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
    anchor: Anchor,
    counts: Counts,
    /// The first driver error of this generation's marks (the call that failed, the error).
    mark_error: Option<(&'static str, DriverError)>,
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
        let clock = HostClock::new();
        let origin = clock.ticks();
        Ok(CudaTimeline {
            anchor: Anchor {
                event: timed()?,
                host_ns: 0,
                clock,
                origin,
            },
            stream,
            events,
            slots: MarkSlots::new("cuda", capacity),
            pass: PassState::Unchecked,
            counts: Counts::default(),
            mark_error: None,
        })
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

    /// Number of events in the pool (`2 * pending_capacity + 2 + MAX_PASSES_IN_FLIGHT`).
    pub fn capacity(&self) -> usize {
        self.events.len()
    }

    /// Stream synchronizations so far (one per [`Timeline::sync`]).
    pub fn syncs(&self) -> u64 {
        self.counts.syncs
    }

    /// Times a pass's first mark found another context (or none) current on its thread and
    /// made the stream's context current: at most one per pass.
    pub fn context_binds(&self) -> u64 {
        self.counts.binds
    }

    /// Passes whose stream was being captured into a graph at their first mark (not timed).
    pub fn captured_passes(&self) -> u64 {
        self.counts.captured_passes
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
                PassState::Captured
            }
            Err(e) => {
                // Unknown: time the pass; the sync checks capture again before it waits.
                self.keep_mark_error("cuStreamIsCapturing", e);
                PassState::Timed
            }
        };
    }

    /// A mark that is not a plain record: the pass's first, or one of a captured pass.
    #[cold]
    #[inline(never)]
    fn mark_cold(&mut self) -> Mark {
        if self.pass == PassState::Unchecked {
            self.begin_pass();
        }
        match self.pass {
            PassState::Timed => self.record(),
            PassState::Unchecked | PassState::Captured => INVALID_MARK,
        }
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

    fn event(&self, mark: Mark) -> Result<&CudaEvent> {
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
        self.anchor.clock.clone()
    }

    /// CUDA events resolve to about 0.5 µs.
    fn resolution_ns(&self) -> u64 {
        500
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
        // SAFETY: live anchor event and stream.
        unsafe { result::event::record(self.anchor.event.cu_event(), self.stream.cu_stream()) }
            .map_err(|e| cuda_error("cuEventRecord", e, " (the sync's anchor)"))?;
        // SAFETY: the stream is live.
        let waited = unsafe { result::stream::synchronize(self.stream.cu_stream()) };
        let host = self.anchor.clock.ticks();
        waited.map_err(|e| {
            cuda_error(
                "cuStreamSynchronize",
                e,
                " (an error of earlier asynchronous work on the stream, surfacing at this sync: \
                 check the kernels launched since the previous sync)",
            )
        })?;
        self.anchor.host_ns = self.anchor.clock.ticks_to_ns(self.anchor.origin, host);
        self.slots.synced();
        Ok(())
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        Self::elapsed_ns(self.event(start)?, self.event(end)?)
    }

    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        let before_anchor = Self::elapsed_ns(self.event(mark)?, &self.anchor.event)?;
        Ok(self.anchor.host_ns.saturating_sub(before_anchor))
    }

    fn recycle(&mut self) {
        self.slots.recycle();
        self.mark_error = None;
    }

    fn captured(&self) -> bool {
        self.pass == PassState::Captured
    }

    fn pass_ended(&mut self) {
        self.pass = PassState::Unchecked;
    }

    /// `cuEventQuery` of the mark's event: `CUDA_ERROR_NOT_READY` is `Ok(false)`.
    fn reached(&mut self, mark: Mark) -> Result<bool> {
        let slot = self.slots.live_slot(mark)?;
        if self.slots.is_ready(mark) {
            return Ok(true);
        }
        // SAFETY: a live event of our pool.
        match unsafe { result::event::query(self.events[slot].cu_event()) } {
            Ok(()) => {
                self.slots.reached(mark);
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

    fn release_through(&mut self, mark: Mark) {
        self.slots.release_through(mark);
    }

    fn marks_left(&self) -> usize {
        self.slots.left()
    }
}
