//! [`BoxedTimeline`]: any [`Timeline`] behind one concrete type, for the front doors that keep a
//! profiler per thread ([`crate::thread`], `BrickLayer`) and so cannot be generic over the
//! engine's timeline. [`Timeline`] itself is not dyn-compatible (it has an associated
//! constant), so a private mirror trait carries the calls; this file is the only place that
//! knows both, and a method added to [`Timeline`] is forwarded here.
//!
//! Cost: one indirect call per mark, on device timelines only, where a mark is already a
//! runtime call. The CPU path of the front doors never goes through this type.

use super::{GraphReplay, Mark, Timeline, TimelineKind};
use crate::calibration::Calibration;
use crate::{HostClock, Result};

/// The dyn-compatible mirror of [`Timeline`] (every method but the constant).
trait DynTimeline {
    fn kind(&self) -> TimelineKind;
    fn resolution_ns(&self) -> u64;
    fn host_clock(&self) -> HostClock;
    fn mark(&mut self, host_ticks: u64) -> Mark;
    fn sync(&mut self) -> Result<()>;
    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64>;
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64>;
    fn recycle(&mut self);
    fn captured(&self) -> bool;
    fn pass_ended(&mut self);
    fn reached(&mut self, mark: Mark) -> Result<bool>;
    fn release_through(&mut self, mark: Mark);
    fn marks_left(&self) -> usize;
    fn calibration(&self) -> Option<Calibration>;
    fn anchor(&mut self) -> Result<()>;
    fn origin_ticks(&self) -> Option<u64>;
    fn graphs(&mut self) -> Option<&mut dyn GraphReplay>;
}

impl<T: Timeline> DynTimeline for T {
    fn kind(&self) -> TimelineKind {
        Timeline::kind(self)
    }
    fn resolution_ns(&self) -> u64 {
        Timeline::resolution_ns(self)
    }
    fn host_clock(&self) -> HostClock {
        Timeline::host_clock(self)
    }
    #[inline]
    fn mark(&mut self, host_ticks: u64) -> Mark {
        Timeline::mark(self, host_ticks)
    }
    fn sync(&mut self) -> Result<()> {
        Timeline::sync(self)
    }
    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        Timeline::resolve_ns(self, start, end)
    }
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        Timeline::timestamp_ns(self, mark)
    }
    fn recycle(&mut self) {
        Timeline::recycle(self)
    }
    fn captured(&self) -> bool {
        Timeline::captured(self)
    }
    fn pass_ended(&mut self) {
        Timeline::pass_ended(self)
    }
    fn reached(&mut self, mark: Mark) -> Result<bool> {
        Timeline::reached(self, mark)
    }
    fn release_through(&mut self, mark: Mark) {
        Timeline::release_through(self, mark)
    }
    fn marks_left(&self) -> usize {
        Timeline::marks_left(self)
    }
    fn calibration(&self) -> Option<Calibration> {
        Timeline::calibration(self)
    }
    fn anchor(&mut self) -> Result<()> {
        Timeline::anchor(self)
    }
    fn origin_ticks(&self) -> Option<u64> {
        Timeline::origin_ticks(self)
    }
    fn graphs(&mut self) -> Option<&mut dyn GraphReplay> {
        Timeline::graphs(self)
    }
}

/// A device timeline (OpenCL, HIP, CUDA, the simulated device, or your own) behind one type,
/// so a thread-local profiler can mark it (spec/front-doors.md "Device timelines"). Not `Send`:
/// build it on the thread that marks it (device timelines such as [`crate::SimTimeline`] and
/// `OpenClTimeline` are not `Send` either).
///
/// Always treated as a device timeline (host dispatch and device time are read separately),
/// even around a [`crate::CpuTimeline`]: the thread-local front door keeps the host clock on
/// its own, statically dispatched path.
///
/// ```
/// use brickprof::{BoxedTimeline, SimDevice, Timeline, TimelineKind};
/// let device = SimDevice::new(0);
/// let timeline = BoxedTimeline::new(device.timeline(64));
/// assert_eq!(timeline.kind(), TimelineKind::Sim);
/// ```
pub struct BoxedTimeline(Box<dyn DynTimeline>);

impl BoxedTimeline {
    /// Box `timeline`.
    pub fn new<T: Timeline + 'static>(timeline: T) -> Self {
        BoxedTimeline(Box::new(timeline))
    }
}

impl std::fmt::Debug for BoxedTimeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BoxedTimeline")
            .field(&self.0.kind())
            .finish()
    }
}

// A boxed timeline is a device timeline: host and device are read apart.
const _: () = assert!(!<BoxedTimeline as Timeline>::HOST_IS_DEVICE);

impl Timeline for BoxedTimeline {
    fn kind(&self) -> TimelineKind {
        self.0.kind()
    }

    fn resolution_ns(&self) -> u64 {
        self.0.resolution_ns()
    }

    fn host_clock(&self) -> HostClock {
        self.0.host_clock()
    }

    #[inline]
    fn mark(&mut self, host_ticks: u64) -> Mark {
        self.0.mark(host_ticks)
    }

    fn sync(&mut self) -> Result<()> {
        self.0.sync()
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        self.0.resolve_ns(start, end)
    }

    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        self.0.timestamp_ns(mark)
    }

    fn recycle(&mut self) {
        self.0.recycle();
    }

    fn captured(&self) -> bool {
        self.0.captured()
    }

    fn pass_ended(&mut self) {
        self.0.pass_ended();
    }

    fn reached(&mut self, mark: Mark) -> Result<bool> {
        self.0.reached(mark)
    }

    fn release_through(&mut self, mark: Mark) {
        self.0.release_through(mark);
    }

    fn marks_left(&self) -> usize {
        self.0.marks_left()
    }

    fn calibration(&self) -> Option<Calibration> {
        self.0.calibration()
    }

    fn anchor(&mut self) -> Result<()> {
        self.0.anchor()
    }

    fn origin_ticks(&self) -> Option<u64> {
        self.0.origin_ticks()
    }
    fn graphs(&mut self) -> Option<&mut dyn GraphReplay> {
        self.0.graphs()
    }
}

#[cfg(test)]
mod tests {
    use super::BoxedTimeline;
    use crate::{SimDevice, Timeline, TimelineKind};

    /// spec/front-doors.md "Device timelines": every call reaches the boxed timeline.
    #[test]
    fn forwards_every_call_to_the_boxed_timeline() {
        let device = SimDevice::new(0);
        let mut t = BoxedTimeline::new(device.timeline(8));
        assert_eq!(t.kind(), TimelineKind::Sim);
        let clock = t.host_clock();
        let a = t.mark(clock.ticks());
        device.launch(1_500);
        let b = t.mark(clock.ticks());
        assert!(t.resolve_ns(a, b).is_err(), "not synchronized yet");
        t.sync().unwrap();
        assert_eq!(t.resolve_ns(a, b).unwrap(), 1_500);
        assert_eq!(
            t.timestamp_ns(b).unwrap() - t.timestamp_ns(a).unwrap(),
            1_500
        );
        t.recycle();
        assert!(t.resolve_ns(a, b).is_err(), "recycled marks are invalid");
        // The Lagged mode's calls reach the boxed timeline too (not the trait's defaults,
        // which would sync): a mark the simulated stream has not reached answers false.
        let c = t.mark(clock.ticks());
        device.launch(2_000);
        let d = t.mark(clock.ticks());
        let syncs = device.syncs();
        assert!(t.reached(c).unwrap());
        assert!(
            !t.reached(d).unwrap(),
            "the kernel before d is still running"
        );
        assert_eq!(device.syncs(), syncs, "reached never syncs");
        assert_eq!(
            t.marks_left(),
            Timeline::marks_left(&device.timeline(8)) - 2
        );
        assert!(!t.captured());
    }
}
