//! `--check STAT:THRESHOLD` (spec/divergence.md "Elementwise comparison"): which elementwise
//! statistic decides the verdict of a captured kernel, as Polygraphy's `check_error_stat` does.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::metrics::ErrorStats;

/// An elementwise statistic a check can judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Stat {
    /// Max absolute error (at most the threshold).
    MaxAbs,
    /// Max relative error (at most).
    MaxRel,
    /// Mean absolute error (at most).
    MeanAbs,
    /// p99 absolute error (at most).
    P99Abs,
    /// Cosine similarity (at least).
    Cosine,
    /// SQNR in dB (at least).
    Sqnr,
    /// NMSE (at most).
    Nmse,
}

impl Stat {
    /// Every statistic.
    pub(crate) const ALL: [Stat; 7] = [
        Stat::MaxAbs,
        Stat::MaxRel,
        Stat::MeanAbs,
        Stat::P99Abs,
        Stat::Cosine,
        Stat::Sqnr,
        Stat::Nmse,
    ];

    /// The name on the command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stat::MaxAbs => "max-abs",
            Stat::MaxRel => "max-rel",
            Stat::MeanAbs => "mean-abs",
            Stat::P99Abs => "p99-abs",
            Stat::Cosine => "cosine",
            Stat::Sqnr => "sqnr",
            Stat::Nmse => "nmse",
        }
    }

    /// True when larger is better (cosine, SQNR): the check passes at or above the threshold.
    pub(crate) fn higher_is_better(self) -> bool {
        matches!(self, Stat::Cosine | Stat::Sqnr)
    }

    /// Whether `threshold` makes a check of this statistic meaningful, and if not, why
    /// (spec/divergence.md "Options that mean something"): a threshold some outputs pass and
    /// others fail. The error statistics (max-abs, max-rel, mean-abs, p99-abs, nmse) are never
    /// negative: a threshold is finite and 0 or more (a negative one fails everything, `inf`
    /// passes everything). Cosine lies in [-1, 1]: a threshold is in (-1, 1] (-1 passes
    /// everything, above 1 nothing). SQNR is in dB: a threshold is finite (`-inf` passes
    /// everything, `inf` only bitwise-equal outputs: `max-abs:0` says that).
    pub(crate) fn check_threshold(self, threshold: f64) -> Result<(), &'static str> {
        match self {
            _ if threshold.is_nan() => Err("not a number"),
            Stat::Cosine if threshold > -1.0 && threshold <= 1.0 => Ok(()),
            Stat::Cosine => Err(
                "a cosine threshold is in (-1, 1]: every cosine is at least -1, so -1 passes \
                 everything, and none is above 1",
            ),
            Stat::Sqnr if threshold.is_finite() => Ok(()),
            Stat::Sqnr => Err(
                "an SQNR threshold is a finite number of dB (sqnr:inf passes only bitwise-equal \
                 outputs: say max-abs:0)",
            ),
            _ if threshold.is_finite() && threshold >= 0.0 => Ok(()),
            _ => Err(
                "an error threshold is a finite number, 0 or more: the error is never negative, \
                 so a negative threshold fails everything, and inf passes everything",
            ),
        }
    }

    /// This statistic of `s`.
    pub(crate) fn of(self, s: &ErrorStats) -> f64 {
        match self {
            Stat::MaxAbs => s.max_abs,
            Stat::MaxRel => s.max_rel,
            Stat::MeanAbs => s.mean_abs,
            Stat::P99Abs => s.p99_abs,
            Stat::Cosine => s.cosine,
            Stat::Sqnr => s.sqnr_db,
            Stat::Nmse => s.nmse,
        }
    }
}

/// One check: a statistic and its threshold.
///
/// (Example: the unit test `check_parses_and_passes` in `divergence/tests.rs`.)
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The statistic.
    pub(crate) stat: Stat,
    /// Its threshold: a maximum, or a minimum for cosine and SQNR.
    pub(crate) threshold: f64,
}

impl Check {
    /// True when `s` passes (NaN never passes).
    pub(crate) fn passes(&self, s: &ErrorStats) -> bool {
        let v = self.stat.of(s);
        if self.stat.higher_is_better() {
            v >= self.threshold
        } else {
            v <= self.threshold
        }
    }
}

impl FromStr for Check {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let names = || {
            Stat::ALL
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (stat, threshold) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?} is not STAT:THRESHOLD (e.g. cosine:0.9999, sqnr:40)"))?;
        let stat = Stat::ALL
            .into_iter()
            .find(|x| x.name() == stat.trim())
            .ok_or_else(|| format!("unknown statistic {stat:?} in {s:?} ({})", names()))?;
        let threshold: f64 = threshold
            .trim()
            .parse()
            .ok()
            .filter(|t: &f64| !t.is_nan())
            .ok_or_else(|| format!("threshold {threshold:?} in {s:?} is not a number"))?;
        let check = Check { stat, threshold };
        check.validate().map_err(|why| format!("{s:?}: {why}"))?;
        Ok(check)
    }
}

impl Check {
    /// Whether the threshold makes this check meaningful.
    pub(crate) fn validate(&self) -> Result<(), &'static str> {
        self.stat.check_threshold(self.threshold)
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = if self.stat.higher_is_better() {
            ">="
        } else {
            "<="
        };
        write!(f, "{} {op} {}", self.stat.name(), self.threshold)
    }
}
