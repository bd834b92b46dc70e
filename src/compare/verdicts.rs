//! The timing verdicts of a comparison (spec/timing-verdicts.md): from a reference, a
//! candidate and optional noise runs of the reference setup, one verdict per (phase, brick)
//! from the pass-brick record, and for TTFT, TPOT and the prefill and decode throughputs from
//! the pass series, as plain data ([`TimingVerdicts`]) that the text writer and JSON print and
//! gates read.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;

use super::cells::{
    cell_times, find_cell, judge_cell, multiplicity_factor, relative_ratios, CellTime,
    MIN_RELATIVE_CELLS,
};
use super::relative::{aligned_times, relative_samples, scales_of, MIN_RELATIVE_BRICKS};
use super::timing_verdict::{
    comparable, judge_with_floor, median, noise_spread, run_spread, seed_for, Direction, Judgement,
    TimingVerdict, VerdictSettings, Withheld, BOOTSTRAP_RESAMPLES, DEFAULT_MIN_SHARE, MIN_PASSES,
};
use crate::figures::latency::latency;
use crate::{stats::PassSeries, Phase, Profile, Result};

/// What a verdict is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// A brick's self time per pass (summed over its calls and layers).
    Brick,
    /// One layer's calls of a brick: their trimmed mean per call over the phase's passes
    /// (spec/timing-verdicts.md "Cells: which layer").
    Cell,
    /// Time to first token, per prompt.
    Ttft,
    /// Time per output token, per decode pass.
    Tpot,
    /// Prompt tokens per second, per prefill pass.
    PrefillThroughput,
    /// Generated tokens per second, per decode pass.
    DecodeThroughput,
}

impl Quantity {
    /// Which way is slower.
    pub(crate) fn direction(self) -> Direction {
        match self {
            Quantity::PrefillThroughput | Quantity::DecodeThroughput => Direction::LowerIsSlower,
            _ => Direction::HigherIsSlower,
        }
    }
}

/// One verdict: a (phase, brick), or a latency or throughput of its phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictRow {
    /// The phase of the passes compared (TTFT and prefill throughput: prefill; TPOT and
    /// decode throughput: decode).
    pub phase: Phase,
    /// What is judged.
    pub quantity: Quantity,
    /// The brick's name, or `TTFT`, `TPOT`, `prefill tok/s`, `decode tok/s`.
    pub name: String,
    /// The layer of a [`Quantity::Cell`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<usize>,
    /// Judged relative to the run (a brick against its pass's pace, a cell against the other
    /// cells; spec/timing-verdicts.md "Relative verdicts"), not in isolation.
    pub relative: bool,
    /// Samples in the reference and in the candidate.
    pub samples: (usize, usize),
    /// The verdict and what it rests on, when one is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judgement: Option<Judgement>,
    /// Why none is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<Withheld>,
    /// The smallest change asked about, a fraction: the minimum practical size, or the
    /// smallest gate covering the row when larger ([`crate::compare::DiffOptions::asked`]).
    pub asked: f64,
    /// Judged within noise, but its noise band is wider than the change asked about: the
    /// verdict judged nothing (spec/timing-verdicts.md "Cannot judge").
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cannot_judge: bool,
}

impl VerdictRow {
    /// The row's name with its layer: `UpProjection`, `UpProjection layer 1`.
    pub fn label(&self) -> String {
        match self.layer {
            Some(l) => format!("{} layer {l}", self.name),
            None => self.name.clone(),
        }
    }

    /// Ask about changes of at least `effect` (a fraction): sets [`Self::asked`] and
    /// [`Self::cannot_judge`] (within noise with a band wider than `ln(1 + effect)`).
    pub(crate) fn ask(&mut self, effect: f64) {
        self.asked = effect;
        self.cannot_judge = self.judgement.is_some_and(|j| {
            j.verdict == TimingVerdict::WithinNoise
                && j.band.is_some_and(|b| b > (1.0 + effect).ln())
        });
    }

    /// Whether the row was judged and its verdict can say something about the change asked
    /// for: judged, and not [`Self::cannot_judge`].
    pub fn judged(&self) -> bool {
        self.judgement.is_some() && !self.cannot_judge
    }

    /// `cannot judge: noise ±92 % exceeds the 5 % asked for`, when [`Self::cannot_judge`].
    pub fn cannot_judge_text(&self) -> Option<String> {
        let band = self.judgement.and_then(|j| j.band)?;
        self.cannot_judge.then(|| {
            format!(
                "cannot judge: noise ±{} % exceeds the {} % asked for",
                pct_text(band.exp_m1() * 100.0),
                pct_text(self.asked * 100.0)
            )
        })
    }

    /// The verdict, when one is given (`judgement`'s).
    pub(crate) fn verdict(&self) -> Option<TimingVerdict> {
        self.judgement.map(|j| j.verdict)
    }

    /// How much slower, as a fraction (negative when faster), when judged.
    pub fn slowdown(&self) -> Option<f64> {
        self.judgement
            .map(|j| j.slowdown(self.quantity.direction()))
    }
}

/// Every timing verdict of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingVerdicts {
    /// Noise runs given (0: the verdicts rest on within-run variation only).
    pub noise_runs: usize,
    /// The minimum practical size, a fraction.
    pub min_effect: f64,
    /// The factor on the noise runs' spread.
    pub noise_factor: f64,
    /// Why every verdict is withheld (different machines or timelines), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<Withheld>,
    /// Phases whose passes differ in shape between the runs (another workload: the per-pass
    /// times then also measure it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workloads_differ: Vec<Phase>,
    /// The rows: per phase in phase order, bricks by name, then the latencies.
    pub rows: Vec<VerdictRow>,
}

/// What `timing_verdicts` needs besides the runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VerdictOptions {
    /// The minimum practical size: the smallest change judged faster or slower, as a fraction
    /// (0.03 is 3 %, the default), finite and from 0 to below 10.
    pub min_effect: f64,
    /// The factor on the noise runs' spread (default 3), finite and at least 0.
    pub noise_factor: f64,
    /// Judge runs from different machines or timelines anyway.
    pub across_machines: bool,
    /// The smallest share of its phase's time (median brick time per pass, in the reference)
    /// a brick needs to be judged, a fraction; default `DEFAULT_MIN_SHARE` (1 %).
    pub min_share: f64,
    /// Judge each brick and cell in isolation, as measured (`--timing-absolute`), not against
    /// the run (spec/timing-verdicts.md "Relative verdicts").
    pub absolute: bool,
}

impl Default for VerdictOptions {
    fn default() -> Self {
        let settings = VerdictSettings::default();
        VerdictOptions {
            min_effect: settings.min_effect(),
            noise_factor: settings.noise_factor(),
            across_machines: false,
            min_share: DEFAULT_MIN_SHARE,
            absolute: false,
        }
    }
}

impl VerdictOptions {
    /// The statistics' settings: an [`crate::Error::InvalidValue`] when the minimum practical
    /// size or the noise factor is out of range (`brickprof diff` checks them before any file
    /// is read).
    pub(crate) fn settings(&self) -> Result<VerdictSettings> {
        VerdictSettings::new(self.min_effect, self.noise_factor, BOOTSTRAP_RESAMPLES)
    }
}

/// The timing verdicts of `candidate` against `reference`, with `noise` runs of the reference
/// setup (spec/timing-verdicts.md). Rows are made for every phase and brick both runs have
/// passes of; a brick in one run only has no row (the timing table marks it new or gone).
pub(crate) fn timing_verdicts(
    reference: &Profile,
    candidate: &Profile,
    noise: &[&Profile],
    options: &VerdictOptions,
) -> TimingVerdicts {
    // `diff_files_with` refused settings out of range before any file was read.
    let settings = options.settings().unwrap_or_default();
    let withheld = comparable(&reference.meta, &candidate.meta, options.across_machines);
    // Noise runs from elsewhere than the reference give no band (`brickprof diff` refuses
    // them first, naming the file: spec/timing-verdicts.md "Noise runs must be of the
    // reference's model").
    let noise_profiles: Vec<&Profile> = noise
        .iter()
        .copied()
        .filter(|n| comparable(&reference.meta, &n.meta, options.across_machines).is_none())
        .filter(|n| n.pass_series.is_some())
        .collect();
    let noise: Vec<&PassSeries> = noise_profiles
        .iter()
        .filter_map(|n| n.pass_series.as_ref())
        .collect();
    let mut rows = Vec::new();
    let mut workloads_differ = Vec::new();
    if let (Some(a), Some(b)) = (&reference.pass_series, &candidate.pass_series) {
        let phases = |s: &PassSeries| s.records().map(|r| r.phase()).collect::<BTreeSet<_>>();
        let (pa, pb) = (phases(a), phases(b));
        let names = |s: &PassSeries| {
            s.runs()
                .iter()
                .flat_map(|r| r.brick_names().map(str::to_string))
                .collect::<BTreeSet<String>>()
        };
        let (na, nb) = (names(a), names(b));
        // Each phase's typical run-to-run spread of its judged bricks (the bands' floor).
        let mut floors: Vec<(Phase, f64)> = Vec::new();
        for phase in pa.intersection(&pb).copied() {
            if shapes(a, phase) != shapes(b, phase) {
                workloads_differ.push(phase);
            }
            let mut pending = pending_bricks(
                (a, b),
                &noise,
                (&na, &nb),
                phase,
                (options, withheld),
                &mut rows,
            );
            let relative = !options.absolute && pending.len() >= MIN_RELATIVE_BRICKS;
            if relative {
                relate(&mut pending, a, b, &noise, phase);
            }
            let floor = phase_spread(pending.iter().map(|p| (p.reference.as_slice(), &p.noise)));
            floors.push((phase, floor));
            let basis = Basis {
                settings: &settings,
                withheld,
                floor,
            };
            judge_pending(pending, phase, relative, basis, &mut rows);
            if withheld.is_none() && !noise.is_empty() {
                let bricks: Vec<String> = rows
                    .iter()
                    .filter(|r| r.phase == phase && r.judgement.is_some())
                    .map(|r| r.name.clone())
                    .collect();
                rows.extend(cell_rows(
                    [reference, candidate],
                    &noise_profiles,
                    phase,
                    &bricks,
                    options,
                ));
            }
        }
        rows.extend(latency_rows(a, b, &noise, &settings, withheld, &floors));
    }
    TimingVerdicts {
        noise_runs: noise.len(),
        min_effect: settings.min_effect(),
        noise_factor: settings.noise_factor(),
        withheld,
        workloads_differ,
        rows,
    }
}

/// The rows of `phase`'s bricks in either run (`names`): withheld ones complete, the others
/// pending judgement, with their samples (their spreads are known before any is judged, so
/// the phase's typical spread can floor each band).
fn pending_bricks(
    (a, b): (&PassSeries, &PassSeries),
    noise: &[&PassSeries],
    (na, nb): (&BTreeSet<String>, &BTreeSet<String>),
    phase: Phase,
    (options, withheld): (&VerdictOptions, Option<Withheld>),
    rows: &mut Vec<VerdictRow>,
) -> Vec<Pending> {
    // `diff_files_with` refused settings out of range before any file was read.
    let settings = options.settings().unwrap_or_default();
    let mut pending: Vec<Pending> = Vec::new();
    // The phase's brick time per pass (median) in the reference: the share floor's base.
    let phase_ns = median(
        &a.records()
            .filter(|r| r.phase() == phase)
            .map(|r| r.device_ns() as f64)
            .collect::<Vec<_>>(),
    )
    .unwrap_or(0.0);
    // Bricks to judge, with their samples. Their spreads are
    // known before any is judged, so the phase's typical spread can floor each band.
    for name in na.union(nb) {
        let ours = a.brick_samples(Some(phase), name);
        let theirs = b.brick_samples(Some(phase), name);
        let row = |samples, judgement, withheld| VerdictRow {
            phase,
            quantity: Quantity::Brick,
            name: name.clone(),
            layer: None,
            relative: false,
            samples,
            judgement,
            withheld,
            asked: settings.min_effect(),
            cannot_judge: false,
        };
        let (Some(x), Some(y)) = (ours, theirs) else {
            rows.push(row((0, 0), None, Some(Withheld::NoPassRecord)));
            continue;
        };
        if x.is_empty() || y.is_empty() {
            continue; // new or gone in this phase
        }
        let small = median(&floats(&x)).is_some_and(|m| m < options.min_share * phase_ns);
        if small && withheld.is_none() {
            rows.push(row((x.len(), y.len()), None, Some(Withheld::BelowShare)));
            continue;
        }
        let noise_samples: Vec<Vec<f64>> = noise
            .iter()
            .filter_map(|n| n.brick_samples(Some(phase), name))
            .map(|s| floats(&s))
            .collect();
        rows.push(row((x.len(), y.len()), None, None));
        pending.push(Pending {
            index: rows.len() - 1,
            name: name.clone(),
            reference: floats(&x),
            candidate: floats(&y),
            noise: noise_samples,
        });
    }
    pending
}

/// Judge each pending row of `phase` (relative samples when `relative`).
fn judge_pending(
    pending: Vec<Pending>,
    phase: Phase,
    relative: bool,
    basis: Basis<'_>,
    rows: &mut [VerdictRow],
) {
    for Pending {
        index,
        name: _,
        reference: x,
        candidate: y,
        noise: noise_samples,
    } in pending
    {
        let name = rows[index].name.clone();
        let outcome = judged(
            &x,
            &y,
            &noise_samples,
            Direction::HigherIsSlower,
            seed_for(phase, &name),
            basis,
        );
        let (j, w) = split(outcome);
        rows[index].judgement = j;
        rows[index].withheld = w;
        rows[index].relative = relative;
        rows[index].ask(basis.settings.min_effect());
    }
}

/// The shapes of a series' passes of `phase`, sorted: the workload, whatever the order.
fn shapes(s: &PassSeries, phase: Phase) -> Vec<(u32, u32, u64)> {
    let mut v: Vec<(u32, u32, u64)> = s
        .records()
        .filter(|r| r.phase() == phase)
        .filter_map(|r| r.shape())
        .map(|s| (s.new_tokens(), s.sequences(), s.context_tokens()))
        .collect();
    v.sort_unstable();
    v
}

fn floats(ns: &[u64]) -> Vec<f64> {
    ns.iter().map(|&v| v as f64).collect()
}

fn split(r: Result<Judgement, Withheld>) -> (Option<Judgement>, Option<Withheld>) {
    match r {
        Ok(j) => (Some(j), None),
        Err(w) => (None, Some(w)),
    }
}

/// A brick row waiting for its phase's floor: its index in the rows and its samples.
struct Pending {
    index: usize,
    name: String,
    reference: Vec<f64>,
    candidate: Vec<f64>,
    noise: Vec<Vec<f64>>,
}

/// What every verdict of a comparison rests on besides its samples.
#[derive(Clone, Copy)]
struct Basis<'a> {
    settings: &'a VerdictSettings,
    /// Why the runs are not comparable, if so.
    withheld: Option<Withheld>,
    /// The phase's typical spread ([`phase_spread`]).
    floor: f64,
}

/// [`judge_with_floor`], unless the runs are not comparable.
fn judged(
    a: &[f64],
    b: &[f64],
    noise: &[Vec<f64>],
    direction: Direction,
    seed: u64,
    basis: Basis<'_>,
) -> Result<Judgement, Withheld> {
    if let Some(w) = basis.withheld {
        return Err(w);
    }
    let noise: Vec<&[f64]> = noise.iter().map(Vec::as_slice).collect();
    judge_with_floor(a, b, &noise, direction, basis.settings, seed, basis.floor)
}

/// Replace the pending bricks' samples by their samples relative to each pass's pace
/// (spec/timing-verdicts.md "Relative verdicts"), in the reference, the candidate and each
/// noise run, all scaled by the reference's typical times. A noise run without a pass-brick
/// record gives no samples, as for absolute verdicts.
fn relate(
    pending: &mut [Pending],
    a: &PassSeries,
    b: &PassSeries,
    noise: &[&PassSeries],
    phase: Phase,
) {
    let names: Vec<&str> = pending.iter().map(|p| p.name.as_str()).collect();
    let (Some(ta), Some(tb)) = (
        aligned_times(a, phase, &names),
        aligned_times(b, phase, &names),
    ) else {
        return;
    };
    let scales = scales_of(&ta);
    let ra = relative_samples(&ta, &scales);
    let rb = relative_samples(&tb, &scales);
    let rn: Vec<Vec<Vec<f64>>> = noise
        .iter()
        .filter_map(|n| aligned_times(n, phase, &names))
        .map(|t| relative_samples(&t, &scales))
        .collect();
    for (k, p) in pending.iter_mut().enumerate() {
        p.reference = ra[k].clone();
        p.candidate = rb[k].clone();
        p.noise = rn.iter().map(|n| n[k].clone()).collect();
    }
}

/// The (layer, brick) cells of `bricks` in `phase` (spec/timing-verdicts.md "Cells: which
/// layer"), judged when the model has at least two layers and there are noise runs: each
/// cell's ratio relative to the other cells', against a band from the noise runs' same ratios
/// widened for the number of cells compared.
fn cell_rows(
    [reference, candidate]: [&Profile; 2],
    noise: &[&Profile],
    phase: Phase,
    bricks: &[String],
    options: &VerdictOptions,
) -> Vec<VerdictRow> {
    let names: Vec<&str> = bricks.iter().map(String::as_str).collect();
    let ours = cell_times(reference, phase, &names);
    let theirs = cell_times(candidate, phase, &names);
    let layers: BTreeSet<usize> = ours.iter().map(|c| c.layer).collect();
    if layers.len() < 2 {
        return Vec::new();
    }
    let cells: Vec<(String, usize)> = ours
        .iter()
        .filter(|c| find_cell(&theirs, &c.name, c.layer).is_some())
        .map(|c| (c.name.clone(), c.layer))
        .collect();
    let relative = !options.absolute;
    let ratios = relative_ratios(&cells, &ours, &theirs, relative);
    let noise_ratios: Vec<Vec<Option<f64>>> = noise
        .iter()
        .map(|n| relative_ratios(&cells, &ours, &cell_times(n, phase, &names), relative))
        .collect();
    let of_cell = |i: usize| -> Vec<f64> { noise_ratios.iter().filter_map(|n| n[i]).collect() };
    let spreads: Vec<Option<f64>> = (0..cells.len())
        .map(|i| ratios[i].and_then(|_| noise_spread(&of_cell(i))))
        .collect();
    let floor = median(&spreads.iter().flatten().copied().collect::<Vec<_>>()).unwrap_or(0.0);
    // A brick's cells are one kernel in each layer and vary alike: the median spread of the
    // brick's cells is a steadier floor for each of them than its own two or three runs.
    let brick_floor = |name: &str| {
        let of_brick: Vec<f64> = cells
            .iter()
            .zip(&spreads)
            .filter(|((n, _), _)| n == name)
            .filter_map(|(_, s)| *s)
            .collect();
        median(&of_brick).unwrap_or(0.0).max(floor)
    };
    let factor = multiplicity_factor(ratios.iter().flatten().count());
    // `diff_files_with` refused settings out of range before any file was read.
    let settings = options.settings().unwrap_or_default();
    cells
        .iter()
        .enumerate()
        .map(|(i, (name, layer))| {
            let calls = |run: &[CellTime]| {
                find_cell(run, name, *layer)
                    .map_or(0, |c| usize::try_from(c.calls).unwrap_or(usize::MAX))
            };
            let judgement =
                ratios[i].map(|r| judge_cell(r, &of_cell(i), brick_floor(name), factor, &settings));
            let mut row = VerdictRow {
                phase,
                quantity: Quantity::Cell,
                name: name.clone(),
                layer: Some(*layer),
                relative: relative && cells.len() >= MIN_RELATIVE_CELLS,
                samples: (calls(&ours), calls(&theirs)),
                withheld: judgement.is_none().then_some(Withheld::NoReferenceTime),
                judgement,
                asked: settings.min_effect(),
                cannot_judge: false,
            };
            row.ask(settings.min_effect());
            row
        })
        .collect()
}

/// The typical run-to-run spread of a phase (spec/timing-verdicts.md "Noise bands"): the
/// median of its judged bricks' own spreads ([`run_spread`]), 0 without noise runs or bricks.
/// Load on the machine moves every brick of a run together, while two or three runs give
/// each brick's own spread by chance anywhere from near 0 to the truth: the phase's median is
/// a steadier estimate of the common part.
fn phase_spread<'a>(bricks: impl Iterator<Item = (&'a [f64], &'a Vec<Vec<f64>>)>) -> f64 {
    let spreads: Vec<f64> = bricks
        .filter(|(x, _)| x.len() >= MIN_PASSES)
        .filter_map(|(x, noise)| {
            let noise: Vec<&[f64]> = noise.iter().map(Vec::as_slice).collect();
            run_spread(x, &noise)
        })
        .collect();
    median(&spreads).unwrap_or(0.0)
}

/// The per-sample values of one latency quantity of a series.
fn latency_samples(s: &PassSeries, q: Quantity) -> Vec<f64> {
    let per_pass_rate = |phase: Phase| -> Vec<f64> {
        s.records()
            .filter(|r| r.phase() == phase && r.wall_ns() > 0)
            .map(|r| {
                let tokens = r.shape().map_or(0, |s| u64::from(s.new_tokens()));
                tokens as f64 * 1e9 / r.wall_ns() as f64
            })
            .collect()
    };
    match q {
        Quantity::Ttft => latency(s).map_or_else(Vec::new, |l| floats(l.ttft.values())),
        Quantity::Tpot => latency(s).map_or_else(Vec::new, |l| floats(l.tpot.values())),
        Quantity::PrefillThroughput => per_pass_rate(Phase::Prefill),
        Quantity::DecodeThroughput => per_pass_rate(Phase::Decode),
        Quantity::Brick | Quantity::Cell => Vec::new(),
    }
}

fn latency_rows(
    a: &PassSeries,
    b: &PassSeries,
    noise: &[&PassSeries],
    settings: &VerdictSettings,
    withheld: Option<Withheld>,
    floors: &[(Phase, f64)],
) -> Vec<VerdictRow> {
    [
        (Quantity::Ttft, Phase::Prefill, "TTFT"),
        (Quantity::PrefillThroughput, Phase::Prefill, "prefill tok/s"),
        (Quantity::Tpot, Phase::Decode, "TPOT"),
        (Quantity::DecodeThroughput, Phase::Decode, "decode tok/s"),
    ]
    .into_iter()
    .filter_map(|(q, phase, name)| {
        let (x, y) = (latency_samples(a, q), latency_samples(b, q));
        if x.is_empty() || y.is_empty() {
            return None;
        }
        let noise: Vec<Vec<f64>> = noise.iter().map(|n| latency_samples(n, q)).collect();
        let floor = floors
            .iter()
            .find(|(p, _)| *p == phase)
            .map_or(0.0, |(_, f)| *f);
        let outcome = judged(
            &x,
            &y,
            &noise,
            q.direction(),
            seed_for(phase, name),
            Basis {
                settings,
                withheld,
                floor,
            },
        );
        let (judgement, withheld) = split(outcome);
        let mut row = VerdictRow {
            phase,
            quantity: q,
            name: name.to_string(),
            layer: None,
            relative: false,
            samples: (x.len(), y.len()),
            judgement,
            withheld,
            asked: settings.min_effect(),
            cannot_judge: false,
        };
        row.ask(settings.min_effect());
        Some(row)
    })
    .collect()
}

/// A percentage in few digits: whole from 10 up (`92`), else one decimal unless whole (`5`,
/// `2.5`).
fn pct_text(pct: f64) -> String {
    if pct >= 10.0 || (pct - pct.round()).abs() < 0.05 {
        format!("{pct:.0}")
    } else {
        format!("{pct:.1}")
    }
}

impl TimingVerdicts {
    /// Ask about the changes gates look for (spec/timing-verdicts.md "Cannot judge"): each
    /// row's [`VerdictRow::asked`] becomes the larger of the minimum practical size and
    /// `gate(row)` (the smallest gate covering it, a fraction; `None`: not gated), and its
    /// [`VerdictRow::cannot_judge`] follows.
    pub(crate) fn ask(&mut self, gate: impl Fn(&VerdictRow) -> Option<f64>) {
        let min = self.min_effect;
        for row in &mut self.rows {
            let effect = gate(row).map_or(min, |g| g.max(min));
            row.ask(effect);
        }
    }

    /// The rows judged within noise whose band is wider than the change asked about.
    pub(crate) fn cannot_judge(&self) -> impl Iterator<Item = &VerdictRow> + '_ {
        self.rows.iter().filter(|r| r.cannot_judge)
    }

    /// The rows judged slower or faster.
    pub(crate) fn changed(&self) -> impl Iterator<Item = &VerdictRow> + '_ {
        self.rows.iter().filter(|r| {
            matches!(
                r.verdict(),
                Some(TimingVerdict::Slower | TimingVerdict::Faster)
            )
        })
    }

    /// The text block ([`TimingVerdicts`]' `Display`).
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let basis = if self.noise_runs == 0 {
            "within-run variation only (no --noise runs)".to_string()
        } else {
            format!(
                "{} noise run(s) × {} and the within-run variation",
                self.noise_runs, self.noise_factor
            )
        };
        let _ = writeln!(
            out,
            "Timing verdicts: ratio of medians per pass, 95 % bootstrap interval; minimum {:.1} %;",
            self.min_effect * 100.0
        );
        let _ = writeln!(out, "  resting on {basis}");
        if self.rows.iter().any(|r| r.relative) {
            let _ = writeln!(
                out,
                "  bricks and (layer, brick) cells judged against the run (relative to the other \
                 bricks' pace)"
            );
        }
        for phase in &self.workloads_differ {
            let _ = writeln!(
                out,
                "  note: the runs' {phase} passes differ in shape (another workload): per-pass \
                 times also measure it"
            );
        }
        if let Some(w) = self.withheld {
            let _ = writeln!(
                out,
                "  withheld: {} (--timing-across-machines judges them anyway)",
                withheld_text(w)
            );
            return out;
        }
        for r in self.changed() {
            let Some(j) = r.judgement else { continue };
            let verdict = match j.verdict {
                TimingVerdict::Slower => "SLOWER",
                _ => "faster",
            };
            let pct = |x: f64| (x - 1.0) * 100.0;
            let band = j.band.map_or(String::new(), |b| {
                format!("  band ±{:.1} %", (b.exp() - 1.0) * 100.0)
            });
            // A cell has no within-run interval (spec/timing-verdicts.md "Cells: which
            // layer").
            let interval = if r.quantity == Quantity::Cell {
                String::new()
            } else {
                format!(" [{:+.1}, {:+.1}]", pct(j.interval.lo), pct(j.interval.hi))
            };
            let _ = writeln!(
                out,
                "  [{}] {:<28} {verdict:<6} {:+6.1} %{interval}{band}",
                r.phase,
                crate::figures::units::clip(&crate::base::printable::printable(&r.label()), 28),
                pct(j.ratio),
            );
        }
        for r in self.cannot_judge().filter(|r| r.quantity != Quantity::Cell) {
            if let Some(why) = r.cannot_judge_text() {
                let _ = writeln!(
                    out,
                    "  [{}] {:<28} {why}",
                    r.phase,
                    crate::figures::units::clip(&crate::base::printable::printable(&r.name), 28),
                );
            }
        }
        let (rows, cells): (Vec<&VerdictRow>, Vec<&VerdictRow>) =
            self.rows.iter().partition(|r| r.quantity != Quantity::Cell);
        let (line, cannot) = summary(&rows);
        let _ = writeln!(out, "  {line}");
        out.push_str(&cannot);
        if !cells.is_empty() {
            let (line, cannot) = summary(&cells);
            let _ = writeln!(out, "  (layer, brick) cells: {line}");
            out.push_str(&cannot);
        } else if self.noise_runs == 0 && self.rows.iter().any(|r| r.relative) {
            let _ = writeln!(
                out,
                "  (layer, brick) cells: not judged without --noise runs"
            );
        }
        out
    }
}

/// The counts of `rows` (changed, within noise, cannot judge, too small, withheld), and the
/// line on the bands that cannot judge, if any.
fn summary(rows: &[&VerdictRow]) -> (String, String) {
    let changed = rows
        .iter()
        .filter(|r| {
            matches!(
                r.verdict(),
                Some(TimingVerdict::Slower | TimingVerdict::Faster)
            )
        })
        .count();
    let within = rows
        .iter()
        .filter(|r| r.verdict() == Some(TimingVerdict::WithinNoise) && !r.cannot_judge)
        .count();
    let unjudged: Vec<&&VerdictRow> = rows.iter().filter(|r| r.cannot_judge).collect();
    let bands = || unjudged.iter().filter_map(|r| r.judgement?.band);
    let cannot = match (
        bands().reduce(f64::min),
        bands().reduce(f64::max),
        unjudged.iter().map(|r| r.asked).reduce(f64::min),
    ) {
        (Some(lo), Some(hi), Some(asked)) => {
            let band = |b: f64| pct_text(b.exp_m1() * 100.0);
            let range = if band(lo) == band(hi) {
                format!("±{} %", band(lo))
            } else {
                format!("±{} % to ±{} %", band(lo), band(hi))
            };
            format!(
                "  cannot judge: noise {range} exceeds the {} % asked for ({} of the rows)\n",
                pct_text(asked * 100.0),
                unjudged.len(),
            )
        }
        _ => String::new(),
    };
    let small = rows
        .iter()
        .filter(|r| r.withheld == Some(Withheld::BelowShare))
        .count();
    let withheld = rows.iter().filter(|r| r.withheld.is_some()).count() - small;
    let line = format!(
        "{changed} changed, {within} within noise, {} cannot judge, {small} too small to judge, \
         {withheld} withheld",
        unjudged.len()
    );
    (line, cannot)
}

/// A withheld reason in words, as [`Withheld`]'s `Display` writes it.
pub(crate) fn withheld_text(w: Withheld) -> &'static str {
    match w {
        Withheld::TooFewPasses => "too few passes",
        Withheld::NoReferenceTime => "no reference time",
        Withheld::DifferentMachines => "the runs come from different machines",
        Withheld::DifferentTimelines => "the runs used different timelines or sync modes",
        Withheld::NoPassRecord => "no per-pass brick record (an older file)",
        Withheld::BelowShare => "under the minimum share of its phase's time",
    }
}

impl std::fmt::Display for TimingVerdicts {
    /// The text block: what the verdicts rest on, each row judged slower or faster (ratio,
    /// interval, band), and how many are within noise or withheld. Lines fit 100 columns;
    /// names are escaped.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::fmt::Display for Withheld {
    /// The reason in words: `the runs come from different machines`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(withheld_text(*self))
    }
}

#[cfg(test)]
mod tests {
    // spec/timing-verdicts.md "Noise bands": the phase's floor is the median of its bricks'
    // own spreads.
    use super::*;

    #[test]
    fn the_phase_spread_is_the_median_of_the_bricks_spreads() {
        let run = |scale: f64| -> Vec<f64> { (0..9).map(|i| scale * (100.0 + i as f64)).collect() };
        let reference = run(1.0);
        // Three bricks whose noise runs are 0 %, 2 % and 10 % off: spreads 0, ln 1.02, ln 1.1.
        let noise: Vec<Vec<Vec<f64>>> = [1.0, 1.02, 1.1].iter().map(|&s| vec![run(s)]).collect();
        let bricks = noise.iter().map(|n| (reference.as_slice(), n));
        assert!((phase_spread(bricks) - 1.02f64.ln()).abs() < 1e-12);
        // Without noise runs, or without a brick with enough passes: no floor.
        let none: Vec<Vec<f64>> = Vec::new();
        assert_eq!(
            phase_spread([(reference.as_slice(), &none)].into_iter()),
            0.0
        );
        let short = vec![run(1.5)];
        assert_eq!(phase_spread([(&reference[..4], &short)].into_iter()), 0.0);
        assert_eq!(phase_spread(std::iter::empty()), 0.0);
    }
}
