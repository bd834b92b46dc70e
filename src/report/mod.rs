//! Reports made from a [`crate::Profile`]: the terminal table ([`table`]), run-to-run
//! comparison ([`diff`]) and the number formatting they share ([`units`]).

pub mod diff;
pub mod table;
pub mod units;

pub use diff::{diff_runs, DiffOutcome};
pub use table::{render_table, SortKey, TableOptions};
