//! Everything made from a run, behind one curated list. The outputs are one list ([`outputs`]:
//! `table`, `json`, `csv`, `html`, `folded`, `dot` made from a [`crate::Profile`]; [`Chrome`]
//! and [`Perfetto`] traces made from a [`TraceView`]; find one by name with [`output()`]),
//! each an [`Output`] that names itself, recognises its files and writes them whole
//! ([`write_output`]); the CLI builds its flags from that list. Beside them: the derived numbers
//! ([`Derived`]), run-to-run comparison ([`diff_files`], [`timing_changes`], timing verdicts: [`judge`]), the trace writers'
//! streaming interface ([`TraceSink`], [`feed`], [`ChromeWriter`], [`PerfettoWriter`],
//! [`chrome_trace()`] in memory) and [`convert`]. The modules behind them are private; what is
//! not re-exported here is the crate's own.

mod budget;
mod cells;
mod chains;
mod chrome;
pub(crate) mod chrome_trace;
mod derived;
mod diff;
mod dot;
mod error_map;
mod export;
mod folded;
mod gate;
mod html;
mod latency;
mod noise_check;
mod output;
mod pass_chart;
mod perfetto;
mod perfetto_proto;
mod relative;
mod shape_costs;
mod slices;
mod svg;
mod table;
mod timing_diff;
mod timing_verdict;
mod trace_file;
mod trace_output;
mod units;
mod verdicts;
mod xml;

pub use crate::profile::trace::TraceView;
pub use budget::{check_budgets, parse_duration_ns, Budget, BudgetCheck, BudgetTarget};
pub use cells::{multiplicity_factor, trimmed_mean};
pub use chrome::ChromeWriter;
pub use chrome_trace::{chrome_trace, ChromeTrace};
pub use derived::{Derived, Row};
pub use diff::{
    diff_files, diff_files_with, diff_runs, run_files, DiffOptions, DiffOutcome, CAPTURE_FILE,
};
pub use dot::render_dot;
pub use export::{render_csv, render_json};
pub use folded::{folded_stacks, render_folded, CUT, MAX_FRAMES, MAX_STEPS};
pub use gate::{apply_gates, ask_gates, render_junit, Gate, GateOutcome};
pub use html::{render_html, HtmlOptions};
pub use latency::{
    latency, profile_latency, render_latency, Latency, Samples, Summary, Throughput,
};
pub use noise_check::noise_run_problem;
pub use output::{
    output, outputs, write_output, Chrome, Output, Perfetto, ReportOptions, Snapshot, Takes,
};
pub use perfetto::{PerfettoWriter, MAX_HELD_SLICES};
pub use shape_costs::{
    brick_fit, category_sums, context_shares, default_contexts, render_context_shares, render_fits,
    BrickFit, CategoryTrend, ContextShares, ShareRow, MIN_TREND_R2,
};
pub use slices::{feed, Flow, OpenSink, PassSlice, Slice, TraceSink};
pub use table::{render_table, SortKey, TableOptions};
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
pub use trace_file::{convert, other_trace_output, trace_output_of, write_trace};
pub use trace_output::TraceOutput;
pub use verdicts::{
    timing_verdicts, withheld_text, Quantity, TimingVerdicts, VerdictOptions, VerdictRow,
};
pub use xml::{xml_safe, XML_REPLACEMENT};
