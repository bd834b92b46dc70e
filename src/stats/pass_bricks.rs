//! The pass-brick record: each brick's self time in each of the newest passes, the samples of
//! timing verdicts (spec/timing-verdicts.md "Where per-pass brick times come from"). A leaf:
//! the tally fills a [`PassBrickRing`] when a pass closes (never per brick), and the profile
//! saves it beside the pass series, one column per brick.

/// The most passes the record keeps: the newest `min(pass series capacity, 1024)`. With at most
/// [`crate::base::limits::MAX_BRICKS`] slots of `u32` each, a ring is at most 16 MiB; for the
/// built-in bricks about 200 KiB.
pub(crate) const DEFAULT_PASS_BRICKS: usize = 1024;

/// One column of `capacity` `u32` per brick slot, sharing one write position, so a pass is the
/// same index in every column. Allocated at construction and at a slot's registration: a
/// closing pass writes, never allocates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PassBrickRing {
    /// Per slot, `capacity` ns (saturated at `u32::MAX`); 0 where the brick had no time.
    columns: Vec<Vec<u32>>,
    capacity: usize,
    /// Passes kept (at most `capacity`).
    len: usize,
    /// Where the next pass is written (once full, the oldest pass).
    next: usize,
}

impl PassBrickRing {
    /// A ring of `capacity` passes for `slots` bricks (capacity 0: off).
    pub(crate) fn new(capacity: usize, slots: usize) -> Self {
        PassBrickRing {
            columns: vec![vec![0; capacity]; slots],
            capacity,
            len: 0,
            next: 0,
        }
    }

    /// A column for a newly registered slot (zeros: no time in the passes kept).
    pub(crate) fn push_slot(&mut self) {
        self.columns.push(vec![0; self.capacity]);
    }

    /// Start a pass: its position, zeroed in every column (`None` when off).
    pub(crate) fn begin(&mut self) -> Option<usize> {
        if self.capacity == 0 {
            return None;
        }
        let at = self.next;
        for c in &mut self.columns {
            c[at] = 0;
        }
        self.next = (self.next + 1) % self.capacity;
        self.len = (self.len + 1).min(self.capacity);
        Some(at)
    }

    /// The time of `slot` in the pass at `at` (from [`Self::begin`]).
    #[inline]
    pub(crate) fn set(&mut self, at: usize, slot: usize, ns: u64) {
        if let Some(cell) = self.columns.get_mut(slot).and_then(|c| c.get_mut(at)) {
            *cell = u32::try_from(ns).unwrap_or(u32::MAX);
        }
    }

    /// Forget every pass (the allocations are kept).
    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.next = 0;
    }

    /// Passes kept.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The column of `slot`, oldest pass first (`None` when it had no time in any pass kept).
    pub(crate) fn column(&self, slot: usize) -> Option<Vec<u32>> {
        let c = self.columns.get(slot)?;
        let start = if self.len < self.capacity {
            0
        } else {
            self.next
        };
        let out: Vec<u32> = (0..self.len)
            .map(|i| c[(start + i) % self.capacity])
            .collect();
        out.iter().any(|&ns| ns > 0).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // spec/timing-verdicts.md "Where per-pass brick times come from": aligned columns, the
    // newest passes kept, a saturating u32, no reallocation when a pass closes.
    #[test]
    fn columns_keep_the_newest_passes_aligned() {
        let mut ring = PassBrickRing::new(3, 2);
        let before = ring.columns[0].as_ptr();
        for pass in 1..=5u64 {
            let at = ring.begin().unwrap();
            ring.set(at, 0, pass * 10);
            if pass % 2 == 0 {
                ring.set(at, 1, pass);
            }
        }
        assert_eq!(ring.columns[0].as_ptr(), before);
        assert_eq!(ring.len(), 3);
        assert_eq!(ring.column(0), Some(vec![30, 40, 50]));
        assert_eq!(ring.column(1), Some(vec![0, 4, 0]));
        ring.push_slot();
        assert_eq!(ring.column(2), None, "a new slot has no time yet");
        let at = ring.begin().unwrap();
        ring.set(at, 2, u64::from(u32::MAX) + 5);
        assert_eq!(ring.column(2), Some(vec![0, 0, u32::MAX]));
        ring.clear();
        assert_eq!((ring.len(), ring.column(0)), (0, None));
        assert_eq!(PassBrickRing::new(0, 1).begin(), None);
    }
}
