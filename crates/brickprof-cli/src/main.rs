//! The `brickprof` command line: `demo`, `report`, `diff`, `merge`, `convert`, `import`,
//! `vendor`.
//!
//! Exit codes: 0 success, 1 what a command judges a failure (a divergence, a failed gate, an
//! exceeded budget), 2 an error (one line on stderr naming the file and the fault). The CLI
//! parses its own flags (`flags`, `gate`, `budget`), decides exit codes and writes the JUnit
//! file (`junit`); each command is one module of `commands`.

mod brick_tree;
mod budget;
mod bytes;
mod commands;
mod demo;
mod flags;
mod gate;
mod junit;
mod output;
mod plain_number;
mod units;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use brickprof::output::{Output, Takes};
use brickprof::Result;

use commands::{convert, demo as demo_cmd, diff, import, merge, report, vendor};
use flags::{cli_outputs, names};

#[derive(Parser)]
#[command(
    name = "brickprof",
    version,
    about = "In-process profiler for LLM inference: per-brick timing, deferred GPU sync, kernel checksums"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per run
enum Command {
    /// Run a tiny Llama-style transformer on the CPU under brickprof and print its profile.
    Demo(demo_cmd::DemoArgs),
    /// Convert a saved trace between Perfetto (.pftrace) and Chrome JSON (.json), streaming.
    Convert(convert::ConvertArgs),
    /// Compare two runs (profiles or checksum logs): the first kernel where they diverge, and
    /// the first generated token that differs when both runs saved tokens.json beside them.
    /// Exit 0 when nothing diverged, 1 when something did, 2 on an error.
    Diff(diff::DiffArgs),
    /// Read a vendor profiler's file (Nsight Compute raw CSV, Nsight Systems SQLite export,
    /// rocprofv3 kernel_trace.csv or rocpd database) back as a profile, per brick: print its table and counters, save it with -o.
    Import(import::ImportArgs),
    /// Merge profiles (threads, ranks, runs) into one.
    Merge(merge::MergeArgs),
    /// Print a saved profile.
    Report(report::ReportArgs),
    /// Run a program under a vendor profiler (ncu, nsys, rocprofv3) with the flags brickprof's
    /// ranges need, then import its file as `import` does: `brickprof vendor ncu -- CMD ARGS`.
    /// A tool not on PATH, or a run that fails: one line, exit 2.
    Vendor(vendor::VendorArgs),
}

impl Command {
    /// Every file the command reads and every file it writes, so that no output is one of its
    /// inputs (spec/profile-format.md "Reading and writing files": compared by identity,
    /// refused before anything is read or written). `demo` reads no file (its `--out` folder
    /// is checked by `RunFolder::create`); `convert`'s default output is checked by `convert`
    /// itself.
    fn inputs_and_outputs(&self, files: &report::Files) -> (Vec<PathBuf>, Vec<PathBuf>) {
        match self {
            Command::Demo(_) => (Vec::new(), Vec::new()),
            Command::Convert(a) => a.inputs_and_outputs(),
            Command::Diff(a) => a.inputs_and_outputs(),
            Command::Import(a) => a.inputs_and_outputs(),
            Command::Merge(a) => a.inputs_and_outputs(),
            Command::Report(a) => a.inputs_and_outputs(files),
            Command::Vendor(a) => a.inputs_and_outputs(),
        }
    }
}

/// The command line: the derived one, with the flags the output list makes.
fn command() -> clap::Command {
    let with = |takes| names(takes).join(", ");
    Cli::command()
        .mut_subcommand("report", |mut c| {
            for o in cli_outputs().filter(|o| o.takes() == Takes::Profile) {
                c = c.arg(
                    clap::Arg::new(o.name())
                        .long(o.name())
                        .value_name(format!("OUT.{}", o.extension()))
                        .value_parser(clap::value_parser!(PathBuf))
                        .help(format!("Also write the {} output to this file", o.name())),
                );
            }
            c.mut_arg("format", |a| {
                a.help(format!(
                    "Output format printed on stdout: {}",
                    with(Takes::Profile)
                ))
            })
        })
        .mut_subcommand("demo", |c| {
            c.mut_arg("trace_format", |a| {
                a.help(format!(
                    "Trace file(s) to write into DIR as trace.EXTENSION: a comma-separated \
                     list of {}, or both (every one)",
                    with(Takes::Trace)
                ))
            })
        })
        .mut_subcommand("convert", |c| {
            c.mut_arg("to", |a| {
                a.help(format!(
                    "Format to write: {} (default: the other one)",
                    with(Takes::Trace)
                ))
            })
        })
}

fn main() -> ExitCode {
    let matches = command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let files = flags::requested_files(&matches);
    let mut stdout = output::Stdout::default();
    match run(cli.command, files, &mut stdout) {
        Ok(code) => code,
        Err(e) => {
            output::print_error(&e.to_string());
            ExitCode::from(2)
        }
    }
}

/// Refuse an output that is one of the inputs, then run the command.
fn run(
    command: Command,
    files: Vec<(&'static dyn Output, PathBuf)>,
    stdout: &mut output::Stdout,
) -> Result<ExitCode> {
    let (inputs, outputs) = command.inputs_and_outputs(&files);
    brickprof::io::check_outputs_apart(
        &inputs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        &outputs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    )?;
    match command {
        Command::Demo(a) => demo_cmd::run(a, stdout),
        Command::Convert(a) => convert::run(a, stdout),
        Command::Diff(a) => diff::run(a, stdout),
        Command::Import(a) => import::run(a, stdout),
        Command::Merge(a) => merge::run(a, stdout),
        Command::Report(a) => report::run(a, files, stdout),
        Command::Vendor(a) => vendor::run(a, stdout),
    }
}
