//! Where error is born (spec/divergence.md "Where error is born"): divergence by pass, the
//! kernels where error is born (beyond while their input was within) apart from those that
//! only carry it, and per layer the error entering (its input) against the error leaving (its
//! output): the amplification.
//!
//! A kernel's input is the kernel recorded just before it in the same pass of the reference
//! log (a forward pass records in execution order); a layer's input is the kernel recorded
//! just before the layer's first kernel. A kernel is where error is born when it diverged
//! while its input, its layer's input and every earlier kernel of its layer were within (a
//! kernel whose layer received or made diverged data carries it, even where the kernel before
//! it happened to agree, as a softmax over one position does: the attention output also reads
//! V). A pass may run several forwards (a prefill of one token at a
//! time): each sweep through the layers is a *forward*, and the layer table shows the forward
//! where error is first born. A kernel's error is the captures' relative L2 error
//! (`sqrt(NMSE)`) when both runs captured it, else the summaries' largest relative difference,
//! and 0 when bitwise equal.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{DivergenceInfo, DivergenceReport, ErrorStats, Verdict};
use crate::checksum::{ChecksumLog, KernelKey};

/// How one pass compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PassDivergence {
    /// The pass.
    pub(crate) pass: u64,
    /// Kernels of the reference in this pass.
    pub(crate) kernels: usize,
    /// Of those, kernels whose output differs at all.
    pub(crate) differing: usize,
    /// Of those, kernels judged diverged (beyond tolerance, checks and noise).
    pub(crate) diverged: usize,
}

/// Error entering and leaving one layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LayerFlow {
    /// The forward within the pass (0-based; a new one starts where the layer number drops).
    pub(crate) forward: usize,
    /// The layer.
    pub(crate) layer: u32,
    /// The layer's input: the kernel before its first kernel (`None`: the pass starts with it).
    pub(crate) input: Option<KernelKey>,
    /// The layer's output: its last kernel.
    pub(crate) output: KernelKey,
    /// The error of the input (0 when equal or none).
    pub(crate) entering: f64,
    /// The error of the output.
    pub(crate) leaving: f64,
    /// Whether the input was judged diverged.
    pub(crate) entering_diverged: bool,
    /// Whether the output was judged diverged.
    pub(crate) leaving_diverged: bool,
    /// The output's elementwise statistics (cosine, SQNR, ...), when both runs captured it
    /// and it differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) leaving_stats: Option<ErrorStats>,
}

impl LayerFlow {
    /// `leaving / entering`; `None` when no error entered.
    pub(crate) fn amplification(&self) -> Option<f64> {
        (self.entering > 0.0).then(|| self.leaving / self.entering)
    }

    /// True when error is born in this layer: it leaves diverged while it entered within.
    pub(crate) fn is_birthplace(&self) -> bool {
        self.leaving_diverged && !self.entering_diverged
    }
}

/// Where error is born and how it travels. Its per-pass and per-layer rows are read in
/// `brickprof diff`'s text and JSON (`flow`, spec/divergence.md "Where error is born").
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ErrorFlow {
    /// Every pass of the reference, in order.
    pub(crate) by_pass: Vec<PassDivergence>,
    /// The first pass with a diverged kernel.
    pub first_pass: Option<u64>,
    /// In the first diverging pass, the kernels where error is born: diverged while their
    /// input was within (or there was none), in reference order.
    pub born: Vec<KernelKey>,
    /// Diverged kernels, over every pass, whose input had diverged too: they carry the error.
    pub carried: usize,
    /// The layers of the forward of the first diverging pass where error is first born.
    pub(crate) layers: Vec<LayerFlow>,
    /// Forwards in the first diverging pass.
    pub forwards: usize,
}

impl ErrorFlow {
    /// The layer of the first diverging pass with the largest finite amplification.
    pub(crate) fn top_amplifier(&self) -> Option<&LayerFlow> {
        self.layers
            .iter()
            .filter(|l| l.amplification().is_some_and(f64::is_finite))
            .max_by(|a, b| {
                let (x, y) = (a.amplification(), b.amplification());
                x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
            })
    }
}

/// Where error is born in `report`, a comparison whose reference log is `reference`.
///
/// (Example: the unit test `error_flow_finds_the_birthplace` in `divergence/tests.rs`.)
pub(crate) fn error_flow(report: &DivergenceReport, reference: &ChecksumLog) -> ErrorFlow {
    let differing: HashMap<&KernelKey, &DivergenceInfo> =
        report.divergences.iter().map(|d| (&d.key, d)).collect();
    let error = |k: &KernelKey| differing.get(k).map_or(0.0, |d| d.error());
    let stats = |k: &KernelKey| differing.get(k).and_then(|d| d.elementwise);
    let diverged = |k: &KernelKey| {
        differing
            .get(k)
            .is_some_and(|d| d.verdict == Verdict::Diverged)
    };
    let entries = &reference.entries;
    let mut flow = ErrorFlow::default();
    let mut start = 0;
    while start < entries.len() {
        let pass = entries[start].key.pass;
        let end = start
            + entries[start..]
                .iter()
                .position(|e| e.key.pass != pass)
                .unwrap_or(entries.len() - start);
        let keys: Vec<&KernelKey> = entries[start..end].iter().map(|e| &e.key).collect();
        let mut row = PassDivergence {
            pass,
            kernels: keys.len(),
            differing: 0,
            diverged: 0,
        };
        let first_diverging = flow.first_pass.is_none() && keys.iter().any(|k| diverged(k));
        // The layer's input diverged, or a kernel of the layer before this one did: data of
        // the layer (its residual stream, its K and V) may reach this kernel by another path.
        let mut layer_tainted = false;
        let mut born_forward = None;
        let forwards = forwards_of(&keys);
        for (i, k) in keys.iter().enumerate() {
            row.differing += usize::from(differing.contains_key(k));
            let input_diverged = i > 0 && diverged(keys[i - 1]);
            if i == 0 || keys[i - 1].layer != k.layer {
                layer_tainted = input_diverged;
            }
            if !diverged(k) {
                continue;
            }
            row.diverged += 1;
            let tainted = std::mem::replace(&mut layer_tainted, true);
            if input_diverged || tainted {
                flow.carried += 1;
            } else if first_diverging {
                flow.born.push((*k).clone());
                born_forward.get_or_insert(forwards[i]);
            }
        }
        if first_diverging {
            flow.first_pass = Some(pass);
            flow.forwards = forwards.last().map_or(0, |f| f + 1);
            let wanted = born_forward.unwrap_or(0);
            flow.layers = layers_of(&keys, &forwards, &error, &stats, &diverged)
                .into_iter()
                .filter(|l| l.forward == wanted)
                .collect();
        }
        flow.by_pass.push(row);
        start = end;
    }
    flow
}

/// The forward of each key of one pass: a new forward starts where the layer number drops.
fn forwards_of(keys: &[&KernelKey]) -> Vec<usize> {
    let (mut forward, mut last) = (0, None);
    keys.iter()
        .map(|k| {
            if let Some(l) = k.layer {
                if last.is_some_and(|p| l < p) {
                    forward += 1;
                }
                last = Some(l);
            }
            forward
        })
        .collect()
}

/// Each layer of one pass's keys (in order): its input, output, and their errors.
fn layers_of(
    keys: &[&KernelKey],
    forwards: &[usize],
    error: &impl Fn(&KernelKey) -> f64,
    stats: &impl Fn(&KernelKey) -> Option<ErrorStats>,
    diverged: &impl Fn(&KernelKey) -> bool,
) -> Vec<LayerFlow> {
    let mut out: Vec<LayerFlow> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let Some(layer) = k.layer else { continue };
        let contiguous = i > 0 && keys[i - 1].layer == Some(layer);
        match out.last_mut() {
            Some(l) if l.layer == layer && contiguous => {
                l.output = (*k).clone();
                l.leaving = error(k);
                l.leaving_diverged = diverged(k);
                l.leaving_stats = stats(k);
            }
            _ => {
                let input = i.checked_sub(1).map(|j| keys[j]);
                out.push(LayerFlow {
                    forward: forwards[i],
                    layer,
                    input: input.cloned(),
                    output: (*k).clone(),
                    entering: input.map_or(0.0, error),
                    leaving: error(k),
                    entering_diverged: input.is_some_and(diverged),
                    leaving_diverged: diverged(k),
                    leaving_stats: stats(k),
                });
            }
        }
    }
    out
}
