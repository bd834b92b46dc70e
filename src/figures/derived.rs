//! The numbers a report shows, derived once from a [`Profile`] and shared by the table, the
//! JSON report and the CSV: per brick, per (layer, brick), per tile and per category. Every
//! field's definition and unit is in `spec/work-accounting.md`.

use serde::{Deserialize, Serialize};

use crate::profile::{Profile, RowKey};
use crate::roofline::{Bound, DevicePeaks, Excess, MemLevel, Roofline};
use crate::{
    model::Counters,
    stats::{BrickStats, TileLevel},
    timeline::TimelineKind,
    BrickCategory, Phase, SyncMode,
};

/// One row of derived numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Brick, category, or "layer brick" name.
    pub name: String,
    /// The category of the brick (or the category itself).
    pub category: BrickCategory,
    /// The phase of the passes the row is of, in exports (spec/profile-format.md "Reports":
    /// unspecified for profiles without phases); absent on the table's rows, which merge every
    /// phase, and on tile and category rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// The layer row, for per-layer rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<RowKey>,
    /// The tile level, for tile rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tile: Option<TileLevel>,
    /// Number of measurements.
    pub calls: u64,
    /// Inclusive time (each call's own start to its own stop, nested bricks included), ns.
    pub total_ns: u64,
    /// Self time (inclusive minus the bricks nested directly inside), ns.
    #[serde(default)]
    pub self_ns: u64,
    /// Share of all bricks' self time, percent (tiles: share of their brick's inclusive time).
    pub pct: f64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Standard deviation, ns.
    pub std_dev_ns: f64,
    /// Minimum, ns.
    pub min_ns: u64,
    /// Median, ns.
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// Maximum, ns.
    pub max_ns: u64,
    /// Mean host dispatch time per call, ns.
    pub host_mean_ns: f64,
    /// Elements per second.
    pub elements_per_sec: f64,
    /// FLOPs recorded.
    pub flops: u64,
    /// Bytes recorded.
    pub bytes: u64,
    /// Achieved GFLOP/s.
    pub gflops: f64,
    /// Achieved GB/s.
    pub gbps: f64,
    /// FLOPs per byte (absent when no bytes were recorded).
    pub intensity: Option<f64>,
    /// Which roof limits it (absent without device peaks).
    pub bound: Option<Bound>,
    /// Percent of the roof above it (absent without device peaks).
    pub roof_pct: Option<f64>,
    /// The memory level it is judged against: where its bytes per call fit (absent without
    /// device peaks or without bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<MemLevel>,
    /// Whether it beats its level's roof or every roof (absent without device peaks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excess: Option<Excess>,
    /// Calls that launched nothing on the device (host-only: their device time is 0; only
    /// the CUPTI timeline can tell, spec/sync-modes.md "CUPTI"); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub host_only: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Row {
    /// Derive a row from statistics. `whole_ns` is what `pct` (of the row's self time) is a
    /// share of.
    pub(crate) fn derive(
        name: impl Into<String>,
        category: BrickCategory,
        s: &BrickStats,
        whole_ns: u64,
        peaks: Option<&DevicePeaks>,
    ) -> Row {
        let roof = peaks.map(|p| Roofline::classify(s, p));
        Row {
            name: name.into(),
            category,
            phase: None,
            layer: None,
            tile: None,
            calls: s.count(),
            total_ns: s.total_ns(),
            self_ns: s.self_ns(),
            pct: super::units::ratio_pct(s.self_ns() as f64, whole_ns as f64),
            mean_ns: s.mean_ns(),
            std_dev_ns: s.std_dev_ns(),
            min_ns: s.min_ns(),
            p50_ns: s.p50_ns(),
            p90_ns: s.p90_ns(),
            p99_ns: s.p99_ns(),
            max_ns: s.max_ns(),
            host_mean_ns: s.host_mean_ns(),
            elements_per_sec: s.elements_per_sec(),
            flops: s.work().flops,
            bytes: s.work().bytes,
            gflops: s.gflops(),
            gbps: s.gbps(),
            intensity: s.arithmetic_intensity(),
            bound: roof.map(|r| r.bound),
            roof_pct: roof.map(|r| r.roof_pct),
            level: roof.and_then(|r| r.level),
            excess: roof.map(|r| r.excess),
            host_only: 0,
        }
    }

    /// True when FLOPs or bytes were recorded.
    pub(crate) fn has_work(&self) -> bool {
        self.flops > 0 || self.bytes > 0
    }
}

/// Everything a report shows, derived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    /// brickprof version that wrote the profile.
    pub tool_version: String,
    /// Timeline of the run.
    pub timeline: TimelineKind,
    /// Sync mode of the run.
    pub sync_mode: SyncMode,
    /// Device peaks used for the roofline, if any.
    pub peaks: Option<DevicePeaks>,
    /// Per brick.
    pub bricks: Vec<Row>,
    /// Per (layer, brick).
    pub layers: Vec<Row>,
    /// Per (brick, tile level); `name` is the brick's.
    pub tiles: Vec<Row>,
    /// Per category.
    pub categories: Vec<Row>,
    /// Time in bricks, ns: every brick's self time summed (nested bricks counted once).
    pub total_ns: u64,
    /// Tokens per second over the counted passes.
    pub tokens_per_sec: f64,
    /// Mean pass wall time, ns.
    pub pass_mean_ns: f64,
    /// Median pass wall time, ns.
    pub pass_p50_ns: u64,
    /// Passes, tokens, dropped measurements, ...
    pub counters: Counters,
    /// Device activity no brick covered, when the timeline read the device's own records
    /// (CUPTI): a row of its own, never dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_bricks: Option<crate::stats::OutsideBricks>,
}

impl Derived {
    /// Derive every row of `profile`, using `peaks` (or the profile's own) for the roofline.
    pub fn of(profile: &Profile, peaks: Option<&DevicePeaks>) -> Derived {
        // One row per layer, every phase merged (spec/profile-format.md "Phases").
        let profile = &*crate::profile::phase_view::folded(profile, crate::model::PhaseFilter::All);
        let peaks = peaks.or(profile.meta.peaks.as_ref());
        let total = profile.total_ns();
        let mut bricks = Vec::new();
        let mut layers = Vec::new();
        let mut tiles = Vec::new();
        for b in &profile.bricks {
            let mut row = Row::derive(&b.name, b.category, &b.stats, total, peaks);
            row.host_only = b.host_only;
            bricks.push(row);
            for r in &b.rows {
                let mut row = Row::derive(
                    format!("{} {}", r.row, b.name),
                    b.category,
                    &r.stats,
                    total,
                    peaks,
                );
                row.layer = Some(r.row);
                layers.push(row);
            }
            for t in &b.tiles {
                let mut row = Row::derive(&b.name, b.category, &t.stats, b.stats.total_ns(), peaks);
                // A tile lies inside its brick: its share is of the brick's inclusive time. Tiles
                // are timed on the host clock, so on a device timeline their share is of the
                // brick's host (dispatch) time: host time over device time would mean nothing.
                let brick_ns = if profile.meta.timeline == TimelineKind::Cpu {
                    b.stats.total_ns()
                } else {
                    b.stats.host_total_ns()
                };
                row.pct = super::units::ratio_pct(t.stats.total_ns() as f64, brick_ns as f64);
                row.tile = Some(t.level);
                tiles.push(row);
            }
        }
        for t in &profile.unattributed_tiles {
            let mut row = Row::derive("(no brick)", BrickCategory::Other, &t.stats, total, peaks);
            row.tile = Some(t.level);
            tiles.push(row);
        }
        let categories = profile
            .category_stats()
            .into_iter()
            .map(|(c, s)| Row::derive(c.name(), c, &s, total, peaks))
            .collect();
        Derived {
            tool_version: profile.meta.tool_version.clone(),
            timeline: profile.meta.timeline,
            sync_mode: profile.meta.sync_mode,
            peaks: peaks.cloned(),
            bricks,
            layers,
            tiles,
            categories,
            total_ns: total,
            tokens_per_sec: profile.tokens_per_sec(),
            pass_mean_ns: profile.passes.mean_ns(),
            pass_p50_ns: profile.passes.p50_ns(),
            counters: profile.meta.counters,
            outside_bricks: profile.meta.outside_bricks,
        }
    }
}
