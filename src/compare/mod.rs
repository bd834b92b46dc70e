//! Comparing runs, returning data: checksums and captured tensors of two runs (`divergence`),
//! run-to-run timing differences (`timing_diff`), timing verdicts against the noise
//! (`timing_verdict`, `verdicts`, `cells`, `relative`, `noise_check`), two instruments of one
//! run side by side (`instruments`), the regression gates asked
//! of them (`gate`), and `diff`, which puts them together for two run files.

pub(crate) mod cells;
pub(crate) mod diff;
pub(crate) mod divergence;
pub(crate) mod instruments;
pub(crate) mod noise_check;
pub(crate) mod relative;
#[cfg(test)]
mod tests;
pub(crate) mod timing_diff;
pub(crate) mod timing_verdict;
pub(crate) mod verdicts;

pub use diff::{diff_files_with, run_files, DiffOptions, DiffOutcome, CAPTURE_FILE};
pub use divergence::{
    check::Check, divergence, origin::ErrorFlow, DivergenceInfo, DivergenceReport, Tolerance,
    Verdict,
};
pub use instruments::{
    instrument_diff, DeclaredMeasured, Explanation, InstrumentDiff, InstrumentInfo, InstrumentRow,
    Side, WorkCheck,
};
pub use timing_diff::{timing_diff, TimingDiff};
pub use timing_verdict::{Interval, Judgement, TimingVerdict, Withheld};
pub use verdicts::{Quantity, TimingVerdicts, VerdictOptions, VerdictRow};
