//! The one builder of a run's facts ([`RunMeta`]): what [`BrickProfiler::profile`] and
//! [`View::trace_view`](crate::profiler::View::trace_view) both carry, so a profile and a trace of one run say the same.

use super::shelf::{Facts, Ledger};
use super::{BrickProfiler, Tracer};
use crate::profile::run_meta::RunMeta;
use crate::timeline::Timeline;
use crate::Phase;

impl<T: Timeline> BrickProfiler<T> {
    /// This run's facts as they stand now (spec/profile-format.md "The profile file", `meta`).
    pub(crate) fn run_meta(&self) -> RunMeta {
        run_meta_of(self.ledger(), &self.facts())
    }
}

/// The one builder of a run's facts, from a profiler's ledger and the facts kept outside it:
/// the profiler's own profile and trace view, and the thread front door's collector (which
/// reads a thread's shelf, spec/front-doors.md "Publishing"), all build their [`RunMeta`] here.
pub(crate) fn run_meta_of(ledger: &Ledger, facts: &Facts) -> RunMeta {
    RunMeta {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        timeline: facts.timeline,
        sync_mode: facts.sync_mode,
        host: host_name(),
        created_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        layers: ledger.rows().layers(),
        counters: ledger.counters(&facts.counters),
        merged_from: 1,
        peaks: None,
        timer_resolution_ns: Some(facts.resolution_ns),
        mark_cost_ns: facts.mark_cost_ns,
        sampling: facts.sampling,
        calibration_bound_ns: facts.calibration_bound_ns,
        run_id: None,
        rank: ledger.trace.as_ref().map(Tracer::rank),
        phases: phases_seen(ledger),
        // Sorted, as RunMeta keeps it and a merge writes it (`union` with nothing).
        untimed_graphs: crate::profile::untimed_graphs::union(facts.untimed_graphs.as_slice(), &[]),
        outside_bricks: facts.outside_bricks,
    }
}

/// The phases of the counted passes, in order; none when every pass was unshaped (so an
/// unshaped run's facts are what they were before phases).
fn phases_seen(ledger: &Ledger) -> Vec<Phase> {
    let seen: Vec<Phase> = Phase::ALL
        .into_iter()
        .filter(|&p| ledger.phase_pass_stats(p).count() > 0)
        .collect();
    if seen.iter().all(Phase::is_unspecified) {
        return Vec::new();
    }
    seen
}

/// The machine's host name, or "unknown".
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}
