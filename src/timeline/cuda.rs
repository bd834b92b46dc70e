//! The CUDA timeline (cargo feature `cuda`): marks are CUDA events recorded on the engine's
//! `cudarc` stream (`Arc<CudaStream>`, as candle holds it). `cudarc` loads the driver
//! (`libcuda.so`) at run time, so the feature builds and its tests run without CUDA installed.
//!
//! The same protocol as HIP (spec/sync-modes.md "CUDA"): a pool of `2 * pending_capacity + 2`
//! events created once with timing enabled (`CU_EVENT_DEFAULT`; cudarc's default event disables
//! timing), recorded on the hot path with one `cuEventRecord`; one `cuStreamSynchronize` per
//! sync after an anchor event, re-anchoring device timestamps on the host clock; stream capture
//! refused; resolution about 0.5 µs.

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

/// CUDA events on one stream. Use it on the thread that drives the stream.
#[derive(Debug)]
pub struct CudaTimeline {
    stream: Arc<CudaStream>,
    events: Vec<CudaEvent>,
    slots: MarkSlots,
    anchor: CudaEvent,
    anchor_host_ns: u64,
    clock: HostClock,
    origin: u64,
    syncs: u64,
    record_error: Option<DriverError>,
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
        let t = CudaTimeline {
            anchor: timed()?,
            stream,
            events,
            slots: MarkSlots::new("cuda", capacity),
            anchor_host_ns: 0,
            clock,
            origin,
            syncs: 0,
            record_error: None,
        };
        t.check_not_capturing()?;
        Ok(t)
    }

    /// A timeline on a new stream of device `ordinal`'s primary context (for engines without a
    /// stream of their own; launch on [`CudaTimeline::stream`]). With no CUDA driver, this is
    /// [`Error::NoDevice`] naming what to install, never a panic.
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
        let ctx = CudaContext::new(ordinal).map_err(|e| cuda_error("cuCtxCreate", e, ""))?;
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
        self.syncs
    }

    fn check_not_capturing(&self) -> Result<()> {
        // SAFETY: the stream is live (we hold it).
        let status = unsafe { result::stream::is_capturing(self.stream.cu_stream()) }
            .map_err(|e| cuda_error("cuStreamIsCapturing", e, ""))?;
        if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(Error::Timeline(format!(
                "cuda: the stream is being captured into a graph ({status:?}): a captured stream \
                 cannot be synchronized and its events are not timestamps, so brick timing does \
                 not survive capture; profile an uncaptured pass"
            )));
        }
        Ok(())
    }

    fn event(&self, mark: Mark) -> Result<&CudaEvent> {
        let index = self.slots.slot(mark, || {
            let e = self
                .record_error
                .unwrap_or(DriverError(sys::CUresult::CUDA_ERROR_UNKNOWN));
            cuda_error(
                "cuEventRecord",
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
        self.clock.clone()
    }

    /// CUDA events resolve to about 0.5 µs.
    fn resolution_ns(&self) -> u64 {
        500
    }

    #[inline]
    fn mark(&mut self, _host_ticks: u64) -> Mark {
        let Some(slot) = self.slots.free() else {
            return INVALID_MARK; // pool exhausted: not a driver error
        };
        let event = &self.events[slot];
        // SAFETY: a live event of the stream's context, recorded on that live stream.
        match unsafe { result::event::record(event.cu_event(), self.stream.cu_stream()) } {
            Ok(()) => self.slots.take(),
            Err(e) => {
                self.record_error.get_or_insert(e);
                FAILED_MARK
            }
        }
    }

    fn sync(&mut self) -> Result<()> {
        self.syncs += 1;
        self.check_not_capturing()?;
        // SAFETY: live anchor event and stream.
        unsafe { result::event::record(self.anchor.cu_event(), self.stream.cu_stream()) }
            .map_err(|e| cuda_error("cuEventRecord", e, " (the sync's anchor)"))?;
        let waited = self.stream.synchronize();
        let host = self.clock.ticks();
        waited.map_err(|e| {
            cuda_error(
                "cuStreamSynchronize",
                e,
                " (an error of earlier asynchronous work on the stream, surfacing at this sync: \
                 check the kernels launched since the previous sync)",
            )
        })?;
        self.anchor_host_ns = self.clock.ticks_to_ns(self.origin, host);
        self.slots.synced();
        Ok(())
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        Self::elapsed_ns(self.event(start)?, self.event(end)?)
    }

    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        let before_anchor = Self::elapsed_ns(self.event(mark)?, &self.anchor)?;
        Ok(self.anchor_host_ns.saturating_sub(before_anchor))
    }

    fn recycle(&mut self) {
        self.slots.recycle();
        self.record_error = None;
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
