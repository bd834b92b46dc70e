//! What a timeline counted: one plain snapshot for every built-in device timeline and the
//! simulated device, for tests and diagnostics.

/// A timeline's counts so far (`CudaTimeline::counts`, `HipTimeline::counts`,
/// `OpenClTimeline::counts`, `CuptiTimeline::counts`, [`SimDevice::counts`](super::SimDevice::counts)).
/// A field a timeline does not keep is 0 (`None`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCounts {
    /// Events (CUDA, HIP) or marker slots (OpenCL) in the pool: live marks at most.
    pub capacity: usize,
    /// Stream or queue synchronizations (one per `Timeline::sync`; CUPTI: none, see
    /// `sync_waits`; the simulated device: every synchronization).
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
    /// Where libcupti was loaded from (CUPTI: the process's one CUPTI session's library).
    pub library: Option<&'static str>,
    /// `cuptiActivityFlushAll` calls made by this timeline (CUPTI).
    pub flushes: u64,
    /// Syncs (Deferred) that had to wait for records, and the waits they made (CUPTI).
    pub sync_waits: u64,
    /// Lagged polls answered "not yet" (CUPTI).
    pub polls_not_ready: u64,
    /// Bricks that launched nothing (host-only, resolved to 0; CUPTI).
    pub host_only_bricks: u64,
    /// Marks whose push CUPTI refused (the brick's calls go to the previous position).
    pub refused_marks: u64,
    /// Times this timeline stopped tracing (CUPTI; spec/sync-modes.md "Sampled tracing").
    pub tracing_stops: u64,
    /// Of those, the stops that disabled records or detached CUPTI (the process's last
    /// tracing timeline stopped).
    pub records_stopped: u64,
    /// Launches in the process whose record never came (CUPTI: given up after 10 s).
    pub launches_missing: u64,
    /// Launches in the process made during a stream capture (CUPTI: no record expected).
    pub launches_captured: u64,
    /// Kernels launched so far (the simulated device).
    pub launches: u64,
    /// Sum of the durations of every kernel launched, in ns (the simulated device).
    pub busy_ns: u64,
    /// Virtual host time now, in ns (the simulated device).
    pub host_now_ns: u64,
    /// Virtual time at which the stream will have finished everything queued, in ns (the
    /// simulated device).
    pub device_free_ns: u64,
}
