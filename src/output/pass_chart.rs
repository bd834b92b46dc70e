//! The HTML report's `passes` section: each shaped pass of the profile's pass series as a point
//! of (context tokens, wall time) on two log axes, prefill, decode and mixed apart, with the
//! TPOT p50 and the TTFT p50 as dashed lines. Bounded whatever the numbers: log axes, and at
//! most [`MAX_PASS_POINTS`] points. Specified in `spec/html-report.md` ("passes").

use super::svg::{palette, LogAxis, Svg};
use crate::figures::latency::{latency, Latency};
use crate::figures::units::duration;
use crate::model::phase::Phase;
use crate::stats::pass_series::PassSeries;

/// The most points the chart draws: past that, every k-th shaped pass (k the smallest that
/// keeps them within it), oldest first, and a note says so.
pub(crate) const MAX_PASS_POINTS: usize = 2_000;

/// One shaped pass as drawn.
struct Point {
    phase: Phase,
    new_tokens: u32,
    sequences: u32,
    context: u64,
    wall_ns: u64,
}

/// The chart's SVG and its note, or `None` when no pass of the series has a shape (the report
/// then has no `passes` section).
pub(crate) fn pass_chart(series: &PassSeries) -> Option<String> {
    let l = latency(series)?;
    let shaped: Vec<Point> = series
        .records()
        .filter_map(|r| {
            let s = r.shape()?;
            Some(Point {
                phase: s.phase(),
                new_tokens: s.new_tokens(),
                sequences: s.sequences(),
                context: s.context_tokens(),
                wall_ns: r.wall_ns(),
            })
        })
        .collect();
    let step = shaped.len().div_ceil(MAX_PASS_POINTS).max(1);
    let points: Vec<&Point> = shaped.iter().step_by(step).collect();
    let mut out = draw(&points, &l);
    out.push_str(&format!(
        "\n<p class=\"note\">{} shaped passes{}. Dots: one pass, its wall time against the context it attended; TPOT p50 is one decode pass's wall time, TTFT p50 a prompt's prefill passes summed.</p>",
        shaped.len(),
        if step > 1 {
            format!(
                ", one in {step} drawn ({} points: at most {MAX_PASS_POINTS})",
                points.len()
            )
        } else {
            String::new()
        }
    ));
    Some(out)
}

fn phase_style(p: Phase) -> (&'static str, &'static str) {
    match p {
        Phase::Prefill => ("pass prefill", palette(0)),
        Phase::Decode => ("pass decode", palette(1)),
        Phase::Mixed | Phase::Unspecified => ("pass mixed", palette(2)),
    }
}

fn draw(points: &[&Point], l: &Latency) -> String {
    let tpot = l.tpot.percentile_ns(50);
    let ttft = l.ttft.percentile_ns(50);
    let walls = points
        .iter()
        .map(|p| p.wall_ns)
        .chain(tpot)
        .chain(ttft)
        .map(|ns| ns.max(1) as f64);
    let lo_y = walls.clone().fold(f64::INFINITY, f64::min);
    let hi_y = walls.fold(1.0, f64::max);
    let contexts = points.iter().map(|p| p.context.max(1) as f64);
    let lo_x = contexts.clone().fold(f64::INFINITY, f64::min);
    let hi_x = contexts.fold(1.0, f64::max);
    let (w, h, left, right, top, bottom) = (760.0, 400.0, 70.0, 20.0, 20.0, 50.0);
    let x = LogAxis::covering(lo_x, hi_x, left, w - right);
    let y = LogAxis::covering(lo_y, hi_y, h - bottom, top);
    let mut s = Svg::new(w, h, "passes");
    s.log_frame(
        (&x, &y),
        (w, h, left, right, top, bottom),
        ("context tokens attended", "pass wall time"),
        duration,
    );
    for p in points {
        let (class, fill) = phase_style(p.phase);
        s.circle(
            class,
            x.px(p.context.max(1) as f64),
            y.px(p.wall_ns.max(1) as f64),
            3.0,
            fill,
            &format!(
                "{} pass: {} new tokens, {} sequences, {} context tokens, {}",
                p.phase,
                p.new_tokens,
                p.sequences,
                p.context,
                duration(p.wall_ns as f64)
            ),
        );
    }
    let mut level = |class: &str, ns: u64, label: String| {
        let py = y.px(ns.max(1) as f64);
        s.line(class, left, py, w - right, py);
        s.text(
            &format!("small {class}-label"),
            w - right - 4.0,
            py - 4.0,
            "end",
            0.0,
            &label,
        );
    };
    if let Some(ns) = tpot {
        let n = l.tpot.count();
        level(
            "tpot",
            ns,
            format!("TPOT p50 {} ({n} decode passes)", duration(ns as f64)),
        );
    }
    if let Some(ns) = ttft {
        let n = l.ttft.count();
        level(
            "ttft",
            ns,
            format!("TTFT p50 {} ({n} prompts)", duration(ns as f64)),
        );
    }
    for (i, phase) in [Phase::Prefill, Phase::Decode, Phase::Mixed]
        .into_iter()
        .enumerate()
    {
        let (_, fill) = phase_style(phase);
        let lx = left + 10.0 + 90.0 * i as f64;
        s.circle("legend", lx, top + 8.0, 4.0, fill, &phase.to_string());
        s.text(
            "small",
            lx + 8.0,
            top + 12.0,
            "start",
            0.0,
            &phase.to_string(),
        );
    }
    s.finish()
}
