//! Comparing two runs' checksum logs: where do they first differ, how far apart are they, which
//! kernels are in one run only, and which kernel produced the first NaN/Inf. Specified in
//! `spec/checksums.md` ("Comparing runs").

use std::fmt;

use fnv::FnvHashMap;
use serde::{Deserialize, Serialize};

use crate::checksum::{ChecksumLog, KernelChecksum, KernelKey, TensorSummary};

/// How close two summaries must be to count as numerically close:
/// `|a - b| <= atol + rtol * max(|a|, |b|)` for every compared statistic. With both zero
/// ([`Tolerance::EXACT`], the default) nothing is close: any bit difference diverges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    /// Exact comparison: every bit difference is a divergence.
    pub const EXACT: Tolerance = Tolerance {
        rtol: 0.0,
        atol: 0.0,
    };

    fn close(&self, a: f64, b: f64) -> bool {
        (a - b).abs() <= self.atol + self.rtol * a.abs().max(b.abs())
    }
}

/// How two checksums of the same kernel compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Same hash: bitwise equal.
    BitwiseEqual,
    /// Different bits, but a non-zero tolerance was given and every summary statistic is within
    /// it, with the same length and NaN/Inf counts.
    WithinTolerance,
    /// Beyond tolerance, a different length, different NaN/Inf counts, or any difference at
    /// all under zero tolerance.
    Diverged,
}

impl Verdict {
    /// A short label for reports.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::BitwiseEqual => "bitwise equal",
            Verdict::WithinTolerance => "numerically close",
            Verdict::Diverged => "DIVERGED",
        }
    }
}

/// One kernel whose outputs differ between the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DivergenceInfo {
    /// The kernel: pass, layer, brick, call index.
    pub key: KernelKey,
    /// Reference hash.
    #[serde(with = "crate::checksum::hex_u64")]
    pub reference_hash: u64,
    /// Candidate hash.
    #[serde(with = "crate::checksum::hex_u64")]
    pub candidate_hash: u64,
    /// Reference summary.
    pub reference: TensorSummary,
    /// Candidate summary.
    pub candidate: TensorSummary,
    /// The largest relative difference over the compared statistics (mean, rms, min, max).
    pub relative_difference: f64,
    /// Close or diverged.
    pub verdict: Verdict,
}

/// The result of [`compare`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DivergenceReport {
    /// The tolerance used.
    pub tolerance: Tolerance,
    /// Kernels present in both runs.
    pub compared: usize,
    /// Of those, how many were bitwise equal.
    pub bitwise_equal: usize,
    /// Every kernel whose hashes differ, in reference order (the first is the first divergence).
    pub divergences: Vec<DivergenceInfo>,
    /// Kernels recorded in the reference only (structural mismatch).
    pub only_in_reference: Vec<KernelKey>,
    /// Kernels recorded in the candidate only (structural mismatch).
    pub only_in_candidate: Vec<KernelKey>,
    /// The first kernel, in candidate order, whose output has NaN/Inf where the reference's has
    /// none: where the NaN came from.
    pub nan_origin: Option<KernelChecksum>,
}

impl DivergenceReport {
    /// The first kernel (in reference order) whose output differs at all.
    pub fn first(&self) -> Option<&DivergenceInfo> {
        self.divergences.first()
    }

    /// The first kernel that diverged beyond tolerance.
    pub fn first_diverged(&self) -> Option<&DivergenceInfo> {
        self.divergences
            .iter()
            .find(|d| d.verdict == Verdict::Diverged)
    }

    /// Number of kernels beyond tolerance.
    pub fn diverged_count(&self) -> usize {
        self.divergences
            .iter()
            .filter(|d| d.verdict == Verdict::Diverged)
            .count()
    }

    /// True when the structure differs (a kernel in one run only).
    pub fn structural_mismatch(&self) -> bool {
        !self.only_in_reference.is_empty() || !self.only_in_candidate.is_empty()
    }

    /// True when the candidate matches the reference within tolerance: nothing diverged, no
    /// structural mismatch, no new NaN/Inf.
    pub fn is_match(&self) -> bool {
        self.diverged_count() == 0 && !self.structural_mismatch() && self.nan_origin.is_none()
    }
}

/// Compare a candidate run's checksums with a reference run's.
///
/// ```
/// use brickprof::checksum::{ChecksumLog, KernelKey};
/// use brickprof::divergence::{compare, Tolerance, Verdict};
/// let key = |layer, brick: &str| KernelKey { pass: 0, layer: Some(layer), brick: brick.into(), call: 0 };
/// let (mut a, mut b) = (ChecksumLog::new(), ChecksumLog::new());
/// a.record_f32(key(0, "RmsNorm"), &[1.0, 2.0]);
/// b.record_f32(key(0, "RmsNorm"), &[1.0, 2.0]);
/// a.record_f32(key(1, "RmsNorm"), &[1.0, 2.0]);
/// b.record_f32(key(1, "RmsNorm"), &[1.0, 2.5]);
/// let report = compare(&a, &b, Tolerance::EXACT);
/// let first = report.first().unwrap();
/// assert_eq!((first.key.layer, first.verdict), (Some(1), Verdict::Diverged));
/// ```
pub fn compare(
    reference: &ChecksumLog,
    candidate: &ChecksumLog,
    tolerance: Tolerance,
) -> DivergenceReport {
    let mut by_key: FnvHashMap<&KernelKey, usize> = FnvHashMap::default();
    for (i, c) in candidate.entries.iter().enumerate() {
        by_key.entry(&c.key).or_insert(i);
    }
    let mut matched = vec![false; candidate.entries.len()];
    let mut report = DivergenceReport {
        tolerance,
        compared: 0,
        bitwise_equal: 0,
        divergences: Vec::new(),
        only_in_reference: Vec::new(),
        only_in_candidate: Vec::new(),
        nan_origin: None,
    };
    let mut reference_non_finite: FnvHashMap<&KernelKey, bool> = FnvHashMap::default();
    for r in &reference.entries {
        reference_non_finite.insert(&r.key, r.summary.has_non_finite());
        let Some(&i) = by_key.get(&r.key) else {
            report.only_in_reference.push(r.key.clone());
            continue;
        };
        matched[i] = true;
        let c = &candidate.entries[i];
        report.compared += 1;
        if r.hash == c.hash {
            report.bitwise_equal += 1;
            continue;
        }
        let (verdict, relative_difference) = judge(&r.summary, &c.summary, tolerance);
        report.divergences.push(DivergenceInfo {
            key: r.key.clone(),
            reference_hash: r.hash,
            candidate_hash: c.hash,
            reference: r.summary,
            candidate: c.summary,
            relative_difference,
            verdict,
        });
    }
    for (c, m) in candidate.entries.iter().zip(&matched) {
        if !m {
            report.only_in_candidate.push(c.key.clone());
        }
        if report.nan_origin.is_none()
            && c.summary.has_non_finite()
            && !reference_non_finite.get(&c.key).copied().unwrap_or(false)
        {
            report.nan_origin = Some(c.clone());
        }
    }
    report
}

/// Verdict and largest relative difference of two summaries whose hashes differ.
fn judge(a: &TensorSummary, b: &TensorSummary, tol: Tolerance) -> (Verdict, f64) {
    let pairs = [
        (a.mean(), b.mean()),
        (a.rms(), b.rms()),
        (a.min, b.min),
        (a.max, b.max),
    ];
    let relative_difference = pairs
        .iter()
        .map(|&(x, y)| relative(x, y))
        .fold(0.0, f64::max);
    let same_shape =
        a.len == b.len && a.nan == b.nan && a.pos_inf == b.pos_inf && a.neg_inf == b.neg_inf;
    if !same_shape {
        let rd = if a.len == b.len {
            relative_difference
        } else {
            f64::INFINITY
        };
        return (Verdict::Diverged, rd);
    }
    // Zero tolerance means no difference is acceptable: the bits differ, so it diverged, even
    // when the summaries agree (a permutation, +0.0 vs -0.0).
    let tolerant = tol.rtol > 0.0 || tol.atol > 0.0;
    let close = pairs.iter().all(|&(x, y)| tol.close(x, y)) && tol.close(a.sum, b.sum);
    if tolerant && close {
        (Verdict::WithinTolerance, relative_difference)
    } else {
        (Verdict::Diverged, relative_difference)
    }
}

/// `|a - b| / max(|a|, |b|)`, 0 when both are 0.
fn relative(a: f64, b: f64) -> f64 {
    let scale = a.abs().max(b.abs());
    if scale == 0.0 {
        0.0
    } else {
        (a - b).abs() / scale
    }
}

impl fmt::Display for DivergenceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Checksums: {} kernels compared, {} bitwise equal, {} numerically close, {} diverged \
             (rtol {}, atol {})",
            self.compared,
            self.bitwise_equal,
            self.divergences.len() - self.diverged_count(),
            self.diverged_count(),
            self.tolerance.rtol,
            self.tolerance.atol,
        )?;
        match self.first() {
            None => writeln!(f, "No kernel output differs.")?,
            Some(d) => {
                writeln!(f, "First divergence: {} ({})", d.key, d.verdict.label())?;
                writeln!(
                    f,
                    "  hash      {:016x} -> {:016x}",
                    d.reference_hash, d.candidate_hash
                )?;
                summary_line(f, "reference", &d.reference)?;
                summary_line(f, "candidate", &d.candidate)?;
                writeln!(f, "  max relative difference {:.3e}", d.relative_difference)?;
                if let Some(first_bad) = self.first_diverged().filter(|x| x.key != d.key) {
                    writeln!(f, "First beyond tolerance: {}", first_bad.key)?;
                }
            }
        }
        if let Some(n) = &self.nan_origin {
            writeln!(
                f,
                "NaN/Inf origin: {} ({} NaN, {} +Inf, {} -Inf of {}; the reference has none)",
                n.key, n.summary.nan, n.summary.pos_inf, n.summary.neg_inf, n.summary.len
            )?;
        }
        if self.structural_mismatch() {
            writeln!(
                f,
                "Structural mismatch: {} kernels only in the reference, {} only in the candidate",
                self.only_in_reference.len(),
                self.only_in_candidate.len()
            )?;
            for k in self.only_in_reference.iter().take(5) {
                writeln!(f, "  only in reference: {k}")?;
            }
            for k in self.only_in_candidate.iter().take(5) {
                writeln!(f, "  only in candidate: {k}")?;
            }
        }
        let more = self.divergences.len().saturating_sub(1);
        if more > 0 {
            writeln!(f, "Then {more} more differing kernels, the next ones:")?;
            for d in self.divergences.iter().skip(1).take(5) {
                writeln!(
                    f,
                    "  {} ({}, rel. diff {:.2e})",
                    d.key,
                    d.verdict.label(),
                    d.relative_difference
                )?;
            }
        }
        write!(
            f,
            "Verdict: {}",
            if self.is_match() { "MATCH" } else { "DIVERGED" }
        )
    }
}

fn summary_line(f: &mut fmt::Formatter<'_>, who: &str, s: &TensorSummary) -> fmt::Result {
    writeln!(
        f,
        "  {who} len {} mean {:.6e} rms {:.6e} min {:.6e} max {:.6e} nan {} inf {}",
        s.len,
        s.mean(),
        s.rms(),
        s.min,
        s.max,
        s.nan,
        s.pos_inf + s.neg_inf
    )
}
