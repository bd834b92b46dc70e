//! Timing verdicts (spec/timing-verdicts.md): whether a candidate run is faster, slower or
//! within noise of a reference, from per-pass samples. Pure functions over plain numbers: the
//! effect size (a ratio of medians), its percentile bootstrap interval over passes (seeded, so
//! exact and repeatable), the run-to-run spread of noise runs, and the verdict rule with a
//! minimum practical size. Where the samples come from (the pass-brick record, the pass series)
//! is the caller's business.

use serde::Serialize;

use crate::base::splitmix::SplitMix64;
use crate::{profile::RunMeta, Error, Phase, Result};

/// Bootstrap resamples per interval.
pub(crate) const BOOTSTRAP_RESAMPLES: usize = 2000;
/// The most samples of one run a bootstrap resamples: a larger run is resampled through
/// [`bootstrap_subsample`] (spec/timing-verdicts.md "What the bootstrap costs").
pub(crate) const BOOTSTRAP_MAX_SAMPLES: usize = 4096;
/// Fewest samples (passes) either run needs for a verdict.
pub(crate) const MIN_PASSES: usize = 5;
/// The default minimum practical size: 3 %.
pub(crate) const DEFAULT_MIN_EFFECT: f64 = 0.03;
/// The default minimum share of a phase's time a brick needs to be judged: 1 %.
pub(crate) const DEFAULT_MIN_SHARE: f64 = 0.01;
/// The default factor on the noise runs' spread.
pub(crate) const DEFAULT_TIMING_NOISE_FACTOR: f64 = 3.0;
/// The base seed of every bootstrap ("brickpro").
const SEED: u64 = 0x6272_6963_6b70_726f;

/// Which way is slower for a quantity: a time (higher is slower) or a throughput (lower is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Direction {
    /// A time: a ratio above 1 is slower.
    HigherIsSlower,
    /// A throughput: a ratio below 1 is slower.
    LowerIsSlower,
}

/// How verdicts are made: the minimum practical size, the factor on the noise spread and the
/// bootstrap's resamples. Built only through [`VerdictSettings::new`] (or `default`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct VerdictSettings {
    min_effect: f64,
    noise_factor: f64,
    resamples: usize,
}

impl Default for VerdictSettings {
    fn default() -> Self {
        VerdictSettings {
            min_effect: DEFAULT_MIN_EFFECT,
            noise_factor: DEFAULT_TIMING_NOISE_FACTOR,
            resamples: BOOTSTRAP_RESAMPLES,
        }
    }
}

impl VerdictSettings {
    /// `min_effect` as a fraction (0.03 is 3 %), finite and in [0, 10); `noise_factor` finite
    /// and at least 0; `resamples` from 100 to 100,000.
    pub(crate) fn new(min_effect: f64, noise_factor: f64, resamples: usize) -> Result<Self> {
        if !(min_effect.is_finite() && (0.0..10.0).contains(&min_effect)) {
            return Err(Error::invalid_value(
                "minimum effect",
                min_effect,
                "a fraction from 0 to below 10 (0.03 is 3 %)",
            ));
        }
        if !(noise_factor.is_finite() && noise_factor >= 0.0) {
            return Err(Error::invalid_value(
                "timing noise factor",
                noise_factor,
                "a finite number, at least 0",
            ));
        }
        if !(100..=100_000).contains(&resamples) {
            return Err(Error::invalid_value(
                "bootstrap resamples",
                resamples,
                "from 100 to 100000",
            ));
        }
        Ok(VerdictSettings {
            min_effect,
            noise_factor,
            resamples,
        })
    }

    /// The minimum practical size, a fraction.
    pub(crate) fn min_effect(&self) -> f64 {
        self.min_effect
    }

    /// The factor on the noise runs' spread.
    pub(crate) fn noise_factor(&self) -> f64 {
        self.noise_factor
    }
}

/// The verdict on one quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimingVerdict {
    /// Faster beyond the interval, the noise band and the minimum practical size.
    Faster,
    /// Slower beyond all three.
    Slower,
    /// Not shown to differ.
    WithinNoise,
}

/// Why no verdict is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Withheld {
    /// Fewer than `MIN_PASSES` samples in either run.
    TooFewPasses,
    /// The reference's median is 0 (or a sample is not a finite number ≥ 0).
    NoReferenceTime,
    /// The runs come from different hosts.
    DifferentMachines,
    /// The runs used different timelines or sync modes.
    DifferentTimelines,
    /// A run has no per-pass record of its bricks (an older file).
    NoPassRecord,
    /// The brick takes under the minimum share of its phase's time in the reference: too
    /// small to judge (its per-pass time is near the clock's granularity).
    BelowShare,
}

/// A 95 % interval of a ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Lower bound (the 2.5th percentile of the resampled ratios).
    pub lo: f64,
    /// Upper bound (the 97.5th percentile).
    pub hi: f64,
}

/// A verdict with what it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Judgement {
    /// `median(candidate) / median(reference)`.
    pub ratio: f64,
    /// Its bootstrap interval over passes.
    pub interval: Interval,
    /// The noise band, in `|ln ratio|` (factor × spread); `None` without noise runs: the
    /// verdict rests on within-run variation only.
    pub band: Option<f64>,
    /// The verdict.
    pub verdict: TimingVerdict,
}

impl Judgement {
    /// How much slower, as a fraction (0.08 is 8 % slower; negative when faster), in the
    /// quantity's own sense: for a throughput, `1 / ratio − 1`.
    pub(crate) fn slowdown(&self, direction: Direction) -> f64 {
        match direction {
            Direction::HigherIsSlower => self.ratio - 1.0,
            Direction::LowerIsSlower => 1.0 / self.ratio - 1.0,
        }
    }
}

/// The median of `values` (the mean of the two middle ones for an even count); `None` when
/// empty or when a value is not finite.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    Some(if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    })
}

/// `median(candidate) / median(reference)`; `None` when either is empty, has a value that is
/// not a finite number ≥ 0, or the reference's median is 0.
pub(crate) fn ratio_of_medians(reference: &[f64], candidate: &[f64]) -> Option<f64> {
    if !valid(reference) || !valid(candidate) {
        return None;
    }
    let (a, b) = (median(reference)?, median(candidate)?);
    (a > 0.0).then(|| b / a)
}

fn valid(values: &[f64]) -> bool {
    !values.is_empty() && values.iter().all(|v| v.is_finite() && *v >= 0.0)
}

/// The seed of one row's bootstrap: the base seed mixed with FNV-1a of its phase and name, so
/// a row's interval never depends on which other rows exist.
pub(crate) fn seed_for(phase: Phase, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let phase: &'static str = phase.into();
    for byte in phase.bytes().chain([0u8]).chain(name.bytes()) {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    SEED ^ h
}

/// The median of one resample (with replacement, of the same size) of `sorted`, found by
/// counting draws per index: O(n), no sort. `counts` is scratch of `sorted.len()`.
fn resample_median(sorted: &[f64], rng: &mut SplitMix64, counts: &mut [u32]) -> f64 {
    let n = sorted.len();
    counts.iter_mut().for_each(|c| *c = 0);
    for _ in 0..n {
        counts[rng.below(n)] += 1;
    }
    // The order statistics at 0-based ranks `lo_rank` and `hi_rank` of the resample.
    let (lo_rank, hi_rank) = if n % 2 == 1 {
        (n / 2, n / 2)
    } else {
        (n / 2 - 1, n / 2)
    };
    let (mut lo, mut hi) = (None, None);
    let mut seen = 0usize;
    for (value, &count) in sorted.iter().zip(counts.iter()) {
        seen += count as usize;
        if lo.is_none() && seen > lo_rank {
            lo = Some(*value);
        }
        if seen > hi_rank {
            hi = Some(*value);
            break;
        }
    }
    match (lo, hi) {
        (Some(lo), Some(hi)) => (lo + hi) / 2.0,
        _ => f64::NAN, // unreachable: n draws reach every rank below n
    }
}

/// The percentile bootstrap interval (95 %) of `median(candidate) / median(reference)` over
/// `resamples` resamples, each run (through `bootstrap_subsample` when larger than
/// `BOOTSTRAP_MAX_SAMPLES`) resampled with replacement to its own size, drawn from
/// SplitMix64 seeded with `seed` (reference first, then candidate, per resample). `None`
/// where [`ratio_of_medians`] is `None`.
pub(crate) fn bootstrap_ratio(
    reference: &[f64],
    candidate: &[f64],
    resamples: usize,
    seed: u64,
) -> Option<Interval> {
    ratio_of_medians(reference, candidate)?;
    let sorted = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s
    };
    let (a, b) = (
        bootstrap_subsample(sorted(reference)),
        bootstrap_subsample(sorted(candidate)),
    );
    let mut counts_a = vec![0u32; a.len()];
    let mut counts_b = vec![0u32; b.len()];
    let mut rng = SplitMix64::new(seed);
    let mut ratios: Vec<f64> = Vec::with_capacity(resamples.max(1));
    for _ in 0..resamples.max(1) {
        let ma = resample_median(&a, &mut rng, &mut counts_a);
        let mb = resample_median(&b, &mut rng, &mut counts_b);
        // A resample of a reference with some zero times can have a zero median: its ratio is
        // unbounded, which the sort puts last.
        ratios.push(if ma > 0.0 { mb / ma } else { f64::INFINITY });
    }
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let lo = (n as f64 * 0.025).floor() as usize;
    let hi = ((n as f64 * 0.975).ceil() as usize).clamp(1, n) - 1;
    Some(Interval {
        lo: ratios[lo.min(n - 1)],
        hi: ratios[hi],
    })
}

/// What the bootstrap resamples of one run's `sorted` samples (ascending): all of them up to
/// [`BOOTSTRAP_MAX_SAMPLES`], else `m` = [`BOOTSTRAP_MAX_SAMPLES`] evenly spaced order
/// statistics, those at ranks `⌊(i + ½)·n/m⌋`, so the cost of a resample is bounded whatever
/// the run's size. The subsample has the run's distribution (its quantiles are the run's), so
/// its median is the run's; its interval is that of `m` passes, wider than that of all `n` by
/// about `√(n/m)` (8× at the series limit of 262,144 passes): a verdict is withheld more
/// often, never given on less evidence (spec/timing-verdicts.md "What the bootstrap costs").
pub(crate) fn bootstrap_subsample(sorted: Vec<f64>) -> Vec<f64> {
    let (n, m) = (sorted.len(), BOOTSTRAP_MAX_SAMPLES);
    if n <= m {
        return sorted;
    }
    (0..m).map(|i| sorted[(2 * i + 1) * n / (2 * m)]).collect()
}

/// The run-to-run spread of the reference setup's runs, from the noise runs' ratios (each
/// `median(noise run) / median(reference)`): the range of `ln` over the reference (ratio 1)
/// and every noise run, which is the largest `|ln|` distance between **any two** of those
/// runs (reference against a noise run, and noise run against noise run). `None` without a
/// usable ratio (none finite and > 0).
pub(crate) fn noise_spread(ratios: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|r| r.ln())
        .collect();
    if logs.is_empty() {
        return None;
    }
    let hi = logs.iter().copied().fold(0.0f64, f64::max);
    let lo = logs.iter().copied().fold(0.0f64, f64::min);
    Some(hi - lo)
}

/// The run-to-run spread of one quantity in the reference setup (spec/timing-verdicts.md
/// "Noise bands"): [`noise_spread`] of each usable noise run's ratio to `reference` (a run
/// with fewer than [`MIN_PASSES`] samples, or no ratio, gives none); `None` without a usable
/// noise run (a spread of 0 would read as measured, noiseless).
pub(crate) fn run_spread(reference: &[f64], noise: &[&[f64]]) -> Option<f64> {
    let ratios: Vec<f64> = noise
        .iter()
        .filter(|run| run.len() >= MIN_PASSES)
        .filter_map(|run| ratio_of_medians(reference, run))
        .collect();
    noise_spread(&ratios)
}

/// The verdict on one quantity (spec/timing-verdicts.md "The verdict rule"): `reference` and
/// `candidate` are its per-pass samples, `noise` the per-pass samples of each noise run (of
/// the reference setup; empty: within-run variation only), `direction` which way is slower,
/// `seed` the bootstrap's (see [`seed_for`]). The band rests on this quantity's own spread
/// only; [`judge_with_floor`] adds its phase's.
#[cfg(test)]
pub(crate) fn judge(
    reference: &[f64],
    candidate: &[f64],
    noise: &[&[f64]],
    direction: Direction,
    settings: &VerdictSettings,
    seed: u64,
) -> std::result::Result<Judgement, Withheld> {
    judge_with_floor(reference, candidate, noise, direction, settings, seed, 0.0)
}

/// [`judge`] with `spread_floor`, a floor under the quantity's own run-to-run spread (in
/// `|ln ratio|`; the phase's typical spread, spec/timing-verdicts.md "Noise bands"), used
/// only when there are noise runs: the band is `factor × max(own spread, spread_floor)`.
pub(crate) fn judge_with_floor(
    reference: &[f64],
    candidate: &[f64],
    noise: &[&[f64]],
    direction: Direction,
    settings: &VerdictSettings,
    seed: u64,
    spread_floor: f64,
) -> std::result::Result<Judgement, Withheld> {
    if reference.len() < MIN_PASSES || candidate.len() < MIN_PASSES {
        return Err(Withheld::TooFewPasses);
    }
    let ratio = ratio_of_medians(reference, candidate).ok_or(Withheld::NoReferenceTime)?;
    let interval = bootstrap_ratio(reference, candidate, settings.resamples, seed)
        .ok_or(Withheld::NoReferenceTime)?;
    let floor = if spread_floor.is_finite() {
        spread_floor.max(0.0)
    } else {
        0.0
    };
    let band = run_spread(reference, noise).map(|s| s.max(floor) * settings.noise_factor);
    // In the quantity's own sense: `slow` above 1 is slower.
    let (slow, slow_lo, slow_hi) = match direction {
        Direction::HigherIsSlower => (ratio, interval.lo, interval.hi),
        Direction::LowerIsSlower => (1.0 / ratio, 1.0 / interval.hi, 1.0 / interval.lo),
    };
    let band_ln = band.unwrap_or(0.0);
    let m = 1.0 + settings.min_effect;
    // The whole interval must clear the band (not only the estimate): the band allows for
    // the run-to-run noise, the interval for the within-run noise of this pair's medians.
    let verdict = if slow >= m && slow_lo.ln() > band_ln {
        TimingVerdict::Slower
    } else if slow <= 1.0 / m && -slow_hi.ln() > band_ln {
        TimingVerdict::Faster
    } else {
        TimingVerdict::WithinNoise
    };
    Ok(Judgement {
        ratio,
        interval,
        band,
        verdict,
    })
}

/// Whether two runs' timings may be compared (spec/timing-verdicts.md "Different machines"):
/// `Some(reason)` when their hosts, or their timelines or sync modes, differ, unless
/// `across_machines`.
pub(crate) fn comparable(a: &RunMeta, b: &RunMeta, across_machines: bool) -> Option<Withheld> {
    if across_machines {
        return None;
    }
    if a.host != b.host {
        Some(Withheld::DifferentMachines)
    } else if a.timeline != b.timeline || a.sync_mode != b.sync_mode {
        Some(Withheld::DifferentTimelines)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    // spec/timing-verdicts.md "Effect size and its interval", "Noise bands", "The verdict
    // rule", "Different machines".
    use super::*;
    use crate::{timeline::TimelineKind, SyncMode};

    /// Reference-like samples: 200 passes around 1000 ns with a fixed, uneven wobble.
    fn wobbly(n: usize, scale: f64) -> Vec<f64> {
        (0..n)
            .map(|i| scale * (1000.0 + ((i * 37) % 23) as f64 * 3.0 - ((i * 11) % 7) as f64 * 5.0))
            .collect()
    }

    /// The bootstrap the slow way: draw the same indices, sort each resample, take its median.
    fn naive_bootstrap(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> Interval {
        let mut rng = SplitMix64::new(seed);
        let (mut sa, mut sb) = (a.to_vec(), b.to_vec());
        sa.sort_by(f64::total_cmp);
        sb.sort_by(f64::total_cmp);
        let draw = |s: &[f64], rng: &mut SplitMix64| {
            let r: Vec<f64> = (0..s.len()).map(|_| s[rng.below(s.len())]).collect();
            median(&r).unwrap()
        };
        let mut ratios: Vec<f64> = (0..resamples)
            .map(|_| {
                let ma = draw(&sa, &mut rng);
                let mb = draw(&sb, &mut rng);
                mb / ma
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        let lo = (resamples as f64 * 0.025).floor() as usize;
        let hi = (resamples as f64 * 0.975).ceil() as usize - 1;
        Interval {
            lo: ratios[lo],
            hi: ratios[hi],
        }
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
        assert_eq!(ratio_of_medians(&[0.0, 0.0], &[1.0]), None);
        assert_eq!(ratio_of_medians(&[2.0, 2.0], &[3.0]), Some(1.5));
    }

    #[test]
    fn bootstrap_on_fixed_data_matches_the_slow_bootstrap_exactly() {
        // Odd and even sizes, so both median branches of the counting resample are checked.
        for (na, nb) in [(41, 40), (40, 41), (200, 201)] {
            let (a, b) = (wobbly(na, 1.0), wobbly(nb, 1.05));
            let seed = seed_for(Phase::Decode, "Matmul");
            let fast = bootstrap_ratio(&a, &b, 500, seed).unwrap();
            assert_eq!(fast, naive_bootstrap(&a, &b, 500, seed), "{na} {nb}");
            // The same inputs and seed give the same interval; it holds the point estimate.
            assert_eq!(fast, bootstrap_ratio(&a, &b, 500, seed).unwrap());
            let r = ratio_of_medians(&a, &b).unwrap();
            assert!(fast.lo <= r && r <= fast.hi, "{fast:?} {r}");
            assert!(
                fast.lo < fast.hi,
                "wobbly data give a real interval: {fast:?}"
            );
        }
    }

    #[test]
    fn constant_samples_give_a_point_interval() {
        let a = vec![1000.0; 9];
        let b = vec![1100.0; 9];
        let i = bootstrap_ratio(&a, &b, 200, 7).unwrap();
        assert_eq!((i.lo, i.hi), (1.1, 1.1));
    }

    #[test]
    fn seeds_differ_by_phase_and_name() {
        let s = seed_for(Phase::Decode, "Matmul");
        assert_ne!(s, seed_for(Phase::Prefill, "Matmul"));
        assert_ne!(s, seed_for(Phase::Decode, "Softmax"));
        // Phase and name are separated: ("decode", "x") is not ("decodex", "").
        assert_ne!(
            seed_for(Phase::Decode, "x"),
            seed_for(Phase::Unspecified, "decodex")
        );
    }

    #[test]
    fn identical_inputs_are_never_flagged() {
        let settings = VerdictSettings::default();
        for n in [5, 6, 50, 301] {
            let a = wobbly(n, 1.0);
            for noise in [vec![], vec![a.as_slice()]] {
                let j = judge(&a, &a, &noise, Direction::HigherIsSlower, &settings, 1).unwrap();
                assert_eq!(j.ratio, 1.0);
                assert_eq!(j.verdict, TimingVerdict::WithinNoise, "n {n}");
            }
        }
        // With no minimum size either: the ratio is exactly 1, never beyond anything.
        let strict = VerdictSettings::new(0.0, 0.0, 500).unwrap();
        let a = wobbly(100, 1.0);
        let j = judge(&a, &a, &[], Direction::LowerIsSlower, &strict, 3).unwrap();
        assert_eq!(j.verdict, TimingVerdict::WithinNoise);
    }

    #[test]
    fn a_clear_shift_is_detected_both_ways() {
        let settings = VerdictSettings::default();
        let a = wobbly(100, 1.0);
        let slower = wobbly(100, 1.10);
        let j = judge(&a, &slower, &[], Direction::HigherIsSlower, &settings, 5).unwrap();
        assert_eq!(j.verdict, TimingVerdict::Slower, "{j:?}");
        assert!(j.interval.lo > 1.0 && j.band.is_none());
        assert!((j.slowdown(Direction::HigherIsSlower) - 0.10).abs() < 1e-9);
        let j = judge(&slower, &a, &[], Direction::HigherIsSlower, &settings, 5).unwrap();
        assert_eq!(j.verdict, TimingVerdict::Faster);
        // A throughput 10 % lower is slower.
        let j = judge(&slower, &a, &[], Direction::LowerIsSlower, &settings, 5).unwrap();
        assert_eq!(j.verdict, TimingVerdict::Slower);
    }

    #[test]
    fn below_the_minimum_practical_size_is_within_noise() {
        let a = wobbly(100, 1.0);
        let b = wobbly(100, 1.02);
        let default = VerdictSettings::default();
        let j = judge(&a, &b, &[], Direction::HigherIsSlower, &default, 9).unwrap();
        assert!(j.interval.lo > 1.0, "certain, yet small: {j:?}");
        assert_eq!(j.verdict, TimingVerdict::WithinNoise);
        let one_pct = VerdictSettings::new(0.01, 2.0, 2000).unwrap();
        let j = judge(&a, &b, &[], Direction::HigherIsSlower, &one_pct, 9).unwrap();
        assert_eq!(j.verdict, TimingVerdict::Slower);
    }

    #[test]
    fn a_noise_band_absorbs_a_shift_inside_it() {
        let settings = VerdictSettings::default();
        let a = wobbly(100, 1.0);
        let b = wobbly(100, 1.05);
        // A noise run 3 % off: band 3 × ln 1.03 ≈ 0.089 > ln 1.05 ≈ 0.049.
        let noisy = wobbly(100, 1.03);
        let j = judge(&a, &b, &[&noisy], Direction::HigherIsSlower, &settings, 2).unwrap();
        assert_eq!(j.verdict, TimingVerdict::WithinNoise);
        assert!((j.band.unwrap() - settings.noise_factor() * 1.03f64.ln()).abs() < 1e-12);
        // A quiet noise run (1 % off): 5 % is beyond its band.
        let quiet = wobbly(100, 1.01);
        let j = judge(&a, &b, &[&quiet], Direction::HigherIsSlower, &settings, 2).unwrap();
        assert_eq!(j.verdict, TimingVerdict::Slower);
    }

    // spec/timing-verdicts.md "Noise bands": noise runs too short to use give no band (the
    // verdict rests on within-run variation), never a measured-looking band of 0.
    #[test]
    fn unusable_noise_runs_give_no_spread() {
        let reference = [10.0; 8];
        let short = [11.0, 12.0];
        assert_eq!(run_spread(&reference, &[]), None);
        assert_eq!(run_spread(&reference, &[&short]), None);
        let usable = [11.0; 8];
        let spread = run_spread(&reference, &[&short, &usable]).unwrap();
        assert!((spread - 1.1f64.ln()).abs() < 1e-12, "{spread}");
    }

    #[test]
    fn the_spread_is_the_largest_distance_between_any_two_runs() {
        // spec/timing-verdicts.md "Noise bands": the reference (ratio 1) and noise runs 1 %
        // slower, 3 % faster and 2 % slower: reference-to-run distances are at most ln 1.03,
        // but two noise runs are ln(1.02 × 1.03) apart, and that is the spread.
        let spread = noise_spread(&[1.01, 1.0 / 1.03, 1.02]).unwrap();
        assert!((spread - (1.02f64 * 1.03).ln()).abs() < 1e-12, "{spread}");
        // Both noise runs on the same side of the reference: the reference is an end.
        let spread = noise_spread(&[1.02, 1.01]).unwrap();
        assert!((spread - 1.02f64.ln()).abs() < 1e-12);
        assert_eq!(noise_spread(&[f64::NAN, 0.0]), None);
        // Through judge: noise runs 1 % slower and 1.5 % faster than the reference give a
        // band of 3 × ln(1.01 × 1.015) ≈ 7.4 %, which absorbs a 6 % change.
        let settings = VerdictSettings::default();
        let a = wobbly(100, 1.0);
        let (n1, n2) = (wobbly(100, 1.01), wobbly(100, 1.0 / 1.015));
        let b = wobbly(100, 1.06);
        let j = judge(&a, &b, &[&n1, &n2], Direction::HigherIsSlower, &settings, 4).unwrap();
        let expected = settings.noise_factor() * (1.01f64 * 1.015).ln();
        assert!((j.band.unwrap() - expected).abs() < 1e-9, "{j:?}");
        assert_eq!(j.verdict, TimingVerdict::WithinNoise);
    }

    #[test]
    fn the_whole_interval_must_clear_the_band() {
        // spec/timing-verdicts.md "The verdict rule": an estimate beyond the band whose
        // interval reaches into it is within noise.
        let settings = VerdictSettings::new(0.03, 1.0, 2000).unwrap();
        let a = wobbly(100, 1.0);
        let b = wobbly(100, 1.05);
        let free = judge(&a, &b, &[], Direction::HigherIsSlower, &settings, 6).unwrap();
        let (lo, r) = (free.interval.lo, free.ratio);
        assert!(lo < r, "{free:?}");
        // A noise run whose ratio puts the band between the interval's low end and the
        // estimate.
        let band = (lo.ln() + r.ln()) / 2.0;
        let noise = wobbly(100, band.exp());
        let j = judge(&a, &b, &[&noise], Direction::HigherIsSlower, &settings, 6).unwrap();
        assert!(
            r.ln() > j.band.unwrap() && lo.ln() < j.band.unwrap(),
            "{j:?}"
        );
        assert_eq!(j.verdict, TimingVerdict::WithinNoise);
        // And for a faster candidate, the interval's high end.
        let free = judge(&b, &a, &[], Direction::HigherIsSlower, &settings, 6).unwrap();
        let (hi, r) = (free.interval.hi, free.ratio);
        assert!(r < hi && hi < 1.0, "{free:?}");
        let band = -(hi.ln() + r.ln()) / 2.0;
        let noise = wobbly(100, 1.05 * (-band).exp());
        let j = judge(&b, &a, &[&noise], Direction::HigherIsSlower, &settings, 6).unwrap();
        assert!(
            -r.ln() > j.band.unwrap() && -hi.ln() < j.band.unwrap(),
            "{j:?}"
        );
        assert_eq!(j.verdict, TimingVerdict::WithinNoise);
    }

    #[test]
    fn a_spread_floor_widens_a_band_that_chance_made_narrow() {
        // spec/timing-verdicts.md "Noise bands": a noise run identical to the reference gives
        // the quantity a spread of 0; the phase's floor (2 %) still sets a band of f × 2 %.
        let settings = VerdictSettings::default();
        let a = wobbly(100, 1.0);
        let b = wobbly(100, 1.05);
        let j = judge(&a, &b, &[&a], Direction::HigherIsSlower, &settings, 8).unwrap();
        assert_eq!((j.band, j.verdict), (Some(0.0), TimingVerdict::Slower));
        let floor = 1.02f64.ln();
        let j = judge_with_floor(
            &a,
            &b,
            &[&a],
            Direction::HigherIsSlower,
            &settings,
            8,
            floor,
        )
        .unwrap();
        let expected = settings.noise_factor() * floor;
        assert!((j.band.unwrap() - expected).abs() < 1e-12, "{j:?}");
        assert_eq!(j.verdict, TimingVerdict::WithinNoise);
        // Without noise runs there is no band, floor or not.
        let j =
            judge_with_floor(&a, &b, &[], Direction::HigherIsSlower, &settings, 8, floor).unwrap();
        assert_eq!((j.band, j.verdict), (None, TimingVerdict::Slower));
    }

    #[test]
    fn too_few_passes_or_no_reference_time_withhold() {
        let settings = VerdictSettings::default();
        let four = vec![1.0; 4];
        let five = vec![1.0; 5];
        let err = judge(&four, &five, &[], Direction::HigherIsSlower, &settings, 0);
        assert_eq!(err, Err(Withheld::TooFewPasses));
        let zeros = vec![0.0; 5];
        let err = judge(&zeros, &five, &[], Direction::HigherIsSlower, &settings, 0);
        assert_eq!(err, Err(Withheld::NoReferenceTime));
    }

    #[test]
    fn settings_are_validated() {
        assert!(VerdictSettings::new(-0.01, 2.0, 2000).is_err());
        assert!(VerdictSettings::new(f64::NAN, 2.0, 2000).is_err());
        assert!(VerdictSettings::new(0.03, -1.0, 2000).is_err());
        assert!(VerdictSettings::new(0.03, 2.0, 10).is_err());
        let s = VerdictSettings::new(0.05, 3.0, 1000).unwrap();
        assert_eq!((s.min_effect(), s.noise_factor()), (0.05, 3.0));
    }

    #[test]
    fn different_machines_or_timelines_withhold() {
        let a = RunMeta::new(TimelineKind::Sim, 2);
        let mut b = a.clone();
        assert_eq!(comparable(&a, &b, false), None);
        b.host = format!("{}-other", a.host);
        assert_eq!(comparable(&a, &b, false), Some(Withheld::DifferentMachines));
        assert_eq!(comparable(&a, &b, true), None);
        let mut c = a.clone();
        c.timeline = TimelineKind::Cpu;
        assert_eq!(
            comparable(&a, &c, false),
            Some(Withheld::DifferentTimelines)
        );
        let mut d = a.clone();
        d.sync_mode = if a.sync_mode == SyncMode::None {
            SyncMode::Deferred
        } else {
            SyncMode::None
        };
        assert_eq!(
            comparable(&a, &d, false),
            Some(Withheld::DifferentTimelines)
        );
    }

    // spec/timing-verdicts.md "What the bootstrap costs": a run over BOOTSTRAP_MAX_SAMPLES is
    // resampled through its evenly spaced order statistics (two runs at the series limit took
    // `diff` 14.7 s, 94 s with per-brick samples), and the interval still finds a clear shift.
    #[test]
    fn a_large_run_is_bootstrapped_through_a_bounded_subsample() {
        let n = 8 * BOOTSTRAP_MAX_SAMPLES;
        let mut rng = SplitMix64::new(3);
        let mut draw = |scale: f64| -> Vec<f64> {
            (0..n)
                .map(|_| scale * (1000.0 + rng.below(1_000_000) as f64 / 10_000.0))
                .collect()
        };
        let (a, b) = (draw(1.0), draw(1.05));
        let thin = |v: &[f64]| {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            bootstrap_subsample(s)
        };
        let (ta, tb) = (thin(&a), thin(&b));
        assert_eq!(ta.len(), BOOTSTRAP_MAX_SAMPLES);
        let rel = |x: f64, y: f64| (x / y - 1.0).abs();
        assert!(rel(median(&ta).unwrap(), median(&a).unwrap()) < 1e-3);
        let full = bootstrap_ratio(&a, &b, 200, 7).unwrap();
        assert_eq!(full, bootstrap_ratio(&ta, &tb, 200, 7).unwrap());
        let ratio = ratio_of_medians(&a, &b).unwrap();
        assert!(
            full.lo > 1.0 && full.lo <= ratio && ratio <= full.hi,
            "{full:?} {ratio}"
        );
        let small = wobbly(BOOTSTRAP_MAX_SAMPLES, 1.0);
        assert_eq!(
            thin(&small).len(),
            small.len(),
            "a run within the bound is kept whole"
        );
    }
}
