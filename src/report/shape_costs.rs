//! Cost against shape in a report: each brick's fitted line of time against new tokens or
//! context ("AttentionScore per call: 2.10µs + 380ns per 1k context (R² 0.98, 64 passes ×
//! 32 calls, context 16–80)"), and each category's predicted share of brick time as the
//! context grows, fitted from the pass series, with extrapolation beyond the contexts seen
//! marked. Specified in `spec/work-accounting.md` ("Cost against shape").

use crate::fit::{Fit, FitSums, Regressor};
use crate::pass_series::PassSeries;
use crate::phase::Phase;
use crate::printable::printable;
use crate::report::units::{duration, percent};
use strum::IntoEnumIterator;

use crate::{BrickCategory, BrickId};

/// What a brick's time is fitted against first: the context for the bricks whose work grows
/// with the tokens attended (`AttentionScore`, `AttentionSoftmax`, `AttentionOutput`, and a
/// registered brick whose name contains "attention" or "attn", any case), new tokens for every
/// other (projections, the FFN, norms). [`brick_fit`] falls back to the other regressor when
/// this one never varied.
pub(crate) fn regressor_for(brick: &str) -> Regressor {
    match brick.parse::<BrickId>() {
        Ok(BrickId::AttentionScore | BrickId::AttentionSoftmax | BrickId::AttentionOutput) => {
            Regressor::Context
        }
        Ok(_) => Regressor::NewTokens,
        Err(_) => {
            let lower = brick.to_ascii_lowercase();
            if lower.contains("attention") || lower.contains("attn") {
                Regressor::Context
            } else {
                Regressor::NewTokens
            }
        }
    }
}

/// One brick's fitted cost against shape in one phase.
#[derive(Debug, Clone, PartialEq)]
pub struct BrickFit {
    /// The brick's name, as the profile has it (escape before printing: [`BrickFit::line`]
    /// does).
    pub name: String,
    /// The phase whose passes were fitted.
    pub phase: Phase,
    /// The line of the brick's time per pass.
    pub fit: Fit,
    /// The brick's calls in each pass, when that number never changed (the line is then shown
    /// per call).
    pub calls_per_pass: Option<u64>,
}

/// The fit of brick `name` over `sums` (its passes of `phase`): against
/// the regressor `name`'s work grows with (the context for attention, new tokens for every
/// other brick), or the other regressor when that one never varied; `None` when
/// neither gives a line ([`FitSums::solve`]).
pub fn brick_fit(name: &str, phase: Phase, sums: &FitSums) -> Option<BrickFit> {
    let first = regressor_for(name);
    let fit = sums.solve(first).or_else(|| sums.solve(first.other()))?;
    Some(BrickFit {
        name: name.to_string(),
        phase,
        fit,
        calls_per_pass: sums.calls_per_pass(),
    })
}

impl BrickFit {
    /// The intercept and slope shown: per call when the calls per pass are constant, else per
    /// pass, ns.
    pub fn shown(&self) -> (f64, f64) {
        let per = self.calls_per_pass.unwrap_or(1) as f64;
        (self.fit.intercept_ns / per, self.fit.slope_ns / per)
    }

    /// The fit in words, the slope per 1k tokens: `AttentionScore per call: 2.10µs + 380ns
    /// per 1k context (R² 0.98, 64 passes × 32 calls, context 16–80)`.
    pub fn line(&self) -> String {
        self.line_padded(0)
    }

    fn line_padded(&self, width: usize) -> String {
        let (a, b) = self.shown();
        let f = &self.fit;
        let x = f.regressor.label();
        let (per, calls) = match self.calls_per_pass {
            Some(c) => ("call", format!(" × {c} calls")),
            None => ("pass", String::new()),
        };
        let sign = if b < 0.0 { '-' } else { '+' };
        format!(
            "{:<width$} per {per}: {} {sign} {} per 1k {x} (R² {:.2}, {} passes{calls}, {x} {}–{})",
            printable(&self.name),
            signed(a),
            duration(b.abs() * 1e3),
            f.r2,
            f.n,
            f.x_min,
            f.x_max,
        )
    }
}

/// A duration that may be negative (a fitted intercept can be).
fn signed(ns: f64) -> String {
    if ns < 0.0 {
        format!("-{}", duration(-ns))
    } else {
        duration(ns)
    }
}

/// The "Cost against shape" lines of one phase's brick fits, names aligned, in the order
/// given; empty when there is none.
pub fn render_fits(fits: &[BrickFit]) -> String {
    let Some(first) = fits.first() else {
        return String::new();
    };
    let width = fits
        .iter()
        .map(|f| printable(&f.name).chars().count())
        .max()
        .unwrap_or(0);
    let mut out = format!("Cost against shape ({}): time = a + b·x\n", first.phase);
    for f in fits {
        let line = format!("  {}", f.line_padded(width));
        // Within 100 columns: a long line goes on with its goodness of fit below.
        match line.find(" (R²") {
            Some(at) if line.chars().count() > 100 => {
                let (fit, goodness) = line.split_at(at);
                out.push_str(fit);
                out.push_str(&format!("\n{:w$}{}\n", "", goodness.trim_start(), w = 4));
            }
            _ => {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out
}

/// Per category, the fit sums of its time per pass over the records of `phase` in `series`
/// (in [`BrickCategory`] order; a category's time in a pass is what the record says, its calls
/// unknown, so its fit is per pass).
pub fn category_sums(series: &PassSeries, phase: Phase) -> [FitSums; BrickCategory::COUNT] {
    let mut sums = [FitSums::new(); BrickCategory::COUNT];
    for r in series.records().filter(|r| r.phase() == phase) {
        let Some(shape) = r.shape() else { continue };
        for (c, s) in BrickCategory::iter().zip(sums.iter_mut()) {
            s.add(shape, r.category_ns(c), 0);
        }
    }
    sums
}

/// Each category's predicted share of brick time at a few context lengths, from per-category
/// fits against the context over one phase's passes.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextShares {
    /// The phase fitted.
    pub phase: Phase,
    /// The categories that took any time, with their fits (every fit has the same passes and
    /// context range).
    pub fits: Vec<(BrickCategory, Fit)>,
    /// One row per context asked for.
    pub rows: Vec<ShareRow>,
}

/// The predicted shares at one context length.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareRow {
    /// Context tokens.
    pub context: u64,
    /// Whether the context lies outside the range the fits saw.
    pub extrapolated: bool,
    /// Percent of the predicted brick time, per category of [`ContextShares::fits`] (a
    /// category predicted below zero counts as zero).
    pub shares: Vec<f64>,
}

/// The contexts a report predicts shares at: the smallest and largest seen, then 4 and 16
/// times the largest (extrapolations).
pub fn default_contexts(min: u64, max: u64) -> Vec<u64> {
    let mut v = vec![min, max, max.saturating_mul(4), max.saturating_mul(16)];
    v.dedup();
    v
}

/// The predicted category shares of `phase`'s passes at each of `contexts` (none given: at
/// [`default_contexts`] of the range seen); `None` when the
/// categories cannot be fitted against the context (fewer than [`Fit::MIN_PASSES`] shaped
/// passes of that phase, or one context only).
pub fn context_shares(
    series: &PassSeries,
    phase: Phase,
    contexts: &[u64],
) -> Option<ContextShares> {
    let sums = category_sums(series, phase);
    let mut fits = Vec::new();
    for (c, s) in BrickCategory::iter().zip(&sums) {
        if s.total_ns() > 0 {
            fits.push((c, s.solve(Regressor::Context)?));
        }
    }
    let (_, first) = fits.first()?;
    let (lo, hi) = (first.x_min, first.x_max);
    let defaults;
    let contexts = if contexts.is_empty() {
        defaults = default_contexts(lo, hi);
        &defaults
    } else {
        contexts
    };
    let rows = contexts
        .iter()
        .map(|&context| {
            let predicted: Vec<f64> = fits
                .iter()
                .map(|(_, f)| f.predict_ns(context).max(0.0))
                .collect();
            let total: f64 = predicted.iter().sum();
            ShareRow {
                context,
                extrapolated: context < lo || context > hi,
                shares: predicted
                    .iter()
                    .map(|p| if total > 0.0 { p * 100.0 / total } else { 0.0 })
                    .collect(),
            }
        })
        .collect();
    Some(ContextShares { phase, fits, rows })
}

/// The shares as a table, one row per context, a `*` on each extrapolated context and a
/// footnote giving the range seen. At most 10 + 10 per category columns (80 for all seven).
///
/// ```text
/// Share of brick time as the context grows (decode, fitted over 64 passes, context 16–80)
///     Context  Attention        Ffn
///          16      40.0%      60.0%
///          80      52.1%      47.9%
///         320*     72.3%      27.7%
///   * beyond the contexts seen (16–80): extrapolated from the fits
/// ```
pub fn render_context_shares(s: &ContextShares) -> String {
    let Some((_, f)) = s.fits.first() else {
        return String::new();
    };
    let mut out = format!(
        "Share of brick time as the context grows ({}, fitted over {} passes, context {}–{})\n",
        s.phase, f.n, f.x_min, f.x_max
    );
    out.push_str(&format!("{:>11}", "Context"));
    for (c, _) in &s.fits {
        out.push_str(&format!(" {:>10}", c.name()));
    }
    out.push('\n');
    for row in &s.rows {
        let mark = if row.extrapolated { '*' } else { ' ' };
        out.push_str(&format!("{:>11}{mark}", row.context));
        for share in &row.shares {
            out.push_str(&format!("{:>10} ", percent(*share)));
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
    if s.rows.iter().any(|r| r.extrapolated) {
        out.push_str(&format!(
            "  * beyond the contexts seen ({}–{}): extrapolated from the fits\n",
            f.x_min, f.x_max
        ));
    }
    out
}

/// The fits a report shows of `phase`'s passes, in the profile's brick order: each brick's
/// against the regressor its work grows with ([`regressor_for`]) only, since a projection's
/// decode time against the context would be a line through noise.
pub(crate) fn phase_fits(profile: &crate::Profile, phase: Phase) -> Vec<BrickFit> {
    profile
        .bricks
        .iter()
        .filter_map(|b| {
            let f = b.fits.iter().find(|f| f.phase == phase)?;
            brick_fit(&b.name, phase, &f.sums)
                .filter(|fit| fit.fit.regressor == regressor_for(&b.name))
        })
        .collect()
}

/// The "Cost against shape" section of a report: each phase's brick fits (prefill, decode,
/// mixed, in that order; each brick against the regressor its work grows with,
/// [`regressor_for`]), then the decode shares as the context grows; empty when the profile
/// has no fit (an unshaped run, or too few passes of one shape).
pub(crate) fn cost_section(profile: &crate::Profile) -> String {
    let mut out = String::new();
    for phase in [Phase::Prefill, Phase::Decode, Phase::Mixed] {
        out.push_str(&render_fits(&phase_fits(profile, phase)));
    }
    if let Some(shares) = profile
        .pass_series
        .as_ref()
        .and_then(|s| context_shares(s, Phase::Decode, &[]))
    {
        out.push_str(&render_context_shares(&shares));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_scores_are_fitted_against_the_context_projections_against_new_tokens() {
        assert_eq!(regressor_for("AttentionScore"), Regressor::Context);
        assert_eq!(regressor_for("softmax"), Regressor::Context);
        assert_eq!(regressor_for("QkvProjection"), Regressor::NewTokens);
        assert_eq!(regressor_for("FlashAttn"), Regressor::Context);
        assert_eq!(regressor_for("MoeRouter"), Regressor::NewTokens);
    }
}
