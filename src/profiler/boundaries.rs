//! Layer and pass boundaries, and resolving pending measurements: the one sync per pass (or
//! per layer) and the conversion of marks into durations (spec/sync-modes.md).

use super::{BrickProfiler, Pending};
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
            self.counters.out_of_range_layers += 1;
            (self.layers + 1) as u16
        };
    }

    /// Leave the current layer. In [`SyncMode::PerLayer`] this syncs and resolves the layer's
    /// measurements; the first error, if any, is kept for [`Self::finalize`].
    pub fn end_layer(&mut self) {
        self.current_row = self.layers as u16;
        if self.mode == SyncMode::PerLayer {
            if let Err(e) = self.resolve_pending_with(None) {
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
    }

    /// Sync the timeline once and resolve every pending measurement into the statistics.
    /// Returns the first error since the last call (a failed sync or resolve; the measurements
    /// concerned are counted as dropped, every other one is recorded).
    pub fn finalize(&mut self) -> Result<()> {
        let r = self.resolve_pending_with(None);
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

    /// End a forward pass that produced `tokens` tokens: finalize, then count the pass. The
    /// first `warmup_passes` passes are discarded (every timing statistic is cleared).
    pub fn end_pass(&mut self, tokens: u64) -> Result<()> {
        let r = self.finalize();
        let now = self.clock.ticks();
        let pass_ns = self.clock.ticks_to_ns(self.pass_start, now);
        if self.counters.warmup_passes_excluded < self.warmup_passes {
            self.counters.warmup_passes_excluded += 1;
            self.clear_timings();
        } else {
            self.counters.passes += 1;
            self.counters.tokens += tokens;
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
        self.checksum_calls.fill(0);
        r
    }

    pub(super) fn resolve_pending_with(&mut self, extra: Option<Pending>) -> Result<()> {
        if self.pending.is_empty() && extra.is_none() {
            return Ok(());
        }
        self.counters.syncs += 1;
        if let Err(e) = self.timeline.sync() {
            self.counters.dropped += (self.pending.len() + extra.iter().count()) as u64;
            self.pending.clear();
            self.recycle_if_idle();
            return Err(e);
        }
        let mut first_err = None;
        let mut pending = std::mem::take(&mut self.pending);
        for p in pending.iter().chain(extra.iter()) {
            match self.timeline.resolve_ns(p.start, p.end) {
                Ok(ns) => {
                    let host_ns = self.clock.ticks_to_ns(p.host_start, p.host_end);
                    self.record_resolved(p.slot, p.row, ns, host_ns, p.work);
                    if self.trace.is_some() {
                        let device = if T::HOST_IS_DEVICE {
                            None
                        } else {
                            self.timeline.timestamp_ns(p.start).ok().map(|at| (at, ns))
                        };
                        self.trace_event(p.slot, p.row, p.host_start, host_ns, device);
                    }
                }
                Err(e) => {
                    self.counters.dropped += 1;
                    first_err.get_or_insert(e);
                }
            }
        }
        pending.clear();
        self.pending = pending; // keeps its capacity
        self.recycle_if_idle();
        first_err.map_or(Ok(()), Err)
    }
}
