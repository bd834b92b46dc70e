//! Layer and pass boundaries: when the resolve stage runs (per layer, per pass, on demand),
//! and closing the books at the end of a pass (spec/sync-modes.md).

use super::{BrickProfiler, NO_ENTRY};
use crate::timeline::Timeline;
use crate::trace::PassSample;
use crate::{Result, SyncMode, Work};

impl<T: Timeline> BrickProfiler<T> {
    /// Enter layer `layer`: bricks started until [`Self::end_layer`] are attributed to it. An
    /// index `>= layers` is counted and its bricks land in the [`crate::LayerRow::Unassigned`] row.
    #[inline]
    pub fn begin_layer(&mut self, layer: usize) {
        self.current_row = if layer < self.layers {
            layer as u16
        } else {
            self.counters.out_of_range_layers = self.counters.out_of_range_layers.saturating_add(1);
            (self.layers + 1) as u16
        };
        self.sample_layer_begin();
    }

    /// Leave the current layer. In [`SyncMode::PerLayer`] this syncs and resolves the layer's
    /// measurements; the first error, if any, is kept for [`Self::finalize`].
    pub fn end_layer(&mut self) {
        self.sample_layer_end();
        self.current_row = self.layers as u16;
        if self.mode == SyncMode::PerLayer {
            self.resolve_now();
        }
    }

    /// Sync the timeline once and resolve every stopped brick into the statistics (bricks
    /// still open stay open). Returns the first error since the last call (a failed sync or
    /// resolve; the measurements concerned are counted as dropped, every other one is
    /// recorded).
    pub fn finalize(&mut self) -> Result<()> {
        let r = self.resolve_pending();
        match self.error.take() {
            Some(e) => Err(e),
            None => r,
        }
    }

    /// Mark the start of a forward pass (for per-pass time and tokens/s). Optional: without it
    /// a pass runs from the end of the previous one (or from construction/reset).
    pub fn begin_pass(&mut self) {
        self.pass_start = self.clock.ticks();
    }

    /// End a forward pass that produced `tokens` tokens: sync once, read the pass's end on the
    /// host clock (so resolving is not billed to the model), resolve, and close the books:
    /// bricks still open are counted as [`crate::Counters::unclosed`] and discarded, so the
    /// profiler is always clean afterwards. The first `warmup_passes` passes are discarded
    /// (every timing statistic is cleared).
    pub fn end_pass(&mut self, tokens: u64) -> Result<()> {
        self.sample_layer_end();
        let synced = self.sync_closed();
        let now = self.clock.ticks();
        let resolved = self.resolve_synced(synced);
        self.close_books();
        let pass_ns = self.clock.ticks_to_ns(self.pass_start, now);
        if self.counters.warmup_passes_excluded < self.warmup_passes {
            self.counters.warmup_passes_excluded += 1;
            self.clear_timings();
        } else {
            self.counters.passes = self.counters.passes.saturating_add(1);
            self.counters.tokens = self.counters.tokens.saturating_add(tokens);
            self.pass_stats
                .record(pass_ns, pass_ns, Work::elements(tokens));
        }
        let at_ns = self.clock.ticks_to_ns(self.host_origin, now);
        if let Some(trace) = self.trace.as_mut() {
            trace.push_pass(PassSample {
                at_ns,
                tokens_per_sec: crate::stats::per_sec(tokens, pass_ns),
            });
        }
        self.pass_start = self.clock.ticks();
        self.pass_index += 1;
        self.refresh_marking();
        self.cells.new_pass();
        match self.error.take() {
            Some(e) => Err(e),
            None => resolved,
        }
    }

    /// Discard bricks still open (leaked tokens), counting them; recycle the timeline.
    fn close_books(&mut self) {
        if !self.entries.is_empty() {
            self.counters.unclosed = self
                .counters
                .unclosed
                .saturating_add(u64::from(self.open_count));
            self.entries.clear();
            self.open_count = 0;
            self.open = NO_ENTRY;
            self.timeline.recycle();
        }
    }
}
