//! Reports made from a [`crate::Profile`]: the terminal table ([`table`]), run-to-run
//! comparison ([`diff`]) and the number formatting they share ([`units`]).

pub mod derived;
pub mod diff;
pub mod export;
pub mod table;
pub mod units;

pub use derived::{Derived, Row};
pub use diff::{diff_runs, render_timing, timing_changes, DiffOutcome, TimingChange};
pub use export::{render_csv, render_json};
pub use table::{render_table, SortKey, TableOptions};
