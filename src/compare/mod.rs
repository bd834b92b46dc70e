//! Comparing runs, returning data: checksums and captured tensors of two runs (`divergence`),
//! run-to-run timing differences (`timing_diff`), timing verdicts against the noise
//! (`timing_verdict`, `verdicts`, `cells`, `relative`, `noise_check`), the regression gates asked
//! of them (`gate`), and `diff`, which puts them together for two run files.

pub(crate) mod cells;
pub(crate) mod diff;
pub(crate) mod divergence;
pub(crate) mod noise_check;
pub(crate) mod relative;
pub(crate) mod timing_diff;
pub(crate) mod timing_verdict;
pub(crate) mod verdicts;

pub use diff::{
    diff_files, diff_files_with, diff_runs, run_files, DiffOptions, DiffOutcome, CAPTURE_FILE,
};
pub use divergence::{
    apply_captures, apply_noise, divergence, error_flow, rerun_plan, Check, DivergenceInfo,
    DivergenceReport, ErrorFlow, ErrorStats, LayerFlow, NoiseBand, NoiseMeasure, PassDivergence,
    RerunPlan, Stat, Tolerance, Verdict, DEFAULT_NOISE_FACTOR,
};
pub use timing_diff::{
    render_timing, timing_changes, timing_diff, LatencyChange, PhaseTiming, RateChange,
    SummaryChange, TimingChange, TimingDiff,
};
pub use timing_verdict::{
    bootstrap_ratio, comparable, judge, judge_with_floor, median, noise_spread, ratio_of_medians,
    run_spread, seed_for, Direction, Interval, Judgement, TimingVerdict, VerdictSettings, Withheld,
    BOOTSTRAP_RESAMPLES, DEFAULT_MIN_EFFECT, DEFAULT_MIN_SHARE, DEFAULT_TIMING_NOISE_FACTOR,
    MIN_PASSES,
};
pub use verdicts::{
    timing_verdicts, withheld_text, Quantity, TimingVerdicts, VerdictOptions, VerdictRow,
};
