//! CUDA graph replays, timed (spec/sync-modes.md "Graph capture"): the [`GraphReplay`]
//! capability of [`CudaTimeline`].
//!
//! - **Capture marks.** A pass whose stream is being captured (found at its first mark, once
//!   per pass) marks with `cuEventRecordWithFlags(event, stream, CU_EVENT_RECORD_EXTERNAL)`:
//!   an event-record node of the graph, recorded again at every replay. A record without the
//!   flag would only express a dependency. The events are not the pool's (its ring stays a
//!   ring): they come from a spare list, or are created, and go into the capture's own list;
//!   mark `i` of the capture is `CAPTURE | i`. Nothing is synchronized or queried during the
//!   capture. A captured pass that is never adopted leaves its events to the timeline until it
//!   drops (the graph the engine kept may still record them).
//! - **Adopting** a graph finds its event-record nodes (`cuGraphGetNodes`, `cuGraphNodeGetType`,
//!   `cuGraphEventRecordNodeGetEvent`) and matches them to the capture's events, in mark order:
//!   a missing one is [`GraphProblem::MarksNotInGraph`]. The capture's events become slot 0;
//!   each further in-flight slot gets its own events. Adopting a known executable again
//!   (`cuGraphExecUpdate` from a new capture) replaces what was kept of it; its nodes are still
//!   named by the graph it was instantiated from, as `cuGraphExecEventRecordNodeSetEvent`
//!   requires.
//! - **Replays in flight.** Every replay of one executable records the same nodes, so before a
//!   launch the nodes are pointed at a free slot's events with
//!   `cuGraphExecEventRecordNodeSetEvent` (it changes later launches only; skipped when the
//!   nodes hold that slot's events already, so one slot in flight costs no driver call). With
//!   `in_flight` slots, `in_flight` replays of a graph can be unresolved at once without any
//!   wait. A replay's mark `i` is `REPLAY | graph id | slot | i`.
//! - **Completion.** A replay's marks are known complete after a sync, after a later mark (pool
//!   mark or replay mark) was found reached, or when their own event was; a slot is free again
//!   when a mark made after its launch is released (the profiler releases passes in order),
//!   when one of its own marks is, or at a recycle.

use cudarc::driver::{sys, CudaEvent, DriverError};

use super::{cuda_error, CudaTimeline};
use crate::base::limits::MAX_PASSES_IN_FLIGHT;
use crate::timeline::{
    invalid_mark, DeviceGraph, GraphProblem, GraphReplay, Mark, ReplayMarks, FAILED_MARK,
    INVALID_MARK,
};
use crate::{Error, Result};

/// The two top bits of a mark say what it is: a pool mark (0, a sequence number), a capture
/// mark, a replay mark. (3 holds [`INVALID_MARK`] and [`FAILED_MARK`], which the
/// pool's ring answers for.)
const KIND_SHIFT: u32 = 62;
const CAPTURE: u64 = 1 << KIND_SHIFT;
const REPLAY: u64 = 2 << KIND_SHIFT;
/// A replay mark: the graph's id (20 bits), the slot (8 bits), the index (32 bits).
const ID_SHIFT: u32 = 40;
const ID_MASK: u64 = (1 << 20) - 1;
const SLOT_SHIFT: u32 = 32;
const SLOT_MASK: u64 = (1 << 8) - 1;
const INDEX_MASK: u64 = (1 << 32) - 1;
/// The most slots a graph gets (Lagged: passes in flight + 1).
const MAX_SLOTS: usize = MAX_PASSES_IN_FLIGHT + 1;

/// What a mark is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MarkKind {
    /// A mark of the pool's ring (or an invalid or failed mark, which the ring answers for).
    Pool,
    /// Mark `i` of a captured pass: not a timestamp.
    Capture,
    /// Mark `index` of a replay of graph `id` in `slot`.
    Replay { id: u32, slot: usize, index: usize },
}

#[inline]
pub(super) fn kind(mark: Mark) -> MarkKind {
    match mark >> KIND_SHIFT {
        1 => MarkKind::Capture,
        2 => MarkKind::Replay {
            id: ((mark >> ID_SHIFT) & ID_MASK) as u32,
            slot: ((mark >> SLOT_SHIFT) & SLOT_MASK) as usize,
            index: (mark & INDEX_MASK) as usize,
        },
        _ => MarkKind::Pool,
    }
}

/// An event-record node handle (`CUgraphNode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node(sys::CUgraphNode);

// SAFETY: a node handle is an identifier the driver accepts from any thread with the context
// current (the timeline binds before each use); only `&mut` methods use it.
unsafe impl Send for Node {}
// SAFETY: as above; a shared reference gives no access to the handle.
unsafe impl Sync for Node {}

/// A replay launched with a slot's events and not yet released.
#[derive(Debug, Clone, Copy)]
struct Busy {
    /// The replay's number among all replays of the timeline (they are released in order).
    replay: u64,
    /// The pool's next mark when it was prepared: pool marks from this one on were made after
    /// its launch.
    pool_next: u64,
    /// Its marks below this index are known complete.
    ready: usize,
}

/// One in-flight slot of a graph: an event per template mark.
#[derive(Debug)]
struct Slot {
    events: Vec<CudaEvent>,
    busy: Option<Busy>,
}

/// A graph the timeline adopted.
#[derive(Debug)]
struct Adopted {
    id: u32,
    graph: DeviceGraph,
    /// The event-record node of each template mark (of the graph the executable was
    /// instantiated from).
    nodes: Vec<Node>,
    slots: Vec<Slot>,
    /// The slot whose events the executable's nodes hold now.
    holds: usize,
    launches: u64,
    /// The engine destroyed it: kept until its replays are released, then its events are
    /// spare.
    forgotten: bool,
}

impl Adopted {
    fn idle(&self) -> bool {
        self.slots.iter().all(|s| s.busy.is_none())
    }
}

/// The timeline's graph state: the capture under way or last made, and the graphs adopted.
#[derive(Debug, Default)]
pub(super) struct Graphs {
    /// The events of the last captured pass's marks, in mark order.
    capture: Vec<CudaEvent>,
    /// A pass was captured since the last adoption.
    captured: bool,
    /// Events free for captures and slots.
    spare: Vec<CudaEvent>,
    /// Events of captures never adopted: their graphs may still record them.
    orphans: Vec<CudaEvent>,
    adopted: Vec<Adopted>,
    next_id: u32,
    replays: u64,
}

impl Graphs {
    /// A captured pass begins: a capture not adopted is left to its graph.
    pub(super) fn capture_begun(&mut self) {
        self.orphans.append(&mut self.capture);
        self.captured = true;
    }

    fn adopted(&self, id: u32) -> Option<&Adopted> {
        self.adopted.iter().find(|a| a.id == id)
    }

    fn slot(&self, id: u32, slot: usize) -> Option<(&Slot, Busy)> {
        let s = self.adopted(id)?.slots.get(slot)?;
        Some((s, s.busy?))
    }

    /// The event of a replay mark, known complete.
    pub(super) fn event(&self, mark: Mark) -> Result<&CudaEvent> {
        let MarkKind::Replay { id, slot, index } = kind(mark) else {
            return Err(invalid_mark("cuda"));
        };
        let Some((s, busy)) = self.slot(id, slot) else {
            return Err(invalid_mark("cuda"));
        };
        let event = s.events.get(index).ok_or_else(|| invalid_mark("cuda"))?;
        if index >= busy.ready {
            return Err(Error::Timeline(format!(
                "cuda: replay mark {index} of graph {} is not known complete: resolve only \
                 after a sync or a query that found it reached",
                id
            )));
        }
        Ok(event)
    }

    /// The event of a live replay mark, complete or not, and whether it is known complete.
    pub(super) fn live_event(&self, mark: Mark) -> Result<(sys::CUevent, bool)> {
        let MarkKind::Replay { id, slot, index } = kind(mark) else {
            return Err(invalid_mark("cuda"));
        };
        let (s, busy) = self.slot(id, slot).ok_or_else(|| invalid_mark("cuda"))?;
        let event = s.events.get(index).ok_or_else(|| invalid_mark("cuda"))?;
        Ok((event.cu_event(), index < busy.ready))
    }

    /// Every replay launched so far is complete (a sync returned).
    pub(super) fn synced(&mut self) {
        self.mark_ready(|_| true);
    }

    /// Pool mark `mark` was reached: so was every replay launched before it.
    pub(super) fn pool_reached(&mut self, mark: Mark) {
        self.mark_ready(|b| b.pool_next <= mark);
    }

    /// Replay mark `mark` was reached: so were the marks before it, and every earlier replay.
    /// Returns the pool's next mark at its launch (pool marks before it are reached too).
    pub(super) fn replay_reached(&mut self, mark: Mark) -> Option<u64> {
        let MarkKind::Replay { id, slot, index } = kind(mark) else {
            return None;
        };
        let (_, busy) = self.slot(id, slot)?;
        self.mark_ready(|b| b.replay < busy.replay);
        let s = self
            .adopted
            .iter_mut()
            .find(|a| a.id == id)
            .and_then(|a| a.slots.get_mut(slot))?;
        if let Some(b) = &mut s.busy {
            b.ready = b.ready.max(index + 1);
        }
        Some(busy.pool_next)
    }

    /// Every busy slot `which` selects is complete.
    fn mark_ready(&mut self, which: impl Fn(&Busy) -> bool) {
        for a in &mut self.adopted {
            for s in &mut a.slots {
                let n = s.events.len();
                if let Some(b) = &mut s.busy {
                    if which(b) {
                        b.ready = n;
                    }
                }
            }
        }
    }

    /// Pool mark `mark` was released: so is every replay launched before it.
    pub(super) fn pool_released(&mut self, mark: Mark) {
        self.release(|b| b.pool_next <= mark);
    }

    /// Replay mark `mark` was released: its replay's slot is free (only its own: the profiler
    /// also releases a replay it drops unresolved, while earlier ones are in flight).
    pub(super) fn replay_released(&mut self, mark: Mark) {
        let MarkKind::Replay { id, slot, .. } = kind(mark) else {
            return;
        };
        if let Some((_, busy)) = self.slot(id, slot) {
            self.release(|b| b.replay == busy.replay);
        }
    }

    /// Every replay is released.
    pub(super) fn recycle(&mut self) {
        self.release(|_| true);
    }

    fn release(&mut self, which: impl Fn(&Busy) -> bool) {
        for a in &mut self.adopted {
            for s in &mut a.slots {
                if s.busy.is_some_and(|b| which(&b)) {
                    s.busy = None;
                }
            }
        }
        self.reclaim();
    }

    /// Forgotten graphs whose replays are all released give their events back.
    fn reclaim(&mut self) {
        let mut i = 0;
        while i < self.adopted.len() {
            if self.adopted[i].forgotten && self.adopted[i].idle() {
                let a = self.adopted.swap_remove(i);
                for s in a.slots {
                    self.spare.extend(s.events);
                }
            } else {
                i += 1;
            }
        }
    }

    /// An id no graph kept has (ids wrap after 2^20 adoptions).
    fn new_id(&mut self) -> u32 {
        loop {
            let id = self.next_id;
            self.next_id = (id + 1) & ID_MASK as u32;
            if self.adopted(id).is_none() {
                return id;
            }
        }
    }

    fn live(&mut self, exec: u64) -> Option<&mut Adopted> {
        self.adopted
            .iter_mut()
            .find(|a| !a.forgotten && a.graph.exec() == exec)
    }
}

impl CudaTimeline {
    /// A mark of a captured pass: an external event-record node of the graph being captured.
    #[cold]
    pub(super) fn record_capture(&mut self) -> Mark {
        let index = self.graphs.capture.len();
        if index >= self.events.len() {
            return INVALID_MARK; // as many as the pool: the pending buffer's bound
        }
        let event = match self.graphs.spare.pop() {
            Some(e) => e,
            None => match self.new_event() {
                Ok(e) => e,
                Err(e) => {
                    self.keep_mark_error("cuEventCreate", e);
                    return FAILED_MARK;
                }
            },
        };
        // SAFETY: a live event of the stream's context, recorded on that live stream (the
        // pass's first mark bound the context).
        let recorded = unsafe {
            sys::cuEventRecordWithFlags(
                event.cu_event(),
                self.stream().cu_stream(),
                sys::CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL as u32,
            )
        }
        .result();
        match recorded {
            Ok(()) => {
                self.graphs.capture.push(event);
                CAPTURE | index as u64
            }
            Err(e) => {
                self.graphs.spare.push(event);
                self.keep_mark_error("cuEventRecordWithFlags", e);
                FAILED_MARK
            }
        }
    }

    /// The event-record nodes of `graph` and their events.
    fn record_nodes(graph: sys::CUgraph) -> Result<Vec<(Node, sys::CUevent)>> {
        let driver = |call, e: DriverError| cuda_error(call, e, " (adopting a graph)");
        let mut count = 0usize;
        // SAFETY: the engine's live graph; a null array asks for the count.
        unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count) }
            .result()
            .map_err(|e| driver("cuGraphGetNodes", e))?;
        let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
        // SAFETY: room for `count` nodes.
        unsafe { sys::cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count) }
            .result()
            .map_err(|e| driver("cuGraphGetNodes", e))?;
        nodes.truncate(count);
        let mut found = Vec::new();
        for node in nodes {
            let mut ty = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
            // SAFETY: a node of the live graph.
            unsafe { sys::cuGraphNodeGetType(node, &mut ty) }
                .result()
                .map_err(|e| driver("cuGraphNodeGetType", e))?;
            if ty != sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EVENT_RECORD {
                continue;
            }
            let mut event: sys::CUevent = std::ptr::null_mut();
            // SAFETY: an event-record node of the live graph.
            unsafe { sys::cuGraphEventRecordNodeGetEvent(node, &mut event) }
                .result()
                .map_err(|e| driver("cuGraphEventRecordNodeGetEvent", e))?;
            found.push((Node(node), event));
        }
        Ok(found)
    }

    fn new_event(&self) -> std::result::Result<CudaEvent, DriverError> {
        self.stream()
            .context()
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
    }

    /// A spare event, or a new one.
    fn spare_event(&mut self) -> Result<CudaEvent> {
        match self.graphs.spare.pop() {
            Some(e) => Ok(e),
            None => self
                .new_event()
                .map_err(|e| cuda_error("cuEventCreate", e, " (a graph replay's events)")),
        }
    }
}

impl GraphReplay for CudaTimeline {
    fn adopt(&mut self, graph: DeviceGraph, in_flight: usize) -> Result<usize> {
        let exec = graph.exec();
        let problem = |problem| Error::Graph { exec, problem };
        if !self.graphs.captured {
            return Err(problem(GraphProblem::NothingCaptured));
        }
        self.bind()
            .map_err(|(call, e)| cuda_error(call, e, " (adopting a graph)"))?;
        let found = Self::record_nodes(graph.graph() as sys::CUgraph)?;
        let mut nodes = Vec::with_capacity(self.graphs.capture.len());
        for event in &self.graphs.capture {
            match found.iter().find(|(_, e)| *e == event.cu_event()) {
                Some(&(node, _)) => nodes.push(node),
                None => return Err(problem(GraphProblem::MarksNotInGraph)),
            }
        }
        // Events for the slots beyond the first, made before anything changes.
        let in_flight = in_flight.clamp(1, MAX_SLOTS);
        let mut extra = Vec::with_capacity((in_flight - 1) * nodes.len());
        for _ in 0..(in_flight - 1) * nodes.len() {
            match self.spare_event() {
                Ok(e) => extra.push(e),
                Err(e) => {
                    self.graphs.spare.extend(extra);
                    return Err(e);
                }
            }
        }
        if let Some(old) = self.graphs.live(exec) {
            // Adopted again: an update from a new capture (its nodes are still named by the
            // graph the executable was instantiated from) or a re-adoption.
            if old.graph.graph() != graph.graph() && old.nodes.len() == nodes.len() {
                nodes.clone_from(&old.nodes);
            }
            old.forgotten = true;
        }
        let mut slots = Vec::with_capacity(in_flight);
        slots.push(Slot {
            events: std::mem::take(&mut self.graphs.capture),
            busy: None,
        });
        while !extra.is_empty() {
            let rest = extra.split_off(nodes.len());
            slots.push(Slot {
                events: std::mem::replace(&mut extra, rest),
                busy: None,
            });
        }
        let id = self.graphs.new_id();
        let n = nodes.len();
        self.graphs.adopted.push(Adopted {
            id,
            graph,
            nodes,
            slots,
            holds: 0,
            launches: 0,
            forgotten: false,
        });
        self.graphs.captured = false;
        self.graphs.reclaim();
        Ok(n)
    }

    fn prepare_replay(&mut self, graph: DeviceGraph) -> Result<Option<ReplayMarks>> {
        let exec = graph.exec();
        if self.graphs.live(exec).is_none() {
            return Ok(None);
        }
        // The driver calls below are raw: the thread needs the stream's context.
        self.bind()
            .map_err(|(call, e)| cuda_error(call, e, " (before a graph replay)"))?;
        let pool_next = self.pool_next();
        let replay = self.graphs.replays;
        let Some(a) = self.graphs.live(exec) else {
            return Ok(None);
        };
        let count = a.slots.len();
        let preferred = (a.launches % count as u64) as usize;
        // A free slot, the preferred one first; else one whose replay is known complete (the
        // profiler resolves a pass as soon as it knows it complete).
        let free = |s: &Slot| s.busy.is_none();
        let done = |s: &Slot| s.busy.is_some_and(|b| b.ready == s.events.len());
        let slot = (0..count)
            .map(|k| (preferred + k) % count)
            .find(|&k| free(&a.slots[k]))
            .or_else(|| {
                (0..count)
                    .map(|k| (preferred + k) % count)
                    .find(|&k| done(&a.slots[k]))
            });
        let Some(slot) = slot else {
            return Err(Error::Timeline(format!(
                "cuda: graph {exec:#x}: its {count} event slot(s) all hold replays not known \
                 complete; resolve a replay before launching another, or adopt the graph with \
                 more replays in flight"
            )));
        };
        if a.holds != slot {
            let (nodes, events) = (&a.nodes, &a.slots[slot].events);
            let exec_handle = exec as sys::CUgraphExec;
            for (node, event) in nodes.iter().zip(events) {
                // SAFETY: the engine's live executable, a record node of the graph it was
                // instantiated from, a live event of the same context.
                unsafe {
                    sys::cuGraphExecEventRecordNodeSetEvent(exec_handle, node.0, event.cu_event())
                }
                .result()
                .map_err(|e| cuda_error("cuGraphExecEventRecordNodeSetEvent", e, ""))?;
            }
            a.holds = slot;
        }
        a.slots[slot].busy = Some(Busy {
            replay,
            pool_next,
            ready: 0,
        });
        a.launches += 1;
        let code = REPLAY | (u64::from(a.id) << ID_SHIFT) | ((slot as u64) << SLOT_SHIFT);
        self.graphs.replays += 1;
        Ok(Some(ReplayMarks::new(code)))
    }

    fn replay_mark(&self, replay: ReplayMarks, captured: Mark) -> Mark {
        if kind(captured) != MarkKind::Capture || kind(replay.code()) == MarkKind::Pool {
            return INVALID_MARK;
        }
        replay.code() | (captured & INDEX_MASK)
    }

    fn forget(&mut self, graph: DeviceGraph) {
        if let Some(a) = self.graphs.live(graph.exec()) {
            a.forgotten = true;
        }
        self.graphs.reclaim();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mark_kinds_round_trip() {
        assert_eq!(kind(0), MarkKind::Pool);
        assert_eq!(kind(super::INVALID_MARK), MarkKind::Pool);
        assert_eq!(kind(super::FAILED_MARK), MarkKind::Pool);
        assert_eq!(kind(CAPTURE | 7), MarkKind::Capture);
        let m = REPLAY | (5 << ID_SHIFT) | (3 << SLOT_SHIFT) | 9;
        assert_eq!(
            kind(m),
            MarkKind::Replay {
                id: 5,
                slot: 3,
                index: 9
            }
        );
    }
}
