//! The CLI's own flag parsers, and the output flags built from the output list
//! (spec/profile-format.md "The CLI").

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::ArgMatches;

use brickprof::output::{outputs, Output, SortKey, Takes};
use brickprof::{
    model::{PhaseFilter, Sampling},
    roofline::DevicePeaks,
    timeline::TimelineKind,
    SyncMode,
};

use crate::budget::Budget;
use crate::gate::Gate;

/// Every output the CLI offers: the library's list, then the CLI's own flamegraph. Flags are
/// built from it: `report --NAME FILE` and `--format NAME` for outputs made from a profile,
/// `demo --trace-format` and `convert --to` for traces (spec/profile-format.md "The CLI").
pub fn cli_outputs() -> impl Iterator<Item = &'static dyn Output> {
    outputs()
        .iter()
        .copied()
        .chain([&crate::brick_tree::Flamegraph as &'static dyn Output])
}

/// The names of the outputs that take `takes`, in list order.
pub fn names(takes: Takes) -> Vec<&'static str> {
    cli_outputs()
        .filter(|o| o.takes() == takes)
        .map(|o| o.name())
        .collect()
}

/// One output named on the command line.
#[derive(Clone, Copy)]
pub struct OutputArg(pub &'static dyn Output);

/// The trace outputs `demo --trace-format` names.
#[derive(Clone)]
pub struct TraceFormats(pub Vec<&'static dyn Output>);

fn parse_output(s: &str, takes: Takes) -> Result<OutputArg, String> {
    cli_outputs()
        .find(|o| o.takes() == takes && o.name() == s)
        .map(OutputArg)
        .ok_or_else(|| format!("unknown format {s:?} ({})", names(takes).join(", ")))
}

/// `report --format`.
pub fn parse_profile_output(s: &str) -> Result<OutputArg, String> {
    parse_output(s, Takes::Profile)
}

/// `convert --to`.
pub fn parse_trace_output(s: &str) -> Result<OutputArg, String> {
    parse_output(s, Takes::Trace)
}

/// `demo --trace-format`: a comma-separated list of trace formats, or `both` (`all`).
pub fn parse_trace_formats(s: &str) -> Result<TraceFormats, String> {
    if s == "both" || s == "all" {
        return Ok(TraceFormats(
            cli_outputs()
                .filter(|o| o.takes() == Takes::Trace)
                .collect(),
        ));
    }
    let mut formats: Vec<&'static dyn Output> = Vec::new();
    for name in s.split(',').map(str::trim) {
        let o = parse_trace_output(name)?.0;
        if !formats.iter().any(|f| f.name() == o.name()) {
            formats.push(o);
        }
    }
    Ok(TraceFormats(formats))
}

/// The files `report --NAME FILE` asked for, in list order.
pub fn requested_files(matches: &ArgMatches) -> Vec<(&'static dyn Output, PathBuf)> {
    let Some(m) = matches.subcommand_matches("report") else {
        return Vec::new();
    };
    cli_outputs()
        .filter(|o| o.takes() == Takes::Profile)
        .filter_map(|o| Some((o, m.get_one::<PathBuf>(o.name())?.clone())))
        .collect()
}

/// `--timeline`: every timeline brickprof ships (`TimelineKind::built_in`).
pub fn timeline_parser() -> impl TypedValueParser<Value = TimelineKind> {
    let names: Vec<&'static str> = TimelineKind::built_in().iter().map(|k| k.name()).collect();
    clap::builder::PossibleValuesParser::new(names).map(|s| {
        s.parse::<TimelineKind>()
            .expect("a built-in timeline's name parses")
    })
}

/// `--sync-mode`.
pub fn parse_sync_mode(s: &str) -> Result<SyncMode, String> {
    s.parse().map_err(|_| {
        format!("unknown sync mode {s:?} (deferred, lagged, immediate, per-layer, none)")
    })
}

/// `report --sort`.
pub fn parse_sort(s: &str) -> Result<SortKey, String> {
    s.parse().map_err(|e: brickprof::Error| e.to_string())
}

/// `--phase`.
pub fn parse_phase(s: &str) -> Result<PhaseFilter, String> {
    s.parse().map_err(|e: brickprof::Error| e.to_string())
}

/// `--budget`.
pub fn parse_budget(s: &str) -> Result<Budget, String> {
    s.parse().map_err(|e: brickprof::Error| e.to_string())
}

/// `diff --fail-on`.
pub fn parse_gate(s: &str) -> Result<Gate, String> {
    s.parse().map_err(|e: brickprof::Error| e.to_string())
}

/// `demo --sample`.
pub fn parse_sampling(s: &str) -> Result<Sampling, String> {
    s.parse().map_err(|e: brickprof::Error| e.to_string())
}

/// `--duration SECS`: a number of seconds above 0, at most a week (fractions allowed).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    const WEEK: f64 = 7.0 * 24.0 * 3600.0;
    match s.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= WEEK => Ok(std::time::Duration::from_secs_f64(secs)),
        _ => Err(format!(
            "not a number of seconds above 0 and at most {WEEK} (a week)"
        )),
    }
}

/// `--peaks`: a preset or GFLOPS,GBPS.
pub fn parse_peaks(s: &str) -> Result<DevicePeaks, String> {
    DevicePeaks::parse(s).map_err(|e| e.to_string())
}

pub use crate::bytes::parse_bytes;
