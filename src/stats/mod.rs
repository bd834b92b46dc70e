//! Numbers kept while a run records, all bounded: [`BrickStats`] per cell, the log-linear
//! histogram, fits of time against shape (and whether to trust them), the pass series and the
//! per-pass brick times, tile statistics, and device time outside any brick.
//!
//! [`BrickStats`]: brick_stats::BrickStats

pub mod brick_stats;
pub mod fit;
pub mod fit_trust;
pub mod histogram;
pub mod outside_bricks;
pub mod pass_bricks;
pub mod pass_series;
pub mod tile;
