//! Files and formats (spec/profile-format.md, spec/traces.md): saved profiles and their round
//! trips, bounded and robust reads, large integers, the output-file rules, trace writers and
//! conversion, run facts, escaped errors. A module of the library's test binary
//! (tests/library.rs); each file is a module.
//!
//! `bounded_reads` installs this binary's global allocator, which tracks the bytes each thread
//! holds (per thread, so the other tests' threads do not disturb its peaks; the others only
//! pass through it to the system allocator).

// Loaded once here for the files that use them (a file loaded twice is two modules).
#[path = "../common/bad_traces.rs"]
mod bad_traces;
#[path = "../common/special_files.rs"]
mod special;

mod bounded_reads;
mod convert_faults;
mod escaped_errors;
mod files_robust;
mod large_integers;
mod output_files;
mod profile_file;
mod run_meta;
mod trace;
mod trace_formats;
