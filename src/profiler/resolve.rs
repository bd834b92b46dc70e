//! The resolve stage: one sync, then every closed entry of the pending buffer becomes a
//! measurement with its inclusive time (its own start to its own stop) and its self time
//! (inclusive minus the bricks nested directly inside it). Open entries stay, compacted to the
//! front of the buffer (spec/sync-modes.md, spec/hot-path.md "Self time").

use super::{BrickProfiler, EntryState, NO_ENTRY};

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
        let mut first_err = match synced {
            Ok(false) => return Ok(()),
            Ok(true) => None,
            Err(e) => Some(e),
        };
        let sync_failed = first_err.is_some();
        for i in (0..self.entries.len()).rev() {
            if let Some(ahead) = i.checked_sub(PREFETCH_AHEAD) {
                self.prefetch_cell(ahead);
            }
            let e = self.entries[i];
            if e.state == EntryState::Open {
                if e.outlived_parent {
                    self.charge_overlap(i);
                }
                continue;
            }
            if sync_failed {
                self.counters.dropped = self.counters.dropped.saturating_add(1);
                continue;
            }
            let host_ns = self.clock.ticks_to_ns(e.host_start, e.host_end);
            let inclusive = if T::HOST_IS_DEVICE {
                Ok(host_ns) // the marks are these very host readings
            } else {
                self.span_ns(e.start, e.host_start, e.end, e.host_end)
            };
            let ns = match inclusive {
                Ok(ns) => ns,
                Err(err) => {
                    self.counters.dropped = self.counters.dropped.saturating_add(1);
                    first_err.get_or_insert(err);
                    continue;
                }
            };
            if e.parent != NO_ENTRY {
                let share = if e.outlived_parent {
                    let p = self.entries[e.parent as usize];
                    self.span_ns(e.start, e.host_start, p.end, p.host_end)
                        .unwrap_or(ns)
                        .min(ns)
                } else {
                    ns
                };
                let p = &mut self.entries[e.parent as usize];
                p.child_ns = p.child_ns.saturating_add(share);
            }
            let self_ns = ns.saturating_sub(e.child_ns);
            self.aggregate(&e, ns, self_ns, host_ns);
        }
        self.compact();
        first_err.map_or(Ok(()), Err)
    }

    /// Ask the processor to fetch the statistics cell (and, on the CPU timeline, the
    /// histogram line) that entry `i` will update, a few entries before it is aggregated: the
    /// cells of a many-layer model do not stay in the first-level cache between passes.
    #[inline(always)]
    fn prefetch_cell(&self, i: usize) {
        let e = &self.entries[i];
        if let Some(cell) = self.cells.stats.get(e.slot as usize, e.row as usize) {
            prefetch(cell);
            if T::HOST_IS_DEVICE && e.state == EntryState::Closed {
                let ns = self.clock.ticks_to_ns(e.host_start, e.host_end);
                prefetch(cell.histogram().slot_of(ns));
            }
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
