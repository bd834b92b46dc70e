//! The pending buffer: raw entries between their start and their resolution, in a buffer whose
//! capacity is fixed and reserved at construction, so reserving an entry never allocates, and
//! the chain of open entries through it. Only the mark stage writes entries; the resolve stage
//! reads, links and compacts them. Both are the marker's (`super`); nothing else sees them.

use std::ops::{Index, IndexMut};

use crate::model::grid::CellIndex;
use crate::profiler::token::NO_ENTRY;
use crate::timeline::{Mark, INVALID_MARK};
use crate::Work;

/// Where a pending entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryState {
    /// Started, not stopped.
    Open,
    /// Stopped, waiting to be resolved.
    Closed,
    /// Still open when its pass ended in Lagged mode: counted as unclosed, never recorded,
    /// removed when its pass resolves (until then it charges its parent with their overlap,
    /// as an open brick would).
    Discarded,
}

/// One brick between its start and its resolution: the raw entry of the mark stage. Fixed
/// size; lives in the pending buffer allocated at construction, reserved at `start_brick`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) start: Mark,
    pub(crate) end: Mark,
    pub(crate) host_start: u64,
    pub(crate) host_end: u64,
    pub(crate) work: Work,
    /// Inclusive time of bricks nested directly inside, added as they resolve.
    pub(crate) child_ns: u64,
    /// The enclosing brick's entry (innermost open brick at start), or [`NO_ENTRY`]. Once
    /// that parent is resolved while this entry is still open, the link names this entry's
    /// nearest open ancestor instead, and `detached` says so.
    pub(crate) parent: u32,
    pub(crate) seq: u32,
    /// The (slot, row) statistics cell.
    pub(crate) cell: CellIndex,
    pub(crate) state: EntryState,
    /// It was still open when its parent stopped: only the overlap counts against the parent.
    pub(crate) outlived_parent: bool,
    /// Its parent was resolved (and charged with their overlap) while it was open: `parent`
    /// is now only the link to its nearest open ancestor, which it is not nested in directly,
    /// so it charges nobody when it resolves.
    pub(crate) detached: bool,
}

impl Entry {
    /// A brick started at `start` (timeline) / `host` (host ticks), not stopped yet.
    #[inline(always)]
    pub(crate) fn open(start: Mark, host: u64, parent: u32, seq: u32, cell: CellIndex) -> Self {
        Entry {
            start,
            end: INVALID_MARK,
            host_start: host,
            host_end: host,
            work: Work::NONE,
            child_ns: 0,
            parent,
            seq,
            cell,
            state: EntryState::Open,
            outlived_parent: false,
            detached: false,
        }
    }

    /// The brick stopped at `end` (timeline) / `host` (host ticks) having done `work`.
    /// Returns its parent entry.
    #[inline(always)]
    pub(crate) fn close(&mut self, end: Mark, host: u64, work: Work) -> u32 {
        self.end = end;
        self.host_end = host;
        self.work = work;
        self.state = EntryState::Closed;
        self.parent
    }
}

/// The fixed-capacity pending buffer and its chain of open entries.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The live entries; its allocation is reserved at construction and never grows (its
    /// capacity is the buffer's: `Vec::with_capacity` reserves exactly what it is asked).
    entries: Vec<Entry>,
    /// How many live entries a start may find and still be marked: the capacity, or 0 while
    /// the sampling plan leaves starts unmarked, so that such a start takes the cold path
    /// that counts it and neither a disabled start nor a marked one pays for the count.
    accepts: usize,
    /// The innermost open brick's entry, or [`NO_ENTRY`].
    pub(super) open: u32,
    /// Open entries.
    pub(super) open_count: u32,
    /// Start sequence number of the next brick.
    pub(super) seq: u32,
}

impl Pending {
    /// A buffer for `capacity` entries, reserved now (no allocation later).
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Pending {
            entries: Vec::with_capacity(capacity),
            accepts: capacity,
            open: NO_ENTRY,
            open_count: 0,
            seq: 0,
        }
    }

    /// Live entries.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is live.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries it holds at most.
    pub(crate) fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Whether every slot is live.
    #[inline(always)]
    pub(crate) fn is_full(&self) -> bool {
        self.entries.len() >= self.entries.capacity()
    }

    /// Whether a start is marked straight away: there is room, and starts are accepted.
    #[inline(always)]
    pub(crate) fn takes_start(&self) -> bool {
        self.entries.len() < self.accepts
    }

    /// Accept starts (the capacity's worth) or none (sampled out).
    pub(crate) fn accept_starts(&mut self, on: bool) {
        self.accepts = if on { self.entries.capacity() } else { 0 };
    }

    /// Append `entry`; returns its index, or `None` when the buffer is full. Never allocates
    /// (the storage was reserved at construction); the check is the one `Vec::push` makes, so
    /// it is made once.
    #[inline(always)]
    pub(crate) fn push(&mut self, entry: Entry) -> Option<u32> {
        let index = self.entries.len();
        if self.is_full() {
            return None;
        }
        self.entries.push(entry); // within the reserved capacity: no reallocation
        Some(index as u32)
    }

    /// Forget every entry, open ones too (O(1): entries are plain data). Sequence numbers go
    /// on, so a token from before never matches a later entry.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.open = NO_ENTRY;
        self.open_count = 0;
    }

    /// Whether every live entry is open (nothing to resolve).
    #[inline(always)]
    pub(crate) fn all_open(&self) -> bool {
        self.open_count as usize == self.entries.len()
    }

    /// Remove the first `n` entries (a resolved pass), shifting the rest to the front and
    /// their links with them. Never allocates.
    pub(crate) fn remove_front(&mut self, n: usize) {
        let n = n.min(self.entries.len());
        self.entries.drain(..n);
        for e in &mut self.entries {
            if e.parent != NO_ENTRY {
                match e.parent.checked_sub(n as u32) {
                    Some(p) => e.parent = p,
                    None => {
                        e.parent = NO_ENTRY;
                        e.detached = true;
                    }
                }
            }
        }
        if self.open != NO_ENTRY {
            self.open = self.open.checked_sub(n as u32).unwrap_or(NO_ENTRY);
        }
    }

    /// Every open entry from `from` on becomes [`EntryState::Discarded`]; returns how many.
    pub(crate) fn discard_open(&mut self, from: usize) -> u32 {
        let mut n = 0;
        for e in self.entries.iter_mut().skip(from) {
            if e.state == EntryState::Open {
                e.state = EntryState::Discarded;
                n += 1;
            }
        }
        self.open = NO_ENTRY;
        self.open_count = 0;
        n
    }

    /// Keep the first `len` entries.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.entries.truncate(len);
    }

    /// Live entry `i`.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> Option<&Entry> {
        self.entries.get(i)
    }

    /// Live entry `i`, mutably.
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut Entry> {
        self.entries.get_mut(i)
    }

    /// The index of the open entry with sequence number `seq`, if any.
    pub(crate) fn find_open(&self, seq: u32) -> Option<u32> {
        self.entries
            .iter()
            .position(|e| e.seq == seq && e.state == EntryState::Open)
            .map(|i| i as u32)
    }
}

impl Index<usize> for Pending {
    type Output = Entry;

    #[inline(always)]
    fn index(&self, i: usize) -> &Entry {
        &self.entries[i]
    }
}

impl IndexMut<usize> for Pending {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut Entry {
        &mut self.entries[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::grid::{Grid, Rows};

    fn entry(seq: u32) -> Entry {
        let cell = Grid::<u8>::new(1, 3).index(0, Rows::new(1).unwrap().model());
        Entry::open(seq.into(), 0, NO_ENTRY, seq, cell)
    }

    #[test]
    fn fills_to_capacity_then_refuses_and_reuses_after_clear() {
        let mut p = Pending::with_capacity(2);
        assert_eq!(p.push(entry(1)), Some(0));
        assert_eq!(p.push(entry(2)), Some(1));
        assert!(p.is_full());
        assert_eq!(p.push(entry(3)), None, "a full buffer refuses");
        p.truncate(1);
        assert_eq!((p.len(), p.get(1).map(|e| e.seq)), (1, None));
        assert_eq!(p.push(entry(4)), Some(1));
        assert_eq!(p[1].seq, 4);
        assert_eq!(p.find_open(4), Some(1));
        p.clear();
        assert!(p.is_empty() && p.find_open(4).is_none());
        assert_eq!(p.push(entry(5)), Some(0));
        assert_eq!(p.entries.capacity(), 2, "never grows past its reservation");
        // A resolved pass leaves the front; links follow the entries.
        let mut p = Pending::with_capacity(3);
        let mut child = entry(9);
        child.parent = 1;
        for e in [entry(6), entry(7), child] {
            p.push(e);
        }
        p.open = 2;
        p.remove_front(1);
        assert_eq!((p.len(), p[1].seq, p[1].parent, p.open), (2, 9, 0, 1));
        p.remove_front(1);
        assert_eq!((p[0].parent, p[0].detached, p.open), (NO_ENTRY, true, 0));
        p.remove_front(1);
        assert_eq!((p.len(), p.open), (0, NO_ENTRY));
        p.push(entry(10));
        p.open_count = 1;
        assert_eq!(p.discard_open(0), 1);
        assert_eq!((p[0].state, p.open_count), (EntryState::Discarded, 0));
    }

    /// spec/hot-path.md "Costs", spec/sync-modes.md "Sampling": while the plan samples starts
    /// out, the buffer takes none, whatever its room (they take the cold path that counts
    /// them); marking again, it takes them up to its capacity. Fullness is its own.
    #[test]
    fn a_sampled_out_buffer_takes_no_start_and_a_marking_one_takes_them_to_capacity() {
        let mut p = Pending::with_capacity(2);
        assert!(p.takes_start());
        p.accept_starts(false);
        assert!(!p.takes_start() && !p.is_full(), "room, but no start taken");
        p.accept_starts(true);
        assert_eq!(p.push(entry(1)), Some(0));
        assert!(p.takes_start());
        assert_eq!(p.push(entry(2)), Some(1));
        assert!(!p.takes_start() && p.is_full());
        assert_eq!(p.capacity(), 2);
        p.clear();
        assert!(p.takes_start(), "a cleared buffer takes starts again");
    }
}
