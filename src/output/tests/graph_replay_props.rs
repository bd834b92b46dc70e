//! spec/sync-modes.md "Graph capture" on the simulated device (moved from
//! proptests/graph_replay_props.rs when the device's kernel log stopped being public): random
//! interleavings of eager
//! passes and replays of adopted and unadopted graphs, with an engine that reads back, works
//! on the host, or races ahead, in every sync mode that marks the device.

use crate::{
    timeline::{DeviceGraph, SimDevice},
    BrickId, BrickProfiler, ProfilerConfig, SyncMode,
};
use proptest::prelude::*;

fn brick() -> impl Strategy<Value = BrickId> {
    (0..BrickId::ALL.len()).prop_map(|i| BrickId::ALL[i])
}

/// A pass's bricks, in order: each one brick around one kernel of this many ns.
type Layout = Vec<(BrickId, u64)>;

/// What the engine does next.
#[derive(Debug, Clone)]
enum Op {
    /// An eager pass of layout `i`.
    Eager(usize),
    /// A replay of graph `i` (the last one is captured and never adopted).
    Replay(usize),
    /// The host works this many ns (sampling, scheduling).
    HostWork(u64),
    /// The engine waits for the device (reads its output back).
    ReadBack,
}

fn layout() -> impl Strategy<Value = Layout> {
    proptest::collection::vec((brick(), 1_000u64..500_000), 1..6)
}

fn op(graphs: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0..graphs).prop_map(Op::Eager),
        3 => (0..graphs).prop_map(Op::Replay),
        1 => (0u64..2_000_000).prop_map(Op::HostWork),
        1 => Just(Op::ReadBack),
    ]
}

fn pass(prof: &mut BrickProfiler<crate::timeline::SimTimeline>, device: &SimDevice, l: &Layout) {
    for &(b, ns) in l {
        let t = prof.start_brick(b);
        device.launch(ns);
        prof.stop_brick(t, 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Invariant: whatever the interleaving of eager passes and replays, the sync mode and the
    /// passes allowed in flight, the books equal the device's truth: each brick's calls, total,
    /// minimum and maximum are those of the kernels it timed (every replay's drawn anew by the
    /// jitter), in the timed passes only (an eager brick may add the launch gap after a sync,
    /// at most the overhead a call; a replay's bricks never do); every replay of an adopted graph is a timed pass and
    /// every replay of the unadopted one is counted, not timed, and named.
    #[test]
    fn books_equal_the_devices_truth(
        layouts in proptest::collection::vec(layout(), 3),
        ops in proptest::collection::vec(op(3), 0..60),
        mode_i in 0usize..4,
        max_in_flight in 1usize..5,
        seed in any::<u64>(),
        overhead in 0u64..5_000,
    ) {
        let mode = [SyncMode::Immediate, SyncMode::PerLayer, SyncMode::Deferred,
                    SyncMode::Lagged][mode_i];
        let device = SimDevice::with_jitter(overhead, seed, 20_000);
        let config = ProfilerConfig {
            sync_mode: mode,
            pending_capacity: 64,
            max_passes_in_flight: max_in_flight,
            ..ProfilerConfig::default()
        };
        let pool = 2 * 64 + 2 + crate::model::Limit::PassesInFlight.max();
        let mut prof = BrickProfiler::with_timeline(config, device.timeline(pool)).unwrap();
        // Three graphs captured; the first two adopted.
        let mut graphs: Vec<DeviceGraph> = Vec::new();
        for (i, l) in layouts.iter().enumerate() {
            let g = device
                .capture(|| {
                    pass(&mut prof, &device, l);
                    prof.end_pass(1)
                })
                .unwrap();
            if i < 2 {
                prof.graphs().adopt(g).unwrap();
            }
            graphs.push(g);
        }
        device.log_kernels(true);
        // Which layout each run pass had, and whether it was timed.
        let mut ran: Vec<(usize, bool)> = Vec::new();
        for op in &ops {
            match *op {
                Op::Eager(i) => {
                    prof.begin_pass();
                    pass(&mut prof, &device, &layouts[i]);
                    prof.end_pass(1).unwrap();
                    ran.push((i, true));
                }
                Op::Replay(i) => {
                    let r = prof.graphs().begin_replay(graphs[i]).unwrap();
                    device.launch_graph(&graphs[i]).unwrap();
                    prof.graphs().end_replay(r, 1).unwrap();
                    ran.push((i, i < 2));
                }
                Op::HostWork(ns) => device.host_work(ns),
                Op::ReadBack => device.synchronize(),
            }
        }
        prof.finalize().unwrap();
        // The truth: each pass's kernels, in order, from the log.
        let log = device.take_kernel_log();
        let mut truth: Vec<Vec<u64>> = vec![Vec::new(); BrickId::ALL.len()];
        // Calls timed in eager passes: each may add the launch overhead's gap.
        let mut eager_calls = [0u64; BrickId::ALL.len()];
        let mut at = 0;
        for (&(i, timed), op) in ran.iter().zip(ops.iter().filter(|o| {
            matches!(o, Op::Eager(_) | Op::Replay(_))
        })) {
            for &(b, _) in &layouts[i] {
                if timed {
                    truth[b as usize].push(log[at]);
                    if matches!(op, Op::Eager(_)) {
                        eager_calls[b as usize] += 1;
                    }
                }
                at += 1;
            }
        }
        prop_assert_eq!(at, log.len());
        for b in BrickId::ALL {
            let s = prof.view().brick_stats(b);
            let t = &truth[b as usize];
            let sum = t.iter().sum::<u64>();
            prop_assert_eq!(s.summary().count, t.len() as u64);
            // A replay's bricks are exact; an eager brick may also hold the launch gap after
            // a sync (spec/sync-modes.md "Modes"): within [kernel, kernel + overhead].
            let slack = overhead * eager_calls[b as usize];
            prop_assert!(s.summary().total_ns >= sum && s.summary().total_ns <= sum + slack,
                "{:?} in {}: {} not in [{}, {}]", b, mode, s.summary().total_ns, sum, sum + slack);
            if slack == 0 {
                prop_assert_eq!(
                    (s.summary().total_ns, s.summary().min_ns, s.summary().max_ns),
                    (sum, t.iter().copied().min().unwrap_or(0),
                     t.iter().copied().max().unwrap_or(0)),
                    "{:?} in {}", b, mode
                );
            }
        }
        let c = prof.view().counters;
        let replays = ops.iter().filter(|o| matches!(o, Op::Replay(i) if *i < 2)).count();
        let untimed = ops.iter().filter(|o| matches!(o, Op::Replay(2))).count();
        prop_assert_eq!(c.graph_replays, replays as u64);
        prop_assert_eq!(c.untimed_replays, untimed as u64);
        prop_assert_eq!(c.passes, ran.iter().filter(|r| r.1).count() as u64);
        prop_assert_eq!((c.captured_passes, c.dropped, c.unclosed), (3, 0, 0));
        let named = prof.profile().meta.untimed_graphs;
        prop_assert_eq!(named, if untimed > 0 { vec![graphs[2].exec()] } else { vec![] });
    }
}
