//! [`BrickToken`]: the move-only ticket of one open brick, from `start_brick` to `stop_brick`.

/// "No entry" in entry links and tokens.
pub(crate) const NO_ENTRY: u32 = u32::MAX;

/// An open brick measurement from [`super::BrickProfiler::start_brick`]. Move-only: it is given
/// back to [`super::BrickProfiler::stop_brick`] exactly once (a second stop does not compile).
/// A token that is never stopped (an early return) costs only its own measurement: `end_pass`
/// counts it as unclosed. A token stopped on another profiler, or after `end_pass` closed it,
/// is counted as a stray stop and records nothing.
///
/// ```compile_fail
/// use brickprof::{BrickId, BrickProfiler};
/// let mut prof = BrickProfiler::default();
/// let t = prof.start_brick(BrickId::RmsNorm);
/// prof.stop_brick(t, 1);
/// prof.stop_brick(t, 1); // error[E0382]: use of moved value: `t`
/// ```
#[derive(Debug)]
#[must_use = "pass the token to stop_brick, or the brick is not recorded"]
pub struct BrickToken {
    /// Index of the brick's entry in the pending buffer when it started.
    pub(super) entry: u32,
    /// The entry's start sequence number (tells a reused index from the token's entry).
    pub(super) seq: u32,
    /// The profiler that issued it (0: inert, from a disabled profiler).
    pub(super) owner: u32,
}

impl BrickToken {
    /// A token that records nothing (what a disabled profiler hands out).
    pub(super) const INERT: BrickToken = BrickToken {
        entry: NO_ENTRY,
        seq: 0,
        owner: 0,
    };

    /// True when this token will record a measurement at `stop_brick`.
    pub(crate) fn is_live(&self) -> bool {
        self.owner != 0 && self.entry != NO_ENTRY
    }
}
