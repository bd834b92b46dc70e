//! Reports made from a [`crate::Profile`]: the terminal table ([`table`]) and the number
//! formatting they share ([`units`]).

pub mod table;
pub mod units;

pub use table::{render_table, SortKey, TableOptions};
