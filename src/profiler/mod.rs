//! [`BrickProfiler`]: the hot path (`start_brick`/`stop_brick`), sync modes, the pending buffer,
//! layers, passes, tiles, and reading the statistics back.
//!
//! The contract is `spec/hot-path.md` and `spec/sync-modes.md`. Data flows one way, each stage
//! in its own file:
//!
//! ```text
//! mark (hot path)            resolve (after one sync)          aggregate
//! start: reserve an entry ─▶ closed entries → inclusive ns, ─▶ stats grid (row, slot),
//! stop:  close it             self ns (minus nested bricks)     trace
//! ```
//!
//! | file | what lives there |
//! |---|---|
//! | `mod.rs` | configuration, the profiler's state, construction, control, reading statistics |
//! | `mark.rs` | `start_brick`/`stop_brick`, tokens, tiles: append-only raw entries |
//! | `resolve.rs` | the sync, and turning closed entries into measurements (inclusive, self) |
//! | `aggregate.rs` | recording a measurement into the grid and the trace |
//! | `boundaries.rs` | layers, passes, `finalize`, closing the books at `end_pass` |
//! | `checksums.rs` | `record_checksum` and the checksum log |
//! | `merge.rs` | merging another profiler's statistics |

mod aggregate;
mod boundaries;
mod checksums;
mod mark;
mod merge;
mod pending;
mod resolve;
mod sampling;

use std::sync::atomic::{AtomicU32, Ordering};

pub use checksums::ChecksumPlan;

use strum::EnumCount;

use crate::checksum::ChecksumLog;
use crate::grid::Grid;
use crate::registry::BrickRegistry;
use crate::timeline::{CpuTimeline, Timeline};
use crate::trace::{TraceBuffer, TraceHeader, TraceView};
use crate::{
    BrickCategory, BrickHandle, BrickId, BrickStats, Error, HostClock, OverflowPolicy, Result,
    Sampling, SyncMode, TileLevel, TileStats,
};
use pending::Pending;
pub(crate) use pending::{Entry, EntryState};

pub use crate::limits::{MAX_BRICKS, MAX_CELLS, MAX_LAYERS, MAX_PENDING};

/// How a profiler is set up. Every field has a sensible default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilerConfig {
    /// Number of transformer layers to break statistics down by (0: no per-layer rows; at most
    /// [`MAX_LAYERS`]).
    pub layers: usize,
    /// When marks are synchronized and resolved.
    pub sync_mode: SyncMode,
    /// Capacity of the pending buffer (bricks started and not yet resolved), allocated up
    /// front; at least 1, at most [`MAX_PENDING`].
    pub pending_capacity: usize,
    /// What to do when the pending buffer is full.
    pub overflow: OverflowPolicy,
    /// Number of leading forward passes whose timings are discarded (warm-up).
    pub warmup_passes: u64,
    /// Whether the profiler starts enabled.
    pub enabled: bool,
    /// Whether `record_checksum` records (off: it is a no-op).
    pub checksums: bool,
    /// Which kernels are checksummed when `checksums` is on (default: all, every pass).
    pub checksum_plan: ChecksumPlan,
    /// Capacity of the trace event log (0: no trace). Allocated at construction.
    pub trace_capacity: usize,
    /// Rank (process) id written to traces; several ranks' traces then sit side by side.
    pub rank: u32,
    /// What to mark: every brick, only layer boundaries, or every Nth pass (bounded marking
    /// cost on device timelines; spec/sync-modes.md "Sampling").
    pub sampling: Sampling,
    /// Also open a vendor tool range `L{layer}/{Brick}` around every brick (NVTX, roctx; needs
    /// the `nvtx` or `roctx` cargo feature). Off by default.
    pub vendor_ranges: bool,
}

impl Default for ProfilerConfig {
    fn default() -> Self {
        ProfilerConfig {
            layers: 0,
            sync_mode: SyncMode::Deferred,
            pending_capacity: 4096,
            overflow: OverflowPolicy::Flush,
            warmup_passes: 0,
            enabled: true,
            checksums: false,
            checksum_plan: ChecksumPlan::default(),
            trace_capacity: 0,
            rank: 0,
            sampling: Sampling::All,
            vendor_ranges: false,
        }
    }
}

impl ProfilerConfig {
    /// The default configuration with `layers` layers.
    pub fn with_layers(layers: usize) -> Self {
        ProfilerConfig {
            layers,
            ..Self::default()
        }
    }

    /// Check the limits, before anything is allocated.
    fn validate(&self) -> Result<()> {
        if self.layers > MAX_LAYERS {
            return Err(Error::InvalidArgument(format!(
                "{} layers requested; a profiler breaks statistics down by at most {MAX_LAYERS} \
                 layers",
                self.layers
            )));
        }
        check_cells(self.layers + 2, BrickId::COUNT)?;
        if self.pending_capacity == 0 || self.pending_capacity > MAX_PENDING {
            return Err(Error::InvalidArgument(format!(
                "pending_capacity {} is out of range 1..={MAX_PENDING}",
                self.pending_capacity
            )));
        }
        Ok(())
    }
}

/// The cell limit ([`MAX_CELLS`]) for `rows × slots`.
fn check_cells(rows: usize, slots: usize) -> Result<()> {
    let cells = rows.saturating_mul(slots);
    if cells > MAX_CELLS {
        return Err(Error::InvalidArgument(format!(
            "{rows} rows x {slots} bricks = {cells} statistics cells, over the limit of \
             {MAX_CELLS} ({} MiB): use fewer layers or register fewer bricks",
            (MAX_CELLS * BrickStats::MEMORY_BYTES) >> 20
        )));
    }
    Ok(())
}

/// Which row of the per-layer breakdown a measurement lands in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LayerRow {
    /// Inside layer `n` (between `begin_layer(n)` and `end_layer()`).
    Layer(usize),
    /// Outside any layer (embedding, LM head, sampling, ...).
    Model,
    /// Inside a layer whose index was out of range (counted, never a panic).
    Unassigned,
}

/// An open brick measurement from [`BrickProfiler::start_brick`]. Move-only: it is given back
/// to [`BrickProfiler::stop_brick`] exactly once (a second stop does not compile). A token
/// that is never stopped (an early return) costs only its own measurement: `end_pass` counts
/// it as unclosed. A token stopped on another profiler, or after `end_pass` closed it, is
/// counted as a stray stop and records nothing.
///
/// ```compile_fail
/// use brickprof::{BrickId, BrickProfiler};
/// let mut prof = BrickProfiler::default();
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.stop_brick(t, 1); // error[E0382]: use of moved value: `t`
/// ```
#[derive(Debug)]
#[must_use = "pass the token to stop_brick, or the brick is not recorded"]
pub struct BrickToken {
    /// Index of the brick's entry in the pending buffer when it started.
    entry: u32,
    /// The entry's start sequence number (tells a reused index from the token's entry).
    seq: u32,
    /// The profiler that issued it (0: inert, from a disabled profiler).
    owner: u32,
}

impl BrickToken {
    /// A token that records nothing (what a disabled profiler hands out).
    const INERT: BrickToken = BrickToken {
        entry: NO_ENTRY,
        seq: 0,
        owner: 0,
    };

    /// True when this token will record a measurement at `stop_brick`.
    pub fn is_live(&self) -> bool {
        self.owner != 0 && self.entry != NO_ENTRY
    }
}

/// "No entry" in entry links and tokens.
pub(crate) const NO_ENTRY: u32 = u32::MAX;

/// Every per-(row, slot) array, grown together by [`Cells::grow_slots`] (spec/hot-path.md,
/// "One grid").
#[derive(Debug, Clone)]
pub(crate) struct Cells {
    /// Statistics per (slot, layer row).
    pub(crate) stats: Grid<BrickStats>,
    /// Tile statistics per (slot, tile level).
    pub(crate) tiles: Grid<TileStats>,
    /// Checksums taken per (slot, layer row) in the current pass.
    checksum_calls: Grid<u32>,
    /// Whether any checksum call was counted since the last [`Cells::new_pass`].
    checksum_calls_dirty: bool,
}

impl Cells {
    fn new(slots: usize, rows: usize) -> Self {
        Cells {
            stats: Grid::new(slots, rows),
            tiles: Grid::new(slots, TileLevel::COUNT),
            checksum_calls: Grid::new(slots, rows),
            checksum_calls_dirty: false,
        }
    }

    /// Count a checksum call of (slot, row) in this pass; returns its index within the pass,
    /// or `None` when the cell does not exist.
    pub(crate) fn count_checksum_call(&mut self, slot: usize, row: usize) -> Option<u32> {
        let calls = self.checksum_calls.get_mut(slot, row)?;
        let call = *calls;
        *calls = calls.saturating_add(1);
        self.checksum_calls_dirty = true;
        Some(call)
    }

    /// A new pass: call indices start again from 0. Costs nothing when no checksum was taken.
    pub(crate) fn new_pass(&mut self) {
        if self.checksum_calls_dirty {
            self.checksum_calls.reset_with(|c| *c = 0);
            self.checksum_calls_dirty = false;
        }
    }

    /// Grow every array to `slots` bricks.
    fn grow_slots(&mut self, slots: usize) {
        self.stats.grow_slots(slots);
        self.tiles.grow_slots(slots);
        self.checksum_calls.grow_slots(slots);
    }
}

static NEXT_PROFILER_ID: AtomicU32 = AtomicU32::new(1);

/// The profiler. Generic over its [`Timeline`] (the host clock by default) so the hot path is
/// statically dispatched and inlined.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
/// let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(2))?;
/// for layer in 0..2 {
///     prof.begin_layer(layer);
///     let t = prof.start_brick(BrickId::RmsNorm);
///     std::hint::black_box((0..1000).sum::<u64>());
///     prof.stop_brick(t, 1000);
///     prof.end_layer();
/// }
/// prof.end_pass(1)?;
/// assert_eq!(prof.brick_stats(BrickId::RmsNorm).count(), 2);
/// assert_eq!(prof.layer_stats(1, BrickId::RmsNorm).unwrap().count(), 1);
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug)]
pub struct BrickProfiler<T: Timeline = CpuTimeline> {
    id: u32,
    enabled: bool,
    mode: SyncMode,
    overflow: OverflowPolicy,
    clock: HostClock,
    timeline: T,
    layers: usize,
    current_row: u16,
    /// The pending buffer: open bricks and closed ones awaiting resolution, in start order.
    entries: Pending,
    /// The innermost open brick's entry, or [`NO_ENTRY`].
    open: u32,
    /// Open entries in `entries`.
    open_count: u32,
    /// Start sequence number of the next brick.
    seq: u32,
    cells: Cells,
    unattributed_tiles: [TileStats; 3],
    registry: BrickRegistry,
    counters: Counters,
    pass_stats: BrickStats,
    pass_start: u64,
    warmup_passes: u64,
    error: Option<Error>,
    checksums_on: bool,
    checksum_log: ChecksumLog,
    checksum_plan: ChecksumPlan,
    /// `end_pass` calls so far, warm-up included: the pass index of checksums.
    pass_index: u64,
    trace: Option<TraceBuffer>,
    rank: u32,
    /// Host clock reading at construction/reset: the origin of host trace timestamps.
    host_origin: u64,
    /// What is marked; `enabled` above is the effective switch the hot path reads, derived
    /// from `user_enabled`, the pass index and `in_layer` (src/profiler/sampling.rs).
    sampling: Sampling,
    user_enabled: bool,
    in_layer: bool,
    /// The `layer` brick under [`Sampling::Layers`], and its open measurement.
    layer_brick: Option<BrickHandle>,
    layer_open: Option<BrickToken>,
    /// Vendor tool ranges, when `vendor_ranges` is on.
    #[cfg(any(feature = "nvtx", feature = "roctx"))]
    ranges: Option<crate::vendor_ranges::VendorRanges>,
}

pub use crate::counters::Counters;

impl BrickProfiler<CpuTimeline> {
    /// A profiler on the host clock. Fails when the configuration is over a limit
    /// ([`MAX_LAYERS`], [`MAX_CELLS`], [`MAX_PENDING`]).
    pub fn new(config: ProfilerConfig) -> Result<Self> {
        Self::with_timeline(config, CpuTimeline::new())
    }
}

impl Default for BrickProfiler<CpuTimeline> {
    fn default() -> Self {
        // The default configuration is within every limit.
        Self::build(ProfilerConfig::default(), CpuTimeline::new())
    }
}

impl<T: Timeline> BrickProfiler<T> {
    /// A profiler marking `timeline`. Checks the configuration's limits, then allocates every
    /// buffer it will use.
    pub fn with_timeline(config: ProfilerConfig, timeline: T) -> Result<Self> {
        config.validate()?;
        let vendor_ranges = config.vendor_ranges;
        let mut prof = Self::build(config, timeline);
        prof.prepare_sampling()?;
        if vendor_ranges {
            prof.open_vendor_ranges()?;
        }
        Ok(prof)
    }

    fn build(config: ProfilerConfig, timeline: T) -> Self {
        let layers = config.layers;
        let clock = timeline.host_clock();
        let now = clock.ticks();
        BrickProfiler {
            id: NEXT_PROFILER_ID.fetch_add(1, Ordering::Relaxed).max(1),
            enabled: config.enabled,
            mode: config.sync_mode,
            overflow: config.overflow,
            clock,
            timeline,
            layers,
            current_row: layers as u16,
            entries: Pending::with_capacity(config.pending_capacity),
            open: NO_ENTRY,
            open_count: 0,
            seq: 0,
            cells: Cells::new(BrickId::COUNT, layers + 2),
            unattributed_tiles: Default::default(),
            registry: BrickRegistry::default(),
            counters: Counters::default(),
            pass_stats: BrickStats::new(),
            pass_start: now,
            warmup_passes: config.warmup_passes,
            error: None,
            checksums_on: config.checksums,
            checksum_log: ChecksumLog::with_algorithm(config.checksum_plan.algorithm),
            checksum_plan: config.checksum_plan,
            pass_index: 0,
            trace: (config.trace_capacity > 0)
                .then(|| TraceBuffer::with_capacity(config.trace_capacity)),
            rank: config.rank,
            host_origin: now,
            sampling: config.sampling,
            user_enabled: config.enabled,
            in_layer: false,
            layer_brick: None,
            layer_open: None,
            #[cfg(any(feature = "nvtx", feature = "roctx"))]
            ranges: None,
        }
    }

    // ---- control

    /// Start vendor tool ranges (see [`ProfilerConfig::vendor_ranges`]).
    fn open_vendor_ranges(&mut self) -> Result<()> {
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        {
            self.ranges = Some(crate::vendor_ranges::VendorRanges::new(
                self.layers,
                &self.registry,
            ));
            Ok(())
        }
        #[cfg(not(any(feature = "nvtx", feature = "roctx")))]
        Err(Error::InvalidArgument(
            "vendor_ranges needs brickprof built with the `nvtx` or `roctx` cargo feature".into(),
        ))
    }

    /// The vendor tool ranges, when on.
    #[cfg(any(feature = "nvtx", feature = "roctx"))]
    pub fn vendor_ranges(&self) -> Option<&crate::vendor_ranges::VendorRanges> {
        self.ranges.as_ref()
    }

    /// Turn measuring on.
    pub fn enable(&mut self) {
        self.user_enabled = true;
        self.refresh_marking();
    }

    /// Turn measuring off: `start_brick` then costs one branch and reads no clock. Bricks
    /// already started still record when stopped.
    pub fn disable(&mut self) {
        self.user_enabled = false;
        self.refresh_marking();
    }

    /// Whether measuring is on (as set by the configuration, `enable` and `disable`; under
    /// [`Sampling`] some passes or bricks are still skipped).
    pub fn is_enabled(&self) -> bool {
        self.user_enabled
    }

    /// The sync mode.
    pub fn sync_mode(&self) -> SyncMode {
        self.mode
    }

    /// Change the sync mode; resolves anything pending first.
    pub fn set_sync_mode(&mut self, mode: SyncMode) -> Result<()> {
        let r = self.finalize();
        self.mode = mode;
        r
    }

    /// Register a brick the enum lacks (category [`BrickCategory::Other`]). Idempotent: the
    /// same name gives the same handle; a built-in brick's canonical name (`"RmsNorm"`) gives
    /// the built-in brick, while aliases (`"gate"`, `"norm"`) are names of their own.
    /// Hashes and may allocate: call it once, outside the hot loop, and keep the handle.
    /// Fails past [`MAX_BRICKS`] bricks or [`MAX_CELLS`] cells, before allocating.
    ///
    /// ```
    /// use brickprof::BrickProfiler;
    /// let mut prof = BrickProfiler::default();
    /// let router = prof.register("moe_router")?;
    /// let t = prof.start_brick(router);
    /// prof.stop_brick(t, 8);
    /// prof.finalize()?;
    /// assert_eq!(prof.brick_name(router), Some("moe_router"));
    /// assert_eq!(prof.brick_stats(router).count(), 1);
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    pub fn register(&mut self, name: &str) -> Result<BrickHandle> {
        self.register_with_category(name, BrickCategory::Other)
    }

    /// [`Self::register`] with a category.
    pub fn register_with_category(
        &mut self,
        name: &str,
        category: BrickCategory,
    ) -> Result<BrickHandle> {
        if let Some(h) = self.registry.lookup(name) {
            return Ok(h);
        }
        let slots = self.registry.len() + 1;
        if slots > MAX_BRICKS {
            return Err(Error::InvalidArgument(format!(
                "cannot register brick {name:?}: a profiler holds at most {MAX_BRICKS} bricks"
            )));
        }
        check_cells(self.layers + 2, slots)?;
        let h = self.registry.register(name, category)?;
        self.cells.grow_slots(self.registry.len());
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        if let Some(r) = self.ranges.as_mut() {
            r.rebuild(&self.registry);
        }
        Ok(h)
    }

    /// By-name convenience: start timing the brick called `name`, registering it on first use.
    /// Hashes the name (and allocates the first time); prefer a kept handle in hot loops.
    pub fn start_named(&mut self, name: &str) -> Result<BrickToken> {
        let h = match self.registry.lookup(name) {
            Some(h) => h,
            None => self.register(name)?,
        };
        Ok(self.start_brick(h))
    }

    /// Forget every measurement and counter; keeps registered bricks and the configuration.
    /// Tokens still open become stray.
    pub fn reset(&mut self) {
        self.entries.clear();
        self.open = NO_ENTRY;
        self.open_count = 0;
        self.timeline.recycle();
        self.clear_timings();
        self.counters = Counters::default();
        self.error = None;
        self.current_row = self.layers as u16;
        self.pass_start = self.clock.ticks();
        self.pass_index = 0;
        self.checksum_log.entries.clear();
        self.cells.new_pass();
        self.host_origin = self.pass_start;
        if let Some(t) = self.trace.as_mut() {
            t.clear();
        }
        self.layer_open = None;
        self.in_layer = false;
        self.refresh_marking();
    }

    fn clear_timings(&mut self) {
        self.cells.stats.reset_with(BrickStats::clear);
        self.cells.tiles.reset_with(BrickStats::clear);
        self.unattributed_tiles
            .iter_mut()
            .for_each(BrickStats::clear);
        self.pass_stats.clear();
    }

    // ---- reading

    /// Statistics of `brick` over every layer row.
    pub fn brick_stats(&self, brick: impl Into<BrickHandle>) -> BrickStats {
        BrickStats::merged(self.cells.stats.slot(brick.into().slot()))
    }

    fn row_index(&self, row: LayerRow) -> Option<usize> {
        match row {
            LayerRow::Layer(l) if l < self.layers => Some(l),
            LayerRow::Layer(_) => None,
            LayerRow::Model => Some(self.layers),
            LayerRow::Unassigned => Some(self.layers + 1),
        }
    }

    /// Statistics of `brick` in one row of the per-layer breakdown.
    pub fn row_stats(&self, row: LayerRow, brick: impl Into<BrickHandle>) -> Option<&BrickStats> {
        let r = self.row_index(row)?;
        self.cells.stats.get(brick.into().slot(), r)
    }

    /// Statistics of `brick` in layer `layer` (`None` if out of range).
    pub fn layer_stats(&self, layer: usize, brick: impl Into<BrickHandle>) -> Option<&BrickStats> {
        self.row_stats(LayerRow::Layer(layer), brick)
    }

    /// Every brick's statistics merged, for one row.
    pub fn row_total(&self, row: LayerRow) -> BrickStats {
        BrickStats::merged(
            self.registry
                .handles()
                .filter_map(|h| self.row_stats(row, h)),
        )
    }

    /// Statistics of every brick in `category`, merged.
    pub fn category_stats(&self, category: BrickCategory) -> BrickStats {
        let mut out = BrickStats::new();
        for h in self.registry.handles() {
            if self.registry.category(h) == Some(category) {
                out.merge(&self.brick_stats(h));
            }
        }
        out
    }

    /// Tile statistics of `level` inside `brick`.
    pub fn tile_stats(
        &self,
        brick: impl Into<BrickHandle>,
        level: TileLevel,
    ) -> Option<&TileStats> {
        self.cells.tiles.get(brick.into().slot(), level as usize)
    }

    /// Tile statistics of tiles timed outside any brick.
    pub fn unattributed_tile_stats(&self, level: TileLevel) -> &TileStats {
        &self.unattributed_tiles[level as usize]
    }

    /// Sum of every brick's self time, in ns: the time spent in bricks, with nested bricks
    /// counted once.
    pub fn total_ns(&self) -> u64 {
        self.cells
            .stats
            .cells()
            .iter()
            .fold(0u64, |t, s| t.saturating_add(s.self_ns()))
    }

    /// Per-pass wall time statistics (elements = tokens per pass).
    pub fn pass_stats(&self) -> &BrickStats {
        &self.pass_stats
    }

    /// Tokens per second over the counted passes' wall time (0 before the first pass).
    pub fn tokens_per_sec(&self) -> f64 {
        self.pass_stats.elements_per_sec()
    }

    /// Event counts: passes, tokens, dropped measurements, syncs, unclosed bricks, ...
    pub fn counters(&self) -> Counters {
        Counters {
            trace_dropped: self
                .counters
                .trace_dropped
                .saturating_add(self.trace.as_ref().map_or(0, TraceBuffer::dropped)),
            ..self.counters
        }
    }

    /// Bricks started and not yet resolved (open ones included).
    pub fn pending_len(&self) -> usize {
        self.entries.len()
    }

    /// Bricks started and not yet stopped.
    pub fn open_bricks(&self) -> usize {
        self.open_count as usize
    }

    /// Capacity of the pending buffer.
    pub fn pending_capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Number of layers in the per-layer breakdown.
    pub fn layers(&self) -> usize {
        self.layers
    }

    /// The brick names (built-in and registered).
    pub fn registry(&self) -> &BrickRegistry {
        &self.registry
    }

    /// The name of a brick (`None` for a handle from another profiler that this one lacks).
    pub fn brick_name(&self, brick: impl Into<BrickHandle>) -> Option<&str> {
        self.registry.name(brick.into())
    }

    /// The trace event log, when `trace_capacity > 0`.
    pub fn trace(&self) -> Option<&TraceBuffer> {
        self.trace.as_ref()
    }

    /// The trace as plain data, when tracing (`trace_capacity > 0`): the events, the brick
    /// names and the run's header, for the writers in [`crate::report`]
    /// ([`crate::report::write_trace`], [`crate::report::chrome_trace`]). Resolved measurements
    /// only: call [`Self::finalize`] first.
    pub fn trace_view(&self) -> Option<TraceView<'_>> {
        let buffer = self.trace.as_ref()?;
        Some(TraceView {
            buffer,
            registry: &self.registry,
            header: TraceHeader {
                rank: self.rank,
                timeline: self.timeline.kind(),
                layers: self.layers,
                dropped: buffer.dropped(),
            },
        })
    }

    /// The timeline being marked.
    pub fn timeline(&self) -> &T {
        &self.timeline
    }

    /// The host clock.
    pub fn clock(&self) -> &HostClock {
        &self.clock
    }
}
