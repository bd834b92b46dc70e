//! The opt-in timeline of every measurement, as plain data: a bounded `TraceBuffer` filled by
//! the profiler (capacity fixed at construction, overflow counted), and the [`TraceView`] a
//! profiler hands out, with the [`RunMeta`] of the run it belongs to. Nothing here writes
//! a file: the trace writers (Perfetto protobuf, Chrome JSON, into a file or memory) live in
//! [`crate::output`] and consume a view. Specified in `spec/traces.md`.

use serde::{Deserialize, Serialize};

use crate::model::phase::PassShape;
use crate::model::registry::BrickRegistry;
use crate::profile::RunMeta;

/// Which clock a trace event was measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Track {
    /// CPU timeline: host and device time are one clock.
    Cpu,
    /// Host dispatch time (start to stop call) on an asynchronous timeline.
    Host,
    /// Device time (resolved marks) on an asynchronous timeline.
    Device,
}

/// One measurement on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceEvent {
    /// Start, ns since the track's origin.
    pub start_ns: u64,
    /// Duration, ns.
    pub dur_ns: u64,
    /// Brick slot.
    pub slot: u16,
    /// Layer row (`layers` = model, `layers + 1` = unassigned).
    pub row: u16,
    /// Which clock.
    pub track: Track,
}

/// One pass as the trace keeps it: when it ran, its tokens/s, and its shape when it had one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PassSample {
    /// Start of the pass (its end minus its wall time), ns since the host origin.
    pub start_ns: u64,
    /// End of the pass, ns since the host origin.
    pub at_ns: u64,
    /// Tokens per second over that pass.
    pub tokens_per_sec: f64,
    /// The pass's shape, when it was begun with one (a trace draws shaped passes as slices).
    pub shape: Option<PassShape>,
}

/// The bounded event log. Allocated once; pushing never allocates.
#[derive(Debug, Clone)]
pub(crate) struct TraceBuffer {
    events: Vec<TraceEvent>,
    passes: Vec<PassSample>,
    capacity: usize,
    dropped: u64,
}

impl TraceBuffer {
    /// A buffer for `capacity` events (and as many pass samples).
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self::with_capacities(capacity, capacity.min(1 << 16))
    }

    /// A buffer for `capacity` events and `passes` pass samples.
    pub(crate) fn with_capacities(capacity: usize, passes: usize) -> Self {
        TraceBuffer {
            events: Vec::with_capacity(capacity),
            passes: Vec::with_capacity(passes),
            capacity,
            dropped: 0,
        }
    }

    /// Record an event, or count it as dropped when the buffer is full.
    #[inline]
    pub(crate) fn push(&mut self, e: TraceEvent) {
        if self.events.len() < self.capacity {
            self.events.push(e);
        } else {
            self.dropped += 1;
        }
    }

    /// Record a pass sample (dropped silently past its capacity).
    pub(crate) fn push_pass(&mut self, p: PassSample) {
        if self.passes.len() < self.passes.capacity() {
            self.passes.push(p);
        }
    }

    /// The events, in recording order.
    pub(crate) fn events(&self) -> &[TraceEvent] {
        &self.events
    }

    /// The pass samples.
    pub(crate) fn passes(&self) -> &[PassSample] {
        &self.passes
    }

    /// Events that did not fit.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Forget everything (keeps the capacity).
    pub(crate) fn clear(&mut self) {
        self.events.clear();
        self.passes.clear();
        self.dropped = 0;
    }
}

/// A profiler's trace as plain data, borrowed: what every trace writer consumes
/// ([`crate::output::write_output`], [`crate::output::Output::write`]). Taken with
/// [`crate::profiler::View::trace_view`], or built by hand from events.
#[derive(Debug, Clone)]
pub struct TraceView<'a> {
    /// The events, in recording order.
    pub events: &'a [TraceEvent],
    /// The passes: their tokens/s samples, and their shapes.
    pub passes: &'a [PassSample],
    /// The names and categories of the bricks the events refer to by slot.
    pub registry: &'a BrickRegistry,
    /// The run the trace belongs to: the facts its profile carries too (trace events that did
    /// not fit are `meta.counters.trace_dropped`).
    pub meta: RunMeta,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_buffer_counts_drops() {
        let mut b = TraceBuffer::with_capacity(2);
        let e = TraceEvent {
            start_ns: 0,
            dur_ns: 1,
            slot: 0,
            row: 0,
            track: Track::Cpu,
        };
        for _ in 0..5 {
            b.push(e);
        }
        assert_eq!((b.events().len(), b.dropped()), (2, 3));
    }
}
