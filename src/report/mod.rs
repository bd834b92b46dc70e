//! Reports made from a [`crate::Profile`]: the terminal table ([`table`]), run-to-run
//! comparison ([`diff`]), the HTML/SVG report ([`html`], [`svg`]), the number formatting they
//! share ([`units`]), and the trace writers: Perfetto protobuf ([`perfetto`]) and Chrome JSON
//! ([`chrome`]) behind one [`TraceSink`] ([`trace_sink`]).

pub mod chrome;
pub mod derived;
pub mod diff;
pub mod export;
pub mod html;
pub mod perfetto;
pub mod perfetto_proto;
pub mod svg;
pub mod table;
pub mod trace_sink;
pub mod units;

pub use chrome::ChromeWriter;
pub use derived::{Derived, Row};
pub use diff::{diff_files, diff_runs, render_timing, timing_changes, DiffOutcome, TimingChange};
pub use export::{render_csv, render_json};
pub use html::{render_html, HtmlOptions};
pub use perfetto::PerfettoWriter;
pub use table::{render_table, SortKey, TableOptions};
pub use trace_sink::{
    convert, feed, write_trace, Flow, Slice, StreamFile, TraceFormat, TraceHeader, TraceOutput,
    TraceSink,
};
