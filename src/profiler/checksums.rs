//! The checksum recorder: the checksum stage's part of the profiler. It keys kernel checksums
//! by (pass, layer, brick, call), in the dtype the engine computed, sampled by a
//! [`ChecksumPlan`] (spec/checksums.md "Recording"). Not on the timing hot path: it reads
//! whole tensors. Its fields are private to this file.

use std::num::NonZeroU64;

use super::BrickProfiler;
use crate::capture::{CapturePlan, CaptureStore};
use crate::checksum::{Algorithm, ChecksumLog, KernelKey, Tensor};
use crate::model::grid::{Grid, Rows};
use crate::timeline::{CpuTimeline, Timeline};
use crate::{model::BrickRegistry, BrickHandle};

/// Which kernels get checksummed when checksums are on, and with which algorithm: every Nth
/// pass, chosen layers, chosen bricks. Keys do not depend on the plan (call indices count
/// every call), so a sampled run's entries compare with the same entries of a full run.
///
/// ```
/// use std::num::NonZeroU64;
/// use brickprof::{BrickId, BrickProfiler, profiler::ChecksumPlan, ProfilerConfig};
/// let plan = ChecksumPlan {
///     every: NonZeroU64::new(4).unwrap(),
///     layers: Some(vec![0]),
///     ..ChecksumPlan::default()
/// };
/// let mut prof = BrickProfiler::new(ProfilerConfig {
///     layers: 2, checksums: true, checksum_plan: plan, ..Default::default()
/// })?;
/// for _pass in 0..8 {
///     for layer in 0..2 {
///         prof.checksums().record(Some(layer), BrickId::RmsNorm, &[1.0]);
///     }
///     prof.end_pass(1).unwrap();
/// }
/// let passes: Vec<u64> = prof.view().checksum_log.entries.iter().map(|e| e.key.pass).collect();
/// assert_eq!(passes, [0, 4]); // layer 0 of passes 0 and 4
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumPlan {
    /// Checksum passes 0, N, 2N, ... (1: every pass).
    pub every: NonZeroU64,
    /// Only these layers (`None`: every layer).
    pub layers: Option<Vec<usize>>,
    /// Whether kernels outside any layer (embedding, LM head) are checksummed.
    pub outside_layers: bool,
    /// Only bricks with these names (`None`: every brick). Built-in names (`RmsNorm`) or
    /// registered ones.
    pub bricks: Option<Vec<String>>,
    /// The hash algorithm of the log.
    pub algorithm: Algorithm,
}

impl Default for ChecksumPlan {
    fn default() -> Self {
        ChecksumPlan {
            every: NonZeroU64::MIN,
            layers: None,
            outside_layers: true,
            bricks: None,
            algorithm: Algorithm::default(),
        }
    }
}

impl ChecksumPlan {
    /// True when the plan takes a checksum of `brick` (named `name`) in `layer` in `pass`.
    pub(crate) fn selects(&self, pass: u64, layer: Option<usize>, name: &str) -> bool {
        pass.is_multiple_of(self.every.get())
            && match layer {
                None => self.outside_layers,
                Some(l) => self.layers.as_ref().is_none_or(|ls| ls.contains(&l)),
            }
            && self
                .bricks
                .as_ref()
                .is_none_or(|bs| bs.iter().any(|b| b == name))
    }
}

/// The checksum log, its plan, the captures and their plan, and the call counters of the
/// current pass.
#[derive(Debug)]
pub(crate) struct ChecksumRecorder {
    on: bool,
    log: ChecksumLog,
    plan: ChecksumPlan,
    /// Which kernels' outputs are captured whole (spec/divergence.md "Capture plans").
    capture_plan: CapturePlan,
    /// The captured outputs, within the plan's budget.
    captures: CaptureStore,
    /// Checksums taken per (slot, layer row) in the current pass.
    calls: Grid<u32>,
    /// Whether any call was counted since the last [`Self::new_pass`].
    calls_dirty: bool,
    /// Checksums of bricks this profiler does not know.
    dropped: u64,
}

impl ChecksumRecorder {
    /// The checksums recorded so far.
    pub(super) fn log(&self) -> &ChecksumLog {
        &self.log
    }

    /// Which kernels are captured whole.
    pub(super) fn capture_plan(&self) -> &CapturePlan {
        &self.capture_plan
    }

    /// A recorder for `slots` bricks over `rows`.
    pub(crate) fn new(
        on: bool,
        plan: ChecksumPlan,
        capture_plan: CapturePlan,
        slots: usize,
        rows: Rows,
    ) -> Self {
        ChecksumRecorder {
            on,
            log: ChecksumLog::with_algorithm(plan.algorithm),
            plan,
            captures: CaptureStore::with_budget(capture_plan.budget_bytes),
            capture_plan,
            calls: Grid::new(slots, rows.count()),
            calls_dirty: false,
            dropped: 0,
        }
    }

    /// Grow to `slots` bricks (a registration).
    pub(crate) fn grow_slots(&mut self, slots: usize) {
        self.calls.grow_slots(slots);
    }

    /// Record `output` of `brick` in `layer` during pass `pass`: its checksum when the
    /// checksum plan takes it, a copy when the capture plan takes it.
    pub(crate) fn record(
        &mut self,
        names: &BrickRegistry,
        rows: Rows,
        pass: u64,
        (layer, brick): (Option<usize>, BrickHandle),
        output: Tensor<'_>,
    ) {
        let Some((key, checksum, capture)) = self.key(names, rows, pass, layer, brick) else {
            return;
        };
        match (checksum, capture) {
            (true, true) => {
                self.captures.record(key.clone(), output);
                self.log.record(key, output);
            }
            (true, false) => self.log.record(key, output),
            (false, true) => {
                self.captures.record(key, output);
            }
            (false, false) => {}
        }
    }

    /// The key of the next call of `brick` in `layer`, and whether its checksum and its
    /// capture are taken; `None` when neither is. The call counter advances whenever
    /// checksums or captures are on, so keys do not depend on either plan.
    fn key(
        &mut self,
        names: &BrickRegistry,
        rows: Rows,
        pass: u64,
        layer: Option<usize>,
        brick: BrickHandle,
    ) -> Option<(KernelKey, bool, bool)> {
        if !self.on && self.capture_plan.is_empty() {
            return None;
        }
        let Some(name) = names.name(brick) else {
            self.dropped = self.dropped.saturating_add(1);
            return None;
        };
        let row = rows.of_layer(layer);
        let Some(calls) = self.calls.get_mut(brick.slot(), row.index()) else {
            self.dropped = self.dropped.saturating_add(1);
            return None;
        };
        let call = *calls;
        *calls = calls.saturating_add(1);
        self.calls_dirty = true;
        let layer32 = layer.map(|l| u32::try_from(l).unwrap_or(u32::MAX));
        let checksum = self.on && self.plan.selects(pass, layer, name);
        let capture = self.capture_plan.selects(pass, layer32, name);
        if !checksum && !capture {
            return None;
        }
        let key = KernelKey {
            pass,
            layer: layer32,
            brick: name.to_string(),
            call,
        };
        Some((key, checksum, capture))
    }

    /// A new pass: call indices start again from 0. Costs nothing when no checksum was taken.
    pub(crate) fn new_pass(&mut self) {
        if self.calls_dirty {
            self.calls.reset_with(|c| *c = 0);
            self.calls_dirty = false;
        }
    }

    /// Forget every checksum and count.
    pub(crate) fn reset(&mut self) {
        self.log.entries.clear();
        self.captures.clear();
        self.new_pass();
        self.dropped = 0;
    }

    /// Checksums of bricks this profiler does not know.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl<T: Timeline> BrickProfiler<T> {
    /// The checksum recorder's front (spec/divergence.md): record outputs, turn recording on
    /// or off, take the log and the captures. Reading them in place is [`Self::view`]'s
    /// [`View::checksum_log`](super::View::checksum_log).
    #[inline]
    pub fn checksums(&mut self) -> Checksums<'_, T> {
        Checksums { prof: self }
    }
}

/// Recording kernel outputs' checksums and captures on a profiler, from
/// [`BrickProfiler::checksums`]: one `&mut` borrow, nothing more.
#[derive(Debug)]
pub struct Checksums<'a, T: Timeline = CpuTimeline> {
    prof: &'a mut BrickProfiler<T>,
}

impl<T: Timeline> Checksums<'_, T> {
    /// Record the checksum and summary of `output`, the f32 output of `brick` in `layer`
    /// (`None`: outside any layer), keyed by (pass, layer, brick, call index within the pass),
    /// and capture it whole when the [`CapturePlan`] takes it. A no-op when checksums are off
    /// (or the [`ChecksumPlan`] skips this kernel) and the capture plan does not take it. Not
    /// a hot-path call: it reads the whole tensor.
    ///
    /// ```
    /// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
    /// let mut prof = BrickProfiler::new(ProfilerConfig { checksums: true, ..Default::default() })?;
    /// prof.checksums().record(Some(0), BrickId::RmsNorm, &[1.0, 2.0]);
    /// prof.checksums().record(Some(0), BrickId::RmsNorm, &[3.0]);
    /// let log = prof.view().checksum_log;
    /// assert_eq!(log.entries[1].key.call, 1);
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    #[inline]
    pub fn record(&mut self, layer: Option<usize>, brick: impl Into<BrickHandle>, output: &[f32]) {
        self.record_tensor(layer, brick, Tensor::F32(output));
    }

    /// [`Self::record`] for an output of any dtype (f16/bf16 as raw bits: [`Tensor::F16`],
    /// [`Tensor::Bf16`]); the dtype is recorded with it.
    ///
    /// ```
    /// use brickprof::checksum::{DType, QuantBlocks, QuantFormat, Tensor};
    /// use brickprof::{BrickId, BrickProfiler, ProfilerConfig};
    /// let mut prof = BrickProfiler::new(ProfilerConfig { checksums: true, ..Default::default() })?;
    /// let weights = QuantBlocks::new(QuantFormat::Q8_0, &[0u8; 34])?;
    /// let mut sums = prof.checksums();
    /// sums.record_tensor(None, BrickId::LmHead, Tensor::Quantized(weights));
    /// sums.record_tensor(None, BrickId::LmHead, Tensor::I8(&[1, -1]));
    /// let dtypes: Vec<_> = prof.view().checksum_log.entries.iter().map(|e| e.dtype).collect();
    /// assert_eq!(dtypes, [Some(DType::Q8_0), Some(DType::I8)]);
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    #[inline]
    pub fn record_tensor(
        &mut self,
        layer: Option<usize>,
        brick: impl Into<BrickHandle>,
        output: Tensor<'_>,
    ) {
        let prof = &mut *self.prof;
        let (rows, pass) = (prof.marker.rows(), prof.passes.index());
        prof.checksums.record(
            &prof.shelf.get().registry,
            rows,
            pass,
            (layer, brick.into()),
            output,
        );
    }

    /// Turn checksum recording on or off.
    #[inline]
    pub fn set_enabled(&mut self, on: bool) {
        self.prof.checksums.on = on;
    }

    /// Take the checksums recorded so far, leaving an empty log with the same algorithm.
    pub fn take_log(&mut self) -> ChecksumLog {
        let rec = &mut self.prof.checksums;
        let algorithm = rec.plan.algorithm;
        std::mem::replace(&mut rec.log, ChecksumLog::with_algorithm(algorithm))
    }

    /// Take the captures so far, leaving an empty store with the same budget.
    pub fn take_captures(&mut self) -> CaptureStore {
        let rec = &mut self.prof.checksums;
        let budget = rec.capture_plan.budget_bytes;
        std::mem::replace(&mut rec.captures, CaptureStore::with_budget(budget))
    }
}
