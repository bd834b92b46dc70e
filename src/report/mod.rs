//! Reports made from a [`crate::Profile`]: the terminal table ([`table`]), run-to-run
//! comparison ([`diff`]), the HTML/SVG report ([`html`], [`svg`]; its error heat map: `error_map`), the brick tree as folded
//! stacks for flamegraphs ([`folded`]; the chains it cuts: `chains`) and as a DOT graph ([`dot`]), the number formatting they
//! share ([`units`]), and the trace writers, which consume a profiler's [`crate::TraceView`]:
//! one slice-building path ([`feed`], and the nesting both writers share) into Perfetto protobuf
//! ([`perfetto`]) or Chrome JSON ([`chrome`]; in memory: [`chrome_trace()`]) behind one
//! [`TraceSink`], written to files by [`write_trace`] and [`convert`] (private modules
//! `slices`, `chrome_trace`, `trace_file`, `trace_output`).

mod chains;
pub mod chrome;
pub(crate) mod chrome_trace;
pub mod derived;
pub mod diff;
pub mod dot;
mod error_map;
pub mod export;
pub mod folded;
pub mod html;
pub mod perfetto;
pub(crate) mod perfetto_proto;
mod slices;
pub mod svg;
pub mod table;
mod trace_file;
mod trace_output;
pub mod units;

pub use crate::trace::TraceView;
pub use chrome::ChromeWriter;
pub use chrome_trace::{chrome_trace, ChromeTrace};
pub use derived::{Derived, Row};
pub use diff::{
    diff_files, diff_files_with, diff_runs, render_timing, timing_changes, DiffOptions,
    DiffOutcome, TimingChange, CAPTURE_FILE,
};
pub use dot::render_dot;
pub use export::{render_csv, render_json};
pub use folded::{folded_stacks, render_folded};
pub use html::{render_html, HtmlOptions};
pub use perfetto::PerfettoWriter;
pub use slices::{feed, Flow, Slice, TraceSink};
pub use table::{render_table, SortKey, TableOptions};
pub use trace_file::{convert, write_trace, TraceFormat};
pub use trace_output::TraceOutput;
