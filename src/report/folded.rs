//! The brick tree as folded stacks (`row;brick;nested brick N`, one line per stack, weighted by
//! self time in ns), the input of flamegraph tools (inferno, Brendan Gregg's flamegraph.pl,
//! speedscope). Built from a saved [`Profile`]: its per-row statistics and its nesting edges
//! (spec/work-accounting.md "Brick tree").
//!
//! A brick reached through more than one chain of parents has its nested time split over those
//! chains in proportion to each chain's share of the parent's inclusive time (the profile keeps
//! direct edges, not whole chains). Every stack's weights add up to the brick's self time in
//! that row; recursion (a brick inside itself) is cut, and its time kept on the outer frame.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::profile::{NestingEdge, Profile, RowKey};

/// Deepest stack written (a deeper chain of nesting edges is cut there).
const MAX_DEPTH: usize = 32;

/// Folded stacks: (stack, self ns), sorted by stack, stacks with no time left out.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, report::folded_stacks};
/// let mut prof = BrickProfiler::default();
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.end_pass(1).unwrap();
/// let stacks = folded_stacks(&prof.profile());
/// assert_eq!(stacks[0].0, "model;RmsNorm");
/// ```
pub fn folded_stacks(profile: &Profile) -> Vec<(String, u64)> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    let tree = Tree { profile };
    for b in &profile.bricks {
        for r in &b.rows {
            let frame_row = frame(&r.row.to_string());
            for (path, fraction) in tree.contexts(&b.name, r.row, 0) {
                let own = tree.own_self(&b.name, r.row, &path);
                let stack = std::iter::once(frame_row.clone())
                    .chain(path.iter().map(|n| frame(n)))
                    .collect::<Vec<_>>()
                    .join(";");
                *out.entry(stack).or_default() += own * fraction;
            }
        }
    }
    out.into_iter()
        .map(|(s, ns)| (s, ns.round() as u64))
        .filter(|&(_, ns)| ns > 0)
        .collect()
}

/// [`folded_stacks`] as text: `stack weight` lines.
pub fn render_folded(profile: &Profile) -> String {
    let mut out = String::new();
    for (stack, ns) in folded_stacks(profile) {
        let _ = writeln!(out, "{stack} {ns}");
    }
    out
}

/// A frame name: printable, without the stack separator.
fn frame(name: &str) -> String {
    crate::printable::printable(name).replace(';', ":")
}

struct Tree<'a> {
    profile: &'a Profile,
}

impl Tree<'_> {
    fn edges_into<'b>(
        &'b self,
        child: &'b str,
        row: RowKey,
    ) -> impl Iterator<Item = &'b NestingEdge> {
        self.profile
            .nesting
            .iter()
            .filter(move |e| e.child == child && e.row == row)
    }

    fn row_stats(&self, brick: &str, row: RowKey) -> Option<&crate::BrickStats> {
        let b = self.profile.brick(brick)?;
        b.rows.iter().find(|r| r.row == row).map(|r| &r.stats)
    }

    /// Every chain of parents that leads to `brick` in `row` (the chain ends with `brick`),
    /// with the fraction of the brick's time spent under it; fractions add up to 1.
    fn contexts(&self, brick: &str, row: RowKey, depth: usize) -> Vec<(Vec<String>, f64)> {
        let total = self.row_stats(brick, row).map_or(0, |s| s.total_ns()) as f64;
        let mut out = Vec::new();
        let mut nested_share = 0.0;
        if depth < MAX_DEPTH && total > 0.0 {
            for e in self.edges_into(brick, row) {
                let share = (e.total_ns as f64 / total).min(1.0 - nested_share);
                if share <= 0.0 || e.parent == brick {
                    continue;
                }
                for (mut path, f) in self.contexts(&e.parent, row, depth + 1) {
                    if path.iter().any(|n| n == brick) {
                        continue; // recursion: keep its time on the outer frame
                    }
                    path.push(brick.to_string());
                    out.push((path, f * share));
                }
                nested_share += share;
            }
        }
        let top = (1.0 - nested_share).max(0.0);
        if top > 0.0 || out.is_empty() {
            out.push((
                vec![brick.to_string()],
                top.max(if out.is_empty() { 1.0 } else { 0.0 }),
            ));
        }
        out
    }

    /// The self time of the brick at the end of `path`, in `row`, for the share of its calls
    /// made under `path`: its whole self time in the row, split like its inclusive time.
    fn own_self(&self, brick: &str, row: RowKey, path: &[String]) -> f64 {
        let Some(s) = self.row_stats(brick, row) else {
            return 0.0;
        };
        // The edge into this brick from the path's parent carries its exact self time there;
        // the top-level share is what the edges do not.
        let into: Vec<&NestingEdge> = self.edges_into(brick, row).collect();
        match path.len().checked_sub(2).and_then(|i| path.get(i)) {
            Some(parent) => {
                let edge_total = into
                    .iter()
                    .filter(|e| &e.parent == parent)
                    .map(|e| e.total_ns)
                    .sum::<u64>();
                let edge_self = into
                    .iter()
                    .filter(|e| &e.parent == parent)
                    .map(|e| e.self_ns)
                    .sum::<u64>();
                // contexts() weighted by inclusive share; scale the edge's self time back.
                if edge_total == 0 {
                    0.0
                } else {
                    edge_self as f64 * s.total_ns() as f64 / edge_total as f64
                }
            }
            None => {
                let nested_total: u64 = into.iter().map(|e| e.total_ns).sum();
                let nested_self: u64 = into.iter().map(|e| e.self_ns).sum();
                let top_total = s.total_ns().saturating_sub(nested_total);
                let top_self = s.self_ns().saturating_sub(nested_self);
                if top_total == 0 {
                    top_self as f64
                } else {
                    top_self as f64 * s.total_ns() as f64 / top_total as f64
                }
            }
        }
    }
}
