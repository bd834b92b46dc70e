//! The phase part of a saved [`crate::Profile`] (format version 3): per-phase pass statistics
//! ([`PhasePasses`]) and their rules on load and merge. The fold that turns a phased profile
//! into the shape every report reads is `phase_view`. spec/profile-format.md "Phases".

use serde::{Deserialize, Serialize};

use crate::{stats::BrickStats, Phase};

/// The wall time of one phase's counted passes (elements: the tokens given to their
/// `end_pass`: prompt tokens for a prefill, generated tokens for a decode step).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhasePasses {
    /// The phase.
    pub phase: Phase,
    /// Its passes' wall time statistics.
    pub stats: BrickStats,
}

/// Empty entries dropped, sorted by phase, and nothing when only unspecified passes are left.
pub(crate) fn canonical(mut all: Vec<PhasePasses>) -> Vec<PhasePasses> {
    all.retain(|p| !p.stats.is_empty());
    all.sort_by_key(|p| p.phase);
    if all.iter().all(|p| p.phase == Phase::Unspecified) {
        all.clear();
    }
    all
}

/// Every phase's passes, an empty list meaning that all of `passes` were unspecified.
pub(crate) fn expanded(list: &[PhasePasses], passes: &BrickStats) -> Vec<PhasePasses> {
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
