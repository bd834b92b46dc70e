//! The marker: the part of the profiler that the mark and resolve stages own. It holds the
//! timeline, the host clock, the pending buffer with its chain of open bricks, the current row
//! and the counts of what it drops. Its fields are private to this module tree: the books, the
//! trace and the other parts cannot reach them.
//!
//! This file is the mark stage, the hot path: `start` reserves a raw entry in the pending
//! buffer and marks the timeline; `stop` closes the entry. No allocation, no lock, no hashing,
//! one clock read and one timeline mark per call (spec/hot-path.md). Stops may come in any
//! order. The resolve stage is [`resolve`].

mod lagged;
mod pending;
mod replay;
mod resolve;

use std::sync::atomic::{AtomicU32, Ordering};

use lagged::Flight;
pub(crate) use replay::Template;

use pending::{Entry, EntryState, Pending};

use super::sampler::Switch;
use super::token::{BrickToken, NO_ENTRY};
use crate::model::grid::{Row, Rows, Shape};
use crate::timeline::{Timeline, INVALID_MARK};
use crate::{
    model::{Counters, OverflowPolicy},
    timeline::HostClock,
    Error, SyncMode, Work,
};

static NEXT_PROFILER_ID: AtomicU32 = AtomicU32::new(1);

/// What the marker is set up with; fixed but for the sync mode.
#[derive(Debug, Clone, Copy)]
struct Settings {
    /// The profiler's id, which its tokens carry (never 0).
    id: u32,
    mode: SyncMode,
    overflow: OverflowPolicy,
    rows: Rows,
}

/// The mark and resolve stages' part of the profiler.
#[derive(Debug)]
pub(crate) struct Marker<T: Timeline> {
    settings: Settings,
    /// The effective switch the hot path reads (the sampler decides it).
    switch: Switch,
    clock: HostClock,
    timeline: T,
    /// Open bricks and closed ones awaiting resolution, in start order.
    pending: Pending,
    /// Ended passes awaiting resolution (Lagged mode).
    flight: Flight,
    /// The row new bricks land in, in the current pass's phase plane.
    row: Row,
    /// What the current pass's phase adds to a layer row ([`Rows::phase_base`]): chosen once
    /// per pass, added once per layer boundary, never per brick.
    phase_base: u16,
    /// What this stage counts: dropped measurements, syncs, flushes, stray stops, unclosed
    /// bricks, layers out of range.
    counters: Counters,
    /// The first error of a resolve nobody could be told of (at a flush or a stop), kept for
    /// `finalize` or `end_pass`.
    error: Option<Error>,
    /// Vendor tool ranges, when on.
    #[cfg(any(feature = "nvtx", feature = "roctx"))]
    ranges: Option<crate::profiler::vendor_ranges::VendorRanges>,
}

impl<T: Timeline> Marker<T> {
    /// A marker of `timeline` with a pending buffer of `capacity` entries, allocated now.
    pub(crate) fn new(
        timeline: T,
        rows: Rows,
        mode: SyncMode,
        overflow: OverflowPolicy,
        capacity: usize,
        max_passes_in_flight: usize,
        switch: Switch,
    ) -> Self {
        let mut pending = Pending::with_capacity(capacity);
        pending.accept_starts(switch == Switch::On);
        Marker {
            settings: Settings {
                id: NEXT_PROFILER_ID.fetch_add(1, Ordering::Relaxed).max(1),
                mode,
                overflow,
                rows,
            },
            switch,
            clock: timeline.host_clock(),
            timeline,
            pending,
            flight: Flight::new(max_passes_in_flight),
            row: rows.model(),
            phase_base: 0,
            counters: Counters::default(),
            error: None,
            #[cfg(any(feature = "nvtx", feature = "roctx"))]
            ranges: None,
        }
    }

    // ---- the hot path

    /// Whether a start goes further than one branch: the user measures (it is marked, or
    /// counted as sampled out).
    #[inline(always)]
    pub(crate) fn measuring(&self) -> bool {
        self.switch != Switch::Off
    }

    /// What a start does now: mark, nothing, or count a sampled-out start.
    #[inline(always)]
    pub(crate) fn switch(&self) -> Switch {
        self.switch
    }

    /// Whether a start is marked straight away: marking is on and the pending buffer has
    /// room. Otherwise it is sampled out, or the buffer is full ([`Self::flush_due`]).
    #[inline(always)]
    pub(crate) fn takes_start(&self) -> bool {
        self.pending.takes_start()
    }

    /// Whether bricks mark the timeline (sync mode `None` on a device times host dispatch
    /// only).
    #[inline(always)]
    fn marks_timeline(&self) -> bool {
        self.timeline.host_is_device() || self.settings.mode != SyncMode::None
    }

    /// Start brick `slot` in the current row: one clock read, one timeline mark, one entry.
    /// The caller made room first ([`Self::takes_start`]).
    #[inline(always)]
    pub(crate) fn start(&mut self, slot: u16, cells: Shape) -> BrickToken {
        let host = self.clock.ticks();
        let start = if self.marks_timeline() {
            self.timeline.mark(host)
        } else {
            INVALID_MARK
        };
        let seq = self.pending.seq;
        let cell = cells.index(usize::from(slot), self.row);
        let entry = Entry::open(start, host, self.pending.open, seq, cell);
        let Some(index) = self.pending.push(entry) else {
            return self.dropped_token();
        };
        self.pending.seq = seq.wrapping_add(1);
        self.pending.open = index;
        self.pending.open_count += 1;
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        if let Some(r) = &self.ranges {
            r.push(self.settings.rows.unphased(self.row), slot);
        }
        BrickToken {
            entry: index,
            seq,
            owner: self.settings.id,
        }
    }

    /// The token of a start dropped for want of room (counted by [`Self::room_or_drop`]): its
    /// stop records nothing and is not a stray stop.
    #[inline(always)]
    pub(crate) fn dropped_token(&self) -> BrickToken {
        BrickToken {
            entry: NO_ENTRY,
            seq: 0,
            owner: self.settings.id,
        }
    }

    /// Stop the brick of `token` having done `work`. Returns true when the sync mode resolves
    /// at every stop (Immediate, None) and this stop closed a brick: the caller then resolves.
    #[inline(always)]
    pub(crate) fn stop(&mut self, token: BrickToken, work: Work) -> bool {
        let host = self.clock.ticks();
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        let deferred = self.ranges.is_none()
            && matches!(
                self.settings.mode,
                SyncMode::Deferred | SyncMode::PerLayer | SyncMode::Lagged
            );
        #[cfg(not(any(feature = "nvtx", feature = "roctx")))]
        let deferred = matches!(
            self.settings.mode,
            SyncMode::Deferred | SyncMode::PerLayer | SyncMode::Lagged
        );
        // The common stop, inlined: this profiler's token, its entry still where it started
        // and the innermost open brick, in a mode that resolves later.
        if token.owner == self.settings.id && token.entry == self.pending.open && deferred {
            if let Some(e) = self.pending.get_mut(token.entry as usize) {
                // `open` always names an open entry; the sequence number tells it is this one.
                if e.seq == token.seq {
                    // Deferred, PerLayer or Lagged: the timeline is always marked.
                    let parent = e.close(self.timeline.mark(host), host, work);
                    self.pending.open_count -= 1;
                    self.pop_open(parent);
                    return false;
                }
            }
        }
        self.stop_general(token, work, host)
    }

    /// Every other stop: out of order, a moved entry, a stray token, or a mode that resolves
    /// at each stop.
    #[inline(never)]
    fn stop_general(&mut self, token: BrickToken, work: Work, host: u64) -> bool {
        let Some(index) = self.find_open(&token) else {
            self.stray_stop(&token);
            return false;
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
        let parent = self.pending[index as usize].close(end, host, work);
        self.pending.open_count -= 1;
        if self.pending.open == index {
            self.pop_open(parent);
        } else {
            self.stopped_out_of_order(index);
        }
        matches!(self.settings.mode, SyncMode::Immediate | SyncMode::None)
    }

    /// The entry `token` opened, if it is still open here. O(1) unless the pending buffer was
    /// compacted since the token was issued.
    #[inline(always)]
    fn find_open(&self, token: &BrickToken) -> Option<u32> {
        if token.owner != self.settings.id {
            return None;
        }
        match self.pending.get(token.entry as usize) {
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
        self.pending.find_open(token.seq)
    }

    #[cold]
    #[inline(never)]
    fn stray_stop(&mut self, token: &BrickToken) {
        if token.owner == self.settings.id && token.entry == NO_ENTRY {
            return; // its start was dropped and counted
        }
        self.counters.stray_stops = self.counters.stray_stops.saturating_add(1);
    }

    /// The innermost open brick stopped: the next open one is its nearest open ancestor.
    #[inline(always)]
    fn pop_open(&mut self, mut parent: u32) {
        while let Some(p) = self.pending.get(parent as usize) {
            if p.state == EntryState::Open {
                break;
            }
            parent = p.parent;
        }
        self.pending.open = if (parent as usize) < self.pending.len() {
            parent
        } else {
            NO_ENTRY
        };
    }

    /// A brick stopped while bricks started inside it are still open: they outlive it, so
    /// only their overlap with it counts against its self time. The open chain leads from the
    /// innermost open brick through every open ancestor (detached links included), so every
    /// open direct child of `index` is on it.
    #[cold]
    #[inline(never)]
    fn stopped_out_of_order(&mut self, index: u32) {
        let mut node = self.pending.open;
        while node != index {
            let Some(e) = self.pending.get_mut(node as usize) else {
                break;
            };
            if e.parent == index && !e.detached {
                e.outlived_parent = true;
            }
            node = e.parent;
        }
    }

    /// The start found the pending buffer full: whether to flush it (resolve what is closed)
    /// first. Counts the flush.
    #[cold]
    pub(crate) fn flush_due(&mut self) -> bool {
        let due = self.settings.overflow == OverflowPolicy::Flush && !self.pending.all_open();
        if due {
            self.counters.overflow_flushes = self.counters.overflow_flushes.saturating_add(1);
            if self.settings.mode == SyncMode::Lagged {
                self.count_blocking_wait();
            }
        }
        due
    }

    /// After a flush (or none): whether there is room now; a start without room is dropped and
    /// counted.
    #[cold]
    pub(crate) fn room_or_drop(&mut self) -> bool {
        let room = !self.pending.is_full();
        if !room {
            self.counters.dropped = self.counters.dropped.saturating_add(1);
        }
        room
    }

    /// The statistics slot of the innermost open brick, if any (tiles are attributed to it).
    #[inline]
    pub(crate) fn open_cell(&self) -> Option<crate::model::grid::CellIndex> {
        self.pending.get(self.pending.open as usize).map(|e| e.cell)
    }

    // ---- boundaries and control

    /// Now, on the host clock.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.clock.ticks()
    }

    /// The host clock.
    pub(crate) fn clock(&self) -> &HostClock {
        &self.clock
    }

    /// The timeline.
    pub(crate) fn timeline(&self) -> &T {
        &self.timeline
    }

    /// The layer-row convention.
    pub(crate) fn rows(&self) -> Rows {
        self.settings.rows
    }

    /// The sync mode.
    pub(crate) fn mode(&self) -> SyncMode {
        self.settings.mode
    }

    /// Set what starts do (the sampler's decision).
    pub(crate) fn set_switch(&mut self, switch: Switch) {
        self.switch = switch;
        self.pending.accept_starts(switch == Switch::On);
    }

    /// Bricks started from now on land in layer `layer`'s row (the unassigned row, counted,
    /// when it is out of range).
    #[inline]
    pub(crate) fn enter_layer(&mut self, layer: usize) {
        let rows = self.settings.rows;
        self.row = rows.at_base(self.phase_base, rows.layer(layer));
        if layer >= self.settings.rows.layers() {
            self.counters.out_of_range_layers = self.counters.out_of_range_layers.saturating_add(1);
        }
    }

    /// Bricks started from now on land in the model row.
    #[inline]
    pub(crate) fn leave_layer(&mut self) {
        let rows = self.settings.rows;
        self.row = rows.at_base(self.phase_base, rows.model());
    }

    /// Bricks started from now on land in `phase`'s books, in the row they would land in
    /// anyway (a pass boundary: `begin_pass`, `set_pass_shape`, `end_pass`). Bricks
    /// already started keep the cell they started in, so a pass resolved late (Lagged) lands
    /// in its own phase.
    #[inline]
    pub(crate) fn set_phase(&mut self, phase: crate::Phase) {
        let rows = self.settings.rows;
        self.phase_base = rows.phase_base(phase);
        self.row = rows.rebased(self.phase_base, self.row);
    }

    /// Keep the first error nobody could be told of yet.
    #[cold]
    pub(crate) fn keep_error(&mut self, e: Error) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    /// The kept error, if any.
    pub(crate) fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }

    /// Mutable access to the timeline, off the hot path (calibration anchors).
    pub(crate) fn timeline_mut(&mut self) -> &mut T {
        &mut self.timeline
    }

    /// End of a pass: discard bricks still open (leaked tokens), counting them; recycle the
    /// timeline, and tell it the pass ended.
    pub(crate) fn close_pass(&mut self) {
        if !self.pending.is_empty() {
            self.counters.unclosed = self
                .counters
                .unclosed
                .saturating_add(u64::from(self.pending.open_count));
            self.pending.clear();
            self.timeline.recycle();
        }
        self.timeline.pass_ended();
    }

    /// Forget every pending brick, count and error; open tokens become stray.
    pub(crate) fn reset(&mut self) {
        self.pending.clear();
        self.flight.clear();
        self.timeline.recycle();
        self.counters = Counters::default();
        self.error = None;
        self.phase_base = 0;
        self.row = self.settings.rows.model();
    }

    /// What this stage counted.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Bricks started and not yet resolved (open ones included).
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Bricks started and not yet stopped.
    pub(crate) fn open_bricks(&self) -> usize {
        self.pending.open_count as usize
    }

    /// Capacity of the pending buffer.
    pub(crate) fn pending_capacity(&self) -> usize {
        self.pending.capacity()
    }

    /// Open vendor tool ranges around every brick from now on.
    #[cfg(any(feature = "nvtx", feature = "roctx"))]
    pub(crate) fn set_ranges(&mut self, ranges: crate::profiler::vendor_ranges::VendorRanges) {
        self.ranges = Some(ranges);
    }

    /// The vendor tool ranges, when on.
    #[cfg(any(feature = "nvtx", feature = "roctx"))]
    pub(crate) fn ranges(&self) -> Option<&crate::profiler::vendor_ranges::VendorRanges> {
        self.ranges.as_ref()
    }

    /// The vendor tool ranges, mutably (to rebuild their names after a registration).
    #[cfg(any(feature = "nvtx", feature = "roctx"))]
    pub(crate) fn ranges_mut(
        &mut self,
    ) -> Option<&mut crate::profiler::vendor_ranges::VendorRanges> {
        self.ranges.as_mut()
    }
}
