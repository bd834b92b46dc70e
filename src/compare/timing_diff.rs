//! The timing part of a run-to-run comparison (spec/profile-format.md "Comparing runs"): one
//! row per (phase, brick) when the profiles have phases (prefill is never compared with
//! decode), the TTFT, TPOT and per-phase throughput changes of the header, as plain data
//! ([`TimingDiff`]) that the text writer ([`TimingDiff::render`]) and the JSON writer
//! (serde) print.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::figures::latency::{latency, Latency, Summary};
use crate::figures::units::clip;
use crate::figures::units::{duration, rate, ratio_pct};
use crate::profile::phase_view::{folded, has_phases, phases_of};
use crate::{model::PhaseFilter, stats::BrickStats, Phase, Profile};

/// How one brick's timing changed between a reference and a candidate profile, over the
/// passes of one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TimingChange {
    /// The phase of the passes compared: [`Phase::Unspecified`] when neither profile has
    /// phases (or only one has and every pass is compared).
    #[serde(default)]
    pub(crate) phase: Phase,
    /// Brick name.
    pub(crate) name: String,
    /// Calls in the reference's passes of the phase (`None`: not in the reference).
    pub(crate) reference_calls: Option<u64>,
    /// Calls in the candidate (`None`: not in the candidate).
    pub(crate) candidate_calls: Option<u64>,
    /// Mean, ns (0 when absent).
    pub(crate) reference_mean_ns: f64,
    /// Mean, ns (0 when absent).
    pub(crate) candidate_mean_ns: f64,
    /// p99, ns.
    pub(crate) reference_p99_ns: u64,
    /// p99, ns.
    pub(crate) candidate_p99_ns: u64,
    /// Candidate mean minus reference mean, ns.
    pub(crate) mean_delta_ns: f64,
    /// Mean change in percent of the reference (0 when the reference is 0 or absent).
    pub(crate) mean_delta_pct: f64,
    /// p99 change in percent of the reference.
    pub(crate) p99_delta_pct: f64,
    /// Change of this brick's time per token of the phase, ns: what the change costs a token
    /// (a prompt token in prefill, a generated token in decode; per pass when the profiles
    /// count no tokens).
    pub(crate) impact_per_token_ns: f64,
}

/// One phase's totals in both runs: brick time per token and tokens per second of its passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PhaseTiming {
    /// The phase ([`Phase::Unspecified`] as in [`TimingChange::phase`]).
    pub(crate) phase: Phase,
    /// Brick time (self times summed) per token of the phase in the reference, ns.
    pub(crate) reference_per_token_ns: f64,
    /// The same in the candidate, ns.
    pub(crate) candidate_per_token_ns: f64,
    /// Tokens per second of the phase's passes in the reference.
    pub(crate) reference_tokens_per_sec: f64,
    /// The same in the candidate.
    pub(crate) candidate_tokens_per_sec: f64,
}

/// A latency distribution in both runs (p50, p90, p99, mean, count of each).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct SummaryChange {
    /// The reference's.
    pub(crate) reference: Summary,
    /// The candidate's.
    pub(crate) candidate: Summary,
}

/// A throughput in both runs, tokens per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct RateChange {
    /// The reference's.
    pub(crate) reference_tokens_per_sec: f64,
    /// The candidate's.
    pub(crate) candidate_tokens_per_sec: f64,
}

/// TTFT, TPOT and the prefill and decode throughputs of both runs, from their pass series
/// (spec/profile-format.md "Latency: TTFT and TPOT"). A number is absent when either run
/// lacks it or the phase filter leaves its phase out.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub(crate) struct LatencyChange {
    /// Time to first token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ttft: Option<SummaryChange>,
    /// Time per output token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tpot: Option<SummaryChange>,
    /// Prefill throughput: prompt tokens per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prefill: Option<RateChange>,
    /// Decode throughput: generated tokens per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) decode: Option<RateChange>,
}

impl LatencyChange {
    fn is_empty(&self) -> bool {
        *self == LatencyChange::default()
    }
}

/// The timing comparison of two profiles: per (phase, brick) rows and per-phase totals, with
/// the latency changes for the header. Read as text ([`TimingDiff::render`]) or as JSON
/// (serde: the `timing` object of spec/profile-format.md "Comparing runs").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingDiff {
    /// Whether the reference has phases (any row or pass of a phase other than `Unspecified`).
    pub(crate) reference_phased: bool,
    /// Whether the candidate has phases.
    pub(crate) candidate_phased: bool,
    /// TTFT, TPOT and throughputs, when both runs have a pass series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) latency: Option<LatencyChange>,
    /// Each phase compared, in phase order.
    pub(crate) phases: Vec<PhaseTiming>,
    /// One row per (phase, brick): in phase order, within a phase by |impact per token|,
    /// largest first (then by name).
    pub(crate) changes: Vec<TimingChange>,
}

/// Whether `filter` keeps the passes of `phase`.
fn admits(filter: PhaseFilter, phase: Phase) -> bool {
    match filter {
        PhaseFilter::All => true,
        PhaseFilter::Only(p) => p == phase,
    }
}

/// Compare the passes `filter` keeps of two profiles (spec/profile-format.md "Comparing
/// runs"): when both have phases, phase by phase (a brick's prefill calls are compared with
/// its prefill calls only); when neither has, every pass at once (phase unspecified, as
/// before phases); when only one has, every pass at once under [`PhaseFilter::All`] (the
/// text says so), else the phase asked for.
pub fn timing_diff(reference: &Profile, candidate: &Profile, filter: PhaseFilter) -> TimingDiff {
    let (ra, ca) = (has_phases(reference), has_phases(candidate));
    // (the phase a block is labelled with, the fold that selects its passes)
    let blocks: Vec<(Phase, PhaseFilter)> = match (ra && ca, ra || ca, filter) {
        (true, _, _) => {
            let mut all = phases_of(reference);
            all.extend(phases_of(candidate));
            all.sort();
            all.dedup();
            all.into_iter()
                .filter(|&p| admits(filter, p))
                .map(|p| (p, PhaseFilter::Only(p)))
                .collect()
        }
        (false, false, f) if admits(f, Phase::Unspecified) => {
            vec![(Phase::Unspecified, PhaseFilter::All)]
        }
        (false, false, _) => Vec::new(),
        (false, true, PhaseFilter::All) => vec![(Phase::Unspecified, PhaseFilter::All)],
        (false, true, PhaseFilter::Only(p)) => vec![(p, PhaseFilter::Only(p))],
    };
    let mut phases = Vec::with_capacity(blocks.len());
    let mut changes = Vec::new();
    for (phase, fold) in blocks {
        let (a, b) = (folded(reference, fold), folded(candidate, fold));
        changes.extend(phase_changes(&a, &b, phase));
        phases.push(PhaseTiming {
            phase,
            reference_per_token_ns: a.total_ns() as f64 / per_token_divisor(&a),
            candidate_per_token_ns: b.total_ns() as f64 / per_token_divisor(&b),
            reference_tokens_per_sec: a.tokens_per_sec(),
            candidate_tokens_per_sec: b.tokens_per_sec(),
        });
    }
    TimingDiff {
        reference_phased: ra,
        candidate_phased: ca,
        latency: latency_change(reference, candidate, filter),
        phases,
        changes,
    }
}

/// The latency numbers both runs have, of the phases `filter` keeps.
fn latency_change(a: &Profile, b: &Profile, filter: PhaseFilter) -> Option<LatencyChange> {
    let of = |p: &Profile| p.pass_series.as_ref().and_then(latency);
    let (la, lb) = (of(a)?, of(b)?);
    let summary = |f: fn(&Latency) -> Option<Summary>| {
        Some(SummaryChange {
            reference: f(&la)?,
            candidate: f(&lb)?,
        })
    };
    let rates = |f: fn(&Latency) -> &crate::figures::latency::Throughput| {
        let (x, y) = (f(&la), f(&lb));
        (x.passes > 0 && y.passes > 0).then(|| RateChange {
            reference_tokens_per_sec: x.tokens_per_sec(),
            candidate_tokens_per_sec: y.tokens_per_sec(),
        })
    };
    let (prefill, decode) = (
        admits(filter, Phase::Prefill),
        admits(filter, Phase::Decode),
    );
    let change = LatencyChange {
        ttft: summary(|l| l.ttft.summary()).filter(|_| prefill),
        tpot: summary(|l| l.tpot.summary()).filter(|_| decode),
        prefill: rates(|l| &l.prefill).filter(|_| prefill),
        decode: rates(|l| &l.decode).filter(|_| decode),
    };
    (!change.is_empty()).then_some(change)
}

/// Per-brick changes between two profiles of one phase's passes, by |impact per token|.
fn phase_changes(reference: &Profile, candidate: &Profile, phase: Phase) -> Vec<TimingChange> {
    let per_token = |p: &Profile, total: u64| total as f64 / per_token_divisor(p);
    // Bricks indexed by name: linear in the number of bricks (MoE runs register thousands).
    let (in_ref, in_cand) = (by_name(reference), by_name(candidate));
    let names = reference.bricks.iter().map(|b| b.name.as_str()).chain(
        candidate
            .bricks
            .iter()
            .map(|b| b.name.as_str())
            .filter(|n| !in_ref.contains_key(n)),
    );
    let mut out: Vec<TimingChange> = names
        .map(|name| {
            let a = in_ref.get(name).copied().filter(|s| !s.is_empty());
            let b = in_cand.get(name).copied().filter(|s| !s.is_empty());
            let (am, bm) = (
                a.map_or(0.0, |s| s.mean_ns()),
                b.map_or(0.0, |s| s.mean_ns()),
            );
            let (ap, bp) = (a.map_or(0, |s| s.p99_ns()), b.map_or(0, |s| s.p99_ns()));
            let pct = |from: f64, to: f64| {
                if a.is_some() && b.is_some() {
                    ratio_pct(to - from, from)
                } else {
                    0.0
                }
            };
            TimingChange {
                phase,
                name: name.to_string(),
                reference_calls: a.map(|s| s.count()),
                candidate_calls: b.map(|s| s.count()),
                reference_mean_ns: am,
                candidate_mean_ns: bm,
                reference_p99_ns: ap,
                candidate_p99_ns: bp,
                mean_delta_ns: bm - am,
                mean_delta_pct: pct(am, bm),
                p99_delta_pct: pct(ap as f64, bp as f64),
                impact_per_token_ns: per_token(candidate, b.map_or(0, |s| s.total_ns()))
                    - per_token(reference, a.map_or(0, |s| s.total_ns())),
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.impact_per_token_ns
            .abs()
            .partial_cmp(&x.impact_per_token_ns.abs())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| x.name.cmp(&y.name))
    });
    out
}

/// A profile's brick statistics by brick name (the first brick of a name, as `Profile::brick`).
fn by_name(p: &Profile) -> HashMap<&str, &BrickStats> {
    let mut map = HashMap::with_capacity(p.bricks.len());
    for b in &p.bricks {
        map.entry(b.name.as_str()).or_insert(&b.stats);
    }
    map
}

/// Tokens counted (passes when no tokens were counted; at least 1).
fn per_token_divisor(p: &Profile) -> f64 {
    let c = &p.meta.counters;
    (if c.tokens > 0 { c.tokens } else { c.passes }).max(1) as f64
}

/// A signed duration: `+1.23µs`, `-850ns`.
fn signed(ns: f64) -> String {
    let sign = if ns < 0.0 { "-" } else { "+" };
    format!("{sign}{}", duration(ns.abs()))
}

/// A signed percentage, `-` when undefined.
fn signed_pct(pct: f64, defined: bool) -> String {
    if defined {
        format!("{pct:+.1}%")
    } else {
        "-".to_string()
    }
}

/// The change from `from` to `to` in percent of `from`.
fn pct(from: f64, to: f64) -> f64 {
    ratio_pct(to - from, from)
}

impl TimingDiff {
    /// Whether either run has phases (the text then has one block per phase).
    pub(crate) fn phased(&self) -> bool {
        self.reference_phased || self.candidate_phased
    }

    /// The comparison as text (fits 100 columns); `reference` and `candidate` are the
    /// profiles it was made from (for the note on different clocks). Profiles without phases
    /// print as before phases: one table and a summary line.
    pub fn render(&self, reference: &Profile, candidate: &Profile) -> String {
        let mut out = String::new();
        let (a, b) = (&reference.meta, &candidate.meta);
        if (a.timeline, a.sync_mode) != (b.timeline, b.sync_mode) {
            let _ = writeln!(
                out,
                "Note: comparing {} / {} (reference) with {} / {} (candidate): different clocks.",
                a.timeline, a.sync_mode, b.timeline, b.sync_mode
            );
        }
        if self.reference_phased != self.candidate_phased {
            let which = if self.reference_phased {
                "reference"
            } else {
                "candidate"
            };
            let _ = writeln!(
                out,
                "Note: only the {which} has phases: {}",
                match self.phases.first().map(|p| p.phase) {
                    Some(Phase::Unspecified) => "every pass compared, prefill and decode together.",
                    _ => "the other run's passes have no phase to compare with.",
                }
            );
        }
        let phased = self.phased();
        let _ = writeln!(
            out,
            "Timing (reference -> candidate), {}sorted by impact on time per token",
            if phased { "per phase, " } else { "" }
        );
        if let Some(l) = &self.latency {
            out.push_str(&render_latency_change(l));
        }
        let _ = writeln!(
            out,
            "{:<18} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10}",
            "Brick", "Mean A", "Mean B", "dMean", "dMean%", "p99 A", "p99 B", "dp99%", "Impact/tok"
        );
        out.push_str(&"-".repeat(100));
        out.push('\n');
        if self.phases.is_empty() {
            out.push_str("(no passes of that phase in either run)\n");
        }
        for p in &self.phases {
            if phased {
                let _ = writeln!(out, "{}", phase_heading(p.phase));
            }
            for c in self.changes.iter().filter(|c| c.phase == p.phase) {
                out.push_str(&change_line(c));
            }
            let (ta, tb) = (p.reference_per_token_ns, p.candidate_per_token_ns);
            let (ra, rb) = (p.reference_tokens_per_sec, p.candidate_tokens_per_sec);
            let per_token = format!(
                "brick time per token {} -> {} ({:+.1}%)",
                duration(ta),
                duration(tb),
                pct(ta, tb)
            );
            let _ = if phased {
                writeln!(
                    out,
                    "Summary: {} {per_token}, {} -> {} ({:+.1}%)",
                    p.phase,
                    rate(ra, ""),
                    rate(rb, " tok/s"),
                    pct(ra, rb)
                )
            } else {
                writeln!(
                    out,
                    "Summary: {per_token}, tokens/s {ra:.1} -> {rb:.1} ({:+.1}%)",
                    pct(ra, rb)
                )
            };
        }
        out
    }
}

/// The line above a phase's rows: what its impact is per.
fn phase_heading(phase: Phase) -> String {
    match phase {
        Phase::Prefill => "[prefill] impact per prompt token".into(),
        Phase::Decode => "[decode] impact per generated token".into(),
        Phase::Mixed => "[mixed] impact per new token".into(),
        Phase::Unspecified => "[every pass] impact per token".into(),
    }
}

/// One brick's row.
fn change_line(c: &TimingChange) -> String {
    let both = c.reference_calls.is_some() && c.candidate_calls.is_some();
    let name = match (c.reference_calls, c.candidate_calls) {
        (None, Some(_)) => format!("{} (new)", c.name),
        (Some(_), None) => format!("{} (gone)", c.name),
        _ => c.name.clone(),
    };
    format!(
        "{:<18} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10}\n",
        clip(&name, 18),
        duration(c.reference_mean_ns),
        duration(c.candidate_mean_ns),
        signed(c.mean_delta_ns),
        signed_pct(c.mean_delta_pct, both),
        duration(c.reference_p99_ns as f64),
        duration(c.candidate_p99_ns as f64),
        signed_pct(c.p99_delta_pct, both),
        signed(c.impact_per_token_ns),
    )
}

/// The header's latency lines: TTFT and TPOT p50/p90/p99 of both runs as a small table,
/// then the two throughputs.
fn render_latency_change(l: &LatencyChange) -> String {
    let mut out = String::new();
    if l.ttft.is_some() || l.tpot.is_some() {
        let _ = writeln!(
            out,
            "{:<6}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}",
            "", "p50 A", "p50 B", "dp50%", "p90 A", "p90 B", "dp90%", "p99 A", "p99 B", "dp99%"
        );
    }
    for (label, s) in [("TTFT", &l.ttft), ("TPOT", &l.tpot)] {
        let Some(s) = s else { continue };
        let _ = write!(out, "{label:<6}");
        let (a, b) = (&s.reference, &s.candidate);
        for (x, y) in [
            (a.p50_ns, b.p50_ns),
            (a.p90_ns, b.p90_ns),
            (a.p99_ns, b.p99_ns),
        ] {
            let (x, y) = (x as f64, y as f64);
            let _ = write!(
                out,
                "{:>9}{:>9}{:>9}",
                duration(x),
                duration(y),
                signed_pct(pct(x, y), x > 0.0)
            );
        }
        out.push('\n');
    }
    for (label, r) in [
        ("Prefill throughput", &l.prefill),
        ("Decode throughput ", &l.decode),
    ] {
        let Some(r) = r else { continue };
        let (x, y) = (r.reference_tokens_per_sec, r.candidate_tokens_per_sec);
        let _ = writeln!(
            out,
            "{label} {} -> {} ({})",
            rate(x, " tok/s"),
            rate(y, " tok/s"),
            signed_pct(pct(x, y), x > 0.0)
        );
    }
    out
}
