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
//! A call whose expected record has not come after [`PATIENCE_NS`] is given up and counted
//! ([`Join::missing`]), so that no pass waits forever on a record CUPTI never writes.

use std::collections::HashMap;

use super::attribution::{Act, Tally};
use super::records::Op;

/// How long a launch may wait for its activity record before it is given up (host ns).
pub(crate) const PATIENCE_NS: u64 = 10_000_000_000;

/// Bits of an external id below the timeline's namespace: `id = namespace << 48 | position`.
pub(crate) const NAMESPACE_SHIFT: u32 = 48;

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
    /// A graph launch: complete with its first record (spec: graph replays are not yet
    /// attributed node by node).
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
        }
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
            Some(Expect::One | Expect::AtLeastOne) => !c.acts.is_empty(),
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
        let ns = (act.external >> NAMESPACE_SHIFT) as u16;
        if self.retired.contains(&ns) {
            self.outside.add(&act);
        } else {
            self.routed.entry(ns).or_default().push(act);
        }
    }

    /// Namespace `ns`'s timeline is gone: what it did not take, and what comes later, counts
    /// as outside any brick.
    pub(crate) fn retire(&mut self, ns: u16) {
        for act in self.routed.remove(&ns).unwrap_or_default() {
            self.outside.add(&act);
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
                    self.outside.add(act);
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

/// The position bits of an external id.
pub(crate) const fn position_mask() -> u64 {
    (1u64 << NAMESPACE_SHIFT) - 1
}

/// An activity record before it is joined (its external id not known yet: 0).
pub(crate) fn act(op: Op, start: u64, end: u64, device: u32, stream: u32) -> Act {
    Act {
        external: 0,
        op,
        start,
        end,
        device,
        stream,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
