//! The `brickprof` binary's tests, one test binary with two modules (issue 36 §5: each test
//! binary links the crate and its dependencies again): `commands` (demo, report, convert,
//! merge, import, vendor, and bad input) and `verdicts` (checksums, diffs, divergence, gates).
//! Run one module with `cargo test -p brickprof-cli --test cli verdicts::`.
//! `peaks_stability` (release build, CI) stays a binary of its own.

#[path = "common/mod.rs"]
mod common;

#[path = "commands/mod.rs"]
mod commands;
#[path = "verdicts/mod.rs"]
mod verdicts;
