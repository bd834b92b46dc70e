//! The leaves every layer uses, importing nothing else of the crate: the one [`Error`] type
//! (and the leaf types it names), the profiler's limits, integers that survive `f64` readers,
//! names made safe to print, plain decimal numbers, and a seeded generator.
//!
//! [`Error`]: error::Error

pub(crate) mod error;
pub(crate) mod exact_int;
pub(crate) mod limits;
// Only the live server reads numbers a user writes (its queries); the CLI has its own rule.
#[cfg(feature = "serve")]
pub(crate) mod plain_number;
pub(crate) mod printable;
pub(crate) mod splitmix;
