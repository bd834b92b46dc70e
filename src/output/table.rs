//! The terminal table, in the style of the PyTorch profiler's: one row per brick (or per
//! layer × brick), a category breakdown with bars, a host-vs-device section on asynchronous
//! timelines, a work section (GFLOP/s, GB/s, intensity, roofline, tiles), for a profile with
//! phases a side-by-side section of each brick's share and p50 per phase (and its work and
//! roofline verdict per phase), and a footer with totals and tokens/s (per phase when the
//! profile has phases: prefill and decode throughput, never one mixed rate). Fits 100 columns.

use std::fmt::Write as _;

use strum::{EnumString, IntoStaticStr};

use crate::figures::derived::{Derived, Row};
use crate::figures::units::{bar, clip, duration, number, percent, throughput};
use crate::roofline::{DevicePeaks, Excess};
use crate::{
    model::{PhaseFilter, Sampling},
    timeline::TimelineKind,
    Phase, Profile, SyncMode,
};

/// The column a table is sorted by (descending, except `name`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, EnumString, IntoStaticStr, strum::Display)]
#[strum(
    ascii_case_insensitive,
    serialize_all = "lowercase",
    parse_err_ty = crate::Error,
    parse_err_fn = unknown_column
)]
pub enum SortKey {
    /// Self time: inclusive minus nested bricks (default).
    #[default]
    #[strum(serialize = "self")]
    SelfTime,
    /// Inclusive time.
    #[strum(serialize = "total", serialize = "incl", serialize = "inclusive")]
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

/// Why a column name did not parse, naming every key.
fn unknown_column(name: &str) -> crate::Error {
    crate::Error::invalid_value(
        "column",
        name,
        "unknown column; the columns are self, total (inclusive), calls, mean, min, p50, p99, \
         max, host, throughput, gflops, gbps, name",
    )
}

impl SortKey {
    fn value(self, r: &Row) -> f64 {
        match self {
            SortKey::SelfTime => r.self_ns as f64,
            SortKey::Total => r.total_ns as f64,
            SortKey::Calls => r.calls as f64,
            SortKey::Mean => r.mean_ns,
            SortKey::Min => r.min_ns as f64,
            SortKey::P50 => r.p50_ns as f64,
            SortKey::P99 => r.p99_ns as f64,
            SortKey::Max => r.max_ns as f64,
            SortKey::Host => r.host_mean_ns,
            SortKey::Throughput => r.elements_per_sec,
            SortKey::Gflops => r.gflops,
            SortKey::Gbps => r.gbps,
            SortKey::Name => 0.0,
        }
    }

    /// Sort rows by this key: descending, ties (and `name`) by name ascending.
    pub(crate) fn sort(self, rows: &mut [Row]) {
        rows.sort_by(|a, b| {
            self.value(b)
                .partial_cmp(&self.value(a))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.name.cmp(&b.name))
        });
    }
}

/// How to lay out the table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableOptions {
    /// Sort rows by this column.
    pub sort: SortKey,
    /// Show only the first N rows.
    pub top: Option<usize>,
    /// One row per (layer, brick) instead of per brick.
    pub by_layer: bool,
    /// Device peaks for the roofline (default: the profile's own, if it has them).
    pub peaks: Option<DevicePeaks>,
}

/// Ratio of host dispatch to device time above which a brick is flagged as launch-bound.
pub(crate) const LAUNCH_BOUND_RATIO: f64 = 0.5;

const NAME_W: usize = 20;

/// Render the table for `profile`.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, output::{render_table, TableOptions}};
/// let mut prof = BrickProfiler::default();
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 256);
/// prof.end_pass(1).unwrap();
/// let text = render_table(&prof.profile(), &TableOptions::default());
/// assert!(text.contains("RmsNorm"));
/// assert!(text.lines().all(|l| l.chars().count() <= 100));
/// ```
pub fn render_table(profile: &Profile, opts: &TableOptions) -> String {
    let d = Derived::of(profile, opts.peaks.as_ref());
    let mut out = String::new();
    header(&mut out, &d, profile.meta.timer_resolution_ns);
    if let Some(l) = crate::figures::latency::profile_latency(profile) {
        // spec/hot-path.md "Pass series": TTFT, TPOT and the two throughputs.
        let _ = writeln!(out, "{}", crate::figures::latency::render_latency(&l));
    }
    if let Some(what) = profile.meta.sampling.describe() {
        let _ = writeln!(out, "Sampled: {what}.\n");
    }
    timing(&mut out, &d, opts);
    below_resolution(&mut out, &d, profile.meta.timer_resolution_ns);
    near_mark_cost(&mut out, &d, profile.meta.mark_cost_ns);
    device_records(&mut out, &d);
    categories(&mut out, &d);
    // Only where host dispatch was timed: an imported vendor file has device times alone.
    let host_timed = d.bricks.iter().any(|r| r.host_mean_ns > 0.0);
    if d.timeline != TimelineKind::Cpu && d.sync_mode != SyncMode::None && host_timed {
        host_vs_device(&mut out, &d);
    }
    if d.bricks.iter().any(Row::has_work) {
        work(&mut out, &d, opts);
    }
    let phased = crate::profile::phase_view::has_phases(profile);
    if phased {
        phases(&mut out, profile, &d, opts);
    }
    let costs = crate::figures::shape_costs::cost_section(profile);
    if !costs.is_empty() {
        let _ = write!(out, "\n{costs}");
    }
    footer(
        &mut out,
        &d,
        profile.meta.merged_from,
        profile.meta.calibration_bound_ns,
        phased.then(|| phase_rates(profile)),
    );
    graph_notes(&mut out, &d.counters, &profile.meta.untimed_graphs);
    if let Some(line) = sampling_savings(profile) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// What the sampling plan saved, per pass (spec/sync-modes.md "Sampling"): every start it left
/// unmarked saved two marks, and each brick measured made two. `None` under [`Sampling::All`].
fn sampling_savings(profile: &Profile) -> Option<String> {
    let c = &profile.meta.counters;
    let all_passes = c.passes.saturating_add(c.warmup_passes_excluded).max(1) as f64;
    let saved = 2.0 * c.sampled_out as f64 / all_passes;
    let calls: u64 = profile.bricks.iter().map(|b| b.stats.count()).sum();
    let made = 2.0 * calls as f64 / c.passes.max(1) as f64;
    let (saved, made) = (grouped(saved.round() as u64), grouped(made.round() as u64));
    match profile.meta.sampling {
        Sampling::All => None,
        Sampling::EveryNthPass(n) => {
            let n = n.get();
            Some(format!(
                "Sampling every {n}{} pass: {} of {n} passes unmarked, {saved} marks saved per \
                 pass, {made} made",
                ordinal_suffix(n),
                n - 1,
            ))
        }
        Sampling::Layers => Some(format!(
            "Sampling layer boundaries: {saved} marks per pass avoided inside layers, {made} made"
        )),
        Sampling::Bursts { passes, gap } => {
            let total = c.passes.saturating_add(c.warmup_passes_excluded);
            let traced = profile.meta.sampling.marked_of(total);
            Some(format!(
                "Sampling in bursts of {passes} passes, {} untraced after each: {} of {} \
                 passes traced, {saved} marks saved per pass, {made} made",
                grouped(u64::from(gap)),
                grouped(traced),
                grouped(total),
            ))
        }
    }
}

/// "st", "nd", "rd" or "th".
fn ordinal_suffix(n: u32) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

/// `1234567` as `1,234,567`.
fn grouped(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn header(out: &mut String, d: &Derived, resolution_ns: Option<u64>) {
    let what = if d.sync_mode == SyncMode::None {
        "host dispatch time (sync mode none: launch overhead, not kernel time)"
    } else if d.timeline == TimelineKind::Cpu {
        "host time"
    } else {
        "device time"
    };
    // The CPU timeline's resolution is the host clock's (ns): not worth a word.
    let resolution = match resolution_ns {
        Some(r) if d.timeline != TimelineKind::Cpu => {
            format!(" (resolution {})", duration(r as f64).trim())
        }
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "brickprof {} | timeline {}{resolution} | sync {} | {}\n",
        clip(&d.tool_version, 24),
        d.timeline,
        d.sync_mode,
        what
    );
}

/// What a timeline that reads the device's own records (CUPTI) adds (spec/sync-modes.md
/// "CUPTI"): the row of device activity outside any brick, and the bricks with host-only
/// calls (no kernel, copy or set: 0 ns of device time).
fn device_records(out: &mut String, d: &Derived) {
    if let Some(o) = d.outside_bricks.filter(|o| !o.is_empty()) {
        let _ = writeln!(
            out,
            "{:<NAME_W$} {:>7} {:>8}  ({} kernels, {} copies/sets: device time no brick \
             covered)\n",
            "(outside any brick)",
            o.kernels.saturating_add(o.memory_ops),
            duration(o.busy_ns as f64),
            o.kernels,
            o.memory_ops,
        );
    }
    let flagged: Vec<String> = d
        .bricks
        .iter()
        .filter(|b| b.host_only > 0)
        .map(|b| {
            if b.host_only >= b.calls {
                format!("{} (all {})", clip(&b.name, 40), b.host_only)
            } else {
                format!("{} ({} of {})", clip(&b.name, 40), b.host_only, b.calls)
            }
        })
        .collect();
    flag_list(
        out,
        "HOST-ONLY calls (no device work):".to_owned(),
        flagged,
        "these calls launched no kernel, copy or set: their device time is 0.",
    );
}

/// `title` and the `names` after it, wrapped at 100 columns, then `advice` indented; nothing
/// when `names` is empty (the table's flags: host-only calls, below the resolution, near the
/// marking cost).
fn flag_list(out: &mut String, title: String, names: Vec<String>, advice: &str) {
    if names.is_empty() {
        return;
    }
    let mut line = title;
    for name in names {
        if line.chars().count() + name.chars().count() + 2 > 100 {
            let _ = writeln!(out, "{line}");
            line = String::from(" ");
        }
        line.push(' ');
        line.push_str(&name);
    }
    let _ = writeln!(out, "{line}\n  {advice}\n");
}

/// The names of the bricks with calls whose mean call is under `ns`.
fn mean_under(d: &Derived, ns: f64) -> Vec<String> {
    d.bricks
        .iter()
        .filter(|b| b.calls > 0 && b.mean_ns < ns)
        .map(|b| clip(&b.name, 40))
        .collect()
}

/// Flag bricks whose mean call is shorter than the timeline's resolution (spec/sync-modes.md
/// "Resolution"): their times are at the clock's grain.
fn below_resolution(out: &mut String, d: &Derived, resolution_ns: Option<u64>) {
    let Some(r) = resolution_ns.filter(|&r| r > 1) else {
        return;
    };
    flag_list(
        out,
        format!(
            "Below the timer resolution ({}):",
            duration(r as f64).trim()
        ),
        mean_under(d, r as f64),
        "their times are at the clock's grain: time a group of them instead.",
    );
}

/// Flag bricks whose mean call is within 2x of what a mark adds to device time
/// (spec/sync-modes.md "Observer effect"): their reading is mostly the profiler's own marks.
fn near_mark_cost(out: &mut String, d: &Derived, mark_cost_ns: Option<u64>) {
    let Some(c) = mark_cost_ns.filter(|&c| c > 0) else {
        return;
    };
    flag_list(
        out,
        format!(
            "Within 2x of the marking cost ({} a mark):",
            duration(c as f64).trim()
        ),
        mean_under(d, 2.0 * c as f64),
        "their readings are mostly the marks' own device time: read them with CUPTI's \
         records\n  (cargo feature cupti) or time a group of them.",
    );
}

fn timing(out: &mut String, d: &Derived, opts: &TableOptions) {
    let mut rows: Vec<Row> = if opts.by_layer {
        d.layers.clone()
    } else {
        d.bricks.clone()
    };
    rows.retain(|r| r.calls > 0);
    opts.sort.sort(&mut rows);
    let shown = opts.top.unwrap_or(usize::MAX);
    let _ = writeln!(
        out,
        "{:<NAME_W$} {:>7} {:>8} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
        if opts.by_layer {
            "Layer Brick"
        } else {
            "Brick"
        },
        "Calls",
        "Self",
        "%",
        "Incl",
        "Mean",
        "p50",
        "p99",
        "Max",
        "Thrpt"
    );
    rule(out);
    for r in rows.iter().take(shown) {
        let _ = writeln!(
            out,
            "{:<NAME_W$} {:>7} {:>8} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
            clip(&r.name, NAME_W),
            r.calls,
            duration(r.self_ns as f64),
            percent(r.pct),
            duration(r.total_ns as f64),
            duration(r.mean_ns),
            duration(r.p50_ns as f64),
            duration(r.p99_ns as f64),
            duration(r.max_ns as f64),
            throughput(r.elements_per_sec),
        );
    }
    if rows.len() > shown {
        let _ = writeln!(out, "... {} more rows (--top)", rows.len() - shown);
    }
}

fn categories(out: &mut String, d: &Derived) {
    let _ = writeln!(
        out,
        "\n{:<NAME_W$} {:>7} {:>8} {:>6}  Share",
        "Category", "Calls", "Self", "%"
    );
    rule(out);
    for c in &d.categories {
        let _ = writeln!(
            out,
            "{:<NAME_W$} {:>7} {:>8} {:>6}  {}",
            c.name,
            c.calls,
            duration(c.self_ns as f64),
            percent(c.pct),
            bar(c.pct, 50),
        );
    }
}

fn host_vs_device(out: &mut String, d: &Derived) {
    let _ = writeln!(
        out,
        "\n{:<NAME_W$} {:>11} {:>9} {:>7}  Note",
        "Host vs device", "Device/call", "Host/call", "Host %"
    );
    rule(out);
    let mut flagged = 0;
    for r in d.bricks.iter().filter(|r| r.calls > 0) {
        let launch_bound = r.host_mean_ns > LAUNCH_BOUND_RATIO * r.mean_ns;
        flagged += usize::from(launch_bound);
        let _ = writeln!(
            out,
            "{:<NAME_W$} {:>11} {:>9} {:>7}  {}",
            clip(&r.name, NAME_W),
            duration(r.mean_ns),
            duration(r.host_mean_ns),
            percent(crate::figures::units::ratio_pct(r.host_mean_ns, r.mean_ns)),
            if launch_bound { "LAUNCH-BOUND" } else { "" }
        );
    }
    if flagged > 0 {
        let _ = writeln!(
            out,
            "{flagged} brick(s) spend more than {:.0}% of their device time dispatching: batch or \
             fuse small launches,\nor capture the pass in a graph (adopt_graph: its replays are timed \
             brick by brick on CUDA).",
            LAUNCH_BOUND_RATIO * 100.0
        );
    }
}

fn work(out: &mut String, d: &Derived, opts: &TableOptions) {
    let _ = writeln!(
        out,
        "\n{:<NAME_W$} {:>9} {:>9} {:>8} {:>5} {:>8} {:>7}  {:>7}",
        "Work", "GFLOP/s", "GB/s", "FLOP/B", "Level", "Bound", "% roof", "% time"
    );
    rule(out);
    let mut rows: Vec<Row> = d.bricks.iter().filter(|r| r.has_work()).cloned().collect();
    opts.sort.sort(&mut rows);
    for r in rows.iter().take(opts.top.unwrap_or(usize::MAX)) {
        work_line(out, &clip(&r.name, NAME_W), r);
        for t in d.tiles.iter().filter(|t| t.name == r.name) {
            let level = t.tile.map(|l| l.name()).unwrap_or("?");
            let per_call = t.calls.checked_div(r.calls).unwrap_or(0);
            work_line(out, &format!("  {level} x{per_call}/call"), t);
        }
    }
    let _ = writeln!(out, "by category");
    for c in d.categories.iter().filter(|c| c.has_work()) {
        work_line(out, &format!("  {}", c.name), c);
    }
    let all = || d.bricks.iter().chain(&d.tiles).chain(&d.categories);
    if all().any(|r| r.excess == Some(Excess::AboveEvery)) {
        let _ = writeln!(
            out,
            "! above every roof, the fastest level's too: work declared too high, or roofs too low."
        );
    }
    if all().any(|r| r.excess == Some(Excess::AboveLevel)) {
        let _ = writeln!(
            out,
            "^ above its level's roof, under a faster level's: part of its data comes from a \
             faster level\n  than its bytes per call say (reused, or counted but never read)."
        );
    }
    match &d.peaks {
        Some(p) => roofs(out, p, d.timeline),
        None => {
            let _ = writeln!(
                out,
                "No device peaks: pass --peaks PRESET|GFLOPS,GBPS for the roofline columns."
            );
        }
    }
}

/// The roofs a work section was judged against: compute, then each memory level's bandwidth
/// (spec/work-accounting.md "Cache-aware roofline").
fn roofs(out: &mut String, p: &DevicePeaks, timeline: TimelineKind) {
    let levels: Vec<String> = p
        .memory_roofs()
        .map(|(level, bytes, gbps)| match bytes {
            Some(b) => format!("{level} <={} {}", size(b), number(gbps, 1)),
            None => format!("{level} {}", number(gbps, 1)),
        })
        .collect();
    let source = p
        .source()
        .map_or(String::new(), |s| format!(" ({})", s.label()));
    let _ = writeln!(
        out,
        "Roofs{source}: {} GFLOP/s; GB/s {}",
        number(p.gflops(), 1),
        levels.join(" | "),
    );
    let _ = writeln!(
        out,
        "  ridge {} FLOP/B at DRAM: {}.\n  Level: the memory level a brick's bytes per call fit \
         in; % roof is of that level's roof.\n{}",
        number(p.ridge_point(), 2),
        clip(p.name(), 68),
        tile_note(timeline),
    );
}

/// "32K", "512K", "32M" (binary units).
fn size(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{}M", b >> 20)
    } else {
        format!("{}K", b >> 10)
    }
}

fn work_line(out: &mut String, label: &str, r: &Row) {
    let flag = match r.excess {
        Some(Excess::AboveEvery) => "!",
        Some(Excess::AboveLevel) => "^",
        _ => " ",
    };
    let _ = writeln!(
        out,
        "{:<NAME_W$} {:>9} {:>9} {:>8} {:>5} {:>8} {:>7}{flag} {:>7}",
        clip(label, NAME_W),
        number(r.gflops, 2),
        number(r.gbps, 2),
        r.intensity
            .map_or_else(|| "-".to_string(), |x| number(x, 2)),
        r.level.map(|l| l.label()).unwrap_or("-"),
        r.bound.map(|b| b.label()).unwrap_or("-"),
        r.roof_pct.map_or_else(|| "-".to_string(), percent),
        percent(r.pct),
    );
}

/// Each phase's share of its own passes' time and p50, side by side (spec/profile-format.md
/// "Phases"); then each brick's work and roofline verdict in each phase: a projection that is
/// compute-bound in prefill and memory-bound in decode gets both verdicts, never an average.
fn phases(out: &mut String, profile: &Profile, d: &Derived, opts: &TableOptions) {
    let shown: Vec<(Phase, Derived)> = crate::profile::phases_of(profile)
        .into_iter()
        .map(|p| {
            let only = crate::profile::phase_profile(profile, PhaseFilter::Only(p));
            (p, Derived::of(&only, opts.peaks.as_ref()))
        })
        .collect();
    let _ = write!(out, "\n{:<NAME_W$}", "Phases (self %, p50)");
    for (p, _) in &shown {
        let name = if *p == Phase::Unspecified {
            "unspec."
        } else {
            p.into()
        };
        let _ = write!(out, " {:>9} {:>9}", format!("{name} %"), "p50");
    }
    out.push('\n');
    rule(out);
    let mut rows: Vec<Row> = d.bricks.iter().filter(|r| r.calls > 0).cloned().collect();
    opts.sort.sort(&mut rows);
    let of = |d: &Derived, name: &str| d.bricks.iter().find(|r| r.name == name).cloned();
    for r in rows.iter().take(opts.top.unwrap_or(usize::MAX)) {
        let _ = write!(out, "{:<NAME_W$}", clip(&r.name, NAME_W));
        for (_, pd) in &shown {
            match of(pd, &r.name).filter(|x| x.calls > 0) {
                Some(x) => {
                    let _ = write!(
                        out,
                        " {:>9} {:>9}",
                        percent(x.pct),
                        duration(x.p50_ns as f64)
                    );
                }
                None => {
                    let _ = write!(out, " {:>9} {:>9}", "-", "-");
                }
            }
        }
        out.push('\n');
    }
    if !rows.iter().any(Row::has_work) {
        return;
    }
    let _ = writeln!(
        out,
        "\n{:<NAME_W$} {:>9} {:>9} {:>8} {:>5} {:>8} {:>7}  {:>7}",
        "Work by phase", "GFLOP/s", "GB/s", "FLOP/B", "Level", "Bound", "% roof", "% time"
    );
    rule(out);
    for r in rows
        .iter()
        .filter(|r| r.has_work())
        .take(opts.top.unwrap_or(usize::MAX))
    {
        // The brick's name on its own line, then one indented line a phase (as the tiles
        // below a brick): a name is never clipped to make room for its phase.
        let mut named = false;
        for (p, pd) in &shown {
            if let Some(x) = of(pd, &r.name).filter(|x| x.calls > 0 && x.has_work()) {
                if !named {
                    let _ = writeln!(out, "{}", clip(&r.name, NAME_W));
                    named = true;
                }
                work_line(out, &format!("  {p}"), &x);
            }
        }
    }
}

/// Tokens per second of each phase's passes: "prefill 812.0 tokens/s, decode 95.3 tokens/s".
fn phase_rates(profile: &Profile) -> String {
    crate::profile::phases_of(profile)
        .into_iter()
        .filter(|&p| !profile.phase_passes(p).is_empty())
        .map(|p| format!("{p} {:.1} tokens/s", profile.phase_tokens_per_sec(p)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn footer(
    out: &mut String,
    d: &Derived,
    merged_from: u64,
    bound_ns: Option<u64>,
    phase_rates: Option<String>,
) {
    let c = &d.counters;
    let rate = match &phase_rates {
        Some(_) => String::new(),
        None => format!(
            " | {}",
            crate::figures::units::rate(d.tokens_per_sec, " tokens/s")
        ),
    };
    if c.passes == 0 {
        // No pass was marked (an imported vendor file): no wall time or rate to give.
        let _ = writeln!(
            out,
            "\nTime in bricks (self) {} | no passes marked",
            duration(d.total_ns as f64)
        );
    } else {
        let _ = writeln!(
            out,
            "\nTime in bricks (self) {} | {} passes, {} tokens{rate} | wall {}/pass (p50 {})",
            duration(d.total_ns as f64),
            c.passes,
            c.tokens,
            duration(d.pass_mean_ns),
            duration(d.pass_p50_ns as f64),
        );
    }
    if let Some(rates) = phase_rates {
        // Never one mixed rate: a prompt token and a generated token cost different work.
        let _ = writeln!(out, "Throughput by phase: {}", clip(&rates, 78));
    }
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
    if c.unclosed > 0 {
        notes.push(format!(
            "{} bricks never stopped (closed by end_pass, unrecorded)",
            c.unclosed
        ));
    }
    if c.stray_stops > 0 {
        notes.push(format!(
            "{} stray stops (tokens of another profiler or a closed pass)",
            c.stray_stops
        ));
    }
    if c.out_of_range_layers > 0 {
        notes.push(format!(
            "{} out-of-range layer indices (row 'unassigned')",
            c.out_of_range_layers
        ));
    }
    if c.passes > 0 || c.syncs > 0 {
        notes.push(format!("{} syncs", c.syncs));
    }
    if d.sync_mode == SyncMode::Lagged || c.blocking_waits > 0 {
        notes.push(format!("{} blocking waits", c.blocking_waits));
    }
    if let Some(b) = bound_ns.filter(|_| d.timeline != TimelineKind::Cpu) {
        notes.push(format!(
            "device clock within ±{} of host",
            duration(b as f64)
        ));
    }
    if merged_from > 1 {
        notes.push(format!("merged from {merged_from} profiles"));
    }
    if !notes.is_empty() {
        let _ = writeln!(out, "{}", notes.join(" | "));
    }
}

/// What the run did with device graphs (spec/sync-modes.md "Graph capture"): passes captured,
/// replays timed, and the graphs whose replays were counted, not timed, by executable handle.
fn graph_notes(out: &mut String, c: &crate::model::Counters, untimed_graphs: &[u64]) {
    if c.captured_passes > 0 || c.graph_replays > 0 {
        let _ = writeln!(
            out,
            "{} passes captured into graphs (not timed themselves); {} graph replays timed as \
             passes",
            c.captured_passes, c.graph_replays
        );
    }
    if c.untimed_replays > 0 {
        // At most 8 (a profile keeps at most 8; a hand-made file may hold more).
        let mut names: Vec<String> = untimed_graphs
            .iter()
            .take(8)
            .map(|e| format!("{e:#x}"))
            .collect();
        if names.is_empty() {
            names.push("not named".into());
        }
        let _ = writeln!(
            out,
            "{} graph replays NOT timed (graphs {}): adopt each graph after its captured pass \
             (adopt_graph), on a timeline that times replays",
            c.untimed_replays,
            names.join(", ")
        );
    }
}

/// What a tile's "% time" means on this timeline (spec/work-accounting.md "Tiles").
fn tile_note(timeline: TimelineKind) -> &'static str {
    if timeline == TimelineKind::Cpu {
        "A tile's % time is its share of its brick's time."
    } else {
        "Tiles are host time: a tile's % time is its share of its brick's host dispatch time."
    }
}

fn rule(out: &mut String) {
    out.push_str(&"-".repeat(100));
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::{BrickId, BrickProfiler, ProfilerConfig};

    fn sampled(sampling: Sampling, layers: usize, passes: usize, bricks: usize) -> Profile {
        let config = ProfilerConfig {
            layers,
            sampling,
            ..ProfilerConfig::default()
        };
        let mut prof = BrickProfiler::new(config).unwrap();
        for _ in 0..passes {
            for layer in 0..layers.max(1) {
                if layers > 0 {
                    prof.begin_layer(layer);
                }
                for _ in 0..bricks {
                    let t = prof.start_brick(BrickId::RmsNorm);
                    prof.stop_brick(t, 1);
                }
                if layers > 0 {
                    prof.end_layer();
                }
            }
            prof.end_pass(1).unwrap();
        }
        prof.profile()
    }

    /// spec/sync-modes.md "Sampling": the footer says how many marks the plan saved per pass.
    #[test]
    fn the_footer_counts_the_marks_the_sampling_plan_saves() {
        // One pass in 4 marked: 3 passes x 10 starts unmarked = 60 marks over 4 passes.
        let every = sampled(Sampling::every(4).unwrap(), 0, 4, 10);
        assert_eq!(every.meta.counters.sampled_out, 30);
        let table = render_table(&every, &TableOptions::default());
        assert!(
            table.contains(
                "Sampling every 4th pass: 3 of 4 passes unmarked, 15 marks saved per pass, 5 made"
            ),
            "{table}"
        );
        // Layer boundaries: 2 layers x 3 bricks unmarked, the 2 `layer` bricks marked.
        let layers = sampled(Sampling::Layers, 2, 1, 3);
        assert_eq!(layers.meta.counters.sampled_out, 6);
        let table = render_table(&layers, &TableOptions::default());
        assert!(
            table.contains(
                "Sampling layer boundaries: 12 marks per pass avoided inside layers, 4 made"
            ),
            "{table}"
        );
        // Bursts of 2 passes, 3 untraced after: passes 0, 1, 5, 6 of 7 traced, 3 x 10 starts
        // unmarked = 60 marks over 7 passes.
        let bursts = sampled(Sampling::bursts(2, 3).unwrap(), 0, 7, 10);
        assert_eq!(bursts.meta.counters.sampled_out, 30);
        let table = render_table(&bursts, &TableOptions::default());
        assert!(
            table.contains(
                "Sampling in bursts of 2 passes, 3 untraced after each: 4 of 7 passes traced, \
                 9 marks saved per pass, 11 made"
            ),
            "{table}"
        );
        // Every brick marked: no line, nothing counted.
        let all = sampled(Sampling::All, 0, 2, 3);
        assert_eq!(all.meta.counters.sampled_out, 0);
        assert!(!render_table(&all, &TableOptions::default()).contains("Sampling "));
        // A profiler the user disabled saves nothing by sampling: not counted.
        let mut off = BrickProfiler::new(ProfilerConfig {
            sampling: Sampling::every(2).unwrap(),
            enabled: false,
            ..ProfilerConfig::default()
        })
        .unwrap();
        let t = off.start_brick(BrickId::RmsNorm);
        off.stop_brick(t, 1);
        assert_eq!(off.view().counters.sampled_out, 0);
    }

    #[test]
    fn numbers_are_grouped_and_ordinals_suffixed() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_234), "1,234");
        assert_eq!(grouped(12_345_678), "12,345,678");
        let ord: Vec<&str> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 111]
            .map(ordinal_suffix)
            .to_vec();
        assert_eq!(
            ord,
            ["st", "nd", "rd", "th", "th", "th", "th", "st", "nd", "th"]
        );
    }

    #[test]
    fn clip_keeps_rows_on_one_line_and_marks_cuts() {
        assert_eq!(clip("a\nb", 10), "a b");
        assert_eq!(clip("abcdef", 4), "abc~");
        assert_eq!(clip("abc", 3), "abc");
    }
}
