//! The shelf: what a profile is built from (the books, the trace, the brick names and the
//! facts of the last pass boundary), kept where one other thread can read it while the
//! profiler's own thread goes on marking (spec/front-doors.md "Publishing").
//!
//! The profiler's thread is the only writer. It reads its [`Ledger`] without a lock (nobody
//! else writes it) and writes it only through [`Shelf::write`], which takes the shelf's lock
//! once some [`ShelfReader`] exists (before that, `&mut` is proof enough that nobody reads).
//! A reader reads only under the lock. So a collector reads whole statistics, never half a
//! write, and the marker, which lives outside the shelf, never takes a lock: the thread-local
//! front door takes it once per pass (at `end_pass`) to resolve into the books.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};

use super::books::Books;
use super::tally::PassTally;
use super::trace_capture::TraceCapture;
use super::tracer::Tracer;
use crate::model::registry::BrickRegistry;
use crate::model::{grid::Rows, row_key::RowKey};
use crate::profile::trace::TraceBuffer;
use crate::timeline::TimelineKind;
use crate::{
    model::{Counters, Sampling},
    stats::{BrickStats, TileLevel, TileStats},
    BrickHandle, Phase, SyncMode, Work,
};

/// The run facts a profile needs from outside the ledger (the marker's, the sampler's and the
/// checksum stage's), as of the last pass boundary the profiler published.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Facts {
    pub(crate) timeline: TimelineKind,
    pub(crate) sync_mode: SyncMode,
    pub(crate) resolution_ns: u64,
    /// What a mark adds to device time ([`crate::Timeline::mark_cost_ns`]).
    pub(crate) mark_cost_ns: Option<u64>,
    pub(crate) sampling: Sampling,
    pub(crate) calibration_bound_ns: Option<u64>,
    /// Counts kept outside the books (the marker's, the checksum stage's drops, the sampler's).
    pub(crate) counters: Counters,
    /// Graphs whose replays were not timed (spec/sync-modes.md "Graph capture").
    pub(crate) untimed_graphs: crate::profile::untimed_graphs::UntimedGraphs,
    /// Device activity outside any brick, when the timeline reads the device's records.
    pub(crate) outside_bricks: Option<crate::stats::OutsideBricks>,
}

/// What a profile is built from.
#[derive(Debug)]
pub(crate) struct Ledger {
    /// Statistics, tiles, pass statistics, counters.
    pub(super) books: Books,
    /// The trace, when tracing.
    pub(super) trace: Option<Tracer>,
    /// Brick names, built-in and registered.
    pub(super) registry: BrickRegistry,
    /// The rows of the per-layer breakdown.
    pub(super) rows: Rows,
    /// As of the last pass boundary (for a reader; the profiler's own reads use its live ones).
    pub(super) facts: Facts,
    /// The pass series and the fit sums (src/profiler/tally.rs).
    pub(super) tally: PassTally,
    /// A trace capture a live handle asked for, while it is recorded (src/profiler/live.rs).
    pub(super) capture: Option<TraceCapture>,
}

impl Ledger {
    /// The pass series, when any pass was recorded.
    pub(crate) fn pass_series(&self) -> Option<crate::stats::PassSeries> {
        let names = self.registry();
        let handles: Vec<BrickHandle> = names.handles().collect();
        self.tally
            .series(|slot| handles.get(slot).and_then(|&h| names.name(h)))
    }

    /// The fit sums of `brick` in `phase`.
    pub(crate) fn fit_sums(
        &self,
        brick: BrickHandle,
        phase: Phase,
    ) -> Option<&crate::stats::FitSums> {
        self.tally.fits(brick.slot(), phase)
    }

    /// Statistics of `brick` over every layer row.
    pub(crate) fn brick_stats(&self, brick: BrickHandle) -> BrickStats {
        BrickStats::merged(self.books.slot(brick.slot()))
    }

    /// Statistics of `brick` in one row, over every phase.
    pub(crate) fn row_stats(&self, row: RowKey, brick: BrickHandle) -> Option<BrickStats> {
        let r = self.rows.of(row)?;
        self.books.get_merged(brick.slot(), r)
    }

    /// Statistics of `brick` in one row, in the passes of one phase.
    pub(crate) fn phase_row_stats(
        &self,
        phase: Phase,
        row: RowKey,
        brick: BrickHandle,
    ) -> Option<&BrickStats> {
        let r = self.rows.of(row)?;
        self.books.get(brick.slot(), phase, r)
    }

    /// Statistics of `brick` over every row, in the passes of one phase.
    pub(crate) fn phase_brick_stats(&self, phase: Phase, brick: BrickHandle) -> BrickStats {
        BrickStats::merged(self.books.phase_slot(brick.slot(), phase))
    }

    /// Calls of `brick` that launched nothing on the device (spec/sync-modes.md "CUPTI").
    pub(crate) fn host_only(&self, brick: BrickHandle) -> u64 {
        self.books.host_only(brick.slot())
    }

    /// Tile statistics of `level` inside `brick`.
    pub(crate) fn tile_stats(&self, brick: BrickHandle, level: TileLevel) -> Option<&TileStats> {
        self.books.tile(brick.slot(), level)
    }

    /// Tile statistics of tiles timed outside any brick.
    pub(crate) fn unattributed_tile_stats(&self, level: TileLevel) -> &TileStats {
        self.books.unattributed_tile(level)
    }

    /// Per-pass wall time statistics.
    pub(crate) fn pass_stats(&self) -> &BrickStats {
        self.books.pass_stats()
    }

    /// Per-pass wall time statistics of one phase's counted passes.
    pub(crate) fn phase_pass_stats(&self, phase: Phase) -> &BrickStats {
        self.books.phase_pass_stats(phase)
    }

    /// The books' counts plus `outside` (the other parts' counts) and the trace's drops.
    pub(crate) fn counters(&self, outside: &Counters) -> Counters {
        let mut c = *self.books.counters();
        c.merge(outside);
        let trace_dropped = self.trace.as_ref().map_or(0, |t| t.buffer().dropped());
        c.trace_dropped = c.trace_dropped.saturating_add(trace_dropped);
        c
    }

    /// The brick names.
    pub(crate) fn registry(&self) -> &BrickRegistry {
        &self.registry
    }

    /// The rows of the per-layer breakdown.
    pub(crate) fn rows(&self) -> Rows {
        self.rows
    }

    /// The trace event log, when tracing.
    pub(crate) fn trace(&self) -> Option<&TraceBuffer> {
        self.trace.as_ref().map(Tracer::buffer)
    }

    /// The rank written to traces (0 when not tracing).
    pub(crate) fn rank(&self) -> u32 {
        self.trace.as_ref().map_or(0, Tracer::rank)
    }

    /// The facts as of the last pass boundary the profiler published.
    pub(crate) fn facts(&self) -> &Facts {
        &self.facts
    }
}

struct Inner {
    lock: Mutex<()>,
    ledger: UnsafeCell<Ledger>,
}

// SAFETY: the ledger is written only by the one thread that owns the `Shelf`, under `lock` once
// a reader exists; readers read it only under `lock`; the owner's unlocked reads can only meet
// other reads. So `&Ledger` may be used from several threads at once (`Ledger: Sync`), and a
// write excludes every other access, as in a `Mutex<Ledger>` (`Ledger: Send`).
unsafe impl Sync for Inner where Ledger: Send + Sync {}

/// The ledger, owned by the profiler's thread (see the module docs).
pub(crate) struct Shelf {
    inner: Arc<Inner>,
    /// Whether a [`ShelfReader`] was ever made: writes then take the lock.
    shared: bool,
    /// Tiles stopped since the last write, once shared: a tile is timed on the hot path, which
    /// takes no lock, so it waits here and goes into the books at the next write.
    tiles: PendingTiles,
}

/// How many stopped tiles wait for the next write before one is forced (one lock per this
/// many tiles at worst).
const PENDING_TILES: usize = 64;

/// A tile stopped but not yet in the books.
#[derive(Debug, Clone, Copy)]
struct PendingTile {
    slot: Option<usize>,
    level: TileLevel,
    ns: u64,
    work: Work,
}

/// Stopped tiles waiting for the next write: a fixed array, never allocated on the hot path.
#[derive(Debug)]
struct PendingTiles {
    len: usize,
    items: [PendingTile; PENDING_TILES],
}

impl PendingTiles {
    const fn new() -> Self {
        PendingTiles {
            len: 0,
            items: [PendingTile {
                slot: None,
                level: TileLevel::Macro,
                ns: 0,
                work: Work::NONE,
            }; PENDING_TILES],
        }
    }

    /// Into `ledger`'s books, oldest first; empty afterwards.
    fn drain_into(&mut self, ledger: &mut Ledger) {
        for t in &self.items[..self.len] {
            ledger.books.record_tile(t.slot, t.level, t.ns, t.work);
        }
        self.len = 0;
    }
}

impl std::fmt::Debug for Shelf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shelf")
            .field("ledger", self.get())
            .field("shared", &self.shared)
            .field("pending_tiles", &self.tiles.len)
            .finish()
    }
}

impl Shelf {
    pub(crate) fn new(ledger: Ledger) -> Self {
        Shelf {
            inner: Arc::new(Inner {
                lock: Mutex::new(()),
                ledger: UnsafeCell::new(ledger),
            }),
            shared: false,
            tiles: PendingTiles::new(),
        }
    }

    /// The ledger, for its owner: no lock (only the owner writes, through `&mut self`).
    #[inline(always)]
    pub(crate) fn get(&self) -> &Ledger {
        // SAFETY: every write goes through `write(&mut self)`, which cannot overlap this
        // borrow; readers on other threads only read (module docs).
        unsafe { &*self.inner.ledger.get() }
    }

    /// The ledger to write: under the lock once a reader exists.
    #[inline]
    pub(crate) fn write(&mut self) -> Write<'_> {
        let lock = self
            .shared
            .then(|| self.inner.lock.lock().unwrap_or_else(|e| e.into_inner()));
        // SAFETY: `&mut self` excludes the owner's other borrows; `lock` excludes the readers
        // (and without a reader, nobody else holds the `Arc`'s ledger).
        let ledger = unsafe { &mut *self.inner.ledger.get() };
        // Tiles stopped since the last write go in first, so a reader sees them with the
        // measurements around them.
        self.tiles.drain_into(ledger);
        Write {
            ledger,
            _lock: lock,
        }
    }

    /// Record a stopped tile (the hot path): straight into the books while nobody reads them;
    /// once shared, into a fixed buffer that the next write empties (no lock here, except one
    /// forced write per [`PENDING_TILES`] tiles when no pass boundary came between them).
    #[inline]
    pub(crate) fn record_tile(
        &mut self,
        slot: Option<usize>,
        level: TileLevel,
        ns: u64,
        work: Work,
    ) {
        if !self.shared {
            self.write().books.record_tile(slot, level, ns, work);
            return;
        }
        if self.tiles.len == PENDING_TILES {
            drop(self.write());
        }
        self.tiles.items[self.tiles.len] = PendingTile {
            slot,
            level,
            ns,
            work,
        };
        self.tiles.len += 1;
    }

    /// A handle another thread reads the ledger through, under the lock.
    pub(crate) fn reader(&mut self) -> ShelfReader {
        self.shared = true;
        ShelfReader {
            inner: Arc::clone(&self.inner),
        }
    }
}

/// The ledger, being written by its owner.
pub(crate) struct Write<'a> {
    ledger: &'a mut Ledger,
    _lock: Option<MutexGuard<'a, ()>>,
}

impl Deref for Write<'_> {
    type Target = Ledger;
    fn deref(&self) -> &Ledger {
        self.ledger
    }
}

impl DerefMut for Write<'_> {
    fn deref_mut(&mut self) -> &mut Ledger {
        self.ledger
    }
}

/// Reads a profiler's ledger from another thread (the thread-local front door's collector).
/// Outlives the profiler: a thread that exited can still be read.
#[derive(Clone)]
pub(crate) struct ShelfReader {
    inner: Arc<Inner>,
}

impl ShelfReader {
    /// The ledger, locked: the owner's next write waits until the guard drops.
    pub(crate) fn lock(&self) -> Read<'_> {
        Read {
            _lock: self.inner.lock.lock().unwrap_or_else(|e| e.into_inner()),
            inner: &self.inner,
        }
    }
}

/// A locked ledger.
pub(crate) struct Read<'a> {
    _lock: MutexGuard<'a, ()>,
    inner: &'a Inner,
}

impl Deref for Read<'_> {
    type Target = Ledger;
    fn deref(&self) -> &Ledger {
        // SAFETY: under the lock, so the owner is not writing (module docs).
        unsafe { &*self.inner.ledger.get() }
    }
}

#[cfg(test)]
mod tests {
    use crate::{stats::TileLevel, BrickId, BrickProfiler, ProfilerConfig, Work};

    /// Once another thread reads the books, a stopped tile takes no lock: it waits for the next
    /// write (spec/front-doors.md "Publishing"), at the latest after `PENDING_TILES` tiles.
    #[test]
    fn shared_tiles_wait_for_the_next_write_and_none_is_lost() {
        let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(1)).unwrap();
        let reader = prof.share();
        let tiles = |r: &super::ShelfReader| {
            let h = BrickId::GateProjection.into();
            r.lock()
                .tile_stats(h, TileLevel::Micro)
                .map_or(0, |s| s.count())
        };
        let n = super::PENDING_TILES + 36;
        prof.begin_pass();
        let t = prof.start_brick(BrickId::GateProjection);
        for _ in 0..n {
            let tile = prof.start_tile(TileLevel::Micro);
            prof.stop_tile(
                tile,
                Work {
                    elements: 0,
                    flops: 2,
                    bytes: 0,
                },
            );
        }
        // The first full buffer was forced into the books; the rest waits.
        assert_eq!(tiles(&reader), super::PENDING_TILES as u64);
        prof.stop_brick(t, 1);
        prof.end_pass(1).unwrap();
        assert_eq!(tiles(&reader), n as u64);
        assert_eq!(
            prof.ledger()
                .tile_stats(BrickId::GateProjection.into(), TileLevel::Micro)
                .unwrap()
                .count(),
            n as u64
        );
    }
}
