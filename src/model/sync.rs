//! When the profiler synchronizes with its timeline ([`SyncMode`]) and what it does when its
//! pending buffer is full ([`OverflowPolicy`]). The behaviour of each is specified in
//! `spec/sync-modes.md`.

use serde::{Deserialize, Serialize};
use strum::{EnumIter, EnumString, IntoStaticStr};

/// When marks are synchronized and resolved into durations.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    EnumIter,
    EnumString,
    IntoStaticStr,
    strum::Display,
    Serialize,
    Deserialize,
)]
#[strum(ascii_case_insensitive, serialize_all = "kebab-case")]
#[serde(rename_all = "kebab-case")]
pub enum SyncMode {
    /// Sync and resolve at every `stop_brick`: exact device time, one sync per brick (slow).
    Immediate,
    /// Resolve at each layer boundary (`end_layer`), and at `finalize`/`end_pass`.
    #[strum(to_string = "per-layer", serialize = "perlayer", serialize = "layer")]
    PerLayer,
    /// Marks only during the pass; one sync and resolve in `finalize`/`end_pass`.
    #[default]
    Deferred,
    /// Marks only during the pass; `end_pass` never waits: it asks the timeline which earlier
    /// passes' marks were reached and resolves those, keeping at most
    /// `max_passes_in_flight` passes unresolved (spec/sync-modes.md "Lagged"). A timeline
    /// without [`crate::timeline::LaggedPolling`] syncs at every `end_pass` instead, each one counted in
    /// [`crate::model::Counters::blocking_waits`].
    Lagged,
    /// Never sync: record host-side dispatch time (launch overhead) only.
    None,
}

/// What `stop_brick` does when the pending buffer is full.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    EnumString,
    IntoStaticStr,
    strum::Display,
    Serialize,
    Deserialize,
)]
#[strum(ascii_case_insensitive, serialize_all = "kebab-case")]
#[serde(rename_all = "kebab-case")]
pub enum OverflowPolicy {
    /// Sync and resolve everything pending now, then keep going (exact, costs one sync).
    #[default]
    Flush,
    /// Drop the new measurement and count it; reports show the count.
    Drop,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print() {
        for (s, m) in [
            ("immediate", SyncMode::Immediate),
            ("per-layer", SyncMode::PerLayer),
            ("PerLayer", SyncMode::PerLayer),
            ("deferred", SyncMode::Deferred),
            ("lagged", SyncMode::Lagged),
            ("Lagged", SyncMode::Lagged),
            ("none", SyncMode::None),
        ] {
            assert_eq!(s.parse::<SyncMode>().unwrap(), m, "{s}");
        }
        assert_eq!(<&str>::from(SyncMode::PerLayer), "per-layer");
        assert_eq!(<&str>::from(SyncMode::Lagged), "lagged");
        assert_eq!(SyncMode::default(), SyncMode::Deferred);
        assert_eq!(
            "drop".parse::<OverflowPolicy>().unwrap(),
            OverflowPolicy::Drop
        );
    }
}
