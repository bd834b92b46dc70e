//! The JUnit XML file of `diff --junit` and `report --junit` (spec/timing-verdicts.md "Gates,
//! budgets and the exit code"): the gates' and budgets' results as test results CI systems
//! show.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use brickprof::output::xml_safe;
use brickprof::Result;

use crate::budget::BudgetCheck;
use crate::gate::{Gate, GateOutcome};

/// Write [`render`]'s file to `path`.
pub fn write(path: &Path, gates: Option<&GateOutcome<'_>>, budgets: &[BudgetCheck]) -> Result<()> {
    let mut out = brickprof::io::OutputFile::create(path)?;
    out.write_all(render(gates, budgets).as_bytes())
        .map_err(|source| brickprof::Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
    out.commit()
}

/// The JUnit XML of a gate outcome and budget checks: one test suite `brickprof timing`, one
/// test case per gated row (`[phase] name`, a `<failure>` when it fails, `<skipped>` when its
/// verdict was withheld) and one per budget (`budget [phase] name pN`, a `<failure>` when
/// exceeded). Names are escaped for XML.
pub fn render(gates: Option<&GateOutcome<'_>>, budgets: &[BudgetCheck]) -> String {
    let empty = GateOutcome { gated: Vec::new() };
    let outcome = gates.unwrap_or(&empty);
    let failures = outcome.gated.iter().filter(|(_, g)| !g.is_empty()).count()
        + budgets.iter().filter(|b| b.exceeded()).count();
    let skipped = outcome.gated.iter().filter(|(r, _)| !r.judged()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites><testsuite name=\"brickprof timing\" tests=\"{}\" failures=\"{failures}\" \
         skipped=\"{skipped}\">",
        outcome.gated.len() + budgets.len()
    );
    for (row, failed) in &outcome.gated {
        let name = xml(&format!("[{}] {}", row.phase, row.label()));
        let _ = write!(
            out,
            "  <testcase classname=\"brickprof.timing\" name=\"{name}\">"
        );
        match (row.judgement, row.withheld) {
            (_, Some(w)) => {
                let _ = write!(out, "<skipped message=\"{}\"/>", xml(&w.to_string()));
            }
            (Some(_), None) if row.cannot_judge => {
                let why = row.cannot_judge_text().unwrap_or_default();
                let _ = write!(out, "<skipped message=\"{}\"/>", xml(&why));
            }
            (Some(j), None) if !failed.is_empty() => {
                let gates: Vec<String> = failed.iter().map(Gate::to_string).collect();
                let _ = write!(
                    out,
                    "<failure message=\"{:+.1} % slower (95 % interval {:+.1} to {:+.1} %), \
                     fails {}\"/>",
                    (j.ratio - 1.0) * 100.0,
                    (j.interval.lo - 1.0) * 100.0,
                    (j.interval.hi - 1.0) * 100.0,
                    xml(&gates.join(", "))
                );
            }
            _ => {}
        }
        out.push_str("</testcase>\n");
    }
    for b in budgets {
        let phase = b.phase.map_or(String::new(), |p| format!("[{p}] "));
        let name = xml(&format!(
            "budget {phase}{} p{}",
            b.name,
            b.budget.percentile()
        ));
        let _ = write!(
            out,
            "  <testcase classname=\"brickprof.budget\" name=\"{name}\">"
        );
        if b.exceeded() {
            let _ = write!(out, "<failure message=\"{}\"/>", xml(&b.line()));
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("</testsuite></testsuites>\n");
    out
}

/// `s` ready for XML text or a quoted attribute value: [`xml_safe`] (names from files, every
/// character XML 1.0 cannot hold replaced), then the specials (`& < > " '`) as entities and
/// tab, line feed and carriage return as character references (so that an attribute keeps
/// them: a parser turns literal ones into spaces).
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in xml_safe(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::budget::{check_budgets, Budget};

    /// A character, often one XML 1.0 forbids or discourages.
    fn char_() -> impl Strategy<Value = char> {
        prop_oneof![
            any::<char>(),
            (0u32..0x20).prop_map(|u| char::from_u32(u).unwrap()),
            (0x7fu32..0xa0).prop_map(|u| char::from_u32(u).unwrap()),
            (0xFDD0u32..=0xFDEF).prop_map(|u| char::from_u32(u).unwrap()),
            (0u32..=16, 0u32..2).prop_map(|(p, l)| char::from_u32(p << 16 | 0xFFFE | l).unwrap()),
            prop::sample::select(vec!['<', '&', '>', '"', '\'', ']', '\t', '\n', '\r']),
        ]
    }

    /// A brick name that a budget can name (no `:` or `=`, not blank at either end).
    fn name() -> impl Strategy<Value = String> {
        prop::collection::vec(char_(), 0..12).prop_map(|cs| {
            let inner: String = cs.into_iter().filter(|c| !matches!(c, ':' | '=')).collect();
            format!("x{inner}x")
        })
    }

    /// A profile with one call of each brick, 1 µs each (a mock clock).
    fn profile_of(names: &std::collections::HashSet<String>) -> brickprof::Profile {
        let (clock, mock) = brickprof::timeline::HostClock::mock();
        let mut prof = brickprof::BrickProfiler::with_timeline(
            brickprof::ProfilerConfig::with_layers(1),
            brickprof::CpuTimeline::with_clock(clock),
        )
        .unwrap();
        prof.begin_layer(0);
        for n in names {
            let h = prof.register(n, brickprof::BrickCategory::Other).unwrap();
            let t = prof.start_brick(h);
            mock.increment(1_000);
            prof.stop_brick(t, 1);
        }
        prof.end_layer();
        prof.end_pass(1).unwrap();
        prof.profile()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Invariant (moved from the library's proptests/xml_props.rs): whatever characters
        /// brick names hold, the JUnit file of budgets on those bricks parses as XML 1.0
        /// (spec/profile-format.md "Loading", names from files in XML outputs).
        #[test]
        fn the_junit_file_parses_whatever_the_names(
            names in prop::collection::hash_set(name(), 1..5),
        ) {
            let p = profile_of(&names);
            let budgets: Vec<Budget> = names
                .iter()
                .map(|n| format!("{n}:p50=1ns").parse().unwrap())
                .collect();
            let checks = check_budgets(&p, &budgets).unwrap();
            let text = render(None, &checks);
            roxmltree::Document::parse(&text)
                .map_err(|e| TestCaseError::fail(format!("the JUnit file: {e}")))?;
        }
    }
}
