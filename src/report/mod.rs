//! Kept for compatibility: the paths `brickprof::report::*` that 0.3 code uses. Everything here
//! is re-exported from the modules that own it now: the outputs and trace formats (`output`:
//! [`outputs`], [`Output`], [`write_output`], [`ChromeWriter`], [`PerfettoWriter`],
//! [`chrome_trace()`], [`convert`], ...), the numbers derived from a profile (`figures`:
//! [`Derived`], [`latency()`], ...) and run-to-run comparison (`compare`: [`diff_files`],
//! [`timing_changes`], [`judge`], the gates, ...). Only the CLI policy still lives here: budgets
//! ([`check_budgets`]) and the JUnit rendering ([`render_junit`]), on their way to the CLI.

mod budget;
mod gate;

pub use crate::compare::*;
pub use crate::figures::*;
pub use crate::output::*;
pub use crate::trace::TraceView;
pub use budget::{check_budgets, parse_duration_ns, Budget, BudgetCheck, BudgetTarget};
pub use gate::render_junit;
