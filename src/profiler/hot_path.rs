//! The profiler's hot path: `start_brick`/`stop_brick` hand the marker its work and, when the
//! pending buffer is full or the sync mode resolves at each stop, run the one resolve path.
//! Tiles are timed here too, on the host clock. No allocation, no lock, no hashing
//! (spec/hot-path.md).

use super::sampler::Switch;
use super::{BrickProfiler, BrickToken};
use crate::model::registry::NO_BRICK;
use crate::timeline::Timeline;
use crate::{
    stats::{TileLevel, TileTimer},
    BrickHandle, Work,
};

impl<T: Timeline> BrickProfiler<T> {
    /// Start timing `brick` (a [`crate::BrickId`] or a registered [`BrickHandle`]).
    ///
    /// Enabled: one host clock read, one timeline mark and one entry written into the
    /// preallocated pending buffer. Disabled: one branch, no clock read, no write. Sampled out
    /// by the [`crate::model::Sampling`] plan: counted on the cold path a full buffer takes, so the
    /// report can say how many marks the plan saved (spec/hot-path.md "Costs").
    #[inline(always)]
    pub fn start_brick(&mut self, brick: impl Into<BrickHandle>) -> BrickToken {
        if !self.marker.measuring() {
            return BrickToken::INERT;
        }
        self.start_live(brick.into().0)
    }

    #[inline(always)]
    fn start_live(&mut self, slot: u16) -> BrickToken {
        if !self.marker.takes_start() {
            return self.start_without_room(slot);
        }
        self.marker.start(slot, self.shape)
    }

    /// A start the marker does not take straight away: the sampling plan leaves it unmarked
    /// (counted; an inert token), or the pending buffer is full (flush it, or drop the start).
    #[cold]
    #[inline(never)]
    fn start_without_room(&mut self, slot: u16) -> BrickToken {
        if self.marker.switch() == Switch::SampledOut {
            self.sampler.sampled_out_start();
            return BrickToken::INERT;
        }
        if self.marker.flush_due() {
            let before = self.marker.now();
            self.resolve_keeping_error();
            self.exclude_flush_wait(before);
        }
        if self.marker.room_or_drop() {
            self.marker.start(slot, self.shape)
        } else {
            self.marker.dropped_token()
        }
    }

    /// Stop timing and record `elements` processed. See [`Self::stop_brick_with`].
    #[inline(always)]
    pub fn stop_brick(&mut self, token: BrickToken, elements: u64) {
        // The inert check comes before the work is built: an inert token builds nothing.
        if token.owner != 0 {
            self.stop_live(token, Work::elements(elements));
        }
    }

    /// Stop timing and record the work done. Stops may come in any order; each brick's
    /// inclusive time is its own start to its own stop. What happens next depends on the sync
    /// mode: `Deferred`/`PerLayer` leave the entry for the next resolve; `Immediate` syncs and
    /// resolves now; `None` resolves the host dispatch time now. Every mode resolves through
    /// the same path.
    #[inline(always)]
    pub fn stop_brick_with(&mut self, token: BrickToken, work: Work) {
        // The inert check is inlined into the caller, so a disabled pair folds to one branch.
        if token.owner != 0 {
            self.stop_live(token, work);
        }
    }

    #[inline(always)]
    fn stop_live(&mut self, token: BrickToken, work: Work) {
        if self.marker.stop(token, work) {
            self.resolve_keeping_error();
        }
    }

    /// Time a closure as `brick`, recording `elements`; returns the closure's value.
    ///
    /// ```
    /// use brickprof::{BrickId, BrickProfiler};
    /// let mut prof = BrickProfiler::default();
    /// let sum = prof.time(BrickId::ResidualAdd, 3, || 1 + 2);
    /// prof.finalize()?;
    /// assert_eq!(sum, 3);
    /// assert_eq!(prof.view().brick_stats(BrickId::ResidualAdd).summary().count, 1);
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
        if self.marker.switch() != Switch::On {
            return TileTimer::INERT;
        }
        let brick = self
            .marker
            .open_cell()
            .map_or(NO_BRICK, |c| self.ledger().books.coords(c).0 as u16);
        TileTimer {
            start: self.marker.now(),
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
        let ns = self
            .marker
            .clock()
            .ticks_to_ns(timer.start, self.marker.now());
        let slot = (timer.brick != NO_BRICK).then_some(usize::from(timer.brick));
        self.shelf.record_tile(slot, timer.level, ns, work);
    }
}
