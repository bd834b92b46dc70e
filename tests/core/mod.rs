//! The profiler and its model (spec/hot-path.md, spec/work-accounting.md): bricks, layers,
//! passes and phases, sampling, the pass series and the fits, derived numbers, typed errors.
//! A module of the library's test binary (tests/library.rs); each file below is a module, and a
//! test's name is `core::file::test`.

mod nesting;
mod pass_series;
mod phases;
mod profiler;
mod sampling;
mod typed_errors;
mod work_accounting;
