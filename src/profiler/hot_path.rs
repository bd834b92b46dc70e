//! The hot path: `start_brick`/`stop_brick`, tiles, and recording a resolved measurement.
//! No allocation, no lock, no hashing, one clock read per call (spec/hot-path.md).

use strum::EnumCount;

use super::{BrickProfiler, BrickToken, Pending};
use crate::registry::NO_BRICK;
use crate::timeline::{Mark, Timeline, INVALID_MARK};
use crate::trace::{TraceEvent, Track};
use crate::{BrickHandle, Error, OverflowPolicy, SyncMode, TileLevel, TileTimer, Work};

impl<T: Timeline> BrickProfiler<T> {
    /// Start timing `brick` (a [`crate::BrickId`] or a registered [`BrickHandle`]).
    ///
    /// Enabled: one host clock read and one timeline mark. Disabled: one branch, no clock read.
    #[inline(always)]
    pub fn start_brick(&mut self, brick: impl Into<BrickHandle>) -> BrickToken {
        if !self.enabled {
            return BrickToken::INERT;
        }
        let slot = brick.into().0;
        let host = self.clock.ticks();
        let mark = if T::HOST_IS_DEVICE || self.mode != SyncMode::None {
            self.timeline.mark(host)
        } else {
            INVALID_MARK
        };
        let parent = self.open_brick;
        self.open_brick = slot;
        BrickToken {
            host,
            mark,
            slot,
            row: self.current_row,
            parent,
            live: true,
        }
    }

    /// Stop timing and record `elements` processed. See [`Self::stop_brick_with`].
    #[inline(always)]
    pub fn stop_brick(&mut self, token: BrickToken, elements: u64) {
        self.stop_brick_with(token, Work::elements(elements));
    }

    /// Stop timing and record the work done. What happens depends on the sync mode:
    /// `Deferred`/`PerLayer` push one entry into the pending buffer; `Immediate` syncs and
    /// records now; `None` records the host dispatch time now.
    #[inline(always)]
    pub fn stop_brick_with(&mut self, token: BrickToken, work: Work) {
        // The inert check is inlined into the caller, so a disabled pair folds to one branch.
        if token.live {
            self.stop_live(token, work);
        }
    }

    #[inline]
    fn stop_live(&mut self, token: BrickToken, work: Work) {
        let host = self.clock.ticks();
        self.open_brick = token.parent;
        match self.mode {
            SyncMode::Deferred | SyncMode::PerLayer => {
                let end = self.timeline.mark(host);
                let p = Pending {
                    start: token.mark,
                    end,
                    host_start: token.host,
                    host_end: host,
                    work,
                    slot: token.slot,
                    row: token.row,
                };
                if self.pending.len() < self.pending_capacity {
                    self.pending.push(p); // within capacity: never reallocates
                } else {
                    self.overflowed(p);
                }
            }
            SyncMode::Immediate => {
                let end = self.timeline.mark(host);
                self.record_now(token, end, host, work);
            }
            SyncMode::None => {
                let ns = self.clock.ticks_to_ns(token.host, host);
                self.record_resolved(token.slot, token.row, ns, ns, work);
                self.trace_event(token.slot, token.row, token.host, ns, None);
            }
        }
    }

    /// Time a closure as `brick`, recording `elements`; returns the closure's value.
    ///
    /// ```
    /// use brickprof::{BrickId, BrickProfiler};
    /// let mut prof = BrickProfiler::default();
    /// let sum = prof.time(BrickId::ResidualAdd, 3, || 1 + 2);
    /// prof.finalize().unwrap();
    /// assert_eq!(sum, 3);
    /// assert_eq!(prof.brick_stats(BrickId::ResidualAdd).count, 1);
    /// ```
    #[inline]
    pub fn time<R>(
        &mut self,
        brick: impl Into<BrickHandle>,
        elements: u64,
        f: impl FnOnce() -> R,
    ) -> R {
        let t = self.start_brick(brick);
        let r = f();
        self.stop_brick(t, elements);
        r
    }

    /// Start timing a tile of the brick currently open (the most recently started one).
    #[inline]
    pub fn start_tile(&mut self, level: TileLevel) -> TileTimer {
        if !self.enabled {
            return TileTimer::INERT;
        }
        TileTimer {
            start: self.clock.ticks(),
            brick: self.open_brick,
            level,
            live: true,
        }
    }

    /// Stop a tile and record the work it did, attributed to its enclosing brick.
    #[inline]
    pub fn stop_tile(&mut self, timer: TileTimer, work: Work) {
        if !timer.live {
            return;
        }
        let ns = self.clock.ticks_to_ns(timer.start, self.clock.ticks());
        let level = timer.level as usize;
        let stats = if timer.brick == NO_BRICK {
            self.unattributed_tiles.get_mut(level)
        } else {
            self.tiles
                .get_mut(timer.brick as usize * TileLevel::COUNT + level)
        };
        match stats {
            Some(s) => s.record(ns, ns, work),
            None => self.counters.dropped += 1,
        }
    }

    #[inline]
    pub(super) fn record_resolved(
        &mut self,
        slot: u16,
        row: u16,
        ns: u64,
        host_ns: u64,
        work: Work,
    ) {
        match self.stats.get_mut(slot as usize * self.rows + row as usize) {
            Some(s) => s.record(ns, host_ns, work),
            None => self.counters.dropped += 1,
        }
    }

    #[inline]
    fn record_now(&mut self, token: BrickToken, end: Mark, host_end: u64, work: Work) {
        self.counters.syncs += 1;
        let host_ns = self.clock.ticks_to_ns(token.host, host_end);
        let (ns, device) = if T::HOST_IS_DEVICE {
            (host_ns, None) // the CPU timeline's marks are these very readings; no-op sync
        } else {
            let resolved = self
                .timeline
                .sync()
                .and_then(|()| self.timeline.resolve_ns(token.mark, end));
            let at = match (&self.trace, &resolved) {
                (Some(_), Ok(ns)) => self
                    .timeline
                    .timestamp_ns(token.mark)
                    .ok()
                    .map(|t| (t, *ns)),
                _ => None,
            };
            self.recycle_if_idle();
            match resolved {
                Ok(ns) => (ns, at),
                Err(e) => return self.fail(e),
            }
        };
        self.record_resolved(token.slot, token.row, ns, host_ns, work);
        self.trace_event(token.slot, token.row, token.host, host_ns, device);
    }

    /// Log a measurement in the trace, if tracing: one event on the CPU track, or a host and a
    /// device event on an asynchronous timeline. Never allocates (bounded buffer).
    #[inline]
    pub(super) fn trace_event(
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

    /// Let the timeline reuse its mark resources, unless a brick is still open (its start mark
    /// must stay valid until it stops).
    pub(super) fn recycle_if_idle(&mut self) {
        if self.open_brick == NO_BRICK {
            self.timeline.recycle();
        }
    }

    #[cold]
    #[inline(never)]
    fn overflowed(&mut self, p: Pending) {
        match self.overflow {
            OverflowPolicy::Drop => self.counters.dropped += 1,
            OverflowPolicy::Flush => {
                self.counters.overflow_flushes += 1;
                // The new measurement's marks were made before this sync, so resolve it too.
                if let Err(e) = self.resolve_pending_with(Some(p)) {
                    self.fail(e);
                }
            }
        }
    }

    #[cold]
    fn fail(&mut self, e: Error) {
        self.counters.dropped += 1;
        if self.error.is_none() {
            self.error = Some(e);
        }
    }
}
