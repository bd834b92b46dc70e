//! The noise floor (spec/divergence.md "Noise floor"): a second run of the reference setup
//! gives every kernel its run-to-run distance; a candidate kernel within `factor` times that
//! distance is *within noise*. From summaries alone, and from captures (RMSE) when both
//! comparisons have them.

use serde::{Deserialize, Serialize};

use super::{DivergenceInfo, DivergenceReport, Verdict};

/// Default noise factor: a candidate may stray up to 3x as far as the reference strays from
/// itself (torch._dynamo's `same()` allows 2-3x the reference's own RMSE).
pub const DEFAULT_NOISE_FACTOR: f64 = 3.0;

/// What a noise band measured distances with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoiseMeasure {
    /// RMSE of captured tensors (both comparisons had captures of the kernel).
    Rmse,
    /// The summaries' largest relative difference (mean, rms, min, max).
    Summary,
}

/// One kernel's noise band and where the candidate falls.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NoiseBand {
    /// How distances were measured.
    pub measure: NoiseMeasure,
    /// The reference's run-to-run distance (reference vs noise run); 0 when they were bitwise
    /// equal.
    pub noise: f64,
    /// The band: factor times `noise`.
    pub band: f64,
    /// The candidate's distance from the reference.
    pub distance: f64,
    /// `noise > 0` and `distance <= band`: a kernel that never varies has no band.
    pub within: bool,
}

/// Distance of one comparison, in `measure`.
fn distance(d: &DivergenceInfo, measure: NoiseMeasure) -> f64 {
    match (measure, &d.elementwise) {
        (NoiseMeasure::Rmse, Some(s)) => s.rmse,
        _ => d.relative_difference,
    }
}

/// Judge every differing kernel of `report` (reference vs candidate) against its noise band
/// from `noise` (reference vs a second reference run): a kernel that diverged but lies within
/// `factor` times the reference's own distance becomes [`Verdict::WithinNoise`].
///
/// ```
/// use brickprof::checksum::{ChecksumLog, KernelKey};
/// use brickprof::{apply_noise, compare, Tolerance, Verdict};
/// let key = KernelKey { pass: 0, layer: Some(0), brick: "DownProjection".into(), call: 0 };
/// let log = |v: f32| { let mut l = ChecksumLog::new(); l.record_f32(key.clone(), &[1.0, v]); l };
/// let (reference, reference2, candidate) = (log(2.0), log(2.0001), log(2.0002));
/// let noise = compare(&reference, &reference2, Tolerance::EXACT)?;
/// let mut report = compare(&reference, &candidate, Tolerance::EXACT)?;
/// apply_noise(&mut report, &noise, 3.0);
/// assert_eq!(report.first().unwrap().verdict, Verdict::WithinNoise);
/// assert!(report.is_match());
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn apply_noise(report: &mut DivergenceReport, noise: &DivergenceReport, factor: f64) {
    report.noise_factor = Some(factor);
    let noisy: std::collections::HashMap<_, _> =
        noise.divergences.iter().map(|n| (&n.key, n)).collect();
    let absent: std::collections::HashSet<_> = noise.only_in_reference.iter().collect();
    for d in &mut report.divergences {
        if absent.contains(&d.key) {
            continue; // the noise run lacks the kernel: no band
        }
        let n = noisy.get(&d.key);
        let measure = match n {
            Some(n) if n.elementwise.is_some() && d.elementwise.is_some() => NoiseMeasure::Rmse,
            None if d.elementwise.is_some() => NoiseMeasure::Rmse,
            _ => NoiseMeasure::Summary,
        };
        let noise = n.map_or(0.0, |n| distance(n, measure));
        let band = factor * noise;
        let dist = distance(d, measure);
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
