//! [`OutsideBricks`]: device activity that no brick covered (spec/sync-modes.md "CUPTI",
//! "Outside any brick"; spec/profile-format.md "The profile file", `meta`). A timeline that reads
//! the device's own records (CUPTI) sees every kernel, copy and set, also those launched between
//! bricks or with no brick open; they are counted here, with their summed device time, never
//! dropped.

use serde::{Deserialize, Serialize};

use crate::base::exact_int;

/// Kernels, memory copies and sets outside any brick, and their summed device time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutsideBricks {
    /// Kernels.
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    pub kernels: u64,
    /// Memory copies and sets.
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    pub memory_ops: u64,
    /// Their durations, summed (ns; overlapping records each count in full).
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    pub busy_ns: u64,
}

impl OutsideBricks {
    /// Nothing outside any brick.
    pub(crate) fn is_empty(&self) -> bool {
        self.kernels == 0 && self.memory_ops == 0 && self.busy_ns == 0
    }

    /// Add another tally to this one (saturating).
    pub(crate) fn merge(&mut self, other: OutsideBricks) {
        self.kernels = self.kernels.saturating_add(other.kernels);
        self.memory_ops = self.memory_ops.saturating_add(other.memory_ops);
        self.busy_ns = self.busy_ns.saturating_add(other.busy_ns);
    }

    /// The merge of two optional tallies: `None` only when both are.
    pub(crate) fn merged(a: Option<OutsideBricks>, b: Option<OutsideBricks>) -> Option<Self> {
        match (a, b) {
            (Some(mut a), Some(b)) => {
                a.merge(b);
                Some(a)
            }
            (a, b) => a.or(b),
        }
    }
}
