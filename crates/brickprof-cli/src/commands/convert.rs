//! `brickprof convert`: a saved trace from one format to another, streaming.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use brickprof::output::{convert, outputs, trace_output_of, Output, Takes};
use brickprof::{Error, Result};

use crate::flags::{parse_trace_output, OutputArg};
use crate::output::Stdout;

/// `brickprof convert`'s flags.
#[derive(Args)]
pub struct ConvertArgs {
    /// A trace written by brickprof (trace.pftrace or trace.json).
    input: PathBuf,
    /// Where to write (default: INPUT with the other format's extension).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Format to write (default: the other one).
    #[arg(long, value_parser = parse_trace_output)]
    to: Option<OutputArg>,
}

impl ConvertArgs {
    /// The file it reads and the one it writes (its default output is checked by `convert`).
    pub fn inputs_and_outputs(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (
            vec![self.input.clone()],
            self.output.iter().cloned().collect(),
        )
    }
}

/// Convert `input` into `--to` (default: the other format of the one it is in).
pub fn run(args: ConvertArgs, stdout: &mut Stdout) -> Result<ExitCode> {
    let ConvertArgs { input, output, to } = args;
    let to = match to {
        Some(OutputArg(o)) => o,
        None => other_format(&input)?,
    };
    let output = output.unwrap_or_else(|| input.with_extension(to.extension()));
    let from = convert(&input, &output, to)?;
    stdout.safe_line(&format!(
        "converted {} ({}) to {} ({})",
        input.display(),
        from.name(),
        output.display(),
        to.name()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The trace format `input` is not in, when it has one other: what `convert` writes without
/// `--to`.
fn other_format(input: &std::path::Path) -> Result<&'static dyn Output> {
    trace_output_of(input)
        .map_err(|e| match e {
            Error::Invalid { .. } => Error::invalid_value(
                "trace file",
                input.display(),
                "cannot tell its trace format from its name or its first bytes \
                 (convert reads brickprof's traces), so not which to write: say \
                 --to NAME",
            ),
            e => e,
        })
        .map(|from| other_trace_output(from).ok_or(from))?
        .map_err(|from| {
            Error::invalid_value(
                "trace file",
                input.display(),
                format!("it is a {} trace: say --to NAME", from.name()),
            )
        })
}

/// The trace output to convert a file of `from` to when none is named: the only other trace
/// output.
fn other_trace_output(from: &dyn Output) -> Option<&'static dyn Output> {
    let mut others = outputs()
        .iter()
        .copied()
        .filter(|o| o.takes() == Takes::Trace && o.name() != from.name());
    let first = others.next()?;
    others.next().is_none().then_some(first)
}
