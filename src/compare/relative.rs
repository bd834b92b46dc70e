//! Bricks judged against the run (spec/timing-verdicts.md "Relative verdicts"): each pass's
//! time of a brick divided by how fast that pass ran the phase's other bricks, so that a
//! machine-wide change (a loaded host, a clock, a shared runner: every brick of a run or of a
//! pass slower by about the same factor) cancels, and what is left is the brick's own change.
//! Pure functions over one run's aligned per-pass times.

use super::timing_verdict::median;
use crate::{stats::PassSeries, Phase};

/// Fewest bricks a phase needs for relative verdicts: each brick's pace is the median of at
/// least three others, so one brick's own change cannot move another's.
pub(crate) const MIN_RELATIVE_BRICKS: usize = 4;

/// The per-pass self times of `names` in the passes of `phase`, aligned (`[brick][pass]`, 0
/// where a brick had no time in that pass), over every run of the series with a pass-brick
/// record; `None` when a run with passes of the phase has none.
pub(crate) fn aligned_times(
    series: &PassSeries,
    phase: Phase,
    names: &[&str],
) -> Option<Vec<Vec<f64>>> {
    let mut out = vec![Vec::new(); names.len()];
    for run in series.runs() {
        if !run.records().iter().any(|r| r.phase() == phase) {
            continue;
        }
        for (column, name) in out.iter_mut().zip(names) {
            let times = run.brick_times(name)?;
            column.extend(
                times
                    .filter(|(r, _)| r.phase() == phase)
                    .map(|(_, ns)| ns as f64),
            );
        }
    }
    Some(out)
}

/// Each brick's samples relative to its pass's pace (spec/timing-verdicts.md "Relative
/// verdicts"). `times[k][i]` is brick `k`'s time in pass `i` (all columns equally long),
/// `scales[k]` its typical time (the reference's median: the same scales for every run
/// compared, so the paces of two runs are comparable). The pace of pass `i` for brick `k` is
/// the median over the other bricks `j` with time in that pass of `times[j][i] / scales[j]`;
/// brick `k`'s relative sample is `times[k][i] / pace`. Passes where `k` has no time, or fewer
/// than `MIN_RELATIVE_BRICKS − 1` others have, give no sample.
// The pass index `i` addresses every brick's column (`times[j][i]`), not one slice.
#[allow(clippy::needless_range_loop)]
pub(crate) fn relative_samples(times: &[Vec<f64>], scales: &[f64]) -> Vec<Vec<f64>> {
    let bricks = times.len();
    let passes = times.iter().map(Vec::len).min().unwrap_or(0);
    let mut out = vec![Vec::with_capacity(passes); bricks];
    // (pace of brick j in this pass, j), sorted by pace.
    let mut paces: Vec<(f64, usize)> = Vec::with_capacity(bricks);
    for i in 0..passes {
        paces.clear();
        paces.extend((0..bricks).filter_map(|j| {
            let (t, s) = (times[j][i], scales[j]);
            (t > 0.0 && s > 0.0 && t.is_finite() && s.is_finite()).then(|| (t / s, j))
        }));
        if paces.len() < MIN_RELATIVE_BRICKS {
            // Every brick with time would have fewer than 3 others.
            continue;
        }
        paces.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (rank, &(_, k)) in paces.iter().enumerate() {
            let pace = median_without(&paces, rank);
            if pace > 0.0 {
                out[k].push(times[k][i] / pace);
            }
        }
    }
    out
}

/// The median of the sorted `paces` without the one at `skip`.
fn median_without(paces: &[(f64, usize)], skip: usize) -> f64 {
    let n = paces.len() - 1;
    // The value at rank `r` of the others.
    let at = |r: usize| paces[if r < skip { r } else { r + 1 }].0;
    if n % 2 == 1 {
        at(n / 2)
    } else {
        (at(n / 2 - 1) + at(n / 2)) / 2.0
    }
}

/// The reference's typical time of each brick (its median over the passes it ran in): the
/// scales of [`relative_samples`]; 0 for a brick without time.
pub(crate) fn scales_of(times: &[Vec<f64>]) -> Vec<f64> {
    times
        .iter()
        .map(|c| {
            let nonzero: Vec<f64> = c.iter().copied().filter(|t| *t > 0.0).collect();
            median(&nonzero).unwrap_or(0.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    // spec/timing-verdicts.md "Relative verdicts".
    use super::*;

    #[test]
    fn a_machine_wide_factor_cancels_and_one_bricks_change_stays_its_own() {
        // Five bricks, 6 passes whose pace varies (pass i takes 1 + i/10 of the typical
        // time); the second run is 20 % slower as a whole, and brick 2 a further 10 % slower.
        let base: Vec<Vec<f64>> = (0..5)
            .map(|k| {
                (0..6)
                    .map(|i| 100.0 * (k + 1) as f64 * (1.0 + i as f64 / 10.0))
                    .collect()
            })
            .collect();
        let scales = scales_of(&base);
        let slow: Vec<Vec<f64>> = base
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let f = if k == 2 { 1.2 * 1.1 } else { 1.2 };
                c.iter().map(|t| t * f).collect()
            })
            .collect();
        let (a, b) = (
            relative_samples(&base, &scales),
            relative_samples(&slow, &scales),
        );
        for k in 0..5 {
            let r = median(&b[k]).unwrap() / median(&a[k]).unwrap();
            // Brick 2 reads its own 10 %; the others nothing, though brick 2 is among their
            // paces.
            let want = if k == 2 { 1.1 } else { 1.0 };
            assert!((r - want).abs() < 1e-9, "brick {k}: {r}");
        }
    }

    #[test]
    fn too_few_bricks_or_missing_times_give_no_sample() {
        let three = vec![vec![1.0, 2.0]; 3];
        let s = scales_of(&three);
        assert!(relative_samples(&three, &s).iter().all(Vec::is_empty));
        // Four bricks, one without time in pass 0: pass 0 gives nobody a sample, pass 1 all.
        let mut four = vec![vec![1.0, 2.0]; 4];
        four[3][0] = 0.0;
        let s = scales_of(&four);
        let r = relative_samples(&four, &s);
        assert!(r.iter().all(|c| c.len() == 1), "{r:?}");
        assert_eq!(
            median_without(&[(1.0, 0), (2.0, 1), (3.0, 2), (9.0, 3)], 3),
            2.0
        );
        assert_eq!(
            median_without(&[(1.0, 0), (2.0, 1), (3.0, 2), (9.0, 3)], 0),
            3.0
        );
        assert_eq!(
            median_without(&[(1.0, 0), (2.0, 1), (3.0, 2), (4.0, 3), (9.0, 4)], 4),
            2.5
        );
    }
}
