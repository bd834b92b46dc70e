//! Elementwise error statistics of a candidate tensor against a reference (spec/divergence.md
//! "Metrics"): max absolute and relative error, mean and p99 absolute error, cosine
//! similarity, SQNR, NMSE, RMSE. A leaf: plain functions of two slices.

use serde::{Deserialize, Serialize};

/// The epsilon of the relative error near zero: `|c - r| / max(|r|, REL_EPSILON)`.
pub(crate) const REL_EPSILON: f64 = 1e-6;

/// How far a candidate tensor is from a reference, element by element.
///
/// Per element `i` the absolute error is `e_i = |c_i - r_i|` when both are finite, 0 when both
/// are the same non-finite value (both NaN, both +Inf, both -Inf), and +Inf otherwise (a
/// non-finite mismatch). Sums are in f64 over the pairs where both are finite; any non-finite
/// mismatch makes `nmse` +Inf, `sqnr_db` -Inf and `cosine` NaN (undefined, so every check on
/// it fails).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct ErrorStats {
    /// Elements compared.
    pub(crate) len: u64,
    /// Elements whose non-finite class differs (NaN vs a number, +Inf vs -Inf, ...).
    pub(crate) non_finite_mismatches: u64,
    /// `max e_i`.
    pub(crate) max_abs: f64,
    /// `max e_i / max(|r_i|, REL_EPSILON)`.
    pub(crate) max_rel: f64,
    /// `mean e_i`.
    pub(crate) mean_abs: f64,
    /// The 99th percentile of `e_i` (nearest rank: the `ceil(0.99 n)`-th smallest).
    pub(crate) p99_abs: f64,
    /// `sqrt(mean (c_i - r_i)^2)`.
    pub(crate) rmse: f64,
    /// `Σ r c / sqrt(Σ r² Σ c²)`; 1 when both are all zero, 0 when only one is.
    pub(crate) cosine: f64,
    /// `10 log10(Σ r² / Σ (c - r)²)`: +Inf when equal, -Inf when the reference is all zero
    /// and the candidate is not.
    pub(crate) sqnr_db: f64,
    /// `Σ (c - r)² / Σ r²`: 0 when equal, +Inf when the reference is all zero and the
    /// candidate is not.
    pub(crate) nmse: f64,
}

impl ErrorStats {
    /// The statistics of `candidate` against `reference`; `None` when the lengths differ.
    ///
    /// (Example: the unit test `error_stats_between` in `divergence/tests.rs`.)
    pub(crate) fn between(reference: &[f32], candidate: &[f32]) -> Option<ErrorStats> {
        if reference.len() != candidate.len() {
            return None;
        }
        let n = reference.len();
        let mut errors = Vec::with_capacity(n);
        let (mut rr, mut cc, mut rc, mut dd) = (0f64, 0f64, 0f64, 0f64);
        let (mut max_abs, mut max_rel, mut sum_abs) = (0f64, 0f64, 0f64);
        let mut mismatches = 0u64;
        for (&r, &c) in reference.iter().zip(candidate) {
            let e = if r.is_finite() && c.is_finite() {
                let (r, c) = (f64::from(r), f64::from(c));
                let d = c - r;
                rr += r * r;
                cc += c * c;
                rc += r * c;
                dd += d * d;
                let e = d.abs();
                max_rel = max_rel.max(e / r.abs().max(REL_EPSILON));
                e
            } else if same_class(r, c) {
                0.0
            } else {
                mismatches += 1;
                max_rel = f64::INFINITY;
                f64::INFINITY
            };
            max_abs = max_abs.max(e);
            sum_abs += e;
            // e >= 0 (or +Inf): its bits order like its value, and integers select faster.
            errors.push(e.to_bits());
        }
        let p99_abs = percentile(&mut errors, 0.99);
        let finite = n as u64 - mismatches;
        let (cosine, sqnr_db, nmse) = if mismatches > 0 {
            (f64::NAN, f64::NEG_INFINITY, f64::INFINITY)
        } else {
            let cosine = match (rr == 0.0, cc == 0.0) {
                (true, true) => 1.0,
                (true, false) | (false, true) => 0.0,
                // sqrt(x * x) is exactly x in binary floating point: identical tensors give 1.
                _ => rc / (rr * cc).sqrt(),
            };
            let nmse = match (dd == 0.0, rr == 0.0) {
                (true, _) => 0.0,
                (false, true) => f64::INFINITY,
                _ => dd / rr,
            };
            let sqnr_db = match (dd == 0.0, rr == 0.0) {
                (true, _) => f64::INFINITY,
                (false, true) => f64::NEG_INFINITY,
                _ => 10.0 * (rr / dd).log10(),
            };
            (cosine, sqnr_db, nmse)
        };
        Some(ErrorStats {
            len: n as u64,
            non_finite_mismatches: mismatches,
            max_abs,
            max_rel,
            mean_abs: if n == 0 { 0.0 } else { sum_abs / n as f64 },
            p99_abs,
            rmse: if finite == 0 {
                0.0
            } else if mismatches > 0 {
                f64::INFINITY
            } else {
                (dd / finite as f64).sqrt()
            },
            cosine,
            sqnr_db,
            nmse,
        })
    }

    /// The relative L2 error `sqrt(nmse)`: the error measure of amplification and origin.
    pub(crate) fn relative_l2(&self) -> f64 {
        self.nmse.sqrt()
    }
}

/// Both non-finite of the same class: both NaN, both +Inf or both -Inf.
fn same_class(r: f32, c: f32) -> bool {
    (r.is_nan() && c.is_nan()) || (r.is_infinite() && r == c)
}

/// The nearest-rank `q` quantile of non-negative values given as their f64 bits (reordered in
/// place): the `ceil(q n)`-th smallest; 0 for an empty slice.
fn percentile(x: &mut [u64], q: f64) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    let rank = ((q * x.len() as f64).ceil() as usize).clamp(1, x.len());
    let (_, v, _) = x.select_nth_unstable(rank - 1);
    f64::from_bits(*v)
}

#[cfg(test)]
mod tests {
    use super::*;

    // spec/divergence.md "Metrics": every metric checked exactly on known tensors.

    fn ramp(n: usize) -> Vec<f32> {
        (0..n).map(|i| i as f32 + 1.0).collect()
    }

    #[test]
    fn identical_tensors() {
        let r = ramp(100);
        let s = ErrorStats::between(&r, &r).unwrap();
        assert_eq!(
            (s.max_abs, s.max_rel, s.mean_abs, s.p99_abs, s.rmse),
            (0.0, 0.0, 0.0, 0.0, 0.0)
        );
        assert_eq!((s.cosine, s.sqnr_db, s.nmse), (1.0, f64::INFINITY, 0.0));
        assert!(s.max_abs == 0.0, "every e_i is 0");
    }

    #[test]
    fn one_element_off() {
        // r = 1..=100, element 49 (value 50) off by 0.5.
        let r = ramp(100);
        let mut c = r.clone();
        c[49] += 0.5;
        let s = ErrorStats::between(&r, &c).unwrap();
        let rr: f64 = (1..=100).map(|i| (i * i) as f64).sum(); // 338350
        assert_eq!(s.max_abs, 0.5);
        assert_eq!(s.max_rel, 0.5 / 50.0);
        assert_eq!(s.mean_abs, 0.5 / 100.0);
        // 99th percentile by nearest rank: the 99th smallest of 99 zeros and one 0.5.
        assert_eq!(s.p99_abs, 0.0);
        assert_eq!(s.rmse, (0.25f64 / 100.0).sqrt());
        assert_eq!(s.nmse, 0.25 / rr);
        assert_eq!(s.sqnr_db, 10.0 * (rr / 0.25).log10());
        let rc = rr + 0.5 * 50.0;
        let cc = rr - 2500.0 + 50.5 * 50.5;
        assert_eq!(s.cosine, rc / (rr * cc).sqrt());
    }

    #[test]
    fn all_elements_off() {
        let r = vec![2.0f32; 64];
        let c = vec![2.25f32; 64];
        let s = ErrorStats::between(&r, &c).unwrap();
        assert_eq!(
            (s.max_abs, s.mean_abs, s.p99_abs, s.rmse),
            (0.25, 0.25, 0.25, 0.25)
        );
        assert_eq!(s.max_rel, 0.125);
        assert_eq!(s.nmse, 0.0625 / 4.0);
        assert_eq!(s.sqnr_db, 10.0 * 64f64.log10());
        assert_eq!(s.cosine, 1.0); // a scaled copy points the same way
    }

    #[test]
    fn sign_flip() {
        let r = [3.0f32, 4.0, 12.0]; // Σ r² = 169 = 13²: the cosine is exact
        let c = r.map(|v| -v);
        let s = ErrorStats::between(&r, &c).unwrap();
        assert_eq!((s.max_abs, s.max_rel), (24.0, 2.0));
        assert_eq!(s.mean_abs, 38.0 / 3.0);
        assert_eq!(s.p99_abs, 24.0);
        assert_eq!((s.cosine, s.nmse), (-1.0, 4.0));
        assert_eq!(s.sqnr_db, 10.0 * 0.25f64.log10());
    }

    #[test]
    fn nan_in_one_element() {
        let r = ramp(10);
        let mut c = r.clone();
        c[3] = f32::NAN;
        let s = ErrorStats::between(&r, &c).unwrap();
        assert_eq!(s.non_finite_mismatches, 1);
        assert_eq!(
            (s.max_abs, s.max_rel, s.mean_abs),
            (f64::INFINITY, f64::INFINITY, f64::INFINITY)
        );
        assert_eq!(s.p99_abs, f64::INFINITY);
        assert_eq!(
            (s.nmse, s.sqnr_db, s.rmse),
            (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY)
        );
        assert!(s.cosine.is_nan());
        // The same NaN on both sides is no error.
        let s = ErrorStats::between(&c, &c).unwrap();
        assert_eq!((s.max_abs, s.non_finite_mismatches, s.nmse), (0.0, 0, 0.0));
    }

    #[test]
    fn zeros() {
        let z = vec![0.0f32; 8];
        let s = ErrorStats::between(&z, &z).unwrap();
        assert_eq!((s.cosine, s.nmse, s.sqnr_db), (1.0, 0.0, f64::INFINITY));
        let mut c = z.clone();
        c[0] = 1e-3;
        let s = ErrorStats::between(&z, &c).unwrap();
        assert_eq!(s.max_abs, f64::from(1e-3f32));
        assert_eq!(s.max_rel, f64::from(1e-3f32) / REL_EPSILON);
        assert_eq!(
            (s.cosine, s.nmse, s.sqnr_db),
            (0.0, f64::INFINITY, f64::NEG_INFINITY)
        );
        assert!(ErrorStats::between(&z, &z[..4]).is_none());
        let e = ErrorStats::between(&[], &[]).unwrap();
        assert_eq!(
            (e.len, e.max_abs, e.mean_abs, e.p99_abs),
            (0, 0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn p99_takes_the_nearest_rank() {
        let r = vec![0.0f32; 200];
        let mut c = r.clone();
        c[0] = 3.0;
        c[1] = 2.0;
        c[2] = 1.0;
        // 200 errors: the 198th smallest is 1.0 (two above it).
        assert_eq!(ErrorStats::between(&r, &c).unwrap().p99_abs, 1.0);
    }
}
