//! Numbers derived from a profile and how they print: the table's rows (shares, rates, the
//! roofline), TTFT/TPOT and throughput, cost against shape, and the units every text output
//! uses. Below both `output` and `compare`, which read them.

pub(crate) mod derived;
pub(crate) mod latency;
pub(crate) mod shape_costs;
#[cfg(test)]
mod tests;
pub(crate) mod units;

pub use derived::{Derived, Row};
pub use latency::{latency, Latency, Samples, Summary, Throughput};
pub use shape_costs::{brick_fit, render_fits, BrickFit};
