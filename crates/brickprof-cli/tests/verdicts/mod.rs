//! The `brickprof` binary's comparisons and verdicts: checksums, diffs by phase, divergence,
//! the gate, and planted slowdowns. A module of the CLI's test binary (tests/cli.rs); each file
//! is a module.

mod checksums_cli;
mod diff_phases_cli;
mod divergence_cli;
mod gate_cli;
mod slow_cli;
