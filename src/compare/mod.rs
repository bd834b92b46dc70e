//! Comparing runs, returning data: checksums and captured tensors of two runs (`divergence`),
//! run-to-run timing differences and their verdicts against the noise, and the gates asked of
//! them.

pub mod divergence;
