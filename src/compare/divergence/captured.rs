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
/// ```
/// use brickprof::capture::CaptureStore;
/// use brickprof::checksum::{ChecksumLog, KernelKey, Tensor};
/// use brickprof::compare::{apply_captures, divergence, Tolerance, Verdict};
/// let key = KernelKey { pass: 0, layer: Some(0), brick: "RmsNorm".into(), call: 0 };
/// let (a, b) = ([1.0f32, 2.0, 3.0], [1.0f32, 2.0, 3.0001]);
/// let (mut la, mut lb) = (ChecksumLog::new(), ChecksumLog::new());
/// la.record(key.clone(), Tensor::F32(&a));
/// lb.record(key.clone(), Tensor::F32(&b));
/// let (mut ca, mut cb) = (CaptureStore::with_budget(1 << 20), CaptureStore::with_budget(1 << 20));
/// ca.record(key.clone(), Tensor::F32(&a));
/// cb.record(key, Tensor::F32(&b));
/// let mut report = divergence(&la, &lb, Tolerance::EXACT)?;
/// apply_captures(&mut report, &ca, &cb, &["sqnr:60".parse().unwrap()]);
/// let d = report.first().unwrap();
/// assert_eq!(d.verdict, Verdict::WithinTolerance);
/// assert!(d.elementwise.unwrap().sqnr_db > 60.0);
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn apply_captures(
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
    s.tensors().iter().map(|t| (&t.key, t)).collect()
}

/// Check that every capture of `captures` (read from `path`) is the output its run's checksum
/// log recorded at the same key (same hash, with the log's algorithm): captures left by another
/// run are an [`Error::Invalid`] naming the capture file, never a silent false comparison.
pub(crate) fn check_captures_match(
    captures: &CaptureStore,
    log: &ChecksumLog,
    path: &Path,
) -> Result<()> {
    let by_key: std::collections::HashMap<_, _> =
        log.entries().iter().map(|e| (&e.key, e)).collect();
    for t in captures.tensors() {
        if let Some(e) = by_key.get(&t.key) {
            if e.hash != t.hash(log.algorithm()) || e.dtype.is_some_and(|d| d != t.dtype) {
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
