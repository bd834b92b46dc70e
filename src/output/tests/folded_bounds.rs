//! spec/work-accounting.md "Brick tree": folding the tree is bounded work, whatever the edges.

use super::mock_profiler;
use crate::output::folded_stacks;
use crate::ProfilerConfig;

/// Frames below the row frame.
fn frames(stack: &str) -> Vec<&str> {
    stack.split(';').skip(1).collect()
}

#[test]
fn any_nesting_edges_are_folded_in_bounded_work() {
    // spec/work-accounting.md "Brick tree": the walk down the tree takes at most
    // `folded::MAX_STEPS` steps, whatever the edges. Before: every chain of parents was
    // enumerated, so 24 bricks each nested in every other one (a loadable profile: each brick
    // called once under each of the others) meant some 23^31 chains, and it never returned.
    let (mock, mut prof) = mock_profiler(ProfilerConfig::with_layers(1));
    let names: Vec<String> = (0..24).map(|i| format!("n{i:02}")).collect();
    prof.begin_layer(0);
    for n in &names {
        let h = prof.register(n, crate::BrickCategory::Other).unwrap();
        for _ in 0..names.len() {
            let t = prof.start_brick(h);
            mock.increment(1_000);
            prof.stop_brick(t, 1);
        }
    }
    prof.end_layer();
    prof.end_pass(1).unwrap();
    let mut p = prof.profile();
    let row = p.bricks[0].rows[0].row;
    for parent in &names {
        for child in names.iter().filter(|c| *c != parent) {
            p.nesting.push(crate::profile::NestingEdge {
                parent: parent.clone(),
                child: child.clone(),
                phase: Default::default(),
                row,
                calls: 1,
                total_ns: 1_000,
                self_ns: 1_000,
            });
        }
    }
    let stacks = folded_stacks(&p);
    assert_eq!(stacks.iter().map(|s| s.1).sum::<u64>(), p.total_ns());
    assert!(stacks.len() <= crate::output::folded::MAX_STEPS + names.len());
    assert!(stacks.iter().all(|(s, _)| frames(s).len() <= 33));
}
