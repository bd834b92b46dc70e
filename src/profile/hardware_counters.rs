//! A profile's `hardware_counters` (spec/profile-format.md "Hardware counters"): what a vendor
//! profiler counted per (brick, row) of an import, checked on load and merged with the
//! profile.

use crate::model::row_key::RowKey;
use crate::stats::brick_counters::BrickCounters;

/// The rules a loaded profile's counters keep: each names a brick and row the profile has
/// (`row_of`: that row's calls and total time over every phase), each (brick, row) once, at
/// least one call and no more than the row made, at least one kernel a call, no more time
/// than the row's. The fault, naming the entry, when one breaks.
pub(crate) fn check(
    counters: &[BrickCounters],
    row_of: impl Fn(&str, RowKey) -> Option<(u64, u64)>,
) -> Result<(), String> {
    let mut seen = std::collections::HashSet::with_capacity(counters.len());
    for c in counters {
        let at = || format!("hardware_counters: {:?} in row {}", c.brick, c.row);
        let Some((calls, total_ns)) = row_of(&c.brick, c.row) else {
            return Err(format!("{}: the profile has no such brick row", at()));
        };
        if !seen.insert((c.brick.as_str(), c.row)) {
            return Err(format!("{} appears twice", at()));
        }
        if c.calls == 0 || c.calls > calls {
            return Err(format!(
                "{}: {} calls counted, but the row made {calls}",
                at(),
                c.calls
            ));
        }
        if c.kernels < c.calls {
            return Err(format!(
                "{}: {} kernels in {} calls (a call has at least one)",
                at(),
                c.kernels,
                c.calls
            ));
        }
        if c.time_ns > total_ns {
            return Err(format!(
                "{}: {} ns counted, but the row's time is {total_ns} ns",
                at(),
                c.time_ns
            ));
        }
    }
    Ok(())
}

/// Add `src`'s counters to `dst`'s, (brick, row) by (brick, row); a pair only one side has is
/// kept as it is (its counters cover the calls that were counted). Sorted as an import sorts
/// them (built-in bricks in their order, then by name; rows in order), so that merge order
/// does not show.
pub(crate) fn merge(dst: &mut Vec<BrickCounters>, src: &[BrickCounters]) {
    let index: std::collections::HashMap<(String, RowKey), usize> = dst
        .iter()
        .enumerate()
        .map(|(i, d)| ((d.brick.clone(), d.row), i))
        .collect();
    for s in src {
        match index.get(&(s.brick.clone(), s.row)) {
            Some(&i) => dst[i].merge(s),
            None => dst.push(s.clone()),
        }
    }
    sort(dst);
}

/// Built-in bricks in their order, then the others by name; rows in order.
pub(crate) fn sort(counters: &mut [BrickCounters]) {
    let order = |name: &str| {
        crate::BrickId::ALL
            .iter()
            .position(|b| b.name() == name)
            .unwrap_or(usize::MAX)
    };
    counters.sort_by(|a, b| {
        (order(&a.brick), &a.brick, a.row).cmp(&(order(&b.brick), &b.brick, b.row))
    });
}
