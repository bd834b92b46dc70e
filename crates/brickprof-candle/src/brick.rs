//! [`brick`]: a candle op timed as a brick on an explicit profiler.

use brickprof::{BrickHandle, BrickProfiler, Timeline, Work};
use candle_core::{Result, Tensor};

/// Run `op` timed as the brick `id` on `prof`, with its output's element count as the brick's
/// work ([`Work::elements`]), and return the output. The brick is stopped even when `op`
/// fails (with no work).
///
/// The brick lands in the layer the profiler is in ([`BrickProfiler::begin_layer`]).
pub fn brick<T: Timeline>(
    prof: &mut BrickProfiler<T>,
    id: impl Into<BrickHandle>,
    op: impl FnOnce() -> Result<Tensor>,
) -> Result<Tensor> {
    let token = prof.start_brick(id);
    let out = op();
    let elements = out.as_ref().map_or(0, |t| t.elem_count() as u64);
    prof.stop_brick_with(token, Work::elements(elements));
    out
}
