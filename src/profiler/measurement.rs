//! [`Measurement`]: what the resolve stage yields for one brick, as plain data, and [`Sink`]:
//! what consumes it (the books and the trace). Resolve never sees who consumes; the consumers
//! never see the pending buffer or the timeline.

use crate::model::grid::CellIndex;
use crate::Work;

/// One resolved brick.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measurement {
    /// Its (slot, row) statistics cell.
    pub(crate) cell: CellIndex,
    /// The work it declared at its stop.
    pub(crate) work: Work,
    /// Its own stop minus its own start, on its timeline.
    pub(crate) inclusive_ns: u64,
    /// Inclusive minus the overlap of the bricks nested directly inside it.
    pub(crate) self_ns: u64,
    /// Its host dispatch time (host clock, start to stop).
    pub(crate) host_ns: u64,
    /// Its start on the host clock, in ticks.
    pub(crate) host_start: u64,
    /// Its start on the device timeline, in ns, when the sink asked for it and the timeline
    /// is a device's.
    pub(crate) device_at: Option<u64>,
    /// Its end on the device timeline, in ns, likewise: the trace maps both ends, so slices
    /// of one stream stay in order whatever the calibration's drift.
    pub(crate) device_end_at: Option<u64>,
    /// It launched nothing on the device (a timeline that reads the device's records said so,
    /// [`crate::timeline::DeviceRecords`]): its 0 ns is host-only, flagged in the profile.
    pub(crate) host_only: bool,
}

/// Where resolved measurements go.
pub(crate) trait Sink {
    /// Whether measurements should carry their device start (costs one timeline query each).
    fn wants_device_at(&self) -> bool;
    /// A hint: `cell` will be recorded soon.
    fn prefetch(&self, cell: CellIndex);
    /// Record one measurement.
    fn record(&mut self, m: &Measurement);
    /// The measurement of cell `child` (`inclusive_ns`, `self_ns`) ran directly inside the
    /// brick of cell `parent` (the books count nesting edges). Called before [`Self::record`]
    /// of that measurement, off the loop's common path (a nested brick is the rarer one).
    fn nested(&mut self, parent: CellIndex, child: CellIndex, inclusive_ns: u64, self_ns: u64);
}
