//! [`Profile`]: the saved form of a profiler run. Its own file so that the type is reached by
//! one path, the crate root's.

use std::path::Path;

use serde::{Deserialize, Serialize};
use strum::IntoEnumIterator;

use crate::checksum::ChecksumLog;
use crate::io::json_file::{self, save_json, FileKind};
use crate::model::registry::NO_BRICK;
use crate::model::row_key::RowKey;
use crate::profile::nesting::NestingEdge;
use crate::profile::phases::PhasePasses;
use crate::profile::run_meta::RunMeta;
use crate::stats::brick_counters::BrickCounters;
use crate::{
    stats::{BrickStats, FitSums, PassSeries, TileLevel},
    BrickCategory, Error, Phase, Result,
};

/// The profile format version this build writes.
pub const PROFILE_FORMAT_VERSION: u32 = 3;

/// The profile format versions this build reads (version 1: no self time, plain integers;
/// versions 1 and 2: no phases, so every row and pass is [`Phase::Unspecified`]).
pub(crate) const PROFILE_FORMATS_READ: std::ops::RangeInclusive<u32> = 1..=PROFILE_FORMAT_VERSION;

/// A saved profiler run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// Always `"profile"` (the file's kind).
    pub(crate) kind: FileKind,
    /// [`PROFILE_FORMAT_VERSION`]: a loaded file of an older version is read into the current
    /// layout, and a save always writes the current version (whatever this field holds).
    #[serde(serialize_with = "current_version")]
    pub format_version: u32,
    /// Where and how the run was measured.
    pub meta: RunMeta,
    /// Every brick with at least one measurement or tile, in slot order.
    pub bricks: Vec<BrickProfile>,
    /// Per-category statistics: the merge of their bricks' (recomputed on load and merge, so
    /// they always agree with `bricks`).
    #[serde(default)]
    pub categories: Vec<CategoryProfile>,
    /// Tiles timed outside any brick.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unattributed_tiles: Vec<TileProfile>,
    /// Wall time of each counted forward pass (elements = tokens of the pass).
    pub passes: BrickStats,
    /// The same, per phase (format version 3): their merge is `passes`. Empty when every pass
    /// was unspecified (an unshaped run, and files of versions 1 and 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phase_passes: Vec<PhasePasses>,
    /// Kernel checksums, when the run recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksums: Option<ChecksumLog>,
    /// Which brick ran directly inside which, with counts (spec/profile-format.md "Nesting");
    /// empty when no brick nested (or in files written before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nesting: Vec<NestingEdge>,
    /// The shaped passes, one record each, run by run (spec/profile-format.md "Pass series"):
    /// what TTFT, TPOT and the shares against context are computed from. Absent when no pass
    /// had a shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_series: Option<PassSeries>,
    /// What a vendor profiler counted per (brick, row) of an imported file: calls, kernels,
    /// their time, and DRAM bytes and FLOPs where the file has them (spec/profile-format.md
    /// "Hardware counters"; spec/imports.md "Counters"): what ran, beside the `Work` an engine
    /// declares. Empty (and absent from the file) for brickprof's own runs and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hardware_counters: Vec<BrickCounters>,
}

/// Saves write the layout of this build, so they say its version.
fn current_version<S: serde::Serializer>(_: &u32, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u32(PROFILE_FORMAT_VERSION)
}

/// One brick of a [`Profile`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrickProfile {
    /// The brick's name (a [`crate::BrickId`] name for built-in bricks).
    pub name: String,
    /// Its category.
    pub category: BrickCategory,
    /// Whether it is a built-in brick.
    pub builtin: bool,
    /// Statistics over every row.
    pub stats: BrickStats,
    /// Per-row statistics (only rows with measurements).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<RowProfile>,
    /// Tile statistics inside this brick (only levels with measurements).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiles: Vec<TileProfile>,
    /// Sums for fitting its time per pass against the pass shape, one entry per phase with
    /// shaped passes, in phase order (spec/profile-format.md "Pass series", fits).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fits: Vec<PhaseFit>,
    /// Calls of this brick that launched nothing on the device: **host-only** calls, each
    /// timed 0 ns of device time (only a timeline that reads the device's own records can
    /// tell, CUPTI: spec/sync-modes.md "CUPTI"). At most `stats.count`; absent (0) otherwise
    /// and in older files. A merge adds them.
    #[serde(
        default,
        skip_serializing_if = "is_zero",
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub host_only: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A brick's fit sums over the shaped passes of one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseFit {
    /// The phase.
    pub phase: Phase,
    /// Its sums (one point per shaped pass of the phase in which the brick ran).
    pub sums: FitSums,
}

/// One category's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryProfile {
    /// The category.
    pub category: BrickCategory,
    /// The merge of its bricks' statistics.
    pub stats: BrickStats,
}

/// One row of a brick's per-layer breakdown, in the passes of one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowProfile {
    /// The phase of the passes it covers (format version 3; absent: unspecified).
    #[serde(default, skip_serializing_if = "Phase::is_unspecified")]
    pub phase: Phase,
    /// Which row.
    pub row: RowKey,
    /// Its statistics.
    pub stats: BrickStats,
}

/// One tile level's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TileProfile {
    /// The level.
    pub level: TileLevel,
    /// Its statistics (the same as a brick's).
    pub stats: BrickStats,
}

impl Profile {
    /// Stamp the profile, and the checksum log it carries, as files of run `id` (a run
    /// folder's: spec/profile-format.md "A run folder"; `None`: of no run folder).
    pub fn set_run_id(&mut self, id: Option<crate::io::RunId>) {
        if let Some(log) = self.checksums.as_mut() {
            log.run_id = id.clone();
        }
        self.meta.run_id = id;
    }

    /// Time spent in bricks, in ns: the sum of every brick's self time, so a brick nested in
    /// another is counted once.
    pub fn total_ns(&self) -> u64 {
        self.bricks
            .iter()
            .fold(0u64, |t, b| t.saturating_add(b.stats.self_ns()))
    }

    /// Rebuild `categories` from `bricks`.
    pub(crate) fn recompute_categories(&mut self) {
        self.categories = self
            .category_stats()
            .into_iter()
            .map(|(category, stats)| CategoryProfile { category, stats })
            .collect();
    }

    /// Statistics per category (categories without measurements omitted), in category order,
    /// computed from the bricks.
    pub(crate) fn category_stats(&self) -> Vec<(BrickCategory, BrickStats)> {
        BrickCategory::iter()
            .filter_map(|c| {
                let s = BrickStats::merged(
                    self.bricks
                        .iter()
                        .filter(|b| b.category == c)
                        .map(|b| &b.stats),
                );
                (!s.is_empty()).then_some((c, s))
            })
            .collect()
    }

    /// The brick called `name`, if present.
    pub fn brick(&self, name: &str) -> Option<&BrickProfile> {
        self.bricks.iter().find(|b| b.name == name)
    }

    /// Tokens per second over the counted passes' wall time (0 when none).
    pub(crate) fn tokens_per_sec(&self) -> f64 {
        self.passes.elements_per_sec()
    }

    /// The wall time statistics of one phase's counted passes (empty when it has none; in a
    /// profile without phases every pass is [`Phase::Unspecified`]).
    pub fn phase_passes(&self, phase: Phase) -> BrickStats {
        match self.phase_passes.iter().find(|p| p.phase == phase) {
            Some(p) => p.stats.clone(),
            None if self.phase_passes.is_empty() && phase == Phase::Unspecified => {
                self.passes.clone()
            }
            None => BrickStats::new(),
        }
    }

    /// Tokens per second over one phase's counted passes: prompt tokens per second for
    /// [`Phase::Prefill`], generated tokens per second for [`Phase::Decode`] (0 when none).
    pub(crate) fn phase_tokens_per_sec(&self, phase: Phase) -> f64 {
        self.phase_passes(phase).elements_per_sec()
    }

    /// Save as pretty JSON.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        save_json(path.as_ref(), self)
    }

    /// Load a profile, rejecting bad files and other versions with an error naming the file
    /// and the fault (line and column for JSON faults).
    pub fn load(path: impl AsRef<Path>) -> Result<Profile> {
        let path = path.as_ref();
        let p = json_file::load(path, FileKind::Profile, PROFILE_FORMATS_READ)?;
        Profile::from_loaded(path, p)
    }

    /// A freshly parsed profile, checked (spec/profile-format.md "Validation") and with its
    /// derived parts made consistent. Statistics were checked as they were parsed. An older
    /// format version is read into the current layout, so the profile says the current version.
    pub(crate) fn from_loaded(path: &Path, mut p: Profile) -> Result<Profile> {
        p.check().map_err(|m| Error::invalid(path, m))?;
        p.format_version = PROFILE_FORMAT_VERSION;
        p.recompute_categories();
        Ok(p)
    }

    /// The rules a loaded profile keeps (spec/profile-format.md "Validation") beyond those of
    /// each `stats`, which hold by construction: the fault, naming the field, when one breaks.
    fn check(&self) -> std::result::Result<(), String> {
        if self.meta.layers > crate::base::limits::MAX_LAYERS {
            return Err(format!(
                "meta.layers {} is over the limit of {}",
                self.meta.layers,
                crate::base::limits::MAX_LAYERS
            ));
        }
        let mut names = std::collections::HashSet::with_capacity(self.bricks.len());
        for b in &self.bricks {
            if !names.insert(b.name.as_str()) {
                return Err(format!("bricks: {:?} appears twice", b.name));
            }
            if b.builtin && !crate::BrickId::ALL.iter().any(|id| id.name() == b.name) {
                return Err(format!(
                    "bricks: {:?} is marked builtin but is no built-in brick's name",
                    b.name
                ));
            }
            if b.host_only > b.stats.count() {
                return Err(format!(
                    "bricks: {:?} has {} host-only calls but {} calls",
                    b.name,
                    b.host_only,
                    b.stats.count()
                ));
            }
            let mut rows = std::collections::HashSet::with_capacity(b.rows.len());
            for r in &b.rows {
                if let RowKey::Layer(n) = r.row {
                    if n >= self.meta.layers {
                        return Err(format!(
                            "bricks: {:?} has a row for layer {n}, but the profile has {} layers",
                            b.name, self.meta.layers
                        ));
                    }
                }
                if !rows.insert((r.phase, r.row)) {
                    return Err(format!(
                        "bricks: {:?} has row {} of phase {} twice",
                        b.name, r.row, r.phase
                    ));
                }
            }
            if !b.rows.is_empty() && BrickStats::merged(b.rows.iter().map(|r| &r.stats)) != b.stats
            {
                return Err(format!(
                    "bricks: {:?}: its stats are not the merge of its rows",
                    b.name
                ));
            }
            let mut levels = std::collections::HashSet::with_capacity(b.tiles.len());
            if b.tiles.iter().any(|t| !levels.insert(t.level)) {
                return Err(format!("bricks: {:?} has a tile level twice", b.name));
            }
        }
        crate::profile::phases::check(&self.phase_passes, &self.passes)?;
        self.check_fits()?;
        crate::profile::hardware_counters::check(&self.hardware_counters, |name, row| {
            let rows = self.brick(name)?.rows.iter().filter(|r| r.row == row);
            let (calls, total_ns) = rows.fold((0u64, 0u64), |(c, t), r| {
                (
                    c.saturating_add(r.stats.count()),
                    t.saturating_add(r.stats.total_ns()),
                )
            });
            (calls > 0).then_some((calls, total_ns))
        })?;
        crate::profile::nesting::check(&self.nesting, |name, phase, row| {
            let b = self.brick(name)?;
            Some(
                b.rows
                    .iter()
                    .find(|r| r.row == row && r.phase == phase)
                    .map_or_else(Default::default, |r| crate::profile::nesting::RowTotals {
                        calls: r.stats.count(),
                        total_ns: r.stats.total_ns(),
                        self_ns: r.stats.self_ns(),
                    }),
            )
        })
    }

    /// Merge another profile into this one (threads, ranks, runs). Associative and
    /// commutative on whole profiles; bricks are matched by name, rows by key, tiles by level.
    /// Profiles with different timelines, sync modes or layer counts do not merge, nor do
    /// profiles that describe one brick differently (its category, whether it is built in,
    /// whether it has per-layer rows). The merged profile is in the current format
    /// ([`PROFILE_FORMAT_VERSION`]) and loads again once saved; a refused merge changes
    /// nothing (spec/profile-format.md "Merging").
    pub fn merge(&mut self, other: &Profile) -> Result<()> {
        self.meta.check_mergeable(&other.meta)?;
        if self.checksums.is_some() || other.checksums.is_some() {
            return Err(Error::Merge(
                "profiles with checksums do not merge: checksums identify one run; compare \
                 them with `brickprof diff` instead"
                    .into(),
            ));
        }
        // Index by name once: linear in the number of bricks.
        let index: std::collections::HashMap<String, usize> = self
            .bricks
            .iter()
            .enumerate()
            .map(|(i, b)| (b.name.clone(), i))
            .collect();
        for ob in &other.bricks {
            if let Some(&i) = index.get(&ob.name) {
                mergeable(&self.bricks[i], ob)?;
            }
        }
        let mut merged = self.clone();
        merged.merge_checked(other, &index);
        // What `mergeable` lets through merges into a profile that loads; this keeps it so.
        merged
            .check()
            .map_err(|m| Error::Merge(format!("the merged profile would not load again: {m}")))?;
        *self = merged;
        Ok(())
    }

    /// The merge itself, once [`Profile::merge`] checked that it can be done.
    fn merge_checked(&mut self, other: &Profile, index: &std::collections::HashMap<String, usize>) {
        // Every field, so that a new one does not compile until it has a merge rule.
        let Profile {
            kind: _,           // always a profile
            format_version: _, // the current one (below)
            meta,
            bricks,
            categories: _, // recomputed from the bricks
            unattributed_tiles,
            passes,
            phase_passes,
            checksums: _, // none: `merge` refuses profiles with checksums
            nesting,
            pass_series,
            hardware_counters,
        } = other;
        for ob in bricks {
            match index.get(&ob.name) {
                Some(&i) => {
                    let b = &mut self.bricks[i];
                    b.stats.merge(&ob.stats);
                    merge_rows(&mut b.rows, &ob.rows);
                    merge_tiles(&mut b.tiles, &ob.tiles);
                    merge_fits(&mut b.fits, &ob.fits);
                    b.host_only = b.host_only.saturating_add(ob.host_only);
                }
                None => self.bricks.push(ob.clone()),
            }
        }
        // Keep a canonical order so that merge order does not show: built-ins in enum order,
        // then dynamic bricks by name.
        self.bricks
            .sort_by(|x, y| brick_order(x).cmp(&brick_order(y)));
        merge_tiles(&mut self.unattributed_tiles, unattributed_tiles);
        crate::profile::nesting::merge(&mut self.nesting, nesting);
        self.phase_passes =
            crate::profile::phases::merge(&self.phase_passes, &self.passes, phase_passes, passes);
        self.passes.merge(passes);
        self.pass_series = match (self.pass_series.take(), pass_series) {
            (Some(mut a), Some(b)) => {
                a.merge(b);
                Some(a)
            }
            (a, b) => a.or_else(|| b.clone()),
        };
        // Counters added (brick, row) by (brick, row); a side without them adds none.
        crate::profile::hardware_counters::merge(&mut self.hardware_counters, hardware_counters);
        self.recompute_categories();
        self.meta.merge(meta);
        self.format_version = PROFILE_FORMAT_VERSION; // the layout it is now in
    }
}

/// Whether two profiles' bricks of one name can be merged: they must describe the same brick
/// (category, built in or not), and both or neither have per-layer rows, since a brick's
/// `stats` must stay the merge of its rows. An error naming the brick otherwise.
fn mergeable(a: &BrickProfile, b: &BrickProfile) -> Result<()> {
    let name = crate::base::printable::printable(&a.name);
    if a.category != b.category || a.builtin != b.builtin {
        return Err(Error::Merge(format!(
            "brick \"{name}\" is a different brick in each profile (category {} vs {}, \
             built in: {} vs {})",
            a.category, b.category, a.builtin, b.builtin
        )));
    }
    // A brick without rows but with statistics has no per-layer breakdown (a hand-edited
    // file); one with tiles only has empty statistics and merges with anything.
    let unbroken = |x: &BrickProfile| x.rows.is_empty() && !x.stats.is_empty();
    let rowed = |x: &BrickProfile| !x.rows.is_empty();
    if (unbroken(a) && rowed(b)) || (rowed(a) && unbroken(b)) {
        return Err(Error::Merge(format!(
            "brick \"{name}\" has per-layer rows in one profile and none in the other, so \
             its merged statistics could not be the merge of its rows"
        )));
    }
    Ok(())
}

fn brick_order(b: &BrickProfile) -> (usize, &str) {
    let slot = crate::BrickId::ALL
        .iter()
        .position(|id| b.builtin && id.name() == b.name)
        .unwrap_or(NO_BRICK as usize);
    (slot, b.name.as_str())
}

/// Merge rows sorted by (phase, row) (both sides are: saved and merged rows always are).
pub(crate) fn merge_rows(dst: &mut Vec<RowProfile>, src: &[RowProfile]) {
    dst.sort_by_key(|r| (r.phase, r.row));
    for r in src {
        match dst.binary_search_by_key(&(r.phase, r.row), |d| (d.phase, d.row)) {
            Ok(i) => dst[i].stats.merge(&r.stats),
            Err(i) => dst.insert(i, r.clone()),
        }
    }
}

/// Merge fit sums by phase, keeping phase order.
fn merge_fits(dst: &mut Vec<PhaseFit>, src: &[PhaseFit]) {
    for f in src {
        match dst.iter_mut().find(|d| d.phase == f.phase) {
            Some(d) => d.sums.merge(&f.sums),
            None => dst.push(f.clone()),
        }
    }
    dst.sort_by_key(|f| f.phase);
}

impl Profile {
    /// The fit rules of a loaded profile (spec/profile-format.md "Validation"): each brick's
    /// fits name each phase once, and none has more passes than its phase.
    fn check_fits(&self) -> std::result::Result<(), String> {
        for b in &self.bricks {
            let mut seen = std::collections::HashSet::with_capacity(b.fits.len());
            for f in &b.fits {
                if !seen.insert(f.phase) {
                    return Err(format!(
                        "bricks: {:?} has fits of phase {} twice",
                        b.name, f.phase
                    ));
                }
                let passes = self.phase_passes(f.phase).count();
                if f.sums.passes() > passes {
                    return Err(format!(
                        "bricks: {:?}: fits of phase {} count {} passes, but the phase has {}",
                        b.name,
                        f.phase,
                        f.sums.passes(),
                        passes
                    ));
                }
            }
        }
        Ok(())
    }
}

fn merge_tiles(dst: &mut Vec<TileProfile>, src: &[TileProfile]) {
    for t in src {
        match dst.iter_mut().find(|d| d.level == t.level) {
            Some(d) => d.stats.merge(&t.stats),
            None => dst.push(t.clone()),
        }
    }
    dst.sort_by_key(|t| t.level);
}
