//! Budgets checked on one run, without a reference (spec/timing-verdicts.md "Gates, budgets
//! and the exit code"): `decode:LmHead:p99=40us` (a brick's per-call percentile in a phase,
//! from its histogram), `tpot:p50=30ms`, `ttft:p90=200ms` (from the pass series). No
//! statistics: the percentile is compared with the budget. The CLI's policy: the library
//! measures the percentiles (brick histograms, the pass series' latency); what a budget is,
//! and that an exceeded one exits 1, are the CLI's.

use brickprof::figures::latency;
use brickprof::{
    model::PhaseFilter, profile::phase_profile, BrickId, Error, Phase, Profile, Result,
};

use crate::units::duration;

/// What a budget bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetTarget {
    /// A brick's per-call time, in one phase (`None`: every pass).
    Brick {
        /// The phase.
        phase: Option<Phase>,
        /// The brick's name as the profile spells it (or a built-in brick's alias).
        name: String,
    },
    /// Time to first token.
    Ttft,
    /// Time per output token.
    Tpot,
}

/// A percentile that must stay at or below a duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    target: BudgetTarget,
    /// 1 to 100.
    percentile: u32,
    limit_ns: u64,
}

impl Budget {
    /// What is bounded.
    pub fn target(&self) -> &BudgetTarget {
        &self.target
    }

    /// The percentile (1 to 100).
    pub fn percentile(&self) -> u32 {
        self.percentile
    }

    /// The budget, ns.
    pub fn limit_ns(&self) -> u64 {
        self.limit_ns
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.target() {
            BudgetTarget::Brick {
                phase: Some(p),
                name,
            } => write!(f, "{p}:{name}")?,
            BudgetTarget::Brick { phase: None, name } => write!(f, "{name}")?,
            BudgetTarget::Ttft => write!(f, "ttft")?,
            BudgetTarget::Tpot => write!(f, "tpot")?,
        }
        write!(
            f,
            ":p{}={}",
            self.percentile,
            duration(self.limit_ns() as f64)
        )
    }
}

/// `40us`, `1.5ms`, `500ns`, `2s` (`µs` too) as ns.
pub fn parse_duration_ns(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    // Written plainly: `040us` or `.5ms` is a typo, not a duration.
    let number = crate::plain_number::plain_decimal(number)?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    let v = number * scale;
    (0.0..1.8e19).contains(&v).then(|| v.round() as u64)
}

impl std::str::FromStr for Budget {
    type Err = Error;

    /// `[PHASE:]BRICK:pN=DUR`, `ttft:pN=DUR`, `tpot:pN=DUR`.
    fn from_str(s: &str) -> Result<Budget> {
        let bad = |why: &str| Error::invalid_value("--budget", s, why);
        let form = "[PHASE:]BRICK:pN=DUR, ttft:pN=DUR or tpot:pN=DUR, e.g. \
                    decode:LmHead:p99=40us or tpot:p50=30ms";
        let (lhs, limit) = s.split_once('=').ok_or_else(|| bad(form))?;
        let limit_ns = parse_duration_ns(limit)
            .ok_or_else(|| bad("DUR is a duration such as 40us, 1.5ms, 500ns or 2s"))?;
        let parts: Vec<&str> = lhs.trim().split(':').collect();
        let (head, pct) = parts.split_at(parts.len().saturating_sub(1));
        let percentile = pct
            .first()
            .and_then(|p| p.trim().strip_prefix('p'))
            .and_then(crate::plain_number::plain_uint)
            .filter(|n| (1..=100).contains(n))
            .map(|n| n as u32)
            .ok_or_else(|| {
                bad("the percentile is p1 to p100, without a sign or a leading zero, e.g. p99")
            })?;
        let target = match head {
            [t] if t.eq_ignore_ascii_case("ttft") => BudgetTarget::Ttft,
            [t] if t.eq_ignore_ascii_case("tpot") => BudgetTarget::Tpot,
            [name] if !name.trim().is_empty() => BudgetTarget::Brick {
                phase: None,
                name: name.trim().to_string(),
            },
            [phase, name] if !name.trim().is_empty() => BudgetTarget::Brick {
                phase: Some(
                    phase
                        .parse()
                        .map_err(|_| bad("PHASE is prefill, decode, mixed or unspecified"))?,
                ),
                name: name.trim().to_string(),
            },
            _ => return Err(bad(form)),
        };
        Ok(Budget {
            target,
            percentile,
            limit_ns,
        })
    }
}

/// A budget checked on a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetCheck {
    /// The budget.
    pub budget: Budget,
    /// The brick's name as the profile spells it, or `TTFT` / `TPOT`.
    pub name: String,
    /// The phase it was checked in (`None`: every pass).
    pub phase: Option<Phase>,
    /// The measured percentile, ns.
    pub measured_ns: u64,
}

impl BudgetCheck {
    /// Whether the measured percentile is over the budget.
    pub fn exceeded(&self) -> bool {
        self.measured_ns > self.budget.limit_ns()
    }

    /// `[decode] LmHead p99 43.1µs > budget 40.0µs: EXCEEDED` (or `<= ...: ok`).
    pub fn line(&self) -> String {
        let phase = self.phase.map_or(String::new(), |p| format!("[{p}] "));
        format!(
            "{phase}{} p{} {} {} budget {}: {}",
            crate::output::printable(&self.name),
            self.budget.percentile,
            duration(self.measured_ns as f64),
            if self.exceeded() { ">" } else { "<=" },
            duration(self.budget.limit_ns as f64),
            if self.exceeded() { "EXCEEDED" } else { "ok" }
        )
    }
}

/// Check `budgets` on `profile`. A budget on a brick the profile (in that phase) has no call
/// of, or on TTFT/TPOT without a pass series that has them, is an error: a budget that checks
/// nothing would pass silently.
pub fn check_budgets(profile: &Profile, budgets: &[Budget]) -> Result<Vec<BudgetCheck>> {
    budgets.iter().map(|b| check(profile, b)).collect()
}

fn check(profile: &Profile, budget: &Budget) -> Result<BudgetCheck> {
    let missing = |why: String| Error::invalid_value("--budget", budget, why);
    let pct = budget.percentile;
    match &budget.target {
        BudgetTarget::Brick { phase, name } => {
            let view = match phase {
                Some(p) => phase_profile(profile, PhaseFilter::Only(*p)),
                None => profile.clone(),
            };
            let alias = name.parse::<BrickId>().ok().map(|b| b.name().to_string());
            let brick = view
                .brick(name)
                .or_else(|| alias.as_deref().and_then(|a| view.brick(a)))
                .filter(|b| b.stats.summary().count > 0)
                .ok_or_else(|| {
                    missing(match phase {
                        Some(p) => format!("the run has no call of this brick in {p} passes"),
                        None => "the run has no call of this brick".into(),
                    })
                })?;
            Ok(BudgetCheck {
                budget: budget.clone(),
                name: brick.name.clone(),
                phase: *phase,
                measured_ns: brick.stats.percentile_ns(f64::from(pct) / 100.0),
            })
        }
        BudgetTarget::Ttft | BudgetTarget::Tpot => {
            let ttft = budget.target == BudgetTarget::Ttft;
            let l = profile.pass_series.as_ref().and_then(latency);
            let samples = l.as_ref().map(|l| if ttft { &l.ttft } else { &l.tpot });
            let measured_ns = samples
                .and_then(|s| s.percentile_ns(pct))
                .ok_or_else(|| missing("the run has no shaped passes to measure it on".into()))?;
            Ok(BudgetCheck {
                budget: budget.clone(),
                name: if ttft { "TTFT" } else { "TPOT" }.into(),
                phase: Some(if ttft { Phase::Prefill } else { Phase::Decode }),
                measured_ns,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    // spec/timing-verdicts.md "Gates, budgets and the exit code".
    use super::*;

    #[test]
    fn budgets_parse_and_refuse_what_they_cannot_mean() {
        let b: Budget = "decode:LmHead:p99=40us".parse().unwrap();
        assert_eq!(
            b.target(),
            &BudgetTarget::Brick {
                phase: Some(Phase::Decode),
                name: "LmHead".into()
            }
        );
        assert_eq!((b.percentile(), b.limit_ns()), (99, 40_000));
        let b: Budget = "tpot:p50=1.5ms".parse().unwrap();
        assert_eq!((b.target(), b.limit_ns()), (&BudgetTarget::Tpot, 1_500_000));
        let b: Budget = "RmsNorm:p90=500ns".parse().unwrap();
        assert!(matches!(
            b.target(),
            BudgetTarget::Brick { phase: None, .. }
        ));
        for bad in [
            "LmHead:p99",
            "LmHead:p0=1us",
            "LmHead:p101=1us",
            "LmHead:99=1us",
            "LmHead:p99=40",
            "LmHead:p99=-1us",
            "later:LmHead:p99=1us",
            ":p99=1us",
        ] {
            let e = bad.parse::<Budget>().unwrap_err();
            assert!(matches!(e, Error::InvalidValue { .. }), "{bad}: {e}");
        }
        assert_eq!(parse_duration_ns("2s"), Some(2_000_000_000));
        assert_eq!(parse_duration_ns("3µs"), Some(3_000));
    }

    #[test]
    fn percentiles_and_durations_must_be_written_plainly() {
        // spec/timing-verdicts.md "Gates, budgets and the exit code": a sign or a leading zero
        // is refused. Before: `p+99`, `p099` and `040us` were read as p99 and 40 µs.
        for bad in [
            "LmHead:p+99=1us",
            "LmHead:p099=1us",
            "LmHead:p-0=1us",
            "LmHead:p99=040us",
        ] {
            let e = bad.parse::<Budget>().unwrap_err();
            assert!(matches!(e, Error::InvalidValue { .. }), "{bad}: {e}");
        }
        for bad in ["+1us", "01us", ".5ms", "5.ms", "1e3ns", "us"] {
            assert_eq!(parse_duration_ns(bad), None, "{bad}");
        }
        assert_eq!(parse_duration_ns("0.5ms"), Some(500_000));
        assert_eq!(parse_duration_ns("0ns"), Some(0));
    }
}
