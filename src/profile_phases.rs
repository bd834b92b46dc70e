//! The phase part of a saved [`Profile`] (format version 3): per-phase pass statistics
//! ([`PhasePasses`]), their rules on load and merge, and [`phase_profile`], the fold that turns
//! a phased profile into one that every report reads as before: all phases merged into one row
//! per layer, or one phase's rows and passes alone. spec/profile-format.md "Phases".

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::profile::{BrickProfile, NestingEdge, Profile, RowProfile};
use crate::timeline::Timeline;
use crate::{BrickProfiler, BrickStats, Phase, PhaseFilter};

/// The wall time of one phase's counted passes (elements: the tokens given to their
/// `end_pass`: prompt tokens for a prefill, generated tokens for a decode step).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhasePasses {
    /// The phase.
    pub phase: Phase,
    /// Its passes' wall time statistics.
    pub stats: BrickStats,
}

/// The per-phase pass statistics of a profiler: one entry per phase with passes, in phase
/// order; none when every pass was unspecified (an unshaped run's profile keeps its layout).
pub(crate) fn phase_passes_of<T: Timeline>(prof: &BrickProfiler<T>) -> Vec<PhasePasses> {
    canonical(
        Phase::ALL
            .iter()
            .map(|&phase| PhasePasses {
                phase,
                stats: prof.phase_pass_stats(phase).clone(),
            })
            .collect(),
    )
}

/// Empty entries dropped, sorted by phase, and nothing when only unspecified passes are left.
fn canonical(mut all: Vec<PhasePasses>) -> Vec<PhasePasses> {
    all.retain(|p| !p.stats.is_empty());
    all.sort_by_key(|p| p.phase);
    if all.iter().all(|p| p.phase == Phase::Unspecified) {
        all.clear();
    }
    all
}

/// Every phase's passes, an empty list meaning that all of `passes` were unspecified.
fn expanded(list: &[PhasePasses], passes: &BrickStats) -> Vec<PhasePasses> {
    if list.is_empty() {
        vec![PhasePasses {
            phase: Phase::Unspecified,
            stats: passes.clone(),
        }]
    } else {
        list.to_vec()
    }
}

/// The rules `phase_passes` keeps (spec/profile-format.md "Validation"): each phase once, in
/// phase order, none empty, not only unspecified passes (leave the list out then), and their
/// merge is `passes`.
pub(crate) fn check(list: &[PhasePasses], passes: &BrickStats) -> Result<(), String> {
    if list.is_empty() {
        return Ok(());
    }
    if list.windows(2).any(|w| w[0].phase >= w[1].phase) {
        return Err("phase_passes: phases must each appear once, in phase order".into());
    }
    if list.iter().any(|p| p.stats.is_empty()) {
        return Err("phase_passes: an entry has no passes".into());
    }
    if list.iter().all(|p| p.phase == Phase::Unspecified) {
        return Err(
            "phase_passes: lists only unspecified passes (leave phase_passes out then)".into(),
        );
    }
    if BrickStats::merged(list.iter().map(|p| &p.stats)) != *passes {
        return Err("phase_passes: their merge is not `passes`".into());
    }
    Ok(())
}

/// `dst` (with `dst_passes`, before their merge) merged with `src` (with `src_passes`), by
/// phase. Associative and commutative: an empty list stands for its unspecified passes.
pub(crate) fn merge(
    dst: &[PhasePasses],
    dst_passes: &BrickStats,
    src: &[PhasePasses],
    src_passes: &BrickStats,
) -> Vec<PhasePasses> {
    let mut out = expanded(dst, dst_passes);
    for p in expanded(src, src_passes) {
        match out.iter_mut().find(|d| d.phase == p.phase) {
            Some(d) => d.stats.merge(&p.stats),
            None => out.push(p),
        }
    }
    canonical(out)
}

/// Whether a profile keeps anything per phase (rows, nesting edges or passes of a phase other
/// than unspecified).
pub fn has_phases(profile: &Profile) -> bool {
    !profile.phase_passes.is_empty()
        || profile
            .bricks
            .iter()
            .flat_map(|b| &b.rows)
            .any(|r| r.phase != Phase::Unspecified)
        || profile
            .nesting
            .iter()
            .any(|e| e.phase != Phase::Unspecified)
}

/// The phases a profile has passes or rows of, in phase order.
pub fn phases_of(profile: &Profile) -> Vec<Phase> {
    let mut out: Vec<Phase> = profile
        .bricks
        .iter()
        .flat_map(|b| b.rows.iter().map(|r| r.phase))
        .chain(profile.phase_passes.iter().map(|p| p.phase))
        .collect();
    if profile.phase_passes.is_empty() && !profile.passes.is_empty() {
        out.push(Phase::Unspecified);
    }
    out.sort();
    out.dedup();
    out
}

/// A profile of the passes `filter` selects, in the shape every report reads: with
/// [`PhaseFilter::All`], each brick's rows of every phase merged into one row per layer and the
/// nesting edges likewise (the per-phase pass statistics are kept); with
/// [`PhaseFilter::Only`], only that phase's rows, nesting edges and passes (tiles, which are
/// not split by phase, only when every pass was of that phase). A profile without phases folds
/// to itself under `All` and under `Only(Phase::Unspecified)`.
///
/// ```
/// use brickprof::{phase_profile, BrickId, BrickProfiler, PassShape, Phase, PhaseFilter};
/// let mut prof = BrickProfiler::default();
/// for shape in [PassShape::new(8, 1, 8)?, PassShape::new(1, 1, 9)?] {
///     prof.begin_pass_with(shape);
///     let t = prof.start_brick(BrickId::Attention);
///     prof.stop_brick(t, 1);
///     prof.end_pass(u64::from(shape.new_tokens()))?;
/// }
/// let p = prof.profile();
/// let decode = phase_profile(&p, PhaseFilter::Only(Phase::Decode));
/// assert_eq!(decode.brick("Attention").unwrap().stats.count(), 1);
/// assert_eq!(decode.passes.count(), 1);
/// let all = phase_profile(&p, PhaseFilter::All);
/// assert_eq!(all.brick("Attention").unwrap().rows.len(), 1);
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn phase_profile(profile: &Profile, filter: PhaseFilter) -> Profile {
    folded(profile, filter).into_owned()
}

/// [`phase_profile`], borrowing when nothing changes (a profile without phases, under `All`).
pub(crate) fn folded(profile: &Profile, filter: PhaseFilter) -> Cow<'_, Profile> {
    match filter {
        PhaseFilter::All if !has_phases(profile) => Cow::Borrowed(profile),
        PhaseFilter::All => Cow::Owned(fold_all(profile)),
        PhaseFilter::Only(phase) => Cow::Owned(only(profile, phase)),
    }
}

/// Every phase's rows and edges merged into unspecified ones.
fn fold_all(profile: &Profile) -> Profile {
    let mut p = profile.clone();
    for b in &mut p.bricks {
        let rows = std::mem::take(&mut b.rows);
        for mut r in rows {
            r.phase = Phase::Unspecified;
            crate::profile::merge_rows(&mut b.rows, std::slice::from_ref(&r));
        }
    }
    let edges = std::mem::take(&mut p.nesting);
    for mut e in edges {
        e.phase = Phase::Unspecified;
        crate::profile_nesting::merge(&mut p.nesting, std::slice::from_ref(&e));
    }
    p
}

/// One phase's rows, edges and passes.
fn only(profile: &Profile, phase: Phase) -> Profile {
    let single = phases_of(profile) == [phase];
    let mut p = profile.clone();
    p.bricks = profile
        .bricks
        .iter()
        .filter_map(|b| {
            let rows: Vec<RowProfile> =
                b.rows.iter().filter(|r| r.phase == phase).cloned().collect();
            // A brick without rows (a hand-made file) has no phase: its own when single.
            let stats = if b.rows.is_empty() && single {
                b.stats.clone()
            } else {
                BrickStats::merged(rows.iter().map(|r| &r.stats))
            };
            let tiles = if single { b.tiles.clone() } else { Vec::new() };
            (!stats.is_empty() || !tiles.is_empty()).then(|| BrickProfile {
                stats,
                rows,
                tiles,
                ..b.clone()
            })
        })
        .collect();
    if !single {
        p.unattributed_tiles.clear();
    }
    p.nesting = profile
        .nesting
        .iter()
        .filter(|e| e.phase == phase)
        .cloned()
        .collect::<Vec<NestingEdge>>();
    let passes = expanded(&profile.phase_passes, &profile.passes)
        .into_iter()
        .find(|x| x.phase == phase)
        .map(|x| x.stats)
        .unwrap_or_default();
    p.meta.counters.passes = passes.count();
    p.meta.counters.tokens = passes.work().elements;
    p.phase_passes = canonical(vec![PhasePasses {
        phase,
        stats: passes.clone(),
    }]);
    p.passes = passes;
    p.recompute_categories();
    p
}
