//! [`Capture`]: a timeline whose stream can be captured into a graph (CUDA graphs;
//! spec/sync-modes.md "CUDA").

/// Whether this pass's marks fell on a stream being captured into a graph, as the timeline
/// found at the pass's first mark (it checks again after [`super::Timeline::pass_ended`]).
pub trait Capture {
    /// True: the marks are not timestamps, so the profiler syncs and resolves none of them and
    /// counts the pass in [`crate::model::Counters::captured_passes`].
    fn captured(&self) -> bool;
}
