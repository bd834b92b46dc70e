//! The bookkeeping every device timeline shares: a fixed number of mark slots per generation
//! (one generation between two recycles), which marks were made before the last sync, and what
//! resolving a bad mark reports. The slots' resources (events, markers) stay with each timeline.

use super::{invalid_mark, Mark, FAILED_MARK, INVALID_MARK};
use crate::{Error, Result};

/// Slots for `2 * pending_capacity + 2` marks: every pending measurement's two marks, plus
/// room for one open brick across a flush. A pending capacity of 0 is an error.
pub(crate) fn slots_for(timeline: &'static str, pending_capacity: usize) -> Result<usize> {
    if pending_capacity == 0 {
        return Err(Error::InvalidArgument(format!(
            "{timeline} timeline: pending capacity 0 leaves no room for a mark"
        )));
    }
    Ok(pending_capacity
        .saturating_mul(2)
        .saturating_add(2)
        .min(u32::MAX as usize - 2))
}

/// Milliseconds as the GPU runtimes report them (f32) to ns.
#[allow(dead_code)] // used by the hip and cuda features
pub(crate) fn ms_to_ns(ms: f32) -> u64 {
    (f64::from(ms) * 1e6).max(0.0).round() as u64
}

/// One generation of mark slots.
#[derive(Debug)]
pub(crate) struct MarkSlots {
    timeline: &'static str,
    capacity: usize,
    /// Slots `[0, next)` were marked in this generation.
    next: usize,
    /// Slots `[0, ready)` were marked before the last sync.
    ready: usize,
    generation: u32,
}

impl MarkSlots {
    pub(crate) fn new(timeline: &'static str, capacity: usize) -> Self {
        MarkSlots {
            timeline,
            capacity,
            next: 0,
            ready: 0,
            generation: 0,
        }
    }

    /// The slot the next mark takes, if any is left.
    #[inline]
    pub(crate) fn free(&self) -> Option<usize> {
        (self.next < self.capacity).then_some(self.next)
    }

    /// Take the slot [`Self::free`] gave; returns its mark.
    #[inline]
    pub(crate) fn take(&mut self) -> Mark {
        let index = self.next;
        self.next += 1;
        (u64::from(self.generation) << 32) | index as u64
    }

    /// Slots marked in this generation.
    #[allow(dead_code)] // used by the hip and cuda features
    pub(crate) fn used(&self) -> usize {
        self.next
    }

    /// Every mark made so far precedes the sync that just returned.
    pub(crate) fn synced(&mut self) {
        self.ready = self.next;
    }

    /// Start a new generation: earlier marks become invalid.
    pub(crate) fn recycle(&mut self) {
        self.next = 0;
        self.ready = 0;
        self.generation = self.generation.wrapping_add(1);
    }

    /// The slot of `mark`, made before the last sync. A mark the runtime refused
    /// ([`FAILED_MARK`]) reports `failed()`; an exhausted pool or an older generation
    /// [`Error::InvalidMark`]; a mark made after the last sync an [`Error::Timeline`].
    pub(crate) fn slot(&self, mark: Mark, failed: impl FnOnce() -> Error) -> Result<usize> {
        if mark == FAILED_MARK {
            return Err(failed());
        }
        let generation = (mark >> 32) as u32;
        let index = (mark & 0xFFFF_FFFF) as usize;
        if mark == INVALID_MARK || generation != self.generation || index >= self.next {
            return Err(invalid_mark(self.timeline));
        }
        if index >= self.ready {
            return Err(Error::Timeline(format!(
                "{}: mark {index} was made after the last sync: resolve only after a sync",
                self.timeline
            )));
        }
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_sync_and_bad_marks() {
        let mut s = MarkSlots::new("test", 2);
        let a = s.take();
        assert!(matches!(
            s.slot(a, || Error::Merge("x".into())),
            Err(Error::Timeline(_))
        ));
        s.synced();
        assert_eq!(s.slot(a, || Error::Merge("x".into())).unwrap(), 0);
        let _b = s.take();
        assert_eq!(s.free(), None, "two slots");
        assert!(matches!(
            s.slot(FAILED_MARK, || Error::Merge("failed".into())),
            Err(Error::Merge(_))
        ));
        assert!(matches!(
            s.slot(INVALID_MARK, || Error::Merge("x".into())),
            Err(Error::InvalidMark { timeline: "test" })
        ));
        s.recycle();
        assert!(matches!(
            s.slot(a, || Error::Merge("x".into())),
            Err(Error::InvalidMark { .. })
        ));
        assert_eq!(s.free(), Some(0));
        assert!(slots_for("test", 0).is_err());
        assert_eq!(slots_for("test", 8).unwrap(), 18);
        assert_eq!(ms_to_ns(1.5), 1_500_000);
    }
}
