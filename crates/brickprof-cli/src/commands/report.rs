//! `brickprof report`: print a saved profile, write the outputs asked for, check budgets
//! (exit 1 when one is exceeded).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use brickprof::{
    compare::{diff_files_with, run_files, DiffOptions, DiffOutcome},
    output::{write_output, HtmlOptions, Output, ReportOptions, Snapshot, SortKey, TableOptions},
};
use brickprof::{
    model::PhaseFilter, profile::phase_profile, roofline::DevicePeaks, Profile, Result,
};

use crate::budget::{check_budgets, Budget, BudgetCheck};
use crate::commands::{file_label, in_file};
use crate::flags::{
    parse_budget, parse_peaks, parse_phase, parse_profile_output, parse_sort, OutputArg,
};
use crate::output::{self, Stdout};

/// `brickprof report`'s flags (the `--NAME FILE` output flags are built from the output
/// list: [`crate::flags::requested_files`]).
#[derive(Args)]
pub struct ReportArgs {
    /// A profile.json written by `brickprof demo` or `Profile::save`.
    profile: PathBuf,
    /// Output format printed on stdout.
    #[arg(long, default_value = "table", value_parser = parse_profile_output)]
    format: OutputArg,
    /// Column to sort by (total, calls, mean, min, p50, p99, max, host, throughput, gflops, gbps, name).
    #[arg(long, default_value = "total", value_parser = parse_sort)]
    sort: SortKey,
    /// Show only the top N rows.
    #[arg(long)]
    top: Option<usize>,
    /// One row per (layer, brick).
    #[arg(long)]
    by_layer: bool,
    /// Device peaks for the roofline (default: the profile's own).
    #[arg(long, value_name = "PRESET|GFLOPS,GBPS", value_parser = parse_peaks)]
    peaks: Option<DevicePeaks>,
    /// A second profile to compare with in the HTML report.
    #[arg(long, value_name = "PROFILE", requires = "html")]
    compare: Option<PathBuf>,
    /// A candidate run (profile.json or checksums.json, with its captures beside it) to
    /// diff this one against: the table on stdout is followed by the comparison of the
    /// passes --phase keeps (as `brickprof diff` prints it), and the HTML report draws an
    /// error heat map (layer × brick).
    #[arg(long, value_name = "RUN")]
    diff: Option<PathBuf>,
    /// Which passes to report: prefill, decode, mixed, unspecified, or all (every phase
    /// merged; the table then also shows each phase side by side).
    #[arg(long, default_value = "all", value_name = "PHASE", value_parser = parse_phase)]
    phase: PhaseFilter,
    /// Exit 1 when a percentile is over its budget, e.g. decode:LmHead:p99=40us,
    /// tpot:p50=30ms, ttft:p90=200ms (repeatable; a brick's per-call time, or latency).
    #[arg(long, value_name = "[PHASE:]BRICK:pN=DUR", value_parser = parse_budget)]
    budget: Vec<Budget>,
    /// Write the budgets' results as a JUnit XML file (one test case per budget).
    #[arg(long, value_name = "FILE", requires = "budget")]
    junit: Option<PathBuf>,
}

/// The files `report --NAME FILE` asked for, in list order.
pub type Files = Vec<(&'static dyn Output, PathBuf)>;

impl ReportArgs {
    /// The profile (with the files of a `--diff` run beside both), `--compare`'s, and every
    /// file it writes.
    pub fn inputs_and_outputs(&self, files: &Files) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let mut inputs = match &self.diff {
            Some(d) => [&self.profile, d]
                .into_iter()
                .flat_map(|p| run_files(p))
                .collect(),
            None => vec![self.profile.clone()],
        };
        inputs.extend(self.compare.iter().cloned());
        let outputs = files
            .iter()
            .map(|(_, p)| p.clone())
            .chain(self.junit.clone());
        (inputs, outputs.collect())
    }

    /// `profile` as `--phase` keeps it (spec/profile-format.md "Phases").
    fn phase_of(&self, profile: Profile) -> Profile {
        match self.phase {
            PhaseFilter::All => profile,
            only => phase_profile(&profile, only),
        }
    }
}

/// Print the profile in `--format`, write the files asked for, then the comparison and the
/// budgets; exit 1 when a budget is exceeded.
pub fn run(args: ReportArgs, files: Files, stdout: &mut Stdout) -> Result<ExitCode> {
    let whole = Profile::load(&args.profile)?;
    // Budgets name their own phase: checked on every pass of the run.
    let budgets = check_budgets(&whole, &args.budget).map_err(|e| in_file(&args.profile, e))?;
    let p = args.phase_of(whole);
    let label = file_label(&args.profile);
    let wants_html =
        files.iter().any(|(o, _)| o.name() == "html") || args.format.0.name() == "html";
    let other = args
        .compare
        .as_ref()
        .filter(|_| wants_html)
        .map(Profile::load)
        .transpose()?
        .map(|o| args.phase_of(o));
    let other_label = args.compare.as_deref().map(file_label).unwrap_or_default();
    let outcome = compared(&args)?;
    let diff_label = args.diff.as_deref().map(file_label).unwrap_or_default();
    let opts = ReportOptions {
        table: TableOptions {
            sort: args.sort,
            top: args.top,
            by_layer: args.by_layer,
            peaks: args.peaks.clone(),
        },
        html: HtmlOptions {
            peaks: args.peaks.as_ref(),
            compare: other.as_ref().map(|o| (o, other_label.as_str())),
            label: &label,
            top: args.top.unwrap_or(0),
            diff: outcome.as_ref().map(|o| (o, diff_label.as_str())),
        },
    };
    let snapshot = Snapshot::Profile(&p, &opts);
    for (o, path) in &files {
        write_output(*o, &snapshot, path)?;
        output::note(&written_note(*o, path));
    }
    let mut text = Vec::new();
    args.format.0.write(&snapshot, &mut text)?;
    stdout.print(&String::from_utf8_lossy(&text))?;
    if args.format.0.name() == "table" {
        // A profile saved from an import: its hardware counters (spec/imports.md).
        let peaks = args.peaks.as_ref().or(p.meta.peaks.as_ref());
        stdout.print(&crate::commands::import::counters_text(&p, peaks))?;
    }
    if let (Some(o), "table") = (&outcome, args.format.0.name()) {
        stdout.safe_line(&format!("\nCompared with {diff_label}"))?;
        stdout.print(&o.text)?;
    }
    print_budgets(&budgets, args.format.0.name() == "table", stdout)?;
    if let Some(path) = &args.junit {
        crate::junit::write(path, None, &budgets)?;
    }
    Ok(if budgets.iter().any(BudgetCheck::exceeded) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The comparison with `--diff`'s run of the passes `--phase` keeps (spec/profile-format.md
/// "Comparing runs"): printed after the table, drawn in the HTML report.
fn compared(args: &ReportArgs) -> Result<Option<DiffOutcome>> {
    args.diff
        .as_ref()
        .map(|d| {
            let options = DiffOptions {
                phase: args.phase,
                ..DiffOptions::default()
            };
            diff_files_with(&args.profile, d, &options)
        })
        .transpose()
}

/// spec/timing-verdicts.md "Gates, budgets and the exit code": on stdout under the table, on
/// stderr under any other format (which stays parseable).
fn print_budgets(budgets: &[BudgetCheck], table: bool, stdout: &mut Stdout) -> Result<()> {
    for b in budgets {
        let line = format!("Budget: {}", b.line());
        if table {
            stdout.safe_line(&line)?;
        } else {
            output::note(&line);
        }
    }
    Ok(())
}

/// What `report` says on stderr once it wrote `path`.
fn written_note(o: &dyn Output, path: &Path) -> String {
    let p = path.display();
    match o.name() {
        "html" => format!("HTML report written to {p}"),
        "flamegraph" => format!("flamegraph written to {p}"),
        "folded" => format!("folded stacks written to {p}"),
        "dot" => format!("execution graph written to {p} (render: dot -Tsvg {p} -o graph.svg)"),
        name => format!("{name} output written to {p}"),
    }
}
