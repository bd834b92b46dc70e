//! The sampler (spec/sync-modes.md "Sampling"): which passes and bricks are marked. The hot
//! path reads one flag, the marker's `marking`; the profiler sets it from [`Sampler::marking`]
//! at layer and pass boundaries only. Under [`Sampling::Layers`] the sampler holds the `layer`
//! brick and the open measurement of the current layer.

use super::token::BrickToken;
use crate::{BrickHandle, Sampling};

/// What is marked, and the state that decides it.
#[derive(Debug)]
pub(crate) struct Sampler {
    sampling: Sampling,
    /// Whether the user turned measuring on.
    user_enabled: bool,
    /// Inside a layer (between `begin_layer` and `end_layer`).
    in_layer: bool,
    /// The `layer` brick under [`Sampling::Layers`].
    layer_brick: Option<BrickHandle>,
    /// The current layer's open measurement under [`Sampling::Layers`].
    layer_open: Option<BrickToken>,
    /// The user measures but the plan leaves starts unmarked now: the unmarked starts since
    /// the last boundary count as sampled out.
    counting: bool,
    /// Starts made with marking off since the last boundary, whoever turned it off (counted
    /// without a branch; settled into `sampled_out` or dropped at the next boundary).
    unmarked: u64,
    /// Starts the plan left unmarked (each saved a start and a stop mark), settled.
    sampled_out: u64,
}

impl Sampler {
    /// A sampler of `sampling`, measuring when `enabled`.
    pub(crate) fn new(sampling: Sampling, enabled: bool) -> Self {
        Sampler {
            sampling,
            user_enabled: enabled,
            in_layer: false,
            layer_brick: None,
            layer_open: None,
            counting: false,
            unmarked: 0,
            sampled_out: 0,
        }
    }

    /// What is marked.
    pub(crate) fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// Whether the user turned measuring on.
    pub(crate) fn user_enabled(&self) -> bool {
        self.user_enabled
    }

    /// The user turns measuring on or off.
    pub(crate) fn set_user_enabled(&mut self, on: bool) {
        self.user_enabled = on;
    }

    /// The brick that times whole layers, once registered (under [`Sampling::Layers`]).
    pub(crate) fn set_layer_brick(&mut self, brick: BrickHandle) {
        self.layer_brick = Some(brick);
    }

    /// Whether bricks are marked in pass `pass_index` right now.
    pub(crate) fn marking(&self, pass_index: u64) -> bool {
        self.user_enabled
            && self.sampling.marks_pass(pass_index)
            && !(self.sampling == Sampling::Layers && self.in_layer)
    }

    /// Whether the marker's switch is on, given the plan: the starts made while it is off are
    /// counted as sampled out only when the user measures.
    /// The unmarked starts since the last boundary are settled first (as sampled out, when
    /// the plan turned marking off; dropped when the user did).
    pub(crate) fn set_counting(&mut self, marking: bool) {
        self.settle();
        self.counting = self.user_enabled && !marking;
    }

    /// A start found the marker off (hot path, unmarked side): one add, no branch, so a
    /// disabled pair stays one branch (spec/hot-path.md "Costs").
    #[inline(always)]
    pub(crate) fn unmarked_start(&mut self) {
        self.unmarked = self.unmarked.wrapping_add(1);
    }

    /// Move the unmarked starts since the last boundary into the count, if the plan made them.
    fn settle(&mut self) {
        if self.counting {
            self.sampled_out = self.sampled_out.saturating_add(self.unmarked);
        }
        self.unmarked = 0;
    }

    /// Starts the sampling plan left unmarked so far.
    pub(crate) fn sampled_out(&self) -> u64 {
        let pending = if self.counting { self.unmarked } else { 0 };
        self.sampled_out.saturating_add(pending)
    }

    /// The brick to start as a layer begins, if whole layers are timed.
    pub(crate) fn layer_brick(&self) -> Option<BrickHandle> {
        self.layer_brick
    }

    /// A layer began, timed by `token`.
    pub(crate) fn entered_layer(&mut self, token: BrickToken) {
        self.layer_open = Some(token);
        self.in_layer = true;
    }

    /// A layer ended (or a pass did): whether the marking flag may change, and the layer's
    /// measurement to stop.
    pub(crate) fn leave_layer(&mut self) -> (bool, Option<BrickToken>) {
        let was_in = std::mem::replace(&mut self.in_layer, false);
        (was_in, self.layer_open.take())
    }

    /// Forget the open layer and the count (a reset).
    pub(crate) fn reset(&mut self) {
        self.in_layer = false;
        self.layer_open = None;
        self.unmarked = 0;
        self.sampled_out = 0;
    }
}
