//! The HIP timeline (cargo feature `hip`): marks are `hipEvent_t`s recorded on one stream.
//!
//! - **The stream** is the engine's ([`HipTimeline::on_stream`]) or one this timeline creates
//!   and owns ([`HipTimeline::new`]); never the NULL stream, whose events are device-wide
//!   barriers that would serialize the engine's other streams.
//! - **The pool**: `2 * pending_capacity + 2` events, created at construction, sized with the
//!   profiler's pending buffer so its flush-when-full keeps the pool from running dry; reused
//!   after each resolve (a new generation of marks), destroyed on drop.
//! - **Sync**: one `hipStreamSynchronize` of the engine's stream, then one calibration anchor.
//! - **Calibration** (spec/sync-modes.md "Calibration"): the timeline creates a second stream
//!   of its own (`hipStreamCreate`). An anchor is a host reading, a `hipEventRecord` on that
//!   stream, a `hipEventSynchronize` of that event only (never the engine's stream), a host
//!   reading; its device time is the elapsed time from a reference event on the same stream
//!   (`super::event_clock`, re-based every few seconds so that f32 ms keep their precision).
//!   Sixteen anchors at construction, one after every sync, one whenever the profiler asks
//!   ([`Timeline::anchor`], Lagged mode); offset and drift are fitted over them and
//!   [`Timeline::timestamp_ns`] maps through the fit.
//! - **Stream capture**: a captured stream cannot be synchronized and its events are not
//!   timestamps; construction and sync check `hipStreamIsCapturing` and refuse with a clear
//!   error. Graph replays are not timed: ROCm does not support timing events recorded inside
//!   graphs (ROCm/rocm-systems#2380), so the timeline has no graph-replay capability
//!   ([`Timeline::graphs`] is `None`) and the profiler counts the replays an engine reports.
//!
//! Types and linking come from `hip-sys`. The runtime functions used here are declared again
//! returning a raw `c_int`, because `hip-sys` returns a Rust enum: a code that a newer runtime
//! adds (and the 5.4 bindings lack) would be undefined behaviour there, and is a plain number
//! here. `tests/timelines/hip_standin.rs` runs this file's FFI path against a stand-in runtime.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use hip_sys::hiprt::{hipEvent_t, hipStream_t};

use super::event_clock::{EventClock, Rebase, ANCHOR_TRIES, FIRST_ANCHORS};
use super::slots::{ms_to_ns, slots_for, MarkSlots};
use super::{Calibrated, LaggedPolling, Mark, Timeline, TimelineKind, FAILED_MARK, INVALID_MARK};
use crate::timeline::calibration::Calibration;
use crate::timeline::DeviceCounts;
use crate::{timeline::HostClock, Error, Result};

#[allow(clashing_extern_declarations)]
unsafe extern "C" {
    fn hipGetDeviceCount(count: *mut c_int) -> c_int;
    fn hipGetDevice(device: *mut c_int) -> c_int;
    fn hipStreamCreate(stream: *mut hipStream_t) -> c_int;
    fn hipStreamDestroy(stream: hipStream_t) -> c_int;
    fn hipStreamIsCapturing(stream: hipStream_t, status: *mut c_int) -> c_int;
    fn hipEventCreate(event: *mut hipEvent_t) -> c_int;
    fn hipEventRecord(event: hipEvent_t, stream: hipStream_t) -> c_int;
    fn hipEventDestroy(event: hipEvent_t) -> c_int;
    fn hipEventElapsedTime(ms: *mut f32, start: hipEvent_t, stop: hipEvent_t) -> c_int;
    fn hipEventQuery(event: hipEvent_t) -> c_int;
    fn hipEventSynchronize(event: hipEvent_t) -> c_int;
    fn hipStreamSynchronize(stream: hipStream_t) -> c_int;
    fn hipGetErrorString(error: c_int) -> *const c_char;
}

/// The events' resolution, in ns.
const RESOLUTION_NS: u64 = 1_000;

const HIP_SUCCESS: c_int = 0;
const HIP_ERROR_NO_DEVICE: c_int = 100;
const HIP_ERROR_INVALID_DEVICE: c_int = 101;
const HIP_ERROR_NOT_READY: c_int = 600;
const CAPTURE_STATUS_NONE: c_int = 0;

/// Where a failing call sat, when that is not the call itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// The call's own failure.
    Call,
    /// An error of earlier asynchronous work (a kernel, a copy) reported by a sync.
    EarlierWork,
    /// A mark on the hot path (the measurement was dropped).
    HotPathMark,
}

/// Turn a raw HIP status into a `Result`, naming the call and where the error came from.
fn check_at(call: &'static str, code: c_int, origin: Origin) -> Result<()> {
    if code == HIP_SUCCESS {
        return Ok(());
    }
    // SAFETY: hipGetErrorString accepts any code and returns a static NUL-terminated string
    // (or null, which we handle).
    let text = unsafe {
        let p = hipGetErrorString(code);
        if p.is_null() {
            "unknown HIP error".to_string()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    let hint = match (code, origin) {
        (HIP_ERROR_NO_DEVICE | HIP_ERROR_INVALID_DEVICE, _) => {
            " (no usable AMD GPU: check that /dev/kfd exists and is accessible, or use the cpu \
             or sim timeline)"
        }
        (_, Origin::EarlierWork) => {
            " (an error of earlier asynchronous work on the stream, surfacing at this sync: \
             check the kernels launched since the previous sync)"
        }
        (_, Origin::HotPathMark) => " (recording a brick's event; the measurement was dropped)",
        (_, Origin::Call) => "",
    };
    Err(Error::Hip {
        call,
        code,
        message: format!("{text}{hint}"),
    })
}

pub(super) fn check(call: &'static str, code: c_int) -> Result<()> {
    check_at(call, code, Origin::Call)
}

/// The timeline's own stream for calibration anchors, and its two events: the reference that
/// device time counts from, and the probe each anchor records. Null until created; Drop
/// destroys what is not.
#[derive(Debug)]
struct AnchorStream {
    stream: hipStream_t,
    reference: hipEvent_t,
    probe: hipEvent_t,
}

/// HIP events on one stream. Not `Send`: use it on the thread that owns the stream.
#[derive(Debug)]
pub struct HipTimeline {
    stream: hipStream_t,
    owns_stream: bool,
    /// The device current on the thread that made the timeline (`hipGetDevice`): its stream's.
    device: c_int,
    events: Vec<hipEvent_t>,
    slots: MarkSlots,
    anchors: AnchorStream,
    clock: EventClock,
    syncs: u64,
    record_error: Option<c_int>,
}

impl HipTimeline {
    /// A timeline on a stream it creates and owns (`hipStreamCreate`; destroyed on drop), with
    /// an event pool for `pending_capacity` measurements (pass the profiler's
    /// [`crate::ProfilerConfig::pending_capacity`]). Launch the engine's kernels on
    /// [`HipTimeline::stream`]; to time an engine that has its own stream, use
    /// [`HipTimeline::on_stream`]. Checks for a device first: with none, this is
    /// `Error::Hip { call: "hipGetDeviceCount", code: 100, .. }`, never a panic.
    pub fn new(pending_capacity: usize) -> Result<Self> {
        let capacity = slots_for("hip", pending_capacity)?;
        check_device()?;
        let mut stream: hipStream_t = std::ptr::null_mut();
        // SAFETY: stream is a valid out-pointer.
        check("hipStreamCreate", unsafe { hipStreamCreate(&mut stream) })?;
        // SAFETY: the stream was just created and is owned (destroyed on drop or error).
        unsafe { Self::build(stream, true, capacity) }
    }

    /// A timeline on the engine's `stream`, as [`HipTimeline::new`] otherwise. The NULL
    /// stream is refused: its events are device-wide barriers.
    ///
    /// # Safety
    /// `stream` must be a live `hipStream_t` that outlives this timeline.
    pub unsafe fn on_stream(stream: hipStream_t, pending_capacity: usize) -> Result<Self> {
        let capacity = slots_for("hip", pending_capacity)?;
        if stream.is_null() {
            return Err(Error::UnsuitableStream {
                timeline: "hip",
                reason: "the NULL stream's events are device-wide barriers that would \
                 serialize every stream; pass the engine's stream, or use HipTimeline::new for \
                 a dedicated one",
            });
        }
        check_device()?;
        // SAFETY: forwarded from the caller.
        unsafe { Self::build(stream, false, capacity) }
    }

    /// # Safety
    /// `stream` is live; when `owns_stream`, this timeline destroys it.
    unsafe fn build(stream: hipStream_t, owns_stream: bool, capacity: usize) -> Result<Self> {
        let mut device: c_int = 0;
        // SAFETY: device is a valid out-pointer.
        let current = check("hipGetDevice", unsafe { hipGetDevice(&mut device) });
        let mut t = HipTimeline {
            stream,
            owns_stream,
            device,
            events: Vec::with_capacity(capacity),
            slots: MarkSlots::new("hip", capacity),
            anchors: AnchorStream {
                stream: std::ptr::null_mut(),
                reference: std::ptr::null_mut(),
                probe: std::ptr::null_mut(),
            },
            clock: EventClock::new("hip", RESOLUTION_NS),
            syncs: 0,
            record_error: None,
        };
        // On any error below, Drop destroys what was created (and an owned stream).
        current?;
        t.check_not_capturing()?;
        for _ in 0..capacity {
            let e = create_event()?;
            t.events.push(e);
        }
        t.anchors.reference = create_event()?;
        t.anchors.probe = create_event()?;
        let mut anchor_stream: hipStream_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the stream is destroyed in Drop.
        check("hipStreamCreate", unsafe {
            hipStreamCreate(&mut anchor_stream)
        })?;
        t.anchors.stream = anchor_stream;
        // The reference: recorded once, complete before the first anchor.
        // SAFETY: a live event on the live anchor stream.
        check("hipEventRecord", unsafe {
            hipEventRecord(t.anchors.reference, anchor_stream)
        })?;
        // SAFETY: the reference was just recorded.
        check("hipEventSynchronize", unsafe {
            hipEventSynchronize(t.anchors.reference)
        })?;
        for _ in 0..FIRST_ANCHORS {
            t.take_anchor()?;
        }
        Ok(t)
    }

    /// Anchors until one is used (at most [`ANCHOR_TRIES`]), unless the engine's stream is
    /// being captured into a graph.
    fn take_anchors(&mut self) -> Result<()> {
        if self.capture_status()? != CAPTURE_STATUS_NONE {
            return Ok(());
        }
        self.take_anchors_uncaptured()
    }

    /// Anchors until one is used, the engine's stream known not to be captured.
    fn take_anchors_uncaptured(&mut self) -> Result<()> {
        for _ in 0..ANCHOR_TRIES {
            if self.take_anchor()? {
                break;
            }
        }
        Ok(())
    }

    /// One calibration anchor on the timeline's own stream: a host reading, the probe
    /// recorded, a wait for the probe alone, a host reading; the probe's device time is its
    /// elapsed time from the reference. Whether it was used.
    fn take_anchor(&mut self) -> Result<bool> {
        let a = &mut self.anchors;
        let before = self.clock.ticks();
        // SAFETY: a live event on the live anchor stream.
        check("hipEventRecord", unsafe {
            hipEventRecord(a.probe, a.stream)
        })?;
        // SAFETY: the probe was just recorded.
        let code = unsafe { hipEventSynchronize(a.probe) };
        let after = self.clock.ticks();
        check("hipEventSynchronize", code)?;
        let mut ms = 0f32;
        // SAFETY: both events are live and complete.
        check("hipEventElapsedTime", unsafe {
            hipEventElapsedTime(&mut ms, a.reference, a.probe)
        })?;
        let (used, rebase) = self.clock.add_anchor(before, ms, after);
        if rebase == Rebase::Swap {
            std::mem::swap(&mut a.reference, &mut a.probe);
        }
        Ok(used)
    }

    /// The stream marked (the engine's, or the one this timeline created).
    pub fn stream(&self) -> hipStream_t {
        self.stream
    }

    /// The device the timeline was made on (current on its thread then: its stream's).
    pub(super) fn device(&self) -> c_int {
        self.device
    }

    /// What the timeline counted so far (its event pool's size, `2 * pending_capacity + 2 +
    /// MAX_PASSES_IN_FLIGHT`; syncs; rebases).
    pub fn counts(&self) -> DeviceCounts {
        DeviceCounts {
            capacity: self.events.len(),
            syncs: self.syncs,
            rebases: self.clock.rebases(),
            ..DeviceCounts::default()
        }
    }

    /// The engine stream's capture status (`CAPTURE_STATUS_NONE`: not being captured).
    fn capture_status(&self) -> Result<c_int> {
        let mut status: c_int = CAPTURE_STATUS_NONE;
        // SAFETY: the stream is live; status is a valid out-pointer.
        check("hipStreamIsCapturing", unsafe {
            hipStreamIsCapturing(self.stream, &mut status)
        })?;
        Ok(status)
    }

    fn check_not_capturing(&self) -> Result<()> {
        let status = self.capture_status()?;
        if status != CAPTURE_STATUS_NONE {
            return Err(Error::Timeline(format!(
                "hip: the stream is being captured into a graph (capture status {status}): a \
                 captured stream cannot be synchronized and its events are not timestamps, so \
                 brick timing does not survive capture, and ROCm does not support timing events \
                 recorded inside graphs (ROCm/rocm-systems#2380), so their replays are counted, \
                 not timed; profile an uncaptured pass"
            )));
        }
        Ok(())
    }

    fn event(&self, mark: Mark) -> Result<hipEvent_t> {
        let index = self.slots.slot(mark, || {
            let code = self.record_error.unwrap_or(-1);
            check_at("hipEventRecord", code, Origin::HotPathMark)
                .err()
                .unwrap_or_else(|| super::invalid_mark("hip"))
        })?;
        Ok(self.events[index])
    }

    fn elapsed_ms(&self, a: hipEvent_t, b: hipEvent_t) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: both events are live and were recorded before the last sync.
        check("hipEventElapsedTime", unsafe {
            hipEventElapsedTime(&mut ms, a, b)
        })?;
        Ok(ms)
    }
}

fn check_device() -> Result<()> {
    let mut count: c_int = 0;
    // SAFETY: count is a valid out-pointer.
    check("hipGetDeviceCount", unsafe {
        hipGetDeviceCount(&mut count)
    })?;
    if count <= 0 {
        check("hipGetDeviceCount", HIP_ERROR_NO_DEVICE)?;
    }
    Ok(())
}

fn create_event() -> Result<hipEvent_t> {
    let mut e: hipEvent_t = std::ptr::null_mut();
    // SAFETY: e is a valid out-pointer.
    check("hipEventCreate", unsafe { hipEventCreate(&mut e) })?;
    Ok(e)
}

impl Timeline for HipTimeline {
    fn kind(&self) -> TimelineKind {
        TimelineKind::Hip
    }

    fn host_clock(&self) -> HostClock {
        self.clock.host_clock().clone()
    }

    /// HIP events resolve to about 1 µs.
    fn resolution_ns(&self) -> u64 {
        RESOLUTION_NS
    }

    #[inline]
    fn mark(&mut self, _host_ticks: u64) -> Mark {
        let Some(slot) = self.slots.free() else {
            return INVALID_MARK; // pool exhausted: not a runtime error
        };
        let event = self.events[slot];
        // SAFETY: event is a live event from our pool; the stream is live.
        let code = unsafe { hipEventRecord(event, self.stream) };
        if code != HIP_SUCCESS {
            self.record_error.get_or_insert(code);
            return FAILED_MARK;
        }
        self.slots.take()
    }

    fn sync(&mut self) -> Result<()> {
        self.syncs += 1;
        self.check_not_capturing()?;
        // SAFETY: the stream is live.
        let code = unsafe { hipStreamSynchronize(self.stream) };
        check_at("hipStreamSynchronize", code, Origin::EarlierWork)?;
        self.slots.synced();
        self.take_anchors_uncaptured()
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        let (a, b) = (self.event(start)?, self.event(end)?);
        Ok(ms_to_ns(self.elapsed_ms(a, b)?))
    }

    /// The event's elapsed time from the calibration reference, mapped to host ns since
    /// construction through the fit. An event beyond the latest anchor (Lagged mode resolves
    /// passes without a sync) gets a new anchor first, so that it is mapped between anchors.
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        let e = self.event(mark)?;
        let mut ms = self.elapsed_ms(self.anchors.reference, e)?;
        if !self.clock.covers(ms) {
            self.take_anchors()?;
            // The anchor may have become the new reference.
            ms = self.elapsed_ms(self.anchors.reference, e)?;
        }
        self.clock.map_to_host_ns(ms)
    }

    fn recycle(&mut self) {
        self.slots.recycle();
        self.record_error = None;
    }

    capabilities!(polling, calibrated);
}

impl LaggedPolling for HipTimeline {
    /// `hipEventQuery` of the mark's event: `hipErrorNotReady` is `Ok(false)`.
    fn reached(&mut self, mark: Mark) -> Result<bool> {
        let slot = self.slots.live_slot(mark)?;
        if self.slots.is_ready(mark) {
            return Ok(true);
        }
        // SAFETY: a live event of our pool.
        match unsafe { hipEventQuery(self.events[slot]) } {
            HIP_SUCCESS => {
                self.slots.reached(mark);
                Ok(true)
            }
            HIP_ERROR_NOT_READY => Ok(false),
            code => check_at("hipEventQuery", code, Origin::EarlierWork).map(|()| false),
        }
    }

    fn release_through(&mut self, mark: Mark) {
        self.slots.release_through(mark);
    }

    fn marks_left(&self) -> usize {
        self.slots.left()
    }
}

impl Calibrated for HipTimeline {
    fn calibration(&self) -> Option<Calibration> {
        self.clock.calibration()
    }

    /// One anchor on the timeline's own stream; skipped while the engine's stream is being
    /// captured into a graph.
    fn anchor(&mut self) -> Result<()> {
        self.take_anchors()
    }

    fn origin_ticks(&self) -> Option<u64> {
        Some(self.clock.origin())
    }
}

impl Drop for HipTimeline {
    fn drop(&mut self) {
        let anchors = [self.anchors.reference, self.anchors.probe];
        for &e in self.events.iter().chain(anchors.iter()) {
            if !e.is_null() {
                // SAFETY: each event was created by hipEventCreate and is destroyed once.
                unsafe {
                    hipEventDestroy(e);
                }
            }
        }
        if !self.anchors.stream.is_null() {
            // SAFETY: created by hipStreamCreate in `build`, destroyed once here.
            unsafe {
                hipStreamDestroy(self.anchors.stream);
            }
        }
        if self.owns_stream && !self.stream.is_null() {
            // SAFETY: created by hipStreamCreate in `new`, destroyed once here.
            unsafe {
                hipStreamDestroy(self.stream);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BrickId, BrickProfiler, ProfilerConfig};

    /// spec/sync-modes.md "HIP": without a GPU, construction is a clear error, not a panic;
    /// with one, events resolve.
    #[test]
    fn no_device_is_a_clear_error_and_a_device_works() {
        match HipTimeline::new(8) {
            Err(Error::Hip {
                call,
                code,
                message,
            }) => {
                assert!(
                    call == "hipGetDeviceCount" || call == "hipStreamCreate",
                    "{call}"
                );
                assert!(code != 0);
                assert!(!message.is_empty());
                let shown = Error::Hip {
                    call,
                    code,
                    message,
                }
                .to_string();
                assert!(shown.contains("HIP call"), "{shown}");
            }
            Err(other) => panic!("expected Error::Hip, got {other}"),
            Ok(t) => {
                assert!(t.owns_stream && !t.stream().is_null());
                let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), t).unwrap();
                let tok = prof.start_brick(BrickId::RmsNorm);
                prof.stop_brick(tok, 1);
                prof.finalize().expect("resolve on a real device");
                assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).count(), 1);
            }
        }
    }

    #[test]
    fn error_codes_unknown_to_the_bindings_are_kept_as_numbers() {
        let e = check("hipEventRecord", 4242).unwrap_err();
        match e {
            Error::Hip { code, call, .. } => assert_eq!((code, call), (4242, "hipEventRecord")),
            other => panic!("{other}"),
        }
        assert!(check("hipStreamSynchronize", HIP_SUCCESS).is_ok());
        let late = check_at("hipStreamSynchronize", 719, Origin::EarlierWork).unwrap_err();
        assert!(
            late.to_string().contains("earlier asynchronous work"),
            "{late}"
        );
    }

    #[test]
    fn the_null_stream_and_an_empty_pool_are_refused() {
        // SAFETY: the null stream is refused before any use.
        let e = unsafe { HipTimeline::on_stream(std::ptr::null_mut(), 8) }.unwrap_err();
        assert!(e.to_string().contains("device-wide barriers"), "{e}");
        let e = HipTimeline::new(0).unwrap_err();
        assert!(e.to_string().contains("pending capacity 0"), "{e}");
    }
}
