//! `brickprof import`: a vendor profiler's file (Nsight Compute raw CSV, Nsight Systems'
//! SQLite export, rocprofv3's kernel_trace.csv or rocpd database) read back as a profile (spec/imports.md "Command line"): the table as
//! `report` prints it, each brick's hardware counters under it (and their measured roofline
//! with `--peaks`), and the profile, counters included, saved with `-o`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use brickprof::import::{import, BrickCounters, Imported};
use brickprof::output::{render_table, SortKey, TableOptions};
use brickprof::profile::RowKey;
use brickprof::roofline::{Bound, DevicePeaks};
use brickprof::{Profile, Result};

use crate::flags::{parse_peaks, parse_sort};
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
    /// Device peaks for each brick's measured roofline (from its hardware counters).
    #[arg(long, value_name = "PRESET|GFLOPS,GBPS", value_parser = parse_peaks)]
    peaks: Option<DevicePeaks>,
}

impl ImportArgs {
    /// The vendor file (and the marker trace beside it) and the profile it writes.
    pub fn inputs_and_outputs(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (
            brickprof::import::importer_of(&self.file)
                .map_or_else(|_| vec![self.file.clone()], |i| i.inputs(&self.file)),
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

/// Print what `file` imported as (the table, then the counters and their roofline), its notes
/// on stderr prefixed by the file, and save the profile to `--output` (`import` and `vendor`
/// alike).
pub fn show(imported: &Imported, file: &Path, args: &ShowArgs, stdout: &mut Stdout) -> Result<()> {
    let opts = TableOptions {
        sort: args.sort,
        by_layer: args.by_layer,
        ..TableOptions::default()
    };
    let output = args.output.as_deref();
    stdout.print(&render_table(&imported.profile, &opts))?;
    let counters = counters_text(&imported.profile, args.peaks.as_ref());
    stdout.print(&counters)?;
    for n in &imported.notes {
        output::note(&format!("{}: {n}", file.display()));
    }
    if args.peaks.is_some() && counters.is_empty() {
        output::note(&format!(
            "{}: --peaks: the file counted no DRAM bytes or FLOPs, so there is no measured roofline",
            file.display()
        ));
    }
    if let Some(out) = output {
        imported.profile.save(out)?;
        output::note(&format!("profile written to {}", out.display()));
    }
    Ok(())
}

/// The (brick, row)s whose file counted DRAM bytes or FLOPs.
fn counted(profile: &Profile) -> Vec<&BrickCounters> {
    profile
        .hardware_counters
        .iter()
        .filter(|c| c.dram_bytes.is_some() || c.flops.is_some())
        .collect()
}

/// The hardware counters of a profile that has them (an import, or a profile saved from one;
/// empty otherwise): their table, then their measured roofline under `peaks`, or a line
/// saying how to get it (spec/imports.md "Command line", "Measured roofline").
pub(crate) fn counters_text(profile: &Profile, peaks: Option<&DevicePeaks>) -> String {
    let with = counted(profile);
    if with.is_empty() {
        return String::new();
    }
    let mut out = counters_table(&profile.meta.timeline.to_string(), &with);
    match peaks {
        Some(p) => out.push_str(&roofline_table(p, &with)),
        None => out.push_str(ROOFLINE_HINT),
    }
    out
}

/// What a counters table without peaks ends with.
const ROOFLINE_HINT: &str = "\nMeasured roofline: give the device's peaks (--peaks PRESET or GFLOPS,GBPS) to place each brick under them.\n";

/// A row's name in the counters' tables ("layer 0", "model").
fn row_name(row: RowKey) -> String {
    match row {
        RowKey::Layer(n) => format!("layer {n}"),
        other => other.to_string(),
    }
}

/// A brick's name, printable, at most 28 characters.
fn brick_name(brick: &str) -> String {
    let mut name = printable(brick);
    if name.chars().count() > 28 {
        name = name.chars().take(27).collect::<String>() + "…";
    }
    name
}

/// A number with `prec` decimals, `-` when absent.
fn num(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.prec$}"))
}

/// Each (brick, row)'s counters: bytes and FLOPs per call, achieved GB/s and GFLOP/s over the
/// brick's time, FLOPs per byte.
fn counters_table(tool: &str, with: &[&BrickCounters]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nHardware counters ({tool}), per call:");
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
    for c in with {
        let rates = c.rates();
        let _ = writeln!(
            out,
            "{:<28} {:>9} {:>6} {:>8} {:>10} {:>12} {:>12} {:>9} {:>9} {:>8}",
            brick_name(&c.brick),
            row_name(c.row),
            c.calls,
            c.kernels,
            duration(c.time_ns as f64 / c.calls.max(1) as f64),
            num(rates.bytes_per_call, 0),
            num(rates.flops_per_call, 0),
            num(rates.gbps, 1),
            num(rates.gflops, 1),
            num(rates.intensity, 2),
        );
    }
    out
}

/// Each (brick, row)'s measured roofline under `peaks` (DRAM's roof: the counters count DRAM
/// bytes): the measured intensity, the achieved rate, the roof at that intensity, the share of
/// it reached and the bound.
fn roofline_table(peaks: &DevicePeaks, with: &[&BrickCounters]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nMeasured roofline ({}: {} GFLOP/s, {} GB/s DRAM):",
        printable(peaks.name()),
        peaks.gflops(),
        peaks.gbps()
    );
    let _ = writeln!(
        out,
        "{:<28} {:>9} {:>8} {:>16} {:>16} {:>8} {:>8}",
        "brick", "row", "FLOP/B", "achieved", "roof", "of roof", "bound"
    );
    for c in with {
        let Some(r) = c.roofline(peaks) else {
            continue;
        };
        // The rate the roof is in: GFLOP/s, or GB/s for a brick that counted bytes only.
        let (achieved, unit) = match c.flops.filter(|&f| f > 0) {
            Some(_) => (c.rates().gflops, "GFLOP/s"),
            None => (c.rates().gbps, "GB/s"),
        };
        let bound = match r.bound {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Unknown => "-",
        };
        let _ = writeln!(
            out,
            "{:<28} {:>9} {:>8} {:>16} {:>16} {:>8} {:>8}",
            brick_name(&c.brick),
            row_name(c.row),
            num(c.rates().intensity, 2),
            format!("{} {unit}", num(achieved, 1)),
            format!("{:.1} {unit}", r.roof),
            format!("{:.1}%", r.roof_pct),
            bound,
        );
    }
    out
}
