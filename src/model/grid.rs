//! [`Grid`]: the one owner of (row, slot) indexing and growth for every per-cell array of a
//! profiler (statistics per layer row, tiles per level, checksum call counters), and [`Rows`]:
//! the one owner of the layer-row convention (layer rows `0..layers`, then the model row, then
//! the unassigned row). Nothing else computes a row or a flat cell index by hand.
//!
//! A grid has a fixed number of rows and grows by slots (bricks) only, through
//! [`Grid::grow_slots`]; the profiler grows all its grids together when a brick is registered,
//! so no array can be forgotten (spec/hot-path.md, "One grid").
//!
//! The statistics grid has one plane of rows per [`Phase`]: its rows are
//! [`Rows::grid_rows`] = `Phase::COUNT × count()`, and the row of layer `l` in phase `p` is
//! `p × count() + l` ([`Rows::in_phase`]). The phase is chosen once per pass (the marker adds a
//! phase base to its row at `begin_pass` and at each layer boundary), so a brick's cell index is
//! computed exactly as without phases (spec/hot-path.md "Passes and phases").

use crate::model::phase::Phase;
use crate::model::row_key::RowKey;

/// One row of a profiler's per-layer breakdown, valid for the [`Rows`] that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Row(u16);

impl Row {
    /// The row's index in a grid laid out by [`Rows`].
    #[inline(always)]
    pub(crate) fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// The row convention of a profiler with `layers` layers: rows `0..layers` are layers, row
/// `layers` is the model row and row `layers + 1` the unassigned row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rows {
    layers: u16,
}

impl Rows {
    /// No layer rows: only the model and unassigned rows.
    pub(crate) const NONE: Rows = Rows { layers: 0 };

    /// The rows of `layers` layers; `None` past what a row index holds in every phase plane
    /// (the profiler's `MAX_LAYERS` is far below).
    pub(crate) fn new(layers: usize) -> Option<Rows> {
        let fits = (layers + 2).checked_mul(Phase::COUNT)? <= usize::from(u16::MAX);
        let layers = u16::try_from(layers).ok().filter(|_| fits)?;
        Some(Rows { layers })
    }

    /// Layer rows.
    #[inline(always)]
    pub(crate) fn layers(self) -> usize {
        usize::from(self.layers)
    }

    /// Every row of one phase: the layers, the model row, the unassigned row.
    pub(crate) fn count(self) -> usize {
        self.layers() + 2
    }

    /// Rows of a phased grid: one plane of [`Self::count`] rows per [`Phase`].
    pub(crate) fn grid_rows(self) -> usize {
        self.count() * Phase::COUNT
    }

    /// What the marker adds to an unphased row to land in `phase`'s plane.
    #[inline]
    pub(crate) fn phase_base(self, phase: Phase) -> u16 {
        // `new` keeps every plane within a u16.
        (phase.index() * self.count()) as u16
    }

    /// Row `row` (of the unspecified plane) in `phase`'s plane.
    #[inline]
    pub(crate) fn in_phase(self, phase: Phase, row: Row) -> Row {
        Row(self.unphased(row).0 + self.phase_base(phase))
    }

    /// Unphased row `row` in the plane whose base is `base` ([`Self::phase_base`]): one add.
    #[inline(always)]
    pub(crate) fn at_base(self, base: u16, row: Row) -> Row {
        Row(row.0 + base)
    }

    /// A row moved from any plane to the plane whose base is `base` ([`Self::phase_base`]).
    #[inline]
    pub(crate) fn rebased(self, base: u16, row: Row) -> Row {
        Row(self.unphased(row).0 + base)
    }

    /// A phased row's row in the unspecified plane (what a layer row is without its phase).
    #[inline]
    pub(crate) fn unphased(self, row: Row) -> Row {
        Row(row.0 % (self.layers + 2))
    }

    /// The phase and unphased row of a phased grid's row index; `None` past the last plane.
    pub(crate) fn split(self, index: usize) -> Option<(Phase, Row)> {
        let count = self.count();
        let phase = Phase::from_index(index / count)?;
        Some((phase, Row((index % count) as u16)))
    }

    /// The row of layer `layer`: the unassigned row when it is out of range.
    #[inline(always)]
    pub(crate) fn layer(self, layer: usize) -> Row {
        if layer < self.layers() {
            Row(layer as u16)
        } else {
            self.unassigned()
        }
    }

    /// The row outside any layer.
    #[inline(always)]
    pub(crate) fn model(self) -> Row {
        Row(self.layers)
    }

    /// The row of layers out of range.
    pub(crate) fn unassigned(self) -> Row {
        Row(self.layers + 1)
    }

    /// The row a [`RowKey`] names (`None` for a layer out of range).
    pub(crate) fn of(self, row: RowKey) -> Option<Row> {
        match row {
            RowKey::Layer(l) if l < self.layers() => Some(Row(l as u16)),
            RowKey::Layer(_) => None,
            RowKey::Model => Some(self.model()),
            RowKey::Unassigned => Some(self.unassigned()),
        }
    }

    /// The row of an optional layer (`None`: outside any layer).
    pub(crate) fn of_layer(self, layer: Option<usize>) -> Row {
        layer.map_or(self.model(), |l| self.layer(l))
    }

    /// What a row is.
    pub(crate) fn kind(self, row: Row) -> RowKey {
        match row.0 {
            r if r < self.layers => RowKey::Layer(usize::from(r)),
            r if r == self.layers => RowKey::Model,
            _ => RowKey::Unassigned,
        }
    }

    /// Every row of one plane, layers first.
    pub(crate) fn iter(self) -> impl Iterator<Item = Row> {
        (0..self.layers + 2).map(Row)
    }
}

/// A cell's flat index in a [`Grid`] (slot-major), as the pending entries carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellIndex(u32);

/// The shape of a [`Grid`]: what a cell's flat index needs, without the cells (the hot path
/// computes indices from it while the cells live where another thread may read them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    rows: usize,
}

impl Shape {
    /// The flat index of (slot, row) in a grid of this shape. The grid's cell count is bounded
    /// by the profiler's `MAX_CELLS`, so it fits in 32 bits; an index past the grid is harmless
    /// (`at_mut` and `coords` treat it as outside).
    #[inline(always)]
    pub(crate) fn index(self, slot: usize, row: Row) -> CellIndex {
        CellIndex((slot * self.rows + row.index()) as u32)
    }

    /// `cell` of a grid of this shape over `rows`, moved to the phase plane whose base is
    /// `base` ([`Rows::phase_base`]): the same slot and unphased row (a graph template's bricks
    /// replayed in the replay's phase).
    pub(crate) fn rebased(self, rows: Rows, cell: CellIndex, base: u16) -> CellIndex {
        let (i, per_slot) = (cell.0 as usize, self.rows.max(1));
        let row = Row((i % per_slot) as u16);
        self.index(i / per_slot, rows.rebased(base, row))
    }
}

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
    /// The shape: rows per slot (growing the slots keeps it).
    pub(crate) fn shape(&self) -> Shape {
        Shape { rows: self.rows }
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

    /// The flat index of (slot, row): [`Shape::index`].
    #[cfg(test)]
    pub(crate) fn index(&self, slot: usize, row: Row) -> CellIndex {
        self.shape().index(slot, row)
    }

    /// (slot, row index) of a flat index.
    pub(crate) fn coords(&self, index: CellIndex) -> (usize, usize) {
        let i = index.0 as usize;
        (i / self.rows.max(1), i % self.rows.max(1))
    }

    /// The cell at a flat index, mutably (`None` past the end).
    #[inline(always)]
    pub(crate) fn at_mut(&mut self, index: CellIndex) -> Option<&mut V> {
        self.cells.get_mut(index.0 as usize)
    }

    /// The address of the cell at a flat index, for a prefetch hint (never dereferenced; may
    /// point past the end).
    #[inline(always)]
    pub(crate) fn address(&self, index: CellIndex) -> *const V {
        self.cells.as_ptr().wrapping_add(index.0 as usize)
    }

    /// Every row of one slot (empty outside the grid).
    pub(crate) fn slot(&self, slot: usize) -> &[V] {
        let start = slot.saturating_mul(self.rows).min(self.cells.len());
        let end = start.saturating_add(self.rows).min(self.cells.len());
        &self.cells[start..end]
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
        assert_eq!(g.rows, 3);
        let rows = Rows::new(1).unwrap();
        let i = g.index(1, rows.unassigned());
        assert_eq!(g.coords(i), (1, 2));
        *g.at_mut(i).unwrap() = 9;
        assert_eq!(g.get(1, 2), Some(&9));
        assert!(g.at_mut(g.index(4, rows.model())).is_none());
    }

    #[test]
    fn rows_name_layers_then_model_then_unassigned() {
        // spec/hot-path.md "One grid": the row convention has one owner.
        let rows = Rows::new(2).unwrap();
        assert_eq!(rows.count(), 4);
        assert_eq!(rows.layer(1).index(), 1);
        assert_eq!(rows.layer(2), rows.unassigned(), "out of range: unassigned");
        assert_eq!(rows.model().index(), 2);
        assert_eq!(rows.unassigned().index(), 3);
        assert_eq!(rows.of_layer(None), rows.model());
        assert_eq!(rows.of(RowKey::Layer(5)), None);
        let kinds: Vec<_> = rows.iter().map(|r| rows.kind(r)).collect();
        assert_eq!(
            kinds,
            [
                RowKey::Layer(0),
                RowKey::Layer(1),
                RowKey::Model,
                RowKey::Unassigned
            ]
        );
        assert!(Rows::new(usize::from(u16::MAX)).is_none());
    }

    #[test]
    fn phases_are_planes_of_rows() {
        // spec/hot-path.md "Passes and phases": cell = slot·4R + phase·R + row.
        let rows = Rows::new(2).unwrap();
        assert_eq!(rows.grid_rows(), 4 * Phase::COUNT);
        let g: Grid<u8> = Grid::new(3, rows.grid_rows());
        for phase in Phase::ALL {
            for row in rows.iter() {
                let r = rows.in_phase(phase, row);
                assert_eq!(rows.split(r.index()), Some((phase, row)));
                assert_eq!(rows.unphased(r), row);
                assert_eq!(
                    rows.rebased(rows.phase_base(Phase::Decode), r).index(),
                    rows.in_phase(Phase::Decode, row).index()
                );
                let (slot, index) = g.coords(g.index(2, r));
                assert_eq!((slot, index), (2, phase.index() * 4 + row.index()));
            }
        }
        assert_eq!(rows.split(rows.grid_rows()), None);
        let top = Rows::new(crate::base::limits::MAX_LAYERS).unwrap();
        assert!(top.grid_rows() <= usize::from(u16::MAX) + 1);
        assert!(Rows::new(usize::from(u16::MAX) / Phase::COUNT).is_none());
    }
}
