//! [`BrickStats`]: the O(1), allocation-free statistics kept for every brick, (layer, brick)
//! cell, category and tile, and everything derived from them (mean, spread, percentiles, rates).
//!
//! Sums are exact integers (`u64` nanoseconds, `u128` squared nanoseconds), so two stats merge
//! exactly and associatively, and the variance does not suffer from catastrophic cancellation.

use serde::{Deserialize, Serialize};

use crate::base::exact_int;
use crate::model::work::Work;
use crate::stats::histogram::LogHistogram;

/// Statistics of a stream of durations (nanoseconds) with the work done in them.
///
/// Each measurement has an *inclusive* duration (its own start to its own stop) and a *self*
/// duration (inclusive minus the bricks nested directly inside it, spec/hot-path.md "Self
/// time"). The histogram, min, max and percentiles describe inclusive durations; [`Summary::self_ns`]
/// sums self durations, which is what shares and totals add up.
///
/// Fields are private: every `BrickStats` holds its invariants (the histogram counts `count`
/// values, `min <= max`, `self <= total`), whether built by recording or loaded from a file,
/// where a violation is an error naming the field. Counts saturate instead of wrapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawStats", into = "RawStats")]
// `repr(C)`: the fields every record updates come first, in the cell's first two cache lines
// (the resolve loop prefetches those), the histogram after them.
#[repr(C)]
pub struct BrickStats {
    count: u64,
    total_ns: u64,
    self_ns: u64,
    /// `u64::MAX` while empty; read it with [`Self::min_ns`].
    min_raw: u64,
    max_ns: u64,
    host_total_ns: u64,
    sum_sq_ns2: u128,
    work: Work,
    histogram: LogHistogram,
}

/// What a [`BrickStats`] holds, as plain numbers ([`BrickStats::summary`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of measurements.
    pub count: u64,
    /// Sum of the inclusive durations, in ns. In sync mode `None` these are host dispatch
    /// times.
    pub total_ns: u64,
    /// Sum of the self durations (inclusive minus nested bricks), in ns: `total_ns` for a brick
    /// with nothing nested in it.
    pub self_ns: u64,
    /// Shortest measurement in ns (0 when empty).
    pub min_ns: u64,
    /// Longest measurement in ns (0 when empty).
    pub max_ns: u64,
    /// Mean duration in ns (0 when empty).
    pub mean_ns: f64,
    /// Sum of host-side time between `start` and `stop` calls (dispatch), in ns.
    pub host_total_ns: u64,
    /// Total work recorded with the measurements.
    pub work: Work,
    /// Elements per second over the total time (0 when no time was recorded).
    pub elements_per_sec: f64,
}

/// The saved form of [`BrickStats`], checked on load (spec/profile-format.md "The profile file",
/// `BrickStats`).
#[derive(Serialize, Deserialize)]
struct RawStats {
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    count: u64,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    total_ns: u64,
    /// Absent in format version 1 (no nesting): self time is then the total.
    #[serde(
        default,
        serialize_with = "ser_opt_u64",
        deserialize_with = "de_opt_u64",
        skip_serializing_if = "Option::is_none"
    )]
    self_ns: Option<u64>,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    min_ns: u64,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    max_ns: u64,
    #[serde(
        serialize_with = "exact_int::ser_u128",
        deserialize_with = "exact_int::de_u128"
    )]
    sum_sq_ns2: u128,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    host_total_ns: u64,
    work: Work,
    histogram: LogHistogram,
}

fn ser_opt_u64<S: serde::Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => exact_int::ser_u64(v, s),
        None => s.serialize_none(),
    }
}

fn de_opt_u64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    exact_int::de_u64(d).map(Some)
}

impl From<BrickStats> for RawStats {
    fn from(s: BrickStats) -> Self {
        RawStats {
            count: s.count,
            total_ns: s.total_ns,
            self_ns: Some(s.self_ns),
            min_ns: s.min_raw,
            max_ns: s.max_ns,
            sum_sq_ns2: s.sum_sq_ns2,
            host_total_ns: s.host_total_ns,
            work: s.work,
            histogram: s.histogram,
        }
    }
}

impl TryFrom<RawStats> for BrickStats {
    type Error = String;

    fn try_from(r: RawStats) -> Result<Self, String> {
        let self_ns = r.self_ns.unwrap_or(r.total_ns);
        let in_hist = r.histogram.len();
        // A saturated bucket (2^32 - 1 values) may hold fewer than were recorded.
        if in_hist != r.count && !(r.histogram.is_saturated() && in_hist < r.count) {
            return Err(format!(
                "stats: the histogram counts {in_hist} values but count is {}",
                r.count
            ));
        }
        if self_ns > r.total_ns {
            return Err(format!(
                "stats: self_ns {self_ns} exceeds total_ns {}",
                r.total_ns
            ));
        }
        if r.count == 0 {
            if r.total_ns != 0 || r.max_ns != 0 || r.sum_sq_ns2 != 0 {
                return Err("stats: count is 0 but total_ns, max_ns or sum_sq_ns2 is not".into());
            }
        } else {
            if r.min_ns > r.max_ns {
                return Err(format!(
                    "stats: min_ns {} exceeds max_ns {}",
                    r.min_ns, r.max_ns
                ));
            }
            // Both bounds hold under saturation too: a saturated total is u64::MAX.
            if r.total_ns < r.max_ns || r.total_ns < r.min_ns.saturating_mul(r.count) {
                return Err(format!(
                    "stats: total_ns {} is less than its {} values allow (min {}, max {})",
                    r.total_ns, r.count, r.min_ns, r.max_ns
                ));
            }
            if r.total_ns > r.max_ns.saturating_mul(r.count) {
                return Err(format!(
                    "stats: total_ns {} exceeds count {} x max_ns {}",
                    r.total_ns, r.count, r.max_ns
                ));
            }
        }
        Ok(BrickStats {
            count: r.count,
            total_ns: r.total_ns,
            self_ns,
            min_raw: if r.count == 0 { u64::MAX } else { r.min_ns },
            max_ns: r.max_ns,
            sum_sq_ns2: r.sum_sq_ns2,
            host_total_ns: r.host_total_ns,
            work: r.work,
            histogram: r.histogram,
        })
    }
}

impl Default for BrickStats {
    fn default() -> Self {
        BrickStats {
            count: 0,
            total_ns: 0,
            self_ns: 0,
            min_raw: u64::MAX,
            max_ns: 0,
            sum_sq_ns2: 0,
            host_total_ns: 0,
            work: Work::NONE,
            histogram: LogHistogram::default(),
        }
    }
}

impl BrickStats {
    /// Bytes one `BrickStats` takes, its histogram included (it is inline: what each
    /// statistics cell of a profiler costs).
    #[cfg(test)]
    pub(crate) const MEMORY_BYTES: usize = std::mem::size_of::<BrickStats>();

    /// Empty statistics (`BrickStats::default()` outside the crate).
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Record one measurement with nothing nested in it: `ns` of timed duration (inclusive and
    /// self), `host_ns` of host dispatch time, and the work done. O(1), no allocation, no panic
    /// (sums saturate). [`Self::record_nested`] with `self_ns = ns`.
    #[inline(always)]
    pub(crate) fn record(&mut self, ns: u64, host_ns: u64, work: Work) {
        self.record_nested(ns, ns, host_ns, work);
    }

    /// Record one measurement of inclusive duration `ns`, of which `self_ns` was not spent in
    /// bricks nested inside it (clamped to `ns`), with `host_ns` of host dispatch time and the
    /// work done. O(1), no allocation, no panic (sums saturate).
    ///
    /// ```
    /// use brickprof::{stats::BrickStats, Work};
    /// let mut s = BrickStats::default();
    /// s.record_nested(1_000, 250, 1_000, Work::default());
    /// assert_eq!((s.summary().total_ns, s.summary().self_ns), (1_000, 250));
    /// s.record_nested(300, 300, 300, Work::default()); // nothing nested: self = inclusive
    /// let n = s.summary();
    /// assert_eq!((n.count, n.min_ns, n.max_ns), (2, 300, 1_000));
    /// assert_eq!(n.mean_ns, 650.0);
    /// ```
    #[inline(always)]
    pub fn record_nested(&mut self, ns: u64, self_ns: u64, host_ns: u64, work: Work) {
        self.count = self.count.saturating_add(1);
        self.total_ns = self.total_ns.saturating_add(ns);
        self.self_ns = self.self_ns.saturating_add(self_ns.min(ns));
        self.min_raw = self.min_raw.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_sq_ns2 = self
            .sum_sq_ns2
            .saturating_add(u128::from(ns) * u128::from(ns));
        self.host_total_ns = self.host_total_ns.saturating_add(host_ns);
        self.work = self.work + work;
        self.histogram.record(ns);
    }

    /// Add another's measurements to these (exact, associative, commutative; saturating).
    pub fn merge(&mut self, other: &BrickStats) {
        self.count = self.count.saturating_add(other.count);
        self.total_ns = self.total_ns.saturating_add(other.total_ns);
        self.self_ns = self.self_ns.saturating_add(other.self_ns);
        self.min_raw = self.min_raw.min(other.min_raw);
        self.max_ns = self.max_ns.max(other.max_ns);
        self.sum_sq_ns2 = self.sum_sq_ns2.saturating_add(other.sum_sq_ns2);
        self.host_total_ns = self.host_total_ns.saturating_add(other.host_total_ns);
        self.work = self.work + other.work;
        self.histogram.merge(&other.histogram);
    }

    /// The merge of many stats.
    pub(crate) fn merged<'a>(all: impl IntoIterator<Item = &'a BrickStats>) -> BrickStats {
        let mut out = BrickStats::new();
        for s in all {
            out.merge(s);
        }
        out
    }

    /// The numbers these statistics hold, read at once (the percentiles:
    /// [`Self::percentile_ns`]).
    ///
    /// ```
    /// use brickprof::{stats::BrickStats, Work};
    /// let mut s = BrickStats::default();
    /// s.record_nested(1_000, 250, 1_000, Work::elements(4));
    /// s.record_nested(300, 300, 300, Work::elements(4));
    /// let n = s.summary();
    /// assert_eq!((n.count, n.total_ns, n.self_ns), (2, 1_300, 550));
    /// assert_eq!((n.min_ns, n.max_ns, n.mean_ns), (300, 1_000, 650.0));
    /// assert_eq!(n.work.elements, 8);
    /// ```
    pub fn summary(&self) -> Summary {
        Summary {
            count: self.count(),
            total_ns: self.total_ns(),
            self_ns: self.self_ns(),
            min_ns: self.min_ns(),
            max_ns: self.max_ns(),
            mean_ns: self.mean_ns(),
            host_total_ns: self.host_total_ns(),
            work: self.work(),
            elements_per_sec: self.elements_per_sec(),
        }
    }

    /// Number of measurements.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the inclusive durations, in ns. In sync mode `None` these are host dispatch times.
    pub(crate) fn total_ns(&self) -> u64 {
        self.total_ns
    }

    /// Sum of the self durations (inclusive minus nested bricks), in ns. Equal to
    /// [`Self::total_ns`] for a brick with nothing nested in it.
    pub(crate) fn self_ns(&self) -> u64 {
        self.self_ns
    }

    /// Longest measurement in ns (0 when empty).
    pub(crate) fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// Sum of host-side time between `start` and `stop` calls (dispatch), in ns.
    pub(crate) fn host_total_ns(&self) -> u64 {
        self.host_total_ns
    }

    /// Total work recorded with the measurements.
    pub(crate) fn work(&self) -> Work {
        self.work
    }

    /// The histogram of inclusive durations.
    pub(crate) fn histogram(&self) -> &LogHistogram {
        &self.histogram
    }

    /// Forget every measurement.
    pub(crate) fn clear(&mut self) {
        *self = BrickStats {
            histogram: std::mem::take(&mut self.histogram),
            ..BrickStats::default()
        };
        self.histogram.clear();
    }

    /// True when nothing was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Shortest measurement in ns (0 when empty).
    pub(crate) fn min_ns(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min_raw
        }
    }

    /// Mean duration in ns (0 when empty).
    pub(crate) fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_ns as f64 / self.count as f64
        }
    }

    /// Population standard deviation in ns (0 when fewer than two measurements).
    pub(crate) fn std_dev_ns(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        // n·Σx² − (Σx)², exact in u128 while it fits; f64 otherwise.
        let n = u128::from(self.count);
        let s = u128::from(self.total_ns);
        let var = match (
            n.checked_mul(self.sum_sq_ns2),
            s.checked_mul(s),
            n.checked_mul(n),
        ) {
            (Some(a), Some(b), Some(nn)) => a.saturating_sub(b) as f64 / nn as f64,
            _ => {
                let mean = self.mean_ns();
                (self.sum_sq_ns2 as f64 / self.count as f64 - mean * mean).max(0.0)
            }
        };
        var.sqrt()
    }

    /// The duration at quantile `q` (0.5 = median), within the histogram's relative error
    /// (1/32) and clamped to `[min, max]`. 0 when empty.
    pub fn percentile_ns(&self, q: f64) -> u64 {
        match self.histogram.quantile(q) {
            Some(v) => v.clamp(self.min_ns(), self.max_ns),
            None => 0,
        }
    }

    /// Median duration in ns.
    pub(crate) fn p50_ns(&self) -> u64 {
        self.percentile_ns(0.50)
    }

    /// 90th percentile in ns.
    pub(crate) fn p90_ns(&self) -> u64 {
        self.percentile_ns(0.90)
    }

    /// 99th percentile in ns.
    pub(crate) fn p99_ns(&self) -> u64 {
        self.percentile_ns(0.99)
    }

    /// Mean host dispatch time per call in ns.
    pub(crate) fn host_mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.host_total_ns as f64 / self.count as f64
        }
    }

    /// Elements per second over the total time (0 when no time was recorded).
    pub(crate) fn elements_per_sec(&self) -> f64 {
        per_sec(self.work.elements, self.total_ns)
    }

    /// Achieved GFLOP/s (FLOPs per nanosecond). 0 when no time or no FLOPs were recorded.
    pub(crate) fn gflops(&self) -> f64 {
        per_ns(self.work.flops, self.total_ns)
    }

    /// Achieved GB/s (bytes per nanosecond). 0 when no time or no bytes were recorded.
    pub(crate) fn gbps(&self) -> f64 {
        per_ns(self.work.bytes, self.total_ns)
    }

    /// Arithmetic intensity in FLOPs per byte, from the bytes the caller gave. `None` when no
    /// bytes were recorded (intensity is undefined, never infinite).
    pub(crate) fn arithmetic_intensity(&self) -> Option<f64> {
        if self.work.bytes == 0 {
            None
        } else {
            Some(self.work.flops as f64 / self.work.bytes as f64)
        }
    }
}

/// `count / ns` (per nanosecond); 0 for zero time.
pub(crate) fn per_ns(count: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        count as f64 / ns as f64
    }
}

/// `count / seconds`; 0 for zero time.
pub(crate) fn per_sec(count: u64, ns: u64) -> f64 {
    per_ns(count, ns) * 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_stats_derive_zeros_not_nan() {
        let s = BrickStats::new();
        assert_eq!(s.min_ns(), 0);
        assert_eq!(s.mean_ns(), 0.0);
        assert_eq!(s.std_dev_ns(), 0.0);
        assert_eq!(s.p99_ns(), 0);
        assert_eq!(s.gflops(), 0.0);
        assert_eq!(s.elements_per_sec(), 0.0);
        assert_eq!(s.arithmetic_intensity(), None);
    }

    #[test]
    fn std_dev_matches_definition() {
        let mut s = BrickStats::new();
        let xs = [2u64, 4, 4, 4, 5, 5, 7, 9];
        for x in xs {
            s.record(x, 0, Work::NONE);
        }
        assert_eq!(s.std_dev_ns(), 2.0);
        assert_eq!(s.mean_ns(), 5.0);
        assert_eq!(s.p50_ns(), 4);
        assert_eq!(s.percentile_ns(1.0), 9);
        assert_eq!(s.percentile_ns(0.0), 2);
    }

    #[test]
    fn merge_equals_recording_into_one() {
        let mut a = BrickStats::new();
        let mut b = BrickStats::new();
        let mut all = BrickStats::new();
        for (i, x) in [10u64, 2000, 30, 4_000_000, 50].iter().enumerate() {
            let w = Work {
                elements: i as u64,
                flops: 3,
                bytes: 4,
            };
            if i % 2 == 0 { &mut a } else { &mut b }.record(*x, *x / 2, w);
            all.record(*x, *x / 2, w);
        }
        a.merge(&b);
        assert_eq!(a, all);
    }

    #[test]
    fn rates_and_intensity() {
        let mut s = BrickStats::new();
        s.record(
            1_000,
            1_000,
            Work {
                elements: 10,
                flops: 4_000,
                bytes: 2_000,
            },
        );
        assert_eq!(s.gflops(), 4.0);
        assert_eq!(s.gbps(), 2.0);
        assert_eq!(s.arithmetic_intensity(), Some(2.0));
        assert_eq!(s.elements_per_sec(), 1e7);
    }

    #[test]
    fn clear_forgets_everything() {
        let mut s = BrickStats::new();
        s.record(5, 5, Work::elements(1));
        s.clear();
        assert_eq!(s, BrickStats::new());
    }
}
