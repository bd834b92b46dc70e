//! Cross-instrument comparison (spec/imports.md "Cross-instrument diff"): two instruments'
//! profiles of the same run, brickprof's own and a vendor profiler's file read back, or two
//! vendor files, compared brick by brick (or (brick, layer) by (brick, layer)): each side's
//! calls and mean device time a call, their ratio, and what explains a difference (the
//! marks' own cost, calls one instrument saw and the other did not, kernels outside every
//! brick), and, where one side declares the work of a brick (`Work`) and the other's
//! hardware counters measured it, both a call side by side. It gives no verdict: the timing
//! verdicts withhold comparisons across timelines.
//! Which files are instruments, and reading them, is the caller's business (the CLI's
//! `diff` reads vendor files with `import`).

use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;

use crate::figures::units::{clip, duration, rate};
use crate::stats::brick_counters::BrickCounters;
use crate::stats::OutsideBricks;
use crate::{profile::RowKey, Profile, Work};

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
    pub(crate) fn mean_ns(&self) -> f64 {
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
    /// The work a call as one side declared it and the other's hardware counters measured
    /// it, where both are known (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work: Option<WorkCheck>,
}

/// A call's work as one instrument's engine declared it (`Work` over its calls) and as the
/// other's hardware counters measured it (spec/imports.md "Declared and measured work").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkCheck {
    /// The side that declared the work: 0 the reference (A), 1 the candidate (B).
    pub declared_by: usize,
    /// The side whose hardware counters measured it.
    pub measured_by: usize,
    /// FLOPs a call.
    pub flops: DeclaredMeasured,
    /// Bytes a call (measured: DRAM bytes read and written).
    pub bytes: DeclaredMeasured,
}

/// One quantity a call, declared and measured (`None` where that side has no figure), and
/// measured over declared where both do.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DeclaredMeasured {
    /// As declared.
    pub declared: Option<f64>,
    /// As measured.
    pub measured: Option<f64>,
    /// Measured / declared.
    pub ratio: Option<f64>,
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
pub(crate) const GAP_NOT_COMPARED: &str = "Not compared: the gap before a brick's first kernel (host push to kernel start): vendor files carry no host push times.";

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
    let counted = profiles.map(counters_by_brick);
    let mut rows: Vec<InstrumentRow> = sides_by_key(profiles, by_layer)
        .into_iter()
        .map(|((brick, row), sides)| {
            let work = work_check(profiles, &counted, &brick, row);
            InstrumentRow {
                work,
                ..row_of(brick, row, sides, marks)
            }
        })
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
        work: None,
    }
}

/// A profile's hardware counters by brick name.
fn counters_by_brick(p: &Profile) -> HashMap<&str, Vec<&BrickCounters>> {
    let mut by: HashMap<&str, Vec<&BrickCounters>> = HashMap::new();
    for c in &p.hardware_counters {
        by.entry(c.brick.as_str()).or_default().push(c);
    }
    by
}

/// The work a call of `brick` (in `row`; `None`: every row) as one side declared it and the
/// other side's counters measured it: A's declaration against B's counters first, else B's
/// against A's; `None` when no side declares what the other measured.
fn work_check(
    profiles: [&Profile; 2],
    counted: &[HashMap<&str, Vec<&BrickCounters>>; 2],
    brick: &str,
    row: Option<RowKey>,
) -> Option<WorkCheck> {
    let declared = profiles.map(|p| declared(p, brick, row));
    let measured = [0, 1].map(|s| measured(&counted[s], brick, row));
    let (d, m) = [(0, 1), (1, 0)]
        .into_iter()
        .find(|&(d, m)| declared[d].is_some() && measured[m].is_some())?;
    let (calls, work) = declared[d]?;
    let c = measured[m].as_ref()?;
    let per_call = |n: u64| (n > 0).then(|| n as f64 / calls as f64);
    Some(WorkCheck {
        declared_by: d,
        measured_by: m,
        flops: DeclaredMeasured::of(per_call(work.flops), c.flops_per_call()),
        bytes: DeclaredMeasured::of(per_call(work.bytes), c.bytes_per_call()),
    })
}

/// The calls of `brick` (in `row`) in `p` and the work they declared, when they declared any.
fn declared(p: &Profile, brick: &str, row: Option<RowKey>) -> Option<(u64, Work)> {
    let b = p.brick(brick)?;
    let (calls, work) = match row {
        None => (b.stats.count(), b.stats.work()),
        Some(r) => b
            .rows
            .iter()
            .filter(|x| x.row == r)
            .fold((0u64, Work::NONE), |(c, w), x| {
                (c.saturating_add(x.stats.count()), w + x.stats.work())
            }),
    };
    (calls > 0 && (work.flops > 0 || work.bytes > 0)).then_some((calls, work))
}

/// The counters of `brick` (in `row`) summed, when they hold DRAM bytes or FLOPs.
fn measured(
    counted: &HashMap<&str, Vec<&BrickCounters>>,
    brick: &str,
    row: Option<RowKey>,
) -> Option<BrickCounters> {
    let mut all = counted
        .get(brick)?
        .iter()
        .filter(|c| row.is_none_or(|r| c.row == r));
    let mut sum = (*all.next()?).clone();
    for c in all {
        sum.merge(c);
    }
    sum.has_counters().then_some(sum)
}

impl DeclaredMeasured {
    fn of(declared: Option<f64>, measured: Option<f64>) -> Self {
        let ratio = match (declared, measured) {
            (Some(d), Some(m)) if d > 0.0 => Some(m / d),
            _ => None,
        };
        DeclaredMeasured {
            declared,
            measured,
            ratio,
        }
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
    pub(crate) fn text(&self, instruments: &[InstrumentInfo; 2]) -> String {
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

impl WorkCheck {
    /// A line a quantity either side has a figure for: `FLOPs a call: declared 8.39MFLOP (A),
    /// measured 8.39MFLOP (B), measured/declared 1.00`.
    fn lines(&self) -> Vec<String> {
        let (d, m) = (AB[self.declared_by], AB[self.measured_by]);
        [
            ("FLOPs", "FLOP", "", &self.flops),
            ("bytes", "B", ", DRAM", &self.bytes),
        ]
        .into_iter()
        .filter(|(_, _, _, q)| q.declared.is_some() || q.measured.is_some())
        .map(|(what, unit, dram, q)| {
            let v = |x: Option<f64>| x.map_or("-".to_string(), |x| rate(x, unit));
            let ratio = q.ratio.map_or("-".to_string(), |r| format!("{r:.2}"));
            format!(
                "{what} a call: declared {} ({d}), measured {} ({m}{dram}), measured/declared {ratio}",
                v(q.declared),
                v(q.measured),
            )
        })
        .collect()
    }
}

impl InstrumentDiff {
    /// The comparison as text: a header naming the sides, one line a row with its
    /// explanations indented beneath, then the time in bricks, the kernels outside bricks,
    /// and the line saying what is not compared (the gap before a brick's first kernel).
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
            if let Some(w) = &r.work {
                for line in w.lines() {
                    let _ = writeln!(out, "  {line}");
                }
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
