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

use super::{invalid_mark, Calibrated, LaggedPolling, Mark, Timeline, TimelineKind, INVALID_MARK};
use crate::calibration::Calibration;
use crate::clock::MockClock;
use crate::splitmix::SplitMix64;
use crate::{Error, HostClock, Result};

#[derive(Debug)]
struct SimState {
    host_ns: u64,
    device_free_ns: u64,
    launch_overhead_ns: u64,
    clock: HostClock,
    mock: MockClock,
    /// Event timestamps, a ring indexed by mark number modulo its size; allocated at
    /// timeline creation.
    events: Vec<u64>,
    /// Marks `[released, next)` are live; `[released, ready)` are known complete.
    next: u64,
    released: u64,
    ready: u64,
    syncs: u64,
    launches: u64,
    busy_ns: u64,
    /// Injected noise: each launch's duration is scaled by `1 + u·jitter_ppm/10⁶`, `u` drawn
    /// uniformly in [−1, 1] from this seeded stream (`None`: every launch takes what it asks).
    jitter: Option<(SplitMix64, u32)>,
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
                next: 0,
                released: 0,
                ready: 0,
                syncs: 0,
                launches: 0,
                busy_ns: 0,
                jitter: None,
            })),
        }
    }

    /// A device as [`SimDevice::new`] with known noise injected: each kernel launched runs
    /// its duration times `1 + u·jitter_ppm/10⁶`, `u` uniform in [−1, 1] (integer arithmetic)
    /// drawn from SplitMix64 seeded with `seed`, so the same seed and launches give the same
    /// times (spec/sync-modes.md "The simulated device"). `jitter_ppm` is at most 10⁶.
    pub fn with_jitter(launch_overhead_ns: u64, seed: u64, jitter_ppm: u32) -> Self {
        let device = SimDevice::new(launch_overhead_ns);
        device.state.borrow_mut().jitter = Some((SplitMix64::new(seed), jitter_ppm.min(1_000_000)));
        device
    }

    /// Queue a kernel of `duration_ns` on the stream; costs the host the launch overhead.
    pub fn launch(&self, duration_ns: u64) {
        let mut s = self.state.borrow_mut();
        let duration_ns = match s.jitter.as_mut() {
            Some((rng, ppm)) => jittered(duration_ns, rng, *ppm),
            None => duration_ns,
        };
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
        s.ready = s.next;
    }

    /// A timeline on this device's stream with room for `event_capacity` live marks (two
    /// per measurement, plus one per pass in flight in Lagged mode). The ring is allocated
    /// here, never on the hot path; every mark made before is released.
    pub fn timeline(&self, event_capacity: usize) -> SimTimeline {
        {
            let mut s = self.state.borrow_mut();
            if s.events.len() < event_capacity {
                s.events.resize(event_capacity, 0);
            }
            s.released = s.next;
            s.ready = s.next;
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

/// `duration_ns × (1 + u·ppm/10⁶)` for `u` uniform in [−1, 1]: an offset drawn uniformly
/// from `−ppm..=ppm`, applied in integer arithmetic (rounded down).
fn jittered(duration_ns: u64, rng: &mut SplitMix64, ppm: u32) -> u64 {
    let span = 2 * u64::from(ppm) + 1;
    let offset = rng.below(span as usize) as i128 - i128::from(ppm);
    let scaled = i128::from(duration_ns) * (1_000_000 + offset) / 1_000_000;
    u64::try_from(scaled.max(0)).unwrap_or(u64::MAX)
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

    /// The timestamp of live `mark`, complete or not.
    fn live(&self, mark: Mark) -> Result<u64> {
        let s = self.device.state.borrow();
        if mark == INVALID_MARK || mark < s.released || mark >= s.next {
            return Err(invalid_mark("sim"));
        }
        Ok(s.events[(mark % s.events.len() as u64) as usize])
    }

    fn event(&self, mark: Mark) -> Result<u64> {
        let at = self.live(mark)?;
        if mark >= self.device.state.borrow().ready {
            return Err(Error::Timeline(format!(
                "sim: event {mark} is not known complete: resolve only after a sync or a query \
                 that found it reached (the profiler syncs in finalize, end_layer in per-layer \
                 mode, or stop in immediate mode)"
            )));
        }
        Ok(at)
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
        let size = s.events.len() as u64;
        if s.next - s.released >= size {
            return INVALID_MARK;
        }
        let at = s.device_free_ns.max(s.host_ns);
        let mark = s.next;
        s.events[(mark % size) as usize] = at; // in the ring allocated at creation
        s.next += 1;
        mark
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
        s.released = s.next;
        s.ready = s.next;
    }

    capabilities!(polling, calibrated);
}

impl LaggedPolling for SimTimeline {
    /// The stream reached `mark` once virtual host time is at or past its timestamp.
    fn reached(&mut self, mark: Mark) -> Result<bool> {
        let at = self.live(mark)?;
        let mut s = self.device.state.borrow_mut();
        let done = at <= s.host_ns;
        if done {
            s.ready = s.ready.max(mark + 1);
        }
        Ok(done)
    }

    fn release_through(&mut self, mark: Mark) {
        let mut s = self.device.state.borrow_mut();
        if mark < s.next {
            s.released = s.released.max(mark + 1);
            s.ready = s.ready.max(s.released);
        }
    }

    fn marks_left(&self) -> usize {
        let s = self.device.state.borrow();
        s.events.len() - (s.next - s.released) as usize
    }
}

impl Calibrated for SimTimeline {
    /// The model: device and host share the virtual clock, so the map is exact.
    fn calibration(&self) -> Option<Calibration> {
        Some(Calibration::offset(0, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // spec/sync-modes.md "The simulated device": injected noise is bounded, centred, varied
    // and fixed by its seed.
    #[test]
    fn injected_jitter_is_seeded_bounded_and_varied() {
        let durations = |seed: u64| {
            let d = SimDevice::with_jitter(0, seed, 50_000); // ±5 %
            (0..400)
                .map(|_| {
                    let before = d.busy_ns();
                    d.launch(1_000_000);
                    d.busy_ns() - before
                })
                .collect::<Vec<u64>>()
        };
        let a = durations(7);
        assert_eq!(a, durations(7), "the same seed, the same times");
        assert_ne!(a, durations(8), "another seed, another run");
        assert!(a.iter().all(|&ns| (950_000..=1_050_000).contains(&ns)));
        let distinct: std::collections::BTreeSet<u64> = a.iter().copied().collect();
        assert!(distinct.len() > 300, "varied: {}", distinct.len());
        let mean = a.iter().sum::<u64>() as f64 / a.len() as f64;
        assert!((mean / 1e6 - 1.0).abs() < 0.01, "centred: {mean}");
        // No jitter: every launch takes what it asks.
        let d = SimDevice::with_jitter(0, 7, 0);
        d.launch(1234);
        assert_eq!(d.busy_ns(), 1234);
    }

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

    #[test]
    fn reached_is_a_query_and_release_frees_the_oldest_slots() {
        let d = SimDevice::new(0);
        let mut t = d.timeline(3);
        let a = t.mark(0);
        d.launch(100);
        let b = t.mark(0);
        assert!(t.reached(a).unwrap(), "nothing queued before a");
        assert_eq!(t.resolve_ns(a, a).unwrap(), 0, "a reached mark resolves");
        assert!(!t.reached(b).unwrap(), "the kernel is still running");
        assert!(t.resolve_ns(a, b).is_err(), "b is not known complete");
        d.host_work(100);
        assert!(t.reached(b).unwrap());
        assert_eq!(t.resolve_ns(a, b).unwrap(), 100);
        assert_eq!(t.marks_left(), 1);
        t.release_through(a);
        assert_eq!(t.marks_left(), 2);
        assert!(t.resolve_ns(a, b).is_err(), "a was released");
        let c = t.mark(0);
        let e = t.mark(0);
        assert_eq!(t.mark(0), INVALID_MARK, "three live marks: b, c, e");
        t.sync().unwrap();
        assert_eq!(t.resolve_ns(b, e).unwrap(), 0);
        assert_eq!(t.resolve_ns(c, e).unwrap(), 0);
    }
}
