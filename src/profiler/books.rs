//! The books: the aggregate stage's part of the profiler. A resolved [`Measurement`] goes into
//! its (phase, row, slot) statistics cell; tiles into their (slot, level) cell (tiles are not
//! split by phase); each pass into the pass statistics, overall and of its phase. Never
//! allocates while recording. The fields are private to this file.

use strum::EnumCount;

use super::measurement::Measurement;
use super::nesting::{Edge, Nesting};
use crate::model::grid::{CellIndex, Grid, Row, Rows};
use crate::{
    model::Counters,
    stats::{BrickStats, TileLevel, TileStats},
    Phase, Work,
};

/// Statistics per (brick, phase, row), tiles, pass statistics and the counts of what was
/// recorded.
#[derive(Debug, Clone)]
pub(crate) struct Books {
    /// The row convention of `stats` (one plane of rows per phase).
    rows: Rows,
    /// Statistics per (slot, phase and layer row): [`Rows::grid_rows`] rows per slot.
    stats: Grid<BrickStats>,
    /// Tile statistics per (slot, tile level).
    tiles: Grid<TileStats>,
    /// Tiles timed outside any brick, per level.
    unattributed_tiles: [TileStats; TileLevel::COUNT],
    /// Per-pass wall time (elements: tokens).
    pass_stats: BrickStats,
    /// The same, per phase: their merge is `pass_stats`.
    phase_passes: [BrickStats; Phase::COUNT],
    /// Passes, tokens, warm-up passes, measurements without a cell, and whatever another
    /// profiler's merge brought.
    counters: Counters,
    /// Which brick ran directly inside which (src/profiler/nesting.rs).
    nesting: Nesting,
    /// Per slot: calls that launched nothing on the device (spec/sync-modes.md "CUPTI").
    host_only: Vec<u64>,
}

impl Books {
    /// Empty books for `slots` bricks over `rows`.
    pub(crate) fn new(slots: usize, rows: Rows) -> Self {
        Books {
            rows,
            stats: Grid::new(slots, rows.grid_rows()),
            tiles: Grid::new(slots, TileLevel::COUNT),
            unattributed_tiles: Default::default(),
            pass_stats: BrickStats::new(),
            phase_passes: Default::default(),
            counters: Counters::default(),
            nesting: Nesting::new(slots, rows.grid_rows()),
            host_only: vec![0; slots],
        }
    }

    /// Grow to `slots` bricks (a registration).
    pub(crate) fn grow_slots(&mut self, slots: usize) {
        self.stats.grow_slots(slots);
        self.tiles.grow_slots(slots);
        self.nesting.grow_slots(slots);
        if self.host_only.len() < slots {
            self.host_only.resize(slots, 0);
        }
    }

    /// The statistics grid (for flat cell indices and prefetch addresses).
    #[inline(always)]
    pub(crate) fn grid(&self) -> &Grid<BrickStats> {
        &self.stats
    }

    /// Record a resolved measurement.
    #[inline(always)]
    pub(crate) fn record(&mut self, m: &Measurement) {
        match self.stats.at_mut(m.cell) {
            Some(s) => s.record_nested(m.inclusive_ns, m.self_ns, m.host_ns, m.work),
            None => self.counters.dropped = self.counters.dropped.saturating_add(1),
        }
        if m.host_only {
            self.record_host_only(m.cell);
        }
    }

    /// A call of `cell`'s brick launched nothing on the device.
    #[cold]
    #[inline(never)]
    fn record_host_only(&mut self, cell: CellIndex) {
        let slot = self.slot_of(cell);
        if let Some(n) = self.host_only.get_mut(slot) {
            *n = n.saturating_add(1);
        }
    }

    /// Calls of `slot`'s brick that launched nothing on the device.
    pub(crate) fn host_only(&self, slot: usize) -> u64 {
        self.host_only.get(slot).copied().unwrap_or(0)
    }

    /// A measurement of `child` nested directly inside the brick of cell `parent`: its
    /// nesting edge. Out of line, so the resolve loop keeps its registers for the statistics
    /// (with this inlined in the loop, a pass of flat bricks resolved about 15 % slower;
    /// spec/hot-path.md "Costs").
    #[cold]
    #[inline(never)]
    pub(crate) fn record_edge(
        &mut self,
        parent: CellIndex,
        child: CellIndex,
        ns: u64,
        self_ns: u64,
    ) {
        let (slot, _) = self.stats.coords(parent);
        self.nesting.record(slot, child, ns, self_ns);
    }

    /// The slot of a cell.
    #[inline(always)]
    pub(crate) fn slot_of(&self, cell: CellIndex) -> usize {
        self.stats.coords(cell).0
    }

    /// (slot, row index) of a cell, its phase left out: what a trace event names.
    pub(crate) fn coords(&self, cell: CellIndex) -> (usize, usize) {
        let (slot, row) = self.stats.coords(cell);
        (slot, row % self.rows.count())
    }

    /// Record a tile of `ns` in brick `slot` (`None`: outside any brick).
    pub(crate) fn record_tile(&mut self, slot: Option<usize>, level: TileLevel, ns: u64, w: Work) {
        let stats = match slot {
            None => self.unattributed_tiles.get_mut(level as usize),
            Some(slot) => self.tiles.get_mut(slot, level as usize),
        };
        match stats {
            Some(s) => s.record(ns, ns, w),
            None => self.counters.dropped = self.counters.dropped.saturating_add(1),
        }
    }

    /// A counted pass of `pass_ns` in `phase` that produced `tokens` tokens.
    pub(crate) fn record_pass(&mut self, pass_ns: u64, tokens: u64, phase: Phase) {
        self.counters.passes = self.counters.passes.saturating_add(1);
        self.counters.tokens = self.counters.tokens.saturating_add(tokens);
        self.pass_stats
            .record(pass_ns, pass_ns, Work::elements(tokens));
        self.phase_passes[phase.index()].record(pass_ns, pass_ns, Work::elements(tokens));
    }

    /// A pass captured into a graph: not timed, only counted.
    pub(crate) fn record_captured_pass(&mut self) {
        self.counters.captured_passes = self.counters.captured_passes.saturating_add(1);
    }

    /// A counted pass was a graph's replay (spec/sync-modes.md "Graph capture").
    pub(crate) fn record_replay(&mut self) {
        self.counters.graph_replays = self.counters.graph_replays.saturating_add(1);
    }

    /// A replay that was not timed: only counted.
    pub(crate) fn record_untimed_replay(&mut self) {
        self.counters.untimed_replays = self.counters.untimed_replays.saturating_add(1);
    }

    /// Warm-up passes discarded so far.
    pub(crate) fn warmup_excluded(&self) -> u64 {
        self.counters.warmup_passes_excluded
    }

    /// A warm-up pass: every timing statistic is discarded.
    pub(crate) fn discard_warmup_pass(&mut self) {
        self.counters.warmup_passes_excluded += 1;
        self.clear_timings();
    }

    fn clear_timings(&mut self) {
        self.stats.reset_with(BrickStats::clear);
        self.tiles.reset_with(BrickStats::clear);
        self.unattributed_tiles
            .iter_mut()
            .for_each(BrickStats::clear);
        self.pass_stats.clear();
        self.phase_passes.iter_mut().for_each(BrickStats::clear);
        self.nesting.clear();
        self.host_only.iter_mut().for_each(|n| *n = 0);
    }

    /// Forget every statistic and count.
    pub(crate) fn reset(&mut self) {
        self.clear_timings();
        self.counters = Counters::default();
    }

    // ---- reading

    /// The statistics of `slot` in every row.
    pub(crate) fn slot(&self, slot: usize) -> &[BrickStats] {
        self.stats.slot(slot)
    }

    /// The statistics of `slot` in (unphased) `row` of `phase`.
    pub(crate) fn get(&self, slot: usize, phase: Phase, row: Row) -> Option<&BrickStats> {
        self.stats.get(slot, self.rows.in_phase(phase, row).index())
    }

    /// The statistics of `slot` in (unphased) `row`, merged over every phase; `None` outside
    /// the grid.
    pub(crate) fn get_merged(&self, slot: usize, row: Row) -> Option<BrickStats> {
        let mut cells = Phase::ALL.iter().map(|&p| self.get(slot, p, row));
        let mut out = cells.next()??.clone();
        cells.flatten().for_each(|s| out.merge(s));
        Some(out)
    }

    /// The statistics of `slot` in every row of `phase`.
    pub(crate) fn phase_slot(&self, slot: usize, phase: Phase) -> &[BrickStats] {
        let plane = self.rows.count();
        let all = self.stats.slot(slot);
        let start = (phase.index() * plane).min(all.len());
        &all[start..(start + plane).min(all.len())]
    }

    /// Tile statistics of `level` in `slot`.
    pub(crate) fn tile(&self, slot: usize, level: TileLevel) -> Option<&TileStats> {
        self.tiles.get(slot, level as usize)
    }

    /// Tile statistics of tiles timed outside any brick.
    pub(crate) fn unattributed_tile(&self, level: TileLevel) -> &TileStats {
        &self.unattributed_tiles[level as usize]
    }

    /// Per-pass wall time statistics.
    pub(crate) fn pass_stats(&self) -> &BrickStats {
        &self.pass_stats
    }

    /// Per-pass wall time statistics of `phase`'s passes.
    pub(crate) fn phase_pass_stats(&self, phase: Phase) -> &BrickStats {
        &self.phase_passes[phase.index()]
    }

    /// What the books counted.
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The nesting edges: (parent slot, child slot, child's phased row index, edge).
    pub(crate) fn nesting(&self) -> impl Iterator<Item = (usize, usize, usize, &Edge)> + '_ {
        self.nesting.edges().iter().map(|e| {
            let (slot, row) = self.stats.coords(e.child);
            (e.parent_slot as usize, slot, row, e)
        })
    }

    /// Nesting edges that did not fit the table.
    pub(crate) fn nesting_dropped(&self) -> u64 {
        self.nesting.dropped()
    }
}
