//! [`BrickProfiler`]'s definition: its parts, one per stage (see the folder's `mod.rs`, which
//! composes them). Its own file so that the type is reached by one path, the crate root's.

use super::{live, ChecksumRecorder, GraphBook, Marker, Passes, Sampler, Shape, Shelf};
use crate::timeline::{CpuTimeline, Timeline};

/// The profiler. Generic over its [`Timeline`] (the host clock by default) so the hot path is
/// statically dispatched and inlined.
///
/// ```
/// use brickprof::{model::PhaseFilter, profile::RowKey, BrickId, BrickProfiler, ProfilerConfig};
/// let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(2))?;
/// for layer in 0..2 {
///     prof.begin_layer(layer);
///     let t = prof.start_brick(BrickId::RmsNorm);
///     std::hint::black_box((0..1000).sum::<u64>());
///     prof.stop_brick(t, 1000);
///     prof.end_layer();
/// }
/// prof.end_pass(1)?;
/// assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).summary().count, 2);
/// let layer_1 = prof.view().row_stats(PhaseFilter::All, RowKey::Layer(1), BrickId::RmsNorm);
/// assert_eq!(layer_1.unwrap().summary().count, 1);
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug)]
pub struct BrickProfiler<T: Timeline = CpuTimeline> {
    /// Mark and resolve: timeline, clock, pending entries, open bricks.
    pub(super) marker: Marker<T>,
    /// Aggregate: statistics, tiles, pass statistics, counters; the trace; the brick names.
    /// What a profile is built from, readable from another thread (src/profiler/shelf.rs).
    pub(super) shelf: Shelf,
    /// The statistics grid's shape (rows of every phase plane), for the hot path's cell
    /// indices.
    pub(super) shape: Shape,
    /// Kernel checksums.
    pub(super) checksums: ChecksumRecorder,
    /// What is marked.
    pub(super) sampler: Sampler,
    /// Pass index, the current pass's start, warm-up.
    pub(super) passes: Passes,
    /// What live handles share with the profiler, once one was made (src/profiler/live.rs).
    pub(super) live: Option<std::sync::Arc<live::Control>>,
    /// Graph templates and the replay under way (src/profiler/graphs.rs).
    pub(super) graphs: GraphBook,
}
