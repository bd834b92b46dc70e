//! The HIP timeline (cargo feature `hip`): marks are `hipEvent_t`s recorded on one stream.
//!
//! - **The stream** is the engine's ([`HipTimeline::on_stream`]) or one this timeline creates
//!   and owns ([`HipTimeline::new`]); never the NULL stream, whose events are device-wide
//!   barriers that would serialize the engine's other streams.
//! - **The pool**: `2 * pending_capacity + 2` events, created at construction, sized with the
//!   profiler's pending buffer so its flush-when-full keeps the pool from running dry; reused
//!   after each resolve (a new generation of marks), destroyed on drop.
//! - **Sync**: record an anchor event, one `hipStreamSynchronize`, read the host clock. The
//!   (anchor, host tick) pair re-anchors device timestamps on the host clock at every sync, and
//!   every `hipEventElapsedTime` (f32 ms) spans at most one pass, so timestamps neither drift
//!   from host slices nor lose precision over a long run.
//! - **Stream capture**: a captured stream cannot be synchronized and its events are not
//!   timestamps; construction and sync check `hipStreamIsCapturing` and refuse with a clear
//!   error.
//!
//! Types and linking come from `hip-sys`. The runtime functions used here are declared again
//! returning a raw `c_int`, because `hip-sys` returns a Rust enum: a code that a newer runtime
//! adds (and the 5.4 bindings lack) would be undefined behaviour there, and is a plain number
//! here. `tests/hip_standin.rs` runs this file's FFI path against a stand-in runtime.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use hip_sys::hiprt::{hipEvent_t, hipStream_t};

use super::slots::{ms_to_ns, slots_for, MarkSlots};
use super::{Mark, Timeline, TimelineKind, FAILED_MARK, INVALID_MARK};
use crate::{Error, HostClock, Result};

#[allow(clashing_extern_declarations)]
unsafe extern "C" {
    fn hipGetDeviceCount(count: *mut c_int) -> c_int;
    fn hipStreamCreate(stream: *mut hipStream_t) -> c_int;
    fn hipStreamDestroy(stream: hipStream_t) -> c_int;
    fn hipStreamIsCapturing(stream: hipStream_t, status: *mut c_int) -> c_int;
    fn hipEventCreate(event: *mut hipEvent_t) -> c_int;
    fn hipEventRecord(event: hipEvent_t, stream: hipStream_t) -> c_int;
    fn hipEventDestroy(event: hipEvent_t) -> c_int;
    fn hipEventElapsedTime(ms: *mut f32, start: hipEvent_t, stop: hipEvent_t) -> c_int;
    fn hipEventQuery(event: hipEvent_t) -> c_int;
    fn hipStreamSynchronize(stream: hipStream_t) -> c_int;
    fn hipGetErrorString(error: c_int) -> *const c_char;
}

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

fn check(call: &'static str, code: c_int) -> Result<()> {
    check_at(call, code, Origin::Call)
}

/// HIP events on one stream. Not `Send`: use it on the thread that owns the stream.
#[derive(Debug)]
pub struct HipTimeline {
    stream: hipStream_t,
    owns_stream: bool,
    events: Vec<hipEvent_t>,
    slots: MarkSlots,
    anchor: hipEvent_t,
    /// Host ns (since `origin`) read right after the last sync's wait returned.
    anchor_host_ns: u64,
    clock: HostClock,
    origin: u64,
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
        let clock = HostClock::new();
        let origin = clock.ticks();
        let mut t = HipTimeline {
            stream,
            owns_stream,
            events: Vec::with_capacity(capacity),
            slots: MarkSlots::new("hip", capacity),
            anchor: std::ptr::null_mut(),
            anchor_host_ns: 0,
            clock,
            origin,
            syncs: 0,
            record_error: None,
        };
        // On any error below, Drop destroys what was created (and an owned stream).
        t.check_not_capturing()?;
        t.anchor = create_event()?;
        for _ in 0..capacity {
            let e = create_event()?;
            t.events.push(e);
        }
        Ok(t)
    }

    /// The stream marked (the engine's, or the one this timeline created).
    pub fn stream(&self) -> hipStream_t {
        self.stream
    }

    /// Whether this timeline created the stream (and destroys it on drop).
    pub fn owns_stream(&self) -> bool {
        self.owns_stream
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
        let mut status: c_int = CAPTURE_STATUS_NONE;
        // SAFETY: the stream is live; status is a valid out-pointer.
        check("hipStreamIsCapturing", unsafe {
            hipStreamIsCapturing(self.stream, &mut status)
        })?;
        if status != CAPTURE_STATUS_NONE {
            return Err(Error::Timeline(format!(
                "hip: the stream is being captured into a graph (capture status {status}): a \
                 captured stream cannot be synchronized and its events are not timestamps, so \
                 brick timing does not survive capture; profile an uncaptured pass"
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
        self.clock.clone()
    }

    /// HIP events resolve to about 1 µs.
    fn resolution_ns(&self) -> u64 {
        1_000
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
        // SAFETY: the anchor is a live event; the stream is live.
        check("hipEventRecord", unsafe {
            hipEventRecord(self.anchor, self.stream)
        })?;
        // SAFETY: the stream is live.
        let code = unsafe { hipStreamSynchronize(self.stream) };
        let host = self.clock.ticks();
        check_at("hipStreamSynchronize", code, Origin::EarlierWork)?;
        self.anchor_host_ns = self.clock.ticks_to_ns(self.origin, host);
        self.slots.synced();
        Ok(())
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        let (a, b) = (self.event(start)?, self.event(end)?);
        Ok(ms_to_ns(self.elapsed_ms(a, b)?))
    }

    /// Host-clock ns since the timeline's origin: the last sync's host tick minus the time
    /// from this mark to that sync's anchor event.
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        let e = self.event(mark)?;
        let before_anchor = ms_to_ns(self.elapsed_ms(e, self.anchor)?);
        Ok(self.anchor_host_ns.saturating_sub(before_anchor))
    }

    fn recycle(&mut self) {
        self.slots.recycle();
        self.record_error = None;
    }

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

impl Drop for HipTimeline {
    fn drop(&mut self) {
        for &e in self.events.iter().chain(std::iter::once(&self.anchor)) {
            if !e.is_null() {
                // SAFETY: each event was created by hipEventCreate and is destroyed once.
                unsafe {
                    hipEventDestroy(e);
                }
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
                assert!(t.owns_stream() && !t.stream().is_null());
                let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), t).unwrap();
                let tok = prof.start_brick(BrickId::RmsNorm);
                prof.stop_brick(tok, 1);
                prof.finalize().expect("resolve on a real device");
                assert_eq!(prof.brick_stats(BrickId::RmsNorm).count(), 1);
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
