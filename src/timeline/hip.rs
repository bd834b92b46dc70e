//! The HIP timeline (cargo feature `hip`): marks are `hipEvent_t`s recorded on the caller's
//! stream. Events are created once in a pool, recorded on the hot path, read back with
//! `hipEventElapsedTime` after one `hipStreamSynchronize`, reused after each finalize and
//! destroyed on drop.
//!
//! Types and linking come from `hip-sys`. The few runtime functions used here are declared again
//! returning a raw `c_int`, because `hip-sys` returns a Rust enum: a code that a newer runtime
//! adds (and the 5.4 bindings lack) would be undefined behaviour there, and is a plain number
//! here.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use hip_sys::hiprt::{hipEvent_t, hipStream_t};

use super::{invalid_mark, Mark, Timeline, TimelineKind, INVALID_MARK};
use crate::{Error, HostClock, Result};

#[allow(clashing_extern_declarations)]
unsafe extern "C" {
    fn hipGetDeviceCount(count: *mut c_int) -> c_int;
    fn hipEventCreate(event: *mut hipEvent_t) -> c_int;
    fn hipEventRecord(event: hipEvent_t, stream: hipStream_t) -> c_int;
    fn hipEventDestroy(event: hipEvent_t) -> c_int;
    fn hipEventElapsedTime(ms: *mut f32, start: hipEvent_t, stop: hipEvent_t) -> c_int;
    fn hipStreamSynchronize(stream: hipStream_t) -> c_int;
    fn hipGetErrorString(error: c_int) -> *const c_char;
}

const HIP_SUCCESS: c_int = 0;
const HIP_ERROR_NO_DEVICE: c_int = 100;
const HIP_ERROR_INVALID_DEVICE: c_int = 101;

/// Turn a raw HIP status into a `Result`, naming the call.
fn check(call: &'static str, code: c_int) -> Result<()> {
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
    let hint = match code {
        HIP_ERROR_NO_DEVICE | HIP_ERROR_INVALID_DEVICE => {
            " (no usable AMD GPU: check that /dev/kfd exists and is accessible, or use the cpu \
             or sim timeline)"
        }
        _ => "",
    };
    Err(Error::Hip {
        call,
        code,
        message: format!("{text}{hint}"),
    })
}

/// HIP events on one stream. Not `Send`: use it on the thread that owns the stream.
#[derive(Debug)]
pub struct HipTimeline {
    stream: hipStream_t,
    events: Vec<hipEvent_t>,
    next: usize,
    generation: u32,
    origin: hipEvent_t,
    clock: HostClock,
    record_error: Option<(c_int, &'static str)>,
}

impl HipTimeline {
    /// A timeline on the default (null) stream with a pool of `capacity` events (two per
    /// measurement between finalizes). Checks for a device first: with none, this is
    /// `Error::Hip { call: "hipGetDeviceCount", code: 100, .. }`, never a panic.
    pub fn new(capacity: usize) -> Result<Self> {
        // SAFETY: the null stream is always valid.
        unsafe { Self::on_stream(std::ptr::null_mut(), capacity) }
    }

    /// A timeline on the caller's `stream`, as [`HipTimeline::new`] otherwise.
    ///
    /// # Safety
    /// `stream` must be null or a live `hipStream_t` that outlives this timeline.
    pub unsafe fn on_stream(stream: hipStream_t, capacity: usize) -> Result<Self> {
        let mut count: c_int = 0;
        // SAFETY: count is a valid out-pointer.
        check("hipGetDeviceCount", unsafe {
            hipGetDeviceCount(&mut count)
        })?;
        if count <= 0 {
            check("hipGetDeviceCount", HIP_ERROR_NO_DEVICE)?;
        }
        let mut timeline = HipTimeline {
            stream,
            events: Vec::with_capacity(capacity),
            next: 0,
            generation: 0,
            origin: std::ptr::null_mut(),
            clock: HostClock::new(),
            record_error: None,
        };
        timeline.origin = create_event()?;
        for _ in 0..capacity.min(u32::MAX as usize) {
            let e = create_event()?; // on error, Drop destroys what was created
            timeline.events.push(e);
        }
        // SAFETY: origin is a live event; stream is the caller's.
        check("hipEventRecord", unsafe {
            hipEventRecord(timeline.origin, stream)
        })?;
        Ok(timeline)
    }

    /// Number of events in the pool.
    pub fn capacity(&self) -> usize {
        self.events.len()
    }

    fn event(&self, mark: Mark) -> Result<hipEvent_t> {
        let generation = (mark >> 32) as u32;
        let index = (mark & 0xFFFF_FFFF) as usize;
        if mark == INVALID_MARK || generation != self.generation || index >= self.next {
            return Err(match self.record_error {
                Some((code, call)) => check(call, code)
                    .err()
                    .unwrap_or_else(|| invalid_mark("hip")),
                None => invalid_mark("hip"),
            });
        }
        Ok(self.events[index])
    }
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

    #[inline]
    fn mark(&mut self, _host_ticks: u64) -> Mark {
        let Some(&event) = self.events.get(self.next) else {
            return INVALID_MARK;
        };
        // SAFETY: event is a live event from our pool; stream is the caller's.
        let code = unsafe { hipEventRecord(event, self.stream) };
        if code != HIP_SUCCESS {
            self.record_error.get_or_insert((code, "hipEventRecord"));
            return INVALID_MARK;
        }
        let index = self.next;
        self.next += 1;
        (u64::from(self.generation) << 32) | index as u64
    }

    fn sync(&mut self) -> Result<()> {
        // SAFETY: stream is the caller's stream (or null, the default stream).
        check("hipStreamSynchronize", unsafe {
            hipStreamSynchronize(self.stream)
        })
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        let (a, b) = (self.event(start)?, self.event(end)?);
        let mut ms = 0f32;
        // SAFETY: both events are live and were recorded before the last sync.
        check("hipEventElapsedTime", unsafe {
            hipEventElapsedTime(&mut ms, a, b)
        })?;
        Ok((f64::from(ms) * 1e6).max(0.0) as u64)
    }

    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        let e = self.event(mark)?;
        let mut ms = 0f32;
        // SAFETY: both events are live and recorded.
        check("hipEventElapsedTime", unsafe {
            hipEventElapsedTime(&mut ms, self.origin, e)
        })?;
        Ok((f64::from(ms) * 1e6).max(0.0) as u64)
    }

    fn recycle(&mut self) {
        self.next = 0;
        self.generation = self.generation.wrapping_add(1);
        self.record_error = None;
    }
}

impl Drop for HipTimeline {
    fn drop(&mut self) {
        for &e in self.events.iter().chain(std::iter::once(&self.origin)) {
            if !e.is_null() {
                // SAFETY: each event was created by hipEventCreate and is destroyed once.
                unsafe {
                    hipEventDestroy(e);
                }
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
                    call == "hipGetDeviceCount" || call == "hipEventCreate",
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
    }
}
