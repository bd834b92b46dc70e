//! Graph replay: the capability of a timeline whose stream can be captured into a device graph
//! (CUDA graphs), so that every replay of the graph is a timed pass (spec/sync-modes.md "Graph
//! capture").
//!
//! While the engine's stream is being captured, a timeline with this capability marks by
//! recording *external* event-record nodes into the graph (CUDA: `cuEventRecordWithFlags` with
//! `CU_EVENT_RECORD_EXTERNAL`), recorded again at each replay. The profiler keeps the captured
//! pass's measurements as the graph's *template*: which mark opens and closes which brick. When
//! the engine adopts the instantiated graph ([`GraphReplay::adopt`]) the timeline finds those
//! nodes in it. Before each launch ([`GraphReplay::prepare_replay`]) it points the nodes at the
//! events of one in-flight slot, so replays in flight never overwrite each other's timestamps;
//! the profiler then maps each template mark to the replay's mark ([`GraphReplay::replay_mark`])
//! and resolves the replay like any pass.

use super::Mark;
use crate::Result;

/// A device graph the engine captured and instantiated, as raw handles (CUDA: the `CUgraph`
/// and the `CUgraphExec` of cudarc's `CudaGraph`; the simulated device: its own ids). A graph
/// is known by its executable: adopting the same executable again replaces its template (a
/// re-capture, or `cuGraphExecUpdate` from a new capture).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceGraph {
    graph: u64,
    exec: u64,
}

impl DeviceGraph {
    /// A graph from its raw handles: `graph` the captured graph (CUDA: `CUgraph`), `exec` its
    /// instantiation (CUDA: `CUgraphExec`).
    pub fn from_raw(graph: u64, exec: u64) -> Self {
        DeviceGraph { graph, exec }
    }

    /// The graph cudarc captured and instantiated.
    #[cfg(feature = "cuda")]
    pub fn cuda(graph: &cudarc::driver::CudaGraph) -> Self {
        DeviceGraph {
            graph: graph.cu_graph() as u64,
            exec: graph.cu_graph_exec() as u64,
        }
    }

    /// The captured graph's raw handle.
    pub(crate) fn graph(&self) -> u64 {
        self.graph
    }

    /// The executable's raw handle: the graph's identity in brickprof's books and reports.
    pub(crate) fn exec(&self) -> u64 {
        self.exec
    }
}

/// One replay's marks, as the timeline that prepared it encodes them (opaque to the profiler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayMarks(u64);

impl ReplayMarks {
    /// A replay as the timeline encodes it.
    pub(crate) fn new(code: u64) -> Self {
        ReplayMarks(code)
    }

    /// The timeline's code for this replay.
    pub(crate) fn code(&self) -> u64 {
        self.0
    }
}

/// What a timeline that can time graph replays does (spec/sync-modes.md "Graph capture").
pub trait GraphReplay {
    /// Adopt `graph`, the graph the last captured pass was captured into: the marks the
    /// timeline made during that pass are its event-record nodes, in the order made. Keeps
    /// room for `in_flight` replays of it unresolved at once. Returns how many marks the
    /// template has. Adopting an executable again replaces what the timeline knew of it.
    ///
    /// Errors: no pass was captured since the last adoption, or the graph does not hold the
    /// captured marks ([`crate::Error::Graph`]); a driver error.
    fn adopt(&mut self, graph: DeviceGraph, in_flight: usize) -> Result<usize>;

    /// Before the engine launches `graph`: choose the slot of events for this replay and point
    /// the graph's event-record nodes at them. `Ok(None)`: the timeline did not adopt `graph`
    /// (the replay is counted, not timed). Never waits while fewer than `in_flight` replays of
    /// the graph are unresolved.
    fn prepare_replay(&mut self, graph: DeviceGraph) -> Result<Option<ReplayMarks>>;

    /// The mark, in `replay`, of `captured`, a mark the timeline made during the captured pass.
    /// Resolving it, asking whether it was reached and releasing through it work as for any
    /// mark.
    fn replay_mark(&self, replay: ReplayMarks, captured: Mark) -> Mark;

    /// The engine destroyed `graph`: free what the timeline kept for it.
    fn forget(&mut self, graph: DeviceGraph);
}

pub use crate::base::error::GraphProblem;
