//! Numbers kept while a run records, all bounded: [`BrickStats`] per cell, the log-linear
//! histogram, fits of time against shape (and whether to trust them), the pass series and the
//! per-pass brick times, tile statistics, and device time outside any brick.

pub(crate) mod brick_counters;
pub(crate) mod brick_stats;
pub(crate) mod fit;
pub(crate) mod fit_trust;
pub(crate) mod histogram;
pub(crate) mod outside_bricks;
pub(crate) mod pass_bricks;
pub(crate) mod pass_series;
pub(crate) mod tile;

pub use brick_stats::{BrickStats, Summary};
pub use fit::{Fit, FitSums, Regressor};
pub use outside_bricks::OutsideBricks;
pub use pass_series::{PassRecord, PassSeries};
pub(crate) use tile::TileStats;
pub use tile::{TileLevel, TileTimer};

#[cfg(test)]
mod tests;
