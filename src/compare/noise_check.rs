//! Whether a noise run may set the timing verdicts' bands (spec/timing-verdicts.md "Noise
//! runs must be of the reference's model"): a run of the reference setup is from the same
//! machine, timeline and sync mode, and of the same model: the same bricks, layers and phases.
//! A run of another model (two layers against one) has other per-pass times, and its distance
//! from the reference would widen every band until a real regression reads as noise.

use std::collections::BTreeSet;

use super::timing_verdict::{comparable, Withheld};
use super::verdicts::withheld_text;
use crate::base::printable::printable;
use crate::{Phase, Profile};

/// Why `noise` cannot be a noise run of `reference`'s timings, in words a user can act on;
/// `None` when it can. `across_machines` (`--timing-across-machines`) lifts the machine,
/// timeline and sync-mode check, never the model's.
pub(crate) fn noise_run_problem(
    reference: &Profile,
    noise: &Profile,
    across_machines: bool,
) -> Option<String> {
    if let Some(w) = comparable(&reference.meta, &noise.meta, across_machines) {
        let what = match w {
            Withheld::DifferentMachines => "host",
            _ => "timeline or sync mode",
        };
        return Some(format!(
            "not a noise run of the reference: {} (its {what} differs; \
             --timing-across-machines judges them anyway)",
            withheld_text(w)
        ));
    }
    let other = "not a noise run of the reference: another model";
    if reference.meta.layers != noise.meta.layers {
        return Some(format!(
            "{other} ({} layers, the reference {})",
            noise.meta.layers, reference.meta.layers
        ));
    }
    let (ours, theirs) = (bricks(reference), bricks(noise));
    if ours != theirs {
        let list = |a: &BTreeSet<&str>, b: &BTreeSet<&str>| {
            let names: Vec<String> = a
                .difference(b)
                .take(3)
                .map(|n| printable(n).into_owned())
                .collect();
            let more = a.difference(b).count().saturating_sub(3);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("{}{tail}", names.join(", "))
        };
        let mut parts = Vec::new();
        if theirs.difference(&ours).next().is_some() {
            parts.push(format!("only here: {}", list(&theirs, &ours)));
        }
        if ours.difference(&theirs).next().is_some() {
            parts.push(format!("only in the reference: {}", list(&ours, &theirs)));
        }
        return Some(format!("{other} (bricks differ: {})", parts.join("; ")));
    }
    match (&reference.pass_series, &noise.pass_series) {
        (Some(_), None) => {
            return Some(
                "not a noise run of the reference: it has no pass series (the reference has)"
                    .to_string(),
            )
        }
        (Some(_), Some(_)) => {
            let (pa, pb) = (phases(reference), phases(noise));
            if pa != pb {
                let names = |s: &BTreeSet<Phase>| {
                    s.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Some(format!(
                    "{other} (passes of {}, the reference's of {})",
                    names(&pb),
                    names(&pa)
                ));
            }
        }
        _ => {}
    }
    None
}

/// The names of the bricks with a measurement.
fn bricks(p: &Profile) -> BTreeSet<&str> {
    p.bricks
        .iter()
        .filter(|b| !b.stats.is_empty())
        .map(|b| b.name.as_str())
        .collect()
}

/// The phases of the pass series' records.
fn phases(p: &Profile) -> BTreeSet<Phase> {
    p.pass_series
        .iter()
        .flat_map(|s| s.records().map(|r| r.phase()))
        .collect()
}
