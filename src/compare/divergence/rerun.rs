//! The second step of the two-step workflow (spec/divergence.md "Two-step workflow"): after
//! checksums name the first divergence, the exact capture options to re-run both sides with:
//! that kernel, the other kernels of its layer, and its layer's input, in its pass only.

use std::fmt;

use super::DivergenceReport;
use crate::capture::{CapturePlan, KernelPattern, LayerPattern};
use crate::checksum::ChecksumLog;

/// What to capture on the re-run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RerunPlan {
    /// The pass of the first divergence.
    pub pass: u64,
    /// Its layer's kernels, then its layer's input.
    pub kernels: Vec<KernelPattern>,
}

impl RerunPlan {
    /// As a [`CapturePlan`] with the default budget.
    pub fn capture_plan(&self) -> CapturePlan {
        CapturePlan {
            kernels: self.kernels.clone(),
            passes: Some(vec![self.pass]),
            ..CapturePlan::default()
        }
    }
}

impl fmt::Display for RerunPlan {
    /// `--capture 2:*,1:ResidualAdd --capture-passes 0`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("--capture ")?;
        for (i, k) in self.kernels.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}")?;
        }
        write!(f, " --capture-passes {}", self.pass)
    }
}

/// The re-run plan for the first kernel beyond tolerance (else the first that differs);
/// `None` when nothing differs. `reference` is the compared reference log.
///
/// ```
/// use brickprof::checksum::{ChecksumLog, KernelKey, Tensor};
/// use brickprof::compare::{divergence, rerun_plan, Tolerance};
/// let key = |layer, brick: &str, call| KernelKey { pass: 0, layer: Some(layer), brick: brick.into(), call };
/// let (mut a, mut b) = (ChecksumLog::new(), ChecksumLog::new());
/// for (k, planted) in [(key(0, "RmsNorm", 0), 0.0), (key(0, "ResidualAdd", 1), 0.0),
///                      (key(1, "RmsNorm", 0), 0.0), (key(1, "DownProjection", 0), 0.5)] {
///     a.record(k.clone(), Tensor::F32(&[1.0]));
///     b.record(k, Tensor::F32(&[1.0 + planted]));
/// }
/// let plan = rerun_plan(&divergence(&a, &b, Tolerance::EXACT)?, &a).unwrap();
/// assert_eq!(plan.to_string(), "--capture 1:*,0:ResidualAdd --capture-passes 0");
/// # Ok::<(), brickprof::Error>(())
/// ```
pub fn rerun_plan(report: &DivergenceReport, reference: &ChecksumLog) -> Option<RerunPlan> {
    let first = report.first_diverged().or_else(|| report.first())?;
    let key = &first.key;
    let entries = reference.entries();
    let in_pass: Vec<_> = entries.iter().filter(|e| e.key.pass == key.pass).collect();
    let own = match key.layer {
        Some(l) => LayerPattern::Layer(l),
        None => LayerPattern::Outside,
    };
    let mut kernels = vec![KernelPattern {
        layer: own,
        brick: None,
    }];
    // The layer's input: the kernel before the layer's first kernel (for a kernel outside the
    // layers: the kernel before it).
    let first_of_layer = match key.layer {
        Some(_) => in_pass.iter().position(|e| e.key.layer == key.layer),
        None => in_pass.iter().position(|e| &e.key == key),
    };
    if let Some(i) = first_of_layer.and_then(|i| i.checked_sub(1)) {
        let input = &in_pass[i].key;
        if input.layer != key.layer {
            kernels.push(KernelPattern {
                layer: input
                    .layer
                    .map_or(LayerPattern::Outside, LayerPattern::Layer),
                brick: Some(input.brick.clone()),
            });
        }
    }
    Some(RerunPlan {
        pass: key.pass,
        kernels,
    })
}
