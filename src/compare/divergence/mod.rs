//! Comparing two runs' checksum logs: where do they first differ, how far apart are they, which
//! kernels are in one run only, and which kernel produced the first NaN/Inf. Specified in
//! `spec/checksums.md` ("Comparing runs") and `spec/divergence.md`.
//!
//! | file | what lives there |
//! |---|---|
//! | `mod.rs` | [`compare`]: checksums matched by key, verdicts from summaries, [`DivergenceReport`] |
//! | `metrics.rs` | [`ErrorStats`]: elementwise statistics of two tensors (a leaf) |
//! | `check.rs` | [`Check`] (`--check STAT:THRESHOLD`), [`Stat`] |
//! | `captured.rs` | elementwise comparison of captured kernels; captures checked against their log |
//! | `noise.rs` | noise bands from a second reference run: within / beyond noise |
//! | `origin.rs` | where error is born: origin vs carried, per-layer amplification, by pass |
//! | `rerun.rs` | the capture options of the second step of the two-step workflow |

pub(crate) mod captured;
pub(crate) mod check;
pub(crate) mod metrics;
pub(crate) mod noise;
pub(crate) mod origin;
pub(crate) mod rerun;
#[cfg(test)]
mod tests;

pub(crate) use captured::{apply_captures, check_captures_match};
pub(crate) use check::Check;
pub(crate) use metrics::{ErrorStats, REL_EPSILON};
pub(crate) use noise::{apply_noise, NoiseBand, NoiseMeasure, DEFAULT_NOISE_FACTOR};
pub(crate) use origin::{error_flow, ErrorFlow};
pub(crate) use rerun::rerun_plan;

use std::fmt;

use fnv::FnvHashMap;
use serde::{Deserialize, Serialize};

use crate::checksum::{ChecksumLog, DType, KernelChecksum, KernelKey, TensorSummary};
use crate::{Error, Result};

/// How close two summaries must be to count as numerically close:
/// `|a - b| <= atol + rtol * max(|a|, |b|)` for every compared statistic. With both zero
/// (the default) nothing is close: any bit difference diverges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    fn close(&self, a: f64, b: f64) -> bool {
        (a - b).abs() <= self.atol + self.rtol * a.abs().max(b.abs())
    }

    /// Each part finite and 0 or more, else an [`crate::Error::InvalidValue`] naming it (`inf`
    /// would call every kernel close, a negative tolerance none; spec/divergence.md "Options
    /// that mean something"). `brickprof diff` checks it before any file is read.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        for (what, v) in [("rtol", self.rtol), ("atol", self.atol)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(crate::Error::invalid_value(
                    what,
                    v,
                    "a tolerance is a finite, non-negative number (inf would call every kernel close)",
                ));
            }
        }
        Ok(())
    }

    /// True when some difference can be accepted (`rtol > 0` or `atol > 0`).
    pub(crate) fn is_tolerant(&self) -> bool {
        self.rtol > 0.0 || self.atol > 0.0
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
    /// Different bits, beyond tolerance (or failing a check), but within the kernel's noise
    /// band: its distance from the reference is at most the noise factor times the distance
    /// of a second reference run (spec/divergence.md "Noise floor").
    WithinNoise,
    /// Beyond tolerance, a different length, different NaN/Inf counts, opaque bytes that
    /// differ, or any difference at all under zero tolerance (and beyond noise, when a noise
    /// run was given).
    Diverged,
}

impl Verdict {
    /// A short label for reports.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Verdict::BitwiseEqual => "bitwise equal",
            Verdict::WithinTolerance => "numerically close",
            Verdict::WithinNoise => "within noise",
            Verdict::Diverged => "DIVERGED",
        }
    }
}

/// One kernel whose outputs differ between the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DivergenceInfo {
    /// The kernel: pass, layer, brick, call index.
    pub key: KernelKey,
    /// Reference dtype (`None`: a version-1 log).
    pub reference_dtype: Option<DType>,
    /// Candidate dtype.
    pub candidate_dtype: Option<DType>,
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
    /// Elementwise statistics, when both runs captured this kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) elementwise: Option<ErrorStats>,
    /// The kernel's noise band, when a noise run was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) noise: Option<NoiseBand>,
}

/// How far one summary statistic moved from the reference to the candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StatMove {
    /// The statistic: "max", "min", "mean" or "rms".
    pub name: &'static str,
    /// Its value in the reference.
    pub reference: f64,
    /// Its value in the candidate.
    pub candidate: f64,
}

impl StatMove {
    /// `candidate - reference`.
    pub(crate) fn absolute(&self) -> f64 {
        self.candidate - self.reference
    }

    /// `(candidate - reference) / |reference|`: 0 when both are 0, ±infinity when only the
    /// reference is 0.
    pub(crate) fn relative(&self) -> f64 {
        let d = self.absolute();
        if d == 0.0 {
            0.0
        } else {
            d / self.reference.abs()
        }
    }
}

impl DivergenceInfo {
    /// The kernel's error (spec/divergence.md "Where error is born"): the captures' relative
    /// L2 error `sqrt(NMSE)` when both runs captured it, else the summaries' largest relative
    /// difference.
    pub(crate) fn error(&self) -> f64 {
        match &self.elementwise {
            Some(s) => s.relative_l2(),
            None => self.relative_difference,
        }
    }

    /// How far max, min, mean and RMS moved, in that order
    /// (`moves_are_the_summaries_changes` in `tests.rs`).
    pub(crate) fn moves(&self) -> [StatMove; 4] {
        let (a, b) = (&self.reference, &self.candidate);
        let m = |name, reference, candidate| StatMove {
            name,
            reference,
            candidate,
        };
        [
            m("max", a.max, b.max),
            m("min", a.min, b.min),
            m("mean", a.mean(), b.mean()),
            m("rms", a.rms(), b.rms()),
        ]
    }
}

/// The result of [`divergence()`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DivergenceReport {
    /// The tolerance used.
    pub tolerance: Tolerance,
    /// The checks that judged captured kernels (empty: captures shown, not judged).
    #[serde(default)]
    pub checks: Vec<Check>,
    /// The noise factor, when a noise run was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_factor: Option<f64>,
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
    /// The first kernel, in candidate order, whose output holds more NaN, more +Inf or more
    /// -Inf than the reference's output of the same key (or any, when the reference has no such
    /// kernel): where the NaN came from. A legitimate -Inf the reference shares (a causal mask)
    /// blames nothing.
    pub nan_origin: Option<KernelChecksum>,
    /// The reference's entry for [`Self::nan_origin`]'s key, when it has one.
    pub nan_origin_reference: Option<KernelChecksum>,
}

impl DivergenceReport {
    /// The first kernel (in reference order) whose output differs at all.
    pub(crate) fn first(&self) -> Option<&DivergenceInfo> {
        self.divergences.first()
    }

    /// The first kernel that diverged beyond tolerance.
    pub(crate) fn first_diverged(&self) -> Option<&DivergenceInfo> {
        self.divergences
            .iter()
            .find(|d| d.verdict == Verdict::Diverged)
    }

    /// Number of kernels beyond tolerance.
    pub(crate) fn diverged_count(&self) -> usize {
        self.divergences
            .iter()
            .filter(|d| d.verdict == Verdict::Diverged)
            .count()
    }

    /// True when the structure differs (a kernel in one run only).
    pub(crate) fn structural_mismatch(&self) -> bool {
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
/// Errors: [`Error::InvalidValue`] when a part of `tolerance` is not finite and 0 or more
/// (`inf` would call every kernel close, a negative tolerance none; spec/divergence.md
/// "Options that mean something"), [`Error::AlgorithmMismatch`] when the logs were hashed
/// with different algorithms (their hashes say nothing about each other), [`Error::DuplicateKernel`] when a log records
/// a key twice (the result would depend on which entry was picked).
///
/// ```
/// use brickprof::checksum::{ChecksumLog, KernelKey, Tensor};
/// use brickprof::compare::{divergence, Tolerance, Verdict};
/// let key = |layer, brick: &str| KernelKey { pass: 0, layer: Some(layer), brick: brick.into(), call: 0 };
/// let (mut a, mut b) = (ChecksumLog::default(), ChecksumLog::default());
/// a.record(key(0, "RmsNorm"), Tensor::F32(&[1.0, 2.0]));
/// b.record(key(0, "RmsNorm"), Tensor::F32(&[1.0, 2.0]));
/// a.record(key(1, "RmsNorm"), Tensor::F32(&[1.0, 2.0]));
/// b.record(key(1, "RmsNorm"), Tensor::F32(&[1.0, 2.5]));
/// let report = divergence(&a, &b, Tolerance::default())?;
/// let first = report.divergences.first().unwrap();
/// assert_eq!((first.key.layer, first.verdict), (Some(1), Verdict::Diverged));
/// let inf = Tolerance { rtol: f64::INFINITY, atol: 0.0 };
/// assert!(divergence(&a, &b, inf).is_err());
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn divergence(
    reference: &ChecksumLog,
    candidate: &ChecksumLog,
    tolerance: Tolerance,
) -> Result<DivergenceReport> {
    tolerance.validate()?;
    compare_from(reference, candidate, tolerance, [None, None])
}

/// [`compare`] of logs read from `paths` (reference, candidate): a fault of one log names its
/// file.
pub(crate) fn compare_from(
    reference: &ChecksumLog,
    candidate: &ChecksumLog,
    tolerance: Tolerance,
    paths: [Option<&std::path::Path>; 2],
) -> Result<DivergenceReport> {
    if reference.algorithm != candidate.algorithm {
        return Err(Error::AlgorithmMismatch {
            reference: reference.algorithm.name(),
            candidate: candidate.algorithm.name(),
        });
    }
    reference.check_unique("reference", paths[0])?;
    candidate.check_unique("candidate", paths[1])?;
    let (reference, candidate) = (&reference.entries[..], &candidate.entries[..]);
    let mut by_key: FnvHashMap<&KernelKey, usize> = FnvHashMap::default();
    for (i, c) in candidate.iter().enumerate() {
        by_key.insert(&c.key, i);
    }
    let mut matched = vec![false; candidate.len()];
    let mut report = DivergenceReport {
        tolerance,
        checks: Vec::new(),
        noise_factor: None,
        compared: 0,
        bitwise_equal: 0,
        divergences: Vec::new(),
        only_in_reference: Vec::new(),
        only_in_candidate: Vec::new(),
        nan_origin: None,
        nan_origin_reference: None,
    };
    let mut reference_by_key: FnvHashMap<&KernelKey, &KernelChecksum> = FnvHashMap::default();
    for r in reference {
        reference_by_key.insert(&r.key, r);
        let Some(&i) = by_key.get(&r.key) else {
            report.only_in_reference.push(r.key.clone());
            continue;
        };
        matched[i] = true;
        let c = &candidate[i];
        report.compared += 1;
        // A version-1 entry has no dtype: its hash alone decides.
        let same_dtype = r.dtype.is_none() || c.dtype.is_none() || r.dtype == c.dtype;
        if r.hash == c.hash && same_dtype {
            report.bitwise_equal += 1;
            continue;
        }
        let numeric = [r.dtype, c.dtype]
            .iter()
            .all(|d| d.is_none_or(DType::is_numeric));
        let (verdict, relative_difference) = judge(&r.summary, &c.summary, tolerance, numeric);
        report.divergences.push(DivergenceInfo {
            key: r.key.clone(),
            reference_dtype: r.dtype,
            candidate_dtype: c.dtype,
            reference_hash: r.hash,
            candidate_hash: c.hash,
            reference: r.summary,
            candidate: c.summary,
            relative_difference,
            verdict,
            elementwise: None,
            noise: None,
        });
    }
    for (c, m) in candidate.iter().zip(&matched) {
        if !m {
            report.only_in_candidate.push(c.key.clone());
        }
        if report.nan_origin.is_none() {
            let r = reference_by_key.get(&c.key).copied();
            if more_non_finite(&c.summary, r.map(|r| &r.summary)) {
                report.nan_origin = Some(c.clone());
                report.nan_origin_reference = r.cloned();
            }
        }
    }
    Ok(report)
}

/// True when `candidate` holds more NaN, more +Inf or more -Inf than `reference` (than none,
/// when there is no reference).
fn more_non_finite(candidate: &TensorSummary, reference: Option<&TensorSummary>) -> bool {
    let (nan, pos, neg) = reference.map_or((0, 0, 0), |r| (r.nan, r.pos_inf, r.neg_inf));
    candidate.nan > nan || candidate.pos_inf > pos || candidate.neg_inf > neg
}

/// Verdict and largest relative difference of two summaries whose hashes differ (`numeric`:
/// both summaries hold decoded values, not opaque bytes).
fn judge(a: &TensorSummary, b: &TensorSummary, tol: Tolerance, numeric: bool) -> (Verdict, f64) {
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
    if !same_shape || !numeric {
        let rd = if a.len == b.len {
            relative_difference
        } else {
            f64::INFINITY
        };
        return (Verdict::Diverged, rd);
    }
    // Zero tolerance means no difference is acceptable: the bits differ, so it diverged, even
    // when the summaries agree (a permutation, +0.0 vs -0.0).
    let close = pairs.iter().all(|&(x, y)| tol.close(x, y)) && tol.close(a.sum, b.sum);
    if tol.is_tolerant() && close {
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
        let noisy = self
            .divergences
            .iter()
            .filter(|d| d.verdict == Verdict::WithinNoise)
            .count();
        writeln!(
            f,
            "Checksums: {} kernels compared, {} bitwise equal, {} close, {} diverged \
             (rtol {}, atol {})",
            self.compared,
            self.bitwise_equal,
            self.divergences.len() - self.diverged_count() - noisy,
            self.diverged_count(),
            short(self.tolerance.rtol),
            short(self.tolerance.atol),
        )?;
        if let Some(factor) = self.noise_factor {
            writeln!(
                f,
                "Within noise: {noisy} differing kernels (band = {factor} x the noise runs' largest distance)"
            )?;
        }
        match self.first() {
            None => writeln!(f, "No kernel output differs.")?,
            Some(d) => self.fmt_first(f, d)?,
        }
        self.fmt_rest(f)?;
        write!(
            f,
            "Verdict: {}",
            if self.is_match() { "MATCH" } else { "DIVERGED" }
        )
    }
}

impl DivergenceReport {
    /// The first divergence `d` of the report's text, and the first beyond tolerance.
    fn fmt_first(&self, f: &mut fmt::Formatter<'_>, d: &DivergenceInfo) -> fmt::Result {
        writeln!(f, "First divergence: {} ({})", d.key, d.verdict.label())?;
        writeln!(
            f,
            "  hash      {:016x} -> {:016x}",
            d.reference_hash, d.candidate_hash
        )?;
        summary_line(f, "reference", d.reference_dtype, &d.reference)?;
        summary_line(f, "candidate", d.candidate_dtype, &d.candidate)?;
        writeln!(f, "  max relative difference {:.3e}", d.relative_difference)?;
        if let Some(e) = &d.elementwise {
            writeln!(
                f,
                "  elementwise: max abs {:.3e}, max rel {:.3e}, cosine {:.9}, SQNR {:.1} dB, \
                 NMSE {:.2e}",
                e.max_abs, e.max_rel, e.cosine, e.sqnr_db, e.nmse
            )?;
        }
        if self.tolerance.is_tolerant() || !self.checks.is_empty() || self.noise_factor.is_some() {
            match self.first_diverged() {
                Some(x) => writeln!(
                    f,
                    "First beyond tolerance{}: {}",
                    match (self.checks.is_empty(), self.noise_factor.is_some()) {
                        (true, false) => "",
                        (false, false) => " and checks",
                        (true, true) => " and noise",
                        (false, true) => ", checks and noise",
                    },
                    x.key
                )?,
                None => writeln!(
                    f,
                    "No kernel moved beyond the tolerance{}.",
                    if self.noise_factor.is_some() {
                        " and the noise"
                    } else {
                        ""
                    }
                )?,
            }
        }
        Ok(())
    }

    /// The NaN/Inf origin, the structural mismatch and the next differing kernels of the
    /// report's text.
    fn fmt_rest(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(n) = &self.nan_origin {
            let s = &n.summary;
            write!(
                f,
                "NaN/Inf origin: {} ({} NaN, {} +Inf, {} -Inf of {}; ",
                n.key, s.nan, s.pos_inf, s.neg_inf, s.len
            )?;
            match &self.nan_origin_reference {
                Some(r) => writeln!(
                    f,
                    "the reference has {} NaN, {} +Inf, {} -Inf)",
                    r.summary.nan, r.summary.pos_inf, r.summary.neg_inf
                )?,
                None => writeln!(f, "not in the reference)")?,
            }
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
        Ok(())
    }
}

impl DivergenceReport {
    /// Every differing kernel, one row each: how far max, min, mean and RMS moved, absolute
    /// (`candidate - reference`) and, on the row below, relative to the reference. Rows fit
    /// 100 columns. `brickprof diff --all` prints this.
    pub fn render_all(&self) -> String {
        use fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Every differing kernel: candidate - reference, and below it relative to the reference"
        );
        let _ = writeln!(
            out,
            "{:<38} {:<8} {:>12} {:>12} {:>12} {:>12}",
            "Kernel", "Verdict", "max", "min", "mean", "rms"
        );
        out.push_str(&"-".repeat(98));
        out.push('\n');
        if self.divergences.is_empty() {
            out.push_str("(none)\n");
        }
        for d in &self.divergences {
            let verdict = match d.verdict {
                Verdict::BitwiseEqual => "equal",
                Verdict::WithinTolerance => "close",
                Verdict::WithinNoise => "noise",
                Verdict::Diverged => "DIVERGED",
            };
            let moves = d.moves();
            let _ = write!(out, "{:<38} {:<8}", clip(&d.key.to_string(), 38), verdict);
            for m in &moves {
                let _ = write!(out, " {:>12}", sci(m.absolute()));
            }
            let _ = write!(out, "\n{:<38} {:<8}", "", "rel.");
            for m in &moves {
                let _ = write!(out, " {:>12}", sci(m.relative()));
            }
            out.push('\n');
        }
        out
    }
}

/// A tolerance as typed: `0`, `1e-5`.
fn short(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else {
        format!("{x:e}")
    }
}

/// A signed number in 3-digit scientific notation, `inf` spelled out.
fn sci(x: f64) -> String {
    if x.is_finite() {
        format!("{x:+.3e}")
    } else if x > 0.0 {
        "+inf".into()
    } else {
        "-inf".into()
    }
}

/// At most `width` characters, an ellipsis marking a cut.
fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(width - 1).collect();
        c.push('…');
        c
    }
}

fn summary_line(
    f: &mut fmt::Formatter<'_>,
    who: &str,
    dtype: Option<DType>,
    s: &TensorSummary,
) -> fmt::Result {
    writeln!(f, "{}", summary_text(who, dtype, s))
}

/// One side's summary on one line: four significant digits a statistic, so the line stays
/// within the report's 100 columns for any length, sign and exponent (spec/checksums.md
/// "Reading a divergence").
fn summary_text(who: &str, dtype: Option<DType>, s: &TensorSummary) -> String {
    format!(
        "  {who} {} len {} mean {:.3e} rms {:.3e} min {:.3e} max {:.3e} nan {} inf {}",
        dtype.map_or("?", DType::name),
        s.len,
        s.mean(),
        s.rms(),
        s.min,
        s.max,
        s.nan,
        s.pos_inf.saturating_add(s.neg_inf)
    )
}

#[cfg(test)]
mod summary_width_tests {
    use super::*;

    #[test]
    fn a_summary_line_fits_100_columns_whatever_its_numbers() {
        // spec/checksums.md "Reading a divergence": every line of the report within 100
        // columns. Negative numbers with two-digit exponents and a long tensor were 101+.
        let mut data = vec![-1.234_567e-38_f32; 1_234_567];
        data[0] = -3.4e38;
        data[1] = f32::NAN;
        let s = TensorSummary::of(crate::checksum::Tensor::F32(&data));
        for who in ["reference", "candidate"] {
            let line = summary_text(who, Some(DType::Bf16), &s);
            assert!(
                line.chars().count() <= 100,
                "{} columns: {line}",
                line.chars().count()
            );
        }
    }
}
