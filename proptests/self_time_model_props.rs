//! spec/hot-path.md "Self time", in every sync mode against one model of the spec.
//!
//! A script starts bricks (each nested in the innermost open one), advances the clock, and
//! stops the open bricks in any order. The model computes, from the start and stop times
//! alone, each brick's inclusive time (its own stop minus its own start) and self time
//! (inclusive minus the overlap of its direct children with it, clamped at zero). Every sync
//! mode, with a large and a small pending buffer, must record exactly those numbers.

use brickprof::{BrickId, ProfilerConfig, SyncMode};
use proptest::prelude::*;

use crate::common::mock_profiler;

/// One step of a script.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// Start a new brick inside the innermost open one.
    Start,
    /// Stop the `k % open`-th open brick (in start order).
    Stop(usize),
    /// Let `ns` nanoseconds pass.
    Advance(u64),
}

/// What the spec says each brick records: (inclusive, self) in start order.
pub fn model(script: &[Step]) -> Vec<(u64, u64)> {
    let mut now = 0u64;
    // (start, stop, parent)
    let mut bricks: Vec<(u64, Option<u64>, Option<usize>)> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for &s in script {
        match s {
            Step::Start => {
                bricks.push((now, None, open.last().copied()));
                open.push(bricks.len() - 1);
            }
            Step::Stop(k) if !open.is_empty() => {
                let b = open.remove(k % open.len());
                bricks[b].1 = Some(now);
            }
            Step::Stop(_) => {}
            Step::Advance(ns) => now += ns,
        }
    }
    // Every brick is stopped at the end, innermost first.
    for &b in open.iter().rev() {
        bricks[b].1 = Some(now);
    }
    let stop = |b: usize| bricks[b].1.unwrap_or(now);
    (0..bricks.len())
        .map(|b| {
            let inclusive = stop(b) - bricks[b].0;
            let overlap: u64 = (0..bricks.len())
                .filter(|&c| bricks[c].2 == Some(b))
                .map(|c| stop(c).min(stop(b)).saturating_sub(bricks[c].0))
                .sum();
            (inclusive, inclusive.saturating_sub(overlap))
        })
        .collect()
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Start),
        3 => (0usize..8).prop_map(Step::Stop),
        4 => (1u64..1_000).prop_map(Step::Advance),
    ]
}

/// Each started brick gets its own built-in brick id, so per-brick statistics are
/// per-measurement.
const MAX_BRICKS: usize = 12;

fn script() -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec(step(), 0..60).prop_map(|steps| {
        let mut started = 0;
        steps
            .into_iter()
            .filter(|s| {
                if matches!(s, Step::Start) {
                    started += 1;
                    started <= MAX_BRICKS
                } else {
                    true
                }
            })
            .collect()
    })
}

const MODES: [SyncMode; 5] = [
    SyncMode::Deferred,
    SyncMode::Lagged,
    SyncMode::Immediate,
    SyncMode::PerLayer,
    SyncMode::None,
];

/// Run `script` in `mode`; the (inclusive, self) each brick recorded, in start order.
pub fn run(mode: SyncMode, capacity: usize, script: &[Step]) -> Vec<(u64, u64)> {
    let (mock, mut prof) = mock_profiler(ProfilerConfig {
        sync_mode: mode,
        pending_capacity: capacity,
        ..ProfilerConfig::default()
    });
    let mut open = Vec::new();
    let mut started = 0;
    for &s in script {
        match s {
            Step::Start => {
                open.push(prof.start_brick(BrickId::ALL[started]));
                started += 1;
            }
            Step::Stop(k) if !open.is_empty() => {
                let t = open.remove(k % open.len());
                prof.stop_brick(t, 1);
            }
            Step::Stop(_) => {}
            Step::Advance(ns) => mock.increment(ns),
        }
    }
    while let Some(t) = open.pop() {
        prof.stop_brick(t, 1);
    }
    prof.end_pass(1).unwrap();
    assert_eq!(
        prof.view().counters.dropped,
        0,
        "{mode}: capacity {capacity}"
    );
    (0..started)
        .map(|b| {
            let s = prof.view().brick_stats(BrickId::ALL[b]);
            assert_eq!(s.summary().count, 1, "{mode}: brick {b} recorded once");
            (s.summary().total_ns, s.summary().self_ns)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Invariant: whatever the stop order, every sync mode records each brick's inclusive and
    /// self time exactly as the spec's model computes them, with a pending buffer that never
    /// fills and with one just large enough to flush mid-pass.
    #[test]
    fn every_sync_mode_records_what_the_spec_model_says(script in script()) {
        let expected = model(&script);
        for mode in MODES {
            for capacity in [4096, MAX_BRICKS] {
                let got = run(mode, capacity, &script);
                prop_assert_eq!(&got, &expected, "{} capacity {}", mode, capacity);
            }
        }
    }
}

#[test]
fn the_issue_script_b2_b0_b3_b1_records_b0_self_100ns_in_every_mode() {
    // Four nested bricks B0 > B1 > B2 > B3, 100 ns apart, stopped B2, B0, B3, B1: B0's self
    // time is its 500 ns minus its open child B1's 400 ns overlap.
    use Step::*;
    let script = [
        Start,
        Advance(100),
        Start,
        Advance(100),
        Start,
        Advance(100),
        Start,
        Advance(100),
        Stop(2), // B2
        Advance(100),
        Stop(0), // B0
        Advance(100),
        Stop(1), // B3 (open now: B1, B3)
        Advance(100),
        Stop(0), // B1
    ];
    let expected = model(&script);
    assert_eq!(expected[0], (500, 100), "the model itself");
    for mode in MODES {
        assert_eq!(run(mode, 4096, &script), expected, "{mode}");
    }
}
