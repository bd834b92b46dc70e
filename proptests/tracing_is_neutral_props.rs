//! spec/hot-path.md "Tokens" and "Self time", spec/traces.md: the trace is an observer. A
//! profiler that also logs every measurement into its trace records exactly the statistics and
//! counts of one that does not, whatever order bricks stop in, whatever is leaked, and across
//! flushes of a small pending buffer (resolving at a flush logs trace events mid-pass).

use brickprof::{BrickHandle, BrickId, BrickProfiler, BrickToken, ProfilerConfig};
use proptest::prelude::*;

use crate::common::mock_profiler;

const LAYERS: usize = 2;

/// One step of a script an engine might run.
#[derive(Debug, Clone)]
enum Op {
    /// Start a brick (index into `BrickId::ALL`) in a layer (or the model row).
    Start(usize, Option<usize>),
    /// Stop the `n % open`-th open token: any order, not only the innermost.
    Stop(usize),
    /// Let the mock clock run.
    Advance(u64),
    /// End the pass: tokens still open are leaked (counted unclosed; stopping them later is a
    /// stray stop).
    EndPass,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..BrickId::ALL.len(), proptest::option::of(0..LAYERS + 1))
            .prop_map(|(b, l)| Op::Start(b, l)),
        4 => (0usize..8).prop_map(Op::Stop),
        3 => (0u64..5_000).prop_map(Op::Advance),
        1 => Just(Op::EndPass),
    ]
}

fn run(ops: &[Op], trace_capacity: usize, pending_capacity: usize) -> BrickProfiler {
    let (mock, mut prof) = mock_profiler(ProfilerConfig {
        layers: LAYERS,
        trace_capacity,
        pending_capacity,
        ..ProfilerConfig::default()
    });
    let mut open: Vec<BrickToken> = Vec::new();
    for op in ops {
        match *op {
            Op::Start(b, layer) => {
                match layer {
                    Some(l) => prof.begin_layer(l),
                    None => prof.end_layer(),
                }
                open.push(prof.start_brick(BrickId::ALL[b]));
            }
            Op::Stop(n) => {
                if !open.is_empty() {
                    let t = open.remove(n % open.len());
                    prof.stop_brick(t, 1);
                }
            }
            Op::Advance(ns) => mock.increment(ns),
            Op::EndPass => prof.end_pass(1).unwrap(),
        }
    }
    for t in open {
        prof.stop_brick(t, 1);
    }
    prof.end_pass(1).unwrap();
    prof
}

proptest! {
    /// Invariant: with and without a trace, every (row, brick) cell's statistics and every
    /// counter but `trace_dropped` are identical, for any script of starts, stops in any
    /// order, leaks and pass ends, with or without flushes.
    #[test]
    fn tracing_does_not_change_what_is_recorded(
        ops in proptest::collection::vec(op(), 0..120),
        pending in prop_oneof![Just(4usize), Just(4096usize)],
    ) {
        let plain = run(&ops, 0, pending);
        let traced = run(&ops, 1 << 12, pending);
        let mut counters = traced.view().counters;
        counters.trace_dropped = 0; // only the traced one has a trace to overflow
        prop_assert_eq!(plain.view().counters, counters);
        for b in BrickId::ALL.iter().copied().map(BrickHandle::from) {
            prop_assert_eq!(plain.view().brick_stats(b), traced.view().brick_stats(b));
            for l in 0..LAYERS {
                prop_assert_eq!(plain.view().row_stats(brickprof::model::PhaseFilter::All, brickprof::profile::RowKey::Layer(l), b), traced.view().row_stats(brickprof::model::PhaseFilter::All, brickprof::profile::RowKey::Layer(l), b));
            }
        }
        prop_assert_eq!(plain.profile().total_ns(), traced.profile().total_ns());
    }
}
