//! The library's integration tests, one binary with a module per layer (issue 36 §5: each test
//! binary links the crate and its dependencies again, so a few binaries build faster than many).
//! Run one layer with `cargo test --test library outputs::`, one test with
//! `cargo test --test library outputs::table_golden::`.
//!
//! Binaries of their own (tests/*.rs and tests/cuda/): tests that need a process to themselves
//! (a counting global allocator that must see every allocation, the thread-local collector,
//! soaks) or a feature (`cuda`, `opencl`, `roctx`).

/// The thread-local front door is process-global state: every test that uses it (in
/// `front_doors` and `timelines::graph_replay`) holds this lock and starts from
/// `thread::reset()`.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[path = "common/mod.rs"]
mod common;

#[path = "compare/mod.rs"]
mod compare;
#[path = "core/mod.rs"]
mod core;
#[path = "files/mod.rs"]
mod files;
#[path = "front_doors/mod.rs"]
mod front_doors;
#[path = "imports/mod.rs"]
mod imports;
#[path = "outputs/mod.rs"]
mod outputs;
#[path = "timelines/mod.rs"]
mod timelines;
