//! The mark stage, the hot path: `start_brick` reserves a raw entry in the pending buffer and
//! marks the timeline; `stop_brick` closes the entry. No allocation, no lock, no hashing, one
//! clock read and one timeline mark per call (spec/hot-path.md). Stops may come in any order.

use super::{BrickProfiler, BrickToken, Entry, EntryState, NO_ENTRY};
use crate::registry::NO_BRICK;
use crate::timeline::{Timeline, INVALID_MARK};
use crate::{BrickHandle, OverflowPolicy, SyncMode, TileLevel, TileTimer, Work};

impl<T: Timeline> BrickProfiler<T> {
    /// Whether bricks mark the timeline (sync mode `None` on a device times host dispatch only).
    #[inline(always)]
    fn marks_timeline(&self) -> bool {
        T::HOST_IS_DEVICE || self.mode != SyncMode::None
    }

    /// Start timing `brick` (a [`crate::BrickId`] or a registered [`BrickHandle`]).
    ///
    /// Enabled: one host clock read, one timeline mark and one entry written into the
    /// preallocated pending buffer. Disabled: one branch, no clock read.
    #[inline(always)]
    pub fn start_brick(&mut self, brick: impl Into<BrickHandle>) -> BrickToken {
        if !self.enabled {
            return BrickToken::INERT;
        }
        self.start_live(brick.into().0)
    }

    #[inline(always)]
    fn start_live(&mut self, slot: u16) -> BrickToken {
        if self.entries.is_full() && !self.make_room() {
            return self.dropped_token();
        }
        let host = self.clock.ticks();
        let start = if self.marks_timeline() {
            self.timeline.mark(host)
        } else {
            INVALID_MARK
        };
        let seq = self.seq;
        // < MAX_CELLS (checked at construction and registration): fits in u32.
        let cell = usize::from(slot) * (self.layers + 2) + usize::from(self.current_row);
        let entry = Entry::open(start, host, self.open, seq, cell as u32);
        // Not full (checked above), so the push succeeds.
        let Some(index) = self.entries.push(entry) else {
            return self.dropped_token();
        };
        self.seq = seq.wrapping_add(1);
        self.open = index;
        self.open_count += 1;
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        if let Some(r) = &self.ranges {
            r.push(self.current_row, slot);
        }
        BrickToken {
            entry: index,
            seq,
            owner: self.id,
        }
    }

    /// Stop timing and record `elements` processed. See [`Self::stop_brick_with`].
    #[inline(always)]
    pub fn stop_brick(&mut self, token: BrickToken, elements: u64) {
        self.stop_brick_with(token, Work::elements(elements));
    }

    /// Stop timing and record the work done. Stops may come in any order; each brick's
    /// inclusive time is its own start to its own stop. What happens next depends on the sync
    /// mode: `Deferred`/`PerLayer` leave the entry for the next resolve; `Immediate` syncs and
    /// records now; `None` records the host dispatch time now.
    #[inline(always)]
    pub fn stop_brick_with(&mut self, token: BrickToken, work: Work) {
        // The inert check is inlined into the caller, so a disabled pair folds to one branch.
        if token.owner != 0 {
            self.stop_live(token, work);
        }
    }

    /// The token of a start dropped for want of room (counted by [`Self::make_room`]): its
    /// stop records nothing and is not a stray stop.
    #[inline(always)]
    fn dropped_token(&self) -> BrickToken {
        BrickToken {
            entry: NO_ENTRY,
            seq: 0,
            owner: self.id,
        }
    }

    /// The common stop, inlined: this profiler's token, its entry still where it started and
    /// the innermost open brick, in a mode that resolves later. Anything else takes
    /// [`Self::stop_general`].
    #[inline(always)]
    fn stop_live(&mut self, token: BrickToken, work: Work) {
        let host = self.clock.ticks();
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        let deferred =
            self.ranges.is_none() && matches!(self.mode, SyncMode::Deferred | SyncMode::PerLayer);
        #[cfg(not(any(feature = "nvtx", feature = "roctx")))]
        let deferred = matches!(self.mode, SyncMode::Deferred | SyncMode::PerLayer);
        if token.owner == self.id && token.entry == self.open && deferred {
            if let Some(e) = self.entries.get_mut(token.entry as usize) {
                // `open` always names an open entry; the sequence number tells it is this one.
                if e.seq == token.seq {
                    // Deferred or PerLayer: the timeline is always marked.
                    let parent = e.close(self.timeline.mark(host), host, work);
                    self.open_count -= 1;
                    return self.pop_open(parent);
                }
            }
        }
        self.stop_general(token, work, host)
    }

    /// Every other stop: out of order, a moved entry, a stray token, or a mode that resolves
    /// at each stop.
    #[inline(never)]
    fn stop_general(&mut self, token: BrickToken, work: Work, host: u64) {
        let Some(index) = self.find_open(&token) else {
            return self.stray_stop(&token);
        };
        let end = if self.marks_timeline() {
            self.timeline.mark(host)
        } else {
            INVALID_MARK
        };
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        if let Some(r) = &self.ranges {
            r.pop();
        }
        let parent = self.entries[index as usize].close(end, host, work);
        self.open_count -= 1;
        if self.open == index {
            self.pop_open(parent);
        } else {
            self.stopped_out_of_order(index);
        }
        match self.mode {
            SyncMode::Deferred | SyncMode::PerLayer => {}
            SyncMode::Immediate | SyncMode::None => self.resolve_now(),
        }
    }

    /// The entry `token` opened, if it is still open here. O(1) unless the pending buffer was
    /// compacted since the token was issued.
    #[inline(always)]
    fn find_open(&self, token: &BrickToken) -> Option<u32> {
        if token.owner != self.id {
            return None;
        }
        match self.entries.get(token.entry as usize) {
            Some(e) if e.seq == token.seq && e.state == EntryState::Open => Some(token.entry),
            _ => self.find_moved(token),
        }
    }

    /// A flush compacts the open entries to the front of the buffer: look the token up there.
    #[cold]
    #[inline(never)]
    fn find_moved(&self, token: &BrickToken) -> Option<u32> {
        if token.entry == NO_ENTRY {
            return None; // dropped at start (full buffer): counted then
        }
        self.entries.find_open(token.seq)
    }

    #[cold]
    #[inline(never)]
    fn stray_stop(&mut self, token: &BrickToken) {
        if token.owner == self.id && token.entry == NO_ENTRY {
            return; // its start was dropped and counted
        }
        self.counters.stray_stops = self.counters.stray_stops.saturating_add(1);
    }

    /// The innermost open brick stopped: the next open one is its nearest open ancestor.
    #[inline(always)]
    fn pop_open(&mut self, mut parent: u32) {
        while let Some(p) = self.entries.get(parent as usize) {
            if p.state == EntryState::Open {
                break;
            }
            parent = p.parent;
        }
        self.open = if (parent as usize) < self.entries.len() {
            parent
        } else {
            NO_ENTRY
        };
    }

    /// A brick stopped while bricks started inside it are still open: they outlive it, so
    /// only their overlap with it counts against its self time.
    #[cold]
    #[inline(never)]
    fn stopped_out_of_order(&mut self, index: u32) {
        let mut node = self.open;
        while node != index {
            let Some(e) = self.entries.get_mut(node as usize) else {
                break;
            };
            if e.parent == index {
                e.outlived_parent = true;
            }
            node = e.parent;
        }
    }

    /// The pending buffer is full at a start: flush it (resolve what is closed) or drop.
    /// Returns whether there is room now.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self) -> bool {
        if self.overflow == OverflowPolicy::Flush && self.open_count as usize != self.entries.len()
        {
            self.counters.overflow_flushes = self.counters.overflow_flushes.saturating_add(1);
            if let Err(e) = self.resolve_pending() {
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
        let room = !self.entries.is_full();
        if !room {
            self.counters.dropped = self.counters.dropped.saturating_add(1);
        }
        room
    }

    /// Time a closure as `brick`, recording `elements`; returns the closure's value.
    ///
    /// ```
    /// use brickprof::{BrickId, BrickProfiler};
    /// let mut prof = BrickProfiler::default();
    /// let sum = prof.time(BrickId::ResidualAdd, 3, || 1 + 2);
    /// prof.finalize()?;
    /// assert_eq!(sum, 3);
    /// assert_eq!(prof.brick_stats(BrickId::ResidualAdd).count(), 1);
    /// # Ok::<(), brickprof::Error>(())
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
    /// Tiles are timed on the host clock, whatever the timeline.
    #[inline]
    pub fn start_tile(&mut self, level: TileLevel) -> TileTimer {
        if !self.enabled {
            return TileTimer::INERT;
        }
        let brick = self.entries.get(self.open as usize).map_or(NO_BRICK, |e| {
            self.cells.stats.coords(e.cell as usize).0 as u16
        });
        TileTimer {
            start: self.clock.ticks(),
            brick,
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
            self.cells.tiles.get_mut(timer.brick as usize, level)
        };
        match stats {
            Some(s) => s.record(ns, ns, work),
            None => self.counters.dropped = self.counters.dropped.saturating_add(1),
        }
    }
}
