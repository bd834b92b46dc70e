//! Cost against shape in a report: each brick's fitted line of time against new tokens or
//! context ("AttentionScore per call: 2.10µs + 380ns per 1k context (R² 0.98, 64 passes ×
//! 32 calls, context 16–80)"), and each category's predicted share of brick time as the
//! context grows, fitted from the pass series, with extrapolation beyond the contexts seen
//! marked. Specified in `spec/work-accounting.md` ("Cost against shape").

use crate::base::printable::printable;
use crate::figures::units::{duration, percent};
use crate::model::phase::Phase;
use crate::stats::fit::{Fit, FitSums, Regressor};
use crate::stats::fit_trust::Distrust;
use crate::stats::pass_series::PassSeries;
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
    /// The brick's name, as the profile has it (escape before printing: `BrickFit::line`
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
/// neither gives a line (`FitSums::solve`).
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
    pub(crate) fn shown(&self) -> (f64, f64) {
        let per = self.calls_per_pass.unwrap_or(1) as f64;
        (self.fit.intercept_ns / per, self.fit.slope_ns / per)
    }

    /// The fit in words, the slope per 1k tokens: `AttentionScore per call: 2.10µs + 380ns
    /// per 1k context (R² 0.98, 64 passes × 32 calls, context 16–80)`, followed by
    /// ` not trusted: REASON` when the fit's distrust finds one (`5 passes (a trend needs 16)`,
    /// `below zero at context 6`, ...).
    #[cfg(test)]
    pub(crate) fn line(&self) -> String {
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
        let trust = match f.distrust() {
            Some(why) => format!(" not trusted: {why}"),
            None => String::new(),
        };
        format!(
            "{:<width$} per {per}: {} {sign} {} per 1k {x} (R² {:.2}, {} passes{calls}, {x} {}–{}){trust}",
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
pub(crate) fn category_sums(series: &PassSeries, phase: Phase) -> [FitSums; BrickCategory::COUNT] {
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
pub(crate) struct ContextShares {
    /// The phase fitted.
    pub(crate) phase: Phase,
    /// The categories that took any time, each with its fit and how it is predicted (every fit
    /// has the same passes and context range).
    pub(crate) trends: Vec<CategoryTrend>,
    /// One row per context asked for.
    pub(crate) rows: Vec<ShareRow>,
}

/// How one category's time per pass is predicted at another context.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CategoryTrend {
    /// The category.
    pub(crate) category: BrickCategory,
    /// Its time per pass fitted against the context.
    pub(crate) fit: Fit,
    /// Its mean time per pass over the passes fitted, ns.
    pub(crate) mean_ns: f64,
    /// Whether it is held at `mean_ns` instead of following the line: the line is not trusted
    /// ([`CategoryTrend::distrust`]: too few passes, a context range that does not double,
    /// below zero before the horizon, or R² under 0.5), so extending it would
    /// predict noise (spec/work-accounting.md "Cost against shape").
    pub(crate) held: bool,
    /// Why the line is not trusted, when it is not (the fit's distrust).
    pub(crate) distrust: Option<Distrust>,
}

impl CategoryTrend {
    /// The time per pass predicted at `context`, ns: the line, or the mean when held; never
    /// below zero.
    pub(crate) fn predict_ns(&self, context: u64) -> f64 {
        let ns = if self.held {
            self.mean_ns
        } else {
            self.fit.predict_ns(context)
        };
        ns.max(0.0)
    }
}

/// The predicted shares at one context length.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShareRow {
    /// Context tokens.
    pub(crate) context: u64,
    /// Whether the context lies outside the range the fits saw.
    pub(crate) extrapolated: bool,
    /// Percent of the predicted brick time, per category of [`ContextShares::trends`]; `None`
    /// when every category is predicted at zero (no share to give).
    pub(crate) shares: Option<Vec<f64>>,
}

/// The contexts a report predicts shares at: the smallest and largest seen, then 4 and 16
/// times the largest (extrapolations).
pub(crate) fn default_contexts(min: u64, max: u64) -> Vec<u64> {
    let mut v = vec![min, max, max.saturating_mul(4), max.saturating_mul(16)];
    v.dedup();
    v
}

/// The predicted category shares of `phase`'s passes at each of `contexts` (none given: at
/// `default_contexts` of the range seen); `None` when the
/// categories cannot be fitted against the context (fewer than 3 shaped
/// passes of that phase, or one context only). When the passes are too few or their contexts
/// too narrow for any trend (the fit's distrust of its passes), nothing is extrapolated: only the
/// contexts asked for within the range seen get a row, and every category is held at its
/// mean.
pub(crate) fn context_shares(
    series: &PassSeries,
    phase: Phase,
    contexts: &[u64],
) -> Option<ContextShares> {
    shares_of(phase, &category_sums(series, phase), contexts)
}

/// [`context_shares`] from the categories' fit sums.
fn shares_of(
    phase: Phase,
    sums: &[FitSums; BrickCategory::COUNT],
    contexts: &[u64],
) -> Option<ContextShares> {
    let mut trends = Vec::new();
    for (category, s) in BrickCategory::iter().zip(sums) {
        if s.total_ns() > 0 {
            let fit = s.solve(Regressor::Context)?;
            let distrust = fit.distrust();
            trends.push(CategoryTrend {
                category,
                mean_ns: s.total_ns() as f64 / s.passes() as f64,
                held: distrust.is_some(),
                distrust,
                fit,
            });
        }
    }
    let first = &trends.first()?.fit;
    let (lo, hi) = (first.x_min, first.x_max);
    let defaults;
    let contexts = if contexts.is_empty() {
        defaults = default_contexts(lo, hi);
        &defaults
    } else {
        contexts
    };
    // Too few passes or too narrow a range for any trend: no extrapolation at all.
    let extrapolate = first.distrust_of_passes().is_none();
    let rows = contexts
        .iter()
        .filter(|&&c| extrapolate || (lo..=hi).contains(&c))
        .map(|&context| {
            let predicted: Vec<f64> = trends.iter().map(|t| t.predict_ns(context)).collect();
            let total: f64 = predicted.iter().sum();
            ShareRow {
                context,
                extrapolated: context < lo || context > hi,
                shares: (total > 0.0)
                    .then(|| predicted.iter().map(|p| p * 100.0 / total).collect()),
            }
        })
        .collect();
    Some(ContextShares {
        phase,
        trends,
        rows,
    })
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
pub(crate) fn render_context_shares(s: &ContextShares) -> String {
    let Some(f) = s.trends.first().map(|t| &t.fit) else {
        return String::new();
    };
    let mut out = format!(
        "Share of brick time as the context grows ({}, fitted over {} passes, context {}–{})\n",
        s.phase, f.n, f.x_min, f.x_max
    );
    out.push_str(&format!("{:>11}", "Context"));
    for t in &s.trends {
        let name = format!("{}{}", t.category.name(), if t.held { "=" } else { "" });
        out.push_str(&format!(" {name:>10}"));
    }
    out.push('\n');
    for row in &s.rows {
        let mark = if row.extrapolated { '*' } else { ' ' };
        out.push_str(&format!("{:>11}{mark}", row.context));
        match &row.shares {
            Some(shares) => {
                for share in shares {
                    out.push_str(&format!("{:>10} ", percent(*share)));
                }
            }
            None => {
                for _ in &s.trends {
                    out.push_str(&format!("{:>10} ", "-"));
                }
            }
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
    if let Some(why) = f.distrust_of_passes() {
        // Every line of these passes fails alike: one note, no list.
        out.push_str(&format!(
            "  = every category held at its mean, not extrapolated: {why}\n"
        ));
        return out;
    }
    let held: Vec<String> = s
        .trends
        .iter()
        .filter_map(|t| Some(format!("{} ({})", t.category.name(), t.distrust?)))
        .collect();
    if !held.is_empty() {
        // Within the report's 100 columns whatever the categories: one per line after the
        // first line.
        out.push_str("  = held at its mean, its line not trusted:\n");
        for h in held {
            out.push_str(&format!("    {h}\n"));
        }
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

    use crate::model::phase::PassShape;

    /// A category whose time does not follow the context (R² under [`Fit::MIN_TRUSTED_R2`]) is held
    /// at its mean, so a prediction far past the range seen is not a line through noise; one
    /// that follows it is extended (spec/work-accounting.md "Cost against shape").
    #[test]
    fn noise_is_held_at_its_mean_and_a_trend_is_extended() {
        let mut sums = [FitSums::new(); BrickCategory::COUNT];
        let (attn, ffn) = (
            BrickCategory::Attention as usize,
            BrickCategory::Ffn as usize,
        );
        // 20 passes over contexts 100–214 (steps of 6). Ffn: 1000 ns per pass on average,
        // with noise that falls a little with the context (R² well under 0.5).
        let ffn_ns = [
            1300, 700, 1200, 800, 1250, 750, 1100, 900, 1000, 1000, 1200, 800, 1050, 950, 900,
            1100, 700, 1300, 800, 1200,
        ];
        for (i, &f) in ffn_ns.iter().enumerate() {
            let ctx = 100 + 6 * i as u64;
            let shape = PassShape::new(1, 1, ctx).unwrap();
            sums[attn].add(&shape, 10 * ctx, 0); // exactly 10 ns per context token
            sums[ffn].add(&shape, f, 0);
        }
        let s = shares_of(Phase::Decode, &sums, &[100, 10_000]).unwrap();
        let (a, f) = (&s.trends[0], &s.trends[1]);
        assert_eq!((a.category, a.held), (BrickCategory::Attention, false));
        assert_eq!((f.category, f.held), (BrickCategory::Ffn, true), "{f:?}");
        assert!(
            matches!(f.distrust, Some(Distrust::Noisy { r2 }) if r2 < Fit::MIN_TRUSTED_R2),
            "{f:?}"
        );
        // Held, the Ffn is its mean, 1000 ns, against attention's 100,000 ns at 10k context.
        let far = s.rows[1].shares.as_ref().unwrap();
        let mean = ffn_ns.iter().sum::<u64>() as f64 / 20.0;
        assert!(
            (far[1] - 100.0 * mean / (100_000.0 + mean)).abs() < 1e-9,
            "{far:?}"
        );
        let text = render_context_shares(&s);
        assert!(text.contains("Ffn="), "{text}");
        assert!(
            text.contains("= held at its mean, its line not trusted:"),
            "{text}"
        );
        assert!(text.contains("    Ffn (R² 0."), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }

    /// spec/work-accounting.md "Cost against shape", trusted lines: 7 noisy decode passes over
    /// contexts 6–12 (the real model's `--tokens 8`) once extrapolated the FFN from 45 % to 0 % and
    /// attention to 98 % at context 192. Too few passes: no row beyond the contexts seen, every
    /// category held at its mean, and the table says why.
    #[test]
    fn few_passes_are_never_extrapolated() {
        let mut sums = [FitSums::new(); BrickCategory::COUNT];
        // The FFN falls steeply with the context here (R² 0.7): a line would reach zero by 30.
        let ffn = [45_000, 42_000, 40_000, 36_000, 33_000, 34_000, 28_000];
        let attn = [30_000, 31_000, 30_500, 33_000, 32_000, 35_000, 34_000];
        for i in 0..7 {
            let shape = PassShape::new(1, 1, 6 + i as u64).unwrap();
            sums[BrickCategory::Ffn as usize].add(&shape, ffn[i], 0);
            sums[BrickCategory::Attention as usize].add(&shape, attn[i], 0);
        }
        let s = shares_of(Phase::Decode, &sums, &[]).unwrap();
        assert!(s.trends.iter().all(|t| t.held), "{s:?}");
        assert_eq!(
            s.trends[0].distrust,
            Some(Distrust::FewPasses { passes: 7 })
        );
        let contexts: Vec<u64> = s.rows.iter().map(|r| r.context).collect();
        assert_eq!(contexts, [6, 12]);
        assert!(s.rows.iter().all(|r| !r.extrapolated));
        let text = render_context_shares(&s);
        assert!(!text.contains('*'), "{text}");
        assert!(
            text.contains(
                "= every category held at its mean, not extrapolated: 7 passes (a trend needs 16)"
            ),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }

    /// A line that reaches zero where the shares look is not trusted: the category is held at
    /// its mean instead of being predicted at 0 % (or, before, the whole row at `-`).
    #[test]
    fn a_line_falling_below_zero_is_held_at_its_mean() {
        let mut sums = [FitSums::new(); BrickCategory::COUNT];
        for ctx in (100..=300).step_by(10) {
            let shape = PassShape::new(1, 1, ctx).unwrap();
            // 3000 - 10·ctx: a perfect line that reaches zero at 300 and goes negative past it.
            sums[BrickCategory::Attention as usize].add(&shape, 3000 - 10 * ctx, 0);
            sums[BrickCategory::Ffn as usize].add(&shape, 1000, 0);
        }
        let s = shares_of(Phase::Decode, &sums, &[100, 1000]).unwrap();
        assert_eq!(
            s.trends[0].distrust,
            Some(Distrust::BelowZero {
                regressor: Regressor::Context,
                x: 301
            })
        );
        let far = s.rows[1].shares.as_ref().unwrap();
        assert!(far[0] > 0.0, "{far:?}");
        let text = render_context_shares(&s);
        assert!(
            text.contains("Attention (below zero at context 301)"),
            "{text}"
        );
    }

    /// A brick's line says when it is not trusted, and never predicts a negative time: the
    /// real model's "AttentionSoftmax per call: 244µs - 46.6ms per 1k context (R² 0.67)" over
    /// 5 prefill passes turned negative past context 5, unremarked.
    #[test]
    fn an_untrusted_brick_line_says_so() {
        let mut sums = FitSums::new();
        for (ctx, ns) in [(1, 7_300), (2, 5_100), (3, 3_900), (4, 1_000), (5, 1_500)] {
            sums.add(&PassShape::new(1, 1, ctx).unwrap(), 30 * ns, 30);
        }
        let f = brick_fit("AttentionSoftmax", Phase::Prefill, &sums).unwrap();
        assert!(f.fit.slope_ns < 0.0);
        assert!(
            f.line()
                .ends_with(") not trusted: 5 passes (a trend needs 16)"),
            "{}",
            f.line()
        );
        for x in [0, 5, 6, 100, u64::MAX] {
            assert!(f.fit.predict_ns(x) >= 0.0, "{x}");
        }
        let text = render_fits(&[f]);
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }
}
