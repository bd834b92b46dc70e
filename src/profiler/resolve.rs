//! The resolve stage: one sync, then every closed entry of the pending buffer becomes a
//! measurement with its inclusive time (its own start to its own stop) and its self time
//! (inclusive minus the bricks nested directly inside it). Open entries stay, compacted to the
//! front of the buffer (spec/sync-modes.md, spec/hot-path.md "Self time").

use super::{BrickProfiler, Entry, EntryState, NO_ENTRY};

/// How many entries ahead the resolve loop prefetches statistics cells.
const PREFETCH_AHEAD: usize = 8;

/// A prefetch hint; no effect on other architectures.
#[inline(always)]
fn prefetch<V>(p: *const V) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and never changes memory, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
use crate::timeline::{Mark, Timeline};
use crate::{Result, SyncMode};

impl<T: Timeline> BrickProfiler<T> {
    /// Sync once and resolve every closed entry.
    pub(super) fn resolve_pending(&mut self) -> Result<()> {
        let synced = self.sync_closed();
        self.resolve_synced(synced)
    }

    /// Immediate and None modes, at each stop: resolve now, keeping an error for `finalize`.
    #[inline]
    pub(super) fn resolve_now(&mut self) {
        if let Err(e) = self.resolve_pending() {
            if self.error.is_none() {
                self.error = Some(e);
            }
        }
    }

    /// Sync the timeline when closed entries wait for it (sync mode `None` reads host ticks
    /// only and never syncs). `Ok(false)`: nothing to resolve.
    pub(super) fn sync_closed(&mut self) -> Result<bool> {
        if self.open_count as usize == self.entries.len() {
            return Ok(false);
        }
        if self.mode != SyncMode::None {
            self.counters.syncs = self.counters.syncs.saturating_add(1);
            self.timeline.sync()?;
        }
        Ok(true)
    }

    /// Resolve every closed entry after [`Self::sync_closed`]: children before parents
    /// (a child starts later, so it sits later in the buffer), each adding its inclusive time
    /// to its parent's nested total. Then compact the open entries to the front.
    pub(super) fn resolve_synced(&mut self, synced: Result<bool>) -> Result<()> {
        match synced {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(e) => {
                self.drop_closed();
                return Err(e);
            }
        }
        let mut first_err = None;
        for i in (0..self.entries.len()).rev() {
            if let Some(ahead) = i.checked_sub(PREFETCH_AHEAD) {
                self.prefetch_cell(ahead);
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
                ..
            } = self.entries[i];
            if state == EntryState::Open {
                if outlived_parent {
                    self.charge_overlap(i);
                }
                continue;
            }
            let host_ns = self.clock.ticks_to_ns(host_start, host_end);
            let ns = if T::HOST_IS_DEVICE {
                host_ns // the marks are these very host readings
            } else {
                match self.span_ns(start, host_start, end, host_end) {
                    Ok(ns) => ns,
                    Err(err) => {
                        self.counters.dropped = self.counters.dropped.saturating_add(1);
                        first_err.get_or_insert(err);
                        continue;
                    }
                }
            };
            if parent != NO_ENTRY {
                let share = if outlived_parent {
                    self.overlap_with_parent(i, ns)
                } else {
                    ns
                };
                if let Some(p) = self.entries.get_mut(parent as usize) {
                    p.child_ns = p.child_ns.saturating_add(share);
                }
            }
            let self_ns = ns.saturating_sub(child_ns);
            self.aggregate(cell, work, (start, host_start), ns, self_ns, host_ns);
        }
        self.compact();
        first_err.map_or(Ok(()), Err)
    }

    /// The part of a child's `ns` that falls before its parent's stop.
    #[cold]
    #[inline(never)]
    fn overlap_with_parent(&mut self, i: usize, ns: u64) -> u64 {
        let e = self.entries[i];
        let Some(p) = self.entries.get(e.parent as usize).copied() else {
            return ns;
        };
        self.span_ns(e.start, e.host_start, p.end, p.host_end)
            .unwrap_or(ns)
            .min(ns)
    }

    /// The sync failed: every closed entry is dropped (counted), open ones stay.
    #[cold]
    #[inline(never)]
    fn drop_closed(&mut self) {
        for i in (0..self.entries.len()).rev() {
            let e = self.entries[i];
            if e.state == EntryState::Closed {
                self.counters.dropped = self.counters.dropped.saturating_add(1);
            } else if e.outlived_parent {
                self.charge_overlap(i);
            }
        }
        self.compact();
    }

    /// Ask the processor to fetch the statistics cell that entry `i` will update, a few
    /// entries before it is aggregated: the cells of a many-layer model do not stay in the
    /// first-level cache between passes.
    #[inline(always)]
    fn prefetch_cell(&self, i: usize) {
        if let Some(e) = self.entries.get(i) {
            // No bounds check needed: a prefetch never faults, whatever the address.
            let cell = self
                .cells
                .stats
                .cells()
                .as_ptr()
                .wrapping_add(e.cell as usize);
            let header: *const u8 = cell.cast();
            prefetch(header);
            prefetch(header.wrapping_add(64));
        }
    }

    /// Nanoseconds between two marks: on the timeline, or host ticks in sync mode `None`.
    #[inline]
    fn span_ns(&mut self, start: Mark, host_start: u64, end: Mark, host_end: u64) -> Result<u64> {
        if self.mode == SyncMode::None && !T::HOST_IS_DEVICE {
            Ok(self.clock.ticks_to_ns(host_start, host_end))
        } else {
            self.timeline.resolve_ns(start, end)
        }
    }

    /// An open brick whose parent stopped before it: charge the parent with their overlap now
    /// (both marks are synced), and detach it.
    #[cold]
    fn charge_overlap(&mut self, i: usize) {
        let e = self.entries[i];
        let Some(p) = self.entries.get(e.parent as usize).copied() else {
            return;
        };
        if p.state == EntryState::Closed {
            if let Ok(ns) = self.span_ns(e.start, e.host_start, p.end, p.host_end) {
                let parent = &mut self.entries[e.parent as usize];
                parent.child_ns = parent.child_ns.saturating_add(ns);
            }
            self.entries[i].outlived_parent = false;
            self.entries[i].parent = NO_ENTRY;
        }
    }

    /// Keep only open entries, in order. Open entries form one chain (each is an ancestor of
    /// the innermost), so each one's parent is the previous kept entry or none.
    fn compact(&mut self) {
        if self.open_count == 0 {
            self.entries.clear();
            self.open = NO_ENTRY;
            self.timeline.recycle();
            return;
        }
        // Open entries remain: every one is an ancestor of the innermost, so in index order
        // each one's nearest open ancestor is the entry kept just before it.
        let mut kept = 0usize;
        let mut prev_old = NO_ENTRY;
        for i in 0..self.entries.len() {
            let mut e = self.entries[i];
            if e.state != EntryState::Open {
                continue;
            }
            e.parent = if kept > 0 && e.parent == prev_old {
                (kept - 1) as u32
            } else {
                NO_ENTRY
            };
            prev_old = i as u32;
            self.entries[kept] = e;
            kept += 1;
        }
        self.entries.truncate(kept);
        self.open = kept.checked_sub(1).map_or(NO_ENTRY, |k| k as u32);
    }
}
