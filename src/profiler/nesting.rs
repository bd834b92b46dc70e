//! The nesting table: part of the books (the aggregate stage). For each brick resolved directly
//! inside another, one edge (parent brick, child cell) counts the calls and sums the child's
//! inclusive and self time there. Reports draw the brick tree from it (flamegraph, DOT).
//!
//! Bounded and allocation-free while recording: the edges live in a buffer reserved at
//! construction ([`MAX_NESTING_EDGES`]); an edge past it is counted in `dropped`. A lookup walks
//! the chain of edges of one child cell (a child usually has one parent brick): no hashing.
//! spec/profile-format.md "Nesting".

use super::Ledger;
use crate::model::grid::{CellIndex, Grid};
use crate::model::row_key::RowKey;
use crate::{BrickHandle, Phase};

/// One nesting edge as a profiler hands it out: `child` ran directly inside `parent`, in
/// `row` of passes of `phase`, `calls` times, for `total_ns` inclusive and `self_ns` self time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NestedCalls {
    pub(crate) parent: BrickHandle,
    pub(crate) child: BrickHandle,
    pub(crate) phase: Phase,
    pub(crate) row: RowKey,
    pub(crate) calls: u64,
    pub(crate) total_ns: u64,
    pub(crate) self_ns: u64,
}

impl Ledger {
    /// Every nesting edge recorded so far, and how many did not fit the table.
    pub(crate) fn nested_calls(&self) -> (Vec<NestedCalls>, u64) {
        let ledger = self;
        let handles: Vec<BrickHandle> = ledger.registry().handles().collect();
        let by_slot = |slot: usize| handles.iter().copied().find(|h| h.slot() == slot);
        let rows = ledger.rows();
        let edges = ledger
            .books
            .nesting()
            .filter_map(|(parent, child, row, e)| {
                let (phase, row) = rows.split(row)?;
                Some(NestedCalls {
                    parent: by_slot(parent)?,
                    child: by_slot(child)?,
                    phase,
                    row: rows.kind(row),
                    calls: e.calls,
                    total_ns: e.total_ns,
                    self_ns: e.self_ns,
                })
            })
            .collect();
        (edges, ledger.books.nesting_dropped())
    }
}

/// Distinct (parent brick, child cell) edges a profiler keeps; more are counted as dropped.
pub(crate) const MAX_NESTING_EDGES: usize = 1024;

/// No edge (chain end, or no chain for a cell).
const NONE: u32 = u32::MAX;

/// One edge: `child` ran directly inside brick `parent_slot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edge {
    pub(crate) parent_slot: u32,
    pub(crate) child: CellIndex,
    pub(crate) calls: u64,
    pub(crate) total_ns: u64,
    pub(crate) self_ns: u64,
    /// The next edge of the same child cell.
    next: u32,
}

/// Chain heads per child cell, and the edges.
#[derive(Debug, Clone)]
pub(crate) struct Nesting {
    /// Index of the first edge of each cell's chain, or [`NONE`].
    heads: Grid<ChainHead>,
    edges: Vec<Edge>,
    /// Edges that did not fit.
    dropped: u64,
}

/// A chain head (a `u32` whose default is "no chain").
#[derive(Debug, Clone, Copy, PartialEq)]
struct ChainHead(u32);

impl Default for ChainHead {
    fn default() -> Self {
        ChainHead(NONE)
    }
}

impl Nesting {
    /// An empty table for `slots` bricks of `rows` rows (the statistics grid's: every phase's).
    pub(crate) fn new(slots: usize, rows: usize) -> Nesting {
        Nesting {
            heads: Grid::new(slots, rows),
            edges: Vec::with_capacity(MAX_NESTING_EDGES),
            dropped: 0,
        }
    }

    /// Grow to `slots` bricks (a registration).
    pub(crate) fn grow_slots(&mut self, slots: usize) {
        self.heads.grow_slots(slots);
    }

    /// `child` (a resolved measurement's cell) ran directly inside brick `parent_slot`, for
    /// `total` ns inclusive and `own` ns self time (clamped to `total`, as the child's
    /// statistics clamp it, so its edges never claim more self time than it has).
    #[inline]
    pub(crate) fn record(&mut self, parent_slot: usize, child: CellIndex, total: u64, own: u64) {
        if let Some(e) = self.edge(parent_slot, child) {
            e.calls = e.calls.saturating_add(1);
            e.total_ns = e.total_ns.saturating_add(total);
            e.self_ns = e.self_ns.saturating_add(own.min(total));
        }
    }

    /// The edge (parent, child), made empty if new; `None` (counted) when the table is full
    /// or the cell is outside the grid.
    fn edge(&mut self, parent_slot: usize, child: CellIndex) -> Option<&mut Edge> {
        let head = self.heads.at_mut(child)?;
        let mut i = head.0;
        let mut found = None;
        while let Some(e) = self.edges.get(i as usize) {
            if e.parent_slot as usize == parent_slot {
                found = Some(i as usize);
                break;
            }
            i = e.next;
        }
        let i = match found {
            Some(i) => i,
            None if self.edges.len() >= MAX_NESTING_EDGES => {
                self.dropped = self.dropped.saturating_add(1);
                return None;
            }
            None => {
                let next = head.0;
                head.0 = self.edges.len() as u32;
                self.edges.push(Edge {
                    parent_slot: parent_slot as u32,
                    child,
                    calls: 0,
                    total_ns: 0,
                    self_ns: 0,
                    next,
                });
                self.edges.len() - 1
            }
        };
        self.edges.get_mut(i)
    }

    /// Every edge.
    pub(crate) fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// Edges that did not fit.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Forget every edge (a warm-up pass, a reset), keeping the allocations.
    pub(crate) fn clear(&mut self) {
        self.edges.clear();
        self.heads.reset_with(|h| *h = ChainHead::default());
        self.dropped = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::grid::Rows;

    #[test]
    fn edges_count_calls_per_parent_and_stay_bounded() {
        // spec/profile-format.md "Nesting"
        let rows = Rows::new(1).unwrap();
        let grid: Grid<u8> = Grid::new(4, rows.count());
        let child = grid.index(2, rows.layer(0));
        let mut n = Nesting::new(4, rows.count());
        n.record(1, child, 10, 4);
        n.record(1, child, 20, 6);
        n.record(3, child, 5, 5);
        let e: Vec<_> = n
            .edges()
            .iter()
            .map(|e| (e.parent_slot, e.calls, e.total_ns, e.self_ns))
            .collect();
        assert_eq!(e, vec![(1, 2, 30, 10), (3, 1, 5, 5)]);
        let before = n.edges().as_ptr();
        for slot in 0..2 * MAX_NESTING_EDGES {
            n.record(slot, child, 1, 1);
        }
        assert_eq!(n.edges().len(), MAX_NESTING_EDGES);
        assert!(n.dropped() > 0);
        assert_eq!(before, n.edges().as_ptr(), "recording never reallocates");
        n.clear();
        assert!(n.edges().is_empty() && n.dropped() == 0);
    }
}
