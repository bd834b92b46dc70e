//! Joining CUPTI's records by correlation id (spec/sync-modes.md "CUPTI", "Completion").
//!
//! Three records meet on one `correlationId`: the external-correlation record (the id brickprof
//! pushed on the launching thread), the API record (which call it was) and the activity records
//! (what ran). They arrive in buffers, not in launch order across kinds, and only when flushed.
//! A call is *complete* once its API record is in and, when the call launches work (a kernel, a
//! copy, a set), its activity record is in too. A complete call's activity records go to the
//! timeline whose namespace its external id carries ([`Join::take`]).
//!
//! Two rules make this decidable without waiting on the device:
//! - **Two flushes.** `cuptiActivityFlushAll` delivers every completed record before it returns,
//!   and the API and external records of a call complete when the call returns, before its
//!   kernel can. So a record that arrived before flush `g + 1` began has all its siblings of
//!   those kinds by the end of flush `g + 2`: an activity record still without an external id
//!   then was launched outside any brick ([`Join::outside`]), and a call with an external id but
//!   no API record expects nothing.
//! - **Captures.** A launch between a thread's `...BeginCapture` and `...EndCapture` calls is
//!   captured into a graph, not run: it expects no activity record (the fixture's captured
//!   launches have external and API records and no kernel).
//!
//! - **Graph launches.** A graph launch's kernels all carry the launch's correlation id. The
//!   launch is complete once it has as many records as its executable graph has nodes that run
//!   (kernels, copies, sets), counted from the `GRAPHNODE_CLONED` callbacks at instantiation
//!   ([`Join::node_cloned`]); a graph whose clones were never seen completes with its first
//!   record, as before.
//!
//! A call whose expected record has not come after [`PATIENCE_NS`] is given up and counted
//! ([`Join::missing`]), so that no pass waits forever on a record CUPTI never writes.

use std::collections::HashMap;

use super::attribution::{key_of, position_mask, tally, Act, Tally, NAMESPACE_SHIFT};
use super::records::Op;

/// How long a launch may wait for its activity record before it is given up (host ns).
pub(crate) const PATIENCE_NS: u64 = 10_000_000_000;

/// What an API call makes, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiClass {
    /// No activity record (a synchronization, an allocation, a host function).
    Nothing,
    /// One activity record: a kernel launch, a copy, a set.
    One,
    /// A graph launch: its kernels' records.
    Graph,
    /// The thread begins a stream capture.
    BeginCapture,
    /// The thread ends a stream capture.
    EndCapture,
}

impl ApiClass {
    /// The class of a runtime or driver API named `name` (as `cuptiGetCallbackName` gives it,
    /// for example `cudaLaunchKernel_v7000` or `cuMemcpyHtoDAsync_v2`).
    pub(crate) fn of(name: &str) -> ApiClass {
        if name.contains("BeginCapture") {
            ApiClass::BeginCapture
        } else if name.contains("EndCapture") {
            ApiClass::EndCapture
        } else if name.starts_with("cudaGraphLaunch") || name.starts_with("cuGraphLaunch") {
            ApiClass::Graph
        } else if name.contains("HostFunc") {
            ApiClass::Nothing
        } else if [
            "cudaLaunch",
            "cuLaunch",
            "cudaMemcpy",
            "cuMemcpy",
            "cudaMemset",
            "cuMemset",
        ]
        .iter()
        .any(|p| name.starts_with(p))
        {
            ApiClass::One
        } else {
            ApiClass::Nothing
        }
    }
}

/// What is known of one correlation id.
#[derive(Debug, Default)]
struct Call {
    external: Option<u64>,
    /// What the call expects, once its API record is in.
    expects: Option<Expect>,
    acts: Vec<Act>,
    /// Flushes completed when the first of its records arrived.
    generation: u64,
    /// Host ns when the first of its records arrived.
    seen_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Nothing,
    One,
    /// A graph launch: complete with as many records as its executable graph has cloned
    /// nodes that run (at least one).
    AtLeastOne,
}

/// The join of every record delivered so far (one per process, behind the session's lock).
#[derive(Debug)]
pub(crate) struct Join {
    /// The external-correlation kind that is brickprof's.
    external_kind: u32,
    /// Flushes completed.
    generation: u64,
    calls: HashMap<u32, Call>,
    /// Complete calls' external ids, for records of theirs that come later (a graph launch's
    /// kernels), kept two flushes.
    done: HashMap<u32, (u64, u64)>,
    /// Threads inside a stream capture.
    capturing: HashMap<u32, bool>,
    /// Complete records, by namespace.
    routed: HashMap<u16, Vec<Act>>,
    outside: Tally,
    missing: u64,
    captured: u64,
    /// Namespaces whose timeline is gone: their records count as outside any brick.
    retired: Vec<u16>,
    /// Per executable graph id: its nodes that run, cloned at instantiation.
    graph_nodes: HashMap<u32, u32>,
}

impl Join {
    /// Nothing joined yet; `external_kind` is the external-correlation kind that is ours.
    pub(crate) fn new(external_kind: u32) -> Self {
        Join {
            external_kind,
            generation: 0,
            calls: HashMap::new(),
            done: HashMap::new(),
            capturing: HashMap::new(),
            routed: HashMap::new(),
            outside: Tally::default(),
            missing: 0,
            captured: 0,
            retired: Vec::new(),
            graph_nodes: HashMap::new(),
        }
    }

    /// A node that runs (a kernel, copy or set) was cloned into graph `graph` (an
    /// instantiation): a launch of that graph expects one more record.
    pub(crate) fn node_cloned(&mut self, graph: u32) {
        *self.graph_nodes.entry(graph).or_insert(0) += 1;
    }

    /// How many records a launch of the graph of `first` (its first record) expects.
    fn graph_records(&self, first: Option<&Act>) -> usize {
        first
            .and_then(|a| self.graph_nodes.get(&a.graph))
            .map_or(1, |&n| (n as usize).max(1))
    }

    fn call(&mut self, correlation: u32, now_ns: u64) -> &mut Call {
        let generation = self.generation;
        self.calls.entry(correlation).or_insert_with(|| Call {
            generation,
            seen_ns: now_ns,
            ..Call::default()
        })
    }

    /// An external-correlation record.
    pub(crate) fn external(&mut self, kind: u32, id: u64, correlation: u32, now_ns: u64) {
        if kind != self.external_kind {
            return; // somebody else's ids
        }
        self.call(correlation, now_ns).external = Some(id);
        self.settle(correlation, now_ns);
    }

    /// An API record of `thread`, classified by its name.
    pub(crate) fn api(&mut self, correlation: u32, thread: u32, class: ApiClass, now_ns: u64) {
        let expects = match class {
            ApiClass::BeginCapture => {
                self.capturing.insert(thread, true);
                Expect::Nothing
            }
            ApiClass::EndCapture => {
                self.capturing.remove(&thread);
                Expect::Nothing
            }
            ApiClass::Nothing => Expect::Nothing,
            _ if self.capturing.get(&thread) == Some(&true) => {
                self.captured += 1;
                Expect::Nothing
            }
            ApiClass::One => Expect::One,
            ApiClass::Graph => Expect::AtLeastOne,
        };
        self.call(correlation, now_ns).expects = Some(expects);
        self.settle(correlation, now_ns);
    }

    /// An activity record (a kernel, a copy, a set) of call `correlation`.
    pub(crate) fn activity(&mut self, correlation: u32, act: Act, now_ns: u64) {
        if let Some(&(external, _)) = self.done.get(&correlation) {
            self.route(Act { external, ..act });
            return;
        }
        self.call(correlation, now_ns).acts.push(act);
        self.settle(correlation, now_ns);
    }

    /// Route call `correlation` if it is complete.
    fn settle(&mut self, correlation: u32, now_ns: u64) {
        let generation = self.generation;
        let Some(c) = self.calls.get(&correlation) else {
            return;
        };
        let Some(external) = c.external else {
            return;
        };
        let settled_api = generation >= c.generation + 2;
        let complete = match c.expects {
            Some(Expect::Nothing) => true,
            Some(Expect::One) => !c.acts.is_empty(),
            Some(Expect::AtLeastOne) => {
                !c.acts.is_empty() && c.acts.len() >= self.graph_records(c.acts.first())
            }
            None => settled_api,
        };
        let given_up = !complete && now_ns.saturating_sub(c.seen_ns) >= PATIENCE_NS;
        if !(complete || given_up) {
            return;
        }
        if given_up {
            self.missing += 1;
        }
        if let Some(c) = self.calls.remove(&correlation) {
            self.done.insert(correlation, (external, generation));
            for act in c.acts {
                self.route(Act { external, ..act });
            }
        }
    }

    fn route(&mut self, act: Act) {
        let act = Act {
            key: key_of(act.external & position_mask()),
            ..act
        };
        let ns = (act.external >> NAMESPACE_SHIFT) as u16;
        if self.retired.contains(&ns) {
            tally(&mut self.outside, &act);
        } else {
            self.routed.entry(ns).or_default().push(act);
        }
    }

    /// Namespace `ns`'s timeline is gone: what it did not take, and what comes later, counts
    /// as outside any brick.
    pub(crate) fn retire(&mut self, ns: u16) {
        for act in self.routed.remove(&ns).unwrap_or_default() {
            tally(&mut self.outside, &act);
        }
        self.retired.push(ns);
    }

    /// A flush completed: decide what two flushes settle (see the module docs).
    pub(crate) fn flushed(&mut self, now_ns: u64) {
        self.generation += 1;
        let generation = self.generation;
        let old: Vec<u32> = self
            .calls
            .iter()
            .filter(|(_, c)| generation >= c.generation + 2 || c.external.is_some())
            .map(|(k, _)| *k)
            .collect();
        for k in old {
            let external = self.calls.get(&k).and_then(|c| c.external);
            if external.is_some() {
                self.settle(k, now_ns);
            } else if let Some(c) = self.calls.remove(&k) {
                // No external id of ours after two flushes: launched outside any brick.
                for act in &c.acts {
                    tally(&mut self.outside, act);
                }
            }
        }
        self.done.retain(|_, (_, g)| generation < *g + 3);
    }

    /// Whether namespace `ns` has a call at a position below `position` that is not complete.
    pub(crate) fn pending_below(&self, ns: u16, position: u64) -> bool {
        self.calls.values().any(|c| {
            c.external.is_some_and(|e| {
                (e >> NAMESPACE_SHIFT) as u16 == ns && (e & position_mask()) < position
            })
        })
    }

    /// Take the complete records of namespace `ns`.
    pub(crate) fn take(&mut self, ns: u16) -> Vec<Act> {
        self.routed.remove(&ns).unwrap_or_default()
    }

    /// Activity launched outside any brick of any timeline (no external id of ours).
    pub(crate) fn outside(&self) -> Tally {
        self.outside
    }

    /// Launches whose activity record never came ([`PATIENCE_NS`]).
    pub(crate) fn missing(&self) -> u64 {
        self.missing
    }

    /// Launches made during a stream capture (no activity record expected).
    pub(crate) fn captured(&self) -> u64 {
        self.captured
    }
}

/// An activity record before it is joined (its external id not known yet: 0), of graph node
/// `node` of graph `graph` (both 0: launched eagerly).
pub(crate) fn act(op: Op, start: u64, end: u64, device: u32, stream: u32) -> Act {
    Act {
        external: 0,
        key: 0,
        op,
        start,
        end,
        device,
        stream,
        graph_node: 0,
        graph: 0,
    }
}

/// [`act`], of a graph's node.
pub(crate) fn graph_act(base: Act, graph_node: u64, graph: u32) -> Act {
    Act {
        graph_node,
        graph,
        ..base
    }
}

#[cfg(test)]
mod tests {
    use super::super::attribution::{position_of, Attribution};
    use super::super::graph_nodes::GraphNodes;
    use super::super::replays::key_replayed;
    use super::*;

    fn k(position: u64) -> u64 {
        key_of(position)
    }

    /// spec/sync-modes.md "CUPTI": launch APIs expect a record; captures, host functions and
    /// synchronizations do not.
    #[test]
    fn api_names_are_classified() {
        for (name, class) in [
            ("cudaLaunchKernel_v7000", ApiClass::One),
            ("cuLaunchKernel", ApiClass::One),
            ("cudaMemcpyAsync_v3020", ApiClass::One),
            ("cuMemsetD32Async", ApiClass::One),
            ("cudaLaunchHostFunc_v10000", ApiClass::Nothing),
            ("cudaGraphLaunch_v10000", ApiClass::Graph),
            ("cudaStreamBeginCapture_v10000", ApiClass::BeginCapture),
            ("cudaStreamEndCapture_v10000", ApiClass::EndCapture),
            ("cudaStreamSynchronize_v3020", ApiClass::Nothing),
            ("cudaMalloc_v3020", ApiClass::Nothing),
            ("cudaMemPrefetchAsync", ApiClass::Nothing),
        ] {
            assert_eq!(ApiClass::of(name), class, "{name}");
        }
    }

    /// spec/sync-modes.md "CUPTI" ("Completion"): a kernel whose external record comes later
    /// waits for it; one with none after two flushes is outside any brick, never dropped; a
    /// launch whose kernel never comes is given up after the patience and counted.
    #[test]
    fn out_of_order_records_join_and_nothing_is_lost() {
        let mut j = Join::new(4);
        let ns = 1u64 << NAMESPACE_SHIFT;
        // The kernel first, then its API record, then its external record.
        j.activity(7, act(Op::Kernel, 10, 20, 0, 13), 0);
        j.api(7, 1, ApiClass::One, 0);
        assert!(j.take(1).is_empty());
        j.external(4, ns | 5, 7, 0);
        let got = j.take(1);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].external, ns | 5);
        // Another tool's kind is ignored; its kernel is outside any brick after two flushes.
        j.external(3, 99, 8, 0);
        j.activity(8, act(Op::Kernel, 30, 45, 0, 13), 0);
        j.flushed(0);
        assert_eq!(j.outside().kernels, 0, "one flush is not enough");
        j.flushed(0);
        assert_eq!(j.outside().kernels, 1);
        assert_eq!(j.outside().busy_ns, 15);
        // A launch with no kernel yet keeps its position pending, until the patience.
        j.external(4, ns | 6, 9, 100);
        j.api(9, 1, ApiClass::One, 100);
        assert!(j.pending_below(1, 7));
        assert!(!j.pending_below(1, 6));
        j.flushed(100 + PATIENCE_NS);
        assert!(!j.pending_below(1, 7));
        assert_eq!(j.missing(), 1);
    }

    /// One line of the fixture, the fields the join reads.
    #[derive(Debug, serde::Deserialize)]
    struct Line {
        rec: String,
        #[serde(default)]
        api: String,
        #[serde(default)]
        start: u64,
        #[serde(default)]
        end: u64,
        #[serde(default, rename = "correlationId")]
        correlation: u32,
        #[serde(default, rename = "externalId")]
        external: u64,
        #[serde(default, rename = "externalKind")]
        external_kind: u32,
        #[serde(default, rename = "streamId")]
        stream: u32,
        #[serde(default, rename = "deviceId")]
        device: u32,
        #[serde(default, rename = "threadId")]
        thread: u32,
        #[serde(default, rename = "nodeId")]
        node: u64,
        #[serde(default, rename = "originalNodeId")]
        original: u64,
        #[serde(default, rename = "graphId")]
        graph: u32,
        #[serde(default, rename = "graphNodeId")]
        graph_node: u64,
        #[serde(default, rename = "openBrick")]
        open_brick: i64,
    }

    /// The real H200 records (tests/fixtures/cupti/README.md), fed to a join in the order they
    /// were delivered, with one flush at the end: what the fixture's timeline would hold.
    fn fixture() -> (Join, Vec<Act>) {
        let (j, acts, _) = fixture_with_nodes();
        (j, acts)
    }

    /// [`fixture`], with the graph-node callbacks fed too (a node created with brick `b` open
    /// had the capture's external id `9000 + b` on its thread).
    fn fixture_with_nodes() -> (Join, Vec<Act>, GraphNodes) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/cupti/cupti_records.jsonl"
        );
        let text = std::fs::read_to_string(path).expect("the CUPTI fixture");
        // The fixture's program pushed CUSTOM0 (3) ids: 1000 * pass + brick, 9000 + brick in
        // the capture, 7000 + replay around replays.
        let mut j = Join::new(3);
        let mut nodes = GraphNodes::default();
        for line in text.lines() {
            let l: Line = serde_json::from_str(line).expect("a fixture line");
            match l.rec.as_str() {
                "kernel" => j.activity(
                    l.correlation,
                    graph_act(
                        act(Op::Kernel, l.start, l.end, l.device, l.stream),
                        l.graph_node,
                        l.graph,
                    ),
                    0,
                ),
                "node_created" => {
                    let open = u64::try_from(l.open_brick).map_or(0, |b| 9000 + b);
                    nodes.created(l.node, open);
                }
                "node_cloned" => {
                    nodes.cloned(l.node, l.original);
                    j.node_cloned(l.graph);
                }
                "external_correlation" => j.external(l.external_kind, l.external, l.correlation, 0),
                "runtime" => j.api(l.correlation, l.thread, ApiClass::of(&l.api), 0),
                _ => {}
            }
        }
        j.flushed(0);
        j.flushed(0);
        let acts = j.take(0);
        (j, acts, nodes)
    }

    /// spec/sync-modes.md "CUPTI": on the real records, each eager brick's device time is its
    /// two kernels' first start to last end; the captured launches expect no kernel (complete,
    /// nothing pending); the replays' kernels (no external record) are outside any brick of the
    /// capture ids; the replays launched with an id pushed are attributed to that id.
    #[test]
    fn the_h200_fixture_attributes_eager_bricks_exactly() {
        let (j, acts) = fixture();
        let mut a = Attribution::default();
        a.add(acts);
        // Pass 1, brick 0 (external id 1000): correlation 10 starts, correlation 11 ends.
        let s = a.resolve(k(1000), k(1001)).expect("brick 1000 has kernels");
        assert_eq!(s.records, 2);
        assert_eq!(s.first_start, 1_795_759_090_453_334_969);
        assert_eq!(s.last_end, 1_795_759_090_453_345_913);
        assert_eq!(s.last_end - s.first_start, 10_944);
        // Pass 1 as a whole: 6 kernels, 1000..1003.
        let pass = a.resolve(k(1000), k(1003)).unwrap();
        assert_eq!(pass.records, 6);
        assert_eq!(pass.last_end, 1_795_759_090_453_375_641);
        // Pass 0, brick 2: the 6.6 µs + 3.6 µs kernels.
        let b2 = a.resolve(k(2), k(3)).unwrap();
        assert_eq!(
            (b2.first_start, b2.last_end),
            (1_795_759_090_453_308_889, 1_795_759_090_453_322_201)
        );
        // The capture's launches (9000..9003) ran nothing: no kernel, nothing pending.
        assert_eq!(a.resolve(k(9000), k(9003)), None);
        assert!(!j.pending_below(0, 9003));
        assert_eq!(j.captured(), 6);
        // The two replays launched with 7000 and 7001 pushed: six kernels each.
        let r0 = a.resolve(k(7000), k(7001)).unwrap();
        assert_eq!(r0.records, 6);
        assert_eq!(r0.first_start, 1_795_759_090_453_712_185);
        assert_eq!(r0.last_end, 1_795_759_090_453_744_153);
        // The three replays with no id pushed: 18 kernels outside any brick, none dropped.
        assert_eq!(j.outside().kernels, 18);
        assert_eq!(j.missing(), 0);
        // Releasing everything: every routed kernel was claimed by a resolve above except
        // pass 0's bricks 0 and 1 and the second replay (7001).
        a.release_below(u64::MAX);
        assert_eq!(a.outside().kernels, 4 + 6);
        assert_eq!(a.len(), 0);
    }

    /// spec/sync-modes.md "CUPTI" ("Graphs"), on the real records: the captured nodes name
    /// the brick open at their creation; their clones (the executable's nodes, new ids) map
    /// back to it; each replay launched with an id pushed is one pass, and each of its bricks
    /// is exactly its two kernels, first start to last end, keyed by node; the launch is
    /// complete only with all six kernels in, not at its first.
    #[test]
    fn the_h200_fixture_attributes_replays_node_by_node() {
        let (j, mut acts, nodes) = fixture_with_nodes();
        // The capture's bricks were at positions 9000..9002; the pass spans 9000..=9003.
        let template = nodes.template(0, 9000, 9003);
        assert_eq!(template.len(), 6, "six kernels cloned into the executable");
        assert_eq!(
            template[&8_589_934_592], 1,
            "node 0 of graph 2 is brick 0's"
        );
        assert_eq!(template[&8_589_934_597], 3, "node 5 is brick 2's");
        assert!(
            !template.contains_key(&8_589_934_598),
            "never cloned: no brick's"
        );
        for a in acts.iter_mut().filter(|a| a.graph_node != 0) {
            key_replayed(a, &template);
        }
        let replayed: Vec<Act> = acts
            .iter()
            .filter(|a| position_of(a.key) == 7000)
            .copied()
            .collect();
        assert_eq!(replayed.len(), 6);
        let mut a = Attribution::default();
        a.add(acts);
        for r in [7000u64, 7001] {
            let mut whole = (u64::MAX, 0);
            for brick in 0..3u64 {
                let s = a
                    .resolve(k(r) | (brick + 1), k(r) | (brick + 2))
                    .expect("each replayed brick has its kernels");
                assert_eq!(s.records, 2, "replay {r}, brick {brick}");
                whole = (whole.0.min(s.first_start), whole.1.max(s.last_end));
                if r == 7000 {
                    // Nodes 2b and 2b + 1 of graph 2, from the fixture's kernel lines.
                    let mine: Vec<&Act> = replayed
                        .iter()
                        .filter(|x| (x.graph_node & 0xffff_ffff) / 2 == brick)
                        .collect();
                    let first = mine.iter().map(|x| x.start).min().unwrap();
                    let last = mine.iter().map(|x| x.end).max().unwrap();
                    assert_eq!((s.first_start, s.last_end), (first, last));
                }
            }
            let pass = a.resolve(k(r) | 1, k(r) | 4).unwrap();
            assert_eq!((pass.first_start, pass.last_end), whole);
            assert_eq!(pass.records, 6);
        }
        assert_eq!(j.missing(), 0);

        // Completion: a launch of graph 2 with five of its six kernels in is still pending.
        let mut j = Join::new(3);
        for _ in 0..6 {
            j.node_cloned(2);
        }
        j.external(3, 7000, 40, 0);
        j.api(40, 1, ApiClass::Graph, 0);
        for (i, x) in replayed.iter().enumerate() {
            assert!(j.pending_below(0, 7001), "{i} kernels in: not complete");
            j.activity(
                40,
                Act {
                    external: 0,
                    key: 0,
                    ..*x
                },
                0,
            );
        }
        assert!(!j.pending_below(0, 7001), "all six in: complete");
        assert_eq!(j.take(0).len(), 6);
    }
}
