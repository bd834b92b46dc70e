//! Regression gates over timing verdicts (spec/timing-verdicts.md "Gates, budgets and the
//! exit code"): `slower:5%` or `decode:slower:3%`, which rows each gates and which fail. The
//! CLI's policy over the library's timing verdicts: what a gate is, and that a failed one
//! exits 1 (the JUnit file CI systems show as test results: [`crate::junit`]).

use brickprof::compare::{TimingVerdict, TimingVerdicts, VerdictRow};
use brickprof::{Error, Phase, Result};

/// `[PHASE:]slower:PCT%`: fail when a row of that phase (every phase when none) is judged
/// slower by at least PCT percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    phase: Option<Phase>,
    /// Percent, finite, at least 0.
    pct: f64,
}

impl Gate {
    /// The phase gated (`None`: every phase).
    pub fn phase(&self) -> Option<Phase> {
        self.phase
    }

    /// The slowdown that fails, percent.
    pub fn pct(&self) -> f64 {
        self.pct
    }

    /// Whether this gate covers `row`.
    pub fn covers(&self, row: &VerdictRow) -> bool {
        self.phase.is_none_or(|p| p == row.phase)
    }

    /// Whether `row` fails this gate: covered, judged slower, by at least the gate's size.
    pub fn fails(&self, row: &VerdictRow) -> bool {
        self.covers(row)
            && row
                .judgement
                .is_some_and(|j| j.verdict == TimingVerdict::Slower)
            && row.slowdown().is_some_and(|s| s * 100.0 >= self.pct - 1e-9)
    }
}

impl std::fmt::Display for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(p) = self.phase {
            write!(f, "{p}:")?;
        }
        write!(f, "slower:{}%", self.pct)
    }
}

impl std::str::FromStr for Gate {
    type Err = Error;

    /// `slower:5%`, `slower:5`, `decode:slower:3%`.
    fn from_str(s: &str) -> Result<Gate> {
        let bad = |why: &str| Error::invalid_value("--fail-on", s, why);
        let parts: Vec<&str> = s.trim().split(':').collect();
        let (phase, kind, pct) = match parts.as_slice() {
            [kind, pct] => (None, *kind, *pct),
            [phase, kind, pct] => {
                let phase: Phase = phase.parse().map_err(|_| {
                    bad("PHASE must be prefill, decode or mixed, as in decode:slower:3%")
                })?;
                (Some(phase), *kind, *pct)
            }
            _ => {
                return Err(bad(
                    "[PHASE:]slower:PCT%, e.g. slower:5% or decode:slower:3%",
                ))
            }
        };
        if kind != "slower" {
            return Err(bad("only slower:PCT% gates are known, e.g. slower:5%"));
        }
        // Written plainly: `-0%`, `+5%`, `05%`, `5%%` or `1e1%` is a typo, not a gate.
        let pct = pct.trim();
        let pct = crate::plain_number::plain_decimal(pct.strip_suffix('%').unwrap_or(pct))
            .filter(|p| *p <= 1000.0)
            .ok_or_else(|| {
                bad("PCT is a percentage from 0 to 1000 written plainly, without a sign, e.g. 5%")
            })?;
        Ok(Gate { phase, pct })
    }
}

/// What the gates say about a set of verdicts.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOutcome<'a> {
    /// Every row some gate covers, with the gates it fails (empty: it passes).
    pub gated: Vec<(&'a VerdictRow, Vec<Gate>)>,
}

impl GateOutcome<'_> {
    /// Whether any gated row fails.
    pub fn failed(&self) -> bool {
        self.gated.iter().any(|(_, g)| !g.is_empty())
    }

    /// Whether no gated row could be judged (every one withheld or unable to judge the size
    /// asked for, or none at all): a gate that cannot say anything is an error, so CI never
    /// passes silently.
    pub fn nothing_judged(&self) -> bool {
        self.gated.iter().all(|(r, _)| !r.judged())
    }
}

/// The sizes `gates` ask about, by phase (`DiffOptions::asked`, spec/timing-verdicts.md
/// "Cannot judge"): a row's asked size is the smallest gate covering it (at least the minimum
/// practical size), so a band wider than that reads "cannot judge", not "within noise".
pub fn asked_sizes(gates: &[Gate]) -> Vec<(Option<Phase>, f64)> {
    gates.iter().map(|g| (g.phase(), g.pct() / 100.0)).collect()
}

/// The rows `gates` cover in `verdicts` and which gates each fails.
pub fn apply_gates<'a>(gates: &[Gate], verdicts: &'a TimingVerdicts) -> GateOutcome<'a> {
    let gated = verdicts
        .rows
        .iter()
        .filter(|r| gates.iter().any(|g| g.covers(r)))
        .map(|r| (r, gates.iter().copied().filter(|g| g.fails(r)).collect()))
        .collect();
    GateOutcome { gated }
}

#[cfg(test)]
mod tests {
    // spec/timing-verdicts.md "Gates, budgets and the exit code".
    use super::*;
    use crate::junit::render as render_junit;
    use brickprof::compare::{Interval, Judgement, Quantity};

    /// The state `brickprof diff` leaves a row in when `gates` ask about `asked` (a fraction;
    /// `DiffOptions::asked`): how the library decides `cannot_judge` is its unit test
    /// `verdict_asks` (src/compare/tests/); here the gates read the row.
    fn asked(row: &mut VerdictRow, asked: f64, cannot_judge: bool) {
        row.asked = asked;
        row.cannot_judge = cannot_judge;
    }

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
        r.withheld = Some(brickprof::compare::Withheld::DifferentMachines);
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
        assert_eq!(asked_sizes(&[five]), [(None, 0.05)]);
        asked(&mut v.rows[0], 0.05, true);
        assert!(!v.rows[0].judged());
        let o = apply_gates(&[five], &v);
        assert!(!o.failed() && o.nothing_judged());
        let xml = render_junit(Some(&o), &[]);
        assert!(xml.contains("skipped=\"1\""), "{xml}");
        assert!(
            xml.contains("<skipped message=\"cannot judge: noise ±20 % exceeds the 5 % asked for"),
            "{xml}"
        );
        let thirty: Gate = "slower:30%".parse().unwrap();
        asked(&mut v.rows[0], 0.30, false);
        assert!(v.rows[0].judged());
        assert!(!apply_gates(&[thirty], &v).nothing_judged());
        // A gate of another phase covers no row (its rows are asked about the minimum
        // practical size: `verdict_asks`).
        let prefill: Gate = "prefill:slower:30%".parse().unwrap();
        assert_eq!(asked_sizes(&[prefill]), [(Some(Phase::Prefill), 0.30)]);
        assert!(apply_gates(&[prefill], &v).gated.is_empty());
    }
}
