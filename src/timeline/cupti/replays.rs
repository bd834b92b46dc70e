//! Graph replays on the CUPTI timeline (spec/sync-modes.md "CUPTI", "Graphs"): a pass
//! captured into a graph is known from the graph-node callbacks (`graph_nodes.rs`), its
//! executable's nodes map back to capture positions at adoption, and each replay is one pass
//! keyed by the position pushed around its launch, whose kernels carry the launch's
//! correlation id and their node's id. Nothing is added to the graph; per replay, one mark.

use std::collections::{HashMap, VecDeque};

use super::attribution::{key_of, position_of, Act, SUB_BITS};
use super::CuptiTimeline;
use crate::timeline::{Capture, DeviceGraph, GraphProblem, GraphReplay, Mark, ReplayMarks};
use crate::timeline::{Timeline, INVALID_MARK};
use crate::{Error, Result};

/// The largest `sub` of a replayed record's key: a captured pass spans fewer positions.
const MAX_SUB: u64 = (1 << SUB_BITS) - 2;

/// An adopted graph: its executable's nodes, each with its capture position's sub.
#[derive(Debug)]
struct Adopted {
    exec: u64,
    /// The captured pass's first position.
    base: u64,
    nodes: HashMap<u64, u16>,
}

/// What the timeline keeps of graphs.
#[derive(Debug, Default)]
pub(crate) struct Replays {
    /// Adopted graphs by index (a replay's code names its index); `None`: forgotten.
    adopted: Vec<Option<Adopted>>,
    /// Replays launched and not yet released: (launch position, adopted index).
    launches: VecDeque<(u64, usize)>,
    /// The first position of the current pass.
    pass_start: u64,
    /// The last pass that created graph nodes: its first and last positions.
    last_capture: Option<(u64, u64)>,
}

impl Replays {
    /// Nothing adopted; the first pass starts at position 1 (the first mark).
    pub(crate) fn new() -> Self {
        Replays {
            pass_start: 1,
            ..Replays::default()
        }
    }

    /// Whether a captured pass awaits its adoption.
    pub(crate) fn capture_pending(&self) -> bool {
        self.last_capture.is_some()
    }

    /// Give each replayed record its key: the launch's position, and the sub of the position
    /// its node was created at in the capture (0 when the node is not the template's).
    pub(crate) fn key(&self, acts: &mut [Act]) {
        if self.launches.is_empty() {
            return;
        }
        for a in acts.iter_mut().filter(|a| a.graph_node != 0) {
            let p = position_of(a.key);
            let Some(&(_, i)) = self.launches.iter().find(|(l, _)| *l == p) else {
                continue;
            };
            if let Some(Some(g)) = self.adopted.get(i) {
                key_replayed(a, &g.nodes);
            }
        }
    }

    /// Launches below position `p` are resolved.
    pub(crate) fn release_below(&mut self, p: u64) {
        while self.launches.front().is_some_and(|(l, _)| *l < p) {
            self.launches.pop_front();
        }
    }
}

/// Key `a`, a record of a replay launched at its position, by its node: the sub of the capture
/// position its node was created at, 0 when its node is none of `nodes`.
pub(crate) fn key_replayed(a: &mut Act, nodes: &HashMap<u64, u16>) {
    let sub = nodes.get(&a.graph_node).copied().unwrap_or(0);
    a.key = key_of(position_of(a.key)) | u64::from(sub);
}

impl CuptiTimeline {
    /// A pass ended: if it created graph nodes, it was captured; the next pass starts at the
    /// next mark.
    pub(super) fn graph_pass_ended(&mut self) {
        let start = self.replays.pass_start;
        if self.session.captured_from(self.namespace, start) {
            self.replays.last_capture = Some((start, self.position));
        }
        self.replays.pass_start = self.position + 1;
    }
}

impl Capture for CuptiTimeline {
    /// Whether this pass created graph nodes (a launch captured into a graph).
    fn captured(&self) -> bool {
        self.session.graphs
            && self
                .session
                .captured_from(self.namespace, self.replays.pass_start)
    }
}

impl GraphReplay for CuptiTimeline {
    /// The captured pass's nodes, cloned into the executable at instantiation, become the
    /// graph's: each kernel of a replay is then keyed by its node.
    fn adopt(&mut self, graph: DeviceGraph, _in_flight: usize) -> Result<usize> {
        let (base, end) = self.replays.last_capture.take().ok_or(Error::Graph {
            exec: graph.exec(),
            problem: GraphProblem::NothingCaptured,
        })?;
        if end.saturating_sub(base) >= MAX_SUB {
            return Err(Error::Timeline(format!(
                "cupti: the captured pass made {} marks; a graph's template holds at most {MAX_SUB}",
                end - base + 1
            )));
        }
        let nodes = self.session.template(self.namespace, base, end);
        if nodes.is_empty() {
            return Err(Error::Graph {
                exec: graph.exec(),
                problem: GraphProblem::MarksNotInGraph,
            });
        }
        let n = nodes.len();
        let adopted = Adopted {
            exec: graph.exec(),
            base,
            nodes,
        };
        match self
            .replays
            .adopted
            .iter()
            .position(|a| a.as_ref().is_some_and(|a| a.exec == graph.exec()))
        {
            Some(i) => self.replays.adopted[i] = Some(adopted),
            None => self.replays.adopted.push(Some(adopted)),
        }
        if let Some(detach) = self.stop_after_adopt.take() {
            self.stop_tracing(detach)?;
        }
        Ok(n)
    }

    /// One mark: the position pushed around the launch, which its kernels' records carry.
    /// Untraced (spec "Sampled tracing"): none, the replay is counted, not timed.
    fn prepare_replay(&mut self, graph: DeviceGraph) -> Result<Option<ReplayMarks>> {
        if !self.traced {
            return Ok(None);
        }
        let Some(i) = self
            .replays
            .adopted
            .iter()
            .position(|a| a.as_ref().is_some_and(|a| a.exec == graph.exec()))
        else {
            return Ok(None);
        };
        if i > usize::from(u16::MAX) {
            return Ok(None);
        }
        let mark = self.mark(0);
        if mark == INVALID_MARK {
            return Ok(None);
        }
        let p = position_of(mark);
        self.replays.launches.push_back((p, i));
        Ok(Some(ReplayMarks::new(mark | i as u64)))
    }

    fn replay_mark(&self, replay: ReplayMarks, captured: Mark) -> Mark {
        let code = replay.code();
        let i = (code & ((1 << SUB_BITS) - 1)) as usize;
        let Some(Some(g)) = self.replays.adopted.get(i) else {
            return INVALID_MARK;
        };
        let c = position_of(captured);
        if c < g.base || c - g.base + 1 > MAX_SUB {
            return INVALID_MARK;
        }
        key_of(position_of(code)) | (c - g.base + 1)
    }

    fn forget(&mut self, graph: DeviceGraph) {
        for a in &mut self.replays.adopted {
            if a.as_ref().is_some_and(|a| a.exec == graph.exec()) {
                *a = None;
            }
        }
    }
}
