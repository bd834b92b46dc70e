//! Unit tests of the figures that reach their internals: cost against shape (`fits`) and TTFT,
//! TPOT and the fits out of a saved profile (`latency_profile`), TTFT, TPOT and the latency block
//! of hand-built pass series (`latency_series`).

mod fits;
mod latency_profile;
mod latency_series;
