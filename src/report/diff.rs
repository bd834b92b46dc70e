//! `brickprof diff`: compare two runs. Checksums are compared with
//! [`crate::divergence::compare`] when both files carry them; timings are compared per brick
//! when both files are profiles. Specified in `spec/profile-format.md` ("Comparing runs").

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::table::clip;
use super::units::{duration, ratio_pct};
use crate::divergence::{compare_from, DivergenceReport, Tolerance};
use crate::RunFile;
use crate::{BrickStats, Error, Profile, Result};

/// How one brick's timing changed between a reference and a candidate profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingChange {
    /// Brick name.
    pub name: String,
    /// Calls per pass in the reference (`None`: not in the reference).
    pub reference_calls: Option<u64>,
    /// Calls in the candidate (`None`: not in the candidate).
    pub candidate_calls: Option<u64>,
    /// Mean, ns (0 when absent).
    pub reference_mean_ns: f64,
    /// Mean, ns (0 when absent).
    pub candidate_mean_ns: f64,
    /// p99, ns.
    pub reference_p99_ns: u64,
    /// p99, ns.
    pub candidate_p99_ns: u64,
    /// Candidate mean minus reference mean, ns.
    pub mean_delta_ns: f64,
    /// Mean change in percent of the reference (0 when the reference is 0 or absent).
    pub mean_delta_pct: f64,
    /// p99 change in percent of the reference.
    pub p99_delta_pct: f64,
    /// Change of this brick's time per generated token, ns: what the change costs a token
    /// (per pass when the profiles count no tokens).
    pub impact_per_token_ns: f64,
}

/// Per-brick timing changes, sorted by |impact per token|, largest first.
pub fn timing_changes(reference: &Profile, candidate: &Profile) -> Vec<TimingChange> {
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

/// The timing comparison as text (fits 100 columns).
pub fn render_timing(reference: &Profile, candidate: &Profile) -> String {
    let mut out = String::new();
    let (a, b) = (&reference.meta, &candidate.meta);
    if (a.timeline, a.sync_mode) != (b.timeline, b.sync_mode) {
        let _ = writeln!(
            out,
            "Note: comparing {} / {} (reference) with {} / {} (candidate): different clocks.",
            a.timeline, a.sync_mode, b.timeline, b.sync_mode
        );
    }
    let _ = writeln!(
        out,
        "Timing (reference -> candidate), sorted by impact on time per token"
    );
    let _ = writeln!(
        out,
        "{:<18} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "Brick", "Mean A", "Mean B", "dMean", "dMean%", "p99 A", "p99 B", "dp99%", "Impact/tok"
    );
    out.push_str(&"-".repeat(100));
    out.push('\n');
    for c in timing_changes(reference, candidate) {
        let both = c.reference_calls.is_some() && c.candidate_calls.is_some();
        let name = match (c.reference_calls, c.candidate_calls) {
            (None, Some(_)) => format!("{} (new)", c.name),
            (Some(_), None) => format!("{} (gone)", c.name),
            _ => c.name.clone(),
        };
        let _ = writeln!(
            out,
            "{:<18} {:>8} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>10}",
            clip(&name, 18),
            duration(c.reference_mean_ns),
            duration(c.candidate_mean_ns),
            signed(c.mean_delta_ns),
            signed_pct(c.mean_delta_pct, both),
            duration(c.reference_p99_ns as f64),
            duration(c.candidate_p99_ns as f64),
            signed_pct(c.p99_delta_pct, both),
            signed(c.impact_per_token_ns),
        );
    }
    let tok_a = reference.total_ns() as f64 / per_token_divisor(reference);
    let tok_b = candidate.total_ns() as f64 / per_token_divisor(candidate);
    let (ta, tb) = (reference.tokens_per_sec(), candidate.tokens_per_sec());
    let pct = |from: f64, to: f64| ratio_pct(to - from, from);
    let _ = writeln!(
        out,
        "Summary: brick time per token {} -> {} ({:+.1}%), tokens/s {:.1} -> {:.1} ({:+.1}%)",
        duration(tok_a),
        duration(tok_b),
        pct(tok_a, tok_b),
        ta,
        tb,
        pct(ta, tb)
    );
    out
}

/// What a diff found.
#[derive(Debug, Clone)]
pub struct DiffOutcome {
    /// The printable report.
    pub text: String,
    /// True when a checksum comparison found a divergence (the CLI exits 1). Timing
    /// differences alone are reported, not judged.
    pub diverged: bool,
    /// The checksum comparison, when both runs had checksums.
    pub checksums: Option<DivergenceReport>,
}

/// Compare a reference run with a candidate run: timings when both are profiles, checksums
/// when both carry them. An error when there is nothing to compare.
pub fn diff_runs(
    reference: &RunFile,
    candidate: &RunFile,
    tolerance: Tolerance,
) -> Result<DiffOutcome> {
    diff_from(reference, candidate, tolerance, [None, None])
}

/// [`diff_runs`] of the runs saved at `reference` and `candidate` (profiles or checksum logs):
/// every error names the file it is about (`brickprof diff`).
pub fn diff_files(reference: &Path, candidate: &Path, tolerance: Tolerance) -> Result<DiffOutcome> {
    let (a, b) = (RunFile::load(reference)?, RunFile::load(candidate)?);
    diff_from(&a, &b, tolerance, [Some(reference), Some(candidate)])
}

fn diff_from(
    reference: &RunFile,
    candidate: &RunFile,
    tolerance: Tolerance,
    paths: [Option<&Path>; 2],
) -> Result<DiffOutcome> {
    let mut text = String::new();
    let timed = match (reference.profile(), candidate.profile()) {
        (Some(a), Some(b)) => {
            text.push_str(&render_timing(a, b));
            true
        }
        _ => false,
    };
    let checksums = match (reference.checksums(), candidate.checksums()) {
        (Some(a), Some(b)) => {
            if timed {
                text.push('\n');
            }
            let report = compare_from(a, b, tolerance, paths)?;
            let _ = writeln!(text, "{report}");
            Some(report)
        }
        _ => None,
    };
    if !timed && checksums.is_none() {
        return Err(Error::NothingToDo {
            what: "nothing to compare",
            hint: "give two profiles, or two runs that both carry checksums \
             (run the demo with --checksums, or enable ProfilerConfig::checksums)",
        });
    }
    Ok(DiffOutcome {
        text,
        diverged: checksums.as_ref().is_some_and(|r| !r.is_match()),
        checksums,
    })
}
