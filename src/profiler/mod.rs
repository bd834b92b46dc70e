//! [`BrickProfiler`]: a few parts, each owned by one stage, composed here.
//!
//! The contract is `spec/hot-path.md` and `spec/sync-modes.md`. Data flows one way:
//!
//! ```text
//! mark (hot path)            resolve (after one sync)          aggregate
//! start: reserve an entry ─▶ closed entries → Measurement  ─▶ books: stats grid (row, slot),
//! stop:  close it             (inclusive, self, host)           tiles, passes, counters
//!                                                           └▶ tracer: bounded trace events
//! ```
//!
//! | file | part | what lives there |
//! |---|---|---|
//! | `mod.rs` | — | the profiler's parts, construction, control |
//! | `config.rs` | — | [`ProfilerConfig`] and its limits |
//! | `token.rs` | — | [`BrickToken`] |
//! | `hot_path.rs` | — | `start_brick`/`stop_brick`/tiles: the marker's front, and when to resolve |
//! | `marker/` | marker | timeline, clock, pending entries, open chain: mark (`mod.rs`) and resolve (`resolve.rs`) |
//! | `measurement.rs` | — | `Measurement`: what resolve yields to the books and the trace |
//! | `books.rs` | books | statistics grid, tiles, pass statistics, counters: aggregate |
//! | `tracer.rs` | trace | the bounded trace log, when tracing |
//! | `live.rs` | — | [`LiveHandle`]: snapshots and trace captures for another thread (spec/live.md) |
//! | `trace_capture.rs` | capture | a live handle's capture while it is recorded, fed by resolve |
//! | `tally.rs` | tally | per-pass sums: the pass series ring and the fit sums (spec/hot-path.md "Pass series") |
//! | `shelf.rs` | shelf | books, trace and brick names, readable from another thread (the thread front door's collector) |
//! | `checksums.rs` | checksums | [`ChecksumPlan`], the checksum recorder and its front ([`Checksums`]) |
//! | `sampler.rs` | sampler | which passes, layers, bricks are marked |
//! | `boundaries.rs` | passes | layers, passes, `finalize`: when each stage runs |
//! | `view.rs` | — | [`View`]: reading the profiler's books, counters, names, trace and checksums |
//! | `run_meta.rs` | — | the run's facts ([`crate::profile::RunMeta`]) for profiles and traces |
//!
//! Each part's fields are private to its file (or, for the marker, its folder), so a stage
//! can touch only its own part; the files that compose them (`mod.rs`, `hot_path.rs`,
//! `boundaries.rs`, `view.rs`) call the parts' methods.

mod books;
mod boundaries;
mod checksums;
pub(crate) mod config;
mod graphs;
mod hot_path;
mod live;
mod marker;
mod measurement;
mod nesting;
mod profile_of;
pub(crate) mod recorder;
mod run_meta;
pub(crate) use profile_of::profile_of;
pub(crate) use run_meta::run_meta_of;
mod sampler;
mod shelf;
mod tally;
pub(crate) mod token;
mod trace_capture;
mod tracer;
#[cfg(any(feature = "nvtx", feature = "roctx"))]
mod vendor_ranges;
mod view;

#[cfg(test)]
mod tests;

pub use checksums::{ChecksumPlan, Checksums};
pub use graphs::{Graphs, Replay};
pub(crate) use live::MAX_CAPTURE_PASSES;
pub use live::{CaptureError, CapturedTrace, LiveHandle};
pub use view::{InFlight, View};

use books::Books;
use boundaries::Passes;
use checksums::ChecksumRecorder;
use config::ProfilerConfig;
use graphs::GraphBook;
use marker::Marker;
use measurement::{Measurement, Sink};
pub(crate) use recorder::BrickProfiler;
use sampler::{Sampler, Switch};
use shelf::Shelf;
pub(crate) use shelf::{Facts, Ledger, ShelfReader};
use token::BrickToken;
use tracer::Tracer;

use crate::base::limits::{Limit, MAX_BRICKS};
use crate::model::grid::{CellIndex, Rows, Shape};
use crate::model::registry::BrickRegistry;
use crate::stats::pass_series::PassRing;
use crate::timeline::{Calibrated, CpuTimeline, Timeline};
use crate::{model::Counters, BrickCategory, BrickHandle, BrickId, Error, Result};
use config::check_cells;

/// Where the resolve stage's measurements go: the books (`KEEP`; not for a warm-up pass
/// resolved after its end), the pass tally (a shaped pass) and the trace (when tracing).
/// `KEEP` and `LEAN` (neither a tally nor a trace) are type parameters, chosen once per resolve
/// (`with_record!`), so the common resolve loop tests none of them per measurement.
struct Record<'a, const KEEP: bool, const LEAN: bool> {
    books: &'a mut Books,
    /// The trace, when tracing (`None` when `LEAN`).
    trace: Option<&'a mut Tracer>,
    /// The pass tally, when the pass these belong to is tallied (`None` when `LEAN`).
    tally: Option<&'a mut tally::PassTally>,
    /// A live handle's trace capture, while one is recorded (`None` when `LEAN`).
    capture: Option<&'a mut trace_capture::TraceCapture>,
}

/// Run `$body` with `$sink`, a [`Record`] into `$ledger`: its books when `$keep`, its tally
/// when `$tallied`, its trace when tracing, its capture when capturing; the lean sink when there
/// is neither a tally, a trace nor a capture.
macro_rules! with_record {
    ($ledger:expr, $keep:literal, $tallied:expr, |$sink:ident| $body:expr) => {{
        let ledger: &mut Ledger = $ledger;
        let tally = if $tallied {
            Some(&mut ledger.tally)
        } else {
            None
        };
        if tally.is_none() && ledger.trace.is_none() && ledger.capture.is_none() {
            let $sink = &mut Record::<$keep, true> {
                books: &mut ledger.books,
                trace: None,
                tally: None,
                capture: None,
            };
            $body
        } else {
            let $sink = &mut Record::<$keep, false> {
                books: &mut ledger.books,
                trace: ledger.trace.as_mut(),
                tally,
                capture: ledger.capture.as_mut(),
            };
            $body
        }
    }};
}

impl<const KEEP: bool, const LEAN: bool> Sink for Record<'_, KEEP, LEAN> {
    #[inline(always)]
    fn wants_device_at(&self) -> bool {
        !LEAN && (self.trace.is_some() || self.capture.is_some())
    }

    #[inline(always)]
    fn prefetch(&self, cell: CellIndex) {
        // The cells of a many-layer model do not stay in the first-level cache between
        // passes: fetch a cell's header and histogram start a few entries ahead.
        let header: *const u8 = self.books.grid().address(cell).cast();
        prefetch(header);
        prefetch(header.wrapping_add(64));
    }

    #[inline(always)]
    fn nested(&mut self, parent: CellIndex, child: CellIndex, inclusive_ns: u64, self_ns: u64) {
        if KEEP {
            self.books.record_edge(parent, child, inclusive_ns, self_ns);
        }
    }

    #[inline(always)]
    fn record(&mut self, m: &Measurement) {
        if KEEP {
            self.books.record(m);
            if !LEAN {
                if let Some(t) = self.tally.as_deref_mut() {
                    t.add(self.books.slot_of(m.cell), m.self_ns);
                }
            }
        }
        if !LEAN {
            if let Some(t) = self.trace.as_deref_mut() {
                let (slot, row) = self.books.coords(m.cell);
                t.record(slot as u16, row as u16, m);
            }
            if let Some(c) = self.capture.as_deref_mut() {
                let (slot, row) = self.books.coords(m.cell);
                c.record(slot as u16, row as u16, m);
            }
        }
    }
}

/// A prefetch hint; no effect on other architectures.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and never changes memory, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl BrickProfiler<CpuTimeline> {
    /// A profiler on the host clock. Fails when the configuration is over a limit
    /// (`Limit::Layers.max()` (4096), `Limit::Cells.max()` (65,536),
    /// `Limit::PendingCapacity.max()` (2^24)).
    pub fn new(config: ProfilerConfig) -> Result<Self> {
        Self::with_timeline(config, CpuTimeline::default())
    }
}

#[cfg(feature = "cupti")]
impl BrickProfiler<crate::timeline::BoxedTimeline> {
    /// A profiler for an engine on NVIDIA, timing bricks from CUPTI's own kernel records when
    /// CUPTI can be had (no event on `stream`, no node in a graph), and from CUDA events on
    /// `stream` otherwise, saying why on stderr in one line (spec/sync-modes.md "CUPTI",
    /// "One subscriber; choosing"). `$BRICKPROF_NVIDIA_TIMELINE` (`auto`, `cupti`, `events`)
    /// chooses without a code change; [`crate::timeline::nvidia_timeline`] gives the choice and the
    /// line as data.
    pub fn nvidia(
        config: ProfilerConfig,
        stream: std::sync::Arc<cudarc::driver::CudaStream>,
    ) -> Result<Self> {
        config.validate()?;
        let choice = crate::timeline::NvidiaChoice::from_env()?;
        let chosen = crate::timeline::nvidia_timeline(stream, config.pending_capacity, choice)?;
        if let Some(line) = &chosen.fallback {
            eprintln!("{line}");
        }
        Self::with_timeline(config, chosen.timeline)
    }
}

impl Default for BrickProfiler<CpuTimeline> {
    fn default() -> Self {
        // The default configuration is within every limit.
        Self::build(ProfilerConfig::default(), CpuTimeline::default())
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

    /// Every part, from a validated configuration.
    fn build(config: ProfilerConfig, timeline: T) -> Self {
        // `validate` bounds layers far below what a row index holds.
        let rows = Rows::new(config.layers).unwrap_or(Rows::NONE);
        let marker = Marker::new(
            timeline,
            rows,
            config.sync_mode,
            config.overflow,
            config.pending_capacity,
            config.max_passes_in_flight,
            // Pass 0, outside any layer: every plan marks it (`prepare_sampling` refreshes).
            if config.enabled {
                Switch::On
            } else {
                Switch::Off
            },
        );
        let now = marker.now();
        // Host slices count from the ticks the timeline's device timestamps count from.
        let trace_origin = marker
            .timeline()
            .calibrated()
            .and_then(Calibrated::origin_ticks)
            .unwrap_or(now);
        let trace = (config.trace_capacity > 0).then(|| {
            Tracer::new(
                config.trace_capacity,
                config.rank,
                marker.clock().clone(),
                trace_origin,
                marker.timeline().host_is_device(),
            )
        });
        let books = Books::new(BrickId::COUNT, rows);
        let shape = books.grid().shape();
        let facts = Facts {
            timeline: marker.timeline().kind(),
            sync_mode: marker.mode(),
            resolution_ns: marker.timeline().resolution_ns(),
            mark_cost_ns: marker.timeline().mark_cost_ns(),
            sampling: config.sampling,
            calibration_bound_ns: calibration_bound(marker.timeline()),
            counters: Counters::default(),
            untimed_graphs: Default::default(),
            outside_bricks: None,
        };
        BrickProfiler {
            shelf: Shelf::new(Ledger {
                books,
                trace,
                registry: BrickRegistry::default(),
                rows,
                facts,
                tally: tally::PassTally::new(
                    // `validate` bounds the ring; a hand-built default is within it.
                    PassRing::new(config.pass_series).unwrap_or_else(|_| PassRing::empty()),
                ),
                capture: None,
            }),
            shape,
            checksums: ChecksumRecorder::new(
                config.checksums,
                config.checksum_plan,
                config.capture_plan,
                BrickId::COUNT,
                rows,
            ),
            sampler: Sampler::new(config.sampling, config.enabled),
            passes: Passes::new(config.warmup_passes, now),
            marker,
            live: None,
            graphs: GraphBook::default(),
        }
    }

    // ---- resolving (every sync mode takes this one path)

    /// Sync once and resolve every closed entry into the books and the trace.
    fn resolve(&mut self) -> Result<()> {
        let synced = self.marker.sync_closed();
        self.resolve_synced(synced)
    }

    /// Resolve after a sync already made (or failed): the passes in flight first, one by
    /// one and oldest first (Lagged), then every other closed entry.
    fn resolve_synced(&mut self, synced: Result<bool>) -> Result<()> {
        let mut ledger = self.shelf.write();
        resolve_into(&mut self.marker, &mut ledger, synced)
    }

    /// Resolve the oldest pass in flight, whose marks are known reached; a warm-up pass's
    /// measurements reach the trace only.
    fn resolve_oldest(&mut self, warm: bool) -> Result<()> {
        resolve_oldest_into(&mut self.marker, &mut self.shelf.write(), warm)
    }

    /// The facts a profile needs from outside the ledger, as they are now.
    pub(crate) fn facts(&self) -> Facts {
        facts_of(&self.marker, &self.sampler, &self.checksums, &self.graphs)
    }

    /// Hand the facts of this pass boundary to the ledger (for a reader of the shelf).
    fn publish_facts(&mut self) {
        let facts = self.facts();
        self.shelf.write().facts = facts;
    }

    /// The ledger: what a profile is built from.
    pub(crate) fn ledger(&self) -> &Ledger {
        self.shelf.get()
    }

    /// A handle through which another thread reads this profiler's ledger, whole, while this
    /// one goes on marking: from now on, writing the ledger takes its lock.
    pub(crate) fn share(&mut self) -> ShelfReader {
        self.shelf.reader()
    }

    /// Resolve where nobody can be told of an error (a flush, a stop, a layer's end): keep
    /// the first one for `finalize` or `end_pass`.
    fn resolve_keeping_error(&mut self) {
        if let Err(e) = self.resolve() {
            self.marker.keep_error(e);
        }
    }
}

/// Every pass in flight whose marks are known reached, oldest first, then every other closed
/// entry, into `ledger` (one lock for all of them).
fn resolve_into<T: Timeline>(
    marker: &mut Marker<T>,
    ledger: &mut Ledger,
    synced: Result<bool>,
) -> Result<()> {
    let mut first = Ok(());
    if matches!(synced, Ok(true)) {
        while let Some(warm) = marker.oldest_sealed() {
            let r = resolve_oldest_into(marker, ledger, warm);
            first = first.and(r);
        }
    }
    if marker.passes_in_flight() == 0 {
        ledger.tally.close_all(); // a failed sync dropped what was in flight
    }
    let tallied = ledger.tally.tallies_current();
    let r = with_record!(ledger, true, tallied, |sink| marker.resolve(synced, sink));
    first.and(r)
}

/// The oldest pass in flight into `ledger`; a warm-up pass's measurements reach the trace only.
fn resolve_oldest_into<T: Timeline>(
    marker: &mut Marker<T>,
    ledger: &mut Ledger,
    warm: bool,
) -> Result<()> {
    let r = if warm {
        with_record!(ledger, false, false, |sink| marker.resolve_oldest(sink))
    } else {
        let tallied = ledger.tally.tallies_oldest();
        with_record!(ledger, true, tallied, |sink| marker.resolve_oldest(sink))
    };
    ledger.tally.close_oldest();
    if let Some(c) = ledger.capture.as_mut() {
        c.resolved_one();
    }
    r
}

/// The calibration bound the timeline reports, when it calibrates.
fn calibration_bound<T: Timeline>(timeline: &T) -> Option<u64> {
    let fit = timeline.calibrated().and_then(Calibrated::calibration);
    fit.map(|c| c.bound_ns)
}

/// The facts of [`Facts`], read from the parts that keep them.
/// The counts kept outside the books: the marker's, plus the checksum stage's drops and the
/// sampler's passes left out (one of the [`Facts`], and what a [`View`] reads without building
/// the rest of them).
pub(crate) fn counters_of<T: Timeline>(
    marker: &Marker<T>,
    sampler: &Sampler,
    checksums: &ChecksumRecorder,
) -> Counters {
    let mut counters = *marker.counters();
    counters.dropped = counters.dropped.saturating_add(checksums.dropped());
    counters.sampled_out = counters.sampled_out.saturating_add(sampler.sampled_out());
    counters
}

fn facts_of<T: Timeline>(
    marker: &Marker<T>,
    sampler: &Sampler,
    checksums: &ChecksumRecorder,
    graphs: &GraphBook,
) -> Facts {
    let counters = counters_of(marker, sampler, checksums);
    Facts {
        timeline: marker.timeline().kind(),
        sync_mode: marker.mode(),
        resolution_ns: marker.timeline().resolution_ns(),
        mark_cost_ns: marker.timeline().mark_cost_ns(),
        sampling: sampler.sampling(),
        calibration_bound_ns: calibration_bound(marker.timeline()),
        counters,
        untimed_graphs: graphs.untimed(),
        outside_bricks: marker
            .timeline()
            .device_records()
            .map(|r| r.outside_bricks()),
    }
}

impl<T: Timeline> BrickProfiler<T> {
    // ---- control

    /// Start vendor tool ranges (see [`ProfilerConfig::vendor_ranges`]).
    fn open_vendor_ranges(&mut self) -> Result<()> {
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        {
            let ranges = crate::profiler::vendor_ranges::VendorRanges::new(
                self.marker.rows(),
                &self.shelf.get().registry,
            );
            self.marker.set_ranges(ranges);
            Ok(())
        }
        #[cfg(not(any(feature = "nvtx", feature = "roctx")))]
        Err(Error::FeatureMissing {
            what: "ProfilerConfig::vendor_ranges",
            feature: "the `nvtx` or `roctx` cargo feature (rebuild with `--features nvtx` or \
                      `--features roctx`)",
        })
    }

    /// Turn measuring on or off. Off, `start_brick` costs one branch and reads no clock;
    /// bricks already started still record when stopped.
    pub fn set_enabled(&mut self, on: bool) {
        self.sampler.set_user_enabled(on);
        self.refresh_marking();
    }

    /// Register a brick the enum lacks, in `category` (the per-category breakdown;
    /// [`BrickCategory::Other`] when it has none). Idempotent: the
    /// same name gives the same handle; a built-in brick's canonical name (`"RmsNorm"`) gives
    /// the built-in brick, while aliases (`"gate"`, `"norm"`) are names of their own.
    /// Hashes and may allocate: call it once, outside the hot loop, and keep the handle.
    /// Fails past `Limit::Bricks.max()` (4096) bricks or `Limit::Cells.max()` (65,536) cells, before
    /// allocating.
    ///
    /// ```
    /// use brickprof::BrickProfiler;
    /// let mut prof = BrickProfiler::default();
    /// let router = prof.register("moe_router", brickprof::BrickCategory::Other)?;
    /// let t = prof.start_brick(router);
    /// prof.stop_brick(t, 8);
    /// prof.finalize()?;
    /// assert_eq!(prof.view().registry.lookup("moe_router"), Some(router));
    /// assert_eq!(prof.view().brick_stats(router).summary().count, 1);
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    pub fn register(&mut self, name: &str, category: BrickCategory) -> Result<BrickHandle> {
        if let Some(h) = self.shelf.get().registry.lookup(name) {
            return Ok(h);
        }
        let slots = self.shelf.get().registry.len() + 1;
        if slots > MAX_BRICKS {
            return Err(Error::OverLimit {
                limit: Limit::Bricks,
                requested: slots,
            });
        }
        check_cells(self.marker.rows().count(), slots)?;
        let mut ledger = self.shelf.write();
        let h = ledger.registry.register(name, category)?;
        let slots = ledger.registry.len();
        // One grid (spec/hot-path.md): every per-cell array grows here, together.
        ledger.books.grow_slots(slots);
        ledger.tally.push_slot(category);
        self.checksums.grow_slots(slots);
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        if let Some(r) = self.marker.ranges_mut() {
            r.rebuild(&ledger.registry);
        }
        Ok(h)
    }

    /// Forget every measurement and counter; keeps registered bricks and the configuration.
    /// Tokens still open become stray.
    pub fn reset(&mut self) {
        self.marker.reset();
        self.checksums.reset();
        let now = self.marker.now();
        {
            let mut ledger = self.shelf.write();
            ledger.books.reset();
            ledger.tally.reset();
            if let Some(t) = ledger.trace.as_mut() {
                t.reset(now);
            }
        }
        self.cancel_capture();
        self.graphs.reset();
        self.passes.reset(now);
        self.sampler.reset();
        self.refresh_marking();
        self.publish_facts();
    }

    // ---- reading

    /// Reading this profiler without copying it: statistics, counters, names, the trace, the
    /// checksum log (puffin's `FrameView` to its `ThreadProfiler`). A snapshot to keep or save
    /// is [`Self::profile`].
    #[inline]
    pub fn view(&self) -> View<'_, T> {
        View::new(self)
    }

    /// The timeline being marked.
    pub fn timeline(&self) -> &T {
        self.marker.timeline()
    }
}
