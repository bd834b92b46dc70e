//! What a device timeline (CUDA, HIP, OpenCL) counted: one plain snapshot, for tests and
//! diagnostics.

/// A device timeline's counts so far (`CudaTimeline::counts`, `HipTimeline::counts`,
/// `OpenClTimeline::counts`). A field a timeline does not keep is 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCounts {
    /// Events (CUDA, HIP) or marker slots (OpenCL) in the pool: live marks at most.
    pub capacity: usize,
    /// Stream or queue synchronizations (one per `Timeline::sync`).
    pub syncs: u64,
    /// Anchors that became the reference device time counts from (CUDA, HIP: every few
    /// seconds).
    pub rebases: u64,
    /// Times a pass's first mark found another context (or none) current on its thread and made
    /// the stream's context current: at most one per pass (CUDA).
    pub context_binds: u64,
    /// Passes whose stream was being captured into a graph at their first mark, not timed
    /// (CUDA).
    pub captured_passes: u64,
}
