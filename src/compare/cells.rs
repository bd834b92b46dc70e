//! Timing verdicts per (layer, brick) cell (spec/timing-verdicts.md "Cells: which layer"): a
//! regression in one layer's kernel is named with its layer. A cell's time is its trimmed mean
//! per call over the run's passes of a phase (the per-layer rows of a profile keep sums and a
//! histogram per phase, not per pass), judged relative to the run's other cells, against the
//! noise runs' spread of the same quantity with a correction for the number of cells compared.

use super::timing_verdict::{
    median, noise_spread, Interval, Judgement, TimingVerdict, VerdictSettings,
};
use crate::model::row_key::RowKey;
use crate::stats::histogram::bucket_range;
use crate::{stats::BrickStats, Phase, Profile};

/// The share of calls cut from each end before a cell's mean (10 %): a preempted call or two
/// in a few hundred cannot move it.
pub(crate) const TRIM: f64 = 0.10;
/// The family-wise false-positive rate the cells' correction aims at (5 %).
pub(crate) const FAMILY_ALPHA: f64 = 0.05;
/// Fewest cells a phase needs to be judged relative to its other cells (their median ratio).
pub(crate) const MIN_RELATIVE_CELLS: usize = 4;

/// The mean of `stats`' calls with the lowest and highest `trim` share cut (each end), ns,
/// from the histogram: each call at its bucket's midpoint, within `[min, max]` (exact when
/// every call took the same time; within the histogram's relative error otherwise, and a
/// spread of calls over several buckets averages that out). Outliers of any size are cut
/// whole. The plain mean when the histogram cannot say (saturated) or there are too few calls
/// to cut any; `None` when empty.
pub(crate) fn trimmed_mean(stats: &BrickStats, trim: f64) -> Option<f64> {
    let n = stats.count();
    if n == 0 {
        return None;
    }
    let hist = stats.histogram();
    let cut = (n as f64 * trim).floor() as u64;
    if cut == 0 || hist.len() != n {
        return Some(stats.mean_ns());
    }
    let (lo, hi) = (stats.min_ns() as f64, stats.max_ns() as f64);
    let (first, last) = (cut, n - cut); // keep calls of rank [first, last)
    let (mut seen, mut sum) = (0u64, 0.0f64);
    for (i, c) in hist.nonzero() {
        let (a, b) = bucket_range(i);
        let value = ((a as f64 + b as f64 - 1.0) / 2.0).clamp(lo, hi);
        let kept = (seen + c).min(last).saturating_sub(seen.max(first));
        sum += kept as f64 * value;
        seen += c;
        if seen >= last {
            break;
        }
    }
    Some(sum / (last - first) as f64)
}

/// One (layer, brick) cell of a run in the passes of a phase.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CellTime {
    /// The brick's name.
    pub name: String,
    /// The layer.
    pub layer: usize,
    /// Its trimmed mean per call, ns ([`trimmed_mean`]).
    pub ns: f64,
    /// Its calls.
    pub calls: u64,
}

/// Each layer cell's time in the passes of `phase` of `p`, for the bricks in `bricks`.
pub(crate) fn cell_times(p: &Profile, phase: Phase, bricks: &[&str]) -> Vec<CellTime> {
    let mut out = Vec::new();
    for b in p
        .bricks
        .iter()
        .filter(|b| bricks.contains(&b.name.as_str()))
    {
        for row in b.rows.iter().filter(|r| r.phase == phase) {
            if let (RowKey::Layer(layer), Some(ns)) = (row.row, trimmed_mean(&row.stats, TRIM)) {
                out.push(CellTime {
                    name: b.name.clone(),
                    layer,
                    ns,
                    calls: row.stats.count(),
                });
            }
        }
    }
    out
}

/// The time of cell (`name`, `layer`) in `run`.
pub(crate) fn find_cell<'a>(run: &'a [CellTime], name: &str, layer: usize) -> Option<&'a CellTime> {
    run.iter().find(|c| c.name == name && c.layer == layer)
}

/// Each cell's ratio `candidate / reference`, in the order of `cells`; `None` where a run
/// lacks the cell or the reference's time is 0. With `relative`, divided by a yardstick: the
/// median ratio of **the same brick's other layers** when the brick has cells in at least
/// [`MIN_RELATIVE_CELLS`] layers (a brick's layers move together between runs: one kernel,
/// the same shapes; the brick as a whole is judged by its own row), else of all other cells
/// (when there are at least [`MIN_RELATIVE_CELLS`]), else none.
pub(crate) fn relative_ratios(
    cells: &[(String, usize)],
    reference: &[CellTime],
    candidate: &[CellTime],
    relative: bool,
) -> Vec<Option<f64>> {
    let raw: Vec<Option<f64>> = cells
        .iter()
        .map(|(name, layer)| {
            match (
                find_cell(reference, name, *layer),
                find_cell(candidate, name, *layer),
            ) {
                (Some(a), Some(b)) if a.ns > 0.0 && b.ns.is_finite() => Some(b.ns / a.ns),
                _ => None,
            }
        })
        .collect();
    let usable = raw.iter().flatten().count();
    raw.iter()
        .enumerate()
        .map(|(i, r)| {
            let r = (*r)?;
            if !relative || usable < MIN_RELATIVE_CELLS {
                return Some(r);
            }
            let others = |same_brick: bool| -> Vec<f64> {
                raw.iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i && (!same_brick || cells[*j].0 == cells[i].0))
                    .filter_map(|(_, o)| *o)
                    .collect()
            };
            let layers = others(true);
            let yardstick = if layers.len() + 1 >= MIN_RELATIVE_CELLS {
                layers
            } else {
                others(false)
            };
            median(&yardstick).filter(|m| *m > 0.0).map(|m| r / m)
        })
        .collect()
}

/// The factor a cell's band is widened by for `m` cells compared (a Bonferroni correction):
/// `z(α / 2m) / z(α / 2)` with α = 5 % and `z` the standard normal's upper
/// quantile, so that `m` cells together cry wolf about as often as one row alone. 1 for one
/// cell; about 1.6 for 24, 1.8 for 200.
pub(crate) fn multiplicity_factor(m: usize) -> f64 {
    let m = m.max(1) as f64;
    upper_quantile(FAMILY_ALPHA / (2.0 * m)) / upper_quantile(FAMILY_ALPHA / 2.0)
}

/// `z` with `P(Z > z) = p` for a standard normal `Z`, by bisection on the complementary error
/// function (`p` in (0, 0.5]).
fn upper_quantile(p: f64) -> f64 {
    let tail = |z: f64| 0.5 * erfc(z / std::f64::consts::SQRT_2);
    let (mut lo, mut hi) = (0.0f64, 40.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if tail(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// The complementary error function, relative error under 1.2e-7 (Numerical Recipes'
/// Chebyshev fit).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The verdict on one cell: `ratio` its relative ratio, `noise` the noise runs' relative
/// ratios of the same cell, `floor` the phase's typical cell spread, `factor` the
/// [`multiplicity_factor`]. The band is `noise factor × factor × max(own spread, floor)`;
/// there is no within-run interval (the interval holds the estimate only).
pub(crate) fn judge_cell(
    ratio: f64,
    noise: &[f64],
    floor: f64,
    factor: f64,
    settings: &VerdictSettings,
) -> Judgement {
    let spread = noise_spread(noise).unwrap_or(0.0).max(floor);
    let band = settings.noise_factor() * factor * spread;
    let m = 1.0 + settings.min_effect();
    let verdict = if ratio >= m && ratio.ln() > band {
        TimingVerdict::Slower
    } else if ratio <= 1.0 / m && -ratio.ln() > band {
        TimingVerdict::Faster
    } else {
        TimingVerdict::WithinNoise
    };
    Judgement {
        ratio,
        interval: Interval {
            lo: ratio,
            hi: ratio,
        },
        band: Some(band),
        verdict,
    }
}

#[cfg(test)]
mod tests {
    // spec/timing-verdicts.md "Cells: which layer".
    use super::*;
    use crate::Work;

    #[test]
    fn the_trimmed_mean_ignores_a_few_outliers_and_is_exact_without_them() {
        let mut s = BrickStats::new();
        for _ in 0..100 {
            s.record(1_000, 0, Work::default());
        }
        assert_eq!(trimmed_mean(&s, TRIM), Some(1_000.0));
        // Five preempted calls of 1 ms: the mean triples, the trimmed mean barely moves.
        for _ in 0..5 {
            s.record(1_000_000, 0, Work::default());
        }
        assert!(s.mean_ns() > 40_000.0);
        let t = trimmed_mean(&s, TRIM).unwrap();
        assert!((t - 1_000.0).abs() <= 1_000.0 / 32.0, "{t}");
        assert_eq!(trimmed_mean(&BrickStats::new(), TRIM), None);
    }

    #[test]
    fn ratios_are_relative_to_the_other_cells() {
        let cells: Vec<(String, usize)> = (0..5).map(|l| ("Up".to_string(), l)).collect();
        let cell = |layer: usize, ns: f64| CellTime {
            name: "Up".into(),
            layer,
            ns,
            calls: 1,
        };
        let a: Vec<CellTime> = (0..5).map(|l| cell(l, 100.0)).collect();
        // Everything 20 % slower, layer 3 a further 40 %.
        let b: Vec<CellTime> = (0..5)
            .map(|l| cell(l, if l == 3 { 168.0 } else { 120.0 }))
            .collect();
        let r = relative_ratios(&cells, &a, &b, true);
        for (l, r) in r.iter().enumerate() {
            let want = if l == 3 { 1.4 } else { 1.0 };
            assert!((r.unwrap() - want).abs() < 1e-12, "{l}: {r:?}");
        }
        // With two bricks, a cell's yardstick is its own brick's other layers: Down moved
        // 10 % as a whole (its own row says so), Up's layer 3 40 % against Up's other layers.
        let mut a2 = a.clone();
        let mut b2 = b.clone();
        let mut cells2 = cells.clone();
        for l in 0..5 {
            let down = |ns: f64| CellTime {
                name: "Down".into(),
                layer: l,
                ns,
                calls: 1,
            };
            a2.push(down(100.0));
            b2.push(down(132.0));
            cells2.push(("Down".into(), l));
        }
        let r = relative_ratios(&cells2, &a2, &b2, true);
        for (i, r) in r.iter().enumerate() {
            let want = if i == 3 { 1.4 } else { 1.0 };
            assert!((r.unwrap() - want).abs() < 1e-12, "{i}: {r:?}");
        }
        // Too few cells: absolute.
        let r = relative_ratios(&cells[..3], &a, &b, true);
        assert!((r[0].unwrap() - 1.2).abs() < 1e-12);
        // Asked for absolute ratios: as measured.
        let r = relative_ratios(&cells, &a, &b, false);
        assert!((r[0].unwrap() - 1.2).abs() < 1e-12);
    }

    #[test]
    fn the_multiplicity_factor_follows_the_normal_quantiles() {
        assert!((upper_quantile(0.025) - 1.959_964).abs() < 1e-5);
        assert!((multiplicity_factor(1) - 1.0).abs() < 1e-9);
        let f24 = multiplicity_factor(24);
        assert!((f24 - 3.0782 / 1.95996).abs() < 1e-3, "{f24}");
        assert!(multiplicity_factor(200) > f24);
    }

    #[test]
    fn a_cell_is_judged_against_its_widened_band() {
        let s = VerdictSettings::default();
        // Noise runs 1 % and 2 % off: spread ln 1.02; band 3 × 1.5 × that ≈ 8.9 %.
        let noise = [1.01, 1.02];
        let j = judge_cell(1.4, &noise, 0.0, 1.5, &s);
        assert_eq!(j.verdict, TimingVerdict::Slower);
        let j = judge_cell(1.08, &noise, 0.0, 1.5, &s);
        assert_eq!(j.verdict, TimingVerdict::WithinNoise);
        // The phase's floor widens a band chance made narrow.
        let j = judge_cell(1.2, &[1.0], 0.05, 1.5, &s);
        assert_eq!(j.verdict, TimingVerdict::WithinNoise);
        let j = judge_cell(1.0 / 1.4, &noise, 0.0, 1.5, &s);
        assert_eq!(j.verdict, TimingVerdict::Faster);
    }
}
