//! The pass tally: the resolve stage's per-pass sums for the pass series and the fits
//! (spec/hot-path.md "Pass series"). While a shaped pass's measurements resolve, each one's
//! self time is added to its brick's slot in a scratch buffer; when that pass is resolved
//! whole, the scratch becomes one [`PassRecord`] in the ring (time per category) and one
//! point per brick in the (phase, brick) [`FitSums`], and is zeroed. Every buffer is allocated
//! at construction or at a brick's registration: closing a pass never allocates.
//!
//! In Lagged mode passes resolve after later ones have begun: each ended pass leaves a
//! [`Head`] (its shape, wall time, whether it counts) in a queue, and the oldest head closes
//! when its pass resolves. Passes resolve oldest first, and a resolve drains every sealed pass
//! before the current pass's entries, so the scratch only ever holds the closing pass's time.

use std::collections::VecDeque;

use crate::base::limits::MAX_PASSES_IN_FLIGHT;
use crate::stats::fit::FitSums;
use crate::stats::pass_bricks::{PassBrickRing, DEFAULT_PASS_BRICKS};
use crate::stats::pass_series::{PassRecord, PassRing, PassSeries};
use crate::{BrickCategory, BrickId, PassShape, Phase};

/// An ended pass waiting for its measurements to resolve.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head {
    /// Its shape (unshaped passes are not recorded).
    pub(crate) shape: Option<PassShape>,
    /// Its host wall time, ns.
    pub(crate) wall_ns: u64,
    /// Whether it counts (not warm-up, not captured into a graph).
    pub(crate) keep: bool,
}

/// The pass series ring, the fit sums and the scratch of the pass being resolved.
#[derive(Debug, Clone)]
pub(crate) struct PassTally {
    /// The newest passes' records.
    ring: PassRing,
    /// Each brick's time in the newest passes (spec/timing-verdicts.md), aligned with the
    /// newest records of `ring`.
    bricks: PassBrickRing,
    /// Per slot, the fit sums of each phase.
    fits: Vec<[FitSums; Phase::COUNT]>,
    /// Per slot, its category.
    categories: Vec<BrickCategory>,
    /// Per slot, (self ns, calls) in the pass being resolved.
    scratch: Vec<(u64, u64)>,
    /// Slots with calls in `scratch` (each once; capacity: every slot).
    touched: Vec<u32>,
    /// Lagged: ended passes not resolved yet, oldest first, and whether each was sealed (its
    /// entries are in flight) or not (nothing of it was pending: it closes when it is oldest).
    heads: VecDeque<(Head, bool)>,
    /// The shape of the pass being marked (what a resolve of its entries tallies under).
    current: Option<PassShape>,
}

impl PassTally {
    /// A ring of `capacity` passes (0: no series, no tally) for the built-in bricks.
    pub(crate) fn new(ring: PassRing) -> Self {
        let slots = BrickId::COUNT;
        let kept = ring.capacity().min(DEFAULT_PASS_BRICKS);
        PassTally {
            ring,
            bricks: PassBrickRing::new(kept, slots),
            fits: vec![[FitSums::new(); Phase::COUNT]; slots],
            categories: BrickId::ALL.iter().map(|b| b.category()).collect(),
            scratch: vec![(0, 0); slots],
            touched: Vec::with_capacity(slots),
            heads: VecDeque::with_capacity(MAX_PASSES_IN_FLIGHT + 2),
            current: None,
        }
    }

    /// Whether passes are recorded at all (a ring of capacity 0 turns the tally off).
    #[inline(always)]
    fn on(&self) -> bool {
        self.ring.capacity() > 0
    }

    /// A new slot of `category` (a registration; allocates here, never per pass).
    pub(crate) fn push_slot(&mut self, category: BrickCategory) {
        self.fits.push([FitSums::new(); Phase::COUNT]);
        self.categories.push(category);
        self.bricks.push_slot();
        self.scratch.push((0, 0));
        self.touched
            .reserve(self.scratch.len() - self.touched.len());
    }

    /// The pass being marked now has `shape`.
    pub(crate) fn set_current(&mut self, shape: Option<PassShape>) {
        self.current = shape;
    }

    /// Whether the entries of the pass being marked are tallied.
    pub(crate) fn tallies_current(&self) -> bool {
        self.on() && self.current.is_some()
    }

    /// Whether the oldest pass in flight is tallied (Lagged).
    pub(crate) fn tallies_oldest(&self) -> bool {
        self.on()
            && self
                .heads
                .front()
                .is_some_and(|(h, _)| h.keep && h.shape.is_some())
    }

    /// Add one measurement of `self_ns` in `slot`.
    #[inline(always)]
    pub(crate) fn add(&mut self, slot: usize, self_ns: u64) {
        if let Some(s) = self.scratch.get_mut(slot) {
            if s.1 == 0 {
                self.touched.push(slot as u32);
            }
            s.0 = s.0.saturating_add(self_ns);
            s.1 += 1;
        }
    }

    /// A pass ended and everything of it is resolved (every mode but Lagged).
    pub(crate) fn close_now(&mut self, head: Head) {
        if self.on() {
            self.close(head);
        }
    }

    /// A pass ended in Lagged mode: `sealed` when its entries went in flight (it closes when
    /// it resolves), else it closes once every older pass has.
    pub(crate) fn push(&mut self, head: Head, sealed: bool) {
        if !self.on() {
            return;
        }
        if !sealed && self.heads.is_empty() {
            self.close(head);
        } else if self.heads.len() == self.heads.capacity() {
            // Only passes with nothing pending pile up behind the sealed ones: nothing of
            // theirs is in the scratch, so closing one early loses nothing but its order.
            self.close(head);
        } else {
            self.heads.push_back((head, sealed));
        }
    }

    /// The oldest pass in flight resolved: close it, then every pass behind it that had
    /// nothing in flight.
    pub(crate) fn close_oldest(&mut self) {
        if let Some((head, _)) = self.heads.pop_front() {
            self.close(head);
        }
        self.close_unsealed_front();
    }

    /// Nothing is in flight any more (a failed sync dropped them): close what is left.
    pub(crate) fn close_all(&mut self) {
        while let Some((head, _)) = self.heads.pop_front() {
            self.close(head);
        }
    }

    fn close_unsealed_front(&mut self) {
        while let Some(&(head, false)) = self.heads.front() {
            self.heads.pop_front();
            self.close(head);
        }
    }

    /// The scratch into a record and fit points (when the pass counts and has a shape), then
    /// zeroed.
    fn close(&mut self, head: Head) {
        let mut category_ns = [0u64; BrickCategory::COUNT];
        let record = head.keep.then_some(head.shape).flatten();
        let at = record.and_then(|_| self.bricks.begin());
        for &slot in &self.touched {
            let slot = slot as usize;
            let (ns, calls) = std::mem::take(&mut self.scratch[slot]);
            if let Some(shape) = record {
                let c = self.categories[slot] as usize;
                category_ns[c] = category_ns[c].saturating_add(ns);
                self.fits[slot][shape.phase().index()].add(&shape, ns, calls);
            }
            if let Some(at) = at {
                self.bricks.set(at, slot, ns);
            }
        }
        self.touched.clear();
        if let Some(shape) = record {
            self.ring
                .push(PassRecord::new(Some(shape), head.wall_ns, category_ns));
        }
    }

    /// Forget every record, fit and pass in flight (the allocations are kept).
    pub(crate) fn reset(&mut self) {
        self.ring.clear();
        self.bricks.clear();
        self.fits
            .iter_mut()
            .for_each(|f| *f = [FitSums::new(); Phase::COUNT]);
        for &slot in &self.touched {
            self.scratch[slot as usize] = (0, 0);
        }
        self.touched.clear();
        self.heads.clear();
        self.current = None;
    }

    // ---- reading

    /// The series as a profile keeps it (`None` when no pass was recorded), with each brick's
    /// time per pass under the name `name_of(slot)` gives.
    pub(crate) fn series<'a>(
        &self,
        name_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<PassSeries> {
        let columns = (0..self.scratch.len())
            .filter_map(|slot| Some((name_of(slot)?.to_string(), self.bricks.column(slot)?)));
        let s = self
            .ring
            .series()
            .with_brick_ns(self.bricks.len(), columns.collect());
        (!s.is_empty()).then_some(s)
    }

    /// The fit sums of `slot` in `phase`.
    pub(crate) fn fits(&self, slot: usize, phase: Phase) -> Option<&FitSums> {
        self.fits.get(slot).map(|f| &f[phase.index()])
    }
}
