//! Elementwise comparison of captured kernels (spec/divergence.md "Elementwise comparison"):
//! where both runs captured a differing kernel, its [`ErrorStats`] are computed and, when
//! checks are given, they decide its verdict. Captures are first matched against their run's
//! checksum log, so captures of another run are refused.

use std::path::Path;

use super::{Check, DivergenceReport, ErrorStats, Verdict};
use crate::capture::CaptureStore;
use crate::checksum::ChecksumLog;
use crate::{Error, Result};

/// Fill in the elementwise statistics of every differing kernel both runs captured; with
/// `checks`, they decide its verdict: within tolerance when every check passes, diverged
/// otherwise. Kernels without captures keep their summary verdict.
///
/// (Example: the unit test `apply_captures_decides_by_checks` in `divergence/tests.rs`.)
pub(crate) fn apply_captures(
    report: &mut DivergenceReport,
    reference: &CaptureStore,
    candidate: &CaptureStore,
    checks: &[Check],
) {
    report.checks = checks.to_vec();
    let (ri, ci) = (index(reference), index(candidate));
    for d in &mut report.divergences {
        let (Some(r), Some(c)) = (ri.get(&d.key), ci.get(&d.key)) else {
            continue;
        };
        let (Some(rv), Some(cv)) = (r.values(), c.values()) else {
            continue;
        };
        let Some(stats) = ErrorStats::between(&rv, &cv) else {
            continue; // lengths differ: the summary verdict (diverged) stands
        };
        d.elementwise = Some(stats);
        if !checks.is_empty() {
            d.verdict = if checks.iter().all(|c| c.passes(&stats)) {
                Verdict::WithinTolerance
            } else {
                Verdict::Diverged
            };
        }
    }
}

/// The captures by key.
fn index(
    s: &CaptureStore,
) -> std::collections::HashMap<&crate::checksum::KernelKey, &crate::capture::CapturedTensor> {
    s.tensors.iter().map(|t| (&t.key, t)).collect()
}

/// Check that every capture of `captures` (read from `path`) is the output its run's checksum
/// log recorded at the same key (same hash, with the log's algorithm): captures left by another
/// run are an [`Error::Invalid`] naming the capture file, never a silent false comparison.
pub(crate) fn check_captures_match(
    captures: &CaptureStore,
    log: &ChecksumLog,
    path: &Path,
) -> Result<()> {
    let by_key: std::collections::HashMap<_, _> = log.entries.iter().map(|e| (&e.key, e)).collect();
    for t in &captures.tensors {
        if let Some(e) = by_key.get(&t.key) {
            if e.hash != t.hash(log.algorithm) || e.dtype.is_some_and(|d| d != t.dtype) {
                return Err(Error::invalid(
                    path,
                    format!(
                        "the capture of {} is not the output its run's checksum log recorded \
                         (another run's captures?); re-run with the capture options",
                        t.key
                    ),
                ));
            }
        }
    }
    Ok(())
}
