//! `brickprof import`: a vendor profiler's file (Nsight Compute raw CSV, Nsight Systems'
//! SQLite export, rocprofv3's kernel_trace.csv or rocpd database) read back as a profile (spec/imports.md "Command line"): the table as
//! `report` prints it, each brick's hardware counters under it, and the profile saved with
//! `-o`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use brickprof::import::{import, BrickCounters, Imported};
use brickprof::output::{render_table, SortKey, TableOptions};
use brickprof::profile::RowKey;
use brickprof::Result;

use crate::flags::parse_sort;
use crate::output::{self, printable, Stdout};
use crate::units::duration;

/// `brickprof import`'s flags.
#[derive(Args)]
pub struct ImportArgs {
    /// The vendor file: an `ncu --nvtx --csv --page raw` output, an `nsys export --type
    /// sqlite` database, rocprofv3's kernel_trace.csv (its marker_api_trace.csv read from
    /// beside it) or its rocpd database.
    file: PathBuf,
    #[command(flatten)]
    show: ShowArgs,
}

/// How an imported file is shown and saved (`import` and `vendor` alike).
#[derive(Args)]
pub struct ShowArgs {
    /// Save the imported profile here (a profile.json every command reads).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Column to sort the table by (as `report --sort`).
    #[arg(long, default_value = "total", value_parser = parse_sort)]
    sort: SortKey,
    /// One row per (layer, brick).
    #[arg(long)]
    by_layer: bool,
}

impl ImportArgs {
    /// The vendor file (and the marker trace beside it) and the profile it writes.
    pub fn inputs_and_outputs(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (
            brickprof::import::inputs(&self.file),
            self.show.output.iter().cloned().collect(),
        )
    }
}

/// Import, print the table and the counters, save with `-o`.
pub fn run(args: ImportArgs, stdout: &mut Stdout) -> Result<ExitCode> {
    let imported = import(&args.file)?;
    show(&imported, &args.file, &args.show, stdout)?;
    Ok(ExitCode::SUCCESS)
}

/// Print what `file` imported as (the table, then the counters), its notes on stderr prefixed
/// by the file, and save the profile to `--output` (`import` and `vendor` alike).
pub fn show(imported: &Imported, file: &Path, args: &ShowArgs, stdout: &mut Stdout) -> Result<()> {
    let opts = TableOptions {
        sort: args.sort,
        by_layer: args.by_layer,
        ..TableOptions::default()
    };
    let output = args.output.as_deref();
    stdout.print(&render_table(&imported.profile, &opts))?;
    stdout.print(&counters_table(imported))?;
    for n in &imported.notes {
        output::note(&format!("{}: {n}", file.display()));
    }
    if let Some(out) = output {
        imported.profile.save(out)?;
        output::note(&format!("profile written to {}", out.display()));
    }
    Ok(())
}

/// Each (brick, row)'s counters, when the file had any: bytes and FLOPs per call, achieved
/// GB/s and GFLOP/s over the brick's time, FLOPs per byte.
fn counters_table(imp: &Imported) -> String {
    let with: Vec<&BrickCounters> = imp
        .counters
        .iter()
        .filter(|c| c.dram_bytes.is_some() || c.flops.is_some())
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nHardware counters ({}), per call:",
        imp.profile.meta.timeline
    );
    let _ = writeln!(
        out,
        "{:<28} {:>9} {:>6} {:>8} {:>10} {:>12} {:>12} {:>9} {:>9} {:>8}",
        "brick",
        "row",
        "calls",
        "kernels",
        "time",
        "DRAM bytes",
        "FLOPs",
        "GB/s",
        "GFLOP/s",
        "FLOP/B"
    );
    let num = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |v| format!("{v:.prec$}"));
    for c in with {
        let row = match c.row {
            RowKey::Layer(n) => format!("layer {n}"),
            other => other.to_string(),
        };
        let mut name = printable(&c.brick);
        if name.chars().count() > 28 {
            name = name.chars().take(27).collect::<String>() + "…";
        }
        let _ = writeln!(
            out,
            "{:<28} {:>9} {:>6} {:>8} {:>10} {:>12} {:>12} {:>9} {:>9} {:>8}",
            name,
            row,
            c.calls,
            c.kernels,
            duration(c.time_ns as f64 / c.calls.max(1) as f64),
            num(c.bytes_per_call(), 0),
            num(c.flops_per_call(), 0),
            num(c.gbps(), 1),
            num(c.gflops(), 1),
            num(c.intensity(), 2),
        );
    }
    out
}
