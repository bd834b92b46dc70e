//! The roofline: [`DevicePeaks`] (peak GFLOP/s, DRAM GB/s and, for a cache-aware roofline,
//! each cache level's capacity and GB/s; from a preset, the user, a device's report or a
//! measurement) and the classification every report row carries ([`Bound`], [`MemLevel`],
//! [`Excess`]: the figures' rows): the memory level a brick's or tile's per-call working set fits
//! in, whether it is memory-bound or compute-bound there, what fraction of that level's roof it
//! reaches, and whether it beats the roofs. Every number is
//! defined in `spec/work-accounting.md`. [`measure_cpu_peaks`] measures this CPU's peaks; [`device`] makes
//! peaks from what a device reports.

pub mod device;
mod level;
mod peaks;
mod topology;
mod trial_clock;

use serde::{Deserialize, Serialize};

pub(crate) use level::CacheRoof;
pub use level::MemLevel;
pub use peaks::{measure_cpu_peaks, MeasuredPeaks};
pub(crate) use topology::{CacheTopology, TopologySource};

use crate::{stats::BrickStats, Error, Result};

/// A device's peak compute and memory bandwidth, and the cache levels in front of its memory.
/// Every peak is finite and positive and the levels are innermost first with growing
/// capacities, whether built here or loaded from a file (a bad file is an error naming the
/// field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawPeaks")]
pub struct DevicePeaks {
    name: String,
    gflops: f64,
    /// DRAM (device memory) bandwidth: the outermost roof.
    gbps: f64,
    /// Cache levels, innermost first (absent in older files: a DRAM-only roofline).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    levels: Vec<CacheRoof>,
    /// Where the figures come from (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<PeakSource>,
}

/// Where a [`DevicePeaks`]' figures come from, so a report can label them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PeakSource {
    /// Given by the user (`GFLOPS,GBPS`).
    User,
    /// A built-in preset: vendors' data-sheet figures.
    Preset,
    /// Measured on this machine ([`peaks::measure_cpu_peaks`]).
    Measured,
    /// Computed from what the device reports (compute units, clock; [`device`]).
    Reported,
}

impl PeakSource {
    /// A short label: "user", "preset (data sheet)", "measured", "device-reported".
    pub(crate) fn label(self) -> &'static str {
        match self {
            PeakSource::User => "user",
            PeakSource::Preset => "preset (data sheet)",
            PeakSource::Measured => "measured",
            PeakSource::Reported => "device-reported",
        }
    }
}

/// The saved form of [`DevicePeaks`], checked on load.
#[derive(Deserialize)]
struct RawPeaks {
    name: String,
    gflops: f64,
    gbps: f64,
    #[serde(default)]
    levels: Vec<CacheRoof>,
    #[serde(default)]
    source: Option<PeakSource>,
}

impl TryFrom<RawPeaks> for DevicePeaks {
    type Error = Error;

    fn try_from(r: RawPeaks) -> Result<Self> {
        let mut p = DevicePeaks::new(r.name, r.gflops, r.gbps)
            .map_err(|e| Error::Peaks(e.to_string()))?
            .with_levels(r.levels)?;
        p.source = r.source;
        Ok(p)
    }
}

/// Built-in presets: dense fp16/bf16 matrix peaks and HBM bandwidth from the vendors' data
/// sheets. Use them as a yardstick; pass measured values for precise work.
pub(crate) const PRESETS: &[(&str, f64, f64)] = &[
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
    /// use brickprof::roofline::DevicePeaks;
    /// let p = DevicePeaks::new("my gpu", 100_000.0, 2_000.0).unwrap();
    /// assert_eq!((p.gflops(), p.gbps()), (100_000.0, 2_000.0));
    /// assert!(DevicePeaks::new("bad", 0.0, 1.0).is_err());
    /// ```
    pub fn new(name: impl Into<String>, gflops: f64, gbps: f64) -> Result<DevicePeaks> {
        let ok = |v: f64| v.is_finite() && v > 0.0;
        if !ok(gflops) || !ok(gbps) {
            return Err(Error::Peaks(format!(
                "peaks must be positive numbers (got {gflops} GFLOP/s, {gbps} GB/s)"
            )));
        }
        Ok(DevicePeaks {
            name: name.into(),
            gflops,
            gbps,
            levels: Vec::new(),
            source: None,
        })
    }

    /// The same peaks with cache levels in front of DRAM, innermost first (capacities strictly
    /// growing, each level once, at most four): a cache-aware roofline (measured CPU peaks and
    /// device reports build these; a file's levels are checked the same way on load).
    pub(crate) fn with_levels(mut self, levels: Vec<CacheRoof>) -> Result<DevicePeaks> {
        level::check_levels(&levels)?;
        self.levels = levels;
        Ok(self)
    }

    /// The same peaks, labelled with where they come from.
    pub(crate) fn with_source(mut self, source: PeakSource) -> DevicePeaks {
        self.source = Some(source);
        self
    }

    /// Where the figures come from, when known.
    pub(crate) fn source(&self) -> Option<PeakSource> {
        self.source
    }

    /// The cache levels in front of DRAM, innermost first (empty: a DRAM-only roofline).
    pub(crate) fn levels(&self) -> &[CacheRoof] {
        &self.levels
    }

    /// Every memory roof, innermost first, ending with DRAM: (level, capacity, GB/s).
    pub fn memory_roofs(&self) -> impl Iterator<Item = (MemLevel, Option<u64>, f64)> + '_ {
        self.levels
            .iter()
            .map(|c| (c.level(), Some(c.bytes()), c.gbps()))
            .chain(std::iter::once((MemLevel::Dram, None, self.gbps)))
    }

    /// The level a working set of `bytes` fits in: the innermost cache at least that large,
    /// else DRAM.
    pub(crate) fn level_of(&self, bytes: u64) -> MemLevel {
        self.levels
            .iter()
            .find(|c| c.bytes() >= bytes)
            .map_or(MemLevel::Dram, |c| c.level())
    }

    /// The bandwidth of `level` in GB/s (DRAM's for a level these peaks do not have).
    pub(crate) fn level_gbps(&self, level: MemLevel) -> f64 {
        self.levels
            .iter()
            .find(|c| c.level() == level)
            .map_or(self.gbps, |c| c.gbps())
    }

    /// The fastest memory roof, GB/s (the highest of every level's).
    pub(crate) fn fastest_gbps(&self) -> f64 {
        self.memory_roofs().map(|(_, _, g)| g).fold(0.0, f64::max)
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

    /// A preset by name (case-insensitive): `mi300x`, `h100-sxm`, ... (an unknown name's error
    /// lists them all). Reached through [`DevicePeaks::parse`].
    pub(crate) fn preset(name: &str) -> Result<DevicePeaks> {
        let key = name.trim().to_ascii_lowercase();
        PRESETS
            .iter()
            .find(|(n, _, _)| *n == key)
            .map(|&(n, f, b)| DevicePeaks {
                name: n.to_string(),
                gflops: f,
                gbps: b,
                levels: Vec::new(),
                source: Some(PeakSource::Preset),
            })
            .ok_or_else(|| {
                Error::invalid_value(
                    "device preset",
                    name,
                    format!(
                        "unknown; presets: {}; or give GFLOPS,GBPS",
                        PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", ")
                    ),
                )
            })
    }

    /// Parse `PRESET` or `GFLOPS,GBPS` (as on the command line).
    ///
    /// ```
    /// use brickprof::roofline::DevicePeaks;
    /// assert_eq!(DevicePeaks::parse("1000,50").unwrap().gbps(), 50.0);
    /// assert_eq!(DevicePeaks::parse("MI300X").unwrap().name(), "mi300x");
    /// ```
    pub fn parse(s: &str) -> Result<DevicePeaks> {
        match s.split_once(',') {
            Some((f, b)) => {
                let num = |x: &str| {
                    x.trim().parse::<f64>().map_err(|_| {
                        Error::invalid_value(
                            "device peaks",
                            s,
                            format!("{:?} is not a number (expected GFLOPS,GBPS)", x.trim()),
                        )
                    })
                };
                Ok(DevicePeaks::new("user", num(f)?, num(b)?)?.with_source(PeakSource::User))
            }
            None => DevicePeaks::preset(s),
        }
    }

    /// The arithmetic intensity (FLOPs/byte) where the memory roof meets the compute roof.
    pub(crate) fn ridge_point(&self) -> f64 {
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
    pub(crate) fn label(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Unknown => "-",
        }
    }
}

/// Whether a brick or tile beats a roof (spec/work-accounting.md "Cache-aware roofline").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Excess {
    /// At or under the roof of its level.
    Within,
    /// Above the roof of the level its working set fits in, but under a faster level's: part
    /// of its data comes from a faster level than its per-call bytes say (data reused from a
    /// smaller cache, or bytes counted that never reach memory).
    AboveLevel,
    /// Above every roof: the work declared is too high, or the roofs too low.
    AboveEvery,
}

/// Where a brick or tile sits under the roofline (plain data: reports carry it in their rows,
/// and `import::BrickCounters::roofline` returns it for a measured brick).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Roofline {
    /// Which roof limits it.
    pub bound: Bound,
    /// The roof above it, in GFLOP/s (or GB/s when it has bytes but no FLOPs). 0 if unknown.
    pub roof: f64,
    /// Achieved rate as a percentage of that roof (0 when unknown or no time).
    pub roof_pct: f64,
    /// The memory level it is judged against: where its bytes per call fit (absent when it
    /// declared no bytes).
    pub level: Option<MemLevel>,
    /// Whether it beats its level's roof, or every roof.
    pub excess: Excess,
}

impl Roofline {
    /// Classify `stats` under `peaks`: against the level its bytes per call fit in (DRAM when
    /// the peaks have no cache levels). Never NaN: zero time, zero FLOPs or zero bytes give
    /// defined results (see spec/work-accounting.md "Roofline"). Reports read the result in
    /// their rows (`figures`' `bound`, `level`, `excess`, `roof_pct`).
    pub(crate) fn classify(stats: &BrickStats, peaks: &DevicePeaks) -> Roofline {
        let (flops, bytes) = (stats.work().flops, stats.work().bytes);
        let per_call = bytes.div_ceil(stats.count().max(1));
        let level = (bytes > 0).then(|| peaks.level_of(per_call));
        let gbps = level.map_or(peaks.gbps, |l| peaks.level_gbps(l));
        let fastest = peaks.fastest_gbps();
        let (bound, roof, best, achieved) = match (flops > 0, bytes > 0) {
            (true, true) => {
                let ai = flops as f64 / bytes as f64;
                let bound = if ai < peaks.gflops / gbps {
                    Bound::Memory
                } else {
                    Bound::Compute
                };
                let roof = peaks.gflops.min(ai * gbps);
                let best = peaks.gflops.min(ai * fastest);
                (bound, roof, best, stats.gflops())
            }
            (false, true) => (Bound::Memory, gbps, fastest, stats.gbps()),
            (true, false) => (Bound::Compute, peaks.gflops, peaks.gflops, stats.gflops()),
            (false, false) => (Bound::Unknown, 0.0, 0.0, 0.0),
        };
        let roof_pct = if roof > 0.0 {
            achieved / roof * 100.0
        } else {
            0.0
        };
        let excess = if achieved > best && best > 0.0 {
            Excess::AboveEvery
        } else if achieved > roof && roof > 0.0 {
            Excess::AboveLevel
        } else {
            Excess::Within
        };
        Roofline {
            bound,
            roof,
            roof_pct,
            level,
            excess,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Work;

    fn stats(ns: u64, flops: u64, bytes: u64) -> BrickStats {
        let mut s = BrickStats::new();
        s.record(
            ns,
            ns,
            Work {
                elements: 0,
                flops,
                bytes,
            },
        );
        s
    }

    /// Each source's label, as the table prints it after the peaks.
    #[test]
    fn peak_source_labels() {
        let labels = [
            PeakSource::User,
            PeakSource::Preset,
            PeakSource::Measured,
            PeakSource::Reported,
        ]
        .map(PeakSource::label);
        assert_eq!(
            labels,
            ["user", "preset (data sheet)", "measured", "device-reported"]
        );
    }

    /// The examples of `DevicePeaks::new` and `with_levels`, on the crate's own readers.
    #[test]
    fn ridge_point_and_level_of() {
        let p = DevicePeaks::new("my gpu", 100_000.0, 2_000.0).unwrap();
        assert_eq!(p.ridge_point(), 50.0);
        let p = DevicePeaks::new("cpu", 100.0, 20.0)
            .unwrap()
            .with_levels(vec![CacheRoof::new(MemLevel::L1, 32 << 10, 200.0).unwrap()])
            .unwrap();
        assert_eq!(p.level_of(1024), MemLevel::L1);
        assert_eq!(p.level_of(1 << 20), MemLevel::Dram);
    }

    /// Was the doc example of `Roofline::classify` (crate-internal since 0.4).
    #[test]
    fn a_memory_bound_brick_reaches_a_tenth_of_its_roof() {
        let peaks = DevicePeaks::new("toy", 1_000.0, 100.0).unwrap(); // ridge: 10 FLOP/B
        let mut s = BrickStats::new();
        s.record(
            1_000,
            1_000,
            Work {
                elements: 0,
                flops: 20_000,
                bytes: 10_000,
            },
        ); // AI 2
        let r = Roofline::classify(&s, &peaks);
        assert_eq!(r.bound, Bound::Memory);
        assert_eq!(r.roof, 200.0); // 2 FLOP/B x 100 GB/s
        assert_eq!(r.roof_pct, 10.0); // 20 GFLOP/s achieved
    }

    /// Was the doc example of `DevicePeaks::with_levels` (crate-internal since 0.4).
    #[test]
    fn levels_come_before_dram_in_the_memory_roofs() {
        let p = DevicePeaks::new("cpu", 100.0, 20.0)
            .unwrap()
            .with_levels(vec![CacheRoof::new(MemLevel::L1, 32 << 10, 200.0).unwrap()])
            .unwrap();
        let roofs: Vec<_> = p.memory_roofs().collect();
        assert_eq!(
            roofs,
            [
                (MemLevel::L1, Some(32 << 10), 200.0),
                (MemLevel::Dram, None, 20.0)
            ]
        );
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
    fn each_brick_is_judged_at_the_level_its_bytes_per_call_fit() {
        // spec/work-accounting.md "Cache-aware roofline": L1 32 KiB at 400 GB/s, L2 1 MiB at
        // 200 GB/s, DRAM 50 GB/s; compute 1000 GFLOP/s.
        let p = DevicePeaks::new("toy", 1_000.0, 50.0)
            .unwrap()
            .with_levels(vec![
                CacheRoof::new(MemLevel::L1, 32 << 10, 400.0).unwrap(),
                CacheRoof::new(MemLevel::L2, 1 << 20, 200.0).unwrap(),
            ])
            .unwrap();
        // One call of 32 KiB: L1. 32 KiB in 1000 ns = 32.8 GB/s of 400.
        let r = Roofline::classify(&stats(1_000, 0, 32 << 10), &p);
        assert_eq!(r.level, Some(MemLevel::L1));
        assert_eq!(r.excess, Excess::Within);
        // 512 KiB per call: L2, AI 0.5 < ridge 5: memory; roof 0.5 x 200 = 100 GFLOP/s.
        let r = Roofline::classify(&stats(1_000, 256 << 10, 512 << 10), &p);
        assert_eq!(
            (r.level, r.bound, r.roof),
            (Some(MemLevel::L2), Bound::Memory, 100.0)
        );
        // 150 GFLOP/s at L2 (AI 0.5): above L2's roof (100) but under L1's (200).
        let r = Roofline::classify(&stats(1_000, 150_000, 300_000), &p);
        assert_eq!(
            (r.level, r.excess),
            (Some(MemLevel::L2), Excess::AboveLevel)
        );
        assert_eq!(r.roof_pct, 150.0);
        // 4 MiB per call: DRAM; 4 MiB in 1000 ns = 4194 GB/s, above even L1's 400.
        let r = Roofline::classify(&stats(1_000, 0, 4 << 20), &p);
        assert_eq!(
            (r.level, r.excess),
            (Some(MemLevel::Dram), Excess::AboveEvery)
        );
        // FLOPs only: no level.
        assert_eq!(Roofline::classify(&stats(1_000, 5, 0), &p).level, None);
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
