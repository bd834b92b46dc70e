//! The memory levels of a cache-aware roofline: [`MemLevel`] names a level (L1, L2, L3, the
//! last-level cache, DRAM), [`CacheRoof`] is one cache level's capacity and bandwidth. The
//! outermost level, DRAM (device memory on a GPU), has no capacity: its bandwidth is
//! [`super::DevicePeaks::gbps`]. spec/work-accounting.md "Cache-aware roofline".

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A memory level: where a brick's per-call working set fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemLevel {
    /// The first-level data cache (a GPU's L1 / shared memory).
    L1,
    /// The second-level cache.
    L2,
    /// A third-level cache that is not the last one.
    L3,
    /// The last-level cache (L3 on most CPUs).
    Llc,
    /// Main memory (a GPU's device memory): no capacity limit.
    Dram,
}

impl MemLevel {
    /// A short label for tables: "L1", "L2", "L3", "LLC", "DRAM".
    pub(crate) fn label(self) -> &'static str {
        match self {
            MemLevel::L1 => "L1",
            MemLevel::L2 => "L2",
            MemLevel::L3 => "L3",
            MemLevel::Llc => "LLC",
            MemLevel::Dram => "DRAM",
        }
    }
}

impl std::fmt::Display for MemLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One cache level's roof: its capacity in bytes and its bandwidth in GB/s. Capacity and
/// bandwidth are positive (checked on construction and on load).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawCacheRoof")]
pub(crate) struct CacheRoof {
    level: MemLevel,
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    bytes: u64,
    gbps: f64,
}

#[derive(Deserialize)]
struct RawCacheRoof {
    level: MemLevel,
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    bytes: u64,
    gbps: f64,
}

impl TryFrom<RawCacheRoof> for CacheRoof {
    type Error = Error;

    fn try_from(r: RawCacheRoof) -> Result<Self> {
        CacheRoof::new(r.level, r.bytes, r.gbps)
    }
}

impl CacheRoof {
    /// A cache level of `bytes` capacity read at `gbps`. The level is not DRAM (which has no
    /// capacity); `bytes` is positive and `gbps` finite and positive.
    pub(crate) fn new(level: MemLevel, bytes: u64, gbps: f64) -> Result<CacheRoof> {
        if level == MemLevel::Dram {
            return Err(Error::Peaks(
                "DRAM is the memory roof (gbps), not a cache level".into(),
            ));
        }
        if bytes == 0 || !(gbps.is_finite() && gbps > 0.0) {
            return Err(Error::Peaks(format!(
                "cache level {level} needs a positive capacity and bandwidth (got {bytes} \
                 bytes, {gbps} GB/s)"
            )));
        }
        Ok(CacheRoof { level, bytes, gbps })
    }

    /// Which level.
    pub(crate) fn level(&self) -> MemLevel {
        self.level
    }

    /// Capacity in bytes.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bandwidth in GB/s.
    pub(crate) fn gbps(&self) -> f64 {
        self.gbps
    }
}

/// Check a list of cache roofs: innermost first, capacities strictly increasing, each level
/// once, at most four.
pub(crate) fn check_levels(levels: &[CacheRoof]) -> Result<()> {
    if levels.len() > 4 {
        return Err(Error::Peaks(format!(
            "at most 4 cache levels (got {})",
            levels.len()
        )));
    }
    for w in levels.windows(2) {
        if w[1].bytes <= w[0].bytes || w[1].level <= w[0].level {
            return Err(Error::Peaks(format!(
                "cache levels must be innermost first with growing capacities ({} of {} bytes \
                 before {} of {} bytes)",
                w[0].level, w[0].bytes, w[1].level, w[1].bytes
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of `CacheRoof::new` (its doc example until it became crate-internal), on
    /// the crate's own reader.
    #[test]
    fn a_roof_keeps_its_capacity() {
        let l1 = CacheRoof::new(MemLevel::L1, 32 << 10, 150.0).unwrap();
        assert_eq!(l1.bytes(), 32768);
        assert!(CacheRoof::new(MemLevel::L1, 32 << 10, 150.0).is_ok());
        assert!(CacheRoof::new(MemLevel::Dram, 1, 1.0).is_err());
    }

    #[test]
    fn levels_must_grow_inward_out() {
        // spec/work-accounting.md "Cache-aware roofline"
        let l1 = CacheRoof::new(MemLevel::L1, 32 << 10, 200.0).unwrap();
        let l2 = CacheRoof::new(MemLevel::L2, 512 << 10, 100.0).unwrap();
        assert!(check_levels(&[l1, l2]).is_ok());
        assert!(check_levels(&[l2, l1]).is_err());
        assert!(check_levels(&[l1, l1]).is_err());
        assert!(CacheRoof::new(MemLevel::L2, 0, 1.0).is_err());
        assert!(CacheRoof::new(MemLevel::L2, 1, f64::NAN).is_err());
    }
}
