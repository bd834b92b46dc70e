//! Layer and pass boundaries: when each stage runs (resolve per layer, per pass, on demand),
//! closing the books at the end of a pass, and the sampler's decisions at each boundary
//! (spec/sync-modes.md). The [`Passes`] part is this file's own.

use super::graphs::PassKind;
use super::marker::Marker;
use super::sampler::Sampler;
use super::tally::Head;
use super::{facts_of, resolve_into, BrickProfiler};
use crate::timeline::{is_captured, Timeline};
use crate::{model::Sampling, BrickCategory, PassShape, Phase, Result, SyncMode};

/// In Lagged mode, a calibration anchor is taken every this many passes (device timelines
/// also take one at each sync).
const ANCHOR_EVERY: u64 = 8;

/// Which pass this is, when it started, and how many leading passes are warm-up.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Passes {
    /// `end_pass` calls so far, warm-up included: the pass index of checksums and sampling.
    index: u64,
    /// Host ticks at the current pass's start.
    start: u64,
    /// Leading passes whose timings are discarded.
    warmup: u64,
    /// The current pass's shape, when it was given one (its phase chose the books).
    shape: Option<PassShape>,
}

impl Passes {
    /// Pass 0, started at `now`.
    pub(crate) fn new(warmup: u64, now: u64) -> Self {
        Passes {
            index: 0,
            start: now,
            warmup,
            shape: None,
        }
    }

    /// The current pass's phase: its shape's, or unspecified.
    pub(crate) fn phase(&self) -> Phase {
        self.shape.map_or(Phase::Unspecified, |s| s.phase())
    }

    /// Host ticks at the current pass's start.
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// The current pass's index.
    pub(crate) fn index(&self) -> u64 {
        self.index
    }

    /// The current pass's shape, when it was given one.
    pub(super) fn shape(&self) -> Option<PassShape> {
        self.shape
    }

    /// Forget the current pass's shape (a replay left open had given it one).
    pub(crate) fn take_shape(&mut self) -> Option<PassShape> {
        self.shape.take()
    }

    /// Back to pass 0, started at `now`.
    pub(crate) fn reset(&mut self, now: u64) {
        self.index = 0;
        self.start = now;
        self.shape = None;
    }
}

/// How `end_pass` got its pass's end: resolved already (Lagged), or synced and to resolve, with
/// the host clock read right after the sync.
enum PassEnd {
    Resolved(u64, Result<()>),
    Synced(u64, Result<bool>, Head),
}

/// The effective switch the hot path reads, for pass `index`; and, when the plan's choice of
/// traced passes changed, the timeline's tracing (spec/sync-modes.md "Sampled tracing"): once
/// per pass boundary, never on the hot path.
fn refresh_marking<T: Timeline>(marker: &mut Marker<T>, sampler: &mut Sampler, index: u64) {
    marker.set_switch(sampler.switch(index));
    if let Some((traced, detach)) = sampler.tracing_change(index) {
        let r = marker
            .timeline_mut()
            .device_records_mut()
            .map(|t| t.set_traced(traced, detach));
        if let Some(Err(e)) = r {
            marker.keep_error(e);
        }
    }
}

impl<T: Timeline> BrickProfiler<T> {
    /// Enter layer `layer`: bricks started until [`Self::end_layer`] are attributed to it. An
    /// index `>= layers` is counted and its bricks land in the [`crate::profile::RowKey::Unassigned`] row.
    #[inline]
    pub fn begin_layer(&mut self, layer: usize) {
        self.marker.enter_layer(layer);
        self.sample_layer_begin();
    }

    /// Leave the current layer. In [`SyncMode::PerLayer`] this syncs and resolves the layer's
    /// measurements; the first error, if any, is kept for [`Self::finalize`].
    pub fn end_layer(&mut self) {
        self.sample_layer_end();
        self.marker.leave_layer();
        if self.marker.mode() == SyncMode::PerLayer {
            self.resolve_keeping_error();
        }
    }

    /// Sync the timeline once and resolve every stopped brick into the statistics (bricks
    /// still open stay open). Returns the first error since the last call (a failed sync or
    /// resolve; the measurements concerned are counted as dropped, every other one is
    /// recorded).
    pub fn finalize(&mut self) -> Result<()> {
        let r = self.resolve();
        self.publish_facts();
        match self.marker.take_error() {
            Some(e) => Err(e),
            None => r,
        }
    }

    /// Mark the start of a forward pass (for per-pass time and tokens/s). Optional: without it
    /// a pass runs from the end of the previous one (or from construction/reset).
    pub fn begin_pass(&mut self) {
        self.begin_pass_of(Phase::Unspecified);
    }

    /// `begin_pass` for a pass of `phase`: with vendor ranges on, the pass's range
    /// (`pass/{phase}/{index}`, spec/imports.md "Pass ranges") opens here, around the bricks'.
    fn begin_pass_of(&mut self, phase: Phase) {
        if self.graphs.replay_open() {
            self.close_open_replay();
        }
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        if let Some(r) = self.marker.ranges_mut() {
            r.push_pass(phase, self.passes.index);
        }
        let _ = phase;
        self.passes.start = self.marker.now();
        self.poll_live();
    }

    /// Give the current pass `shape`: its bricks and its wall time go into the books of the
    /// shape's [`Phase`] (prefill, decode, mixed), chosen here once, so a brick costs nothing
    /// more (spec/hot-path.md "Passes and phases"). Call it after [`Self::begin_pass`] (or
    /// [`Graphs::begin_replay`](super::Graphs::begin_replay)), or alone for a pass that runs
    /// from the previous `end_pass`: it does not move the pass's start. Bricks started from now
    /// on, and the pass's wall time at `end_pass`, go into the shape's phase; bricks started
    /// before keep theirs. Allocates nothing.
    ///
    /// ```
    /// use brickprof::{model::PhaseFilter, BrickId, BrickProfiler, PassShape, Phase, ProfilerConfig};
    /// let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(1))?;
    /// prof.begin_pass();
    /// prof.set_pass_shape(PassShape::new(16, 1, 16)?); // the prompt
    /// let t = prof.start_brick(BrickId::QkvProjection);
    /// prof.stop_brick(t, 16);
    /// prof.end_pass(16)?;
    /// prof.begin_pass();
    /// prof.set_pass_shape(PassShape::new(1, 1, 17)?); // one decode step
    /// let t = prof.start_brick(BrickId::QkvProjection);
    /// prof.stop_brick(t, 1);
    /// prof.end_pass(1)?;
    /// assert_eq!(prof.view().row_stats(PhaseFilter::Only(Phase::Prefill), None, BrickId::QkvProjection).unwrap().summary().count, 1);
    /// assert_eq!(prof.view().row_stats(PhaseFilter::Only(Phase::Decode), None, BrickId::QkvProjection).unwrap().summary().count, 1);
    /// assert_eq!(prof.view().brick_stats(BrickId::QkvProjection).summary().count, 2);
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    pub fn set_pass_shape(&mut self, shape: PassShape) {
        // The pass range `begin_pass` opened takes the shape's phase while no brick is open
        // inside it (spec/imports.md "Pass ranges").
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        if self.marker.open_bricks() == 0 {
            let index = self.passes.index;
            if let Some(r) = self.marker.ranges_mut() {
                r.rename_pass(shape.phase(), index);
            }
        }
        self.passes.shape = Some(shape);
        self.marker.set_phase(shape.phase());
        self.shelf.write().tally.set_current(Some(shape));
    }

    /// End a forward pass that produced `tokens` tokens (for a shaped pass, its phase's
    /// tokens: prompt tokens for a prefill, generated tokens for a decode step): sync once, read the pass's end on the
    /// host clock (so resolving is not billed to the model), resolve, and close the books:
    /// bricks still open are counted as [`crate::model::Counters::unclosed`] and discarded, so the
    /// profiler is always clean afterwards. The first `warmup_passes` passes are discarded
    /// (every timing statistic is cleared). A pass whose stream was being captured into a graph
    /// (CUDA graphs) is not timed: it is counted in [`crate::model::Counters::captured_passes`] only.
    ///
    /// In [`SyncMode::Lagged`] it does not wait: the pass's end is read on the host clock at
    /// once, the pass is put in flight, and every earlier pass the device has finished is
    /// resolved (spec/sync-modes.md "Lagged"). It waits only when more than
    /// `max_passes_in_flight` passes are in flight, or when the pending buffer or the
    /// timeline's pool would not hold another pass ([`crate::model::Counters::blocking_waits`]).
    pub fn end_pass(&mut self, tokens: u64) -> Result<()> {
        if self.graphs.replay_open() {
            self.close_open_replay();
        }
        self.end_pass_as(tokens, PassKind::Eager)
    }

    /// End a pass of `kind`: an ordinary pass, a timed replay (its bricks were pushed into the
    /// pending buffer by `end_replay`), or an untimed replay (counted, not in the passes).
    pub(super) fn end_pass_as(&mut self, tokens: u64, kind: PassKind) -> Result<()> {
        self.sample_layer_end();
        let warm = self.ledger().books.warmup_excluded() < self.passes.warmup;
        let captured = kind == PassKind::Eager && is_captured(self.marker.timeline());
        if captured {
            self.keep_capture(); // a graph's template, once adopted
        }
        // Counted in the passes: neither captured nor an untimed replay.
        let counted = !captured && kind != PassKind::Untimed;
        let end = if captured && self.marker.mode() == SyncMode::Lagged {
            // Polling the earlier passes now would break the capture (CUDA's global capture
            // mode): drop this pass's marks only; the passes in flight resolve later.
            let now = self.marker.now();
            self.marker.drop_captured_pass();
            let head = self.head(now, false);
            self.shelf.write().tally.push(head, false);
            PassEnd::Resolved(now, Ok(()))
        } else if self.marker.mode() == SyncMode::Lagged {
            let now = self.marker.now();
            let head = self.head(now, !warm && counted);
            PassEnd::Resolved(now, self.end_pass_lagged(warm, now, head))
        } else {
            let synced = self.marker.sync_closed();
            let now = self.marker.now();
            PassEnd::Synced(now, synced, self.head(now, !warm && counted))
        };
        // One write of the ledger for the pass (under its lock once shared: spec/front-doors.md
        // "Publishing"): the pass's measurements, the pass itself, the facts of its end.
        let mut ledger = self.shelf.write();
        let (now, resolved) = match end {
            PassEnd::Resolved(now, resolved) => (now, resolved),
            PassEnd::Synced(now, synced, head) => {
                let resolved = resolve_into(&mut self.marker, &mut ledger, synced);
                self.marker.close_pass();
                // Everything of the pass is resolved: its tally closes now.
                ledger.tally.close_now(head);
                (now, resolved)
            }
        };
        let pass_ns = self.marker.clock().ticks_to_ns(self.passes.start, now);
        let shape = self.passes.shape;
        if captured {
            // Captured into a graph: nothing ran, nothing was timed (spec/sync-modes.md "CUDA").
            ledger.books.record_captured_pass();
        } else if kind == PassKind::Untimed {
            // A replay not timed (spec/sync-modes.md "Graph capture"): counted only.
            ledger.books.record_untimed_replay();
        } else if warm {
            ledger.books.discard_warmup_pass();
        } else {
            ledger
                .books
                .record_pass(pass_ns, tokens, self.passes.phase());
            if kind == PassKind::Replay {
                ledger.books.record_replay();
            }
        }
        if let (Some(trace), true) = (ledger.trace.as_mut(), counted) {
            trace.record_pass(now, tokens, pass_ns, self.passes.shape);
        }
        self.passes.start = self.marker.now();
        self.passes.index += 1;
        // The next pass is unspecified until it is given a shape.
        ledger.tally.set_current(None);
        if self.passes.shape.take().is_some() {
            self.marker.set_phase(Phase::Unspecified);
        }
        if counted {
            self.sampler.counted_pass_ended();
        }
        refresh_marking(&mut self.marker, &mut self.sampler, self.passes.index);
        self.checksums.new_pass();
        ledger.facts = facts_of(&self.marker, &self.sampler, &self.checksums, &self.graphs);
        if counted {
            let in_flight = self.marker.passes_in_flight();
            let pass = (now, tokens, pass_ns, shape);
            super::live::capture_pass_end(&mut ledger, self.live.as_ref(), pass, in_flight);
        }
        drop(ledger);
        // The pass's vendor range, if `begin_pass` opened one, closes after its sync.
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        if let Some(r) = self.marker.ranges_mut() {
            r.pop_pass();
        }
        // The next pass starts now, unless `begin_pass` says later.
        self.poll_live();
        match self.marker.take_error() {
            Some(e) => Err(e),
            None => resolved,
        }
    }

    /// Lagged `end_pass`: seal the pass, resolve every pass in flight whose end the device
    /// reached (oldest first, each whole), and wait only when it must.
    fn end_pass_lagged(&mut self, warm: bool, now: u64, head: Head) -> Result<()> {
        let in_flight = self.marker.passes_in_flight();
        let mut wait = self.marker.seal_pass(warm, now);
        // Sealed: its tally closes when it resolves; else nothing of it is pending and it
        // closes once every older pass has (spec/hot-path.md "Pass series").
        let sealed = self.marker.passes_in_flight() > in_flight;
        self.shelf.write().tally.push(head, sealed);
        let mut first = Ok(());
        while !wait {
            match self.marker.oldest_reached() {
                Ok(Some(warm)) => {
                    let r = self.resolve_oldest(warm);
                    first = first.and(r);
                }
                Ok(None) => break,
                Err(e) => {
                    first = first.and(Err(e));
                    wait = true;
                }
            }
        }
        if wait || self.marker.wait_due() {
            self.marker.count_blocking_wait();
            let r = self.resolve();
            first = first.and(r);
        }
        self.anchor_due();
        first
    }

    /// Every [`ANCHOR_EVERY`] passes, one more calibration anchor (on the profiler's own
    /// stream or queue, never the engine's); an error is kept for `finalize`.
    fn anchor_due(&mut self) {
        if self.passes.index % ANCHOR_EVERY == ANCHOR_EVERY - 1 {
            let anchored = self
                .marker
                .timeline_mut()
                .calibrated_mut()
                .map(|c| c.anchor());
            if let Some(Err(e)) = anchored {
                self.marker.keep_error(e);
            }
        }
    }

    /// After a flush of a full pending buffer within the pass, begun at host ticks `before`:
    /// in Lagged mode the wait for the device is the profiler's, not the engine's (its
    /// `end_pass` does not wait), so the pass's start moves later by that long and its wall
    /// time (TTFT, TPOT) keeps the wait out, as `end_pass`'s own waits are kept out
    /// (spec/sync-modes.md "Lagged"). On the cold path of a start, never the hot one.
    #[cold]
    pub(super) fn exclude_flush_wait(&mut self, before: u64) {
        if self.marker.mode() == SyncMode::Lagged {
            let after = self.marker.now();
            let waited = after.saturating_sub(before);
            self.passes.start = self.passes.start.saturating_add(waited).min(after);
        }
    }

    /// The tally's head of the pass ending at `now`: its shape and wall time, and whether it
    /// counts (`keep`: not warm-up, not captured).
    fn head(&self, now: u64, keep: bool) -> Head {
        Head {
            shape: self.passes.shape,
            wall_ns: self.marker.clock().ticks_to_ns(self.passes.start, now),
            keep,
        }
    }

    // ---- sampling (spec/sync-modes.md "Sampling")

    /// At construction: register the `layer` brick that [`Sampling::Layers`] times.
    pub(super) fn prepare_sampling(&mut self) -> Result<()> {
        if self.sampler.sampling() == Sampling::Layers {
            let h = self.register(Sampling::LAYER_BRICK, BrickCategory::Other)?;
            self.sampler.set_layer_brick(h);
        }
        self.refresh_marking();
        Ok(())
    }

    /// Recompute the effective switch the hot path reads.
    pub(super) fn refresh_marking(&mut self) {
        refresh_marking(&mut self.marker, &mut self.sampler, self.passes.index);
    }

    /// `begin_layer` (after the row is set): under [`Sampling::Layers`], start the layer's
    /// measurement and stop marking the bricks inside it.
    fn sample_layer_begin(&mut self) {
        let Some(layer) = self.sampler.layer_brick() else {
            return;
        };
        self.sample_layer_end();
        let token = self.start_brick(layer);
        self.sampler.entered_layer(token);
        self.refresh_marking();
    }

    /// `end_layer` and `end_pass`: under [`Sampling::Layers`], stop the layer's measurement.
    fn sample_layer_end(&mut self) {
        let (was_in_layer, open) = self.sampler.leave_layer();
        if was_in_layer {
            self.refresh_marking();
        }
        if let Some(token) = open {
            self.stop_brick(token, 1);
        }
    }
}
