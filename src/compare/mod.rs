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

pub use diff::{diff_files_with, diff_runs, run_files, DiffOptions, DiffOutcome, CAPTURE_FILE};
pub use divergence::{
    check::{Check, Stat},
    divergence,
    metrics::ErrorStats,
    noise::{NoiseBand, NoiseMeasure, DEFAULT_NOISE_FACTOR},
    origin::{ErrorFlow, LayerFlow, PassDivergence},
    rerun::RerunPlan,
    DivergenceInfo, DivergenceReport, Tolerance, Verdict,
};
pub use instruments::{
    instrument_diff, DeclaredMeasured, Explanation, InstrumentDiff, InstrumentInfo, InstrumentRow,
    Side, WorkCheck, GAP_NOT_COMPARED,
};
pub use timing_diff::{
    timing_diff, LatencyChange, PhaseTiming, RateChange, SummaryChange, TimingChange, TimingDiff,
};
pub use timing_verdict::{
    Interval, Judgement, TimingVerdict, VerdictSettings, Withheld, BOOTSTRAP_RESAMPLES,
    DEFAULT_TIMING_NOISE_FACTOR,
};
pub use verdicts::{withheld_text, Quantity, TimingVerdicts, VerdictOptions, VerdictRow};
