//! spec/work-accounting.md "Brick tree": the folded stacks of any nesting.
//!
//! Invariant: for arbitrary nesting (bricks inside themselves directly or through others,
//! chains deeper than 32, bricks stopped out of order, layers changed while bricks are open),
//! and for arbitrary nesting edges written into a profile by hand (cycles, totals larger than
//! the bricks'), every row's folded stack values add up to exactly the self time of that row's
//! bricks, and no stack has more than 32 brick frames below its row frame, nor more than one
//! `…` cut marker (so at most 33 frames below the row frame, the marker counted).

use proptest::prelude::*;

use super::mock_profiler;
use crate::output::chains::{CUT, MAX_FRAMES};
use crate::output::folded_stacks;
use crate::profile::NestingEdge;
use crate::{Profile, ProfilerConfig};

/// Names from a small set, so bricks meet themselves.
const NAMES: [&str; 5] = ["a", "b", "c", "d", "e"];

#[derive(Debug, Clone, Copy)]
enum Step {
    /// Start brick `NAMES[i]` inside the innermost open one.
    Start(usize),
    /// Start `n` bricks, each inside the one before, 1 ns apart (deep chains).
    Dive(usize, usize),
    /// Stop the `k % open`-th open brick (in start order).
    Stop(usize),
    Advance(u64),
    /// Attribute the following bricks to layer `n` (`None`: the model row).
    Layer(Option<usize>),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..NAMES.len()).prop_map(Step::Start),
        1 => (0..NAMES.len(), 0usize..40).prop_map(|(i, n)| Step::Dive(i, n)),
        3 => (0usize..50).prop_map(Step::Stop),
        4 => (0u64..1_000).prop_map(Step::Advance),
        1 => proptest::option::of(0usize..2).prop_map(Step::Layer),
    ]
}

fn run(script: &[Step]) -> Profile {
    let (mock, mut prof) = mock_profiler(ProfilerConfig::with_layers(2));
    let handles: Vec<_> = NAMES
        .iter()
        .map(|n| prof.register(n, crate::BrickCategory::Other).unwrap())
        .collect();
    // Deep chains need their own names, or every brick would be a recursion.
    let deep: Vec<_> = (0..40)
        .map(|i| {
            prof.register(&format!("deep{i:02}"), crate::BrickCategory::Other)
                .unwrap()
        })
        .collect();
    let mut open = Vec::new();
    for &s in script {
        match s {
            Step::Start(i) => open.push(prof.start_brick(handles[i])),
            Step::Dive(i, n) => {
                open.push(prof.start_brick(handles[i]));
                for h in &deep[..n] {
                    mock.increment(1);
                    open.push(prof.start_brick(*h));
                }
            }
            Step::Stop(k) if !open.is_empty() => {
                let t = open.remove(k % open.len());
                prof.stop_brick(t, 1);
            }
            Step::Stop(_) => {}
            Step::Advance(ns) => mock.increment(ns),
            Step::Layer(Some(n)) => prof.begin_layer(n),
            Step::Layer(None) => prof.end_layer(),
        }
    }
    while let Some(t) = open.pop() {
        mock.increment(1);
        prof.stop_brick(t, 1);
    }
    prof.end_pass(1).unwrap();
    prof.profile()
}

/// The invariant of the module docs.
fn check(p: &Profile) -> Result<(), TestCaseError> {
    let stacks = folded_stacks(p);
    let mut rows: Vec<String> = Vec::new();
    for b in &p.bricks {
        for r in &b.rows {
            rows.push(r.row.to_string());
        }
    }
    rows.sort();
    rows.dedup();
    for row in &rows {
        let want: u64 = p
            .bricks
            .iter()
            .flat_map(|b| b.rows.iter().filter(|r| &r.row.to_string() == row))
            .map(|r| r.stats.self_ns())
            .sum();
        let got: u64 = stacks
            .iter()
            .filter(|(s, _)| s.split(';').next() == Some(row.as_str()))
            .map(|s| s.1)
            .sum();
        prop_assert_eq!(got, want, "row {}: {:?}", row, stacks);
    }
    for (stack, ns) in &stacks {
        prop_assert!(*ns > 0);
        prop_assert!(rows
            .iter()
            .any(|r| stack.split(';').next() == Some(r.as_str())));
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        let cuts = frames.iter().filter(|&&f| f == CUT).count();
        prop_assert!(cuts <= 1, "{}", stack);
        prop_assert!(frames.len() - cuts <= MAX_FRAMES, "{}", stack);
        prop_assert!(!frames.is_empty(), "{}", stack);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Invariant: see the module docs (recorded nesting).
    #[test]
    fn recorded_nesting_folds_into_stacks_that_add_up(
        script in proptest::collection::vec(step(), 0..80)
    ) {
        let p = run(&script);
        check(&p)?;
    }

    /// Invariant: see the module docs (nesting edges edited by hand: any parent, any child,
    /// any totals; `folded_stacks` takes a profile that was never validated).
    #[test]
    fn any_edges_fold_into_stacks_that_add_up(
        script in proptest::collection::vec(step(), 0..40),
        edges in proptest::collection::vec(
            (0..NAMES.len(), 0..NAMES.len(), 0usize..3, any::<u64>(), any::<u64>(), 0u64..2_000),
            0..30,
        ),
    ) {
        let mut p = run(&script);
        let rows: Vec<_> = p.bricks.iter().flat_map(|b| b.rows.iter().map(|r| r.row)).collect();
        if rows.is_empty() {
            return Ok(());
        }
        p.nesting = edges
            .into_iter()
            .map(|(parent, child, row, big, small, total)| NestingEdge {
                parent: NAMES[parent].to_string(),
                child: NAMES[child].to_string(),
                phase: Default::default(),
                row: rows[row % rows.len()],
                calls: 1,
                total_ns: if big % 4 == 0 { big } else { total },
                self_ns: if small % 4 == 0 { small } else { total / 2 },
            })
            .collect();
        check(&p)?;
    }
}
