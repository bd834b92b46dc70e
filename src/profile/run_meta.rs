//! [`RunMeta`]: the one home of a run's facts (where and how it was measured), embedded by a
//! [`crate::Profile`] (its `meta`) and by a [`crate::profile::TraceView`], built once by the
//! profiler, and written once per format: serde in a profile, `otherData` in a Chrome trace, one
//! process label in a Perfetto trace (spec/profile-format.md "The profile file", `meta`,
//! spec/traces.md).
//!
//! Adding a field: declare it here and decide its two merge rules in
//! [`RunMeta::check_mergeable`] and [`RunMeta::merge`] (both destructure every field, so a new
//! one does not compile until they do), give it its value in the profiler's builder
//! (`src/profiler/run_meta.rs`), and document it in spec/profile-format.md. No writer or reader
//! of any format needs a change.

use serde::{Deserialize, Serialize};

use crate::model::counters::Counters;
use crate::model::sampling::Sampling;
use crate::roofline::DevicePeaks;
use crate::timeline::TimelineKind;
use crate::{io::RunId, Error, Phase, Result, SyncMode};

/// Where and how a run was measured. Every field is documented in spec/profile-format.md
/// ("Metadata"); the profile keeps it under `meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// The version of brickprof that wrote the run (versions joined by commas after a merge).
    pub tool_version: String,
    /// Which timeline was marked.
    pub timeline: TimelineKind,
    /// The sync mode; [`SyncMode::None`] means durations are host dispatch times.
    pub sync_mode: SyncMode,
    /// The host's name.
    pub host: String,
    /// When the run's facts were taken, in seconds since the Unix epoch.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub created_unix_s: u64,
    /// Layers in the per-layer breakdown: row `layers` is "model", row `layers + 1`
    /// "unassigned".
    #[serde(
        serialize_with = "crate::base::exact_int::ser_usize",
        deserialize_with = "crate::base::exact_int::de_usize"
    )]
    pub layers: usize,
    /// Passes, tokens, dropped measurements (trace events included), syncs, ...
    pub counters: Counters,
    /// How many runs were merged into this one (1 for a single run).
    #[serde(default = "one")]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub merged_from: u64,
    /// Device peaks for the roofline, when the run states them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peaks: Option<DevicePeaks>,
    /// The timeline's resolution ([`crate::Timeline::resolution_ns`]); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_opt_u64",
        deserialize_with = "crate::base::exact_int::de_opt_u64"
    )]
    pub timer_resolution_ns: Option<u64>,
    /// What one mark adds to the device time it measures ([`crate::Timeline::mark_cost_ns`]:
    /// about 3.3 µs a CUDA event on an H200); absent where the timeline adds nothing
    /// measurable (the host clock, CUPTI), where it is unknown, and in older files. A merge
    /// keeps the larger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_opt_u64",
        deserialize_with = "crate::base::exact_int::de_opt_u64"
    )]
    pub mark_cost_ns: Option<u64>,
    /// What was marked ([`Sampling`]); absent means every brick of every pass.
    #[serde(default, skip_serializing_if = "is_all")]
    pub sampling: Sampling,
    /// How far device timestamps can be from host time, in ns: the timeline's calibration
    /// bound ([`crate::timeline::Calibration::bound_ns`]; spec/sync-modes.md "Calibration"). Absent on
    /// the CPU timeline and in older files; a merge keeps the wider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_opt_u64",
        deserialize_with = "crate::base::exact_int::de_opt_u64"
    )]
    pub calibration_bound_ns: Option<u64>,
    /// The run this belongs to, when it was saved into a run folder with the run's other files
    /// ([`crate::Profile::set_run_id`]; spec/profile-format.md "A run folder"). Absent in
    /// older files, in files saved alone, and after merging two runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<RunId>,
    /// The rank (process) of the run, when it traced ([`crate::ProfilerConfig::rank`]); a
    /// merge of different ranks has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The phases of the run's counted passes, sorted, each once; empty (and absent in the
    /// file) when no pass had a shape. A merge keeps their union.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// The executable handles of graphs whose replays were counted, not timed
    /// (`Counters::untimed_replays`; spec/sync-modes.md "Graph capture"), sorted, at most 8;
    /// absent when every replay was timed. A merge keeps their union (the 8 smallest).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(
        serialize_with = "crate::base::exact_int::ser_vec_u64",
        deserialize_with = "crate::base::exact_int::de_vec_u64"
    )]
    pub untimed_graphs: Vec<u64>,
    /// Device activity no brick covered (kernels, copies and sets launched between bricks or
    /// with none open, and their device time), when the timeline reads the device's own
    /// records (CUPTI; spec/sync-modes.md "CUPTI"); absent on marking timelines and in older
    /// files. A merge adds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_bricks: Option<crate::stats::OutsideBricks>,
}

fn is_all(s: &Sampling) -> bool {
    *s == Sampling::All
}

fn one() -> u64 {
    1
}

impl RunMeta {
    /// The facts of a hand-built run (tests, a trace built by hand, an old trace read back):
    /// `timeline` and `layers`, this build's version, and defaults for everything else (no
    /// host, time 0, every brick marked, Deferred sync).
    pub fn new(timeline: TimelineKind, layers: usize) -> RunMeta {
        RunMeta {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            timeline,
            sync_mode: SyncMode::default(),
            host: String::new(),
            created_unix_s: 0,
            layers,
            counters: Counters::default(),
            merged_from: 1,
            peaks: None,
            timer_resolution_ns: None,
            mark_cost_ns: None,
            sampling: Sampling::All,
            calibration_bound_ns: None,
            run_id: None,
            rank: None,
            phases: Vec::new(),
            untimed_graphs: Vec::new(),
            outside_bricks: None,
        }
    }

    /// The display name of a layer row ("layer 3", "model", "unassigned").
    pub(crate) fn row_name(&self, row: u16) -> String {
        let r = usize::from(row);
        if r < self.layers {
            format!("layer {r}")
        } else if r == self.layers {
            "model".to_string()
        } else {
            "unassigned".to_string()
        }
    }

    /// Whether a run with facts `other` can be merged into this one: the same timeline, sync
    /// mode, layer count and sampling (spec/profile-format.md "Merging"). An [`Error::Merge`]
    /// naming the difference otherwise.
    pub(crate) fn check_mergeable(&self, other: &RunMeta) -> Result<()> {
        // Every field, so that a new one does not compile until it says whether it can differ.
        let RunMeta {
            tool_version: _,         // joined
            timeline,                // must agree
            sync_mode,               // must agree
            host: _,                 // joined
            created_unix_s: _,       // the later
            layers,                  // must agree
            counters: _,             // added
            merged_from: _,          // added
            peaks: _,                // kept when equal
            timer_resolution_ns: _,  // the coarser
            mark_cost_ns: _,         // the larger
            sampling,                // must agree
            calibration_bound_ns: _, // the wider
            run_id: _,               // kept when equal
            rank: _,                 // kept when equal
            phases: _,               // the union
            untimed_graphs: _,       // the union
            outside_bricks: _,       // added
        } = other;
        let a = self;
        if a.timeline != *timeline || a.sync_mode != *sync_mode || a.layers != *layers {
            return Err(Error::Merge(format!(
                "profiles differ in timeline/sync mode/layers: {}/{}/{} vs {}/{}/{}",
                a.timeline, a.sync_mode, a.layers, timeline, sync_mode, layers
            )));
        }
        if a.sampling != *sampling {
            return Err(Error::Merge(format!(
                "profiles sampled differently ({} vs {}) do not merge",
                a.sampling, sampling
            )));
        }
        Ok(())
    }

    /// Merge the facts of another run into these, once [`Self::check_mergeable`] said it can
    /// be done. Associative and commutative (spec/profile-format.md "Merging").
    pub(crate) fn merge(&mut self, other: &RunMeta) {
        // Every field, so that a new one does not compile until it has a merge rule.
        let RunMeta {
            tool_version,
            timeline: _,  // equal (check_mergeable)
            sync_mode: _, // equal (check_mergeable)
            host,
            created_unix_s,
            layers: _, // equal (check_mergeable)
            counters,
            merged_from,
            peaks,
            timer_resolution_ns,
            mark_cost_ns,
            sampling: _, // equal (check_mergeable)
            calibration_bound_ns,
            run_id,
            rank,
            phases,
            untimed_graphs,
            outside_bricks,
        } = other;
        // Every version that wrote a part, so that merge order does not show.
        self.tool_version = joined(&self.tool_version, tool_version);
        self.host = joined(&self.host, host);
        self.created_unix_s = self.created_unix_s.max(*created_unix_s);
        self.counters.merge(counters);
        self.merged_from = self.merged_from.saturating_add(*merged_from);
        if self.peaks != *peaks {
            self.peaks = None; // runs measured against different roofs: no common roof
        }
        // The coarser of the two clocks bounds what the merged numbers can tell apart.
        self.timer_resolution_ns = wider(self.timer_resolution_ns, *timer_resolution_ns);
        self.calibration_bound_ns = wider(self.calibration_bound_ns, *calibration_bound_ns);
        // The costlier marks bound what the merged small bricks can be trusted for.
        self.mark_cost_ns = wider(self.mark_cost_ns, *mark_cost_ns);
        if self.run_id != *run_id {
            self.run_id = None; // several runs: none of their ids
        }
        if self.rank != *rank {
            self.rank = None; // several ranks: none of them
        }
        self.untimed_graphs =
            crate::profile::untimed_graphs::union(&self.untimed_graphs, untimed_graphs);
        self.outside_bricks =
            crate::stats::OutsideBricks::merged(self.outside_bricks, *outside_bricks);
        self.phases.extend_from_slice(phases);
        self.phases.sort_unstable();
        self.phases.dedup();
    }
}

/// The larger of two optional bounds; one side's when the other has none.
fn wider(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Two comma-separated sets joined: sorted, each once (associative and commutative).
fn joined(a: &str, b: &str) -> String {
    if a == b {
        return a.to_string();
    }
    let mut all: Vec<&str> = a.split(',').chain(b.split(',')).collect();
    all.sort_unstable();
    all.dedup();
    all.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(rank: Option<u32>, bound: Option<u64>, host: &str) -> RunMeta {
        RunMeta {
            host: host.into(),
            rank,
            calibration_bound_ns: bound,
            ..RunMeta::new(TimelineKind::Sim, 2)
        }
    }

    #[test]
    fn merge_is_commutative_and_keeps_only_common_ranks() {
        // spec/profile-format.md "Merging": rank kept when equal, else none; bounds the wider.
        let (a, b) = (meta(Some(1), Some(5), "x"), meta(Some(2), None, "y"));
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, ba);
        assert_eq!(ab.rank, None);
        assert_eq!(ab.calibration_bound_ns, Some(5));
        assert_eq!(ab.host, "x,y");
        assert_eq!(ab.merged_from, 2);
        let mut aa = a.clone();
        aa.merge(&a);
        assert_eq!(aa.rank, Some(1));
    }

    #[test]
    fn different_timelines_do_not_merge() {
        let a = meta(None, None, "x");
        let b = RunMeta::new(TimelineKind::Cpu, 2);
        assert!(matches!(a.check_mergeable(&b), Err(Error::Merge(_))));
        assert!(a.check_mergeable(&a.clone()).is_ok());
    }
}
