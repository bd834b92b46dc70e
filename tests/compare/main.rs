//! Comparing runs and verdicts (spec/checksums.md, spec/divergence.md,
//! spec/timing-verdicts.md): checksums and their files, where error is born, diff options, and
//! the timing verdicts' measured rates. One test binary for the layer; each file is a module.

mod checksums;
mod diff_options;
mod divergence;
mod timing_verdicts;
