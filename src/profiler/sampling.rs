//! Sampling (spec/sync-modes.md "Sampling"): which bricks and passes are marked. The hot path
//! reads one flag, `enabled`, as it always did; this file keeps that flag equal to "the user
//! turned measuring on, this pass is sampled, and (under [`Sampling::Layers`]) we are not
//! inside a layer", recomputing it only at layer and pass boundaries.

use super::BrickProfiler;
use crate::timeline::Timeline;
use crate::{BrickCategory, Result, Sampling};

impl<T: Timeline> BrickProfiler<T> {
    /// What this profiler marks.
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// At construction: register the `layer` brick that [`Sampling::Layers`] times.
    pub(super) fn prepare_sampling(&mut self) -> Result<()> {
        if self.sampling == Sampling::Layers {
            let h = self.register_with_category(Sampling::LAYER_BRICK, BrickCategory::Other)?;
            self.layer_brick = Some(h);
        }
        self.refresh_marking();
        Ok(())
    }

    /// Recompute the effective switch the hot path reads.
    pub(super) fn refresh_marking(&mut self) {
        self.enabled = self.user_enabled
            && self.sampling.marks_pass(self.pass_index)
            && !(self.sampling == Sampling::Layers && self.in_layer);
    }

    /// `begin_layer` (after the row is set): under [`Sampling::Layers`], start the layer's
    /// measurement and stop marking the bricks inside it.
    pub(super) fn sample_layer_begin(&mut self) {
        let Some(layer) = self.layer_brick else {
            return;
        };
        self.sample_layer_end();
        let token = self.start_brick(layer);
        self.layer_open = Some(token);
        self.in_layer = true;
        self.refresh_marking();
    }

    /// `end_layer` and `end_pass`: under [`Sampling::Layers`], stop the layer's measurement.
    pub(super) fn sample_layer_end(&mut self) {
        if self.in_layer {
            self.in_layer = false;
            self.refresh_marking();
        }
        if let Some(token) = self.layer_open.take() {
            self.stop_brick(token, 1);
        }
    }
}
