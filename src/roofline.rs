//! The roofline: [`DevicePeaks`] (peak GFLOP/s and GB/s, from a preset or the user) and
//! [`Roofline::classify`], which says whether a brick or tile is memory-bound or compute-bound
//! and what fraction of the roof above it it reaches. Every number is defined in
//! `spec/work-accounting.md`. [`peaks`] measures this CPU's peaks.

pub mod peaks;

use serde::{Deserialize, Serialize};

use crate::{BrickStats, Error, Result};

/// A device's peak compute and memory bandwidth. Both peaks are finite and positive, whether
/// built here or loaded from a file (a bad file is an error naming the field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawPeaks")]
pub struct DevicePeaks {
    name: String,
    gflops: f64,
    gbps: f64,
}

/// The saved form of [`DevicePeaks`], checked on load.
#[derive(Deserialize)]
struct RawPeaks {
    name: String,
    gflops: f64,
    gbps: f64,
}

impl TryFrom<RawPeaks> for DevicePeaks {
    type Error = Error;

    fn try_from(r: RawPeaks) -> Result<Self> {
        DevicePeaks::new(r.name, r.gflops, r.gbps)
    }
}

/// Built-in presets: dense fp16/bf16 matrix peaks and HBM bandwidth from the vendors' data
/// sheets. Use them as a yardstick; pass measured values for precise work.
pub const PRESETS: &[(&str, f64, f64)] = &[
    ("mi300x", 1_307_400.0, 5_300.0),
    ("mi250x", 383_000.0, 3_276.8),
    ("mi210", 181_000.0, 1_638.4),
    ("h100-sxm", 989_400.0, 3_350.0),
    ("a100-sxm", 312_000.0, 2_039.0),
    ("rtx4090", 165_200.0, 1_008.0),
];

impl DevicePeaks {
    /// Peaks given by the user. Both must be finite and positive.
    ///
    /// ```
    /// use brickprof::DevicePeaks;
    /// let p = DevicePeaks::new("my gpu", 100_000.0, 2_000.0).unwrap();
    /// assert_eq!(p.ridge_point(), 50.0);
    /// assert!(DevicePeaks::new("bad", 0.0, 1.0).is_err());
    /// ```
    pub fn new(name: impl Into<String>, gflops: f64, gbps: f64) -> Result<DevicePeaks> {
        let ok = |v: f64| v.is_finite() && v > 0.0;
        if !ok(gflops) || !ok(gbps) {
            return Err(Error::InvalidArgument(format!(
                "device peaks must be positive numbers (got {gflops} GFLOP/s, {gbps} GB/s)"
            )));
        }
        Ok(DevicePeaks {
            name: name.into(),
            gflops,
            gbps,
        })
    }

    /// What these peaks describe ("mi300x", "measured cpu", ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Peak compute in GFLOP/s (10^9 FLOPs per second).
    pub fn gflops(&self) -> f64 {
        self.gflops
    }

    /// Peak memory bandwidth in GB/s (10^9 bytes per second).
    pub fn gbps(&self) -> f64 {
        self.gbps
    }

    /// A preset by name (case-insensitive): see [`PRESETS`].
    pub fn preset(name: &str) -> Result<DevicePeaks> {
        let key = name.trim().to_ascii_lowercase();
        PRESETS
            .iter()
            .find(|(n, _, _)| *n == key)
            .map(|&(n, f, b)| DevicePeaks {
                name: n.to_string(),
                gflops: f,
                gbps: b,
            })
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "unknown device preset {name:?}; presets: {}; or give GFLOPS,GBPS",
                    PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
                ))
            })
    }

    /// Parse `PRESET` or `GFLOPS,GBPS` (as on the command line).
    ///
    /// ```
    /// use brickprof::DevicePeaks;
    /// assert_eq!(DevicePeaks::parse("1000,50").unwrap().gbps(), 50.0);
    /// assert_eq!(DevicePeaks::parse("MI300X").unwrap().name(), "mi300x");
    /// ```
    pub fn parse(s: &str) -> Result<DevicePeaks> {
        match s.split_once(',') {
            Some((f, b)) => {
                let num = |x: &str| {
                    x.trim().parse::<f64>().map_err(|_| {
                        Error::InvalidArgument(format!(
                            "{x:?} in {s:?} is not a number (expected GFLOPS,GBPS)"
                        ))
                    })
                };
                DevicePeaks::new("user", num(f)?, num(b)?)
            }
            None => DevicePeaks::preset(s),
        }
    }

    /// The arithmetic intensity (FLOPs/byte) where the memory roof meets the compute roof.
    pub fn ridge_point(&self) -> f64 {
        self.gflops / self.gbps
    }
}

/// Which roof limits a brick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// Under the sloped memory roof: intensity below the ridge point.
    Memory,
    /// Under the flat compute roof: intensity at or above the ridge point.
    Compute,
    /// No FLOPs and no bytes recorded: nothing to judge.
    Unknown,
}

impl Bound {
    /// A short label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Unknown => "-",
        }
    }
}

/// Where a brick or tile sits under the roofline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Roofline {
    /// Which roof limits it.
    pub bound: Bound,
    /// The roof above it, in GFLOP/s (or GB/s when it has bytes but no FLOPs). 0 if unknown.
    pub roof: f64,
    /// Achieved rate as a percentage of that roof (0 when unknown or no time).
    pub roof_pct: f64,
}

impl Roofline {
    /// Classify `stats` under `peaks`. Never NaN: zero time, zero FLOPs or zero bytes give
    /// defined results (see spec/work-accounting.md "Roofline").
    ///
    /// ```
    /// use brickprof::{BrickStats, DevicePeaks, Roofline, Work, roofline::Bound};
    /// let peaks = DevicePeaks::new("toy", 1_000.0, 100.0).unwrap(); // ridge: 10 FLOP/B
    /// let mut s = BrickStats::new();
    /// s.record(1_000, 1_000, Work::NONE.with_flops(20_000).with_bytes(10_000)); // AI 2
    /// let r = Roofline::classify(&s, &peaks);
    /// assert_eq!(r.bound, Bound::Memory);
    /// assert_eq!(r.roof, 200.0);      // 2 FLOP/B x 100 GB/s
    /// assert_eq!(r.roof_pct, 10.0);   // 20 GFLOP/s achieved
    /// ```
    pub fn classify(stats: &BrickStats, peaks: &DevicePeaks) -> Roofline {
        let (flops, bytes) = (stats.work().flops, stats.work().bytes);
        let (bound, roof, achieved) = match (flops > 0, bytes > 0) {
            (true, true) => {
                let ai = flops as f64 / bytes as f64;
                let roof = peaks.gflops.min(ai * peaks.gbps);
                let bound = if ai < peaks.ridge_point() {
                    Bound::Memory
                } else {
                    Bound::Compute
                };
                (bound, roof, stats.gflops())
            }
            (false, true) => (Bound::Memory, peaks.gbps, stats.gbps()),
            (true, false) => (Bound::Compute, peaks.gflops, stats.gflops()),
            (false, false) => (Bound::Unknown, 0.0, 0.0),
        };
        let roof_pct = if roof > 0.0 {
            achieved / roof * 100.0
        } else {
            0.0
        };
        Roofline {
            bound,
            roof,
            roof_pct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Work;

    fn stats(ns: u64, flops: u64, bytes: u64) -> BrickStats {
        let mut s = BrickStats::new();
        s.record(ns, ns, Work::NONE.with_flops(flops).with_bytes(bytes));
        s
    }

    #[test]
    fn hand_computed_cases() {
        // spec/work-accounting.md "Roofline": ridge = 1000 / 100 = 10 FLOP/B.
        let p = DevicePeaks::new("toy", 1_000.0, 100.0).unwrap();
        // AI 20 >= 10: compute-bound; 500 GFLOP/s achieved of a 1000 roof.
        let r = Roofline::classify(&stats(1_000, 500_000, 25_000), &p);
        assert_eq!(
            (r.bound, r.roof, r.roof_pct),
            (Bound::Compute, 1_000.0, 50.0)
        );
        // Exactly at the ridge counts as compute-bound.
        let r = Roofline::classify(&stats(1_000, 1_000, 100), &p);
        assert_eq!(r.bound, Bound::Compute);
        // Bytes only: against the bandwidth roof. 50 GB/s of 100.
        let r = Roofline::classify(&stats(1_000, 0, 50_000), &p);
        assert_eq!((r.bound, r.roof, r.roof_pct), (Bound::Memory, 100.0, 50.0));
        // FLOPs only: against the compute roof.
        let r = Roofline::classify(&stats(1_000, 100_000, 0), &p);
        assert_eq!((r.bound, r.roof_pct), (Bound::Compute, 10.0));
    }

    #[test]
    fn zero_time_and_zero_work_give_no_nan() {
        let p = DevicePeaks::new("toy", 1_000.0, 100.0).unwrap();
        for s in [
            stats(0, 100, 100),
            stats(0, 0, 0),
            stats(10, 0, 0),
            BrickStats::new(),
        ] {
            let r = Roofline::classify(&s, &p);
            assert!(r.roof.is_finite() && r.roof_pct.is_finite(), "{r:?}");
            assert_eq!(r.roof_pct, 0.0);
        }
        assert_eq!(
            Roofline::classify(&stats(10, 0, 0), &p).bound,
            Bound::Unknown
        );
    }

    #[test]
    fn presets_and_parsing() {
        for (name, _, _) in PRESETS {
            let p = DevicePeaks::preset(&name.to_uppercase()).unwrap();
            assert!(p.ridge_point() > 1.0);
        }
        assert!(DevicePeaks::preset("abacus").is_err());
        assert!(DevicePeaks::parse("1,x").is_err());
        assert!(DevicePeaks::parse("1,-5").is_err());
        assert!(DevicePeaks::parse("nan,5").is_err());
    }
}
