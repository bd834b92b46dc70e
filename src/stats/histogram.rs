//! A fixed-size log-linear histogram of nanosecond durations: O(1) to record, no allocation
//! after construction, exact to merge, and percentiles within a stated relative error.
//!
//! # Layout (spec/hot-path.md, "Histogram")
//! Values below 32 ns have a bucket each (exact). Above that, every power of two `[2^e, 2^(e+1))`
//! is split into 16 equal sub-buckets, so a bucket's width is at most 1/16 of its lower bound.
//! A percentile is reported as its bucket's midpoint, clamped to the recorded `[min, max]`, so it
//! is within [`RELATIVE_ERROR`] (1/32, about 3.1 %) of a recorded value of the right rank.
//! Values of 2^36 ns (about 69 s) and above share the last bucket; `max` stays exact.
//!
//! The counts are `u32` (2,112 bytes a histogram), so that every (layer, brick) cell of a
//! 128-layer model keeps its own histogram in a few MiB and recording stays within the
//! processor's TLB reach; a bucket saturates at 2^32 - 1 values (about 50 days of one brick
//! in one layer at 1 µs a call) instead of wrapping.

use serde::{Deserialize, Serialize};

/// Sub-bucket bits: 2^4 = 16 linear sub-buckets per power of two.
const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
/// Number of buckets.
pub(crate) const BUCKETS: usize = 528;
/// Upper bound of the relative error of a reported percentile (see the module docs).
#[cfg(test)]
pub(crate) const RELATIVE_ERROR: f64 = 1.0 / 32.0;

/// Bucket index of a value. Branch-free: one `leading_zeros`, two shifts, one clamp. With
/// `e` the top bit of `v | 16` and `s = e - 4`: `(s << 4) + (v >> s)`, which is `v` itself below
/// 32 and `(e - 3) * 16 + sub-bucket` above.
#[inline(always)]
pub(crate) fn bucket_index(v: u64) -> usize {
    let e = 63 - (v | SUB as u64).leading_zeros(); // >= SUB_BITS
    let s = e - SUB_BITS;
    let i = ((s as usize) << SUB_BITS) + (v >> s) as usize;
    i.min(BUCKETS - 1)
}

/// `[low, high)` value range of a bucket.
pub(crate) fn bucket_range(i: usize) -> (u64, u64) {
    range_in(i, SUB_BITS, BUCKETS)
}

/// `[low, high)` of bucket `i` of a log-linear layout with `sub_bits` and `buckets` buckets.
fn range_in(i: usize, sub_bits: u32, buckets: usize) -> (u64, u64) {
    let sub_n = 1usize << sub_bits;
    if i < 2 * sub_n {
        return (i as u64, i as u64 + 1);
    }
    let e = (i / sub_n) as u32 + sub_bits - 1;
    let sub = (i % sub_n) as u64;
    let shift = e - sub_bits;
    let low = ((sub_n as u64) + sub) << shift;
    let high = if i == buckets - 1 {
        u64::MAX
    } else {
        low + (1u64 << shift)
    };
    (low, high)
}

/// The log-linear histogram. Memory is one `u32` per bucket, allocated once
/// ([`LogHistogram::MEMORY_BYTES`] in all).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct LogHistogram {
    counts: [u32; BUCKETS],
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram {
            counts: [0; BUCKETS],
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
    /// Bytes one histogram takes.
    #[cfg(test)]
    pub(crate) const MEMORY_BYTES: usize = BUCKETS * std::mem::size_of::<u32>();

    /// Count one value.
    #[inline(always)]
    pub(crate) fn record(&mut self, v: u64) {
        let i = bucket_index(v);
        // `i < BUCKETS` by construction; `get_mut` keeps this panic-free without a visible cost.
        if let Some(c) = self.counts.get_mut(i) {
            *c = c.saturating_add(1);
        }
    }

    /// Add another histogram's counts (exact below saturation).
    pub(crate) fn merge(&mut self, other: &LogHistogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a = a.saturating_add(*b);
        }
    }

    /// Total number of values counted.
    pub(crate) fn len(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }

    /// True when a bucket reached its limit (2^32 - 1): `len()` may then be below the number
    /// of values recorded.
    pub(crate) fn is_saturated(&self) -> bool {
        self.counts.contains(&u32::MAX)
    }

    /// Forget every value.
    pub(crate) fn clear(&mut self) {
        self.counts.fill(0);
    }

    /// The value at quantile `q` in `[0, 1]` by nearest rank, as its bucket's midpoint
    /// (not clamped; [`crate::stats::BrickStats::percentile_ns`] clamps to `[min, max]`). `None` if empty.
    pub(crate) fn quantile(&self, q: f64) -> Option<u64> {
        let n = self.len();
        if n == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen += u64::from(*c);
            if seen >= rank {
                let (lo, hi) = bucket_range(i);
                return Some(if hi - lo <= 1 { lo } else { lo + (hi - lo) / 2 });
            }
        }
        None
    }

    /// Non-empty buckets as `(index, count)`, in index order.
    pub(crate) fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (i, u64::from(*c)))
    }

    /// Add `count` values to the bucket holding `value`.
    fn add(&mut self, value: u64, count: u64) {
        let c = &mut self.counts[bucket_index(value)];
        *c = c.saturating_add(u32::try_from(count).unwrap_or(u32::MAX));
    }
}

/// Saved form (spec/profile-format.md "The profile file", a brick's `stats`): version 2 writes the
/// non-empty buckets as `{"floors": [[lowest value of the bucket in ns, count], ...]}`, which any
/// finer or equal log-linear layout reads back exactly; version 1 wrote `[[index, count], ...]` of
/// the 1024-bucket layout with 32 sub-buckets, which is read and mapped onto the current buckets
/// (each old bucket lies inside one new bucket).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum SavedHistogram {
    Floors {
        floors: Vec<(crate::base::exact_int::U64, crate::base::exact_int::U64)>,
    },
    V1Indices(Vec<(u32, u64)>),
}

/// The version-1 layout: 32 sub-buckets per power of two, 1024 buckets.
const V1_SUB_BITS: u32 = 5;
const V1_BUCKETS: usize = 1024;

impl Serialize for LogHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        SavedHistogram::Floors {
            floors: self
                .nonzero()
                .map(|(i, c)| {
                    (
                        crate::base::exact_int::U64(bucket_range(i).0),
                        crate::base::exact_int::U64(c),
                    )
                })
                .collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LogHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut h = LogHistogram::default();
        match SavedHistogram::deserialize(d)? {
            SavedHistogram::Floors { floors } => {
                for (crate::base::exact_int::U64(floor), crate::base::exact_int::U64(c)) in floors {
                    if bucket_range(bucket_index(floor)).0 != floor {
                        return Err(serde::de::Error::custom(format!(
                            "histogram: {floor} ns is not the floor of a bucket"
                        )));
                    }
                    h.add(floor, c);
                }
            }
            SavedHistogram::V1Indices(pairs) => {
                for (i, c) in pairs {
                    if i as usize >= V1_BUCKETS {
                        return Err(serde::de::Error::custom(format!(
                            "histogram bucket {i} is out of range (0..{V1_BUCKETS})"
                        )));
                    }
                    h.add(range_in(i as usize, V1_SUB_BITS, V1_BUCKETS).0, c);
                }
            }
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        for v in 0..32u64 {
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
                        (hi - lo) as f64 <= lo as f64 / 16.0 + 1.0,
                        "bucket {i} too wide"
                    );
                }
            }
            v = v * 3 / 2 + 1;
        }
        assert_eq!(bucket_index(u64::MAX), BUCKETS - 1);
        for x in 0..4096u64 {
            let (lo, hi) = bucket_range(bucket_index(x));
            assert!(lo <= x && x < hi, "{x} not in [{lo},{hi})");
            if x < 32 {
                assert_eq!(bucket_index(x) as u64, x, "exact below 32");
            }
        }
    }

    #[test]
    fn quantile_error_is_within_the_stated_bound() {
        // spec/hot-path.md "Histogram": relative error <= 1/32.
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
        assert!(serde_json::from_str::<LogHistogram>(r#"{"floors":[[33,1]]}"#).is_err());
    }

    #[test]
    fn version_1_buckets_map_into_the_current_ones() {
        // spec/profile-format.md "Versions": v1 bucket 300 of the 32-sub-bucket layout.
        let (lo, hi) = range_in(300, V1_SUB_BITS, V1_BUCKETS);
        let h: LogHistogram = serde_json::from_str("[[300,7],[5,2]]").unwrap();
        let i = bucket_index(lo);
        assert_eq!(
            bucket_index(hi - 1),
            i,
            "an old bucket lies inside one new bucket"
        );
        assert_eq!(h.nonzero().collect::<Vec<_>>(), vec![(5, 2), (i, 7)]);
    }

    #[test]
    fn empty_histogram_has_no_quantile() {
        assert_eq!(LogHistogram::default().quantile(0.5), None);
    }
}
