//! Machine-readable reports: the derived numbers as JSON, and one row per brick (or per
//! layer × brick) as CSV (RFC 4180 quoting).

use std::fmt::Write as _;

use super::derived::{Derived, Row};
use super::table::{SortKey, TableOptions};
use crate::Profile;

/// The derived report as pretty JSON: per brick, per layer, per tile and per category, with
/// every derived number (spec/work-accounting.md), sorted like the table.
pub fn render_json(profile: &Profile, opts: &TableOptions) -> String {
    let mut d = Derived::of(profile, opts.peaks.as_ref());
    opts.sort.sort(&mut d.bricks);
    opts.sort.sort(&mut d.layers);
    if let Some(n) = opts.top {
        d.bricks.truncate(n);
        d.layers.truncate(n);
    }
    // Serializing plain data into a String cannot fail.
    serde_json::to_string_pretty(&d).unwrap_or_default() + "\n"
}

/// Column names of the CSV, in order.
pub(crate) const CSV_COLUMNS: &[&str] = &[
    "name",
    "category",
    "layer",
    "calls",
    "total_ns",
    "pct",
    "mean_ns",
    "std_dev_ns",
    "min_ns",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "max_ns",
    "host_mean_ns",
    "elements_per_sec",
    "flops",
    "bytes",
    "gflops",
    "gbps",
    "intensity",
    "bound",
    "roof_pct",
    "level",
    "excess",
];

/// One CSV row per brick (per layer × brick with `by_layer`), sorted and cut like the table.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, report::{render_csv, TableOptions}};
/// let mut prof = BrickProfiler::default();
/// let t = prof.start_brick(BrickId::LmHead);
/// prof.stop_brick(t, 1);
/// prof.finalize().unwrap();
/// let csv = render_csv(&prof.profile(), &TableOptions::default());
/// assert!(csv.starts_with("name,category,layer,calls"));
/// assert!(csv.lines().nth(1).unwrap().starts_with("LmHead,Head,,1,"));
/// ```
pub fn render_csv(profile: &Profile, opts: &TableOptions) -> String {
    let d = Derived::of(profile, opts.peaks.as_ref());
    let mut rows: Vec<Row> = if opts.by_layer { d.layers } else { d.bricks };
    SortKey::sort(opts.sort, &mut rows);
    rows.truncate(opts.top.unwrap_or(usize::MAX));
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for r in &rows {
        let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        let fields = [
            quote(&r.name),
            r.category.name().to_string(),
            r.layer.map(|l| l.to_string()).unwrap_or_default(),
            r.calls.to_string(),
            r.total_ns.to_string(),
            r.pct.to_string(),
            r.mean_ns.to_string(),
            r.std_dev_ns.to_string(),
            r.min_ns.to_string(),
            r.p50_ns.to_string(),
            r.p90_ns.to_string(),
            r.p99_ns.to_string(),
            r.max_ns.to_string(),
            r.host_mean_ns.to_string(),
            r.elements_per_sec.to_string(),
            r.flops.to_string(),
            r.bytes.to_string(),
            r.gflops.to_string(),
            r.gbps.to_string(),
            opt(r.intensity),
            r.bound.map(|b| b.label().to_string()).unwrap_or_default(),
            opt(r.roof_pct),
            r.level.map(|l| l.label().to_string()).unwrap_or_default(),
            r.excess.map(excess_label).unwrap_or_default().to_string(),
        ];
        let _ = writeln!(out, "{}", fields.join(","));
    }
    out
}

/// The CSV (and table) word for a roof excess: "", "above-level", "above-every".
pub(crate) fn excess_label(e: crate::roofline::Excess) -> &'static str {
    match e {
        crate::roofline::Excess::Within => "",
        crate::roofline::Excess::AboveLevel => "above-level",
        crate::roofline::Excess::AboveEvery => "above-every",
    }
}

/// Quote a CSV field when it holds a comma, a quote or a line break.
fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
