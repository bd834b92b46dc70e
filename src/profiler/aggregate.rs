//! The aggregate stage: a resolved measurement goes into its (row, slot) statistics cell and,
//! when tracing, into the bounded trace log. Never allocates.

use super::BrickProfiler;
use crate::timeline::Mark;
use crate::timeline::Timeline;
use crate::trace::{TraceEvent, Track};
use crate::Work;

impl<T: Timeline> BrickProfiler<T> {
    /// Record a resolved measurement of statistics cell `cell`: `ns` inclusive, `self_ns`
    /// self, `host_ns` dispatch; `start` is its (timeline mark, host ticks) start, for traces.
    #[inline(always)]
    pub(super) fn aggregate(
        &mut self,
        cell: u32,
        work: Work,
        start: (Mark, u64),
        ns: u64,
        self_ns: u64,
        host_ns: u64,
    ) {
        match self.cells.stats.at_mut(cell as usize) {
            Some(s) => s.record_nested(ns, self_ns, host_ns, work),
            None => self.counters.dropped = self.counters.dropped.saturating_add(1),
        }
        if self.trace.is_some() {
            let device = if T::HOST_IS_DEVICE {
                None
            } else {
                self.timeline.timestamp_ns(start.0).ok().map(|at| (at, ns))
            };
            let (slot, row) = self.cells.stats.coords(cell as usize);
            self.trace_event(slot as u16, row as u16, start.1, host_ns, device);
        }
    }

    /// Log a measurement in the trace: one event on the CPU track, or a host and a device
    /// event on an asynchronous timeline. Never allocates (bounded buffer).
    fn trace_event(
        &mut self,
        slot: u16,
        row: u16,
        host_start: u64,
        host_ns: u64,
        device: Option<(u64, u64)>,
    ) {
        let Some(trace) = self.trace.as_mut() else {
            return;
        };
        let host_at = self.clock.ticks_to_ns(self.host_origin, host_start);
        let event = |track, start_ns, dur_ns| TraceEvent {
            start_ns,
            dur_ns,
            slot,
            row,
            track,
        };
        if T::HOST_IS_DEVICE {
            trace.push(event(Track::Cpu, host_at, host_ns));
            return;
        }
        if let Some((at, ns)) = device {
            trace.push(event(Track::Device, at, ns));
        }
        trace.push(event(Track::Host, host_at, host_ns));
    }
}
