//! The brick tree as folded stacks (`row;brick;nested brick N`, one line per stack, weighted by
//! self time in ns), the input of flamegraph tools (inferno, Brendan Gregg's flamegraph.pl,
//! speedscope). Built from a saved [`Profile`]: its per-row statistics and its nesting edges
//! (spec/work-accounting.md "Brick tree").
//!
//! The profile keeps direct edges, not whole chains, so the chains are rebuilt by walking down
//! from each brick's top-level time: a brick's share of its parent's chains is its edge's share
//! of its own inclusive time, so a brick reached through more than one chain of parents has
//! its time split over them in proportion to each chain's share of the parent's inclusive
//! time. Each share carries the self time of its edge (or of the brick's top-level calls).
//! Recursion (a brick inside itself, directly or through others) is cut onto the outer frame,
//! which keeps its time; chains deeper than [`MAX_FRAMES`] bricks end in one [`CUT`] frame
//! (`super::chains`). Then each brick's self time in the row is apportioned over its chains in
//! whole nanoseconds, so every row's stacks add up to exactly its bricks' self time.
//!
//! Bounded whatever the edges say: the walk takes at most [`MAX_STEPS`] steps for a profile;
//! a brick it never reached (past that bound, or under edges that lead to no top-level time)
//! is drawn as `row;…;brick`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::fmt::Write as _;

use super::chains::CUT;
use super::chains::{Chain, Chains, Frame, CUT_FRAME};
use crate::profile::{NestingEdge, Profile, RowKey};

/// The most steps (one share of a brick's time handed to a child, on one chain) the walk takes
/// for a whole profile: a real profile takes a few per (row, brick) cell; crafted edges stop
/// here.
pub(crate) const MAX_STEPS: usize = 1 << 18;

/// A share below this fraction of a brick's time is not walked further (a cycle's time
/// shrinks by its shares at every turn).
const NEGLIGIBLE: f64 = 1e-9;

/// Folded stacks: (stack, self ns), sorted by stack, stacks with no time left out. Each row's
/// values add up to the self time of its bricks there; no stack has more than `MAX_FRAMES`
/// brick frames below its row frame, nor more than one `CUT` frame.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, output::folded_stacks};
/// let mut prof = BrickProfiler::default();
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.end_pass(1).unwrap();
/// let stacks = folded_stacks(&prof.profile());
/// assert_eq!(stacks[0].0, "model;RmsNorm");
/// ```
pub fn folded_stacks(profile: &Profile) -> Vec<(String, u64)> {
    let profile = &*crate::profile::phase_view::folded(profile, crate::model::PhaseFilter::All);
    let mut names = Names::default();
    // (brick, inclusive ns, self ns) per row, and the edges of each row.
    let mut cells: BTreeMap<RowKey, Vec<(Frame, u64, u64)>> = BTreeMap::new();
    for b in &profile.bricks {
        let f = names.frame(&b.name);
        for r in &b.rows {
            cells
                .entry(r.row)
                .or_default()
                .push((f, r.stats.total_ns(), r.stats.self_ns()));
        }
    }
    let mut edges: BTreeMap<RowKey, Vec<(Frame, Frame, &NestingEdge)>> = BTreeMap::new();
    for e in &profile.nesting {
        let (parent, child) = (names.frame(&e.parent), names.frame(&e.child));
        edges.entry(e.row).or_default().push((parent, child, e));
    }
    let mut steps = MAX_STEPS;
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for (row, cells) in &cells {
        let row_edges = edges.get(row).map_or(&[][..], Vec::as_slice);
        let graph = RowGraph::new(cells, row_edges);
        let mut chains = Chains::new();
        let reached = graph.walk(&mut chains, &mut steps);
        let row_frame = frame(&row.to_string());
        for (chain, ns) in graph.apportion(&mut chains, &reached) {
            if ns == 0 {
                continue;
            }
            let stack = std::iter::once(row_frame.clone())
                .chain(chains.frames(chain).into_iter().map(|f| names.render(f)))
                .collect::<Vec<_>>()
                .join(";");
            let v = out.entry(stack).or_default();
            *v = v.saturating_add(ns);
        }
    }
    out.into_iter().collect()
}

/// [`folded_stacks`] as text: `stack weight` lines.
pub(crate) fn render_folded(profile: &Profile) -> String {
    let mut out = String::new();
    for (stack, ns) in folded_stacks(profile) {
        let _ = writeln!(out, "{stack} {ns}");
    }
    out
}

/// A frame name: printable, without the stack separator.
fn frame(name: &str) -> String {
    crate::base::printable::printable(name).replace(';', ":")
}

/// Brick names and their frames.
#[derive(Default)]
struct Names<'a> {
    names: Vec<&'a str>,
    index: HashMap<&'a str, Frame>,
}

impl<'a> Names<'a> {
    fn frame(&mut self, name: &'a str) -> Frame {
        *self.index.entry(name).or_insert_with(|| {
            self.names.push(name);
            (self.names.len() - 1) as Frame
        })
    }

    fn render(&self, f: Frame) -> String {
        match self.names.get(f as usize) {
            Some(name) if f != CUT_FRAME => frame(name),
            _ => CUT.to_string(),
        }
    }
}

/// A child's share of its parent's chains: `share` of the child's inclusive time runs inside
/// the parent, with `self_per_ns` ns of self time per ns of it.
#[derive(Debug, Clone, Copy)]
struct Flow {
    child: Frame,
    share: f64,
    self_per_ns: f64,
}

/// One row's bricks and edges, as shares.
struct RowGraph {
    /// (inclusive, self) ns of each brick in the row.
    time: HashMap<Frame, (u64, u64)>,
    /// Bricks in the row, in the profile's order.
    order: Vec<Frame>,
    /// Where time starts: each brick's top-level share, and the whole of a parent that has
    /// no time of its own in this row.
    roots: Vec<(Frame, f64, f64)>,
    /// Each parent's children.
    flows: HashMap<Frame, Vec<Flow>>,
}

/// A chain of a brick waiting to hand its time to the brick's children, largest first.
struct Step {
    ns: f64,
    seq: usize,
    chain: Chain,
    brick: Frame,
}

impl PartialEq for Step {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Step {}
impl PartialOrd for Step {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Step {
    /// The largest share first; the earlier of two equal ones.
    fn cmp(&self, other: &Self) -> Ordering {
        self.ns
            .total_cmp(&other.ns)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// What the walk gave a brick on one chain.
#[derive(Debug, Default, Clone, Copy)]
struct Reach {
    /// Share of the brick's inclusive time.
    fraction: f64,
    /// Self time, ns.
    self_ns: f64,
    /// Whether its share was handed to its children already.
    walked: bool,
}

/// What the walk gave each brick on each chain it reached.
type Reached = HashMap<(Frame, Chain), Reach>;

impl RowGraph {
    fn new(cells: &[(Frame, u64, u64)], edges: &[(Frame, Frame, &NestingEdge)]) -> RowGraph {
        let mut g = RowGraph {
            time: HashMap::new(),
            order: Vec::new(),
            roots: Vec::new(),
            flows: HashMap::new(),
        };
        for &(brick, total, own) in cells {
            // One entry per brick (a profile built by hand may name one twice).
            let t = g.time.entry(brick).or_insert_with(|| {
                g.order.push(brick);
                (0, 0)
            });
            *t = (t.0.saturating_add(total), t.1.saturating_add(own));
        }
        let mut into: HashMap<Frame, Vec<(Frame, u64, u64)>> = HashMap::new();
        for &(parent, child, e) in edges {
            into.entry(child)
                .or_default()
                .push((parent, e.total_ns, e.self_ns));
        }
        for &child in &g.order {
            let (total, own) = g.time[&child];
            let edges = into.get(&child).map_or(&[][..], Vec::as_slice);
            let (flows, top) = shares(child, total, own, edges);
            for (parent, flow) in flows {
                g.flows.entry(parent).or_default().push(flow);
            }
            g.roots
                .extend(top.map(|(share, self_per_ns)| (child, share, self_per_ns)));
        }
        // A parent with no time of its own in this row (it ran in another row): its children
        // start under it.
        let mut parents: Vec<Frame> = g
            .flows
            .keys()
            .copied()
            .filter(|p| g.time.get(p).is_none_or(|t| t.0 == 0))
            .collect();
        parents.sort_unstable();
        g.roots.extend(parents.into_iter().map(|p| (p, 1.0, 0.0)));
        g
    }

    /// Hand each brick's time down its chains, largest shares first, in at most `steps`
    /// steps. A chain hands its share on once: everything that reaches it before then
    /// (its parent chain's share, and its top-level time) goes on to the children; what reaches
    /// it later (a recursion folded onto its outer frame, or more time landing on a cut) stays
    /// on it. So no cycle is walked twice, and the walk ends.
    fn walk(&self, chains: &mut Chains, steps: &mut usize) -> Reached {
        let mut reached = Reached::new();
        let mut queue = BinaryHeap::new();
        let mut seq = 0;
        let inclusive = |brick: &Frame| self.time.get(brick).map_or(0, |t| t.0) as f64;
        // Add a share to a chain; the chain to walk, if it has not been walked yet.
        let mut put = |reached: &mut Reached, brick, chain, fraction: f64, self_per_ns: f64| {
            let r = reached.entry((brick, chain)).or_default();
            r.fraction += fraction;
            r.self_ns += fraction * inclusive(&brick) * self_per_ns;
            seq += 1;
            (!r.walked).then_some(Step {
                ns: r.fraction * inclusive(&brick),
                seq,
                chain,
                brick,
            })
        };
        for &(brick, fraction, self_per_ns) in &self.roots {
            let chain = chains.nest(Chains::ROOT, brick);
            queue.extend(put(&mut reached, brick, chain, fraction, self_per_ns));
        }
        while let Some(step) = queue.pop() {
            let Some(r) = reached.get_mut(&(step.brick, step.chain)) else {
                continue;
            };
            if r.walked {
                continue;
            }
            r.walked = true;
            let from = r.fraction;
            for f in self.flows.get(&step.brick).map_or(&[][..], Vec::as_slice) {
                let fraction = from * f.share;
                // NaN included.
                if fraction.partial_cmp(&NEGLIGIBLE) != Some(Ordering::Greater) {
                    continue;
                }
                if *steps == 0 {
                    return reached;
                }
                *steps -= 1;
                let chain = chains.nest(step.chain, f.child);
                queue.extend(put(&mut reached, f.child, chain, fraction, f.self_per_ns));
            }
        }
        reached
    }

    /// Each brick's self time in whole ns over the chains the walk reached it on, in
    /// proportion to the self time they carry (or their share of its time when they carry
    /// none); a brick never reached goes under a cut marker.
    fn apportion(&self, chains: &mut Chains, reached: &Reached) -> Vec<(Chain, u64)> {
        let mut by_brick: HashMap<Frame, Vec<(Chain, f64, f64)>> = HashMap::new();
        for (&(brick, chain), r) in reached {
            by_brick
                .entry(brick)
                .or_default()
                .push((chain, r.fraction, r.self_ns));
        }
        let mut out = Vec::new();
        for brick in &self.order {
            let own = self.time.get(brick).map_or(0, |t| t.1);
            if own == 0 {
                continue;
            }
            let mut on = by_brick.remove(brick).unwrap_or_default();
            on.sort_by_key(|c| c.0);
            let weights = |pick: fn(&(Chain, f64, f64)) -> f64| -> Vec<(Chain, f64)> {
                on.iter()
                    .map(|c| (c.0, pick(c)))
                    .filter(|w| w.1.is_finite() && w.1 > 0.0)
                    .collect()
            };
            let mut w = weights(|c| c.2);
            if w.is_empty() {
                w = weights(|c| c.1);
            }
            if w.is_empty() {
                w = vec![(chains.unplaced(*brick), 1.0)];
            }
            out.extend(apportion(own, &w));
        }
        out
    }
}

/// A child's [`Flow`] under each parent, and its top-level (share, self per ns).
type Shares = (Vec<(Frame, Flow)>, Option<(f64, f64)>);

/// How `child` (`total` ns inclusive, `own` ns self in the row) shares its time: a [`Flow`]
/// per parent from its edges `(parent, total, self)`, and its top-level (share, self per ns).
///
/// Each edge takes its time out of the child's (a file may claim more than there is), the
/// child's edge into itself last; the rest is top-level. Recursion is kept on the outer frame:
/// the calls of the child inside itself run where its outer calls run, so its other shares
/// grow to fill their time, and each carries their self time in proportion.
fn shares(child: Frame, total: u64, own: u64, edges: &[(Frame, u64, u64)]) -> Shares {
    if total == 0 {
        return (Vec::new(), None); // no time to share
    }
    let (mut left, mut left_self) = (total, own);
    let mut take = |t: u64, s: u64| {
        let t = t.min(left);
        let s = s.min(left_self).min(t);
        left -= t;
        left_self -= s;
        (t, s)
    };
    let outer: Vec<(Frame, u64, u64)> = edges
        .iter()
        .filter(|e| e.0 != child)
        .map(|&(p, t, s)| {
            let (t, s) = take(t, s);
            (p, t, s)
        })
        .collect();
    let (rec, rec_self) = edges
        .iter()
        .filter(|e| e.0 == child)
        .fold((0, 0), |(t, s), e| {
            let (a, b) = take(e.1, e.2);
            (t + a, s + b)
        });
    let total = total as f64;
    let inner = rec as f64 / total;
    let keep = 1.0 - inner;
    if keep <= 0.0 {
        return (Vec::new(), None); // only ever inside itself: a file's claim
    }
    let inner_self = if rec > 0 {
        rec_self as f64 / rec as f64
    } else {
        0.0
    };
    let share = |t: u64, s: u64| {
        let per_ns = s as f64 / t as f64;
        (t as f64 / total / keep, keep * per_ns + inner * inner_self)
    };
    let flows = outer
        .into_iter()
        .filter(|e| e.1 > 0)
        .map(|(parent, t, s)| {
            let (share, self_per_ns) = share(t, s);
            (
                parent,
                Flow {
                    child,
                    share,
                    self_per_ns,
                },
            )
        })
        .collect();
    (flows, (left > 0).then(|| share(left, left_self)))
}

/// `total` split over `weights` (finite, positive, at least one) in whole units that add up
/// to exactly `total`: each its rounded-down share, what is left to the heaviest.
fn apportion(total: u64, weights: &[(Chain, f64)]) -> Vec<(Chain, u64)> {
    let sum: f64 = weights.iter().map(|w| w.1).sum();
    let mut left = total;
    let mut out: Vec<(Chain, u64)> = weights
        .iter()
        .map(|&(c, w)| {
            // `as` saturates; `min` keeps the sum exact whatever the rounding did.
            let share = ((total as f64) * (w / sum)).floor() as u64;
            let share = share.min(left);
            left -= share;
            (c, share)
        })
        .collect();
    let heaviest = weights
        .iter()
        .enumerate()
        .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1).then_with(|| b.0.cmp(&a.0)))
        .map_or(0, |(i, _)| i);
    if let Some(o) = out.get_mut(heaviest) {
        o.1 += left;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::apportion;

    #[test]
    fn apportioning_keeps_the_exact_total() {
        // spec/work-accounting.md "Brick tree": every row's stacks add up to its self time.
        for total in [0, 1, 7, 1_000_000_007, u64::MAX] {
            let w = [(1, 1.0), (2, 1.0), (3, 1.0), (4, 1e-300), (5, 3.5)];
            let parts = apportion(total, &w);
            let sum = parts.iter().fold(0u64, |s, p| s.checked_add(p.1).unwrap());
            assert_eq!(sum, total);
        }
        assert_eq!(
            apportion(10, &[(1, 1.0), (2, 1.0), (3, 1.0)]),
            vec![(1, 4), (2, 3), (3, 3)]
        );
    }
}
