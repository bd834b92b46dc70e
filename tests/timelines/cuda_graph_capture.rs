//! spec/sync-modes.md "CUDA" (graph capture), the profiler's side, without a driver: a pass
//! whose timeline reports `Capture::captured` is never synchronized or resolved, is counted in
//! `Counters::captured_passes` (not in `passes`, tokens or pass times), is not an error, and
//! the table names it; the timeline hears of every pass's end. `tests/cuda/cuda_standin.rs` checks
//! the CUDA timeline's side on a stand-in driver.

use brickprof::output::{render_table, TableOptions};
use brickprof::{
    timeline::{Capture, HostClock, Mark, TimelineKind},
    BrickId, BrickProfiler, ProfilerConfig, SyncMode, Timeline,
};

/// A device timeline whose stream is captured during the passes `captured` says.
#[derive(Debug)]
struct Capturing {
    clock: HostClock,
    /// Which passes are captured, by index.
    captured: Vec<bool>,
    pass: usize,
    syncs: u64,
    resolves: u64,
    passes_ended: u64,
}

impl Timeline for Capturing {
    fn kind(&self) -> TimelineKind {
        TimelineKind::Cuda
    }
    fn host_clock(&self) -> HostClock {
        self.clock.clone()
    }
    fn mark(&mut self, host_ticks: u64) -> Mark {
        host_ticks
    }
    fn sync(&mut self) -> brickprof::Result<()> {
        assert!(
            !self.captured(),
            "a captured stream must never be synchronized"
        );
        self.syncs += 1;
        Ok(())
    }
    fn resolve_ns(&mut self, start: Mark, end: Mark) -> brickprof::Result<u64> {
        assert!(
            !self.captured(),
            "a captured pass's marks are not timestamps"
        );
        self.resolves += 1;
        Ok(self.clock.ticks_to_ns(start, end))
    }
    fn timestamp_ns(&mut self, _mark: Mark) -> brickprof::Result<u64> {
        Ok(0)
    }
    fn pass_ended(&mut self) {
        self.pass += 1;
        self.passes_ended += 1;
    }
    fn capture(&self) -> Option<&dyn Capture> {
        Some(self)
    }
}

impl Capture for Capturing {
    fn captured(&self) -> bool {
        self.captured.get(self.pass).copied().unwrap_or(false)
    }
}

#[test]
fn a_captured_pass_is_counted_not_timed_in_every_sync_mode() {
    for mode in [SyncMode::Immediate, SyncMode::PerLayer, SyncMode::Deferred] {
        let timeline = Capturing {
            clock: HostClock::default(),
            captured: vec![false, true, true, false],
            pass: 0,
            syncs: 0,
            resolves: 0,
            passes_ended: 0,
        };
        let config = ProfilerConfig {
            layers: 1,
            sync_mode: mode,
            pending_capacity: 2, // a captured pass overflows the buffer too
            ..ProfilerConfig::default()
        };
        let mut prof = BrickProfiler::with_timeline(config, timeline).unwrap();
        for _ in 0..4 {
            prof.begin_layer(0);
            let outer = prof.start_brick(BrickId::LmHead);
            for _ in 0..3 {
                let t = prof.start_brick(BrickId::RmsNorm);
                prof.stop_brick(t, 1);
            }
            prof.stop_brick(outer, 1);
            prof.end_layer();
            prof.end_pass(7).expect("a captured pass is not an error");
        }
        let c = prof.view().counters;
        assert_eq!(
            (c.passes, c.tokens, c.captured_passes, c.dropped),
            (2, 14, 2, 0),
            "{mode}"
        );
        assert_eq!(
            prof.view().brick_stats(BrickId::RmsNorm).summary().count,
            6,
            "{mode}"
        );
        assert_eq!(
            prof.view().brick_stats(BrickId::LmHead).summary().count,
            2,
            "{mode}"
        );
        assert_eq!(
            prof.profile().passes.summary().count,
            2,
            "{mode}: captured passes have no pass time"
        );
        assert_eq!(prof.timeline().passes_ended, 4, "{mode}");
        assert!(
            prof.timeline().syncs > 0 && prof.timeline().resolves == 8,
            "{mode}"
        );
        let table = render_table(&prof.profile(), &TableOptions::default());
        assert!(
            table.contains("2 passes captured into graphs (not timed themselves)"),
            "{mode}: {table}"
        );
    }
}

#[test]
fn no_captured_pass_no_footer_line() {
    let mut prof = BrickProfiler::new(ProfilerConfig::default()).unwrap();
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
    assert_eq!(prof.view().counters.captured_passes, 0);
    let table = render_table(&prof.profile(), &TableOptions::default());
    assert!(!table.contains("captured"), "{table}");
}
