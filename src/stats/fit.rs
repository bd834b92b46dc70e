//! Cost against shape: a brick's (or a category's) time per pass fitted as a straight line
//! against the pass's new tokens or its context tokens, by least squares over exact integer
//! sums. A leaf: [`FitSums`] is what the books keep per (phase, brick), a few integers added
//! once per pass; [`FitSums::solve`] is what a report asks for.
//! Specified in `spec/work-accounting.md` ("Cost against shape").

use serde::{Deserialize, Serialize};

use crate::base::exact_int;
use crate::model::phase::PassShape;

/// What a fit explains a pass's time by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Regressor {
    /// New tokens in the pass (over all its sequences): what projections and the FFN scale with.
    NewTokens,
    /// Context tokens attended in the pass (summed over its sequences): what attention's
    /// scores scale with.
    Context,
}

impl Regressor {
    /// Both regressors, in index order.
    pub(crate) const ALL: [Regressor; 2] = [Regressor::NewTokens, Regressor::Context];

    /// The regressor's words in a report: "new tokens" or "context".
    pub(crate) fn label(self) -> &'static str {
        match self {
            Regressor::NewTokens => "new tokens",
            Regressor::Context => "context",
        }
    }

    /// The regressor's field in a saved [`FitSums`]: `new_tokens` or `context`.
    fn field(self) -> &'static str {
        match self {
            Regressor::NewTokens => "new_tokens",
            Regressor::Context => "context",
        }
    }

    /// The other regressor.
    pub(crate) fn other(self) -> Regressor {
        match self {
            Regressor::NewTokens => Regressor::Context,
            Regressor::Context => Regressor::NewTokens,
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    fn of(self, shape: &PassShape) -> u64 {
        match self {
            Regressor::NewTokens => u64::from(shape.new_tokens()),
            Regressor::Context => shape.context_tokens(),
        }
    }
}

/// The sums over passes that involve one regressor `x`: Σx, Σx², Σxy and the range of `x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Axis {
    sum: u128,
    sum_sq: u128,
    sum_xy: u128,
    /// `u64::MAX` while no pass was added.
    min: u64,
    max: u64,
}

impl Axis {
    const EMPTY: Axis = Axis {
        sum: 0,
        sum_sq: 0,
        sum_xy: 0,
        min: u64::MAX,
        max: 0,
    };

    fn add(&mut self, x: u64, y: u64) {
        let (wide, y) = (u128::from(x), u128::from(y));
        self.sum = self.sum.saturating_add(wide);
        self.sum_sq = self.sum_sq.saturating_add(wide * wide);
        self.sum_xy = self.sum_xy.saturating_add(wide * y);
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    fn saturated(&self) -> bool {
        [self.sum, self.sum_sq, self.sum_xy].contains(&u128::MAX)
    }

    fn merge(&mut self, o: &Axis) {
        self.sum = self.sum.saturating_add(o.sum);
        self.sum_sq = self.sum_sq.saturating_add(o.sum_sq);
        self.sum_xy = self.sum_xy.saturating_add(o.sum_xy);
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }
}

/// Exact integer sums, over the passes of one (phase, brick), from which a least-squares line
/// of the brick's time per pass against either [`Regressor`] is solved: the pass count `n`,
/// Σy and Σy² of the time `y` (ns), and for `x` = new tokens and `x` = context tokens, Σx, Σx²,
/// Σxy and the smallest and largest `x` seen; also the fewest and most calls of the brick in
/// one pass (to show a fit per call when that number is constant).
///
/// Adding a pass costs a few integer additions, never an allocation. Sums are `u128` and
/// saturate instead of wrapping; two sums merge by adding, so merge is exact, associative and
/// commutative, and merging equals adding every pass to one. Fields are private: a loaded
/// `FitSums` keeps the same invariants as a built one (spec/profile-format.md "Validation").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawFitSums", into = "RawFitSums")]
pub struct FitSums {
    n: u64,
    sum_y: u128,
    sum_y_sq: u128,
    axes: [Axis; 2],
    /// `u64::MAX` while no pass was added.
    calls_min: u64,
    calls_max: u64,
}

impl Default for FitSums {
    fn default() -> Self {
        FitSums::new()
    }
}

impl FitSums {
    /// Bytes one `FitSums` takes (what the books pay per (phase, brick) cell that keeps one):
    /// 192.
    #[cfg(test)]
    pub(crate) const MEMORY_BYTES: usize = std::mem::size_of::<FitSums>();

    /// No passes yet.
    pub(crate) const fn new() -> FitSums {
        FitSums {
            n: 0,
            sum_y: 0,
            sum_y_sq: 0,
            axes: [Axis::EMPTY; 2],
            calls_min: u64::MAX,
            calls_max: 0,
        }
    }

    /// Add one pass of shape `shape` in which the brick took `ns` (its self time summed over
    /// the pass's calls, every layer included) in `calls` calls.
    #[inline]
    pub(crate) fn add(&mut self, shape: &PassShape, ns: u64, calls: u64) {
        self.n = self.n.saturating_add(1);
        let y = u128::from(ns);
        self.sum_y = self.sum_y.saturating_add(y);
        self.sum_y_sq = self.sum_y_sq.saturating_add(y * y);
        for r in Regressor::ALL {
            self.axes[r.index()].add(r.of(shape), ns);
        }
        self.calls_min = self.calls_min.min(calls);
        self.calls_max = self.calls_max.max(calls);
    }

    /// Add every pass of `other`.
    pub(crate) fn merge(&mut self, other: &FitSums) {
        self.n = self.n.saturating_add(other.n);
        self.sum_y = self.sum_y.saturating_add(other.sum_y);
        self.sum_y_sq = self.sum_y_sq.saturating_add(other.sum_y_sq);
        for (a, b) in self.axes.iter_mut().zip(&other.axes) {
            a.merge(b);
        }
        self.calls_min = self.calls_min.min(other.calls_min);
        self.calls_max = self.calls_max.max(other.calls_max);
    }

    /// Passes added.
    pub(crate) fn passes(&self) -> u64 {
        self.n
    }

    /// Whether no pass was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The brick's calls in every pass, when that number is the same in each pass and not 0
    /// (a fit can then be shown per call).
    pub(crate) fn calls_per_pass(&self) -> Option<u64> {
        (self.n > 0 && self.calls_min == self.calls_max && self.calls_max > 0)
            .then_some(self.calls_max)
    }

    /// Total time over the passes added, ns (saturating at `u64::MAX`).
    pub(crate) fn total_ns(&self) -> u64 {
        u64::try_from(self.sum_y).unwrap_or(u64::MAX)
    }

    /// The least-squares line of the time per pass against `x`: `None` with fewer than
    /// 3 passes, when `x` took one value only (no slope to see), or when a
    /// sum saturated (no line would be right).
    ///
    /// On points that lie on a line the fit is that line exactly (computed from exact integer
    /// differences while they fit in 127 bits, then one rounding per coefficient), with
    /// R² = 1. R² is 1 too when the time never varies (nothing is left to explain).
    pub(crate) fn solve(&self, x: Regressor) -> Option<Fit> {
        let a = &self.axes[x.index()];
        if self.n < Fit::MIN_PASSES
            || a.min == a.max
            || a.saturated()
            || [self.sum_y, self.sum_y_sq].contains(&u128::MAX)
        {
            return None;
        }
        let (intercept_ns, slope_ns, r2) = self.exact_line(a).or_else(|| self.float_line(a))?;
        // Sums that passed the checks on load always give finite numbers; a line that is not
        // finite is no line (a report never shows NaN).
        if ![intercept_ns, slope_ns, r2].iter().all(|v| v.is_finite()) {
            return None;
        }
        Some(Fit {
            regressor: x,
            intercept_ns,
            slope_ns,
            r2,
            n: self.n,
            x_min: a.min,
            x_max: a.max,
        })
    }

    /// The line from exact differences: `dxx = nΣx² − (Σx)²`, `dxy = nΣxy − ΣxΣy`,
    /// `dyy = nΣy² − (Σy)²`; slope `dxy/dxx`, intercept `(ΣyΣx² − ΣxΣxy)/dxx`,
    /// R² `dxy²/(dxx·dyy)`. `None` when an intermediate does not fit in an `i128`.
    fn exact_line(&self, a: &Axis) -> Option<(f64, f64, f64)> {
        let i = |v: u128| i128::try_from(v).ok();
        let n = i128::from(self.n);
        let (sx, sxx, sxy) = (i(a.sum)?, i(a.sum_sq)?, i(a.sum_xy)?);
        let (sy, syy) = (i(self.sum_y)?, i(self.sum_y_sq)?);
        let diff =
            |p: i128, q: i128, r: i128, s: i128| p.checked_mul(q)?.checked_sub(r.checked_mul(s)?);
        let dxx = diff(n, sxx, sx, sx)?;
        let dxy = diff(n, sxy, sx, sy)?;
        let dyy = diff(n, syy, sy, sy)?;
        let icpt = diff(sy, sxx, sx, sxy)?;
        if dxx <= 0 || dyy < 0 {
            return None;
        }
        let r2 = if dyy == 0 {
            1.0
        } else {
            let num = dxy.unsigned_abs().checked_mul(dxy.unsigned_abs());
            let den = dxx.unsigned_abs().checked_mul(dyy.unsigned_abs());
            match (num, den) {
                (Some(num), Some(den)) if num == den => 1.0,
                (Some(num), Some(den)) => num as f64 / den as f64,
                _ => (ratio(dxy, dxx) * ratio(dxy, dyy)).clamp(0.0, 1.0),
            }
        };
        Some((ratio(icpt, dxx), ratio(dxy, dxx), r2))
    }

    /// The same line in floating point, for sums too large for [`Self::exact_line`]; `None`
    /// when rounding leaves no spread of `x` (`dxx ≤ 0`).
    fn float_line(&self, a: &Axis) -> Option<(f64, f64, f64)> {
        let n = self.n as f64;
        let (sx, sxx, sxy) = (a.sum as f64, a.sum_sq as f64, a.sum_xy as f64);
        let (sy, syy) = (self.sum_y as f64, self.sum_y_sq as f64);
        let dxx = n * sxx - sx * sx;
        let dxy = n * sxy - sx * sy;
        let dyy = n * syy - sy * sy;
        if dxx.is_nan() || dxx <= 0.0 {
            return None;
        }
        let slope = dxy / dxx;
        let intercept = (sy - slope * sx) / n;
        let r2 = if dyy <= 0.0 {
            1.0
        } else {
            ((dxy / dxx) * (dxy / dyy)).clamp(0.0, 1.0)
        };
        Some((intercept, slope, r2))
    }
}

/// `p / q` as an `f64`, exact whenever `q` divides `p` and the quotient is below 2^53.
fn ratio(p: i128, q: i128) -> f64 {
    let (whole, rest) = (p / q, p % q);
    whole as f64 + rest as f64 / q as f64
}

/// A least-squares line of time per pass against a [`Regressor`]: time ≈ `intercept_ns +
/// slope_ns · x`, with its goodness of fit and the range of `x` it was fitted over (beyond that
/// range a prediction is an extrapolation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// What `x` is.
    pub regressor: Regressor,
    /// Time at `x = 0`, ns.
    pub intercept_ns: f64,
    /// Time per unit of `x` (per token), ns.
    pub slope_ns: f64,
    /// Coefficient of determination, 0 to 1: the share of the time's variance the line
    /// explains (1 when the time never varies).
    pub r2: f64,
    /// Passes fitted.
    pub n: u64,
    /// Smallest `x` seen.
    pub x_min: u64,
    /// Largest `x` seen.
    pub x_max: u64,
}

impl Fit {
    /// The fewest passes a line is fitted over (two points always lie on a line).
    pub(crate) const MIN_PASSES: u64 = 3;

    /// The time the line predicts at `x`, ns; never below zero (a line through noisy passes
    /// can fall below zero, a time cannot: [`Fit::distrust`] says whether to believe it).
    pub(crate) fn predict_ns(&self, x: u64) -> f64 {
        (self.intercept_ns + self.slope_ns * x as f64).max(0.0)
    }
}

/// The saved form of [`FitSums`], checked on load.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFitSums {
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    n: u64,
    #[serde(
        serialize_with = "exact_int::ser_u128",
        deserialize_with = "exact_int::de_u128"
    )]
    sum_y: u128,
    #[serde(
        serialize_with = "exact_int::ser_u128",
        deserialize_with = "exact_int::de_u128"
    )]
    sum_y_sq: u128,
    new_tokens: RawAxis,
    context: RawAxis,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    calls_min: u64,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    calls_max: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxis {
    #[serde(
        serialize_with = "exact_int::ser_u128",
        deserialize_with = "exact_int::de_u128"
    )]
    sum: u128,
    #[serde(
        serialize_with = "exact_int::ser_u128",
        deserialize_with = "exact_int::de_u128"
    )]
    sum_sq: u128,
    #[serde(
        serialize_with = "exact_int::ser_u128",
        deserialize_with = "exact_int::de_u128"
    )]
    sum_xy: u128,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    min: u64,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    max: u64,
}

impl From<Axis> for RawAxis {
    fn from(a: Axis) -> RawAxis {
        RawAxis {
            sum: a.sum,
            sum_sq: a.sum_sq,
            sum_xy: a.sum_xy,
            min: a.min,
            max: a.max,
        }
    }
}

impl From<FitSums> for RawFitSums {
    fn from(s: FitSums) -> RawFitSums {
        let [new_tokens, context] = s.axes.map(RawAxis::from);
        RawFitSums {
            n: s.n,
            sum_y: s.sum_y,
            sum_y_sq: s.sum_y_sq,
            new_tokens,
            context,
            calls_min: s.calls_min,
            calls_max: s.calls_max,
        }
    }
}

impl TryFrom<RawFitSums> for FitSums {
    type Error = String;

    fn try_from(r: RawFitSums) -> Result<FitSums, String> {
        let empty = FitSums::new();
        let axes = [r.new_tokens, r.context].map(|a| Axis {
            sum: a.sum,
            sum_sq: a.sum_sq,
            sum_xy: a.sum_xy,
            min: a.min,
            max: a.max,
        });
        let s = FitSums {
            n: r.n,
            sum_y: r.sum_y,
            sum_y_sq: r.sum_y_sq,
            axes,
            calls_min: r.calls_min,
            calls_max: r.calls_max,
        };
        if s.n == 0 {
            return if s == empty {
                Ok(s)
            } else {
                Err("fit sums: n is 0 but a sum or a range is not empty".into())
            };
        }
        if s.calls_min > s.calls_max {
            return Err(format!(
                "fit sums: calls_min {} exceeds calls_max {}",
                s.calls_min, s.calls_max
            ));
        }
        if s.n == 1 && s.calls_min != s.calls_max {
            return Err(format!(
                "fit sums: one pass, yet calls_min {} differs from calls_max {}",
                s.calls_min, s.calls_max
            ));
        }
        check_y(s.n, s.sum_y, s.sum_y_sq)?;
        for (r, a) in Regressor::ALL.iter().zip(&s.axes) {
            check_axis(r.field(), s.n, a, s.sum_y)?;
        }
        Ok(s)
    }
}

/// `u128::MAX` is a saturated sum: the true sum is at least that, so lower bounds still hold
/// and upper bounds say nothing.
fn saturated(v: u128) -> bool {
    v == u128::MAX
}

/// The sums of the time `y` over `n` passes (spec/profile-format.md "Validation"): `Σy² ≤
/// (Σy)²` (every `y` is a whole number ≥ 0) and `n·Σy² ≥ (Σy)²` (Cauchy–Schwarz), each
/// checked where it does not overflow and no sum saturated.
fn check_y(n: u64, sum_y: u128, sum_y_sq: u128) -> Result<(), String> {
    if saturated(sum_y) || saturated(sum_y_sq) {
        return Ok(());
    }
    let square = sum_y.checked_mul(sum_y);
    if square.is_some_and(|sq| sum_y_sq > sq) {
        return Err(format!(
            "fit sums: sum_y_sq {sum_y_sq} is more than sum_y {sum_y} squared"
        ));
    }
    if let (Some(sq), Some(lhs)) = (square, u128::from(n).checked_mul(sum_y_sq)) {
        if lhs < sq {
            return Err(format!(
                "fit sums: sum_y_sq {sum_y_sq} is less than sum_y {sum_y} squared over {n} passes"
            ));
        }
    }
    Ok(())
}

/// One regressor's sums over `n ≥ 1` passes (spec/profile-format.md "Validation"): `min ≤
/// max` (equal for one pass); one pass at `min` and one at `max`, the others between, so
/// `max + (n−1)·min ≤ Σx ≤ min + (n−1)·max` and likewise for `Σx²`; `min·Σy ≤ Σxy ≤ max·Σy`;
/// and `n·Σx² − (Σx)²`, positive when `min < max` and 0 otherwise. Bounds are computed with
/// saturation; an upper bound is not applied to a saturated sum, and the last rule is checked
/// where it does not overflow.
fn check_axis(what: &str, n: u64, a: &Axis, sum_y: u128) -> Result<(), String> {
    if a.min > a.max {
        return Err(format!(
            "fit sums: {what}.min {} exceeds {what}.max {}",
            a.min, a.max
        ));
    }
    if n == 1 && a.min != a.max {
        return Err(format!(
            "fit sums: one pass, yet {what}.min {} differs from {what}.max {}",
            a.min, a.max
        ));
    }
    let rest = u128::from(n - 1);
    let (min, max) = (u128::from(a.min), u128::from(a.max));
    let between = |field: &str, v: u128, lo: u128, hi: u128| {
        if v < lo || (!saturated(v) && v > hi) {
            Err(format!(
                "fit sums: {what}.{field} {v} is not between {lo} and {hi}, what {n} passes \
                 with {what} from {} to {} give",
                a.min, a.max
            ))
        } else {
            Ok(())
        }
    };
    let bounds = |lo_one: u128, hi_one: u128| {
        (
            hi_one.saturating_add(rest.saturating_mul(lo_one)),
            lo_one.saturating_add(rest.saturating_mul(hi_one)),
        )
    };
    let (lo, hi) = bounds(min, max);
    between("sum", a.sum, lo, hi)?;
    let (lo, hi) = bounds(min * min, max * max);
    between("sum_sq", a.sum_sq, lo, hi)?;
    if !saturated(sum_y) {
        between(
            "sum_xy",
            a.sum_xy,
            min.saturating_mul(sum_y),
            max.saturating_mul(sum_y),
        )?;
    }
    if !saturated(a.sum) && !saturated(a.sum_sq) {
        if let (Some(lhs), Some(sq)) = (
            u128::from(n).checked_mul(a.sum_sq),
            a.sum.checked_mul(a.sum),
        ) {
            if (a.min < a.max && lhs <= sq) || (a.min == a.max && lhs != sq) {
                return Err(format!(
                    "fit sums: {what}.sum_sq {} and {what}.sum {} over {n} passes do not \
                     describe values from {} to {}",
                    a.sum_sq, a.sum, a.min, a.max
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(new: u32, ctx: u64) -> PassShape {
        PassShape::new(new, 1, ctx).unwrap()
    }

    #[test]
    fn sums_weigh_what_the_doc_says() {
        assert_eq!(FitSums::MEMORY_BYTES, 192);
    }

    // spec/work-accounting.md "Cost against shape": exact lines come back exactly.
    #[test]
    fn an_exact_line_is_recovered_exactly_against_either_regressor() {
        let mut s = FitSums::new();
        for (new, ctx) in [(16, 16), (32, 48), (8, 56), (64, 120)] {
            s.add(&shape(new, ctx), 5_000 + 1_250 * u64::from(new), 2);
        }
        let f = s.solve(Regressor::NewTokens).unwrap();
        assert_eq!((f.intercept_ns, f.slope_ns, f.r2), (5_000.0, 1_250.0, 1.0));
        assert_eq!((f.n, f.x_min, f.x_max), (4, 8, 64));
        assert_eq!(s.calls_per_pass(), Some(2));
        let g = s.solve(Regressor::Context).unwrap();
        assert!(g.r2 < 1.0 && g.r2 >= 0.0, "{g:?}");
    }

    #[test]
    fn too_few_passes_or_one_x_give_no_line() {
        let mut s = FitSums::new();
        s.add(&shape(4, 10), 100, 1);
        s.add(&shape(8, 20), 200, 1);
        assert!(s.solve(Regressor::NewTokens).is_none());
        s.add(&shape(12, 30), 300, 3);
        assert!(s.solve(Regressor::NewTokens).is_some());
        assert_eq!(s.calls_per_pass(), None);
        let mut flat = FitSums::new();
        for y in [1, 2, 3] {
            flat.add(&shape(4, 10), y, 1);
        }
        assert!(flat.solve(Regressor::Context).is_none());
    }

    #[test]
    fn a_constant_time_is_a_flat_line_with_nothing_left_to_explain() {
        let mut s = FitSums::new();
        for ctx in [10, 20, 30] {
            s.add(&shape(1, ctx), 700, 1);
        }
        let f = s.solve(Regressor::Context).unwrap();
        assert_eq!((f.intercept_ns, f.slope_ns, f.r2), (700.0, 0.0, 1.0));
    }

    #[test]
    fn noisy_points_fit_with_r2_below_one() {
        let mut s = FitSums::new();
        for (ctx, y) in [(10, 100), (20, 230), (30, 290), (40, 410)] {
            s.add(&shape(1, ctx), y, 1);
        }
        let f = s.solve(Regressor::Context).unwrap();
        // The textbook two-pass form, about the means.
        let (xs, ys) = ([10.0, 20.0, 30.0, 40.0], [100.0, 230.0, 290.0, 410.0]);
        let (mx, my) = (xs.iter().sum::<f64>() / 4.0, ys.iter().sum::<f64>() / 4.0);
        let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
        let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
        let syy: f64 = ys.iter().map(|y| (y - my) * (y - my)).sum();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        assert!(close(f.slope_ns, sxy / sxx), "{f:?}");
        assert!(close(f.intercept_ns, my - sxy / sxx * mx), "{f:?}");
        assert!(close(f.r2, sxy * sxy / (sxx * syy)), "{f:?}");
        assert!(f.r2 < 1.0);
    }

    #[test]
    fn saturated_sums_give_no_line() {
        let mut s = FitSums::new();
        for ctx in [1u64, 2, 3] {
            s.add(&shape(1, ctx), u64::MAX, 1); // Σy² passes 2^128 at the second pass
        }
        assert!(s.solve(Regressor::Context).is_none());
        let mut fine = FitSums::new();
        for ctx in [1u64, 2, 3] {
            fine.add(&shape(1, ctx), u64::MAX / 4, 1);
        }
        assert!(fine.solve(Regressor::Context).is_some());
    }

    #[test]
    fn huge_sums_fall_back_to_floating_point() {
        let mut s = FitSums::new();
        for ctx in [1u64 << 40, 1 << 41, 1 << 42] {
            s.add(&shape(1, ctx), ctx * 3, 1);
        }
        let f = s.solve(Regressor::Context).unwrap();
        assert!((f.slope_ns - 3.0).abs() < 1e-6, "{f:?}");
        assert!(f.r2 > 0.999_999, "{f:?}");
    }

    #[test]
    fn merge_equals_adding_every_pass_to_one() {
        let pts = [
            (4, 10, 90),
            (8, 30, 170),
            (2, 44, 60),
            (16, 90, 400),
            (5, 7, 1),
        ];
        let (mut a, mut b, mut all) = (FitSums::new(), FitSums::new(), FitSums::new());
        for (i, &(n, c, y)) in pts.iter().enumerate() {
            let part = if i % 2 == 0 { &mut a } else { &mut b };
            part.add(&shape(n, c), y, i as u64);
            all.add(&shape(n, c), y, i as u64);
        }
        let mut ab = a;
        ab.merge(&b);
        let mut ba = b;
        ba.merge(&a);
        assert_eq!(ab, all);
        assert_eq!(ba, all);
        let mut e = FitSums::new();
        e.merge(&all);
        assert_eq!(e, all);
    }

    // spec/profile-format.md "Validation": fit sums are checked on load.
    #[test]
    fn sums_round_trip_and_bad_ones_are_refused() {
        let mut s = FitSums::new();
        for (n, c) in [(4, 10), (8, 30), (2, 44)] {
            s.add(&shape(n, c), u64::MAX, 1);
        }
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<FitSums>(&json).unwrap(), s);
        let empty = serde_json::to_string(&FitSums::new()).unwrap();
        assert_eq!(
            serde_json::from_str::<FitSums>(&empty).unwrap(),
            FitSums::new()
        );
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["context"]["min"] = 45.into();
        let e = serde_json::from_value::<FitSums>(v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("context.min 45 exceeds context.max 44"), "{e}");
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["new_tokens"]["sum"] = 1.into();
        let e = serde_json::from_value::<FitSums>(v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("new_tokens.sum 1 is not between"), "{e}");
        let mut v: serde_json::Value = serde_json::from_str(&empty).unwrap();
        v["sum_y"] = 3.into();
        assert!(serde_json::from_value::<FitSums>(v).is_err());
    }

    // spec/profile-format.md "Validation": the sums describe values between min and max, so
    // a fit of loaded sums is a real line (the outside testers' file: new_tokens.max
    // 1,000,000,001 with a sum of 8 over 4 passes loaded and printed "R² NaN").
    #[test]
    fn sums_that_no_passes_could_give_are_refused_naming_the_field() {
        let mut s = FitSums::new();
        for ctx in [10, 20, 30, 40] {
            s.add(&shape(2, ctx), 100 * ctx, 1);
        }
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<FitSums>(&json).unwrap(), s);
        let refused = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
            edit(&mut v);
            serde_json::from_value::<FitSums>(v)
                .map(|s| format!("loaded: {s:?}"))
                .unwrap_or_else(|e| e.to_string())
        };
        let e = refused(&|v| v["new_tokens"]["max"] = 1_000_000_001u64.into());
        assert!(e.contains("new_tokens.sum 8 is not between"), "{e}");
        let e = refused(&|v| v["context"]["sum_sq"] = 1000.into());
        assert!(e.contains("context.sum_sq 1000 is not between"), "{e}");
        // Within the bounds, but no four values from 10 to 40 give these two sums.
        let e = refused(&|v| {
            v["context"]["sum"] = 100.into();
            v["context"]["sum_sq"] = 2500.into();
        });
        assert!(e.contains("context.sum_sq 2500 and context.sum 100"), "{e}");
        let e = refused(&|v| v["context"]["sum_xy"] = 1.into());
        assert!(e.contains("context.sum_xy 1 is not between"), "{e}");
        let e = refused(&|v| v["sum_y_sq"] = 1.into());
        assert!(e.contains("sum_y_sq 1 is less than sum_y"), "{e}");
        let e = refused(&|v| v["sum_y_sq"] = serde_json::json!(u64::MAX));
        assert!(e.contains("is more than sum_y"), "{e}");
        let mut one = FitSums::new();
        one.add(&shape(2, 10), 100, 1);
        let mut v = serde_json::to_value(one).unwrap();
        v["context"]["max"] = 11.into();
        let e = serde_json::from_value::<FitSums>(v)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("one pass, yet context.min 10 differs from context.max 11"),
            "{e}"
        );
    }

    // spec/work-accounting.md "Cost against shape": a line is finite or absent, never NaN,
    // whatever the sums (here sums no passes give, built past the checks on load).
    #[test]
    fn a_line_is_never_nan() {
        let mut s = FitSums::new();
        for _ in 0..4 {
            s.add(&shape(2, 10), 100, 1);
        }
        s.axes[Regressor::NewTokens.index()].max = 1_000_000_001;
        s.axes[Regressor::Context.index()].max = u64::MAX;
        s.axes[Regressor::Context.index()].sum_sq = u128::MAX - 1;
        for x in Regressor::ALL {
            if let Some(f) = s.solve(x) {
                assert!(
                    f.r2.is_finite() && f.slope_ns.is_finite() && f.intercept_ns.is_finite(),
                    "{f:?}"
                );
            }
        }
    }

    // spec/profile-format.md "Validation": whatever passes are added and merged, the sums
    // load again.
    #[test]
    fn sums_of_real_passes_always_pass_the_checks() {
        let mut rng = crate::base::splitmix::SplitMix64::new(7);
        let mut all = FitSums::new();
        for round in 0..50u64 {
            let mut s = FitSums::new();
            for _ in 0..(1 + round % 5) {
                let new = 1 + rng.below(64) as u32;
                let ctx = u64::from(new) + rng.below(1 << 20) as u64;
                let ns = if round % 7 == 0 {
                    u64::MAX - rng.below(9) as u64
                } else {
                    rng.below(1 << 40) as u64
                };
                s.add(&shape(new, ctx), ns, rng.below(3) as u64);
            }
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<FitSums>(&json).unwrap(), s, "{json}");
            all.merge(&s);
            let json = serde_json::to_string(&all).unwrap();
            assert_eq!(
                serde_json::from_str::<FitSums>(&json).unwrap(),
                all,
                "{json}"
            );
        }
    }
}
