//! The HTML report's error heat map (spec/html-report.md "Sections", `errors`): given a diff, one
//! cell per (layer, brick) of the reference's checksum log, coloured by the largest error of
//! that brick in that layer over every pass and call (the captures' relative L2 error when
//! both runs captured the kernel, else the summaries' largest relative difference; see
//! spec/divergence.md), on a log scale. Bitwise-equal cells are green, cells never recorded
//! grey; the kernels where error is born are outlined.

use std::collections::HashMap;

use super::svg::{heat, Svg};
use crate::base::printable::printable;
use crate::checksum::{ChecksumLog, KernelKey};
use crate::compare::divergence::{DivergenceReport, ErrorFlow, Verdict};

/// One (layer, brick) cell.
#[derive(Debug, Clone, Default)]
struct Cell {
    /// Kernels of the reference in this cell (passes × calls).
    kernels: usize,
    /// Of those, how many differ.
    differing: usize,
    /// Of those, how many were judged diverged.
    diverged: usize,
    /// The largest error, and the kernel that has it.
    worst: Option<(f64, KernelKey)>,
    /// Elementwise cosine and SQNR of the worst kernel, when captured.
    captured: Option<(f64, f64)>,
    /// Error is born in this cell.
    born: bool,
}

/// `layer N` or `model`.
fn row_label(layer: Option<u32>) -> String {
    layer.map_or_else(|| "model".to_string(), |l| format!("layer {l}"))
}

/// The cells of the map: columns (bricks in the order the reference first records them),
/// rows (layers, then model) and each cell's kernels, errors and birthplaces.
struct Grid<'a> {
    bricks: Vec<&'a str>,
    rows: Vec<Option<u32>>,
    cells: HashMap<(Option<u32>, &'a str), Cell>,
}

/// The error heat map as an SVG (or a note when the runs carry no checksums to compare).
pub(crate) fn error_heatmap(
    reference: &ChecksumLog,
    report: &DivergenceReport,
    flow: Option<&ErrorFlow>,
) -> String {
    let Grid {
        bricks,
        rows,
        cells,
    } = grid(reference, report, flow);
    if bricks.is_empty() {
        return "<p class=\"note\">The reference carries no checksums to compare.</p>".into();
    }
    let (lo, hi) = colour_scale(&cells);
    let frac = |e: f64| {
        if !e.is_finite() {
            1.0
        } else if hi <= 0.0 || e <= 0.0 {
            0.0
        } else {
            ((e / lo).log10() / (hi / lo).log10()).clamp(0.0, 1.0)
        }
    };
    let (cw, ch, left, top) = (58.0, 20.0, 80.0, 110.0);
    let width = left + cw * bricks.len() as f64 + 90.0;
    let height = top + ch * rows.len() as f64 + 44.0;
    let mut s = Svg::new(width, height, "error-heatmap");
    for (j, b) in bricks.iter().enumerate() {
        let x = left + cw * j as f64 + cw / 2.0;
        s.text("col", x, top - 8.0, "start", -45.0, &printable(b));
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + ch * i as f64;
        s.text("row", left - 6.0, y + ch * 0.7, "end", 0.0, &row_label(*r));
        for (j, b) in bricks.iter().enumerate() {
            let x = left + cw * j as f64;
            let where_ = format!("{} · {}", row_label(*r), printable(b));
            draw_cell(&mut s, cells.get(&(*r, *b)), &where_, (x, y, cw, ch), frac);
        }
    }
    s.text(
        "small",
        left,
        height - 22.0,
        "start",
        0.0,
        &format!(
            "Colour: log10 of the largest error per cell over passes and calls, {} to {} \
             (sqrt(NMSE) of captures, else the summaries' relative difference).",
            short(lo),
            short(hi)
        ),
    );
    s.text(
        "small",
        left,
        height - 8.0,
        "start",
        0.0,
        "Green: bitwise equal. Grey: not recorded. Outlined: where error is born.",
    );
    s.finish()
}

/// [`Grid`] of the reference's checksum log, with the report's divergences and the flow's
/// birthplaces.
fn grid<'a>(
    reference: &'a ChecksumLog,
    report: &'a DivergenceReport,
    flow: Option<&'a ErrorFlow>,
) -> Grid<'a> {
    // Columns: bricks in the order the reference first records them; rows: layers, then model.
    let mut bricks: Vec<&str> = Vec::new();
    let mut rows: Vec<Option<u32>> = Vec::new();
    let mut cells: HashMap<(Option<u32>, &str), Cell> = HashMap::new();
    for e in &reference.entries {
        let brick = e.key.brick.as_str();
        if !bricks.contains(&brick) {
            bricks.push(brick);
        }
        if !rows.contains(&e.key.layer) {
            rows.push(e.key.layer);
        }
        cells.entry((e.key.layer, brick)).or_default().kernels += 1;
    }
    rows.sort_by_key(|l| l.map_or(u64::MAX, u64::from));
    for d in &report.divergences {
        let Some(c) = cells.get_mut(&(d.key.layer, d.key.brick.as_str())) else {
            continue;
        };
        c.differing += 1;
        c.diverged += usize::from(d.verdict == Verdict::Diverged);
        let e = d.error();
        if c.worst.as_ref().is_none_or(|(w, _)| e > *w || w.is_nan()) {
            c.worst = Some((e, d.key.clone()));
            c.captured = d.elementwise.map(|s| (s.cosine, s.sqnr_db));
        }
    }
    for k in flow.map_or(&[][..], |f| f.born.as_slice()) {
        if let Some(c) = cells.get_mut(&(k.layer, k.brick.as_str())) {
            c.born = true;
        }
    }
    Grid {
        bricks,
        rows,
        cells,
    }
}

/// The log colour scale: from the largest finite error down six decades (or to the smallest).
fn colour_scale(cells: &HashMap<(Option<u32>, &str), Cell>) -> (f64, f64) {
    let errors: Vec<f64> = cells
        .values()
        .filter_map(|c| c.worst.as_ref().map(|w| w.0))
        .filter(|e| e.is_finite() && *e > 0.0)
        .collect();
    let hi = errors.iter().copied().fold(0.0, f64::max);
    let lo = errors
        .iter()
        .copied()
        .fold(hi, f64::min)
        .max(hi * 1e-6)
        .min(hi / 10.0);
    (lo, hi)
}

/// One cell at `rect`: grey when not recorded, green when bitwise equal, else coloured by
/// `frac` of its largest error, with its figures in the title.
fn draw_cell(
    s: &mut Svg,
    cell: Option<&Cell>,
    where_: &str,
    (x, y, cw, ch): (f64, f64, f64, f64),
    frac: impl Fn(f64) -> f64,
) {
    let Some(c) = cell else {
        s.rect(
            "cell empty",
            (x, y, cw, ch),
            "#f4f4f4",
            &format!("{where_}: not recorded"),
        );
        return;
    };
    let Some((e, key)) = &c.worst else {
        let title = format!("{where_}: bitwise equal in all {} kernels", c.kernels);
        s.rect("cell equal", (x, y, cw, ch), "#d9f0d3", &title);
        return;
    };
    let f = frac(*e);
    let mut title = format!(
        "{where_}: largest error {} at {key}; {} of {} kernels differ, {} diverged",
        short(*e),
        c.differing,
        c.kernels,
        c.diverged
    );
    if let Some((cos, sqnr)) = c.captured {
        title.push_str(&format!(" (captured: cosine {cos:.9}, SQNR {sqnr:.1} dB)"));
    }
    if c.born {
        title.push_str("; error is born here");
    }
    let class = if c.born { "cell born" } else { "cell" };
    s.rect(class, (x, y, cw, ch), &heat(f), &title);
    let text_class = if f > 0.6 { "small on-dark" } else { "small" };
    s.text(
        text_class,
        x + cw / 2.0,
        y + ch * 0.7,
        "middle",
        0.0,
        &short(*e),
    );
}

/// An error in a cell: `3.1e-4`, `inf`, `n/a`.
fn short(e: f64) -> String {
    if e.is_nan() {
        "n/a".into()
    } else if e.is_infinite() {
        "inf".into()
    } else if e == 0.0 {
        "0".into()
    } else {
        format!("{e:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::divergence::error_flow;
    use crate::compare::{divergence, Tolerance};

    fn key(layer: Option<u32>, brick: &str) -> KernelKey {
        KernelKey {
            pass: 0,
            layer,
            brick: brick.into(),
            call: 0,
        }
    }

    #[test]
    fn cells_show_equal_differing_and_born() {
        // spec/html-report.md "Sections", `errors`.
        let (mut a, mut b) = (ChecksumLog::default(), ChecksumLog::default());
        for (layer, brick, planted) in [
            (Some(0), "RmsNorm", 0.0),
            (Some(0), "DownProjection", 0.0),
            (Some(1), "RmsNorm", 0.0),
            (Some(1), "DownProjection", 0.5),
            (None, "LmHead", 1.0),
        ] {
            a.record(key(layer, brick), crate::checksum::Tensor::F32(&[1.0, 2.0]));
            b.record(
                key(layer, brick),
                crate::checksum::Tensor::F32(&[1.0, 2.0 + planted]),
            );
        }
        let r = divergence(&a, &b, Tolerance::default()).unwrap();
        let flow = error_flow(&r, &a);
        let svg = error_heatmap(&a, &r, Some(&flow));
        assert_eq!(svg.matches("class=\"cell equal\"").count(), 3, "{svg}");
        assert_eq!(svg.matches("class=\"cell born\"").count(), 1, "{svg}");
        assert!(
            svg.contains("layer 1 · DownProjection: largest error"),
            "{svg}"
        );
        // The model row comes last; the LmHead cell exists only there.
        let model = svg.find(">model<").unwrap();
        assert!(svg.find(">layer 1<").unwrap() < model);
        assert_eq!(svg.matches(": not recorded<").count(), 4, "{svg}");
    }

    #[test]
    fn no_checksums_is_a_note() {
        let a = ChecksumLog::default();
        let r = divergence(&a, &a, Tolerance::default()).unwrap();
        assert!(error_heatmap(&a, &r, None).contains("no checksums"));
    }
}
