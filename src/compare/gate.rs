//! Regression gates over timing verdicts (spec/timing-verdicts.md "Gates, budgets and the
//! exit code"): `slower:5%` or `decode:slower:3%`, which rows each gates and which fail. Data
//! only: the JUnit file is rendered in `report`.

use super::timing_verdict::TimingVerdict;
use super::verdicts::{TimingVerdicts, VerdictRow};
use crate::{Error, Phase, Result};

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
            && row.verdict() == Some(TimingVerdict::Slower)
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
        let pct = crate::base::plain_number::plain_decimal(pct.strip_suffix('%').unwrap_or(pct))
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

/// Ask `verdicts` about the changes `gates` look for (spec/timing-verdicts.md "Cannot
/// judge"): a row's asked size is the smallest gate covering it (at least the minimum
/// practical size), so a band wider than that reads "cannot judge", not "within noise".
pub fn ask_gates(gates: &[Gate], verdicts: &mut TimingVerdicts) {
    verdicts.ask(|row| {
        gates
            .iter()
            .filter(|g| g.covers(row))
            .map(|g| g.pct / 100.0)
            .reduce(f64::min)
    });
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
