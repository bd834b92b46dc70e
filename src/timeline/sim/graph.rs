//! The simulated device's graphs (spec/sync-modes.md "Graph capture", "The simulated device"):
//! what a capture records, what a launch replays, and the replay slots of the graphs its
//! timeline adopted. Exact and deterministic, so the profiler's replays can be checked against
//! the model.
//!
//! - **Capture.** While [`super::SimDevice::capture`] runs its closure nothing runs on the
//!   stream: a kernel launched becomes a kernel node, and a mark the timeline makes becomes an
//!   event-record node (the simulated `cuEventRecordWithFlags(.., CU_EVENT_RECORD_EXTERNAL)`),
//!   whose mark says "capture `c`, record node `i`". The capture's end instantiates the graph:
//!   a new executable.
//! - **Replay.** [`super::SimDevice::launch_graph`] costs the host one launch overhead and runs
//!   the nodes in order on the stream: kernels with their durations (and the device's jitter,
//!   drawn anew at every replay), record nodes writing the stream's time into the events their
//!   executable points them at, if any.
//! - **Slots.** Adopting a graph gives it `in_flight` slots of events, one event per record
//!   node. `prepare_replay` points the executable's record nodes at the next slot in turn (the
//!   simulated `cuGraphExecEventRecordNodeSetEvent`), so replays in flight never overwrite each
//!   other's timestamps; a slot still held (not released since its last replay) is refused, so
//!   a profiler that rotated wrongly fails loudly instead of reading another replay's times.

use crate::timeline::{DeviceGraph, GraphProblem, Mark, ReplayMarks};
use crate::{Error, Result};

/// Marks below this are the stream's own (eager) marks.
const TAG_SHIFT: u32 = 62;
/// A mark made during a capture: `CAPTURE | graph << 32 | record index`.
const CAPTURE: u64 = 1 << TAG_SHIFT;
/// A mark of a replay: `REPLAY | adopted << 40 | slot << 32 | record index`.
const REPLAY: u64 = 2 << TAG_SHIFT;
/// The raw handles the simulated device gives its graphs and executables (recognisable in
/// reports and tests: `0x6a00_0000 + i`, `0x7e00_0000 + i`).
const GRAPH_BASE: u64 = 0x6a00_0000;
const EXEC_BASE: u64 = 0x7e00_0000;
/// Not written by a record node since the slot was prepared.
const UNRECORDED: u64 = u64::MAX;
/// At most this many adopted graphs and slots (what a replay mark's fields hold).
const MAX_ADOPTED: usize = 1 << 22;
const MAX_SLOTS: usize = 256;

/// What a mark is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MarkKind {
    /// One of the stream's eager marks.
    Eager,
    /// A record node of capture `graph`, the `index`-th.
    Capture { graph: usize, index: u32 },
    /// Record node `index` of a replay in `slot` of adopted graph `adopted`.
    Replay {
        adopted: usize,
        slot: usize,
        index: u32,
    },
    /// Not a mark (invalid, failed).
    Invalid,
}

/// What a mark encodes.
pub(super) fn kind(mark: Mark) -> MarkKind {
    if mark >= crate::timeline::FAILED_MARK {
        return MarkKind::Invalid;
    }
    match mark >> TAG_SHIFT {
        0 => MarkKind::Eager,
        1 => MarkKind::Capture {
            graph: ((mark >> 32) & 0x3fff_ffff) as usize,
            index: mark as u32,
        },
        2 => MarkKind::Replay {
            adopted: ((mark >> 40) & 0x3f_ffff) as usize,
            slot: ((mark >> 32) & 0xff) as usize,
            index: mark as u32,
        },
        _ => MarkKind::Invalid,
    }
}

/// One node of a captured graph.
#[derive(Debug, Clone, Copy)]
pub(super) enum Node {
    /// A kernel of this many ns.
    Kernel(u64),
    /// The `i`-th event-record node.
    Record(u32),
}

/// An instantiated graph.
#[derive(Debug, Clone, Copy)]
struct Exec {
    /// The graph it runs (changed by an update).
    graph: usize,
    /// The adopted graph and slot its record nodes write into.
    target: Option<(usize, usize)>,
}

/// A graph the timeline adopted: its slots of events.
#[derive(Debug, Clone)]
struct Adopted {
    exec: u64,
    records: u32,
    slots: usize,
    /// `slots × records` timestamps ([`UNRECORDED`] until a record node writes one).
    events: Vec<u64>,
    /// Which slots hold a replay not yet released.
    held: Vec<bool>,
    /// Replays prepared so far (the next slot is `replays % slots`).
    replays: u64,
}

/// The device's graphs and the timeline's adopted ones.
#[derive(Debug, Clone, Default)]
pub(super) struct Graphs {
    /// The capture under way: its graph's id.
    capturing: Option<usize>,
    /// Every graph captured, by id: its nodes.
    graphs: Vec<Vec<Node>>,
    /// Every executable, by id.
    execs: Vec<Exec>,
    /// The latest capture the timeline marked, not adopted yet.
    last_marked: Option<usize>,
    /// Graphs the timeline adopted.
    adopted: Vec<Adopted>,
}

impl Graphs {
    /// Whether a capture is under way.
    pub(super) fn capturing(&self) -> bool {
        self.capturing.is_some()
    }

    /// Begin a capture (one already under way goes on; `SimDevice::capture` refuses that).
    pub(super) fn begin_capture(&mut self) {
        if self.capturing.is_none() {
            self.capturing = Some(self.graphs.len());
            self.graphs.push(Vec::new());
        }
    }

    /// End the capture and instantiate its graph; `None` when none was under way.
    pub(super) fn end_capture(&mut self) -> Option<DeviceGraph> {
        let graph = self.capturing.take()?;
        let exec = self.execs.len();
        self.execs.push(Exec {
            graph,
            target: None,
        });
        Some(DeviceGraph::from_raw(
            GRAPH_BASE + graph as u64,
            EXEC_BASE + exec as u64,
        ))
    }

    /// Point `exec`'s executable at the graph of `new` (the simulated `cuGraphExecUpdate`):
    /// the same executable, running the newly captured nodes.
    #[cfg(test)]
    pub(super) fn update(&mut self, exec: DeviceGraph, new: DeviceGraph) -> Result<DeviceGraph> {
        let graph = self.graph_index(new)?;
        let e = self.exec_mut(exec)?;
        e.graph = graph;
        Ok(DeviceGraph::from_raw(new.graph(), exec.exec()))
    }

    /// A kernel launched during the capture: a node, not run. False when not capturing.
    pub(super) fn capture_kernel(&mut self, duration_ns: u64) -> bool {
        match self.capturing {
            Some(g) => {
                self.graphs[g].push(Node::Kernel(duration_ns));
                true
            }
            None => false,
        }
    }

    /// A mark made during the capture: an event-record node, and its mark.
    pub(super) fn capture_mark(&mut self) -> Option<Mark> {
        let g = self.capturing?;
        let nodes = &mut self.graphs[g];
        let index = nodes
            .iter()
            .filter(|n| matches!(n, Node::Record(_)))
            .count() as u32;
        nodes.push(Node::Record(index));
        self.last_marked = Some(g);
        Some(CAPTURE | (g as u64) << 32 | u64::from(index))
    }

    /// The graph `graph`'s executable runs (its index), and where its record nodes write.
    pub(super) fn launch(&self, graph: DeviceGraph) -> Result<(usize, Option<(usize, usize)>)> {
        let e = self.exec(graph)?;
        Ok((e.graph, e.target))
    }

    /// Node `i` of graph `graph` (an index from [`Self::launch`]).
    pub(super) fn node(&self, graph: usize, i: usize) -> Option<Node> {
        self.graphs.get(graph)?.get(i).copied()
    }

    /// Record node `index` of a replay in `slot` of `adopted` reached the stream at `at_ns`.
    pub(super) fn record(&mut self, (adopted, slot): (usize, usize), index: u32, at_ns: u64) {
        if let Some(a) = self.adopted.get_mut(adopted) {
            let i = slot * a.records as usize + index as usize;
            if let Some(e) = a.events.get_mut(i) {
                *e = at_ns;
            }
        }
    }

    // ---- the timeline's side (GraphReplay)

    /// Adopt `graph`, the latest capture the timeline marked: `in_flight` slots of events.
    pub(super) fn adopt(&mut self, graph: DeviceGraph, in_flight: usize) -> Result<usize> {
        let problem = |problem| Error::Graph {
            exec: graph.exec(),
            problem,
        };
        let captured = self
            .last_marked
            .ok_or(problem(GraphProblem::NothingCaptured))?;
        let g = self.graph_index(graph)?;
        self.exec(graph)?;
        if g != captured {
            return Err(problem(GraphProblem::MarksNotInGraph));
        }
        let records = self.graphs[g]
            .iter()
            .filter(|n| matches!(n, Node::Record(_)))
            .count() as u32;
        let slots = in_flight.clamp(1, MAX_SLOTS);
        let adopted = Adopted {
            exec: graph.exec(),
            records,
            slots,
            events: vec![UNRECORDED; slots * records as usize],
            held: vec![false; slots],
            replays: 0,
        };
        // Re-adopting an executable replaces what was known of it, in place.
        match self.adopted.iter().position(|a| a.exec == graph.exec()) {
            Some(i) => self.adopted[i] = adopted,
            None if self.adopted.len() < MAX_ADOPTED => self.adopted.push(adopted),
            None => {
                return Err(Error::Timeline(
                    "sim: too many graphs adopted; forget destroyed ones (forget_graph)".into(),
                ))
            }
        }
        self.last_marked = None;
        self.exec_mut(graph)?.target = None;
        Ok(records as usize)
    }

    /// Choose the next slot of `graph` and point its record nodes at it.
    pub(super) fn prepare(&mut self, graph: DeviceGraph) -> Result<Option<ReplayMarks>> {
        let Some(at) = self.adopted.iter().position(|a| a.exec == graph.exec()) else {
            return Ok(None);
        };
        let a = &mut self.adopted[at];
        let slot = (a.replays % a.slots as u64) as usize;
        if a.held[slot] {
            return Err(Error::Timeline(format!(
                "sim: graph {:#x}: replay slot {slot} of {} is still held by an unresolved \
                 replay (the profiler must resolve a replay before its slot comes round again)",
                a.exec, a.slots
            )));
        }
        a.held[slot] = true;
        a.replays += 1;
        let n = a.records as usize;
        a.events[slot * n..(slot + 1) * n].fill(UNRECORDED);
        self.exec_mut(graph)?.target = Some((at, slot));
        Ok(Some(ReplayMarks::new(((at as u64) << 8) | slot as u64)))
    }

    /// The mark, in `replay`, of capture mark `captured`.
    pub(super) fn replay_mark(replay: ReplayMarks, captured: Mark) -> Mark {
        match kind(captured) {
            MarkKind::Capture { index, .. } => {
                let (adopted, slot) = (replay.code() >> 8, replay.code() & 0xff);
                REPLAY | adopted << 40 | slot << 32 | u64::from(index)
            }
            _ => crate::timeline::INVALID_MARK,
        }
    }

    /// The timestamp of a replay's record node, once recorded and still held.
    pub(super) fn timestamp(&self, adopted: usize, slot: usize, index: u32) -> Result<u64> {
        let a = self
            .adopted
            .get(adopted)
            .filter(|a| slot < a.slots && index < a.records && a.held[slot])
            .ok_or_else(|| crate::timeline::invalid_mark("sim"))?;
        let at = a.events[slot * a.records as usize + index as usize];
        if at == UNRECORDED {
            return Err(Error::Timeline(format!(
                "sim: graph {:#x}: record node {index} of replay slot {slot} was not recorded \
                 (was the graph launched between begin_replay and end_replay?)",
                a.exec
            )));
        }
        Ok(at)
    }

    /// The replay slot of `adopted` is resolved: free it.
    pub(super) fn release(&mut self, adopted: usize, slot: usize) {
        if let Some(h) = self
            .adopted
            .get_mut(adopted)
            .and_then(|a| a.held.get_mut(slot))
        {
            *h = false;
        }
    }

    /// Every replay is resolved: free every slot.
    pub(super) fn release_all(&mut self) {
        for a in &mut self.adopted {
            a.held.fill(false);
        }
    }

    /// The engine destroyed `graph`: its slots go (its executable runs no more).
    pub(super) fn forget(&mut self, graph: DeviceGraph) {
        if let Some(a) = self.adopted.iter_mut().find(|a| a.exec == graph.exec()) {
            // Keep the index (replay marks name it); drop the events.
            a.exec = u64::MAX;
            a.records = 0;
            a.events = Vec::new();
            a.held.fill(false);
        }
        if let Ok(e) = self.exec_mut(graph) {
            e.target = None;
        }
    }

    fn graph_index(&self, graph: DeviceGraph) -> Result<usize> {
        graph
            .graph()
            .checked_sub(GRAPH_BASE)
            .map(|g| g as usize)
            .filter(|&g| g < self.graphs.len() && Some(g) != self.capturing)
            .ok_or(Error::Graph {
                exec: graph.exec(),
                problem: GraphProblem::MarksNotInGraph,
            })
    }

    fn exec(&self, graph: DeviceGraph) -> Result<&Exec> {
        graph
            .exec()
            .checked_sub(EXEC_BASE)
            .and_then(|e| self.execs.get(e as usize))
            .ok_or_else(|| unknown_exec(graph))
    }

    fn exec_mut(&mut self, graph: DeviceGraph) -> Result<&mut Exec> {
        graph
            .exec()
            .checked_sub(EXEC_BASE)
            .and_then(|e| self.execs.get_mut(e as usize))
            .ok_or_else(|| unknown_exec(graph))
    }
}

fn unknown_exec(graph: DeviceGraph) -> Error {
    Error::Timeline(format!(
        "sim: {:#x} is not an executable graph of this device (a capture makes one)",
        graph.exec()
    ))
}
