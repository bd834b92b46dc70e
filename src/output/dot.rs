//! The execution graph in Graphviz DOT (`brickprof report --dot out.dot`): one node per brick
//! with its calls, self time and inclusive time, one edge per nesting relation (parent brick ->
//! child brick) labelled with how many calls nested there, over every row. A profile without
//! nesting gives a valid graph of unconnected nodes (spec/work-accounting.md "Brick tree").

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::figures::units::duration;
use crate::Profile;

/// The graph as DOT text (`dot -Tsvg` renders it): the `dot` output.
///
/// ```
/// use brickprof::{BrickId, BrickProfiler, output::{output, Snapshot}};
/// let mut prof = BrickProfiler::default();
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.end_pass(1).unwrap();
/// let (profile, opts) = (prof.profile(), Default::default());
/// let mut dot = Vec::new();
/// output("dot").unwrap().write(&Snapshot::Profile(&profile, &opts), &mut dot)?;
/// let dot = String::from_utf8(dot).unwrap();
/// assert!(dot.starts_with("digraph brickprof {") && dot.contains("\"RmsNorm\""));
/// # Ok::<(), brickprof::Error>(())
/// ```
pub(crate) fn render_dot(profile: &Profile) -> String {
    let profile = &*crate::profile::phase_view::folded(profile, crate::model::PhaseFilter::All);
    let mut out = String::from("digraph brickprof {\n");
    out.push_str("  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fillcolor=\"#fdf6e3\", fontname=\"monospace\"];\n");
    out.push_str("  edge [fontname=\"monospace\"];\n");
    let whole = profile.total_ns().max(1) as f64;
    for b in &profile.bricks {
        let s = &b.stats;
        if s.count() == 0 {
            continue;
        }
        let _ = writeln!(
            out,
            "  {} [label=\"{}\\n{} calls\\nself {} ({:.1}%)\\nincl {}\", tooltip=\"{}\"];",
            quoted(&b.name),
            label(&b.name),
            s.count(),
            duration(s.self_ns() as f64).trim(),
            s.self_ns() as f64 / whole * 100.0,
            duration(s.total_ns() as f64).trim(),
            label(b.category.name()),
        );
    }
    let mut edges: BTreeMap<(&str, &str), (u64, u64)> = BTreeMap::new();
    for e in &profile.nesting {
        let x = edges.entry((&e.parent, &e.child)).or_default();
        x.0 = x.0.saturating_add(e.calls);
        x.1 = x.1.saturating_add(e.total_ns);
    }
    for ((parent, child), (calls, ns)) in edges {
        let _ = writeln!(
            out,
            "  {} -> {} [label=\"{calls} calls\\n{}\"];",
            quoted(parent),
            quoted(child),
            duration(ns as f64).trim(),
        );
    }
    out.push_str("}\n");
    out
}

/// A DOT quoted identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", label(name))
}

/// Text inside a DOT quoted string: printable, with quotes and backslashes escaped.
fn label(s: &str) -> String {
    crate::base::printable::printable(s)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn names_cannot_break_out_of_a_quoted_string() {
        // spec/work-accounting.md "Brick tree"
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c d");
    }
}
