//! [`Profile`]: the saved form of a profiler run (versioned JSON), taken from a
//! [`BrickProfiler`](crate::BrickProfiler) with [`BrickProfiler::profile`](crate::BrickProfiler::profile), loaded back with clear errors, and merged
//! across threads, ranks or runs. Every field is documented in `spec/profile-format.md`.

pub(crate) mod generated;
pub(crate) mod hardware_counters;
pub(crate) mod nesting;
pub(crate) mod phase_view;
pub(crate) mod phases;
pub(crate) mod run_file;
pub(crate) mod run_meta;
pub(crate) mod saved;
pub(crate) mod trace;
pub(crate) mod untimed_graphs;

#[cfg(test)]
mod tests;

pub use crate::model::row_key::RowKey;
pub use generated::{GeneratedTokens, TokenAt, TokenDifference, TOKENS_FILE};
pub use nesting::NestingEdge;
pub use phase_view::phase_profile;
pub(crate) use phase_view::phases_of;
pub use phases::PhasePasses;
pub(crate) use run_file::RunFile;
pub use run_meta::RunMeta;
pub(crate) use saved::{merge_rows, Profile, PROFILE_FORMATS_READ};
pub use saved::{
    BrickProfile, CategoryProfile, PhaseFit, RowProfile, TileProfile, PROFILE_FORMAT_VERSION,
};
pub use trace::{PassSample, TraceEvent, TraceView, Track};
