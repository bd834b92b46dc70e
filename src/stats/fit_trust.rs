//! Whether a fitted line may be believed beyond the passes it was fitted over: enough passes, a
//! regressor range that at least doubles, a line that explains at least half the time's
//! variance, and that stays at or above zero as far as a report extends it. A leaf over
//! [`Fit`]; the report prints the first reason a line fails as "not trusted: ...".
//! Specified in `spec/work-accounting.md` ("Cost against shape", "Trusted lines").

use std::fmt;

use crate::stats::fit::{Fit, Regressor};

/// Why a fitted line is not trusted (the first reason found, in this order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Distrust {
    /// Fewer than 16 passes: a handful of noisy passes gives a line of
    /// any slope.
    FewPasses {
        /// Passes fitted.
        passes: u64,
    },
    /// The largest value of the regressor is under twice the smallest: over so narrow a range
    /// the slope is mostly the machine's noise.
    NarrowRange {
        /// What the line is against.
        regressor: Regressor,
        /// Smallest value seen.
        x_min: u64,
        /// Largest value seen.
        x_max: u64,
    },
    /// R² under 0.5: the time follows the machine more than the shape.
    Noisy {
        /// The line's R².
        r2: f64,
    },
    /// The line predicts a negative time at `x` (within the passes seen or where a report
    /// extends it, up to 16 times the largest value seen).
    BelowZero {
        /// What the line is against.
        regressor: Regressor,
        /// The first value of the regressor (from the smallest seen) where the line is below
        /// zero.
        x: u64,
    },
}

impl fmt::Display for Distrust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Distrust::FewPasses { passes } => write!(
                f,
                "{passes} passes (a trend needs {})",
                Fit::MIN_TRUSTED_PASSES
            ),
            Distrust::NarrowRange {
                regressor,
                x_min,
                x_max,
            } => write!(f, "{} {x_min}–{x_max} does not double", regressor.label()),
            Distrust::BelowZero { regressor, x } => {
                write!(f, "below zero at {} {x}", regressor.label())
            }
            Distrust::Noisy { r2 } => {
                write!(f, "R² {r2:.2} under {:.2}", Fit::MIN_TRUSTED_R2)
            }
        }
    }
}

impl Fit {
    /// The fewest passes a trusted line is fitted over.
    pub(crate) const MIN_TRUSTED_PASSES: u64 = 16;

    /// The smallest R² of a trusted line.
    pub(crate) const MIN_TRUSTED_R2: f64 = 0.5;

    /// How far past the largest value seen a report extends a line: 16 times it.
    pub(crate) const HORIZON: u64 = 16;

    /// Whether the line has too few passes or too narrow a range to be trusted, whatever its
    /// coefficients (the same for every line fitted over the same passes).
    pub(crate) fn distrust_of_passes(&self) -> Option<Distrust> {
        if self.n < Fit::MIN_TRUSTED_PASSES {
            return Some(Distrust::FewPasses { passes: self.n });
        }
        if self.x_max < self.x_min.saturating_mul(2) {
            return Some(Distrust::NarrowRange {
                regressor: self.regressor,
                x_min: self.x_min,
                x_max: self.x_max,
            });
        }
        None
    }

    /// Why the line is not trusted, or `None` when it is: at least
    /// [`Fit::MIN_TRUSTED_PASSES`] passes over a range that at least doubles, R² at least
    /// [`Fit::MIN_TRUSTED_R2`], and never below zero from the smallest value seen to
    /// [`Fit::HORIZON`] times the largest.
    pub(crate) fn distrust(&self) -> Option<Distrust> {
        if let Some(d) = self.distrust_of_passes() {
            return Some(d);
        }
        if self.r2 < Fit::MIN_TRUSTED_R2 {
            return Some(Distrust::Noisy { r2: self.r2 });
        }
        self.first_below_zero(self.x_max.saturating_mul(Fit::HORIZON))
            .map(|x| Distrust::BelowZero {
                regressor: self.regressor,
                x,
            })
    }

    /// Whether the line is trusted ([`Fit::distrust`] finds no reason against it).
    #[cfg(test)]
    pub(crate) fn trusted(&self) -> bool {
        self.distrust().is_none()
    }

    /// The first `x` from the smallest seen up to `up_to` where the raw line
    /// (`intercept_ns + slope_ns · x`) is below zero.
    fn first_below_zero(&self, up_to: u64) -> Option<u64> {
        let raw = |x: u64| self.intercept_ns + self.slope_ns * x as f64;
        if !self.intercept_ns.is_finite() || !self.slope_ns.is_finite() {
            return Some(self.x_min);
        }
        if raw(self.x_min) < 0.0 {
            return Some(self.x_min);
        }
        if self.slope_ns >= 0.0 || raw(up_to) >= 0.0 {
            return None;
        }
        // Falling: the line crosses zero at -a/b, past x_min.
        let cross = (-self.intercept_ns / self.slope_ns).floor();
        let mut x = (cross as u64).saturating_add(1).clamp(self.x_min, up_to);
        // Floating-point edges: step to the exact first negative value.
        while x > self.x_min && raw(x - 1) < 0.0 {
            x -= 1;
        }
        while raw(x) >= 0.0 && x < up_to {
            x += 1;
        }
        Some(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::phase::PassShape;
    use crate::stats::fit::FitSums;

    /// Five passes are too few (the example that was this method's doctest).
    #[test]
    fn five_passes_are_too_few() {
        let mut s = FitSums::new();
        for ctx in 1..=5u64 {
            s.add(&PassShape::new(1, 1, ctx).unwrap(), 1_000 + 100 * ctx, 1);
        }
        let fit = s.solve(crate::stats::Regressor::Context).unwrap();
        assert_eq!(fit.distrust(), Some(Distrust::FewPasses { passes: 5 }));
    }

    fn fit(points: &[(u64, u64)]) -> Fit {
        let mut s = FitSums::new();
        for &(ctx, ns) in points {
            s.add(&PassShape::new(1, 1, ctx).unwrap(), ns, 1);
        }
        s.solve(Regressor::Context).unwrap()
    }

    /// spec/work-accounting.md "Cost against shape", trusted lines: 7 passes are too few whatever
    /// their R²; a range that does not double is too narrow; a line that falls below zero before
    /// 16× the range is not trusted; a clean trend over enough passes is.
    #[test]
    fn trust_needs_passes_range_sign_and_goodness() {
        let line = |ctxs: std::ops::RangeInclusive<u64>| {
            fit(&ctxs.map(|c| (c, 1_000 + 10 * c)).collect::<Vec<_>>())
        };
        assert_eq!(
            line(6..=12).distrust(),
            Some(Distrust::FewPasses { passes: 7 })
        );
        assert_eq!(
            line(417..=479).distrust(),
            Some(Distrust::NarrowRange {
                regressor: Regressor::Context,
                x_min: 417,
                x_max: 479
            })
        );
        assert_eq!(line(17..=48).distrust(), None);
        // 100_000 - 100·x over 17–48 reaches zero at 1000, past the horizon 16 × 48 = 768:
        // trusted. 100_000 - 200·x reaches zero at 500, within it: not trusted.
        let falling = fit(&(17..=48)
            .map(|c| (c, 100_000 - 100 * c))
            .collect::<Vec<_>>());
        assert_eq!(falling.distrust(), None);
        let steep = fit(&(17..=48)
            .map(|c| (c, 100_000 - 200 * c))
            .collect::<Vec<_>>());
        assert_eq!(
            steep.distrust(),
            Some(Distrust::BelowZero {
                regressor: Regressor::Context,
                x: 501
            })
        );
        // Noise around a constant: R² near 0.
        let noisy = fit(&(17..=48)
            .map(|c| (c, 1_000 + (c * 7919 % 13) * 50))
            .collect::<Vec<_>>());
        assert!(
            matches!(noisy.distrust(), Some(Distrust::Noisy { r2 }) if r2 < 0.5),
            "{noisy:?}"
        );
        assert_eq!(
            steep.distrust().unwrap().to_string(),
            "below zero at context 501"
        );
        assert_eq!(
            line(6..=12).distrust().unwrap().to_string(),
            "7 passes (a trend needs 16)"
        );
    }
}
