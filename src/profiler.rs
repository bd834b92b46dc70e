//! [`BrickProfiler`]: the hot path (`start_brick`/`stop_brick`), sync modes, the pending buffer,
//! layers, passes, tiles, and reading the statistics back.
//!
//! The contract is `spec/hot-path.md` and `spec/sync-modes.md`. In short: `start_brick` reads
//! the host clock once and marks the timeline; `stop_brick` does the same and then, depending on
//! the [`SyncMode`], records at once or pushes one fixed-size entry into a pending buffer that
//! was allocated at construction. Every expensive step (sync, resolve, conversion to ns) happens
//! in `finalize`, `end_layer` or `end_pass`.

use strum::EnumCount;

use crate::checksum::{ChecksumLog, HalfFormat, KernelKey};
use crate::registry::{BrickRegistry, NO_BRICK};
use crate::timeline::{CpuTimeline, Mark, Timeline, INVALID_MARK};
use crate::trace::{ChromeTrace, PassSample, TraceBuffer, TraceEvent, Track};
use crate::{
    BrickCategory, BrickHandle, BrickId, BrickStats, Error, HostClock, OverflowPolicy, Result,
    SyncMode, TileLevel, TileStats, TileTimer, Work,
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

    // ------------------------------------------------------------------ hot path

    /// Start timing `brick` (a [`BrickId`] or a registered [`BrickHandle`]).
    ///
    /// Enabled: one host clock read and one timeline mark. Disabled: one branch, no clock read.
    #[inline]
    pub fn start_brick(&mut self, brick: impl Into<BrickHandle>) -> BrickToken {
        if !self.enabled {
            return BrickToken::INERT;
        }
        let slot = brick.into().0;
        let host = self.clock.ticks();
        let mark = if T::HOST_IS_DEVICE || self.mode != SyncMode::None {
            self.timeline.mark(host)
        } else {
            INVALID_MARK
        };
        let parent = self.open_brick;
        self.open_brick = slot;
        BrickToken {
            host,
            mark,
            slot,
            row: self.current_row,
            parent,
            live: true,
        }
    }

    /// Stop timing and record `elements` processed. See [`Self::stop_brick_with`].
    #[inline]
    pub fn stop_brick(&mut self, token: BrickToken, elements: u64) {
        self.stop_brick_with(token, Work::elements(elements));
    }

    /// Stop timing and record the work done. What happens depends on the sync mode:
    /// `Deferred`/`PerLayer` push one entry into the pending buffer; `Immediate` syncs and
    /// records now; `None` records the host dispatch time now.
    #[inline]
    pub fn stop_brick_with(&mut self, token: BrickToken, work: Work) {
        if !token.live {
            return;
        }
        let host = self.clock.ticks();
        self.open_brick = token.parent;
        match self.mode {
            SyncMode::Deferred | SyncMode::PerLayer => {
                let end = self.timeline.mark(host);
                let p = Pending {
                    start: token.mark,
                    end,
                    host_start: token.host,
                    host_end: host,
                    work,
                    slot: token.slot,
                    row: token.row,
                };
                if self.pending.len() < self.pending_capacity {
                    self.pending.push(p); // within capacity: never reallocates
                } else {
                    self.overflowed(p);
                }
            }
            SyncMode::Immediate => {
                let end = self.timeline.mark(host);
                self.record_now(token, end, host, work);
            }
            SyncMode::None => {
                let ns = self.clock.ticks_to_ns(token.host, host);
                self.record_resolved(token.slot, token.row, ns, ns, work);
                self.trace_event(token.slot, token.row, token.host, ns, None);
            }
        }
    }

    /// Time a closure as `brick`, recording `elements`; returns the closure's value.
    ///
    /// ```
    /// use brickprof::{BrickId, BrickProfiler};
    /// let mut prof = BrickProfiler::default();
    /// let sum = prof.time(BrickId::ResidualAdd, 3, || 1 + 2);
    /// prof.finalize().unwrap();
    /// assert_eq!(sum, 3);
    /// assert_eq!(prof.brick_stats(BrickId::ResidualAdd).count, 1);
    /// ```
    #[inline]
    pub fn time<R>(
        &mut self,
        brick: impl Into<BrickHandle>,
        elements: u64,
        f: impl FnOnce() -> R,
    ) -> R {
        let t = self.start_brick(brick);
        let r = f();
        self.stop_brick(t, elements);
        r
    }

    /// Start timing a tile of the brick currently open (the most recently started one).
    #[inline]
    pub fn start_tile(&mut self, level: TileLevel) -> TileTimer {
        if !self.enabled {
            return TileTimer::INERT;
        }
        TileTimer {
            start: self.clock.ticks(),
            brick: self.open_brick,
            level,
            live: true,
        }
    }

    /// Stop a tile and record the work it did, attributed to its enclosing brick.
    #[inline]
    pub fn stop_tile(&mut self, timer: TileTimer, work: Work) {
        if !timer.live {
            return;
        }
        let ns = self.clock.ticks_to_ns(timer.start, self.clock.ticks());
        let level = timer.level as usize;
        let stats = if timer.brick == NO_BRICK {
            self.unattributed_tiles.get_mut(level)
        } else {
            self.tiles
                .get_mut(timer.brick as usize * TileLevel::COUNT + level)
        };
        match stats {
            Some(s) => s.record(ns, ns, work),
            None => self.counters.dropped += 1,
        }
    }

    #[inline]
    fn record_resolved(&mut self, slot: u16, row: u16, ns: u64, host_ns: u64, work: Work) {
        match self.stats.get_mut(slot as usize * self.rows + row as usize) {
            Some(s) => s.record(ns, host_ns, work),
            None => self.counters.dropped += 1,
        }
    }

    #[inline]
    fn record_now(&mut self, token: BrickToken, end: Mark, host_end: u64, work: Work) {
        self.counters.syncs += 1;
        let host_ns = self.clock.ticks_to_ns(token.host, host_end);
        let (ns, device) = if T::HOST_IS_DEVICE {
            (host_ns, None) // the CPU timeline's marks are these very readings; no-op sync
        } else {
            let resolved = self
                .timeline
                .sync()
                .and_then(|()| self.timeline.resolve_ns(token.mark, end));
            let at = match (&self.trace, &resolved) {
                (Some(_), Ok(ns)) => self
                    .timeline
                    .timestamp_ns(token.mark)
                    .ok()
                    .map(|t| (t, *ns)),
                _ => None,
            };
            self.recycle_if_idle();
            match resolved {
                Ok(ns) => (ns, at),
                Err(e) => return self.fail(e),
            }
        };
        self.record_resolved(token.slot, token.row, ns, host_ns, work);
        self.trace_event(token.slot, token.row, token.host, host_ns, device);
    }

    /// Log a measurement in the trace, if tracing: one event on the CPU track, or a host and a
    /// device event on an asynchronous timeline. Never allocates (bounded buffer).
    #[inline]
    fn trace_event(
        &mut self,
        slot: u16,
        row: u16,
        host_start: u64,
        host_ns: u64,
        device: Option<(u64, u64)>,
    ) {
        if self.trace.is_none() {
            return;
        }
        let host_at = self.clock.ticks_to_ns(self.host_origin, host_start);
        let Some(trace) = self.trace.as_mut() else {
            return;
        };
        let event = |track, start_ns, dur_ns| TraceEvent {
            start_ns,
            dur_ns,
            slot,
            row,
            track,
        };
        if T::HOST_IS_DEVICE {
            trace.push(event(Track::Cpu, host_at, host_ns));
            return;
        }
        if let Some((at, ns)) = device {
            trace.push(event(Track::Device, at, ns));
        }
        trace.push(event(Track::Host, host_at, host_ns));
    }

    /// Let the timeline reuse its mark resources, unless a brick is still open (its start mark
    /// must stay valid until it stops).
    fn recycle_if_idle(&mut self) {
        if self.open_brick == NO_BRICK {
            self.timeline.recycle();
        }
    }

    #[cold]
    #[inline(never)]
    fn overflowed(&mut self, p: Pending) {
        match self.overflow {
            OverflowPolicy::Drop => self.counters.dropped += 1,
            OverflowPolicy::Flush => {
                self.counters.overflow_flushes += 1;
                // The new measurement's marks were made before this sync, so resolve it too.
                if let Err(e) = self.resolve_pending_with(Some(p)) {
                    self.fail(e);
                }
            }
        }
    }

    #[cold]
    fn fail(&mut self, e: Error) {
        self.counters.dropped += 1;
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    // ------------------------------------------------------------------ boundaries

    /// Enter layer `layer`: bricks started until [`Self::end_layer`] are attributed to it. An
    /// index `>= layers` is counted and its bricks land in the [`LayerRow::Unassigned`] row.
    #[inline]
    pub fn begin_layer(&mut self, layer: usize) {
        self.current_row = if layer < self.layers {
            layer as u16
        } else {
            self.counters.out_of_range_layers += 1;
            (self.layers + 1) as u16
        };
    }

    /// Leave the current layer. In [`SyncMode::PerLayer`] this syncs and resolves the layer's
    /// measurements; the first error, if any, is kept for [`Self::finalize`].
    pub fn end_layer(&mut self) {
        self.current_row = self.layers as u16;
        if self.mode == SyncMode::PerLayer {
            if let Err(e) = self.resolve_pending_with(None) {
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
    }

    /// Sync the timeline once and resolve every pending measurement into the statistics.
    /// Returns the first error since the last call (a failed sync or resolve; the measurements
    /// concerned are counted as dropped, every other one is recorded).
    pub fn finalize(&mut self) -> Result<()> {
        let r = self.resolve_pending_with(None);
        match self.error.take() {
            Some(e) => Err(e),
            None => r,
        }
    }

    /// Mark the start of a forward pass (for per-pass time and tokens/s). Optional: without it
    /// a pass runs from the end of the previous one (or from construction/reset).
    pub fn begin_pass(&mut self) {
        self.pass_start = self.clock.ticks();
    }

    /// End a forward pass that produced `tokens` tokens: finalize, then count the pass. The
    /// first `warmup_passes` passes are discarded (every timing statistic is cleared).
    pub fn end_pass(&mut self, tokens: u64) -> Result<()> {
        let r = self.finalize();
        let now = self.clock.ticks();
        let pass_ns = self.clock.ticks_to_ns(self.pass_start, now);
        if self.counters.warmup_passes_excluded < self.warmup_passes {
            self.counters.warmup_passes_excluded += 1;
            self.clear_timings();
        } else {
            self.counters.passes += 1;
            self.counters.tokens += tokens;
            self.pass_stats
                .record(pass_ns, pass_ns, Work::elements(tokens));
        }
        let at_ns = self.clock.ticks_to_ns(self.host_origin, now);
        if let Some(trace) = self.trace.as_mut() {
            trace.push_pass(PassSample {
                at_ns,
                tokens_per_sec: crate::stats::per_sec(tokens, pass_ns),
            });
        }
        self.pass_start = self.clock.ticks();
        self.pass_index += 1;
        self.checksum_calls.fill(0);
        r
    }

    fn resolve_pending_with(&mut self, extra: Option<Pending>) -> Result<()> {
        if self.pending.is_empty() && extra.is_none() {
            return Ok(());
        }
        self.counters.syncs += 1;
        if let Err(e) = self.timeline.sync() {
            self.counters.dropped += (self.pending.len() + extra.iter().count()) as u64;
            self.pending.clear();
            self.recycle_if_idle();
            return Err(e);
        }
        let mut first_err = None;
        let mut pending = std::mem::take(&mut self.pending);
        for p in pending.iter().chain(extra.iter()) {
            match self.timeline.resolve_ns(p.start, p.end) {
                Ok(ns) => {
                    let host_ns = self.clock.ticks_to_ns(p.host_start, p.host_end);
                    self.record_resolved(p.slot, p.row, ns, host_ns, p.work);
                    if self.trace.is_some() {
                        let device = if T::HOST_IS_DEVICE {
                            None
                        } else {
                            self.timeline.timestamp_ns(p.start).ok().map(|at| (at, ns))
                        };
                        self.trace_event(p.slot, p.row, p.host_start, host_ns, device);
                    }
                }
                Err(e) => {
                    self.counters.dropped += 1;
                    first_err.get_or_insert(e);
                }
            }
        }
        pending.clear();
        self.pending = pending; // keeps its capacity
        self.recycle_if_idle();
        first_err.map_or(Ok(()), Err)
    }

    // ------------------------------------------------------------------ checksums

    /// Record the FNV-1a checksum and summary of `output`, the output of `brick` in `layer`
    /// (`None`: outside any layer), keyed by (pass, layer, brick, call index within the pass).
    /// A no-op when checksums are off. Not a hot-path call: it reads the whole tensor.
    ///
    /// ```
    /// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
    /// let mut prof = BrickProfiler::new(ProfilerConfig { checksums: true, ..Default::default() });
    /// prof.record_checksum(Some(0), BrickId::RmsNorm, &[1.0, 2.0]);
    /// prof.record_checksum(Some(0), BrickId::RmsNorm, &[3.0]);
    /// let log = prof.checksums();
    /// assert_eq!(log.entries[1].key.call, 1);
    /// ```
    pub fn record_checksum(
        &mut self,
        layer: Option<usize>,
        brick: impl Into<BrickHandle>,
        output: &[f32],
    ) {
        if let Some(key) = self.checksum_key(layer, brick.into()) {
            self.checksum_log.record_f32(key, output);
        }
    }

    /// [`Self::record_checksum`] for f16/bf16 outputs given as raw bits.
    pub fn record_checksum_half(
        &mut self,
        layer: Option<usize>,
        brick: impl Into<BrickHandle>,
        output: &[u16],
        format: HalfFormat,
    ) {
        if let Some(key) = self.checksum_key(layer, brick.into()) {
            self.checksum_log.record_half(key, output, format);
        }
    }

    fn checksum_key(&mut self, layer: Option<usize>, brick: BrickHandle) -> Option<KernelKey> {
        if !self.checksums_on {
            return None;
        }
        let Some(name) = self.registry.name(brick) else {
            self.counters.dropped += 1;
            return None;
        };
        let row = match layer {
            Some(l) if l < self.layers => l,
            Some(_) => self.layers + 1,
            None => self.layers,
        };
        let call = self
            .checksum_calls
            .get_mut(brick.slot() * self.rows + row)
            .map(|c| {
                *c += 1;
                *c - 1
            })
            .unwrap_or(0);
        Some(KernelKey {
            pass: self.pass_index,
            layer: layer.map(|l| u32::try_from(l).unwrap_or(u32::MAX)),
            brick: name.to_string(),
            call,
        })
    }

    /// Turn checksum recording on or off.
    pub fn set_checksums(&mut self, on: bool) {
        self.checksums_on = on;
    }

    /// The checksums recorded so far, in recording order.
    pub fn checksums(&self) -> &ChecksumLog {
        &self.checksum_log
    }

    /// Take the checksums recorded so far, leaving an empty log.
    pub fn take_checksums(&mut self) -> ChecksumLog {
        std::mem::take(&mut self.checksum_log)
    }

    // ------------------------------------------------------------------ control

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

    /// Add another profiler's statistics to this one's. Layer counts must match; dynamic
    /// bricks are matched by name (registered here if new). Pending measurements of `other`
    /// are not included: finalize it first.
    pub fn merge<U: Timeline>(&mut self, other: &BrickProfiler<U>) -> Result<()> {
        if other.layers != self.layers {
            return Err(Error::Merge(format!(
                "profilers have {} and {} layers",
                self.layers, other.layers
            )));
        }
        for h in other.registry.handles() {
            let name = other.registry.name(h).unwrap_or_default();
            let cat = other.registry.category(h).unwrap_or(BrickCategory::Other);
            let mine = self.register_with_category(name, cat)?;
            for row in 0..self.rows {
                if let (Some(dst), Some(src)) = (
                    self.stats.get_mut(mine.slot() * self.rows + row),
                    other.stats.get(h.slot() * other.rows + row),
                ) {
                    dst.merge(src);
                }
            }
            for level in 0..TileLevel::COUNT {
                if let (Some(dst), Some(src)) = (
                    self.tiles.get_mut(mine.slot() * TileLevel::COUNT + level),
                    other.tiles.get(h.slot() * TileLevel::COUNT + level),
                ) {
                    dst.merge(src);
                }
            }
        }
        for (dst, src) in self
            .unattributed_tiles
            .iter_mut()
            .zip(other.unattributed_tiles.iter())
        {
            dst.merge(src);
        }
        self.pass_stats.merge(&other.pass_stats);
        self.counters.merge(&other.counters());
        Ok(())
    }

    // ------------------------------------------------------------------ reading

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
        self.trace.as_ref().map(|t| {
            ChromeTrace::build(
                t,
                &self.registry,
                self.layers,
                self.rank,
                self.timeline.kind(),
            )
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
