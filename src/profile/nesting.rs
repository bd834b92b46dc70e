//! The nesting part of a saved [`crate::Profile`]: [`NestingEdge`]s, "brick B ran directly
//! inside brick A in row R, N times", taken from a profiler's books, checked on load and merged
//! by key. Reports draw the brick tree from them (flamegraph, DOT). A profile without nesting
//! (the demo's bricks never nest, and files written before 0.4) has none: a flat tree.
//! spec/profile-format.md "Nesting".

use serde::{Deserialize, Serialize};

use crate::model::row_key::RowKey;
use crate::Phase;

/// One nesting edge of a [`crate::Profile`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NestingEdge {
    /// The enclosing brick's name.
    pub parent: String,
    /// The brick that ran directly inside it.
    pub child: String,
    /// The phase of the passes it ran in (format version 3; absent: unspecified).
    #[serde(default, skip_serializing_if = "Phase::is_unspecified")]
    pub phase: Phase,
    /// The child's row.
    pub row: RowKey,
    /// How many of the child's calls in that row ran directly inside `parent`.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub calls: u64,
    /// The child's inclusive time in those calls, ns.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub total_ns: u64,
    /// The child's self time in those calls, ns.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub self_ns: u64,
}

impl NestingEdge {
    pub(crate) fn key(&self) -> (&str, &str, Phase, RowKey) {
        (&self.parent, &self.child, self.phase, self.row)
    }
}

/// What a brick did in one row, as [`check`] needs it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RowTotals {
    pub(crate) calls: u64,
    pub(crate) total_ns: u64,
    pub(crate) self_ns: u64,
}

/// The rules nesting edges keep (spec/profile-format.md "Nesting"): both ends are bricks of the
/// profile, each (parent, child, row) once, at least one call, self time at most inclusive
/// time; and over every edge into one child in one row of one phase, no more calls, inclusive
/// time or self time than the child had in that row (each of its calls runs directly inside one
/// parent at most, so its edges share out what it did).
/// `row_of(brick, phase, row)`: what `brick` did in `row` in `phase`'s passes, `None` when the
/// profile has no such brick.
pub(crate) fn check(
    edges: &[NestingEdge],
    row_of: impl Fn(&str, Phase, RowKey) -> Option<RowTotals>,
) -> Result<(), String> {
    let mut seen = std::collections::HashSet::with_capacity(edges.len());
    // Per (child, phase, row): the sums of its edges so far.
    let mut into: std::collections::HashMap<(&str, Phase, RowKey), RowTotals> =
        std::collections::HashMap::new();
    for e in edges {
        let (Some(_), Some(child)) = (
            row_of(&e.parent, e.phase, e.row),
            row_of(&e.child, e.phase, e.row),
        ) else {
            return Err(format!(
                "nesting: {:?} -> {:?} names a brick the profile does not have",
                e.parent, e.child
            ));
        };
        if !seen.insert(e.key()) {
            return Err(format!(
                "nesting: {:?} -> {:?} in row {} appears twice",
                e.parent, e.child, e.row
            ));
        }
        if e.calls == 0 || e.calls > child.calls || e.self_ns > e.total_ns {
            return Err(format!(
                "nesting: {:?} -> {:?} in row {}: {} calls ({} made there), self {} ns of {} ns",
                e.parent, e.child, e.row, e.calls, child.calls, e.self_ns, e.total_ns
            ));
        }
        let sum = into.entry((&e.child, e.phase, e.row)).or_default();
        sum.calls = sum.calls.saturating_add(e.calls);
        sum.total_ns = sum.total_ns.saturating_add(e.total_ns);
        sum.self_ns = sum.self_ns.saturating_add(e.self_ns);
        if sum.calls > child.calls || sum.total_ns > child.total_ns || sum.self_ns > child.self_ns {
            return Err(format!(
                "nesting: the edges into {:?} in row {} claim {} calls, {} ns inclusive and {} ns \
                 self, more than it had there ({} calls, {} ns, {} ns self)",
                e.child,
                e.row,
                sum.calls,
                sum.total_ns,
                sum.self_ns,
                child.calls,
                child.total_ns,
                child.self_ns
            ));
        }
    }
    Ok(())
}

/// Add `src`'s edges into `dst` by key; `dst` stays sorted.
pub(crate) fn merge(dst: &mut Vec<NestingEdge>, src: &[NestingEdge]) {
    for e in src {
        match dst.iter_mut().find(|d| d.key() == e.key()) {
            Some(d) => {
                d.calls = d.calls.saturating_add(e.calls);
                d.total_ns = d.total_ns.saturating_add(e.total_ns);
                d.self_ns = d.self_ns.saturating_add(e.self_ns);
            }
            None => dst.push(e.clone()),
        }
    }
    dst.sort_by(|a, b| a.key().cmp(&b.key()));
}
