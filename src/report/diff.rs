//! `brickprof diff`: compare two runs. Checksums are compared with
//! [`crate::divergence::compare`] when both files carry them.

use std::fmt::Write as _;

use crate::divergence::{compare, DivergenceReport, Tolerance};
use crate::json_file::RunFile;
use crate::{Error, Result};

/// What a diff found.
#[derive(Debug, Clone)]
pub struct DiffOutcome {
    /// The printable report.
    pub text: String,
    /// True when something diverged (the CLI exits 1).
    pub diverged: bool,
    /// The checksum comparison, when both runs had checksums.
    pub checksums: Option<DivergenceReport>,
}

/// Compare a reference run with a candidate run.
pub fn diff_runs(
    reference: &RunFile,
    candidate: &RunFile,
    tolerance: Tolerance,
) -> Result<DiffOutcome> {
    let mut text = String::new();
    let mut diverged = false;
    let checksums = match (reference.checksums(), candidate.checksums()) {
        (Some(a), Some(b)) => {
            let report = compare(a, b, tolerance);
            let _ = writeln!(text, "{report}");
            diverged |= !report.is_match();
            Some(report)
        }
        _ => None,
    };
    if checksums.is_none() {
        return Err(Error::InvalidArgument(
            "nothing to compare: both files need checksums (run the demo with --checksums, or \
             enable ProfilerConfig::checksums)"
                .into(),
        ));
    }
    Ok(DiffOutcome {
        text,
        diverged,
        checksums,
    })
}
