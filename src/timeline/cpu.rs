//! The CPU timeline: marks are host clock ticks; sync is a no-op.

use super::{LaggedPolling, Mark, Timeline, TimelineKind};
use crate::{timeline::HostClock, Result};

/// Host clock timeline (the default). A mark is the reading the profiler already took, so the
/// hot path reads the clock once per mark.
///
/// ```
/// use brickprof::{CpuTimeline, timeline::HostClock, Timeline};
/// let (clock, mock) = HostClock::mock();
/// let mut t = CpuTimeline::with_clock(clock.clone());
/// let a = t.mark(clock.ticks());
/// mock.increment(1_500);
/// let b = t.mark(clock.ticks());
/// t.sync().unwrap();
/// assert_eq!(t.resolve_ns(a, b).unwrap(), 1_500);
/// ```
#[derive(Debug, Clone)]
pub struct CpuTimeline {
    clock: HostClock,
    origin: u64,
}

/// A CPU timeline on the process's host clock.
impl Default for CpuTimeline {
    fn default() -> Self {
        Self::with_clock(HostClock::new())
    }
}

impl CpuTimeline {
    /// A CPU timeline on the given clock (a mock clock in tests); [`CpuTimeline::default`] is
    /// the process's host clock.
    pub fn with_clock(clock: HostClock) -> Self {
        let origin = clock.ticks();
        CpuTimeline { clock, origin }
    }
}

impl Timeline for CpuTimeline {
    fn kind(&self) -> TimelineKind {
        TimelineKind::Cpu
    }

    /// Marks are host ticks: a constant, so a profiler generic over this timeline folds it.
    #[inline(always)]
    fn host_is_device(&self) -> bool {
        true
    }

    fn host_clock(&self) -> HostClock {
        self.clock.clone()
    }

    #[inline(always)]
    fn mark(&mut self, host_ticks: u64) -> Mark {
        host_ticks
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    #[inline]
    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        Ok(self.clock.ticks_to_ns(start, end))
    }

    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        Ok(self.clock.ticks_to_ns(self.origin, mark))
    }

    capabilities!(polling);
}

/// The Lagged mode never waits on the CPU: a host reading is complete when it is taken, and
/// marks hold no resource.
impl LaggedPolling for CpuTimeline {
    #[inline]
    fn reached(&mut self, _mark: Mark) -> Result<bool> {
        Ok(true)
    }

    fn release_through(&mut self, _mark: Mark) {}

    fn marks_left(&self) -> usize {
        usize::MAX
    }
}
