//! The tracer: the trace's part of the profiler, when tracing is on. It turns resolved
//! measurements and pass ends into events of the bounded [`TraceBuffer`] (never allocating);
//! the trace writers (`output`) read that buffer afterwards.

use super::measurement::Measurement;
use crate::model::phase::PassShape;
use crate::profile::trace::{PassSample, TraceBuffer, TraceEvent, Track};
use crate::timeline::HostClock;

/// The bounded trace log and what its timestamps are measured from.
#[derive(Debug, Clone)]
pub(crate) struct Tracer {
    buffer: TraceBuffer,
    /// Rank (process) written to traces.
    rank: u32,
    clock: HostClock,
    /// Host clock reading at construction or reset: the origin of host timestamps.
    origin: u64,
    /// Whether the timeline's marks are the host clock (one CPU track) or a device's (a
    /// device and a host track).
    host_is_device: bool,
}

impl Tracer {
    /// A trace of `capacity` events, allocated now, with timestamps from `origin`.
    pub(crate) fn new(
        capacity: usize,
        rank: u32,
        clock: HostClock,
        origin: u64,
        host_is_device: bool,
    ) -> Self {
        Self::with_buffer(
            TraceBuffer::with_capacity(capacity),
            rank,
            clock,
            origin,
            host_is_device,
        )
    }

    /// A trace into `buffer` (allocated already: a live capture's).
    pub(crate) fn with_buffer(
        buffer: TraceBuffer,
        rank: u32,
        clock: HostClock,
        origin: u64,
        host_is_device: bool,
    ) -> Self {
        Tracer {
            buffer,
            rank,
            clock,
            origin,
            host_is_device,
        }
    }

    /// The event log, given up.
    pub(crate) fn into_buffer(self) -> TraceBuffer {
        self.buffer
    }

    /// The host clock reading host timestamps count from.
    pub(crate) fn origin(&self) -> u64 {
        self.origin
    }

    /// Log a measurement of brick `slot` in row `row`: one event on the CPU track, or a
    /// device and a host event on an asynchronous timeline.
    pub(crate) fn record(&mut self, slot: u16, row: u16, m: &Measurement) {
        let host_at = self.clock.ticks_to_ns(self.origin, m.host_start);
        let event = |track, start_ns, dur_ns| TraceEvent {
            start_ns,
            dur_ns,
            slot,
            row,
            track,
        };
        if self.host_is_device {
            self.buffer.push(event(Track::Cpu, host_at, m.host_ns));
            return;
        }
        if let Some(at) = m.device_at {
            // Both ends on the host clock (the calibrated map); the device's own duration
            // when the end could not be mapped.
            let dur = m
                .device_end_at
                .map_or(m.inclusive_ns, |end| end.saturating_sub(at));
            self.buffer.push(event(Track::Device, at, dur));
        }
        self.buffer.push(event(Track::Host, host_at, m.host_ns));
    }

    /// A pass of `shape` ended at host ticks `now`, producing `tokens` in `pass_ns`.
    pub(crate) fn record_pass(
        &mut self,
        now: u64,
        tokens: u64,
        pass_ns: u64,
        shape: Option<PassShape>,
    ) {
        let at_ns = self.clock.ticks_to_ns(self.origin, now);
        self.buffer.push_pass(PassSample {
            start_ns: at_ns.saturating_sub(pass_ns),
            at_ns,
            tokens_per_sec: crate::stats::brick_stats::per_sec(tokens, pass_ns),
            shape,
        });
    }

    /// Forget every event; timestamps start again from `origin`.
    pub(crate) fn reset(&mut self, origin: u64) {
        self.buffer.clear();
        self.origin = origin;
    }

    /// The event log.
    pub(crate) fn buffer(&self) -> &TraceBuffer {
        &self.buffer
    }

    /// The rank written to traces.
    pub(crate) fn rank(&self) -> u32 {
        self.rank
    }
}
