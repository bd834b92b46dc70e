//! Writers: each output format behind [`Output`], which recognises its files and writes them
//! whole (table, JSON, CSV, HTML, folded stacks, DOT, Perfetto and Chrome traces); the trace
//! formats' writers and readers (one slice-building path, streamed into a file or in memory)
//! and `convert`; SVG and XML helpers.

pub(crate) mod chains;
pub(crate) mod chrome_reader;
pub(crate) mod chrome_trace;
pub(crate) mod chrome_writer;
pub(crate) mod dot;
pub(crate) mod error_map;
pub(crate) mod export;
pub(crate) mod folded;
pub(crate) mod formats;
pub(crate) mod html;
pub(crate) mod pass_chart;
pub(crate) mod perfetto_proto;
pub(crate) mod perfetto_reader;
pub(crate) mod perfetto_writer;
pub(crate) mod slices;
pub(crate) mod svg;
pub(crate) mod table;
#[cfg(test)]
mod tests;
pub(crate) mod trace_file;
pub(crate) mod trace_output;
pub(crate) mod xml;

pub use crate::base::printable::printable;
pub use folded::folded_stacks;
pub use formats::{output, outputs, write_output, Output, ReportOptions, Snapshot, Takes};
pub use html::HtmlOptions;
pub use table::{render_table, SortKey, TableOptions};
pub use trace_file::{convert, trace_output_of};
pub use trace_output::TraceOutput;
pub use xml::xml_safe;
