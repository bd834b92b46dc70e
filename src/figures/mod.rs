//! Numbers derived from a profile and how they print: the table's rows (shares, rates, the
//! roofline), TTFT/TPOT and throughput, cost against shape, and the units every text output
//! uses. Below both `output` and `compare`, which read them.

pub(crate) mod derived;
pub(crate) mod latency;
pub(crate) mod shape_costs;
pub(crate) mod units;

pub use derived::{Derived, Row};
pub use latency::{
    latency, profile_latency, render_latency, Latency, Samples, Summary, Throughput,
};
pub use shape_costs::{
    brick_fit, category_sums, context_shares, default_contexts, render_context_shares, render_fits,
    BrickFit, CategoryTrend, ContextShares, ShareRow,
};
