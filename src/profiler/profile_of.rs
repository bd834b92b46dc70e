//! From the profiler's books to a [`Profile`]: the one place the profiler hands its ledger over
//! as plain data, so that `profile` never imports the profiler (the data flows one way).

use super::{BrickProfiler, Facts, Ledger};
use crate::io::json_file::FileKind;
use crate::profile::{
    BrickProfile, NestingEdge, PhaseFit, PhasePasses, RowProfile, TileProfile,
    PROFILE_FORMAT_VERSION,
};
use crate::timeline::Timeline;
use crate::{
    stats::{BrickStats, TileLevel, TileStats},
    BrickCategory, Phase, Profile,
};

impl<T: Timeline> BrickProfiler<T> {
    /// A snapshot of everything resolved so far, ready to save or report. Pending
    /// measurements are not included: call [`BrickProfiler::finalize`] first.
    pub fn profile(&self) -> Profile {
        let mut profile = profile_of(self.ledger(), &self.facts());
        let log = self.checksums.log();
        profile.checksums = (!log.entries.is_empty()).then(|| log.clone());
        profile
    }
}

/// The profile of a profiler's ledger, with `facts` for the run facts kept outside it and
/// no checksum log (the caller adds its own). The thread-local front door's collector
/// builds its threads' profiles here, from their shelves (spec/front-doors.md
/// "Publishing").
pub(crate) fn profile_of(ledger: &Ledger, facts: &Facts) -> Profile {
    let names = ledger.registry();
    let mut bricks = Vec::new();
    let handles = names
        .handles()
        .filter(|h| h.builtin().is_some())
        .chain(names.dynamic_by_name());
    for h in handles {
        let mut rows = Vec::new();
        let rows_of = ledger.rows();
        // Sorted by (phase, row), as merges keep them.
        for phase in Phase::ALL {
            for row in rows_of.iter().map(|r| rows_of.kind(r)) {
                if let Some(s) = ledger
                    .phase_row_stats(phase, row, h)
                    .filter(|s| !s.is_empty())
                {
                    rows.push(RowProfile {
                        phase,
                        row,
                        stats: s.clone(),
                    });
                }
            }
        }
        let tiles = tile_profiles(|l| ledger.tile_stats(h, l));
        let fits: Vec<PhaseFit> = Phase::ALL
            .into_iter()
            .filter_map(|phase| {
                let sums = ledger.fit_sums(h, phase).filter(|f| !f.is_empty())?;
                Some(PhaseFit { phase, sums: *sums })
            })
            .collect();
        if rows.is_empty() && tiles.is_empty() {
            continue;
        }
        bricks.push(BrickProfile {
            name: names.name(h).unwrap_or("?").to_string(),
            category: names.category(h).unwrap_or(BrickCategory::Other),
            builtin: h.builtin().is_some(),
            stats: BrickStats::merged(rows.iter().map(|r| &r.stats)),
            rows,
            tiles,
            fits,
            host_only: ledger.host_only(h),
        });
    }
    let mut profile = Profile {
        kind: FileKind::Profile,
        format_version: PROFILE_FORMAT_VERSION,
        meta: super::run_meta_of(ledger, facts),
        bricks,
        unattributed_tiles: tile_profiles(|l| Some(ledger.unattributed_tile_stats(l))),
        passes: ledger.pass_stats().clone(),
        phase_passes: phase_passes_of(ledger),
        checksums: None,
        categories: Vec::new(),
        nesting: edges_of(ledger),
        pass_series: ledger.pass_series(),
        hardware_counters: Vec::new(),
    };
    profile.recompute_categories();
    profile
}

fn tile_profiles<'a>(get: impl Fn(TileLevel) -> Option<&'a TileStats>) -> Vec<TileProfile> {
    TileLevel::ALL
        .iter()
        .filter_map(|&level| {
            get(level).filter(|s| !s.is_empty()).map(|s| TileProfile {
                level,
                stats: s.clone(),
            })
        })
        .collect()
}

/// The edges a profiler recorded, sorted by (parent, child, phase, row).
fn edges_of(prof: &Ledger) -> Vec<NestingEdge> {
    let (calls, _) = prof.nested_calls();
    let names = prof.registry();
    let mut out: Vec<NestingEdge> = calls
        .into_iter()
        .filter(|c| c.calls > 0)
        .filter_map(|c| {
            Some(NestingEdge {
                parent: names.name(c.parent)?.to_string(),
                child: names.name(c.child)?.to_string(),
                phase: c.phase,
                row: c.row,
                calls: c.calls,
                total_ns: c.total_ns,
                self_ns: c.self_ns,
            })
        })
        .collect();
    out.sort_by(|a, b| a.key().cmp(&b.key()));
    out
}

/// The per-phase pass statistics of a profiler's ledger: one entry per phase with passes, in
/// phase order; none when every pass was unspecified (an unshaped run's profile keeps its
/// layout).
fn phase_passes_of(prof: &Ledger) -> Vec<PhasePasses> {
    crate::profile::phases::canonical(
        Phase::ALL
            .iter()
            .map(|&phase| PhasePasses {
                phase,
                stats: prof.phase_pass_stats(phase).clone(),
            })
            .collect(),
    )
}
