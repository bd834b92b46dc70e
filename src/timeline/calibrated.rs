//! [`Calibrated`]: a timeline that maps its device time to host time (spec/sync-modes.md
//! "Calibration").

use crate::timeline::calibration::Calibration;
use crate::Result;

/// The map from device time to host time, with its error bound, and the anchors it is fitted
/// from. A timeline without it (the CPU, whose marks are host readings) reports no bound.
pub trait Calibrated {
    /// The current map, `None` before the first anchor.
    fn calibration(&self) -> Option<Calibration>;

    /// Take one more anchor: a bracket of two host readings around a device mark on a stream or
    /// queue the profiler owns, so it never waits for the engine's work. The default does
    /// nothing (a model whose map is exact).
    fn anchor(&mut self) -> Result<()> {
        Ok(())
    }

    /// The host ticks that [`super::Timeline::timestamp_ns`] counts from, when it counts host
    /// ns. The profiler's trace then counts host slices from the same ticks, so that a device
    /// slice and its host dispatch line up. `None` (the default): the trace keeps its own
    /// origin, the profiler's construction (the simulated device, whose clock is its own).
    fn origin_ticks(&self) -> Option<u64> {
        None
    }
}
