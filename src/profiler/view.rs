//! [`View`]: reading a profiler without copying it (as puffin's `FrameView` is apart from its
//! `ThreadProfiler`). The profiler records and controls; a view reads its books, counters,
//! names, trace and checksums, borrowed for as long as the profiler is. A snapshot to keep,
//! save or compare is [`BrickProfiler::profile`].

use super::BrickProfiler;
use crate::capture::CapturePlan;
use crate::checksum::ChecksumLog;
use crate::model::registry::BrickRegistry;
use crate::model::row_key::RowKey;
use crate::model::{Counters, PhaseFilter};
use crate::profile::trace::{TraceBuffer, TraceView};
use crate::stats::BrickStats;
use crate::timeline::{CpuTimeline, Timeline};
use crate::{BrickHandle, PassShape};

/// A read-only view of a [`BrickProfiler`], from [`BrickProfiler::view`]: a snapshot of what
/// the profiler holds now (whether it measures, its counters, what is in flight, its names, the current pass's
/// shape, its checksum log and capture plan) as plain fields, and its statistics through the
/// methods, which read the books in place. `Copy`: what it holds and returns borrows the
/// profiler, not the view, so `prof.view().registry` outlives the temporary view. Pass
/// and tile statistics are read in a snapshot: [`BrickProfiler::profile`]'s `passes`,
/// `phase_passes` and bricks' `tiles`.
///
/// ```
/// use brickprof::{model::PhaseFilter, profile::RowKey, BrickId, BrickProfiler, ProfilerConfig};
/// let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(2))?;
/// prof.begin_layer(1);
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1000);
/// prof.end_layer();
/// prof.end_pass(1)?;
/// let view = prof.view();
/// assert_eq!(view.brick_stats(BrickId::RmsNorm).summary().count, 1);
/// assert_eq!(view.row_stats(PhaseFilter::All, RowKey::Layer(1), BrickId::RmsNorm).unwrap().summary().count, 1);
/// assert_eq!(view.counters.passes, 1);
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug)]
pub struct View<'a, T: Timeline = CpuTimeline> {
    prof: &'a BrickProfiler<T>,
    /// Whether measuring is on (as set by the configuration and
    /// [`BrickProfiler::set_enabled`]; under [`crate::model::Sampling`] some passes or bricks
    /// are still skipped).
    pub enabled: bool,
    /// Event counts: passes, tokens, dropped measurements, syncs, unclosed bricks, ... Each
    /// part counts its own events; this is their sum.
    pub counters: Counters,
    /// What is started or ended and not yet resolved.
    pub in_flight: InFlight,
    /// The brick names (built-in and registered).
    pub registry: &'a BrickRegistry,
    /// The current pass's shape, when it was given one.
    pub pass_shape: Option<PassShape>,
    /// The tools the vendor ranges (`L{layer}/{Brick}`) go to: `"nvtx"` (the feature; NVTX is
    /// free until a tool attaches) and `"roctx"` (when its library loaded); `None` when
    /// [`crate::ProfilerConfig::vendor_ranges`] is off.
    pub vendor_tools: Option<&'static [&'static str]>,
    /// The checksums recorded so far, in recording order.
    pub checksum_log: &'a ChecksumLog,
    /// Which kernels are captured whole.
    pub capture_plan: &'a CapturePlan,
}

/// What a profiler has started or ended and not yet resolved, in [`View::in_flight`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    /// Bricks started and not yet resolved (open ones included).
    pub pending: usize,
    /// Bricks started and not yet stopped.
    pub open: usize,
    /// Capacity of the pending buffer.
    pub capacity: usize,
    /// Passes ended and not yet resolved (Lagged mode; 0 in every other mode).
    pub passes: usize,
}

impl<T: Timeline> Clone for View<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Timeline> Copy for View<'_, T> {}

impl<'a, T: Timeline> View<'a, T> {
    pub(super) fn new(prof: &'a BrickProfiler<T>) -> Self {
        let ledger = prof.ledger();
        let m = &prof.marker;
        #[cfg(any(feature = "nvtx", feature = "roctx"))]
        let vendor_tools = m.ranges().map(|r| r.tools());
        #[cfg(not(any(feature = "nvtx", feature = "roctx")))]
        let vendor_tools = None;
        View {
            prof,
            enabled: prof.sampler.user_enabled(),
            counters: ledger.counters(&super::counters_of(m, &prof.sampler, &prof.checksums)),
            in_flight: InFlight {
                pending: m.pending_len(),
                open: m.open_bricks(),
                capacity: m.pending_capacity(),
                passes: m.passes_in_flight(),
            },
            registry: ledger.registry(),
            pass_shape: prof.passes.shape(),
            vendor_tools,
            checksum_log: prof.checksums.log(),
            capture_plan: prof.checksums.capture_plan(),
        }
    }

    // ---- statistics

    /// Statistics of `brick` over every layer row.
    pub fn brick_stats(&self, brick: impl Into<BrickHandle>) -> BrickStats {
        self.prof.ledger().brick_stats(brick.into())
    }

    /// Statistics of `brick` in the passes `phase` selects (spec/hot-path.md "Passes and
    /// phases"): in one row of the per-layer breakdown (a [`RowKey`]; `None` when the row is out
    /// of range), or over every row (`None`: always `Some`).
    ///
    /// ```
    /// # use brickprof::{model::PhaseFilter, BrickId, BrickProfiler, Phase, ProfilerConfig};
    /// # let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(1))?;
    /// # let t = prof.start_brick(BrickId::RmsNorm);
    /// # prof.stop_brick(t, 1);
    /// # prof.end_pass(1)?;
    /// let decode = prof.view().row_stats(PhaseFilter::Only(Phase::Decode), None, BrickId::RmsNorm);
    /// assert_eq!(decode.unwrap().summary().count, 0);
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    pub fn row_stats(
        &self,
        phase: PhaseFilter,
        row: impl Into<Option<RowKey>>,
        brick: impl Into<BrickHandle>,
    ) -> Option<BrickStats> {
        let ledger = self.prof.ledger();
        let brick = brick.into();
        match (phase, row.into()) {
            (PhaseFilter::All, Some(row)) => ledger.row_stats(row, brick),
            (PhaseFilter::Only(p), Some(row)) => ledger.phase_row_stats(p, row, brick).cloned(),
            (PhaseFilter::All, None) => Some(ledger.brick_stats(brick)),
            (PhaseFilter::Only(p), None) => Some(ledger.phase_brick_stats(p, brick)),
        }
    }

    // ---- trace

    /// The trace event log, when `trace_capacity > 0`.
    pub(crate) fn trace(&self) -> Option<&'a TraceBuffer> {
        self.prof.ledger().trace()
    }

    /// The trace as plain data, when tracing (`trace_capacity > 0`): the events, the brick
    /// names and the run's facts ([`crate::profile::RunMeta`], as in its profile), for the writers in [`crate::output`]
    /// ([`crate::output::write_output`], [`crate::output::Output::write`]). Resolved measurements
    /// only: call [`BrickProfiler::finalize`] first.
    pub fn trace_view(&self) -> Option<TraceView<'a>> {
        let buffer = self.trace()?;
        Some(TraceView {
            events: buffer.events(),
            passes: buffer.passes(),
            registry: self.registry,
            meta: self.prof.run_meta(),
        })
    }
}
