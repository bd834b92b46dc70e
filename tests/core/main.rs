//! The profiler and its model (spec/hot-path.md, spec/work-accounting.md): bricks, layers,
//! passes and phases, sampling, the pass series and the fits, derived numbers, typed errors.
//! One test binary for the layer (issue 36 §5: a few binaries compile and link faster than one
//! per file); each file below is a module, and a test's name is `file::test`.

#[path = "../common/mod.rs"]
mod common;

mod nesting;
mod pass_series;
mod phases;
mod profiler;
mod sampling;
mod typed_errors;
mod work_accounting;
