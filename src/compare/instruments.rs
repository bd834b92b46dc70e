//! Cross-instrument comparison (spec/imports.md "Cross-instrument diff"): two instruments'
//! profiles of the same run, brickprof's own and a vendor profiler's file read back, or two
//! vendor files, compared brick by brick (or (brick, layer) by (brick, layer)): each side's
//! calls and mean device time a call, their ratio, and what explains a difference (the
//! marks' own cost, calls one instrument saw and the other did not, kernels outside every
//! brick). It gives no verdict: the timing verdicts withhold comparisons across timelines.
//! Which files are instruments, and reading them, is the caller's business (the CLI's
//! `diff` reads vendor files with `import`).

use serde::Serialize;
use std::fmt::Write as _;

use crate::figures::units::{clip, duration};
use crate::stats::OutsideBricks;
use crate::{profile::RowKey, Profile};

/// One side of a compared row: calls and device time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Side {
    /// Calls (range instances for a vendor file).
    pub calls: u64,
    /// Device time over the calls, ns (inclusive).
    pub total_ns: u64,
}

impl Side {
    /// Mean device time a call, ns.
    pub fn mean_ns(&self) -> f64 {
        self.total_ns as f64 / self.calls.max(1) as f64
    }
}

/// What explains a difference between the two sides of a row.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Explanation {
    /// One side marks with a cost: each of its calls holds the marks' own cost.
    EventOverhead {
        /// The side: 0 the reference (A), 1 the candidate (B).
        side: usize,
        /// What the marks add to one call, ns (`meta.mark_cost_ns`).
        per_call_ns: u64,
        /// Over that side's calls, ns.
        total_ns: u64,
        /// B/A of the means with the marks' cost taken off each side that has one.
        ratio_without: Option<f64>,
    },
    /// The two instruments counted different calls.
    CallsDiffer {
        /// A's calls and B's.
        calls: [u64; 2],
    },
    /// Only one side saw this brick.
    OnlyIn {
        /// The side: 0 the reference (A), 1 the candidate (B).
        side: usize,
    },
}

/// One compared (brick) or (brick, row).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstrumentRow {
    /// The brick.
    pub brick: String,
    /// The row (layer), with `--by-layer`; `None` for the whole brick.
    pub row: Option<RowKey>,
    /// Each side (`None` where that instrument did not see it).
    pub sides: [Option<Side>; 2],
    /// Candidate mean over reference mean, where both saw calls.
    pub ratio: Option<f64>,
    /// What explains a difference.
    pub explanations: Vec<Explanation>,
}

/// What one side is, for the header and the footer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstrumentInfo {
    /// How the caller names it (the file).
    pub label: String,
    /// The profile's timeline (`cuda`, `ncu`).
    pub timeline: String,
    /// What one mark adds to the time it measures, ns (`meta.mark_cost_ns`).
    pub mark_cost_ns: Option<u64>,
    /// Device activity no brick covered (`meta.outside_bricks`); `None` where the
    /// instrument does not record it.
    pub outside_bricks: Option<OutsideBricks>,
    /// Device time in bricks, ns (the bricks' self times, as the table's footer counts).
    pub in_bricks_ns: u64,
}

/// A cross-instrument comparison: rows, and each side's facts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstrumentDiff {
    /// Reference and candidate.
    pub instruments: [InstrumentInfo; 2],
    /// The rows, the larger device time first (by brick, then by row with `--by-layer`).
    pub rows: Vec<InstrumentRow>,
}

/// The line every cross-instrument diff ends with.
pub const GAP_NOT_COMPARED: &str = "Not compared: the gap before a brick's first kernel (host push to kernel start): vendor files carry no host push times.";

/// Compare `reference` and `candidate` (named `labels`) per brick, or per (brick, row) with
/// `by_layer`.
pub fn instrument_diff(
    reference: &Profile,
    candidate: &Profile,
    labels: [&str; 2],
    by_layer: bool,
) -> InstrumentDiff {
    let profiles = [reference, candidate];
    let marks = profiles.map(|p| p.meta.mark_cost_ns.filter(|&c| c > 0));
    let mut rows: Vec<InstrumentRow> = sides_by_key(profiles, by_layer)
        .into_iter()
        .map(|((brick, row), sides)| row_of(brick, row, sides, marks))
        .collect();
    sort_rows(&mut rows);
    let info = |p: &Profile, label: &str| InstrumentInfo {
        label: label.to_string(),
        timeline: p.meta.timeline.name().to_string(),
        mark_cost_ns: p.meta.mark_cost_ns.filter(|&c| c > 0),
        outside_bricks: p.meta.outside_bricks,
        in_bricks_ns: p.bricks.iter().map(|b| b.stats.self_ns()).sum(),
    };
    InstrumentDiff {
        instruments: [info(reference, labels[0]), info(candidate, labels[1])],
        rows,
    }
}

/// A (brick, row) and its two sides.
type Keyed = ((String, Option<RowKey>), [Option<Side>; 2]);

/// Each (brick, row)'s calls and time on each side, in first-seen order (row `None`: the
/// brick over all rows).
fn sides_by_key(profiles: [&Profile; 2], by_layer: bool) -> Vec<Keyed> {
    let mut keys: Vec<(String, Option<RowKey>)> = Vec::new();
    let mut sides: Vec<[Option<Side>; 2]> = Vec::new();
    for (s, p) in profiles.iter().enumerate() {
        for b in &p.bricks {
            let mut add = |row: Option<RowKey>, calls: u64, total_ns: u64| {
                if calls == 0 {
                    return;
                }
                let key = (b.name.clone(), row);
                let i = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                    keys.push(key);
                    sides.push([None, None]);
                    keys.len() - 1
                });
                let side = sides[i][s].get_or_insert(Side {
                    calls: 0,
                    total_ns: 0,
                });
                side.calls += calls;
                side.total_ns += total_ns;
            };
            if by_layer {
                for r in &b.rows {
                    add(Some(r.row), r.stats.count(), r.stats.total_ns());
                }
            } else {
                add(None, b.stats.count(), b.stats.total_ns());
            }
        }
    }
    keys.into_iter().zip(sides).collect()
}

/// One row: the ratio of the means, and what explains a difference (`marks`: each side's
/// cost of one mark, where it records one).
fn row_of(
    brick: String,
    row: Option<RowKey>,
    sides: [Option<Side>; 2],
    marks: [Option<u64>; 2],
) -> InstrumentRow {
    let ratio = match sides {
        [Some(a), Some(b)] if a.total_ns > 0 => Some(b.mean_ns() / a.mean_ns()),
        _ => None,
    };
    let mut explanations = Vec::new();
    if let [Some(a), Some(b)] = sides {
        let without = |s: &Side, i: usize| (s.mean_ns() - marks[i].unwrap_or(0) as f64).max(0.0);
        let (ma, mb) = (without(&a, 0), without(&b, 1));
        let ratio_without = (ma > 0.0).then(|| mb / ma);
        for (i, s) in [a, b].iter().enumerate() {
            if let Some(c) = marks[i] {
                explanations.push(Explanation::EventOverhead {
                    side: i,
                    per_call_ns: c,
                    total_ns: c.saturating_mul(s.calls),
                    ratio_without,
                });
            }
        }
        if a.calls != b.calls {
            explanations.push(Explanation::CallsDiffer {
                calls: [a.calls, b.calls],
            });
        }
    } else {
        let side = usize::from(sides[0].is_none());
        explanations.push(Explanation::OnlyIn { side });
    }
    InstrumentRow {
        brick,
        row,
        sides,
        ratio,
        explanations,
    }
}

/// The larger device time first, by brick; rows of one brick together, in row order.
fn sort_rows(rows: &mut [InstrumentRow]) {
    let brick_time = |name: &str, rows: &[InstrumentRow]| -> u64 {
        rows.iter()
            .filter(|r| r.brick == name)
            .map(|r| {
                r.sides
                    .iter()
                    .flatten()
                    .map(|s| s.total_ns)
                    .max()
                    .unwrap_or(0)
            })
            .sum()
    };
    let order: Vec<(String, u64)> = {
        let mut names: Vec<String> = rows.iter().map(|r| r.brick.clone()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| {
                let t = brick_time(&n, rows);
                (n, t)
            })
            .collect()
    };
    let rank = |name: &str| order.iter().find(|(n, _)| n == name).map_or(0, |(_, t)| *t);
    rows.sort_by(|x, y| {
        rank(&y.brick)
            .cmp(&rank(&x.brick))
            .then_with(|| x.brick.cmp(&y.brick))
            .then_with(|| x.row.cmp(&y.row))
    });
}

const AB: [&str; 2] = ["A", "B"];

impl Explanation {
    /// The explanation as one line.
    pub fn text(&self, instruments: &[InstrumentInfo; 2]) -> String {
        match self {
            Explanation::EventOverhead {
                side,
                per_call_ns,
                total_ns,
                ratio_without,
            } => {
                let mut s = format!(
                    "event overhead: {} ({}) marks add {} a call ({} in all)",
                    AB[*side],
                    instruments[*side].timeline,
                    duration(*per_call_ns as f64),
                    duration(*total_ns as f64),
                );
                if let Some(r) = ratio_without {
                    let _ = write!(s, "; without it B/A = {r:.2}");
                }
                s
            }
            Explanation::CallsDiffer { calls } => format!(
                "calls differ: A {}, B {} ({} {} one instrument saw and the other did not)",
                calls[0],
                calls[1],
                calls[0].abs_diff(calls[1]),
                if calls[0].abs_diff(calls[1]) == 1 {
                    "call"
                } else {
                    "calls"
                },
            ),
            Explanation::OnlyIn { side } => format!(
                "only {} ({}) saw it",
                AB[*side], instruments[*side].timeline
            ),
        }
    }
}

impl InstrumentDiff {
    /// The comparison as text: a header naming the sides, one line a row with its
    /// explanations indented beneath, then the time in bricks, the kernels outside bricks,
    /// and [`GAP_NOT_COMPARED`].
    pub fn render(&self) -> String {
        let [a, b] = &self.instruments;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Cross-instrument diff (no verdict): A = {} (timeline {}), B = {} (timeline {})",
            a.label, a.timeline, b.label, b.timeline
        );
        let by_layer = self.rows.iter().any(|r| r.row.is_some());
        let _ = writeln!(
            out,
            "\n{:<22} {:>10} {:>8} {:>10} {:>8} {:>10} {:>6}",
            "Brick",
            if by_layer { "row" } else { "" },
            "A calls",
            "A mean",
            "B calls",
            "B mean",
            "B/A"
        );
        let _ = writeln!(out, "{}", "-".repeat(80));
        for r in &self.rows {
            let row = r.row.map(|k| k.to_string()).unwrap_or_default();
            let calls = |s: &Option<Side>| s.map_or("-".to_string(), |s| s.calls.to_string());
            let mean = |s: &Option<Side>| s.map_or("-".to_string(), |s| duration(s.mean_ns()));
            let ratio = r.ratio.map_or("-".to_string(), |x| format!("{x:.2}"));
            let _ = writeln!(
                out,
                "{:<22} {:>10} {:>8} {:>10} {:>8} {:>10} {:>6}",
                clip(&r.brick, 22),
                row,
                calls(&r.sides[0]),
                mean(&r.sides[0]),
                calls(&r.sides[1]),
                mean(&r.sides[1]),
                ratio
            );
            for e in &r.explanations {
                let _ = writeln!(out, "  {}", e.text(&self.instruments));
            }
        }
        let _ = writeln!(
            out,
            "\nTime in bricks: A {}, B {}{}",
            duration(a.in_bricks_ns as f64),
            duration(b.in_bricks_ns as f64),
            if a.in_bricks_ns > 0 {
                format!(", B/A {:.2}", b.in_bricks_ns as f64 / a.in_bricks_ns as f64)
            } else {
                String::new()
            }
        );
        let outside = |i: &InstrumentInfo| match i.outside_bricks {
            None => "none recorded".to_string(),
            Some(o) => format!(
                "{} {}, {} {}, {}",
                o.kernels,
                if o.kernels == 1 { "kernel" } else { "kernels" },
                o.memory_ops,
                if o.memory_ops == 1 {
                    "copy/set"
                } else {
                    "copies/sets"
                },
                duration(o.busy_ns as f64)
            ),
        };
        let _ = writeln!(
            out,
            "Kernels outside bricks: A {}; B {}",
            outside(a),
            outside(b)
        );
        let _ = writeln!(out, "{GAP_NOT_COMPARED}");
        out
    }
}
