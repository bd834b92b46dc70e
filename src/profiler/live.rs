//! The live handle: what another thread (the `serve` feature's server, or your own) reads a
//! running [`BrickProfiler`] through, and trace captures on demand (spec/live.md).
//!
//! - **Snapshots.** [`LiveHandle::profile`] builds a [`Profile`] from the profiler's shelf
//!   under the shelf's lock (src/profiler/shelf.rs): the copy is bounded by the books' size,
//!   never by the run's length, and the trace is not copied. The profiler's thread waits for
//!   that lock only at its next write of the books (once per pass in Deferred, PerLayer and
//!   Lagged modes; at every stop in Immediate and None modes), and only while a snapshot holds
//!   it ([`LiveHandle::longest_hold_ns`] says for how long at most).
//! - **Captures.** [`LiveHandle::capture_trace`] asks for the next N passes. The profiler reads
//!   one atomic at each pass start ([`BrickProfiler::begin_pass`], and the end of the previous
//!   pass); when it is set, it takes the capture's trace buffer (allocated when the handle was
//!   made, or by the request) and, from that pass on, its resolve stage also feeds the
//!   capture's measurements (those that started in the captured passes) into it, until the
//!   N-th pass has ended and resolved. Nothing is allocated per brick, and the capture works
//!   whether or not the profiler keeps a trace of its own.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::shelf::ShelfReader;
use super::trace_capture::TraceCapture;
use super::tracer::Tracer;
use super::{BrickProfiler, Ledger};
use crate::model::registry::BrickRegistry;
use crate::profile::trace::{TraceBuffer, TraceView};
use crate::timeline::{Calibrated, Timeline};
use crate::{profile::RunMeta, PassShape, Profile};

/// The most passes one capture records.
pub(crate) const MAX_CAPTURE_PASSES: u32 = 64;

/// Trace events one capture keeps by default (about 6 MiB); more are counted as dropped
/// (`meta.counters.trace_dropped` of the captured trace).
pub(crate) const DEFAULT_CAPTURE_EVENTS: usize = 1 << 18;

/// The most trace events a capture may be given room for (about 96 MiB).
pub(crate) const MAX_CAPTURE_EVENTS: usize = 1 << 22;

/// What the profiler and its live handles share: the capture request and its hand-over.
#[derive(Debug)]
pub(crate) struct Control {
    /// Passes asked for by a capture that has not started yet (0: none). The profiler reads it
    /// once per pass start; a relaxed load.
    requested: AtomicU32,
    /// The longest a snapshot held the shelf's lock, ns.
    longest_hold_ns: AtomicU64,
    /// Trace events a capture's buffer holds.
    capacity: usize,
    slot: Mutex<Slot>,
    finished: Condvar,
}

/// Where a capture stands.
#[derive(Debug)]
enum State {
    /// No capture; the buffer the next one fills (`None`: allocated by the next request).
    Idle(Option<TraceBuffer>),
    /// Asked for, with its buffer, not started yet.
    Requested(u32, TraceBuffer),
    /// The profiler is recording it.
    Running,
    /// The profiler is recording it, and the one who asked gave up waiting.
    Abandoned,
    /// Recorded, waiting to be taken (boxed: the run facts make it large).
    Finished(Box<CapturedTrace>),
}

#[derive(Debug)]
struct Slot {
    state: State,
}

/// A trace of the passes a capture recorded, as plain data: write it with any trace output
/// ([`CapturedTrace::view`] and [`crate::output::write_output`] with `output("perfetto")`).
#[derive(Debug, Clone)]
pub struct CapturedTrace {
    buffer: TraceBuffer,
    registry: BrickRegistry,
    meta: RunMeta,
}

impl CapturedTrace {
    /// The trace, for the writers in [`crate::output`].
    pub fn view(&self) -> TraceView<'_> {
        TraceView {
            events: self.buffer.events(),
            passes: self.buffer.passes(),
            registry: &self.registry,
            meta: self.meta.clone(),
        }
    }
}

/// Why a capture gave no trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureError {
    /// Another capture is asked for or running (one at a time).
    Busy,
    /// The passes asked for are not in `1..=MAX_CAPTURE_PASSES`.
    BadPasses(u32),
    /// The profiler did not end the passes in time (it stopped, or runs slower than asked).
    TimedOut,
    /// The one waiting stopped waiting (a server shutting down).
    Stopped,
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureError::Busy => f.write_str("another trace capture is running"),
            CaptureError::BadPasses(n) => write!(
                f,
                "passes={n} is out of range: ask for 1 to {MAX_CAPTURE_PASSES} passes"
            ),
            CaptureError::TimedOut => f.write_str(
                "the profiler did not end the passes asked for in time (is the engine running?)",
            ),
            CaptureError::Stopped => f.write_str("the server is shutting down"),
        }
    }
}

impl std::error::Error for CaptureError {}

/// Options of [`BrickProfiler::live_with`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct LiveOptions {
    /// Trace events a capture keeps (allocated now, once; at most [`MAX_CAPTURE_EVENTS`]).
    pub capture_events: usize,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            capture_events: DEFAULT_CAPTURE_EVENTS,
        }
    }
}

/// Reads a running profiler from another thread: snapshots of its profile and captures of
/// its next passes (see the module docs and spec/live.md). Cheap to clone; `Send + Sync`.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
/// let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(1))?;
/// let live = prof.live();
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.end_pass(1)?;
/// // From any thread: the profile as of the last pass boundary.
/// assert_eq!(live.profile().brick("RmsNorm").unwrap().stats.summary().count, 1);
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct LiveHandle {
    shelf: ShelfReader,
    control: Arc<Control>,
}

impl std::fmt::Debug for ShelfReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShelfReader")
    }
}

impl LiveHandle {
    /// The profile as of the profiler's last write of its books (its last pass boundary in
    /// Deferred and Lagged modes), built under the shelf's lock.
    pub fn profile(&self) -> Profile {
        let ledger = self.shelf.lock();
        let held = Instant::now();
        let profile = super::profile_of(&ledger, ledger.facts());
        drop(ledger);
        self.note_hold(held);
        profile
    }

    /// The longest any snapshot of this profiler held the shelf's lock so far, ns (from the
    /// moment it had the lock): the longest the profiler's thread could have waited for a
    /// reader at a write of its books.
    pub fn longest_hold_ns(&self) -> u64 {
        self.control.longest_hold_ns.load(Ordering::Relaxed)
    }

    fn note_hold(&self, started: Instant) {
        let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.control
            .longest_hold_ns
            .fetch_max(ns, Ordering::Relaxed);
    }

    /// Record the next `passes` passes (1 to 64) and return their trace,
    /// waiting at most `timeout` for the profiler to end and resolve them. One capture at a
    /// time: another one asked for meanwhile gets [`CaptureError::Busy`].
    pub fn capture_trace(
        &self,
        passes: u32,
        timeout: Duration,
    ) -> std::result::Result<CapturedTrace, CaptureError> {
        self.capture_trace_or_stop(passes, timeout, None)
    }

    /// [`Self::capture_trace`], giving up (as at the timeout) once `stop` is set (a server
    /// shutting down): it is looked at every 50 ms.
    pub(crate) fn capture_trace_or_stop(
        &self,
        passes: u32,
        timeout: Duration,
        stop: Option<&std::sync::atomic::AtomicBool>,
    ) -> std::result::Result<CapturedTrace, CaptureError> {
        if !(1..=MAX_CAPTURE_PASSES).contains(&passes) {
            return Err(CaptureError::BadPasses(passes));
        }
        let c = &self.control;
        let mut slot = c.lock();
        let buffer = match &mut slot.state {
            State::Idle(b) => b.take(),
            _ => return Err(CaptureError::Busy),
        };
        // The buffer the handle allocated, or one allocated now (by the request, never by
        // the profiler's thread).
        let buffer = buffer.unwrap_or_else(|| capture_buffer(c.capacity));
        slot.state = State::Requested(passes, buffer);
        c.requested.store(passes, Ordering::Release);
        let deadline = Instant::now() + timeout;
        let why = loop {
            match std::mem::replace(&mut slot.state, State::Idle(None)) {
                State::Finished(trace) => return Ok(*trace),
                other => slot.state = other,
            }
            let now = Instant::now();
            if now >= deadline {
                break CaptureError::TimedOut;
            }
            if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                break CaptureError::Stopped;
            }
            let wait = (deadline - now).min(Duration::from_millis(50));
            slot = c
                .finished
                .wait_timeout(slot, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        // Gave up: a capture not started yet is withdrawn; one running is left to finish
        // (its buffer comes back when it does).
        c.requested.store(0, Ordering::Release);
        slot.state = match std::mem::replace(&mut slot.state, State::Idle(None)) {
            State::Requested(_, b) => State::Idle(Some(b)),
            State::Running | State::Abandoned => State::Abandoned,
            other => other,
        };
        Err(why)
    }
}

impl Control {
    fn new(capacity: usize) -> Control {
        Control {
            requested: AtomicU32::new(0),
            longest_hold_ns: AtomicU64::new(0),
            capacity,
            slot: Mutex::new(Slot {
                state: State::Idle(Some(capture_buffer(capacity))),
            }),
            finished: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a capture waits to start: one relaxed load (the profiler, once per pass).
    #[inline(always)]
    pub(crate) fn wanted(&self) -> bool {
        self.requested.load(Ordering::Relaxed) != 0
    }

    /// Take the requested capture's buffer (the profiler's thread, at a pass start).
    fn start(&self) -> Option<(u32, TraceBuffer)> {
        let mut slot = self.lock();
        self.requested.store(0, Ordering::Relaxed);
        match std::mem::replace(&mut slot.state, State::Running) {
            State::Requested(n, b) => Some((n, b)),
            other => {
                slot.state = other;
                None
            }
        }
    }

    /// The capture being recorded was dropped (a reset): back to idle.
    fn cancel(&self) {
        let mut slot = self.lock();
        if matches!(slot.state, State::Running | State::Abandoned) {
            slot.state = State::Idle(None);
        }
    }

    /// Hand a recorded capture over (the profiler's thread, at a pass end).
    fn finish(&self, trace: Box<CapturedTrace>) {
        let mut slot = self.lock();
        slot.state = match slot.state {
            State::Running => State::Finished(trace),
            // Nobody waits for it: keep its buffer for the next one.
            _ => {
                let mut buffer = trace.buffer;
                buffer.clear();
                State::Idle(Some(buffer))
            }
        };
        drop(slot);
        self.finished.notify_all();
    }
}

/// A capture's buffer: `capacity` events, and room for every pass of the longest capture.
fn capture_buffer(capacity: usize) -> TraceBuffer {
    TraceBuffer::with_capacities(capacity, MAX_CAPTURE_PASSES as usize)
}

impl<T: Timeline> BrickProfiler<T> {
    /// A [`LiveHandle`] on this profiler, with room for a capture of
    /// 2^18 trace events (allocated now). From now on the profiler
    /// writes its books under the shelf's lock (once per pass in Deferred, PerLayer and
    /// Lagged modes; at every stop in Immediate and None modes), and reads one atomic at each
    /// pass start. Every handle of a profiler shares one capture.
    pub fn live(&mut self) -> LiveHandle {
        self.live_with(LiveOptions::default())
    }

    /// [`Self::live`] with options. The first handle's options are the profiler's; later
    /// calls share them.
    pub(crate) fn live_with(&mut self, options: LiveOptions) -> LiveHandle {
        let capacity = options.capture_events.clamp(1, MAX_CAPTURE_EVENTS);
        let control = self
            .live
            .get_or_insert_with(|| Arc::new(Control::new(capacity)))
            .clone();
        LiveHandle {
            shelf: self.share(),
            control,
        }
    }

    /// At a pass start: begin a capture that was asked for (cold: a capture is rare).
    #[inline]
    pub(super) fn poll_live(&mut self) {
        if let Some(c) = &self.live {
            if c.wanted() {
                self.start_capture();
            }
        }
        // Started at the previous pass's end, and this pass begins later: it starts here.
        let start = self.passes.start();
        if let Some(c) = self.shelf.get().capture.as_ref() {
            if c.may_restart(start) {
                if let Some(c) = self.shelf.write().capture.as_mut() {
                    c.restart(start);
                }
            }
        }
    }

    /// At a reset: a capture being recorded is dropped, and the one who asked is told by a
    /// time-out.
    pub(super) fn cancel_capture(&mut self) {
        if self.shelf.write().capture.take().is_some() {
            if let Some(c) = &self.live {
                c.cancel();
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn start_capture(&mut self) {
        let Some(control) = self.live.clone() else {
            return;
        };
        if self.shelf.get().capture.is_some() {
            return;
        }
        let Some((passes, buffer)) = control.start() else {
            return;
        };
        // The profiler's own trace's origin, so both traces line up; else the timeline's, so
        // device times map; else the capture's first pass.
        let origin = self
            .shelf
            .get()
            .trace
            .as_ref()
            .map(Tracer::origin)
            .or_else(|| {
                self.marker
                    .timeline()
                    .calibrated()
                    .and_then(Calibrated::origin_ticks)
            })
            .unwrap_or(self.passes.start());
        let tracer = Tracer::with_buffer(
            buffer,
            self.shelf.get().rank(),
            self.marker.clock().clone(),
            origin,
            self.marker.timeline().host_is_device(),
        );
        self.shelf.write().capture = Some(TraceCapture::new(tracer, passes, self.passes.start()));
        // A capture is a burst on demand: its passes are marked (and traced) whatever the
        // sampling plan (spec/sync-modes.md "Sampled tracing").
        self.sampler.force_passes(passes);
        self.refresh_marking();
    }
}

/// At a pass end, in the ledger's write (the profiler's thread): count the pass into the
/// capture, and hand the capture over once its last pass ended and resolved.
pub(super) fn capture_pass_end(
    ledger: &mut Ledger,
    control: Option<&Arc<Control>>,
    pass: (u64, u64, u64, Option<PassShape>),
    in_flight: usize,
) {
    let done = ledger
        .capture
        .as_mut()
        .is_some_and(|c| c.pass_ended(pass, in_flight));
    if !done {
        return;
    }
    let (Some(capture), Some(control)) = (ledger.capture.take(), control) else {
        return;
    };
    let buffer = capture.into_buffer();
    let mut meta = super::run_meta_of(ledger, ledger.facts());
    meta.counters.trace_dropped = buffer.dropped();
    control.finish(Box::new(CapturedTrace {
        buffer,
        registry: ledger.registry().clone(),
        meta,
    }));
}
