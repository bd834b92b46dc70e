//! The resolve stage: one sync, then every closed entry of the pending buffer becomes a
//! [`Measurement`] with its inclusive time (its own start to its own stop) and its self time
//! (inclusive minus the overlap of the bricks nested directly inside it), handed to a
//! [`Sink`]. Open entries stay, compacted to the front of the buffer (spec/sync-modes.md,
//! spec/hot-path.md "Self time"). Every sync mode resolves here: Immediate and None resolve
//! after each stop, PerLayer after each layer, Deferred after each pass or flush, Lagged one
//! sealed pass at a time (`lagged.rs`) when its end mark is reached.

use super::pending::{Entry, EntryState};
use super::Marker;
use crate::profiler::measurement::{Measurement, Sink};
use crate::profiler::token::NO_ENTRY;
use crate::timeline::{is_captured, Mark, Timeline};
use crate::{Error, Result, SyncMode};

/// How many entries ahead the resolve loop prefetches statistics cells.
const PREFETCH_AHEAD: usize = 8;

impl<T: Timeline> Marker<T> {
    /// Sync the timeline when closed entries wait for it (sync mode `None` reads host ticks
    /// only and never syncs). `Ok(false)`: nothing to resolve.
    pub(crate) fn sync_closed(&mut self) -> Result<bool> {
        if self.pending.all_open() {
            return Ok(false);
        }
        if is_captured(&self.timeline) {
            // Marks on a stream being captured into a graph are not timestamps: nothing to
            // sync or resolve; the pass is counted as captured (spec/sync-modes.md "CUDA").
            // A timeline that times replays keeps them until `end_pass` makes them the
            // graph's template ("Graph capture").
            if !self.keeps_captures() {
                self.discard_closed(false);
            }
            return Ok(false);
        }
        if self.settings.mode != SyncMode::None {
            self.counters.syncs = self.counters.syncs.saturating_add(1);
            self.timeline.sync()?;
        }
        Ok(true)
    }

    /// Resolve every closed entry after [`Self::sync_closed`] into `sink`: children before
    /// parents (a child starts later, so it sits later in the buffer), each adding its
    /// inclusive time (or its overlap, when it outlived its parent) to its parent's nested
    /// total. Then compact the open entries to the front. A failed sync drops (and counts)
    /// every closed entry; a failed resolve drops that entry; the first error is returned.
    pub(crate) fn resolve(&mut self, synced: Result<bool>, sink: &mut impl Sink) -> Result<()> {
        match synced {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => {
                self.discard_closed(true);
                return Err(e);
            }
        }
        let first_err = self.resolve_range(self.pending.len(), sink);
        self.compact();
        first_err.map_or(Ok(()), Err)
    }

    /// Resolve the closed entries among the first `end` (whose marks are known complete)
    /// into `sink`, children before parents; returns the first error. Leaves the entries in
    /// place.
    pub(super) fn resolve_range(&mut self, end: usize, sink: &mut impl Sink) -> Option<Error> {
        let device_at = sink.wants_device_at() && !self.timeline.host_is_device();
        let mut first_err = None;
        for i in (0..end.min(self.pending.len())).rev() {
            // The first few entries have none ahead: the index wraps past the end.
            if let Some(e) = self.pending.get(i.wrapping_sub(PREFETCH_AHEAD)) {
                sink.prefetch(e.cell);
            }
            // Field by field: only what resolving needs is loaded.
            let Entry {
                start,
                end,
                host_start,
                host_end,
                work,
                child_ns,
                parent,
                cell,
                state,
                outlived_parent,
                detached,
                ..
            } = self.pending[i];
            if state != EntryState::Closed {
                if outlived_parent {
                    self.charge_overlap(i);
                }
                continue;
            }
            let host_ns = self.clock.ticks_to_ns(host_start, host_end);
            let mut host_only = false;
            let ns = if self.timeline.host_is_device() {
                host_ns // the marks are these very host readings
            } else {
                match self.span_ns(start, host_start, end, host_end) {
                    Ok(0) => {
                        host_only = self.last_host_only();
                        0
                    }
                    Ok(ns) => ns,
                    Err(err) => {
                        self.counters.dropped = self.counters.dropped.saturating_add(1);
                        first_err.get_or_insert(err);
                        continue;
                    }
                }
            };
            let self_ns = ns.saturating_sub(child_ns);
            if parent != NO_ENTRY && !detached {
                let share = if outlived_parent {
                    self.overlap_with_parent(i, ns)
                } else {
                    ns
                };
                if let Some(p) = self.pending.get_mut(parent as usize) {
                    p.child_ns = p.child_ns.saturating_add(share);
                    sink.nested(p.cell, cell, ns, self_ns);
                }
            }
            let (device_at, device_end_at) = if device_at {
                (
                    self.timeline.timestamp_ns(start).ok(),
                    self.timeline.timestamp_ns(end).ok(),
                )
            } else {
                (None, None)
            };
            sink.record(&Measurement {
                cell,
                work,
                inclusive_ns: ns,
                self_ns,
                host_ns,
                host_start,
                device_at,
                device_end_at,
                host_only,
            });
        }
        first_err
    }

    /// Whether the brick just resolved to 0 ns launched nothing on the device (only a timeline
    /// that reads the device's records can tell; spec/sync-modes.md "CUPTI").
    #[cold]
    #[inline(never)]
    fn last_host_only(&self) -> bool {
        self.settings.mode != SyncMode::None
            && self
                .timeline
                .device_records()
                .is_some_and(|r| r.last_host_only())
    }

    /// The part of a child's `ns` that falls before its parent's stop.
    #[cold]
    #[inline(never)]
    fn overlap_with_parent(&mut self, i: usize, ns: u64) -> u64 {
        let e = self.pending[i];
        let Some(p) = self.pending.get(e.parent as usize).copied() else {
            return ns;
        };
        self.span_ns(e.start, e.host_start, p.end, p.host_end)
            .unwrap_or(ns)
            .min(ns)
    }

    /// The sync failed (`count`: every closed entry is dropped and counted) or the pass is
    /// captured (nothing to resolve, nothing counted here): closed entries go, open ones stay.
    #[cold]
    #[inline(never)]
    fn discard_closed(&mut self, count: bool) {
        for i in (0..self.pending.len()).rev() {
            let e = self.pending[i];
            if e.state == EntryState::Closed {
                if count {
                    self.counters.dropped = self.counters.dropped.saturating_add(1);
                }
            } else if e.outlived_parent {
                self.charge_overlap(i);
            }
        }
        self.flight.clear(); // their entries were dropped with the rest
        self.compact();
    }

    /// Nanoseconds between two marks: on the timeline, or host ticks in sync mode `None`.
    #[inline]
    fn span_ns(&mut self, start: Mark, host_start: u64, end: Mark, host_end: u64) -> Result<u64> {
        if self.settings.mode == SyncMode::None && !self.timeline.host_is_device() {
            Ok(self.clock.ticks_to_ns(host_start, host_end))
        } else {
            self.timeline.resolve_ns(start, end)
        }
    }

    /// An open brick whose parent stopped before it: charge the parent with their overlap now
    /// (both marks are synced), and detach it: its parent link becomes only a link in the
    /// open chain.
    #[cold]
    fn charge_overlap(&mut self, i: usize) {
        let e = self.pending[i];
        let Some(p) = self.pending.get(e.parent as usize).copied() else {
            return;
        };
        if p.state == EntryState::Closed {
            if let Ok(ns) = self.span_ns(e.start, e.host_start, p.end, p.host_end) {
                let parent = &mut self.pending[e.parent as usize];
                parent.child_ns = parent.child_ns.saturating_add(ns);
            }
            self.pending[i].outlived_parent = false;
            self.pending[i].detached = true;
        }
    }

    /// Keep only open entries, in order. Open entries form one chain (each started while every
    /// earlier open one was open), so each one's nearest open ancestor is the previous kept
    /// entry: that becomes its link. An entry whose link so changes is not nested directly in
    /// what it now links to, and is marked detached, so the chain stays whole for later
    /// out-of-order stops without charging anybody twice.
    fn compact(&mut self) {
        if self.pending.open_count == 0 {
            self.pending.clear();
            self.timeline.recycle();
            return;
        }
        let mut kept = 0usize;
        let mut prev_old = NO_ENTRY;
        for i in 0..self.pending.len() {
            let mut e = self.pending[i];
            if e.state != EntryState::Open {
                continue;
            }
            if e.parent != prev_old {
                e.detached = true;
            }
            e.parent = kept.checked_sub(1).map_or(NO_ENTRY, |k| k as u32);
            prev_old = i as u32;
            self.pending[kept] = e;
            kept += 1;
        }
        self.pending.truncate(kept);
        self.pending.open = kept.checked_sub(1).map_or(NO_ENTRY, |k| k as u32);
    }
}
