//! [`TracedPasses`]: the capability of a timeline whose tracing costs the device's launches
//! something even when nothing is marked (CUPTI's kernel records cost host time at each launch),
//! so that it is switched on only for the passes the sampling plan picks (spec/sync-modes.md
//! "Sampled tracing"). The profiler decides once per pass, at the pass boundary, and calls it
//! only when the decision changes: nothing is chosen on the hot path.

use crate::Result;

/// Tracing switched per pass.
pub trait TracedPasses {
    /// Trace the passes from now on (`true`) or stop tracing them (`false`). Stopping with
    /// `detach` also detaches from the tracer (`cuptiFinalize`), so that untraced passes cost
    /// exactly what no profiler costs; tracing again re-attaches. Records of calls made while
    /// tracing are kept: they still resolve.
    fn set_traced(&mut self, traced: bool, detach: bool) -> Result<()>;
}
