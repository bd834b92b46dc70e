//! Comparing runs and verdicts (spec/checksums.md, spec/divergence.md,
//! spec/timing-verdicts.md): checksums and their files and diff options (where error is born and
//! the timing verdicts' measured rates are unit tests: `src/compare/divergence/tests.rs`,
//! `src/compare/tests/`). A module of the library's test binary (tests/library.rs); each file is
//! a module.

mod checksums;
mod diff_options;
