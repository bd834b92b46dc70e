//! The terminal table, in the style of the PyTorch profiler's: one row per brick (or per
//! layer × brick), a category breakdown with bars, a host-vs-device section on asynchronous
//! timelines, and a footer with totals and tokens/s. Fits 100 columns.

use std::fmt::Write as _;

use strum::{EnumString, IntoStaticStr};

use super::units::{bar, duration, percent, rate, ratio_pct};
use crate::profile::{BrickProfile, Profile, RowKey};
use crate::{BrickStats, SyncMode, TimelineKind};

/// The column a table is sorted by (descending, except `name`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, EnumString, IntoStaticStr, strum::Display)]
#[strum(ascii_case_insensitive, serialize_all = "lowercase")]
pub enum SortKey {
    /// Total time (default).
    #[default]
    Total,
    /// Number of calls.
    Calls,
    /// Mean time per call.
    Mean,
    /// Shortest call.
    Min,
    /// Median.
    P50,
    /// 99th percentile.
    P99,
    /// Longest call.
    Max,
    /// Mean host dispatch time.
    Host,
    /// Elements per second.
    #[strum(serialize = "throughput", serialize = "thrpt")]
    Throughput,
    /// Achieved GFLOP/s.
    Gflops,
    /// Achieved GB/s.
    Gbps,
    /// Brick name (ascending).
    Name,
}

impl SortKey {
    /// Every key's name, for help texts.
    pub const NAMES: &'static str =
        "total, calls, mean, min, p50, p99, max, host, throughput, gflops, gbps, name";

    fn value(self, s: &BrickStats) -> f64 {
        match self {
            SortKey::Total => s.total_ns as f64,
            SortKey::Calls => s.count as f64,
            SortKey::Mean => s.mean_ns(),
            SortKey::Min => s.min_ns() as f64,
            SortKey::P50 => s.p50_ns() as f64,
            SortKey::P99 => s.p99_ns() as f64,
            SortKey::Max => s.max_ns as f64,
            SortKey::Host => s.host_mean_ns(),
            SortKey::Throughput => s.elements_per_sec(),
            SortKey::Gflops => s.gflops(),
            SortKey::Gbps => s.gbps(),
            SortKey::Name => 0.0,
        }
    }
}

/// How to lay out the table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// Sort rows by this column.
    pub sort: SortKey,
    /// Show only the first N rows.
    pub top: Option<usize>,
    /// One row per (layer, brick) instead of per brick.
    pub by_layer: bool,
}

/// Ratio of host dispatch to device time above which a brick is flagged as launch-bound.
pub const LAUNCH_BOUND_RATIO: f64 = 0.5;

const NAME_W: usize = 20;

/// Render the table for `profile`.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, report::{render_table, TableOptions}};
/// let mut prof = BrickProfiler::default();
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 256);
/// prof.end_pass(1).unwrap();
/// let text = render_table(&prof.profile(), &TableOptions::default());
/// assert!(text.contains("RmsNorm"));
/// assert!(text.lines().all(|l| l.chars().count() <= 100));
/// ```
pub fn render_table(profile: &Profile, opts: &TableOptions) -> String {
    let mut out = String::new();
    let total = profile.total_ns() as f64;
    header(&mut out, profile);

    // ---- per brick (or per layer x brick)
    let mut rows: Vec<(String, &BrickStats)> = Vec::new();
    for b in &profile.bricks {
        if opts.by_layer {
            for r in &b.rows {
                rows.push((row_label(b, r.row), &r.stats));
            }
        } else {
            rows.push((b.name.clone(), &b.stats));
        }
    }
    rows.retain(|(_, s)| !s.is_empty());
    sort_rows(&mut rows, opts.sort);
    let shown = opts.top.unwrap_or(usize::MAX);
    let _ = writeln!(
        out,
        "{:<NAME_W$} {:>7} {:>8} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
        if opts.by_layer {
            "Layer/Brick"
        } else {
            "Brick"
        },
        "Calls",
        "Total",
        "%",
        "Mean",
        "Min",
        "p50",
        "p99",
        "Max",
        "Thrpt"
    );
    rule(&mut out);
    for (name, s) in rows.iter().take(shown) {
        let _ = writeln!(
            out,
            "{:<NAME_W$} {:>7} {:>8} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
            clip(name, NAME_W),
            s.count,
            duration(s.total_ns as f64),
            percent(s.total_ns as f64, total),
            duration(s.mean_ns()),
            duration(s.min_ns() as f64),
            duration(s.p50_ns() as f64),
            duration(s.p99_ns() as f64),
            duration(s.max_ns as f64),
            rate(s.elements_per_sec(), "/s"),
        );
    }
    if rows.len() > shown {
        let _ = writeln!(out, "... {} more rows (--top)", rows.len() - shown);
    }

    // ---- per category
    out.push('\n');
    let _ = writeln!(
        out,
        "{:<NAME_W$} {:>7} {:>8} {:>6}  Share",
        "Category", "Calls", "Total", "%"
    );
    rule(&mut out);
    for (cat, s) in profile.category_stats() {
        let pct = ratio_pct(s.total_ns as f64, total);
        let _ = writeln!(
            out,
            "{:<NAME_W$} {:>7} {:>8} {:>6}  {}",
            cat.name(),
            s.count,
            duration(s.total_ns as f64),
            format!("{pct:.1}%"),
            bar(pct, 50),
        );
    }

    if profile.meta.timeline != TimelineKind::Cpu && profile.meta.sync_mode != SyncMode::None {
        host_vs_device(&mut out, profile);
    }
    footer(&mut out, profile);
    out
}

fn header(out: &mut String, p: &Profile) {
    let m = &p.meta;
    let what = if m.sync_mode == SyncMode::None {
        "host dispatch time (sync mode none: launch overhead, not kernel time)"
    } else if m.timeline == TimelineKind::Cpu {
        "host time"
    } else {
        "device time"
    };
    let _ = writeln!(
        out,
        "brickprof {} | timeline {} | sync {} | {} layers | {}",
        m.tool_version, m.timeline, m.sync_mode, m.layers, what
    );
    out.push('\n');
}

fn host_vs_device(out: &mut String, p: &Profile) {
    out.push('\n');
    let _ = writeln!(
        out,
        "{:<NAME_W$} {:>11} {:>9} {:>7}  Note",
        "Host vs device", "Device/call", "Host/call", "Host %"
    );
    rule(out);
    let mut flagged = 0;
    for b in &p.bricks {
        let s = &b.stats;
        if s.is_empty() {
            continue;
        }
        let launch_bound = s.host_mean_ns() > LAUNCH_BOUND_RATIO * s.mean_ns();
        flagged += usize::from(launch_bound);
        let _ = writeln!(
            out,
            "{:<NAME_W$} {:>11} {:>9} {:>7}  {}",
            clip(&b.name, NAME_W),
            duration(s.mean_ns()),
            duration(s.host_mean_ns()),
            percent(s.host_mean_ns(), s.mean_ns()),
            if launch_bound { "LAUNCH-BOUND" } else { "" }
        );
    }
    if flagged > 0 {
        let _ = writeln!(
            out,
            "{flagged} brick(s) spend more than {:.0}% of their device time dispatching: batch or \
             fuse small launches,\ncapture the pass in a graph, and keep sync deferred.",
            LAUNCH_BOUND_RATIO * 100.0
        );
    }
}

fn footer(out: &mut String, p: &Profile) {
    let c = &p.meta.counters;
    out.push('\n');
    let _ = writeln!(
        out,
        "Total in bricks {} | {} passes, {} tokens | {:.1} tokens/s | {}/pass (p50 {})",
        duration(p.total_ns() as f64),
        c.passes,
        c.tokens,
        p.tokens_per_sec(),
        duration(p.passes.mean_ns()),
        duration(p.passes.p50_ns() as f64),
    );
    let mut notes = Vec::new();
    if c.warmup_passes_excluded > 0 {
        notes.push(format!(
            "{} warm-up passes excluded",
            c.warmup_passes_excluded
        ));
    }
    if c.dropped > 0 {
        notes.push(format!("{} measurements DROPPED", c.dropped));
    }
    if c.out_of_range_layers > 0 {
        notes.push(format!(
            "{} out-of-range layer indices (row 'unassigned')",
            c.out_of_range_layers
        ));
    }
    notes.push(format!("{} syncs", c.syncs));
    if p.meta.merged_from > 1 {
        notes.push(format!("merged from {} profiles", p.meta.merged_from));
    }
    let _ = writeln!(out, "{}", notes.join(" | "));
}

fn rule(out: &mut String) {
    out.push_str(&"-".repeat(100));
    out.push('\n');
}

fn row_label(b: &BrickProfile, row: RowKey) -> String {
    format!("{row} {}", b.name)
}

/// Sort rows by `key`: descending, ties and `name` by name ascending.
pub(crate) fn sort_rows<S: std::borrow::Borrow<BrickStats>>(
    rows: &mut [(String, S)],
    key: SortKey,
) {
    rows.sort_by(|(an, a), (bn, b)| {
        let by_value = key
            .value(b.borrow())
            .partial_cmp(&key.value(a.borrow()))
            .unwrap_or(std::cmp::Ordering::Equal);
        by_value.then_with(|| an.cmp(bn))
    });
}

/// Cut a name to `w` characters, marking the cut with '~'.
pub(crate) fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('~');
        t
    }
}
