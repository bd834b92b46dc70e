//! The `brickprof` binary as a user runs it: the demo, report, convert and merge commands, their
//! outputs, folders, traces and brick trees, parsing and bad input, the README's quick samples,
//! and (with the features) `demo --serve` and the demo on OpenCL. A module of the CLI's test
//! binary (tests/cli.rs); each file is a module, and a test's name is `commands::file::test`.

// The library's, loaded once here for the files that use them.
#[path = "../../../../tests/common/bad_traces.rs"]
mod bad_traces;
#[path = "../../../../tests/common/special_files.rs"]
mod special;

mod brick_tree_cli;
mod cli;
mod cli_outputs;
mod cli_parsers;
mod cli_robust;
mod cli_traces;
mod import_cli;
mod instruments_cli;
#[cfg(feature = "opencl")]
mod opencl_demo;
mod outputs_cli;
mod readme_samples;
mod run_folder_cli;
#[cfg(feature = "serve")]
mod serve_cli;
#[cfg(unix)]
mod vendor_cli;
