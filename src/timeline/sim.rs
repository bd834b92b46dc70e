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
//!
//! Graphs ([`SimDevice::capture`], [`SimDevice::launch_graph`]) are modelled in `sim/graph.rs` (spec/sync-modes.md "Graph
//! capture").

mod graph;

use std::cell::RefCell;
use std::rc::Rc;

use super::{
    invalid_mark, Calibrated, Capture, DeviceGraph, GraphReplay, LaggedPolling, Mark, ReplayMarks,
    Timeline, TimelineKind, INVALID_MARK,
};
use crate::base::splitmix::SplitMix64;
use crate::timeline::calibration::Calibration;
use crate::timeline::clock::MockClock;
use crate::timeline::DeviceCounts;
use crate::{timeline::HostClock, Error, Result};
use graph::{Graphs, MarkKind, Node};

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
    /// Captures, graphs, executables and the timeline's adopted graphs (`sim/graph.rs`).
    graphs: Graphs,
    /// Whether the current pass's first mark fell in a capture (`None`: no mark yet).
    pass_captured: Option<bool>,
    /// Every kernel's duration as it ran, in order, while [`SimDevice::log_kernels`] is on.
    kernel_log: Option<Vec<u64>>,
}

impl SimState {
    fn advance_host(&mut self, to_ns: u64) {
        if to_ns > self.host_ns {
            self.mock.increment(to_ns - self.host_ns);
            self.host_ns = to_ns;
        }
    }

    /// Run a kernel of `duration_ns` (before jitter) on the stream, after what is queued.
    fn run_kernel(&mut self, duration_ns: u64) {
        let duration_ns = match self.jitter.as_mut() {
            Some((rng, ppm)) => jittered(duration_ns, rng, *ppm),
            None => duration_ns,
        };
        let start = self.device_free_ns.max(self.host_ns);
        self.device_free_ns = start + duration_ns;
        self.launches += 1;
        self.busy_ns += duration_ns;
        if let Some(log) = self.kernel_log.as_mut() {
            log.push(duration_ns);
        }
    }
}

/// The simulated device: launch kernels on it, and build a [`SimTimeline`] to profile them.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig, timeline::SimDevice};
/// let device = SimDevice::new(0);
/// let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), device.timeline(64))?;
/// for (brick, us) in [(BrickId::RmsNorm, 100), (BrickId::QkvProjection, 200)] {
///     let t = prof.start_brick(brick);
///     device.launch(us * 1_000);
///     prof.stop_brick(t, 1);
/// }
/// prof.finalize().unwrap();
/// assert_eq!(prof.view().brick_stats(BrickId::QkvProjection).summary().total_ns, 200_000);
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
                graphs: Graphs::default(),
                pass_captured: None,
                kernel_log: None,
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
    /// During a capture the kernel becomes a node of the graph instead, and does not run.
    pub fn launch(&self, duration_ns: u64) {
        let mut s = self.state.borrow_mut();
        let host = s.host_ns + s.launch_overhead_ns;
        s.advance_host(host);
        if !s.graphs.capture_kernel(duration_ns) {
            s.run_kernel(duration_ns);
        }
    }

    /// Capture the stream into a graph while `f` runs (as `cuStreamBeginCapture`, then
    /// `cuStreamEndCapture` and `cuGraphInstantiate`): kernels launched become kernel nodes and
    /// the timeline's marks become event-record nodes; nothing runs (spec/sync-modes.md "Graph
    /// capture"). Returns the new executable, or `f`'s error (the capture is ended either way).
    /// A capture inside `f` is an error.
    ///
    /// ```
    /// use brickprof::{BrickId, BrickProfiler, ProfilerConfig, timeline::SimDevice};
    /// let device = SimDevice::new(0);
    /// let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), device.timeline(64))?;
    /// let graph = device.capture(|| {
    ///     let t = prof.start_brick(BrickId::LmHead);
    ///     device.launch(1_000);
    ///     prof.stop_brick(t, 1);
    ///     prof.end_pass(1) // captured: its bricks become the graph's template
    /// })?;
    /// assert_eq!(device.counts().launches, 0, "a capture runs nothing");
    /// prof.graphs().adopt(graph)?;
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    pub fn capture(&self, f: impl FnOnce() -> Result<()>) -> Result<DeviceGraph> {
        let nested = || {
            Error::invalid_value(
                "sim capture",
                "inside another capture",
                "end the capture under way first",
            )
        };
        {
            let mut s = self.state.borrow_mut();
            if s.graphs.capturing() {
                return Err(nested());
            }
            s.graphs.begin_capture();
        }
        let done = f();
        let graph = self.state.borrow_mut().graphs.end_capture();
        done?;
        graph.ok_or_else(nested)
    }

    /// Make the executable of `exec` run the graph of `new`, a later capture (as
    /// `cuGraphExecUpdate`): returns the executable with its new graph, to adopt again.
    #[cfg(test)]
    pub(crate) fn update_graph(&self, exec: DeviceGraph, new: DeviceGraph) -> Result<DeviceGraph> {
        self.state.borrow_mut().graphs.update(exec, new)
    }

    /// Launch the executable graph (as `cuGraphLaunch`): one launch overhead on the host, then
    /// its nodes run in order on the stream, kernels with their durations (jittered anew at
    /// each replay), record nodes writing the stream's time into the events the timeline
    /// pointed them at. An unknown executable is an error.
    pub fn launch_graph(&self, graph: &DeviceGraph) -> Result<()> {
        let mut guard = self.state.borrow_mut();
        let s = &mut *guard;
        let (g, target) = s.graphs.launch(*graph)?;
        let host = s.host_ns + s.launch_overhead_ns;
        s.advance_host(host);
        // Node by node (no copy, no allocation: the bench times replays on this device).
        let mut i = 0;
        while let Some(node) = s.graphs.node(g, i) {
            i += 1;
            match node {
                Node::Kernel(ns) => s.run_kernel(ns),
                Node::Record(i) => {
                    let at = s.device_free_ns.max(s.host_ns);
                    if let Some(t) = target {
                        s.graphs.record(t, i, at);
                    }
                }
            }
        }
        Ok(())
    }

    /// Keep (`true`) or stop keeping every kernel's duration as it runs, for tests that check
    /// jittered runs exactly ([`Self::take_kernel_log`]). Off by default.
    #[cfg(test)]
    pub(crate) fn log_kernels(&self, on: bool) {
        let mut s = self.state.borrow_mut();
        s.kernel_log = on.then(Vec::new);
    }

    /// The durations of the kernels run since the log was turned on or last taken, in order.
    #[cfg(test)]
    pub(crate) fn take_kernel_log(&self) -> Vec<u64> {
        let mut s = self.state.borrow_mut();
        s.kernel_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
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
    pub(crate) fn host_clock(&self) -> HostClock {
        self.state.borrow().clock.clone()
    }

    /// What the device counted so far, and its virtual clocks now.
    pub fn counts(&self) -> DeviceCounts {
        let s = self.state.borrow();
        DeviceCounts {
            host_now_ns: s.host_ns,
            device_free_ns: s.device_free_ns,
            syncs: s.syncs,
            launches: s.launches,
            busy_ns: s.busy_ns,
            ..DeviceCounts::default()
        }
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
    /// The timestamp of live eager `mark`, complete or not.
    fn live(&self, mark: Mark) -> Result<u64> {
        let s = self.device.state.borrow();
        if let MarkKind::Replay {
            adopted,
            slot,
            index,
        } = graph::kind(mark)
        {
            return s.graphs.timestamp(adopted, slot, index);
        }
        if let MarkKind::Capture { .. } = graph::kind(mark) {
            return Err(Error::Timeline(
                "sim: a mark made during a capture is a graph node, not a timestamp".into(),
            ));
        }
        if mark == INVALID_MARK || mark < s.released || mark >= s.next {
            return Err(invalid_mark("sim"));
        }
        Ok(s.events[(mark % s.events.len() as u64) as usize])
    }

    fn event(&self, mark: Mark) -> Result<u64> {
        let at = self.live(mark)?;
        match graph::kind(mark) {
            // A replay's record node is complete once the virtual host time is past it (what
            // a query or a sync finds).
            MarkKind::Replay { .. } if at <= self.device.state.borrow().host_ns => return Ok(at),
            MarkKind::Replay { .. } => {
                return Err(Error::Timeline(format!(
                    "sim: replay event {mark:#x} is not complete: resolve only after a sync or \
                     a query that found the replay reached"
                )))
            }
            _ => {}
        }
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
        let mut guard = self.device.state.borrow_mut();
        let s = &mut *guard;
        // Captured or not is decided at the pass's first mark, as the CUDA timeline decides it
        // (a capture begun mid-pass does not turn the pass's later marks into nodes).
        let capturing = *s.pass_captured.get_or_insert_with(|| s.graphs.capturing());
        if capturing {
            return s.graphs.capture_mark().unwrap_or(INVALID_MARK);
        }
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
        s.graphs.release_all();
    }

    fn pass_ended(&mut self) {
        self.device.state.borrow_mut().pass_captured = None;
    }

    capabilities!(polling, calibrated, capture, graphs);
}

impl Capture for SimTimeline {
    /// As found at the pass's first mark: the stream was being captured.
    fn captured(&self) -> bool {
        self.device.state.borrow().pass_captured == Some(true)
    }
}

impl LaggedPolling for SimTimeline {
    /// The stream reached `mark` once virtual host time is at or past its timestamp.
    fn reached(&mut self, mark: Mark) -> Result<bool> {
        let at = self.live(mark)?;
        let mut s = self.device.state.borrow_mut();
        let done = at <= s.host_ns;
        if done && graph::kind(mark) == MarkKind::Eager {
            s.ready = s.ready.max(mark + 1);
        }
        Ok(done)
    }

    fn release_through(&mut self, mark: Mark) {
        let mut s = self.device.state.borrow_mut();
        if let MarkKind::Replay { adopted, slot, .. } = graph::kind(mark) {
            s.graphs.release(adopted, slot);
            return;
        }
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

/// The simulated device's graph replays: slots of events per adopted graph, rotated at each
/// replay (spec/sync-modes.md "Graph capture").
impl GraphReplay for SimTimeline {
    fn adopt(&mut self, graph: DeviceGraph, in_flight: usize) -> Result<usize> {
        self.device
            .state
            .borrow_mut()
            .graphs
            .adopt(graph, in_flight)
    }

    fn prepare_replay(&mut self, graph: DeviceGraph) -> Result<Option<ReplayMarks>> {
        self.device.state.borrow_mut().graphs.prepare(graph)
    }

    fn replay_mark(&self, replay: ReplayMarks, captured: Mark) -> Mark {
        Graphs::replay_mark(replay, captured)
    }

    fn forget(&mut self, graph: DeviceGraph) {
        self.device.state.borrow_mut().graphs.forget(graph);
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
                    let before = d.counts().busy_ns;
                    d.launch(1_000_000);
                    d.counts().busy_ns - before
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
        assert_eq!(d.counts().busy_ns, 1234);
    }

    // spec/sync-modes.md "Graph capture", "The simulated device": a capture runs nothing and
    // records nodes; each launch replays them into the slot prepared for it; a slot still
    // held is refused; a released one comes round again.
    #[test]
    fn graphs_capture_replay_and_rotate_their_slots() {
        let d = SimDevice::new(10);
        let mut t = d.timeline(8);
        let (mut a, mut b, mut c) = (0, 0, 0);
        let g = d
            .capture(|| {
                a = t.mark(0);
                d.launch(100);
                b = t.mark(0);
                d.launch(50);
                c = t.mark(0);
                assert!(t.captured(), "the pass's first mark fell in the capture");
                assert!(
                    d.capture(|| Ok(())).is_err(),
                    "a capture inside a capture is refused"
                );
                Ok(())
            })
            .unwrap();
        assert_eq!(
            (d.counts().launches, d.counts().device_free_ns),
            (0, 0),
            "nothing ran"
        );
        assert!(
            t.resolve_ns(a, b).is_err(),
            "a capture mark is not a timestamp"
        );
        t.pass_ended();
        let graphs = t.graphs().unwrap();
        assert_eq!(graphs.adopt(g, 2).unwrap(), 3, "three record nodes");
        let r0 = graphs.prepare_replay(g).unwrap().unwrap();
        let r1 = graphs.prepare_replay(g).unwrap().unwrap();
        let held = graphs.prepare_replay(g);
        assert!(held.is_err(), "slot 0 is still held");
        let (a0, b0, c0) = (
            graphs.replay_mark(r0, a),
            graphs.replay_mark(r0, b),
            graphs.replay_mark(r0, c),
        );
        let (a1, c1) = (graphs.replay_mark(r1, a), graphs.replay_mark(r1, c));
        assert_ne!(a0, a1, "two slots, two marks");
        // The second prepare pointed the nodes at slot 1: one launch records there.
        d.launch_graph(&g).unwrap();
        assert!(t.resolve_ns(a0, c0).is_err(), "slot 0 was not recorded");
        assert!(!t.reached(c1).unwrap(), "still running");
        d.synchronize();
        assert_eq!(t.resolve_ns(a1, c1).unwrap(), 150);
        assert_eq!(
            t.timestamp_ns(a1).unwrap(),
            30,
            "two captured launches, then the graph's"
        );
        t.release_through(b0);
        let graphs = t.graphs().unwrap();
        let r2 = graphs.prepare_replay(g).unwrap().unwrap();
        assert_eq!(graphs.replay_mark(r2, a), a0, "slot 0 again, once released");
        assert!(
            t.graphs().unwrap().prepare_replay(g).is_err(),
            "slot 1 is held"
        );
        t.recycle();
        assert!(
            t.graphs().unwrap().prepare_replay(g).is_ok(),
            "recycled: all free"
        );
        let unknown = DeviceGraph::from_raw(1, 2);
        assert!(d.launch_graph(&unknown).is_err());
        assert_eq!(t.graphs().unwrap().prepare_replay(unknown).unwrap(), None);
        assert!(
            t.graphs().unwrap().adopt(g, 1).is_err(),
            "nothing captured since"
        );
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
        assert_eq!(d.counts().host_now_ns, 305, "sync waits for the stream");
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
