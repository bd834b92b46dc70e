//! The second step of the two-step workflow (spec/divergence.md "Two-step workflow"): after
//! checksums name the first divergence, the exact capture options to re-run both sides with:
//! that kernel, the other kernels of its layer, and its layer's input, in its pass only.

use std::fmt;

use super::DivergenceReport;
use crate::capture::{KernelPattern, LayerPattern};
use crate::checksum::ChecksumLog;

/// What to capture on the re-run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RerunPlan {
    /// The pass of the first divergence.
    pub(crate) pass: u64,
    /// Its layer's kernels, then its layer's input.
    pub(crate) kernels: Vec<KernelPattern>,
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
/// (Example: the unit test `rerun_plan_names_the_capture_options` in `divergence/tests.rs`.)
pub(crate) fn rerun_plan(report: &DivergenceReport, reference: &ChecksumLog) -> Option<RerunPlan> {
    let first = report.first_diverged().or_else(|| report.first())?;
    let key = &first.key;
    let entries = &reference.entries;
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
