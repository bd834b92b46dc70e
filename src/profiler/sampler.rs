//! The sampler (spec/sync-modes.md "Sampling"): which passes and bricks are marked. The hot
//! path reads one byte, the marker's [`Switch`]; the profiler sets it from [`Sampler::switch`]
//! at layer and pass boundaries only. Under [`Sampling::Layers`] the sampler holds the `layer`
//! brick and the open measurement of the current layer.

use super::token::BrickToken;
use crate::{model::Sampling, BrickHandle};

/// What a start does now: the hot path's one switch, set at boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Switch {
    /// Mark it.
    On,
    /// The user turned measuring off: nothing, not even a count.
    Off,
    /// The user measures but the sampling plan leaves this start unmarked: count it as
    /// sampled out.
    SampledOut,
}

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
    /// Starts the plan left unmarked (each saved a start and a stop mark).
    sampled_out: u64,
    /// Whether the timeline traces the current pass (timelines start tracing).
    traced: bool,
    /// Passes marked whatever the plan (a live trace capture: a burst on demand), counting
    /// the current one.
    forced: u32,
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
            sampled_out: 0,
            traced: true,
            forced: 0,
        }
    }

    /// Mark the next `passes` counted passes (the current one first) whatever the plan: a
    /// live trace capture is a burst on demand (spec/sync-modes.md "Sampled tracing").
    pub(crate) fn force_passes(&mut self, passes: u32) {
        self.forced = self.forced.max(passes);
    }

    /// A counted pass ended: one forced pass fewer.
    pub(crate) fn counted_pass_ended(&mut self) {
        self.forced = self.forced.saturating_sub(1);
    }

    /// Whether the plan, or a capture, marks pass `pass_index`.
    fn marks_pass(&self, pass_index: u64) -> bool {
        self.forced > 0 || self.sampling.marks_pass(pass_index)
    }

    /// Whether the timeline's tracing must change for pass `pass_index` (spec/sync-modes.md
    /// "Sampled tracing"): `Some((traced, detach))` when the plan traces it and the previous
    /// pass not, or the reverse; `detach` when the plan spreads a detach over its gaps.
    pub(crate) fn tracing_change(&mut self, pass_index: u64) -> Option<(bool, bool)> {
        let traced = self.marks_pass(pass_index);
        (traced != self.traced).then(|| {
            self.traced = traced;
            (traced, self.sampling.detaches())
        })
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

    /// What a start does in pass `pass_index` right now.
    pub(crate) fn switch(&self, pass_index: u64) -> Switch {
        if !self.user_enabled {
            Switch::Off
        } else if self.marks_pass(pass_index)
            && !(self.sampling == Sampling::Layers && self.in_layer)
        {
            Switch::On
        } else {
            Switch::SampledOut
        }
    }

    /// A start the plan left unmarked ([`Switch::SampledOut`]), counted on the cold path of a
    /// start, so neither a disabled start nor a marked one pays for it (spec/hot-path.md
    /// "Costs").
    pub(crate) fn sampled_out_start(&mut self) {
        self.sampled_out = self.sampled_out.saturating_add(1);
    }

    /// Starts the sampling plan left unmarked so far.
    pub(crate) fn sampled_out(&self) -> u64 {
        self.sampled_out
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
        self.forced = 0;
        self.in_layer = false;
        self.layer_open = None;
        self.sampled_out = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spec/sync-modes.md "Sampling": the switch is off whenever the user disabled measuring
    /// (nothing counted), sampled out where the plan leaves a start unmarked, on otherwise.
    #[test]
    fn the_switch_follows_the_user_then_the_plan() {
        let every = Sampling::every(2).unwrap();
        let mut s = Sampler::new(every, true);
        assert_eq!(
            (s.switch(0), s.switch(1), s.switch(2)),
            (Switch::On, Switch::SampledOut, Switch::On)
        );
        s.set_user_enabled(false);
        assert_eq!((s.switch(0), s.switch(1)), (Switch::Off, Switch::Off));

        let mut s = Sampler::new(Sampling::Layers, true);
        assert_eq!(s.switch(7), Switch::On, "outside layers");
        s.entered_layer(BrickToken::INERT);
        assert_eq!(s.switch(7), Switch::SampledOut, "inside a layer");
        let (was_in, open) = s.leave_layer();
        assert!(was_in && open.is_some());
        assert_eq!(s.switch(7), Switch::On);

        s.sampled_out_start();
        s.sampled_out_start();
        assert_eq!(s.sampled_out(), 2);
        s.reset();
        assert_eq!(s.sampled_out(), 0);
    }
}
