//! `brickprof diff`: compare two runs, gate the timing verdicts and check budgets
//! (spec/timing-verdicts.md "Gates, budgets and the exit code"). Exit 1 when something
//! diverged, a gate failed or a budget was exceeded.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use brickprof::compare::{diff_files_with, run_files, DiffOptions, DiffOutcome, VerdictOptions};
use brickprof::{compare::Tolerance, model::PhaseFilter, Error, Profile, Result};

use crate::budget::{check_budgets, Budget, BudgetCheck};
use crate::commands::{in_file, instruments};
use crate::flags::{parse_budget, parse_gate, parse_phase};
use crate::gate::{apply_gates, asked_sizes, Gate, GateOutcome};
use crate::output::Stdout;

/// `brickprof diff`'s flags.
#[derive(Args)]
pub struct DiffArgs {
    /// The reference run (profile.json or checksums.json).
    pub(crate) reference: PathBuf,
    /// The candidate run.
    pub(crate) candidate: PathBuf,
    /// Relative tolerance for "numerically close".
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    rtol: f64,
    /// Absolute tolerance for "numerically close".
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    atol: f64,
    /// List every differing kernel: how far max, min, mean and RMS moved.
    #[arg(long)]
    all: bool,
    /// The elementwise statistic that decides a captured kernel's verdict, e.g.
    /// cosine:0.9999, sqnr:40, max-rel:1e-3, max-abs:1e-4, mean-abs, p99-abs, nmse
    /// (repeatable: every check must pass).
    #[arg(long, value_name = "STAT:THRESHOLD")]
    pub(crate) check: Vec<brickprof::compare::Check>,
    /// A second run of the reference setup (repeatable: more runs, a steadier band): each
    /// kernel's largest run-to-run distance sets its noise band; verdicts become "within
    /// noise" or "beyond noise".
    #[arg(long, value_name = "REF2")]
    pub(crate) noise: Vec<PathBuf>,
    /// Noise band = FACTOR x the run-to-run distance.
    #[arg(long, value_name = "FACTOR", default_value_t = DiffOptions::default().noise_factor)]
    noise_factor: f64,
    /// Which passes' timings to compare: prefill, decode, mixed, unspecified, or all
    /// (every phase, each compared with itself: prefill never with decode).
    #[arg(long, default_value = "all", value_name = "PHASE", value_parser = parse_phase)]
    phase: PhaseFilter,
    /// Exit 1 when a brick, TTFT, TPOT or a throughput is judged slower beyond noise by
    /// at least PCT, e.g. slower:5% or decode:slower:3% (repeatable). Without it, timing
    /// never changes the exit code.
    #[arg(long, value_name = "[PHASE:]slower:PCT%", value_parser = parse_gate)]
    pub(crate) fail_on: Vec<Gate>,
    /// The smallest timing change judged faster or slower, percent.
    #[arg(long, value_name = "PCT", default_value_t = 3.0)]
    min_effect: f64,
    /// The smallest share of its phase's time a brick needs to be judged, percent.
    #[arg(long, value_name = "PCT", default_value_t = 1.0)]
    min_share: f64,
    /// Timing noise band = FACTOR x the largest change between any two runs of the
    /// reference setup (REF and the --noise runs), at least the phase's typical one.
    #[arg(long, value_name = "FACTOR", default_value_t = VerdictOptions::default().noise_factor)]
    timing_noise_factor: f64,
    /// Judge timings of runs from different machines, timelines or sync modes anyway.
    #[arg(long)]
    pub(crate) timing_across_machines: bool,
    /// Judge each brick and (layer, brick) cell in isolation, as measured, instead of
    /// against the run (where a change of the whole machine cancels).
    #[arg(long)]
    timing_absolute: bool,
    /// Exit 1 when a percentile of the candidate is over its budget, e.g.
    /// decode:LmHead:p99=40us or tpot:p50=30ms (repeatable).
    #[arg(long, value_name = "[PHASE:]BRICK:pN=DUR", value_parser = parse_budget)]
    pub(crate) budget: Vec<Budget>,
    /// Write the gates' and budgets' results as a JUnit XML file (one test case per gated
    /// row and per budget).
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Print text (default) or the whole comparison as JSON.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub(crate) format: String,
    /// Compare the two files as two instruments of one run (spec/imports.md
    /// "Cross-instrument diff"): per brick calls, mean device time, ratio and what explains
    /// a difference, no verdict. Automatic when either file is a vendor file (ncu, nsys,
    /// rocprofv3) or the two profiles' timelines differ.
    #[arg(long)]
    pub(crate) instruments: bool,
    /// In a cross-instrument diff, one row per (brick, layer).
    #[arg(long)]
    pub(crate) by_layer: bool,
}

impl DiffArgs {
    /// Every file of the compared runs, and the JUnit file.
    pub fn inputs_and_outputs(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let runs = [&self.reference, &self.candidate]
            .into_iter()
            .chain(&self.noise)
            .flat_map(|p| {
                let read = brickprof::import::importer_of(p)
                    .map_or_else(|_| vec![p.clone()], |i| i.inputs(p));
                run_files(p).into_iter().chain(read)
            })
            .collect();
        (runs, self.junit.iter().cloned().collect())
    }

    /// The library's options as the flags give them. Options that make the judgement
    /// meaningless are refused before any file is read (`DiffOptions::validate`: finite
    /// tolerances, meaningful check thresholds; here: the share).
    fn options(&self) -> Result<DiffOptions> {
        let min_share = self.min_share;
        if !(min_share.is_finite() && (0.0..=100.0).contains(&min_share)) {
            return Err(Error::invalid_value(
                "--min-share",
                min_share,
                "a percentage from 0 to 100",
            ));
        }
        Ok(DiffOptions {
            tolerance: Tolerance {
                rtol: self.rtol,
                atol: self.atol,
            },
            checks: self.check.clone(),
            noise: self.noise.clone(),
            noise_factor: self.noise_factor,
            phase: self.phase,
            timing: VerdictOptions {
                min_effect: self.min_effect / 100.0,
                noise_factor: self.timing_noise_factor,
                across_machines: self.timing_across_machines,
                min_share: min_share / 100.0,
                absolute: self.timing_absolute,
            },
            asked: asked_sizes(&self.fail_on),
        })
    }
}

/// Compare, gate, check the budgets, write the JUnit file, print, and exit 1 on a
/// divergence, a failed gate or an exceeded budget.
pub fn run(args: DiffArgs, stdout: &mut Stdout) -> Result<ExitCode> {
    if let Some(sides) = instruments::sides(&args)? {
        return instruments::run(&args, sides, stdout);
    }
    let outcome = diff_files_with(&args.reference, &args.candidate, &args.options()?)?;
    let gates = gate(&args.fail_on, &outcome)?;
    // Budgets are checked on the candidate (spec/timing-verdicts.md).
    let budgets = if args.budget.is_empty() {
        Vec::new()
    } else {
        let c = Profile::load(&args.candidate)?;
        check_budgets(&c, &args.budget).map_err(|e| in_file(&args.candidate, e))?
    };
    if let Some(path) = &args.junit {
        crate::junit::write(path, gates.as_ref(), &budgets)?;
    }
    if args.format == "json" {
        stdout.print(&diff_json(&outcome, gates.as_ref()))?;
    } else {
        print_text(&args, &outcome, gates.as_ref(), &budgets, stdout)?;
    }
    let failed = outcome.diverged
        || gates.as_ref().is_some_and(GateOutcome::failed)
        || budgets.iter().any(BudgetCheck::exceeded);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The gates' outcome (`None` without `--fail-on`). Gates on checksum logs, or gates that
/// judge nothing, are errors: a gate that cannot say anything never passes silently
/// (spec/timing-verdicts.md "Gates, budgets and the exit code").
fn gate<'a>(fail_on: &[Gate], outcome: &'a DiffOutcome) -> Result<Option<GateOutcome<'a>>> {
    if fail_on.is_empty() {
        return Ok(None);
    }
    let gate_list = fail_on
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    let Some(verdicts) = &outcome.verdicts else {
        return Err(Error::invalid_value(
            "--fail-on",
            gate_list.as_str(),
            "timing gates need two profiles (not checksum logs)",
        ));
    };
    let g = apply_gates(fail_on, verdicts);
    if g.nothing_judged() {
        return Err(Error::invalid_value(
            "--fail-on",
            gate_list.as_str(),
            format!(
                "no timing verdict to gate: {}",
                nothing_judged_why(outcome, &g)
            ),
        ));
    }
    Ok(Some(g))
}

/// Why gates judged nothing (spec/timing-verdicts.md "Cannot judge"): bands wider than the
/// gate are named, as withheld rows are.
fn nothing_judged_why(outcome: &DiffOutcome, g: &GateOutcome<'_>) -> String {
    outcome
        .verdicts
        .as_ref()
        .and_then(|v| v.withheld)
        .map(|w| w.to_string())
        .or_else(|| {
            g.gated
                .iter()
                .filter_map(|(r, _)| r.cannot_judge_text())
                .next()
        })
        .or_else(|| {
            g.gated
                .iter()
                .find_map(|(r, _)| r.withheld)
                .map(|w| w.to_string())
        })
        .unwrap_or_else(|| "no row of the gated phases".to_string())
}

/// The comparison as text, then `--all`'s kernels, the budgets and the regressed rows.
fn print_text(
    args: &DiffArgs,
    outcome: &DiffOutcome,
    gates: Option<&GateOutcome<'_>>,
    budgets: &[BudgetCheck],
    stdout: &mut Stdout,
) -> Result<()> {
    stdout.print(&outcome.text)?;
    if args.all {
        if let Some(report) = &outcome.checksums {
            stdout.print(&format!("\n{}", report.render_all()))?;
        }
    }
    for b in budgets {
        stdout.safe_line(&format!("Budget: {}", b.line()))?;
    }
    if let Some(g) = gates {
        for (row, failed) in g.gated.iter().filter(|(_, f)| !f.is_empty()) {
            let gates: Vec<String> = failed.iter().map(ToString::to_string).collect();
            stdout.safe_line(&format!(
                "REGRESSED [{}] {} fails {}",
                row.phase,
                row.label(),
                gates.join(", ")
            ))?;
        }
    }
    Ok(())
}

/// The whole comparison as one JSON object (`brickprof diff --format json`,
/// spec/profile-format.md "Comparing runs"): `diverged`, `timing` (the rows),
/// `verdicts` (spec/timing-verdicts.md), `checksums`, `flow`, `first_token_difference`,
/// and, when gates were asked for, `gates`: `{"regressed", "rows": [{"phase", "name",
/// "failed": [gate, ...]}]}`. Absent parts are `null`.
fn diff_json(outcome: &DiffOutcome, gates: Option<&GateOutcome<'_>>) -> String {
    let gates = gates.map(|g| {
        serde_json::json!({
            "regressed": g.failed(),
            "rows": g.gated.iter().map(|(r, failed)| serde_json::json!({
                "phase": r.phase,
                "name": r.name,
                "layer": r.layer,
                "failed": failed.iter().map(ToString::to_string).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    });
    let value = serde_json::json!({
        "diverged": outcome.diverged,
        "timing": outcome.timing,
        "verdicts": outcome.verdicts,
        "checksums": outcome.checksums,
        "flow": outcome.flow,
        "first_token_difference": outcome.first_token_difference,
        "gates": gates,
    });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}
