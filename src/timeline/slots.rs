//! The bookkeeping every device timeline shares: a ring of mark slots. Marks are numbered in
//! the order they are made; a mark's slot is its number modulo the ring's size. Marks are
//! released in the order they were made (up to a mark, or all of them at a recycle), which is
//! the order the profiler resolves them in, so a ring is all it takes for several passes to
//! stay in flight (spec/sync-modes.md "Lagged"). The slots' resources (events, markers) stay
//! with each timeline.

use super::{invalid_mark, Mark, FAILED_MARK, INVALID_MARK};
use crate::base::limits::MAX_PASSES_IN_FLIGHT;
use crate::{Error, Result};

/// Slots for `2 * pending_capacity + 2 + MAX_PASSES_IN_FLIGHT` marks: every pending
/// measurement's two marks, room for one open brick across a flush, and one end-of-pass mark
/// per pass in flight in Lagged mode. A pending capacity of 0 is an error.
pub(crate) fn slots_for(_timeline: &'static str, pending_capacity: usize) -> Result<usize> {
    if pending_capacity == 0 {
        return Err(Error::OverLimit {
            limit: crate::base::limits::Limit::PendingCapacity,
            requested: 0,
        });
    }
    Ok(pending_capacity
        .saturating_mul(2)
        .saturating_add(2 + MAX_PASSES_IN_FLIGHT)
        .min(u32::MAX as usize - 2))
}

/// Milliseconds as the GPU runtimes report them (f32) to ns.
#[allow(dead_code)] // used by the hip and cuda features
pub(crate) fn ms_to_ns(ms: f32) -> u64 {
    (f64::from(ms) * 1e6).max(0.0).round() as u64
}

/// A ring of mark slots. Marks `[released, next)` are live; marks `[released, ready)` are
/// known complete (a sync returned, or a query found a later mark reached).
#[derive(Debug)]
pub(crate) struct MarkSlots {
    timeline: &'static str,
    capacity: usize,
    /// The number of the next mark.
    next: u64,
    /// Marks below this number were released.
    released: u64,
    /// Marks below this number are complete.
    ready: u64,
}

impl MarkSlots {
    pub(crate) fn new(timeline: &'static str, capacity: usize) -> Self {
        MarkSlots {
            timeline,
            capacity,
            next: 0,
            released: 0,
            ready: 0,
        }
    }

    /// The slot the next mark takes, if any is free.
    #[inline]
    pub(crate) fn free(&self) -> Option<usize> {
        ((self.next - self.released) < self.capacity as u64)
            .then_some((self.next % self.capacity as u64) as usize)
    }

    /// Take the slot [`Self::free`] gave; returns its mark.
    #[inline]
    pub(crate) fn take(&mut self) -> Mark {
        let mark = self.next;
        self.next += 1;
        mark
    }

    /// Slots free for more marks.
    pub(crate) fn left(&self) -> usize {
        self.capacity - (self.next - self.released) as usize
    }

    /// Live marks (made and not released).
    #[allow(dead_code)] // used by the hip and cuda features
    pub(crate) fn used(&self) -> usize {
        (self.next - self.released) as usize
    }

    /// Every mark made so far precedes the sync that just returned.
    pub(crate) fn synced(&mut self) {
        self.ready = self.next;
    }

    /// `mark` was found complete: so is every mark made before it (one in-order stream).
    pub(crate) fn reached(&mut self, mark: Mark) {
        if mark < self.next {
            self.ready = self.ready.max(mark + 1);
        }
    }

    /// Release `mark` and every mark made before it: their slots may be reused.
    pub(crate) fn release_through(&mut self, mark: Mark) {
        if mark < self.next {
            self.released = self.released.max(mark + 1);
            self.ready = self.ready.max(self.released);
        }
    }

    /// The live marks `[from, to)`, as slot ranges (at most two, the ring wrapping): for
    /// timelines that free a resource per slot.
    #[allow(dead_code)] // used by the opencl feature
    pub(crate) fn live(&self) -> (u64, u64) {
        (self.released, self.next)
    }

    /// Release every mark: earlier marks become invalid.
    pub(crate) fn recycle(&mut self) {
        self.released = self.next;
        self.ready = self.next;
    }

    /// The slot of `mark`, known complete. A mark the runtime refused ([`FAILED_MARK`])
    /// reports `failed()`; an exhausted pool or a released mark [`Error::InvalidMark`]; a mark
    /// not known complete an [`Error::Timeline`].
    pub(crate) fn slot(&self, mark: Mark, failed: impl FnOnce() -> Error) -> Result<usize> {
        if mark == FAILED_MARK {
            return Err(failed());
        }
        if mark == INVALID_MARK || mark < self.released || mark >= self.next {
            return Err(invalid_mark(self.timeline));
        }
        if mark >= self.ready {
            return Err(Error::Timeline(format!(
                "{}: mark {mark} is not known complete: resolve only after a sync or a query \
                 that found it reached",
                self.timeline
            )));
        }
        Ok((mark % self.capacity as u64) as usize)
    }

    /// The slot of a live mark, complete or not (to query it).
    pub(crate) fn live_slot(&self, mark: Mark) -> Result<usize> {
        if mark == INVALID_MARK || mark == FAILED_MARK || mark < self.released || mark >= self.next
        {
            return Err(invalid_mark(self.timeline));
        }
        Ok((mark % self.capacity as u64) as usize)
    }

    /// Whether `mark` is known complete.
    pub(crate) fn is_ready(&self, mark: Mark) -> bool {
        mark < self.ready && mark >= self.released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_of_marks_synced_reached_released() {
        let mut s = MarkSlots::new("test", 2);
        let a = s.take();
        assert!(matches!(
            s.slot(a, || Error::Merge("x".into())),
            Err(Error::Timeline(_))
        ));
        s.synced();
        assert_eq!(s.slot(a, || Error::Merge("x".into())).unwrap(), 0);
        let b = s.take();
        assert_eq!(s.free(), None, "two slots");
        assert_eq!(s.left(), 0);
        assert!(matches!(
            s.slot(FAILED_MARK, || Error::Merge("failed".into())),
            Err(Error::Merge(_))
        ));
        assert!(matches!(
            s.slot(INVALID_MARK, || Error::Merge("x".into())),
            Err(Error::InvalidMark { timeline: "test" })
        ));
        // Releasing the first mark frees its slot; the second stays live.
        s.release_through(a);
        assert_eq!(s.free(), Some(0));
        assert!(matches!(
            s.slot(a, || Error::Merge("x".into())),
            Err(Error::InvalidMark { .. })
        ));
        assert!(!s.is_ready(b));
        s.reached(b);
        assert_eq!(s.slot(b, || Error::Merge("x".into())).unwrap(), 1);
        let c = s.take();
        assert_eq!(s.live_slot(c).unwrap(), 0, "the ring wraps");
        s.recycle();
        assert!(matches!(
            s.slot(c, || Error::Merge("x".into())),
            Err(Error::InvalidMark { .. })
        ));
        assert_eq!(s.left(), 2);
        assert!(slots_for("test", 0).is_err());
        assert_eq!(slots_for("test", 8).unwrap(), 18 + MAX_PASSES_IN_FLIGHT);
        assert_eq!(ms_to_ns(1.5), 1_500_000);
    }
}
