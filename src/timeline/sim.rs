//! A simulated device stream with virtual time, for exact tests of GPU semantics and for the
//! demo's `--timeline sim`.
//!
//! Model (spec/sync-modes.md, "The simulated device"):
//! - The host has a virtual clock. Each [`SimDevice::launch`] costs the host
//!   `launch_overhead_ns` and queues a kernel of the given duration on the stream.
//! - The stream runs queued kernels in order: a kernel starts when the previous one has finished
//!   and it has been launched, `start = max(device_free, host_now)`.
//! - A mark is like a GPU event: it is queued too, and its timestamp is the moment the stream
//!   reaches it, `max(device_free, host_now)`. Reading it before a sync is an error, as with
//!   `hipEventElapsedTime` on an event not yet complete.
//! - A sync makes the host wait for the stream: `host_now = max(host_now, device_free)`.
//!
//! The host clock the profiler reads ([`SimDevice::host_clock`]) is a mock clock driven by the
//! virtual host time, so host dispatch time is exact too.

use std::cell::RefCell;
use std::rc::Rc;

use super::{invalid_mark, Mark, Timeline, TimelineKind, INVALID_MARK};
use crate::clock::MockClock;
use crate::{Error, HostClock, Result};

#[derive(Debug)]
struct SimState {
    host_ns: u64,
    device_free_ns: u64,
    launch_overhead_ns: u64,
    clock: HostClock,
    mock: MockClock,
    /// Event timestamps of the current generation; capacity fixed at timeline creation.
    events: Vec<u64>,
    event_capacity: usize,
    /// Events `[0, ready)` were recorded before the last sync.
    ready: usize,
    generation: u32,
    syncs: u64,
    launches: u64,
    busy_ns: u64,
}

impl SimState {
    fn advance_host(&mut self, to_ns: u64) {
        if to_ns > self.host_ns {
            self.mock.increment(to_ns - self.host_ns);
            self.host_ns = to_ns;
        }
    }
}

/// The simulated device: launch kernels on it, and build a [`SimTimeline`] to profile them.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig, SimDevice};
/// let device = SimDevice::new(0);
/// let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), device.timeline(64))?;
/// for (brick, us) in [(BrickId::RmsNorm, 100), (BrickId::QkvProjection, 200)] {
///     let t = prof.start_brick(brick);
///     device.launch(us * 1_000);
///     prof.stop_brick(t, 1);
/// }
/// prof.finalize().unwrap();
/// assert_eq!(prof.brick_stats(BrickId::QkvProjection).total_ns(), 200_000);
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SimDevice {
    state: Rc<RefCell<SimState>>,
}

impl SimDevice {
    /// A device whose launches each cost the host `launch_overhead_ns` of virtual time.
    pub fn new(launch_overhead_ns: u64) -> Self {
        let (clock, mock) = HostClock::mock_pair();
        SimDevice {
            state: Rc::new(RefCell::new(SimState {
                host_ns: 0,
                device_free_ns: 0,
                launch_overhead_ns,
                clock,
                mock,
                events: Vec::new(),
                event_capacity: 0,
                ready: 0,
                generation: 0,
                syncs: 0,
                launches: 0,
                busy_ns: 0,
            })),
        }
    }

    /// Queue a kernel of `duration_ns` on the stream; costs the host the launch overhead.
    pub fn launch(&self, duration_ns: u64) {
        let mut s = self.state.borrow_mut();
        let host = s.host_ns + s.launch_overhead_ns;
        s.advance_host(host);
        let start = s.device_free_ns.max(s.host_ns);
        s.device_free_ns = start + duration_ns;
        s.launches += 1;
        s.busy_ns += duration_ns;
    }

    /// The host spends `ns` of virtual time on its own work (no device work).
    pub fn host_work(&self, ns: u64) {
        let mut s = self.state.borrow_mut();
        let to = s.host_ns + ns;
        s.advance_host(to);
    }

    /// Make the host wait for the stream (what a timeline sync does).
    pub fn synchronize(&self) {
        let mut s = self.state.borrow_mut();
        let to = s.device_free_ns;
        s.advance_host(to);
        s.syncs += 1;
        s.ready = s.events.len();
    }

    /// A timeline on this device's stream with room for `event_capacity` marks between
    /// finalizes (two per measurement). The buffer is allocated here, never on the hot path.
    pub fn timeline(&self, event_capacity: usize) -> SimTimeline {
        {
            let mut s = self.state.borrow_mut();
            if s.event_capacity < event_capacity {
                let more = event_capacity - s.events.len();
                s.events.reserve_exact(more);
                s.event_capacity = event_capacity;
            }
        }
        SimTimeline {
            device: self.clone(),
        }
    }

    /// The host clock driven by this device's virtual host time.
    pub fn host_clock(&self) -> HostClock {
        self.state.borrow().clock.clone()
    }

    /// Virtual host time now, in ns.
    pub fn host_now_ns(&self) -> u64 {
        self.state.borrow().host_ns
    }

    /// Virtual time at which the stream will have finished everything queued, in ns.
    pub fn device_free_ns(&self) -> u64 {
        self.state.borrow().device_free_ns
    }

    /// Number of synchronizations so far.
    pub fn syncs(&self) -> u64 {
        self.state.borrow().syncs
    }

    /// Number of kernels launched so far.
    pub fn launches(&self) -> u64 {
        self.state.borrow().launches
    }

    /// Sum of the durations of every kernel launched, in ns.
    pub fn busy_ns(&self) -> u64 {
        self.state.borrow().busy_ns
    }
}

/// The [`Timeline`] of a [`SimDevice`]: marks are simulated events on its stream.
#[derive(Debug, Clone)]
pub struct SimTimeline {
    device: SimDevice,
}

impl SimTimeline {
    /// The device this timeline marks.
    pub fn device(&self) -> &SimDevice {
        &self.device
    }

    fn event(&self, mark: Mark) -> Result<u64> {
        let s = self.device.state.borrow();
        let generation = (mark >> 32) as u32;
        let index = (mark & 0xFFFF_FFFF) as usize;
        if mark == INVALID_MARK || generation != s.generation {
            return Err(invalid_mark("sim"));
        }
        if index >= s.ready {
            return Err(Error::Timeline(format!(
                "sim: event {index} is not complete: resolve only after a sync (the profiler \
                 syncs in finalize, end_layer in per-layer mode, or stop in immediate mode)"
            )));
        }
        Ok(s.events[index])
    }
}

impl Timeline for SimTimeline {
    fn kind(&self) -> TimelineKind {
        TimelineKind::Sim
    }

    fn host_clock(&self) -> HostClock {
        self.device.host_clock()
    }

    #[inline]
    fn mark(&mut self, _host_ticks: u64) -> Mark {
        let mut s = self.device.state.borrow_mut();
        let index = s.events.len();
        if index >= s.event_capacity || index > u32::MAX as usize {
            return INVALID_MARK;
        }
        let at = s.device_free_ns.max(s.host_ns);
        s.events.push(at); // within the reserved capacity: no allocation
        (u64::from(s.generation) << 32) | index as u64
    }

    fn sync(&mut self) -> Result<()> {
        self.device.synchronize();
        Ok(())
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        let a = self.event(start)?;
        let b = self.event(end)?;
        Ok(b.saturating_sub(a))
    }

    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        self.event(mark)
    }

    fn recycle(&mut self) {
        let mut s = self.device.state.borrow_mut();
        s.events.clear();
        s.ready = 0;
        s.generation = s.generation.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_take_the_queue_position_not_the_host_time() {
        let d = SimDevice::new(5);
        let mut t = d.timeline(8);
        let a = t.mark(0);
        d.launch(100); // host 5, kernel [5, 105)
        let b = t.mark(0);
        d.launch(200); // host 10, kernel [105, 305)
        let c = t.mark(0);
        assert!(t.resolve_ns(a, b).is_err(), "not ready before sync");
        t.sync().unwrap();
        assert_eq!(t.resolve_ns(b, c).unwrap(), 200);
        assert_eq!(
            t.resolve_ns(a, b).unwrap(),
            105,
            "idle gap before the first launch"
        );
        assert_eq!(d.host_now_ns(), 305, "sync waits for the stream");
        let clock = d.host_clock();
        assert_eq!(clock.ticks(), 305, "host clock follows virtual host time");
    }

    #[test]
    fn recycled_and_exhausted_marks_are_errors_not_panics() {
        let d = SimDevice::new(0);
        let mut t = d.timeline(2);
        let a = t.mark(0);
        let b = t.mark(0);
        assert_eq!(t.mark(0), INVALID_MARK);
        t.sync().unwrap();
        assert!(t.resolve_ns(a, b).is_ok());
        t.recycle();
        assert!(t.resolve_ns(a, b).is_err());
        assert!(t.resolve_ns(INVALID_MARK, b).is_err());
    }
}
