//! `brickprof report PROFILE --html out.html`: one self-contained HTML file, inline SVG, no
//! network and no script needed to read it. Sections: a summary, a layer × brick heatmap, the
//! categories, the top bricks with p50/p99, the passes (when they have shapes), the roofline
//! and, given a second profile, a comparison. Specified in `spec/html-report.md`.

use std::fmt::Write as _;

use super::error_map::error_heatmap;
use super::pass_chart::pass_chart;
use super::svg::{escape, heat, palette, tick_label, LogAxis, Svg};
use crate::compare::diff::DiffOutcome;
use crate::figures::units::{duration, number, percent, ratio_pct};
use crate::profile::{Profile, RowKey};
use crate::roofline::{DevicePeaks, Roofline};
use crate::{stats::BrickStats, BrickCategory};

/// The time a heatmap cell, a bar or a ranking shows for `stats`: the one place that chooses.
/// Self time (inclusive time minus the bricks nested directly inside), so nested bricks are
/// not counted twice.
pub(crate) fn shown_ns(stats: &BrickStats) -> u64 {
    stats.self_ns()
}

/// What to put in the report.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlOptions<'a> {
    /// Device peaks for the roofline (default: the profile's own).
    pub peaks: Option<&'a DevicePeaks>,
    /// A second profile to compare with, and its label.
    pub compare: Option<(&'a Profile, &'a str)>,
    /// The profile's label (e.g. its file name).
    pub label: &'a str,
    /// Bricks in the "top bricks" chart (0: 15).
    pub top: usize,
    /// A diff of this run (the reference) against a candidate, and the candidate's label: an
    /// error heat map (layer × brick) is drawn from it.
    pub diff: Option<(&'a DiffOutcome, &'a str)>,
}

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff;max-width:1200px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.meta{color:#555} .meta b{color:#222}
svg text{font:11px system-ui,sans-serif;fill:#222} svg .small{font-size:10px;fill:#555}
svg .axis{stroke:#444;stroke-width:1} svg .grid{stroke:#ddd;stroke-width:1}
svg .roof{fill:none;stroke:#a50f15;stroke-width:2.5} svg .roof-level{fill:none;stroke:#a50f15;stroke-width:1.5;stroke-dasharray:6 3} svg .level{fill:#a50f15} svg .ridge{stroke:#a50f15;stroke-dasharray:4 3}
svg .cell{stroke:#fff;stroke-width:1} svg .born{stroke:#000;stroke-width:2.5} svg .on-dark{fill:#fff} svg .p99{stroke:#222;stroke-width:1.5}
svg .tpot{stroke:#1f78b4;stroke-width:1.5;stroke-dasharray:6 3} svg .ttft{stroke:#a50f15;stroke-width:1.5;stroke-dasharray:2 3}
.note{color:#666;font-size:12px}
"#;

/// Render the report as one HTML document.
pub(crate) fn render_html(profile: &Profile, opts: &HtmlOptions<'_>) -> String {
    let profile = &*crate::profile::phase_view::folded(profile, crate::model::PhaseFilter::All);
    let peaks = opts.peaks.or(profile.meta.peaks.as_ref());
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>brickprof report: {}</title><style>{STYLE}</style></head><body>\n",
        escape(opts.label)
    );
    summary(&mut h, profile, opts.label, peaks);
    section(
        &mut h,
        "heatmap",
        "Layer × brick: time per cell",
        &heatmap(profile),
    );
    section(&mut h, "categories", "Categories", &categories(profile));
    let top = if opts.top == 0 { 15 } else { opts.top };
    section(
        &mut h,
        "top",
        &format!("Top {top} bricks by time, with p50 and p99 per call"),
        &top_bricks(profile, top),
    );
    if let Some(chart) = profile.pass_series.as_ref().and_then(pass_chart) {
        section(
            &mut h,
            "passes",
            "Passes: wall time against context, with TTFT and TPOT",
            &chart,
        );
    }
    match peaks {
        Some(p) => section(&mut h, "roofline", "Roofline", &roofline(profile, p)),
        None => section(
            &mut h,
            "roofline",
            "Roofline",
            "<p class=\"note\">No device peaks in the profile: pass --peaks PRESET|GFLOPS,GBPS.</p>",
        ),
    }
    if let Some((other, label)) = opts.compare {
        section(
            &mut h,
            "compare",
            &format!("Comparison: {} vs {}", opts.label, label),
            &compare(profile, opts.label, other, label),
        );
    }
    if let Some((d, label)) = opts.diff {
        section(
            &mut h,
            "errors",
            &format!("Error heat map: {} vs {}, layer × brick", opts.label, label),
            &errors(profile, d),
        );
    }
    let _ = write!(
        h,
        "<p class=\"note\">Written by brickprof {}. Hover any cell, bar or point for its numbers.</p>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
    h
}

/// The error section: what the diff found, in a line, and the heat map.
fn errors(reference: &Profile, d: &DiffOutcome) -> String {
    let (Some(report), Some(log)) = (&d.checksums, reference.checksums.as_ref()) else {
        return "<p class=\"note\">The runs carry no checksums to compare: record both with checksums.</p>"
            .into();
    };
    let mut line = format!(
        "{} kernels compared, {} bitwise equal, {} differ, {} diverged",
        report.compared,
        report.bitwise_equal,
        report.divergences.len(),
        report.diverged_count()
    );
    if let Some(k) = d.flow.as_ref().and_then(|f| f.born.first()) {
        line.push_str(&format!("; error is born at {k}"));
    }
    if let Some(t) = &d.first_token_difference {
        line.push_str(&format!("; first differing token: {t}"));
    }
    format!(
        "<p class=\"meta\">{}.</p>\n{}",
        escape(&line),
        error_heatmap(log, report, d.flow.as_ref())
    )
}

fn section(h: &mut String, id: &str, title: &str, body: &str) {
    let _ = write!(
        h,
        "<section id=\"{id}\"><h2>{}</h2>\n{body}\n</section>\n",
        escape(title)
    );
}

fn summary(h: &mut String, p: &Profile, label: &str, peaks: Option<&DevicePeaks>) {
    let m = &p.meta;
    let _ = write!(
        h,
        "<h1>brickprof report: {}</h1><p class=\"meta\">timeline <b>{}</b> · sync <b>{}</b> · {} layers · <b>{}</b> passes, <b>{}</b> tokens · <b>{:.1}</b> tokens/s · time in bricks <b>{}</b>",
        escape(label),
        m.timeline.name(),
        m.sync_mode,
        m.layers,
        m.counters.passes,
        m.counters.tokens,
        p.tokens_per_sec(),
        duration(total(p) as f64),
    );
    if let Some(pk) = peaks {
        let _ = write!(
            h,
            " · peaks <b>{}</b>: {} GFLOP/s, {} GB/s",
            escape(pk.name()),
            number(pk.gflops(), 1),
            number(pk.gbps(), 1)
        );
    }
    h.push_str("</p>\n");
}

/// Sum of the shown time over every brick (saturating: extreme values cannot overflow it).
fn total(p: &Profile) -> u64 {
    p.bricks
        .iter()
        .fold(0u64, |t, b| t.saturating_add(shown_ns(&b.stats)))
}

fn row_label(r: RowKey) -> String {
    match r {
        RowKey::Layer(n) => format!("layer {n}"),
        other => other.to_string(),
    }
}

fn heatmap(p: &Profile) -> String {
    let bricks: Vec<_> = p.bricks.iter().filter(|b| shown_ns(&b.stats) > 0).collect();
    let mut rows: Vec<RowKey> = bricks
        .iter()
        .flat_map(|b| b.rows.iter().map(|r| r.row))
        .collect();
    rows.sort_unstable();
    rows.dedup();
    if bricks.is_empty() || rows.is_empty() {
        return "<p class=\"note\">No measurements.</p>".into();
    }
    let whole = total(p) as f64;
    let max = bricks
        .iter()
        .flat_map(|b| b.rows.iter().map(|r| shown_ns(&r.stats)))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let (cw, ch, left, top) = (58.0, 20.0, 80.0, 110.0);
    let width = left + cw * bricks.len() as f64 + 90.0;
    let height = top + ch * rows.len() as f64 + 30.0;
    let mut s = Svg::new(width, height, "heatmap");
    for (j, b) in bricks.iter().enumerate() {
        let x = left + cw * j as f64 + cw / 2.0;
        s.text("col", x, top - 8.0, "start", -45.0, &b.name);
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + ch * i as f64;
        s.text("row", left - 6.0, y + ch * 0.7, "end", 0.0, &row_label(*r));
        for (j, b) in bricks.iter().enumerate() {
            let x = left + cw * j as f64;
            let Some(cell) = b.rows.iter().find(|c| c.row == *r) else {
                s.rect("cell empty", (x, y, cw, ch), "#f4f4f4", "no calls");
                continue;
            };
            let ns = shown_ns(&cell.stats) as f64;
            // Square root: small cells stay visible next to the matmuls.
            let fill = heat((ns / max).sqrt());
            let pct = ratio_pct(ns, whole);
            let title = format!(
                "{} · {}: {} ({pct:.2}% of all), {} calls, p50 {}, p99 {}",
                row_label(*r),
                b.name,
                duration(ns),
                cell.stats.count(),
                duration(cell.stats.p50_ns() as f64),
                duration(cell.stats.p99_ns() as f64)
            );
            s.rect("cell", (x, y, cw, ch), &fill, &title);
            if pct >= 0.05 {
                let class = if ns / max > 0.3 {
                    "small on-dark"
                } else {
                    "small"
                };
                s.text(
                    class,
                    x + cw / 2.0,
                    y + ch * 0.7,
                    "middle",
                    0.0,
                    &format!("{pct:.1}%"),
                );
            }
        }
    }
    s.text(
        "small",
        left,
        height - 8.0,
        "start",
        0.0,
        &format!(
            "Colour: √(cell time / largest cell, {}); numbers: % of all brick time.",
            duration(max)
        ),
    );
    s.finish()
}

fn categories(p: &Profile) -> String {
    let cats = p.category_stats();
    let whole = total(p) as f64;
    let (left, bar_w, bh) = (110.0, 600.0, BAR_ROW);
    let mut s = Svg::new(
        left + bar_w + 160.0,
        bh * cats.len() as f64 + 10.0,
        "categories",
    );
    for (i, (c, st)) in cats.iter().enumerate() {
        let y = 4.0 + bh * i as f64;
        let ns = shown_ns(st) as f64;
        let pct = ratio_pct(ns, whole);
        s.text("row", left - 6.0, y + bh * 0.65, "end", 0.0, c.name());
        let title = format!(
            "{}: {} ({pct:.1}%), {} calls",
            c.name(),
            duration(ns),
            st.count()
        );
        share_bar(
            &mut s,
            (left, y, bar_w),
            pct,
            ns,
            palette(*c as usize),
            &title,
        );
    }
    s.finish()
}

/// Height of a bar chart's row.
const BAR_ROW: f64 = 22.0;

/// A bar of `pct`% of `width` at `(left, top of row)`, its share and time printed after it.
fn share_bar(
    s: &mut Svg,
    (left, y, width): (f64, f64, f64),
    pct: f64,
    ns: f64,
    fill: &str,
    title: &str,
) {
    let w = width * pct / 100.0;
    s.rect("bar", (left, y + 3.0, w, BAR_ROW - 6.0), fill, title);
    let label = format!("{pct:.1}%  {}", duration(ns));
    s.text(
        "small",
        left + w + 6.0,
        y + BAR_ROW * 0.65,
        "start",
        0.0,
        &label,
    );
}

fn top_bricks(p: &Profile, top: usize) -> String {
    let mut bricks: Vec<_> = p.bricks.iter().filter(|b| shown_ns(&b.stats) > 0).collect();
    bricks.sort_by_key(|b| std::cmp::Reverse(shown_ns(&b.stats)));
    bricks.truncate(top);
    let whole = total(p) as f64;
    let max_p99 = bricks
        .iter()
        .map(|b| b.stats.p99_ns())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let (left, bar_w, gap, dist_w, bh) = (150.0, 330.0, 70.0, 260.0, BAR_ROW);
    let width = left + bar_w + gap + dist_w + 130.0;
    let mut s = Svg::new(width, bh * (bricks.len() + 1) as f64 + 10.0, "top");
    let dx = left + bar_w + gap;
    s.text("small", left, 14.0, "start", 0.0, "share of all brick time");
    s.text("small", dx, 14.0, "start", 0.0, "per call: p50 ● — p99 |");
    for (i, b) in bricks.iter().enumerate() {
        let y = bh * (i + 1) as f64;
        let ns = shown_ns(&b.stats) as f64;
        let pct = ratio_pct(ns, whole);
        s.text("row", left - 6.0, y + bh * 0.65, "end", 0.0, &b.name);
        let (p50, p99) = (b.stats.p50_ns() as f64, b.stats.p99_ns() as f64);
        let title = format!(
            "{}: {} ({pct:.1}%), {} calls, mean {}, p50 {}, p99 {}",
            b.name,
            duration(ns),
            b.stats.count(),
            duration(b.stats.mean_ns()),
            duration(p50),
            duration(p99)
        );
        share_bar(
            &mut s,
            (left, y, bar_w),
            pct,
            ns,
            palette(b.category as usize),
            &title,
        );
        let (x50, x99) = (dx + dist_w * p50 / max_p99, dx + dist_w * p99 / max_p99);
        s.line("grid", dx, y + bh / 2.0, dx + dist_w, y + bh / 2.0);
        s.line("p99", x50, y + bh / 2.0, x99, y + bh / 2.0);
        s.line("p99", x99, y + 5.0, x99, y + bh - 5.0);
        s.circle(
            "p50",
            x50,
            y + bh / 2.0,
            4.0,
            palette(b.category as usize),
            &title,
        );
        s.text(
            "small",
            dx + dist_w + 4.0,
            y + bh * 0.65,
            "start",
            0.0,
            &format!("{} / {}", duration(p50), duration(p99)),
        );
    }
    s.finish()
}

/// A brick on the roofline chart.
struct RooflinePoint<'a> {
    name: &'a str,
    category: BrickCategory,
    ai: f64,
    gflops: f64,
    roof: Roofline,
    share: f64,
}

fn roofline(p: &Profile, peaks: &DevicePeaks) -> String {
    let points = roofline_points(p, peaks);
    let ridge = peaks.ridge_point();
    // Cache roofs are faster than DRAM's: their ridges lie left of it.
    let lo_ridge = peaks.gflops() / peaks.fastest_gbps().max(peaks.gbps());
    let lo_x = points.iter().map(|q| q.ai).fold(lo_ridge / 10.0, f64::min);
    let hi_x = points.iter().map(|q| q.ai).fold(ridge * 10.0, f64::max);
    let lo_y = points
        .iter()
        .map(|q| q.gflops)
        .fold(peaks.gflops() / 100.0, f64::min);
    let (w, h, left, top, bottom) = (760.0, 440.0, 70.0, 20.0, 50.0);
    let x = LogAxis::covering(lo_x, hi_x, left, w - 20.0);
    let y = LogAxis::covering(lo_y, peaks.gflops() * 2.0, h - bottom, top);
    let mut s = Svg::new(w, h, "roofline");
    s.log_frame(
        (&x, &y),
        (w, h, left, 20.0, top, bottom),
        ("arithmetic intensity (FLOP/byte)", "achieved GFLOP/s"),
        tick_label,
    );
    roofs(&mut s, (&x, &y), peaks, h - bottom);
    roofline_bricks(&mut s, (&x, &y), &points);
    s.finish()
}

/// The bricks with an arithmetic intensity and a rate, where they sit against `peaks`.
fn roofline_points<'a>(p: &'a Profile, peaks: &DevicePeaks) -> Vec<RooflinePoint<'a>> {
    let whole = total(p) as f64;
    p.bricks
        .iter()
        .filter_map(|b| {
            let ai = b.stats.arithmetic_intensity()?;
            let gflops = b.stats.gflops();
            (ai > 0.0 && gflops > 0.0).then(|| RooflinePoint {
                name: &b.name,
                category: b.category,
                ai,
                gflops,
                roof: Roofline::classify(&b.stats, peaks),
                share: ratio_pct(shown_ns(&b.stats) as f64, whole),
            })
        })
        .collect()
}

/// The DRAM roof, one dashed roof per cache level, the ridge and their labels; `base`: the
/// plot's bottom edge in pixels.
fn roofs(s: &mut Svg, (x, y): (&LogAxis, &LogAxis), peaks: &DevicePeaks, base: f64) {
    let ridge = peaks.ridge_point();
    let (x_lo, x_hi) = x.range();
    let roof: Vec<(f64, f64)> = [x_lo, ridge, x_hi]
        .iter()
        .map(|&ai| (x.px(ai), y.px((ai * peaks.gbps()).min(peaks.gflops()))))
        .collect();
    s.polyline(
        "roof",
        &roof,
        &format!(
            "roof: {} GB/s × intensity, capped at {} GFLOP/s (ridge at {} FLOP/B)",
            number(peaks.gbps(), 1),
            number(peaks.gflops(), 1),
            number(ridge, 2)
        ),
    );
    // One dashed roof per cache level (spec/html-report.md "Sections", `roofline`), labelled on its
    // slope.
    for c in peaks.levels() {
        let r = peaks.gflops() / c.gbps();
        let pts: Vec<(f64, f64)> = [x_lo, r.clamp(x_lo, x_hi), x_hi]
            .iter()
            .map(|&ai| (x.px(ai), y.px((ai * c.gbps()).min(peaks.gflops()))))
            .collect();
        s.polyline(
            "roof-level",
            &pts,
            &format!(
                "{} roof (working sets up to {} KiB): {} GB/s × intensity, ridge at {} FLOP/B",
                c.level(),
                c.bytes() >> 10,
                number(c.gbps(), 1),
                number(r, 2)
            ),
        );
        s.text(
            "small level",
            x.px(x_lo) + 4.0,
            y.px((x_lo * c.gbps()).min(peaks.gflops())) - 4.0,
            "start",
            0.0,
            &format!("{} {} GB/s", c.level(), number(c.gbps(), 1)),
        );
    }
    if !peaks.levels().is_empty() {
        s.text(
            "small level",
            x.px(x_lo) + 4.0,
            y.px((x_lo * peaks.gbps()).min(peaks.gflops())) + 12.0,
            "start",
            0.0,
            &format!("DRAM {} GB/s", number(peaks.gbps(), 1)),
        );
    }
    s.line(
        "ridge",
        x.px(ridge),
        y.px(peaks.gflops()),
        x.px(ridge),
        base,
    );
    s.text(
        "small",
        x.px(x_hi) - 4.0,
        y.px(peaks.gflops()) - 6.0,
        "end",
        0.0,
        &format!("{} GFLOP/s", number(peaks.gflops(), 1)),
    );
    s.text(
        "small",
        x.px(ridge) + 4.0,
        base - 6.0,
        "start",
        0.0,
        &format!(
            "ridge {} FLOP/B · {} GB/s",
            number(ridge, 2),
            number(peaks.gbps(), 1)
        ),
    );
}

/// A circle a brick (its area its share of the time), labelled when large and free.
fn roofline_bricks(s: &mut Svg, (x, y): (&LogAxis, &LogAxis), points: &[RooflinePoint<'_>]) {
    let mut labels = Vec::new();
    for q in points {
        let (px, py) = (x.px(q.ai), y.px(q.gflops));
        let r = 3.0 + (q.share.max(0.0)).sqrt().min(9.0);
        s.circle(
            "brick",
            px,
            py,
            r,
            palette(q.category as usize),
            &format!(
                "{}: {} FLOP/B, {} GFLOP/s, {} bound in {}, {} of its roof{}, {:.1}% of time",
                q.name,
                number(q.ai, 2),
                number(q.gflops, 2),
                q.roof.bound.label(),
                q.roof.level.map_or("-", |l| l.label()),
                percent(q.roof.roof_pct),
                match q.roof.excess {
                    crate::roofline::Excess::AboveEvery =>
                        " (above every roof: work declared too high, or roofs too low)",
                    crate::roofline::Excess::AboveLevel => " (above its level's roof)",
                    crate::roofline::Excess::Within => "",
                },
                q.share
            ),
        );
        // Label the larger points, unless the label would overprint one already placed.
        let free = !labels
            .iter()
            .any(|&(lx, ly): &(f64, f64)| (lx - px).abs() < 90.0 && (ly - py).abs() < 11.0);
        if q.share >= 1.0 && free {
            s.text("small", px + r + 2.0, py + 3.0, "start", 0.0, q.name);
            labels.push((px, py));
        }
    }
}

fn compare(a: &Profile, a_label: &str, b: &Profile, b_label: &str) -> String {
    let mut names: Vec<&str> = a.bricks.iter().map(|x| x.name.as_str()).collect();
    for x in &b.bricks {
        if !names.contains(&x.name.as_str()) {
            names.push(&x.name);
        }
    }
    let time = |p: &Profile, n: &str| p.brick(n).map_or(0, |x| shown_ns(&x.stats));
    names.retain(|n| time(a, n) > 0 || time(b, n) > 0);
    names.sort_by_key(|n| std::cmp::Reverse(time(a, n).max(time(b, n))));
    let max = names
        .iter()
        .map(|n| time(a, n).max(time(b, n)))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let (left, bar_w, bh) = (150.0, 480.0, 28.0);
    let mut s = Svg::new(
        left + bar_w + 200.0,
        bh * (names.len() + 1) as f64 + 10.0,
        "compare",
    );
    s.rect("legend", (left, 4.0, 12.0, 10.0), palette(0), a_label);
    s.text("small", left + 16.0, 13.0, "start", 0.0, a_label);
    s.rect(
        "legend",
        (left + 220.0, 4.0, 12.0, 10.0),
        palette(1),
        b_label,
    );
    s.text("small", left + 236.0, 13.0, "start", 0.0, b_label);
    for (i, n) in names.iter().enumerate() {
        let y = bh * (i + 1) as f64;
        let (ta, tb) = (time(a, n) as f64, time(b, n) as f64);
        s.text("row", left - 6.0, y + bh * 0.6, "end", 0.0, n);
        s.rect(
            "bar a",
            (left, y + 2.0, bar_w * ta / max, (bh - 6.0) / 2.0),
            palette(0),
            &format!("{n} in {a_label}: {}", duration(ta)),
        );
        s.rect(
            "bar b",
            (
                left,
                y + 2.0 + (bh - 6.0) / 2.0,
                bar_w * tb / max,
                (bh - 6.0) / 2.0,
            ),
            palette(1),
            &format!("{n} in {b_label}: {}", duration(tb)),
        );
        let delta = if ta > 0.0 {
            format!("{:+.1}%", (tb - ta) / ta * 100.0)
        } else {
            "new".to_string()
        };
        s.text(
            "small",
            left + bar_w + 8.0,
            y + bh * 0.6,
            "start",
            0.0,
            &format!("{} → {} ({delta})", duration(ta), duration(tb)),
        );
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_time_is_self_time() {
        let mut s = BrickStats::new();
        s.record_nested(700, 300, 10, crate::Work::NONE);
        assert_eq!(shown_ns(&s), 300);
    }
}
