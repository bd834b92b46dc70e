//! A brick's measured roofline (spec/imports.md "Measured roofline"): its hardware counters
//! ([`BrickCounters`]: DRAM bytes and FLOPs over the calls' time) placed under a device's
//! peaks by the one roofline there is, `Roofline::classify`.

use crate::roofline::{DevicePeaks, Roofline};
use crate::stats::brick_counters::BrickCounters;
use crate::stats::BrickStats;
use crate::Work;

impl BrickCounters {
    /// Where the counted work sits under `peaks`: bound, the roof at the measured intensity,
    /// the achieved rate's percentage of it (the roofline's one classifier, crate-internal,
    /// over the counted FLOPs and DRAM bytes in the calls' time). The counted bytes are DRAM's,
    /// so the roof is the DRAM roof whatever cache levels `peaks` has. `None` when the file
    /// counted neither FLOPs nor bytes, or no time.
    ///
    /// ```
    /// use brickprof::import::BrickCounters;
    /// use brickprof::profile::RowKey;
    /// use brickprof::roofline::{Bound, DevicePeaks};
    /// let c = BrickCounters {
    ///     brick: "LmHead".into(), row: RowKey::Model,
    ///     calls: 1, kernels: 1, time_ns: 1_000,
    ///     dram_bytes: Some(10_000), flops: Some(20_000), // 2 FLOP/B, 20 GFLOP/s
    /// };
    /// let r = c.roofline(&DevicePeaks::new("toy", 1_000.0, 100.0).unwrap()).unwrap();
    /// assert_eq!((r.bound, r.roof, r.roof_pct), (Bound::Memory, 200.0, 10.0));
    /// ```
    pub fn roofline(&self, peaks: &DevicePeaks) -> Option<Roofline> {
        let work = Work {
            elements: 0,
            flops: self.flops.unwrap_or(0),
            bytes: self.dram_bytes.unwrap_or(0),
        };
        if (work.flops == 0 && work.bytes == 0) || self.time_ns == 0 {
            return None;
        }
        // One measurement of the calls' whole time and work: the rates are the same as over
        // each call, and with DRAM the only memory roof the bytes a call do not pick a level.
        let mut stats = BrickStats::default();
        stats.record_nested(self.time_ns, self.time_ns, 0, work);
        let dram = DevicePeaks::new(peaks.name(), peaks.gflops(), peaks.gbps()).ok()?;
        Some(Roofline::classify(&stats, &dram))
    }
}
