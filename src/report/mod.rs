//! Kept for compatibility: the paths `brickprof::report::*` that 0.3 code uses. Everything here
//! is re-exported from the modules that own it now: the outputs and trace formats (`output`:
//! [`outputs`], [`Output`], [`write_output`], [`ChromeWriter`], [`PerfettoWriter`],
//! [`chrome_trace()`], [`convert`], ...), the numbers derived from a profile (`figures`:
//! [`Derived`], [`latency()`], ...) and run-to-run comparison (`compare`: [`diff_files`],
//! [`timing_changes`], [`judge`], ...). The CLI's policy (gates, budgets, the JUnit file)
//! lives in the CLI.

pub use crate::compare::*;
pub use crate::figures::*;
pub use crate::output::*;
pub use crate::trace::TraceView;
