//! spec/sync-modes.md "Timeline capabilities": a timeline without the `LaggedPolling`
//! capability in Lagged mode gives the same durations as Deferred, and each pass end, which it
//! cannot poll, is a sync counted in `Counters::blocking_waits` (never a silent wait).

use brickprof::{
    timeline::{HostClock, Mark, SimDevice, SimTimeline, TimelineKind},
    BrickId, BrickProfiler, ProfilerConfig, Result, SyncMode, Timeline,
};

const US: u64 = 1_000;

/// The simulated device behind the core only: no polling, no calibration.
struct CoreOnly(SimTimeline);

impl Timeline for CoreOnly {
    fn kind(&self) -> TimelineKind {
        self.0.kind()
    }
    fn host_clock(&self) -> HostClock {
        self.0.host_clock()
    }
    fn mark(&mut self, host_ticks: u64) -> Mark {
        self.0.mark(host_ticks)
    }
    fn sync(&mut self) -> Result<()> {
        self.0.sync()
    }
    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        self.0.resolve_ns(start, end)
    }
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        self.0.timestamp_ns(mark)
    }
    fn recycle(&mut self) {
        self.0.recycle();
    }
}

/// `passes` passes of two bricks whose kernels take `us` and `2 us` µs (the pass index's
/// multiple, so that a measurement resolved with another pass's marks would show), the engine
/// never waiting for the stream. Returns the profiler and the device's sync count.
fn run<T: Timeline>(
    mode: SyncMode,
    passes: u64,
    timeline: impl FnOnce(&SimDevice) -> T,
) -> (BrickProfiler<T>, u64) {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        sync_mode: mode,
        pending_capacity: 16,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, timeline(&device)).unwrap();
    for pass in 1..=passes {
        prof.begin_pass();
        for (brick, us) in [(BrickId::RmsNorm, pass), (BrickId::LmHead, 2 * pass)] {
            let t = prof.start_brick(brick);
            device.launch(us * US);
            prof.stop_brick(t, 1);
        }
        device.host_work(100 * US); // longer than the pass's kernels: the device keeps up
        prof.end_pass(1).unwrap();
    }
    prof.finalize().unwrap();
    (prof, device.counts().syncs)
}

fn totals<T: Timeline>(prof: &BrickProfiler<T>) -> Vec<(u64, u64)> {
    [BrickId::RmsNorm, BrickId::LmHead]
        .iter()
        .map(|&b| {
            (
                prof.view().brick_stats(b).summary().count,
                prof.view().brick_stats(b).summary().total_ns,
            )
        })
        .collect()
}

#[test]
fn lagged_without_polling_syncs_each_pass_and_counts_it() {
    let passes = 12;
    let (deferred, _) = run(SyncMode::Deferred, passes, |d| d.timeline(64));
    let (core, device_syncs) = run(SyncMode::Lagged, passes, |d| CoreOnly(d.timeline(64)));
    let expected = (1..=passes).sum::<u64>() * US;
    assert_eq!(
        totals(&deferred),
        vec![(passes, expected), (passes, 2 * expected)]
    );
    assert_eq!(
        totals(&core),
        totals(&deferred),
        "the same durations as Deferred"
    );
    let c = core.view().counters;
    assert_eq!(c.blocking_waits, passes, "every pass end waited, visibly");
    assert!(c.syncs >= passes, "each wait is a sync too: {c:?}");
    assert_eq!(c.syncs, device_syncs, "no sync the counters do not show");
    assert_eq!(core.view().in_flight.passes, 0);
    // The contrast: the same device with its polling never waits in this loop, so the waits
    // above come from the missing capability.
    let (polled, _) = run(SyncMode::Lagged, passes, |d| d.timeline(64));
    assert_eq!(totals(&polled), totals(&deferred));
    assert_eq!(polled.view().counters.blocking_waits, 0);
}
