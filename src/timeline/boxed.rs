//! [`BoxedTimeline`]: any [`Timeline`] behind one concrete type, for the front doors that keep a
//! profiler per thread ([`crate::front::thread`], `BrickLayer`) and so cannot be generic over the
//! engine's timeline. [`Timeline`] is dyn-compatible, so this is a `Box<dyn Timeline>` that
//! forwards the core and the capability getters; a capability trait needs no edit here.
//!
//! Cost: one indirect call per mark, on device timelines only, where a mark is already a
//! runtime call. The CPU path of the front doors never goes through this type.

use super::{
    Calibrated, Capture, DeviceRecords, GraphReplay, LaggedPolling, Mark, Timeline, TimelineKind,
};
use crate::{timeline::HostClock, Result};

/// A device timeline (OpenCL, HIP, CUDA, the simulated device, or your own) behind one type,
/// so a thread-local profiler can mark it (spec/front-doors.md "Device timelines"). Not `Send`:
/// build it on the thread that marks it (device timelines such as [`crate::timeline::SimTimeline`] and
/// `OpenClTimeline` are not `Send` either).
///
/// Always treated as a device timeline (host dispatch and device time are read separately:
/// [`Timeline::host_is_device`] is false), even around a [`crate::CpuTimeline`]: the
/// thread-local front door keeps the host clock on its own, statically dispatched path.
///
/// ```
/// use brickprof::{timeline::{BoxedTimeline, SimDevice, TimelineKind}, Timeline};
/// let device = SimDevice::new(0);
/// let timeline = BoxedTimeline::new(device.timeline(64));
/// assert_eq!(timeline.kind(), TimelineKind::Sim);
/// ```
pub struct BoxedTimeline(Box<dyn Timeline>);

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

impl Timeline for BoxedTimeline {
    fn kind(&self) -> TimelineKind {
        self.0.kind()
    }
    fn resolution_ns(&self) -> u64 {
        self.0.resolution_ns()
    }
    fn mark_cost_ns(&self) -> Option<u64> {
        self.0.mark_cost_ns()
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
    fn pass_ended(&mut self) {
        self.0.pass_ended();
    }
    fn polling(&mut self) -> Option<&mut dyn LaggedPolling> {
        self.0.polling()
    }
    fn calibrated(&self) -> Option<&dyn Calibrated> {
        self.0.calibrated()
    }
    fn device_records(&self) -> Option<&dyn DeviceRecords> {
        self.0.device_records()
    }
    fn calibrated_mut(&mut self) -> Option<&mut dyn Calibrated> {
        self.0.calibrated_mut()
    }
    fn capture(&self) -> Option<&dyn Capture> {
        self.0.capture()
    }
    fn graphs(&mut self) -> Option<&mut dyn GraphReplay> {
        self.0.graphs()
    }
    fn device_records_mut(&mut self) -> Option<&mut dyn DeviceRecords> {
        self.0.device_records_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::BoxedTimeline;
    use crate::{
        timeline::{SimDevice, TimelineKind},
        Timeline,
    };

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
        // The capabilities reach the boxed timeline (not the defaults, which would make
        // Lagged mode sync): a mark the simulated stream has not reached answers false.
        let c = t.mark(clock.ticks());
        device.launch(2_000);
        let d = t.mark(clock.ticks());
        let syncs = device.counts().syncs;
        let polling = t.polling().expect("the simulated device polls");
        assert!(polling.reached(c).unwrap());
        assert!(
            !polling.reached(d).unwrap(),
            "the kernel before d is still running"
        );
        assert_eq!(device.counts().syncs, syncs, "reached never syncs");
        let left = t.polling().unwrap().marks_left();
        assert_eq!(left, device.timeline(8).polling().unwrap().marks_left() - 2);
        assert!(t.calibrated().is_some() && t.calibrated_mut().is_some());
        // The simulated device can be captured and times replays (spec/sync-modes.md "Graph
        // capture"): both capabilities reach through the box.
        assert!(t.capture().is_some_and(|c| !c.captured()));
        assert!(t.graphs().is_some());
        assert!(!t.host_is_device());
    }
}
