//! [`Grid`]: the one owner of (row, slot) indexing and growth for every per-cell array of a
//! profiler (statistics per layer row, tiles per level, checksum call counters).
//!
//! A grid has a fixed number of rows and grows by slots (bricks) only, through
//! [`Grid::grow_slots`]; the profiler grows all its grids together when a brick is registered,
//! so no array can be forgotten (spec/hot-path.md, "One grid").

/// A slot-major array of cells: cell (slot, row) lives at `slot * rows + row`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grid<V> {
    rows: usize,
    cells: Vec<V>,
}

impl<V: Clone + Default> Grid<V> {
    /// `slots × rows` default cells.
    pub(crate) fn new(slots: usize, rows: usize) -> Self {
        Grid {
            rows,
            cells: vec![V::default(); slots * rows],
        }
    }

    /// Grow to `slots` slots (never shrinks); new cells are default.
    pub(crate) fn grow_slots(&mut self, slots: usize) {
        let len = slots * self.rows;
        if len > self.cells.len() {
            self.cells.resize(len, V::default());
        }
    }

    /// Reset every cell to its default, keeping the allocation.
    pub(crate) fn reset_with(&mut self, f: impl FnMut(&mut V)) {
        self.cells.iter_mut().for_each(f);
    }
}

impl<V> Grid<V> {
    /// Rows per slot.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// The cell at (slot, row); `None` outside the grid.
    #[inline(always)]
    pub(crate) fn get(&self, slot: usize, row: usize) -> Option<&V> {
        if row >= self.rows {
            return None;
        }
        self.cells
            .get(slot.wrapping_mul(self.rows).wrapping_add(row))
    }

    /// The cell at (slot, row), mutably; `None` outside the grid.
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, slot: usize, row: usize) -> Option<&mut V> {
        if row >= self.rows {
            return None;
        }
        self.cells
            .get_mut(slot.wrapping_mul(self.rows).wrapping_add(row))
    }

    /// Every row of one slot (empty outside the grid).
    /// (slot, row) of a flat index.
    pub(crate) fn coords(&self, index: usize) -> (usize, usize) {
        (index / self.rows.max(1), index % self.rows.max(1))
    }

    /// The cell at flat index `slot * rows + row`, mutably (`None` past the end).
    #[inline(always)]
    pub(crate) fn at_mut(&mut self, index: usize) -> Option<&mut V> {
        self.cells.get_mut(index)
    }

    pub(crate) fn slot(&self, slot: usize) -> &[V] {
        let start = slot.saturating_mul(self.rows).min(self.cells.len());
        let end = start.saturating_add(self.rows).min(self.cells.len());
        &self.cells[start..end]
    }

    /// Every cell.
    pub(crate) fn cells(&self) -> &[V] {
        &self.cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_keeps_cells_and_indexing_is_bounded() {
        let mut g: Grid<u32> = Grid::new(2, 3);
        *g.get_mut(1, 2).unwrap() = 7;
        assert!(g.get(2, 0).is_none());
        assert!(
            g.get(0, 3).is_none(),
            "a row past the end never aliases the next slot"
        );
        g.grow_slots(4);
        assert_eq!(g.get(1, 2), Some(&7));
        assert_eq!(g.get(3, 2), Some(&0));
        assert_eq!(g.slot(1), &[0, 0, 7]);
        assert!(g.slot(99).is_empty());
        g.reset_with(|c| *c = 0);
        assert_eq!(g.get(1, 2), Some(&0));
        assert_eq!(g.rows(), 3);
        let i = 3 + 2;
        assert_eq!(g.coords(i), (1, 2));
        *g.at_mut(i).unwrap() = 9;
        assert_eq!(g.get(1, 2), Some(&9));
        assert!(g.at_mut(g.cells().len()).is_none());
    }
}
