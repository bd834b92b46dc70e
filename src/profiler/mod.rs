//! [`BrickProfiler`]: the hot path (`start_brick`/`stop_brick`), sync modes, the pending buffer,
//! layers, passes, tiles, and reading the statistics back.
//!
//! The contract is `spec/hot-path.md` and `spec/sync-modes.md`. In short: `start_brick` reads
//! the host clock once and marks the timeline; `stop_brick` does the same and then, depending on
//! the [`SyncMode`], records at once or pushes one fixed-size entry into a pending buffer that
//! was allocated at construction. Every expensive step (sync, resolve, conversion to ns) happens
//! in `finalize`, `end_layer` or `end_pass`.
//!
//! | file | what lives there |
//! |---|---|
//! | `mod.rs` | configuration, the profiler's state, construction, control, reading statistics |
//! | `hot_path.rs` | `start_brick`/`stop_brick`, tiles, recording one resolved measurement |
//! | `boundaries.rs` | layers, passes, `finalize`: the sync and the resolution of pending marks |
//! | `checksums.rs` | `record_checksum` and the checksum log |
//! | `merge.rs` | merging another profiler's statistics |

mod boundaries;
mod checksums;
mod hot_path;
mod merge;

use strum::EnumCount;

use crate::checksum::ChecksumLog;
use crate::registry::{BrickRegistry, NO_BRICK};
use crate::report::trace_sink::{write_trace, TraceFormat, TraceHeader};
use crate::timeline::{CpuTimeline, Mark, Timeline, INVALID_MARK};
use crate::trace::{ChromeTrace, TraceBuffer};
use crate::{
    BrickCategory, BrickHandle, BrickId, BrickStats, Error, HostClock, OverflowPolicy, Result,
    SyncMode, TileLevel, TileStats, Work,
};

/// How a profiler is set up. Every field has a sensible default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilerConfig {
    /// Number of transformer layers to break statistics down by (0: no per-layer rows).
    pub layers: usize,
    /// When marks are synchronized and resolved.
    pub sync_mode: SyncMode,
    /// Capacity of the pending buffer (measurements between resolves), allocated up front.
    pub pending_capacity: usize,
    /// What to do when the pending buffer is full.
    pub overflow: OverflowPolicy,
    /// Number of leading forward passes whose timings are discarded (warm-up).
    pub warmup_passes: u64,
    /// Whether the profiler starts enabled.
    pub enabled: bool,
    /// Whether `record_checksum` records (off: it is a no-op).
    pub checksums: bool,
    /// Capacity of the trace event log (0: no trace). Allocated at construction.
    pub trace_capacity: usize,
    /// Rank (process) id written to traces; several ranks' traces then sit side by side.
    pub rank: u32,
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
            trace_capacity: 0,
            rank: 0,
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

/// An open brick measurement from [`BrickProfiler::start_brick`]. Small and `Copy`.
#[derive(Debug, Clone, Copy)]
#[must_use = "pass the token to stop_brick, or the brick is not recorded"]
pub struct BrickToken {
    host: u64,
    mark: Mark,
    slot: u16,
    row: u16,
    parent: u16,
    live: bool,
}

impl BrickToken {
    /// A token that records nothing (what a disabled profiler hands out).
    const INERT: BrickToken = BrickToken {
        host: 0,
        mark: INVALID_MARK,
        slot: NO_BRICK,
        row: 0,
        parent: NO_BRICK,
        live: false,
    };

    /// True when this token will record a measurement at `stop_brick`.
    pub fn is_live(&self) -> bool {
        self.live
    }
}

/// One measurement waiting for a sync. Fixed size; lives in the preallocated pending buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    pub(crate) start: Mark,
    pub(crate) end: Mark,
    pub(crate) host_start: u64,
    pub(crate) host_end: u64,
    pub(crate) work: Work,
    pub(crate) slot: u16,
    pub(crate) row: u16,
}

/// The profiler. Generic over its [`Timeline`] (the host clock by default) so the hot path is
/// statically dispatched and inlined.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
/// let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(2));
/// for layer in 0..2 {
///     prof.begin_layer(layer);
///     let t = prof.start_brick(BrickId::RmsNorm);
///     std::hint::black_box((0..1000).sum::<u64>());
///     prof.stop_brick(t, 1000);
///     prof.end_layer();
/// }
/// prof.end_pass(1).unwrap();
/// assert_eq!(prof.brick_stats(BrickId::RmsNorm).count, 2);
/// assert_eq!(prof.layer_stats(1, BrickId::RmsNorm).unwrap().count, 1);
/// ```
#[derive(Debug)]
pub struct BrickProfiler<T: Timeline = CpuTimeline> {
    enabled: bool,
    mode: SyncMode,
    overflow: OverflowPolicy,
    clock: HostClock,
    timeline: T,
    layers: usize,
    rows: usize,
    current_row: u16,
    open_brick: u16,
    /// `[slot * rows + row]`.
    stats: Vec<BrickStats>,
    /// `[slot * 3 + level]`; tiles outside any brick go to `unattributed_tiles`.
    tiles: Vec<TileStats>,
    unattributed_tiles: [TileStats; 3],
    registry: BrickRegistry,
    pending: Vec<Pending>,
    pending_capacity: usize,
    counters: Counters,
    pass_stats: BrickStats,
    pass_start: u64,
    warmup_passes: u64,
    error: Option<Error>,
    checksums_on: bool,
    checksum_log: ChecksumLog,
    /// `[slot * rows + row]`: checksums taken of that cell in the current pass.
    checksum_calls: Vec<u32>,
    /// `end_pass` calls so far, warm-up included: the pass index of checksums.
    pass_index: u64,
    trace: Option<TraceBuffer>,
    rank: u32,
    /// Host clock reading at construction/reset: the origin of host trace timestamps.
    host_origin: u64,
}

/// Event counts a report shows next to the statistics (saved in profiles as they are).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    /// Forward passes counted (warm-up excluded).
    pub passes: u64,
    /// Tokens counted in those passes.
    pub tokens: u64,
    /// Warm-up passes whose timings were discarded.
    pub warmup_passes_excluded: u64,
    /// Measurements dropped (full buffer with [`OverflowPolicy::Drop`], an exhausted event
    /// pool, a failed resolve, an invalid handle).
    pub dropped: u64,
    /// Timeline synchronizations performed.
    pub syncs: u64,
    /// Times the pending buffer was flushed because it was full.
    pub overflow_flushes: u64,
    /// `begin_layer` calls with a layer index out of range.
    pub out_of_range_layers: u64,
    /// Trace events that did not fit the trace buffer.
    #[serde(default)]
    pub trace_dropped: u64,
}

impl Counters {
    /// Add another run's counts to these.
    pub fn merge(&mut self, o: &Counters) {
        self.passes += o.passes;
        self.tokens += o.tokens;
        self.warmup_passes_excluded += o.warmup_passes_excluded;
        self.dropped += o.dropped;
        self.syncs += o.syncs;
        self.overflow_flushes += o.overflow_flushes;
        self.out_of_range_layers += o.out_of_range_layers;
        self.trace_dropped += o.trace_dropped;
    }
}

impl BrickProfiler<CpuTimeline> {
    /// A profiler on the host clock.
    pub fn new(config: ProfilerConfig) -> Self {
        Self::with_timeline(config, CpuTimeline::new())
    }
}

impl Default for BrickProfiler<CpuTimeline> {
    fn default() -> Self {
        Self::new(ProfilerConfig::default())
    }
}

impl<T: Timeline> BrickProfiler<T> {
    /// A profiler marking `timeline`. Allocates every buffer it will use now.
    pub fn with_timeline(config: ProfilerConfig, timeline: T) -> Self {
        let layers = config.layers.min(u16::MAX as usize - 2);
        let rows = layers + 2;
        let slots = BrickId::COUNT;
        let pending_capacity = config.pending_capacity.max(1);
        BrickProfiler {
            enabled: config.enabled,
            mode: config.sync_mode,
            overflow: config.overflow,
            clock: timeline.host_clock(),
            timeline,
            layers,
            rows,
            current_row: layers as u16,
            open_brick: NO_BRICK,
            stats: vec![BrickStats::new(); slots * rows],
            tiles: vec![TileStats::new(); slots * TileLevel::COUNT],
            unattributed_tiles: Default::default(),
            registry: BrickRegistry::default(),
            pending: Vec::with_capacity(pending_capacity),
            pending_capacity,
            counters: Counters::default(),
            pass_stats: BrickStats::new(),
            pass_start: 0,
            warmup_passes: config.warmup_passes,
            error: None,
            checksums_on: config.checksums,
            checksum_log: ChecksumLog::new(),
            checksum_calls: vec![0; slots * rows],
            pass_index: 0,
            trace: (config.trace_capacity > 0)
                .then(|| TraceBuffer::with_capacity(config.trace_capacity)),
            rank: config.rank,
            host_origin: 0,
        }
        .started()
    }

    fn started(mut self) -> Self {
        self.pass_start = self.clock.ticks();
        self.host_origin = self.pass_start;
        self
    }

    // ---- control

    /// Turn measuring on.
    pub fn enable(&mut self) {
        self.enabled = true;
    }

    /// Turn measuring off: `start_brick` then costs one branch and reads no clock.
    pub fn disable(&mut self) {
        self.enabled = false;
    }

    /// Whether measuring is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
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
    /// same name gives the same handle; a built-in name gives the built-in brick. Hashes and may
    /// allocate: call it once, outside the hot loop, and keep the handle.
    ///
    /// ```
    /// use brickprof::BrickProfiler;
    /// let mut prof = BrickProfiler::default();
    /// let router = prof.register("moe_router").unwrap();
    /// let t = prof.start_brick(router);
    /// prof.stop_brick(t, 8);
    /// prof.finalize().unwrap();
    /// assert_eq!(prof.brick_name(router), Some("moe_router"));
    /// assert_eq!(prof.brick_stats(router).count, 1);
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
        let h = self.registry.register(name, category)?;
        let slots = self.registry.len();
        self.stats.resize(slots * self.rows, BrickStats::new());
        self.tiles
            .resize(slots * TileLevel::COUNT, TileStats::new());
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
    pub fn reset(&mut self) {
        self.pending.clear();
        self.timeline.recycle();
        self.clear_timings();
        self.counters = Counters::default();
        self.error = None;
        self.current_row = self.layers as u16;
        self.open_brick = NO_BRICK;
        self.pass_start = self.clock.ticks();
        self.pass_index = 0;
        self.checksum_log.entries.clear();
        self.checksum_calls.fill(0);
        self.host_origin = self.pass_start;
        if let Some(t) = self.trace.as_mut() {
            t.clear();
        }
    }

    fn clear_timings(&mut self) {
        self.stats.iter_mut().for_each(BrickStats::clear);
        self.tiles.iter_mut().for_each(BrickStats::clear);
        self.unattributed_tiles
            .iter_mut()
            .for_each(BrickStats::clear);
        self.pass_stats.clear();
    }

    // ---- reading

    /// Statistics of `brick` over every layer row.
    pub fn brick_stats(&self, brick: impl Into<BrickHandle>) -> BrickStats {
        let slot = brick.into().slot();
        let start = (slot * self.rows).min(self.stats.len());
        let end = ((slot + 1) * self.rows).min(self.stats.len());
        BrickStats::merged(&self.stats[start..end])
    }

    /// Statistics of `brick` in one row of the per-layer breakdown.
    pub fn row_stats(&self, row: LayerRow, brick: impl Into<BrickHandle>) -> Option<&BrickStats> {
        let r = match row {
            LayerRow::Layer(l) if l < self.layers => l,
            LayerRow::Layer(_) => return None,
            LayerRow::Model => self.layers,
            LayerRow::Unassigned => self.layers + 1,
        };
        self.stats.get(brick.into().slot() * self.rows + r)
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
        self.tiles
            .get(brick.into().slot() * TileLevel::COUNT + level as usize)
    }

    /// Tile statistics of tiles timed outside any brick.
    pub fn unattributed_tile_stats(&self, level: TileLevel) -> &TileStats {
        &self.unattributed_tiles[level as usize]
    }

    /// Sum of every brick's recorded time, in ns.
    pub fn total_ns(&self) -> u64 {
        self.stats.iter().map(|s| s.total_ns).sum()
    }

    /// Per-pass wall time statistics (elements = tokens per pass).
    pub fn pass_stats(&self) -> &BrickStats {
        &self.pass_stats
    }

    /// Tokens per second over the counted passes' wall time (0 before the first pass).
    pub fn tokens_per_sec(&self) -> f64 {
        self.pass_stats.elements_per_sec()
    }

    /// Event counts: passes, tokens, dropped measurements, syncs, ...
    pub fn counters(&self) -> Counters {
        Counters {
            trace_dropped: self.trace.as_ref().map_or(0, TraceBuffer::dropped),
            ..self.counters
        }
    }

    /// Measurements waiting for a sync.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Capacity of the pending buffer.
    pub fn pending_capacity(&self) -> usize {
        self.pending_capacity
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

    /// The trace as a Chrome trace / Perfetto file, when tracing. Resolved measurements only:
    /// call [`Self::finalize`] first.
    pub fn chrome_trace(&self) -> Option<ChromeTrace> {
        let t = self.trace.as_ref()?;
        ChromeTrace::build(t, &self.registry, &self.trace_header()).ok()
    }

    /// Stream the trace to `path` in `format` with bounded memory, when tracing (`Ok(false)`
    /// when not). Resolved measurements only: call [`Self::finalize`] first. On an error half
    /// way the file still holds a well-formed trace of what came before.
    pub fn write_trace(
        &self,
        path: impl AsRef<std::path::Path>,
        format: TraceFormat,
    ) -> Result<bool> {
        let Some(t) = self.trace.as_ref() else {
            return Ok(false);
        };
        write_trace(
            t,
            &self.registry,
            &self.trace_header(),
            format,
            path.as_ref(),
        )?;
        Ok(true)
    }

    fn trace_header(&self) -> TraceHeader {
        TraceHeader {
            rank: self.rank,
            timeline: self.timeline.kind(),
            layers: self.layers,
            dropped: self.trace.as_ref().map_or(0, TraceBuffer::dropped),
        }
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
