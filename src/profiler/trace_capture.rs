//! A live handle's trace capture while the profiler records it (src/profiler/live.rs asks for
//! and hands over captures; this is the part the ledger keeps and the resolve stage feeds,
//! spec/live.md "Captures").

use super::measurement::Measurement;
use super::tracer::Tracer;
use crate::profile::trace::TraceBuffer;
use crate::PassShape;

/// A capture being recorded, in the ledger (so the resolve stage can feed it).
#[derive(Debug)]
pub(crate) struct TraceCapture {
    tracer: Tracer,
    /// Passes still to end.
    left: u32,
    /// Host ticks: the first captured pass's start. Measurements that started before belong
    /// to earlier passes.
    from: u64,
    /// Host ticks: the last captured pass's end, once it ended.
    to: Option<u64>,
    /// Lagged: passes in flight when the last one ended, still to resolve.
    drain: usize,
}

impl TraceCapture {
    /// Feed one measurement of brick `slot` in row `row`, when it started inside the capture.
    #[inline]
    pub(crate) fn record(&mut self, slot: u16, row: u16, m: &Measurement) {
        // Half-open, [first pass's start, last pass's end): a brick of the pass after the last
        // one may start on the very tick that pass ended (a clock that did not move between).
        if m.host_start >= self.from && self.to.is_none_or(|to| m.host_start < to) {
            self.tracer.record(slot, row, m);
        }
    }

    /// A capture of `passes` passes into `tracer`, the first starting at host ticks `from`.
    pub(crate) fn new(tracer: Tracer, passes: u32, from: u64) -> Self {
        TraceCapture {
            tracer,
            left: passes,
            from,
            to: None,
            drain: 0,
        }
    }

    /// A pass ended at host ticks `now` with `in_flight` passes in flight after it (Lagged):
    /// counted while the capture wants passes. Whether the capture is complete: its last pass
    /// ended and every pass in flight at that end resolved.
    pub(crate) fn pass_ended(
        &mut self,
        pass: (u64, u64, u64, Option<PassShape>),
        in_flight: usize,
    ) -> bool {
        let (now, tokens, pass_ns, shape) = pass;
        if self.to.is_none() {
            self.tracer.record_pass(now, tokens, pass_ns, shape);
            self.left = self.left.saturating_sub(1);
            if self.left == 0 {
                self.to = Some(now);
                self.drain = in_flight;
            }
        }
        self.to.is_some() && (self.drain == 0 || in_flight == 0)
    }

    /// The recorded events.
    pub(crate) fn into_buffer(self) -> TraceBuffer {
        self.tracer.into_buffer()
    }

    /// A pass in flight resolved (Lagged).
    pub(crate) fn resolved_one(&mut self) {
        if self.to.is_some() {
            self.drain = self.drain.saturating_sub(1);
        }
    }

    /// Whether the capture has not seen a pass end yet and would now start at `start`.
    pub(crate) fn may_restart(&self, start: u64) -> bool {
        self.to.is_none() && self.from != start && self.tracer.buffer().passes().is_empty()
    }

    /// The first captured pass starts at `start` (a `begin_pass` after the capture began at
    /// the previous pass's end).
    pub(crate) fn restart(&mut self, start: u64) {
        if self.may_restart(start) {
            self.from = start;
        }
    }
}
