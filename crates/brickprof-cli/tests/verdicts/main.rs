//! The `brickprof` binary's comparisons and verdicts: checksums, diffs by phase, divergence,
//! the gate, and planted slowdowns. One test binary for these; each file is a module.

#[path = "../common/mod.rs"]
mod common;

mod checksums_cli;
mod diff_phases_cli;
mod divergence_cli;
mod gate_cli;
mod slow_cli;
