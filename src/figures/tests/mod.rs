//! Unit tests of the figures that reach their internals: cost against shape (`fits`) and TTFT,
//! TPOT and the fits out of a saved profile (`latency_profile`).

mod fits;
mod latency_profile;
