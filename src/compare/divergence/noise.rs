//! The noise floor (spec/divergence.md "Noise floor"): a second run of the reference setup
//! gives every kernel its run-to-run distance; a candidate kernel within `factor` times that
//! distance is *within noise*. From summaries alone, and from captures (RMSE) when both
//! comparisons have them. A kernel (a brick in a layer) runs once per forward; its band is set
//! by the largest run-to-run distance over all its calls and passes, so one lucky call of the
//! noise run does not make the band too tight.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::{DivergenceInfo, DivergenceReport, Verdict};

/// Default noise factor: a candidate may stray up to 3x as far as the reference strays from
/// itself (torch._dynamo's `same()` allows 2-3x the reference's own RMSE).
pub(crate) const DEFAULT_NOISE_FACTOR: f64 = 3.0;

/// What a noise band measured distances with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum NoiseMeasure {
    /// RMSE of captured tensors (both comparisons had captures of the kernel).
    Rmse,
    /// The summaries' largest difference of mean, rms, min or max, relative to the
    /// reference's rms (`max |Δ| / max(rms, REL_EPSILON)`): steady where a mean is near 0.
    Summary,
}

/// One kernel's noise band and where the candidate falls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct NoiseBand {
    /// How distances were measured.
    pub(crate) measure: NoiseMeasure,
    /// The reference's run-to-run distance (reference vs noise run), the largest over the
    /// kernel's calls and passes; 0 when they were bitwise equal.
    pub(crate) noise: f64,
    /// The band: factor times `noise`.
    pub(crate) band: f64,
    /// The candidate's distance from the reference.
    pub(crate) distance: f64,
    /// `noise > 0` and `distance <= band`: a kernel that never varies has no band.
    pub(crate) within: bool,
}

/// Distance of one comparison, in `measure`; `None` when it cannot be measured so (no
/// captures for RMSE).
fn distance(d: &DivergenceInfo, measure: NoiseMeasure) -> Option<f64> {
    match (measure, &d.elementwise) {
        (NoiseMeasure::Rmse, Some(s)) => Some(s.rmse),
        (NoiseMeasure::Rmse, None) => None,
        (NoiseMeasure::Summary, _) => {
            let (a, b) = (&d.reference, &d.candidate);
            if a.len != b.len || a.non_finite() != b.non_finite() {
                return Some(f64::INFINITY);
            }
            let moved = [
                (a.mean(), b.mean()),
                (a.rms(), b.rms()),
                (a.min, b.min),
                (a.max, b.max),
            ]
            .iter()
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
            Some(moved / a.rms().max(super::REL_EPSILON))
        }
    }
}

/// Judge every differing kernel of `report` (reference vs candidate) against its noise band
/// from `noise` (reference vs each further reference run): a kernel that diverged but lies within
/// `factor` times the reference's own distance becomes [`Verdict::WithinNoise`].
///
/// (Example: the unit test `apply_noise_within_noise` in `divergence/tests.rs`.)
pub(crate) fn apply_noise(report: &mut DivergenceReport, noise: &[DivergenceReport], factor: f64) {
    report.noise_factor = Some(factor);
    // The largest run-to-run distance of each kernel (layer, brick) in each measure, over
    // every noise run.
    let mut pooled: HashMap<(Option<u32>, &str, NoiseMeasure), f64> = HashMap::new();
    for n in noise.iter().flat_map(|n| &n.divergences) {
        for m in [NoiseMeasure::Rmse, NoiseMeasure::Summary] {
            if let Some(x) = distance(n, m) {
                let e = pooled
                    .entry((n.key.layer, n.key.brick.as_str(), m))
                    .or_insert(0.0);
                *e = e.max(x);
            }
        }
    }
    let absent: HashSet<_> = noise.iter().flat_map(|n| &n.only_in_reference).collect();
    let captured: HashSet<_> = noise
        .iter()
        .flat_map(|n| &n.divergences)
        .filter(|n| n.elementwise.is_some())
        .map(|n| (n.key.layer, n.key.brick.as_str()))
        .collect();
    for d in &mut report.divergences {
        if absent.contains(&d.key) {
            continue; // the noise run lacks the kernel: no band
        }
        let kernel = (d.key.layer, d.key.brick.as_str());
        let measure = if d.elementwise.is_some() && captured.contains(&kernel) {
            NoiseMeasure::Rmse
        } else {
            NoiseMeasure::Summary
        };
        let noise = pooled
            .get(&(kernel.0, kernel.1, measure))
            .copied()
            .unwrap_or(0.0);
        let band = factor * noise;
        let dist = distance(d, measure).unwrap_or(f64::INFINITY);
        let within = noise > 0.0 && dist <= band;
        d.noise = Some(NoiseBand {
            measure,
            noise,
            band,
            distance: dist,
            within,
        });
        if within && d.verdict == Verdict::Diverged {
            d.verdict = Verdict::WithinNoise;
        }
    }
}
