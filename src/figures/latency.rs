//! Latency as a serving engine reports it, from a profile's pass series: time to first token
//! (TTFT) and time per output token (TPOT) with nearest-rank percentiles, and the prefill and
//! decode throughputs, never one mixed tokens/s. Specified in `spec/profile-format.md`
//! ("Latency: TTFT and TPOT").

use serde::Serialize;

use crate::figures::units::{duration, rate};
use crate::model::phase::Phase;
use crate::profile::Profile;
use crate::stats::pass_series::{PassRun, PassSeries};

/// Latency samples, ns, sorted: the percentiles are nearest-rank, the mean exact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Samples {
    sorted: Vec<u64>,
    sum: u128,
}

impl Samples {
    fn of(mut values: Vec<u64>) -> Samples {
        values.sort_unstable();
        let sum = values.iter().map(|&v| u128::from(v)).sum();
        Samples {
            sorted: values,
            sum,
        }
    }

    /// The samples, smallest first.
    pub fn values(&self) -> &[u64] {
        &self.sorted
    }

    /// How many samples there are.
    pub(crate) fn count(&self) -> usize {
        self.sorted.len()
    }

    /// Whether there is none.
    pub(crate) fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The nearest-rank percentile `pct` (1 to 100): the smallest sample with at least `pct` %
    /// of the samples at or below it, `sorted[ceil(pct·n/100) − 1]`. `None` without samples.
    pub fn percentile_ns(&self, pct: u32) -> Option<u64> {
        let n = self.sorted.len();
        let pct = pct.clamp(1, 100) as usize;
        let rank = (pct * n).div_ceil(100).max(1);
        self.sorted.get(rank - 1).copied()
    }

    /// The mean, ns (`None` without samples).
    pub(crate) fn mean_ns(&self) -> Option<f64> {
        (!self.is_empty()).then(|| self.sum as f64 / self.sorted.len() as f64)
    }

    /// Count, p50, p90, p99 and mean, for JSON.
    pub fn summary(&self) -> Option<Summary> {
        Some(Summary {
            count: self.count() as u64,
            p50_ns: self.percentile_ns(50)?,
            p90_ns: self.percentile_ns(90)?,
            p99_ns: self.percentile_ns(99)?,
            mean_ns: self.mean_ns()?,
        })
    }
}

/// The numbers a report prints of a set of [`Samples`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Nearest-rank median, ns.
    pub p50_ns: u64,
    /// Nearest-rank 90th percentile, ns.
    pub p90_ns: u64,
    /// Nearest-rank 99th percentile, ns.
    pub p99_ns: u64,
    /// Exact mean, ns.
    pub mean_ns: f64,
}

/// The new tokens and the wall time of the passes of one phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Throughput {
    /// Passes.
    pub passes: u64,
    /// New tokens over those passes: prompt tokens in prefill, generated tokens in decode.
    pub tokens: u64,
    /// Their wall time, ns.
    pub wall_ns: u64,
}

impl Throughput {
    fn add(&mut self, tokens: u64, wall_ns: u64) {
        self.passes += 1;
        self.tokens = self.tokens.saturating_add(tokens);
        self.wall_ns = self.wall_ns.saturating_add(wall_ns);
    }

    /// Tokens per second of wall time (0 without time).
    pub(crate) fn tokens_per_sec(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.tokens as f64 * 1e9 / self.wall_ns as f64
        }
    }
}

/// TTFT, TPOT and the per-phase throughputs of a pass series.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Latency {
    /// Time to first token: one sample per prompt, the wall time of its consecutive prefill
    /// passes (chunks included).
    pub ttft: Samples,
    /// Time per output token: one sample per decode pass, its wall time (every sequence in
    /// the pass gets one token in it).
    pub tpot: Samples,
    /// Prefill passes: prompt tokens and wall time.
    pub prefill: Throughput,
    /// Decode passes: generated tokens and wall time.
    pub decode: Throughput,
    /// Mixed passes (prefill chunks and decode steps together), counted apart: in neither
    /// TTFT, TPOT nor the two throughputs.
    pub mixed: Throughput,
    /// Passes without a shape, counted and left out. A profiler records no unshaped pass in
    /// its series, so [`latency`] counts only the series' records without a shape (none from
    /// a profiler); `profile_latency` counts the profile's unshaped passes.
    pub unshaped_passes: u64,
    /// Prompts whose first prefill passes the ring overwrote: left out of TTFT.
    pub cut_prompts: u64,
}

/// The latency numbers of `series` (spec/profile-format.md "Latency: TTFT and TPOT"), run by
/// run, each run oldest pass first; `None` when no pass of it has a shape.
///
/// A TTFT sample is the summed wall time of a maximal group of consecutive prefill passes of
/// one run: the prompt's passes up to its first token. When the ring dropped a run's oldest
/// passes and the run starts in prefill, that first group may have lost chunks: it is left out
/// and counted in [`Latency::cut_prompts`]. A TPOT sample is one decode pass's wall time.
pub fn latency(series: &PassSeries) -> Option<Latency> {
    let mut l = Latency::default();
    let (mut ttft, mut tpot) = (Vec::new(), Vec::new());
    for run in series.runs() {
        tally_run(run, &mut l, &mut ttft, &mut tpot);
    }
    if l.prefill.passes + l.decode.passes + l.mixed.passes == 0 {
        return None;
    }
    l.ttft = Samples::of(ttft);
    l.tpot = Samples::of(tpot);
    Some(l)
}

/// [`latency`] of `profile`'s pass series, with [`Latency::unshaped_passes`] the profile's
/// counted passes without a shape (its `unspecified` phase), which leave no record in the
/// series; what every report shows (spec/profile-format.md "Latency: TTFT and TPOT").
pub(crate) fn profile_latency(profile: &Profile) -> Option<Latency> {
    let mut l = latency(profile.pass_series.as_ref()?)?;
    let counted = profile.phase_passes(Phase::Unspecified).count();
    l.unshaped_passes = l.unshaped_passes.max(counted);
    Some(l)
}

fn tally_run(run: &PassRun, l: &mut Latency, ttft: &mut Vec<u64>, tpot: &mut Vec<u64>) {
    // The prefill group being summed: (its wall time, whether the ring cut its start).
    let mut group: Option<(u64, bool)> = None;
    let mut close = |group: &mut Option<(u64, bool)>, l: &mut Latency| match group.take() {
        Some((_, true)) => l.cut_prompts += 1,
        Some((wall, false)) => ttft.push(wall),
        None => {}
    };
    for (i, r) in run.records().iter().enumerate() {
        let tokens = r.shape().map_or(0, |s| u64::from(s.new_tokens()));
        let phase = r.phase();
        if phase != Phase::Prefill {
            close(&mut group, l);
        }
        match phase {
            Phase::Prefill => {
                let (wall, _) = group.get_or_insert((0, i == 0 && run.dropped() > 0));
                *wall = wall.saturating_add(r.wall_ns());
                l.prefill.add(tokens, r.wall_ns());
            }
            Phase::Decode => {
                tpot.push(r.wall_ns());
                l.decode.add(tokens, r.wall_ns());
            }
            Phase::Mixed => l.mixed.add(tokens, r.wall_ns()),
            Phase::Unspecified => l.unshaped_passes += 1,
        }
    }
    close(&mut group, l);
}

/// The latency block of a report's header: TTFT and TPOT (p50, p90, p99, mean), the prefill
/// and decode throughputs, and what TTFT leaves out. Every line fits 100 columns.
///
/// ```text
/// TTFT  p50 1.50ms   p90 1.50ms   p99 1.50ms   mean 1.50ms   (2 prompts)
/// TPOT  p50 200µs    p90 300µs    p99 300µs    mean 233µs    (3 decode passes)
/// Prefill 1.00k tok/s   (1500 prompt tokens in 2 passes, 1.50ms)
/// Decode  4.29k tok/s   (3 generated tokens in 3 passes, 700µs)
///   TTFT: wall time of a prompt's prefill passes as the profiler sees them; queueing before
///   the first pass belongs to the server and is not in it. TPOT: one decode pass's wall time.
/// ```
pub(crate) fn render_latency(l: &Latency) -> String {
    let mut out = String::new();
    out.push_str(&samples_line("TTFT", &l.ttft, "prompt", "prompts"));
    out.push_str(&samples_line(
        "TPOT",
        &l.tpot,
        "decode pass",
        "decode passes",
    ));
    for (label, t, what) in [
        ("Prefill", &l.prefill, "prompt"),
        ("Decode ", &l.decode, "generated"),
    ] {
        out.push_str(&format!(
            "{label} {:<12}  ({} {what} tokens in {} {}, {})\n",
            rate(t.tokens_per_sec(), " tok/s"),
            t.tokens,
            t.passes,
            if t.passes == 1 { "pass" } else { "passes" },
            duration(t.wall_ns as f64),
        ));
    }
    out.push_str(
        "  TTFT: wall time of a prompt's prefill passes as the profiler sees them; queueing \
         before\n  the first pass belongs to the server and is not in it. TPOT: one decode \
         pass's wall time.\n",
    );
    if l.cut_prompts > 0 {
        out.push_str(&format!(
            "  {} prompt(s) left out of TTFT: the pass series ring dropped their first passes\n",
            l.cut_prompts
        ));
    }
    if l.mixed.passes > 0 {
        out.push_str(&format!(
            "  mixed passes, in neither TTFT, TPOT nor the throughputs: {} ({} new tokens, {})\n",
            l.mixed.passes,
            l.mixed.tokens,
            duration(l.mixed.wall_ns as f64)
        ));
    }
    out
}

fn samples_line(label: &str, s: &Samples, one: &str, many: &str) -> String {
    let Some(m) = s.summary() else {
        return format!("{label}  -  (no {one} seen)\n");
    };
    let cell = |name: &str, ns: f64| format!("{name} {:<8}  ", duration(ns));
    format!(
        "{label}  {}{}{}{}({} {})\n",
        cell("p50", m.p50_ns as f64),
        cell("p90", m.p90_ns as f64),
        cell("p99", m.p99_ns as f64),
        cell("mean", m.mean_ns),
        m.count,
        if m.count == 1 { one } else { many },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // spec/profile-format.md "Latency: TTFT and TPOT": nearest rank, sorted[ceil(q·n) − 1].
    #[test]
    fn percentiles_are_nearest_rank() {
        let s = Samples::of((1..=10).rev().collect());
        assert_eq!(s.percentile_ns(50), Some(5));
        assert_eq!(s.percentile_ns(90), Some(9));
        assert_eq!(s.percentile_ns(99), Some(10));
        assert_eq!(s.percentile_ns(1), Some(1));
        assert_eq!(s.mean_ns(), Some(5.5));
        let one = Samples::of(vec![7]);
        assert_eq!(
            [50, 90, 99].map(|p| one.percentile_ns(p)),
            [Some(7), Some(7), Some(7)]
        );
        assert_eq!(Samples::default().percentile_ns(50), None);
        assert!(Samples::default().summary().is_none());
    }
}
