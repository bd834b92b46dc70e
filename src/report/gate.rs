//! The JUnit file CI systems show as test results, rendered from the gates' outcome
//! ([`crate::compare::gate`]: which rows each gate judges, which fail) and budget checks
//! (spec/timing-verdicts.md "Gates, budgets and the exit code").

use std::fmt::Write as _;

use super::budget::BudgetCheck;
use crate::compare::gate::Gate;
use crate::compare::gate::GateOutcome;
use crate::compare::verdicts::withheld_text;
// Names from files, escaped for XML 1.0 (characters it cannot hold replaced).
use crate::output::xml::escape as xml;
#[cfg(test)]
use {
    crate::compare::gate::{apply_gates, ask_gates},
    crate::compare::timing_verdict::TimingVerdict,
    crate::compare::verdicts::{TimingVerdicts, VerdictRow},
    crate::{Error, Phase},
};

/// The JUnit XML of a gate outcome and budget checks: one test suite `brickprof timing`, one
/// test case per gated row (`[phase] name`, a `<failure>` when it fails, `<skipped>` when its
/// verdict was withheld) and one per budget (`budget [phase] name pN`, a `<failure>` when
/// exceeded). Names are escaped for XML.
pub fn render_junit(gates: Option<&GateOutcome<'_>>, budgets: &[BudgetCheck]) -> String {
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
                let _ = write!(out, "<skipped message=\"{}\"/>", xml(withheld_text(w)));
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

#[cfg(test)]
mod tests {
    // spec/timing-verdicts.md "Gates, budgets and the exit code".
    use super::*;
    use crate::report::{Interval, Judgement, Quantity};

    fn row(phase: Phase, name: &str, ratio: f64, verdict: TimingVerdict) -> VerdictRow {
        VerdictRow {
            phase,
            quantity: Quantity::Brick,
            name: name.into(),
            layer: None,
            relative: false,
            samples: (10, 10),
            judgement: Some(Judgement {
                ratio,
                interval: Interval {
                    lo: ratio - 0.01,
                    hi: ratio + 0.01,
                },
                band: None,
                verdict,
            }),
            withheld: None,
            asked: 0.03,
            cannot_judge: false,
        }
    }

    fn verdicts(rows: Vec<VerdictRow>) -> TimingVerdicts {
        TimingVerdicts {
            noise_runs: 0,
            min_effect: 0.03,
            noise_factor: 2.0,
            withheld: None,
            workloads_differ: Vec::new(),
            rows,
        }
    }

    #[test]
    fn gates_parse_and_refuse_what_they_cannot_mean() {
        let g: Gate = "decode:slower:3%".parse().unwrap();
        assert_eq!((g.phase(), g.pct()), (Some(Phase::Decode), 3.0));
        let g: Gate = "slower:5".parse().unwrap();
        assert_eq!((g.phase(), g.pct()), (None, 5.0));
        for bad in [
            "faster:5%",
            "slower",
            "slower:-1%",
            "slower:x",
            "later:slower:3%",
            "a:b:c:d",
        ] {
            let e = bad.parse::<Gate>().unwrap_err();
            assert!(matches!(e, Error::InvalidValue { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn a_percentage_must_be_written_plainly() {
        // spec/timing-verdicts.md "Gates, budgets and the exit code": `-0%` is no 0 % gate, and
        // a sign, a leading zero, an exponent or a second `%` is refused. Before: `slower:-0%`
        // was a 0 % gate.
        for bad in [
            "slower:-0%",
            "slower:-0",
            "slower:+5%",
            "slower:05%",
            "slower:1e1%",
            "slower:5%%",
            "slower:.5%",
            "slower:inf%",
            "slower:%",
        ] {
            let e = bad.parse::<Gate>().unwrap_err();
            assert!(e.to_string().contains("without a sign"), "{bad}: {e}");
        }
        for (ok, pct) in [("slower:0%", 0.0), ("slower:0.5%", 0.5), ("slower:7", 7.0)] {
            assert_eq!(ok.parse::<Gate>().unwrap().pct(), pct, "{ok}");
        }
    }

    #[test]
    fn a_gate_fails_only_slower_rows_of_its_phase_beyond_its_size() {
        let v = verdicts(vec![
            row(Phase::Decode, "Matmul", 1.08, TimingVerdict::Slower),
            row(Phase::Prefill, "Matmul", 1.20, TimingVerdict::Slower),
            row(Phase::Decode, "Softmax", 1.04, TimingVerdict::Slower),
            row(Phase::Decode, "Norm", 1.10, TimingVerdict::WithinNoise),
        ]);
        let decode: Gate = "decode:slower:5%".parse().unwrap();
        let o = apply_gates(&[decode], &v);
        assert_eq!(o.gated.len(), 3, "the decode rows");
        let failing: Vec<&str> = o
            .gated
            .iter()
            .filter(|(_, g)| !g.is_empty())
            .map(|(r, _)| r.name.as_str())
            .collect();
        assert_eq!(failing, ["Matmul"]);
        assert!(o.failed() && !o.nothing_judged());
        let any: Gate = "slower:10%".parse().unwrap();
        let o = apply_gates(&[any], &v);
        assert_eq!(o.gated.iter().filter(|(_, g)| !g.is_empty()).count(), 1);
        let xml = render_junit(Some(&o), &[]);
        assert!(
            xml.contains("tests=\"4\" failures=\"1\" skipped=\"0\""),
            "{xml}"
        );
        assert!(xml.contains("name=\"[prefill] Matmul\"><failure"), "{xml}");
        assert_eq!(xml.matches("<testcase").count(), 4);
    }

    #[test]
    fn withheld_rows_are_skipped_and_a_gate_that_judges_nothing_says_so() {
        let mut r = row(Phase::Decode, "A<&>\"B", 1.0, TimingVerdict::WithinNoise);
        r.judgement = None;
        r.withheld = Some(crate::report::Withheld::DifferentMachines);
        let v = verdicts(vec![r]);
        let o = apply_gates(&["slower:5%".parse().unwrap()], &v);
        assert!(!o.failed() && o.nothing_judged());
        let xml = render_junit(Some(&o), &[]);
        assert!(
            xml.contains("name=\"[decode] A&lt;&amp;&gt;&quot;B\""),
            "{xml}"
        );
        assert!(xml.contains("<skipped message=\"the runs come from different machines\"/>"));
        assert!(apply_gates(&["slower:5%".parse().unwrap()], &verdicts(vec![])).nothing_judged());
    }

    #[test]
    fn a_band_wider_than_the_gate_cannot_judge_and_judges_nothing() {
        // spec/timing-verdicts.md "Cannot judge": within noise with a band of ±20 % says
        // nothing about a 5 % gate, but does about a 30 % one.
        let mut r = row(Phase::Decode, "Matmul", 1.1, TimingVerdict::WithinNoise);
        r.judgement.as_mut().unwrap().band = Some(1.2f64.ln());
        let mut v = verdicts(vec![r]);
        let five: Gate = "slower:5%".parse().unwrap();
        ask_gates(&[five], &mut v);
        assert!(v.rows[0].cannot_judge && !v.rows[0].judged());
        assert_eq!(
            v.rows[0].cannot_judge_text().unwrap(),
            "cannot judge: noise ±20 % exceeds the 5 % asked for"
        );
        let o = apply_gates(&[five], &v);
        assert!(!o.failed() && o.nothing_judged());
        let xml = render_junit(Some(&o), &[]);
        assert!(xml.contains("skipped=\"1\""), "{xml}");
        assert!(
            xml.contains("<skipped message=\"cannot judge: noise ±20 %"),
            "{xml}"
        );
        let text = v.render();
        assert!(text.contains("[decode] Matmul"), "{text}");
        assert!(text.contains("0 within noise, 1 cannot judge"), "{text}");
        let thirty: Gate = "slower:30%".parse().unwrap();
        ask_gates(&[thirty], &mut v);
        assert!(!v.rows[0].cannot_judge && v.rows[0].judged());
        assert!(!apply_gates(&[thirty], &v).nothing_judged());
        // Ungated rows are asked about the minimum practical size.
        let decode: Gate = "prefill:slower:30%".parse().unwrap();
        ask_gates(&[decode], &mut v);
        assert_eq!(v.rows[0].asked, 0.03);
        assert!(v.rows[0].cannot_judge);
    }
}
