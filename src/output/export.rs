//! Machine-readable reports: the derived numbers as JSON, and one row per brick (or per
//! layer × brick) as CSV (RFC 4180 quoting). Both carry phases: a profile with phases gives one
//! row per (phase, brick), one without gives its rows with phase "unspecified"; the JSON adds
//! TTFT, TPOT, the per-phase throughputs and the brick fits, the CSV each brick row's fit
//! (spec/profile-format.md "Reports").

use std::fmt::Write as _;

use serde::Serialize;

use super::table::TableOptions;
use crate::figures::derived::{Derived, Row};
use crate::figures::latency::{profile_latency, Latency, Summary, Throughput};
use crate::figures::shape_costs::{phase_fits, BrickFit};
use crate::profile::phase_view::{has_phases, phase_profile, phases_of};
use crate::stats::fit::Regressor;
use crate::{model::PhaseFilter, Phase, Profile};

/// The JSON report: the derived numbers with per-phase rows, and what the pass series and
/// the fits add.
#[derive(Serialize)]
struct JsonReport {
    #[serde(flatten)]
    derived: Derived,
    /// Each phase's passes, tokens and tokens per second.
    phases: Vec<PhaseSummary>,
    /// TTFT, TPOT and the throughputs, when the profile has a pass series.
    #[serde(skip_serializing_if = "Option::is_none")]
    latency: Option<LatencyJson>,
    /// Every fit the table shows.
    fits: Vec<FitJson>,
}

#[derive(Serialize)]
struct PhaseSummary {
    phase: Phase,
    passes: u64,
    tokens: u64,
    tokens_per_sec: f64,
}

#[derive(Serialize)]
struct ThroughputJson {
    #[serde(flatten)]
    counts: Throughput,
    tokens_per_sec: f64,
}

impl From<Throughput> for ThroughputJson {
    fn from(t: Throughput) -> Self {
        ThroughputJson {
            counts: t,
            tokens_per_sec: t.tokens_per_sec(),
        }
    }
}

#[derive(Serialize)]
struct LatencyJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    ttft: Option<Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tpot: Option<Summary>,
    prefill: ThroughputJson,
    decode: ThroughputJson,
    mixed: ThroughputJson,
    unshaped_passes: u64,
    cut_prompts: u64,
}

impl From<Latency> for LatencyJson {
    fn from(l: Latency) -> Self {
        LatencyJson {
            ttft: l.ttft.summary(),
            tpot: l.tpot.summary(),
            prefill: l.prefill.into(),
            decode: l.decode.into(),
            mixed: l.mixed.into(),
            unshaped_passes: l.unshaped_passes,
            cut_prompts: l.cut_prompts,
        }
    }
}

/// One fit as the table prints it: `a_ns + b_ns` per token of `regressor`, per call when the
/// brick's calls per pass never changed, else per pass.
#[derive(Serialize)]
struct FitJson {
    brick: String,
    phase: Phase,
    regressor: Regressor,
    per: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    calls_per_pass: Option<u64>,
    a_ns: f64,
    b_ns: f64,
    r2: f64,
    passes: u64,
    x_min: u64,
    x_max: u64,
}

impl From<&BrickFit> for FitJson {
    fn from(f: &BrickFit) -> Self {
        let (a_ns, b_ns) = f.shown();
        FitJson {
            brick: f.name.clone(),
            phase: f.phase,
            regressor: f.fit.regressor,
            per: if f.calls_per_pass.is_some() {
                "call"
            } else {
                "pass"
            },
            calls_per_pass: f.calls_per_pass,
            a_ns,
            b_ns,
            r2: f.fit.r2,
            passes: f.fit.n,
            x_min: f.fit.x_min,
            x_max: f.fit.x_max,
        }
    }
}

/// The phases a profile's rows are split by: each of its phases, or unspecified alone for a
/// profile without phases.
fn export_phases(profile: &Profile) -> Vec<Phase> {
    if has_phases(profile) {
        phases_of(profile)
    } else {
        vec![Phase::Unspecified]
    }
}

/// The (bricks, layers) rows of each phase, each phase's sorted and cut like the table (a
/// row's `pct` is its share of its phase's self time), in phase order.
fn phase_rows(profile: &Profile, opts: &TableOptions) -> (Vec<Row>, Vec<Row>) {
    let (mut bricks, mut layers) = (Vec::new(), Vec::new());
    for phase in export_phases(profile) {
        let d = if has_phases(profile) {
            Derived::of(
                &phase_profile(profile, PhaseFilter::Only(phase)),
                opts.peaks.as_ref(),
            )
        } else {
            Derived::of(profile, opts.peaks.as_ref())
        };
        for (mut rows, all) in [(d.bricks, &mut bricks), (d.layers, &mut layers)] {
            opts.sort.sort(&mut rows);
            rows.truncate(opts.top.unwrap_or(usize::MAX));
            for r in &mut rows {
                r.phase = Some(phase);
            }
            all.extend(rows);
        }
    }
    (bricks, layers)
}

/// Every fit the table shows, phase by phase.
fn fits(profile: &Profile) -> Vec<BrickFit> {
    export_phases(profile)
        .into_iter()
        .flat_map(|p| phase_fits(profile, p))
        .collect()
}

/// The derived report as pretty JSON: per (phase, brick), per (phase, layer, brick), per tile
/// and per category, with every derived number (spec/work-accounting.md), each phase's rows
/// sorted and cut like the table; then each phase's throughput, TTFT and TPOT, and the fits
/// (spec/profile-format.md "Reports").
pub(crate) fn render_json(profile: &Profile, opts: &TableOptions) -> String {
    let mut derived = Derived::of(profile, opts.peaks.as_ref());
    (derived.bricks, derived.layers) = phase_rows(profile, opts);
    let report = JsonReport {
        derived,
        phases: export_phases(profile)
            .into_iter()
            .map(|phase| {
                let s = profile.phase_passes(phase);
                PhaseSummary {
                    phase,
                    passes: s.count(),
                    tokens: s.work().elements,
                    tokens_per_sec: s.elements_per_sec(),
                }
            })
            .collect(),
        latency: profile_latency(profile).map(Into::into),
        fits: fits(profile).iter().map(Into::into).collect(),
    };
    // Serializing plain data into a String cannot fail.
    serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
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
    "phase",
    "fit_regressor",
    "fit_per",
    "fit_a_ns",
    "fit_b_ns",
    "fit_r2",
    "fit_passes",
    "fit_x_min",
    "fit_x_max",
];

/// One CSV row per (phase, brick) (per (phase, layer, brick) with `by_layer`), each phase's
/// rows sorted and cut like the table; a profile without phases gives phase `unspecified`. A
/// brick row carries its fit in that phase, when the table shows one (spec/profile-format.md
/// "Reports").
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, output::{output, Snapshot}};
/// let mut prof = BrickProfiler::default();
/// let t = prof.start_brick(BrickId::LmHead);
/// prof.stop_brick(t, 1);
/// prof.finalize().unwrap();
/// let (profile, opts) = (prof.profile(), Default::default());
/// let mut csv = Vec::new();
/// output("csv").unwrap().write(&Snapshot::Profile(&profile, &opts), &mut csv)?;
/// let csv = String::from_utf8(csv).unwrap();
/// assert!(csv.starts_with("name,category,layer,calls"));
/// assert!(csv.lines().nth(1).unwrap().starts_with("LmHead,Head,,1,"));
/// # Ok::<(), brickprof::Error>(())
/// ```
pub(crate) fn render_csv(profile: &Profile, opts: &TableOptions) -> String {
    let (bricks, layers) = phase_rows(profile, opts);
    let rows = if opts.by_layer { layers } else { bricks };
    let fits = fits(profile);
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
            r.phase.map(|p| p.to_string()).unwrap_or_default(),
        ];
        let fit = fits
            .iter()
            .find(|f| r.layer.is_none() && Some(f.phase) == r.phase && f.name == r.name);
        let fit_fields = match fit {
            Some(f) => {
                let (a, b) = f.shown();
                [
                    regressor_name(f.fit.regressor).to_string(),
                    if f.calls_per_pass.is_some() {
                        "call"
                    } else {
                        "pass"
                    }
                    .to_string(),
                    a.to_string(),
                    b.to_string(),
                    f.fit.r2.to_string(),
                    f.fit.n.to_string(),
                    f.fit.x_min.to_string(),
                    f.fit.x_max.to_string(),
                ]
            }
            None => Default::default(),
        };
        let _ = writeln!(out, "{},{}", fields.join(","), fit_fields.join(","));
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

/// A regressor as the JSON names it: `new_tokens`, `context`.
fn regressor_name(r: Regressor) -> &'static str {
    match r {
        Regressor::NewTokens => "new_tokens",
        Regressor::Context => "context",
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
