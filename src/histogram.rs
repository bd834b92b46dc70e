//! A fixed-size log-linear histogram of nanosecond durations: O(1) to record, no allocation
//! after construction, exact to merge, and percentiles within a stated relative error.
//!
//! # Layout (spec/hot-path.md, "Histogram")
//! Values below 64 ns have a bucket each (exact). Above that, every power of two `[2^e, 2^(e+1))`
//! is split into 32 equal sub-buckets, so a bucket's width is at most 1/32 of its lower bound.
//! A percentile is reported as its bucket's midpoint, clamped to the recorded `[min, max]`, so it
//! is within [`RELATIVE_ERROR`] (1/64, about 1.6 %) of a recorded value of the right rank.
//! Values of 2^36 ns (about 69 s) and above share the last bucket; `max` stays exact.

use serde::{Deserialize, Serialize};

/// Sub-bucket bits: 2^5 = 32 linear sub-buckets per power of two.
const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;
/// Number of buckets.
pub const BUCKETS: usize = 1024;
/// Upper bound of the relative error of a reported percentile (see the module docs).
pub const RELATIVE_ERROR: f64 = 1.0 / 64.0;

/// Bucket index of a value. Branch-light: one compare, one `leading_zeros`, shifts.
#[inline(always)]
pub fn bucket_index(v: u64) -> usize {
    if v < (2 * SUB) as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS + 1
    let sub = ((v >> (e - SUB_BITS)) as usize) & (SUB - 1);
    let i = ((e - SUB_BITS + 1) as usize) * SUB + sub;
    if i < BUCKETS {
        i
    } else {
        BUCKETS - 1
    }
}

/// `[low, high)` value range of a bucket.
pub fn bucket_range(i: usize) -> (u64, u64) {
    if i < 2 * SUB {
        return (i as u64, i as u64 + 1);
    }
    let e = (i / SUB) as u32 + SUB_BITS - 1;
    let sub = (i % SUB) as u64;
    let shift = e - SUB_BITS;
    let low = ((SUB as u64) + sub) << shift;
    let high = if i == BUCKETS - 1 {
        u64::MAX
    } else {
        low + (1u64 << shift)
    };
    (low, high)
}

/// The log-linear histogram. Counts are `u64`; memory is [`BUCKETS`] × 8 bytes, allocated once.
#[derive(Clone, PartialEq, Eq)]
pub struct LogHistogram {
    counts: Box<[u64; BUCKETS]>,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram {
            counts: Box::new([0; BUCKETS]),
        }
    }
}

impl std::fmt::Debug for LogHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.counts.iter().enumerate().filter(|(_, c)| **c > 0))
            .finish()
    }
}

impl LogHistogram {
    /// Count one value.
    #[inline(always)]
    pub fn record(&mut self, v: u64) {
        let i = bucket_index(v);
        // `i < BUCKETS` by construction; `get_mut` keeps this panic-free without a visible cost.
        if let Some(c) = self.counts.get_mut(i) {
            *c = c.saturating_add(1);
        }
    }

    /// Add another histogram's counts (exact).
    pub fn merge(&mut self, other: &LogHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a = a.saturating_add(*b);
        }
    }

    /// Total number of values counted.
    pub fn len(&self) -> u64 {
        self.counts.iter().fold(0u64, |n, c| n.saturating_add(*c))
    }

    /// True when nothing has been counted.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|c| *c == 0)
    }

    /// Forget every value.
    pub fn clear(&mut self) {
        self.counts.fill(0);
    }

    /// The value at quantile `q` in `[0, 1]` by nearest rank, as its bucket's midpoint
    /// (not clamped; [`crate::BrickStats::percentile_ns`] clamps to `[min, max]`). `None` if empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen = seen.saturating_add(*c);
            if seen >= rank {
                let (lo, hi) = bucket_range(i);
                return Some(if hi - lo <= 1 { lo } else { lo + (hi - lo) / 2 });
            }
        }
        None
    }

    /// Non-empty buckets as `(index, count)`, in index order.
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i, *c))
    }
}

/// Saved form: the non-empty buckets only, as `[index, count]` pairs.
#[derive(Serialize, Deserialize)]
struct SparseHistogram(Vec<(u32, u64)>);

impl Serialize for LogHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SparseHistogram(self.nonzero().map(|(i, c)| (i as u32, c)).collect()).serialize(s)
    }
}

impl<'de> Deserialize<'de> for LogHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let sparse = SparseHistogram::deserialize(d)?;
        let mut h = LogHistogram::default();
        for (i, c) in sparse.0 {
            let slot = h.counts.get_mut(i as usize).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "histogram bucket {i} is out of range (0..{BUCKETS})"
                ))
            })?;
            *slot = slot.saturating_add(c);
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        for v in 0..64u64 {
            assert_eq!(bucket_index(v), v as usize);
            assert_eq!(bucket_range(v as usize), (v, v + 1));
        }
    }

    #[test]
    fn buckets_tile_the_range_without_gaps() {
        for i in 1..BUCKETS {
            assert_eq!(
                bucket_range(i - 1).1,
                bucket_range(i).0,
                "gap before bucket {i}"
            );
        }
    }

    #[test]
    fn every_value_lands_in_its_bucket_and_width_is_bounded() {
        let mut v = 1u64;
        while v < (1u64 << 40) {
            for x in [v, v + 1, v + v / 3, v * 2 - 1] {
                let i = bucket_index(x);
                let (lo, hi) = bucket_range(i);
                assert!(lo <= x && x < hi, "{x} not in bucket {i} [{lo},{hi})");
                if i < BUCKETS - 1 {
                    assert!(
                        (hi - lo) as f64 <= lo as f64 / 32.0 + 1.0,
                        "bucket {i} too wide"
                    );
                }
            }
            v = v * 3 / 2 + 1;
        }
        assert_eq!(bucket_index(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantile_error_is_within_the_stated_bound() {
        // spec/hot-path.md "Histogram": relative error <= 1/64.
        let mut h = LogHistogram::default();
        let values: Vec<u64> = (0..2000u64)
            .map(|i| 1_000 + i * 7_919 % 1_000_003)
            .collect();
        for v in &values {
            h.record(*v);
        }
        let mut sorted = values.clone();
        sorted.sort_unstable();
        for q in [0.01, 0.25, 0.5, 0.9, 0.99, 1.0] {
            let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
            let exact = sorted[rank - 1] as f64;
            let got = h.quantile(q).unwrap() as f64;
            assert!(
                (got - exact).abs() <= exact * RELATIVE_ERROR,
                "q={q}: got {got}, exact {exact}"
            );
        }
    }

    #[test]
    fn merge_adds_counts_and_serde_round_trips() {
        let mut a = LogHistogram::default();
        let mut b = LogHistogram::default();
        a.record(5);
        a.record(5_000);
        b.record(5_000);
        b.record(u64::MAX);
        a.merge(&b);
        assert_eq!(a.len(), 4);
        let json = serde_json::to_string(&a).unwrap();
        let back: LogHistogram = serde_json::from_str(&json).unwrap();
        assert_eq!(a, back);
        assert!(serde_json::from_str::<LogHistogram>("[[5000,1]]").is_err());
    }

    #[test]
    fn empty_histogram_has_no_quantile() {
        assert_eq!(LogHistogram::default().quantile(0.5), None);
    }
}
