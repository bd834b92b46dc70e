//! [`View`]: reading a profiler without copying it (as puffin's `FrameView` is apart from its
//! `ThreadProfiler`). The profiler records and controls; a view reads its books, counters,
//! names, trace and checksums, borrowed for as long as the profiler is. A snapshot to keep,
//! save or compare is [`BrickProfiler::profile`].

use super::BrickProfiler;
use crate::capture::{CapturePlan, CaptureStore};
use crate::checksum::ChecksumLog;
use crate::model::grid::LayerRow;
use crate::model::registry::BrickRegistry;
use crate::model::{Counters, Sampling};
use crate::profile::trace::{TraceBuffer, TraceView};
use crate::stats::{BrickStats, TileLevel, TileStats};
use crate::timeline::HostClock;
use crate::timeline::{CpuTimeline, Timeline};
use crate::{BrickHandle, PassShape, Phase};

use super::ChecksumPlan;

/// A read-only view of a [`BrickProfiler`], from [`BrickProfiler::view`]. `Copy`, one
/// reference wide: what it returns borrows the profiler, not the view, so
/// `prof.view().pass_stats()` outlives the temporary view.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
/// let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(2))?;
/// prof.begin_layer(1);
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1000);
/// prof.end_layer();
/// prof.end_pass(1)?;
/// let view = prof.view();
/// assert_eq!(view.brick_stats(BrickId::RmsNorm).count(), 1);
/// assert_eq!(view.layer_stats(1, BrickId::RmsNorm).unwrap().count(), 1);
/// assert_eq!(view.counters().passes, 1);
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug)]
pub struct View<'a, T: Timeline = CpuTimeline> {
    prof: &'a BrickProfiler<T>,
}

impl<T: Timeline> Clone for View<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Timeline> Copy for View<'_, T> {}

impl<'a, T: Timeline> View<'a, T> {
    #[inline]
    pub(super) fn new(prof: &'a BrickProfiler<T>) -> Self {
        View { prof }
    }

    // ---- statistics

    /// Statistics of `brick` over every layer row.
    pub fn brick_stats(&self, brick: impl Into<BrickHandle>) -> BrickStats {
        self.prof.ledger().brick_stats(brick.into())
    }

    /// Statistics of `brick` in one row of the per-layer breakdown, over every phase.
    pub fn row_stats(&self, row: LayerRow, brick: impl Into<BrickHandle>) -> Option<BrickStats> {
        self.prof.ledger().row_stats(row, brick.into())
    }

    /// Statistics of `brick` in layer `layer` over every phase (`None` if out of range).
    pub fn layer_stats(&self, layer: usize, brick: impl Into<BrickHandle>) -> Option<BrickStats> {
        self.row_stats(LayerRow::Layer(layer), brick)
    }

    /// Statistics of `brick` in one row, in the passes of one phase
    /// (spec/hot-path.md "Passes and phases").
    pub fn phase_row_stats(
        &self,
        phase: Phase,
        row: LayerRow,
        brick: impl Into<BrickHandle>,
    ) -> Option<&'a BrickStats> {
        self.prof.ledger().phase_row_stats(phase, row, brick.into())
    }

    /// Statistics of `brick` over every row, in the passes of one phase.
    pub fn phase_brick_stats(&self, phase: Phase, brick: impl Into<BrickHandle>) -> BrickStats {
        self.prof.ledger().phase_brick_stats(phase, brick.into())
    }

    /// Per-pass wall time statistics of one phase's counted passes (elements = the tokens
    /// given to their `end_pass`).
    pub fn phase_pass_stats(&self, phase: Phase) -> &'a BrickStats {
        self.prof.ledger().phase_pass_stats(phase)
    }

    /// Tile statistics of `level` inside `brick`.
    pub fn tile_stats(
        &self,
        brick: impl Into<BrickHandle>,
        level: TileLevel,
    ) -> Option<&'a TileStats> {
        self.prof.ledger().tile_stats(brick.into(), level)
    }

    /// Tile statistics of tiles timed outside any brick.
    pub fn unattributed_tile_stats(&self, level: TileLevel) -> &'a TileStats {
        self.prof.ledger().unattributed_tile_stats(level)
    }

    /// Per-pass wall time statistics (elements = tokens per pass).
    pub fn pass_stats(&self) -> &'a BrickStats {
        self.prof.ledger().pass_stats()
    }

    /// Event counts: passes, tokens, dropped measurements, syncs, unclosed bricks, ... Each
    /// part counts its own events; this is their sum.
    pub fn counters(&self) -> Counters {
        self.prof.ledger().counters(&self.prof.facts().counters)
    }

    // ---- in flight

    /// Bricks started and not yet resolved (open ones included).
    pub fn pending_len(&self) -> usize {
        self.prof.marker.pending_len()
    }

    /// Bricks started and not yet stopped.
    pub fn open_bricks(&self) -> usize {
        self.prof.marker.open_bricks()
    }

    /// Capacity of the pending buffer.
    pub fn pending_capacity(&self) -> usize {
        self.prof.marker.pending_capacity()
    }

    /// Passes ended and not yet resolved (Lagged mode; 0 in every other mode).
    pub fn passes_in_flight(&self) -> usize {
        self.prof.marker.passes_in_flight()
    }

    // ---- shape and names

    /// Number of layers in the per-layer breakdown.
    pub fn layers(&self) -> usize {
        self.prof.marker.rows().layers()
    }

    /// The brick names (built-in and registered).
    pub fn registry(&self) -> &'a BrickRegistry {
        self.prof.ledger().registry()
    }

    /// The name of a brick (`None` for a handle from another profiler that this one lacks).
    pub fn brick_name(&self, brick: impl Into<BrickHandle>) -> Option<&'a str> {
        self.registry().name(brick.into())
    }

    /// The host clock.
    pub fn clock(&self) -> &'a HostClock {
        self.prof.marker.clock()
    }

    /// What this profiler marks.
    pub fn sampling(&self) -> Sampling {
        self.prof.sampler.sampling()
    }

    /// The current pass's shape, when it was given one.
    pub fn pass_shape(&self) -> Option<PassShape> {
        self.prof.passes.shape()
    }

    /// The vendor tool ranges, when on.
    #[cfg(any(feature = "nvtx", feature = "roctx"))]
    pub fn vendor_ranges(&self) -> Option<&'a crate::profiler::vendor_ranges::VendorRanges> {
        self.prof.marker.ranges()
    }

    // ---- trace

    /// The trace event log, when `trace_capacity > 0`.
    pub fn trace(&self) -> Option<&'a TraceBuffer> {
        self.prof.ledger().trace()
    }

    /// The rank written to traces (0 when not tracing).
    pub fn rank(&self) -> u32 {
        self.prof.ledger().rank()
    }

    /// The trace as plain data, when tracing (`trace_capacity > 0`): the events, the brick
    /// names and the run's facts ([`crate::profile::RunMeta`], as in its profile), for the writers in [`crate::output`]
    /// ([`crate::output::write_trace`], [`crate::output::chrome_trace`]). Resolved measurements
    /// only: call [`BrickProfiler::finalize`] first.
    pub fn trace_view(&self) -> Option<TraceView<'a>> {
        let buffer = self.trace()?;
        Some(TraceView {
            buffer,
            registry: self.registry(),
            meta: self.prof.run_meta(),
        })
    }

    // ---- checksums and captures

    /// The checksums recorded so far, in recording order.
    pub fn checksum_log(&self) -> &'a ChecksumLog {
        self.prof.checksums.log()
    }

    /// Which kernels are checksummed when checksums are on.
    pub fn checksum_plan(&self) -> &'a ChecksumPlan {
        self.prof.checksums.plan()
    }

    /// Which kernels are captured whole.
    pub fn capture_plan(&self) -> &'a CapturePlan {
        self.prof.checksums.capture_plan()
    }

    /// The outputs captured so far (spec/divergence.md "Captures"), with the overflow counts.
    pub fn captures(&self) -> &'a CaptureStore {
        self.prof.checksums.captures()
    }
}
