//! [`phase_profile`]: the fold that turns a phased [`Profile`] into one that every report reads
//! as before: all phases merged into one row per layer, or one phase's rows and passes alone
//! (spec/profile-format.md "Phases"). Above `profile`: it reads profiles, never the reverse.

use std::borrow::Cow;

use crate::profile::phases::{canonical, expanded};
use crate::profile::{BrickProfile, NestingEdge, PhasePasses, Profile, RowProfile};
use crate::{model::PhaseFilter, stats::BrickStats, Phase};

/// Whether a profile keeps anything per phase (rows, nesting edges or passes of a phase other
/// than unspecified).
pub(crate) fn has_phases(profile: &Profile) -> bool {
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
pub(crate) fn phases_of(profile: &Profile) -> Vec<Phase> {
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
/// use brickprof::{profile::phase_profile, BrickId, BrickProfiler, PassShape, Phase, model::PhaseFilter};
/// let mut prof = BrickProfiler::default();
/// for shape in [PassShape::new(8, 1, 8)?, PassShape::new(1, 1, 9)?] {
///     prof.begin_pass();
///     prof.set_pass_shape(shape);
///     let t = prof.start_brick(BrickId::AttentionScore);
///     prof.stop_brick(t, 1);
///     prof.end_pass(u64::from(shape.new_tokens()))?;
/// }
/// let p = prof.profile();
/// let decode = phase_profile(&p, PhaseFilter::Only(Phase::Decode));
/// assert_eq!(decode.brick("AttentionScore").unwrap().stats.summary().count, 1);
/// assert_eq!(decode.passes.summary().count, 1);
/// let all = phase_profile(&p, PhaseFilter::All);
/// assert_eq!(all.brick("AttentionScore").unwrap().rows.len(), 1);
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
        crate::profile::nesting::merge(&mut p.nesting, std::slice::from_ref(&e));
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
            let rows: Vec<RowProfile> = b
                .rows
                .iter()
                .filter(|r| r.phase == phase)
                .cloned()
                .collect();
            // A brick without rows (a hand-made file) has no phase: its own when single.
            let stats = if b.rows.is_empty() && single {
                b.stats.clone()
            } else {
                BrickStats::merged(rows.iter().map(|r| &r.stats))
            };
            let tiles = if single { b.tiles.clone() } else { Vec::new() };
            let fits = b
                .fits
                .iter()
                .filter(|f| f.phase == phase)
                .cloned()
                .collect();
            (!stats.is_empty() || !tiles.is_empty()).then(|| BrickProfile {
                // Counted over every phase: at most the phase's calls.
                host_only: b.host_only.min(stats.count()),
                stats,
                rows,
                tiles,
                fits,
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
    // TTFT and TPOT span both phases: they belong to the whole run's report, not to one
    // phase's (spec/profile-format.md "Reports").
    p.pass_series = None;
    // Hardware counters come from imports, whose calls are all unspecified.
    if phase != Phase::Unspecified {
        p.hardware_counters.clear();
    }
    p.recompute_categories();
    p
}
