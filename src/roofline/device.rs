//! Peaks of an OpenCL, CUDA or HIP device from what the device reports about itself
//! ([`DeviceReport`]: compute units, clock, caches), or a preset where it reports too little,
//! labelled either way (spec/work-accounting.md "Device peaks"). The caller queries the driver
//! (the OpenCL demo does, with `clGetDeviceInfo`); this file only does the arithmetic, so it
//! builds without any driver.

use super::{CacheRoof, DevicePeaks, MemLevel, PeakSource};
use crate::Result;

/// What a device says about itself. Fields it does not report stay `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceReport {
    /// The device's name.
    pub name: String,
    /// Compute units (OpenCL `CL_DEVICE_MAX_COMPUTE_UNITS`, CUDA SMs, HIP CUs).
    pub compute_units: Option<u32>,
    /// Maximum clock in MHz (OpenCL `CL_DEVICE_MAX_CLOCK_FREQUENCY`).
    pub clock_mhz: Option<u32>,
    /// f32 FLOPs per compute unit per cycle (FMA lanes × 2), from the architecture: a CUDA SM
    /// does 128 to 384 by compute capability (256 from Hopper on), a CDNA2/3 CU 256. OpenCL does
    /// not report it: its preferred float vector width × 2 is a lower guess.
    pub flops_per_cu_cycle: Option<u32>,
    /// Memory bandwidth in GB/s, where the driver reports it (CUDA, HIP: 2 × memory clock ×
    /// bus width / 8, double data rate).
    pub mem_gbps: Option<f64>,
    /// Last cache in front of memory (bytes) and its bandwidth, when known. Without it, peaks
    /// whose memory figure comes from the fallback take the fallback's cache levels too.
    pub cache: Option<(u64, f64)>,
    /// Size in bytes of the last cache in front of memory where the driver reports it without
    /// its bandwidth (CUDA and HIP report the L2's size only). No roof is made of it: a roof
    /// needs a bandwidth; measure one and set [`DeviceReport::cache`].
    pub cache_bytes: Option<u64>,
}

/// GB/s of a double-data-rate memory (each pin moves two bits a clock) whose clock is
/// `memory_clock_khz` and bus `bus_bits` wide: 2 × clock × bus width / 8, the formula CUDA's
/// and HIP's reports use (spec/work-accounting.md "Device peaks").
#[cfg(any(feature = "cuda", feature = "hip", test))]
pub(crate) fn ddr_gbps(memory_clock_khz: u32, bus_bits: u32) -> f64 {
    2.0 * f64::from(memory_clock_khz) * 1e3 * f64::from(bus_bits) / 8.0 / 1e9
}

impl DeviceReport {
    /// Peaks from the report: compute = compute units × clock × FLOPs per unit per cycle,
    /// labelled "device-reported". Whatever the report lacks comes from `fallback` (a preset
    /// or measured peaks), and the name says which figures are whose. `None` when the report
    /// lacks the compute figures and there is no fallback.
    ///
    /// ```
    /// use brickprof::roofline::device::DeviceReport;
    /// use brickprof::roofline::DevicePeaks;
    /// let r = DeviceReport {
    ///     name: "gpu".into(),
    ///     compute_units: Some(100),
    ///     clock_mhz: Some(2_000),
    ///     flops_per_cu_cycle: Some(256),
    ///     ..Default::default()
    /// };
    /// let p = r.peaks(Some(&DevicePeaks::parse("h100-sxm").unwrap())).unwrap().unwrap();
    /// assert_eq!(p.gflops(), 51_200.0); // 100 x 2 GHz x 256
    /// assert_eq!(p.gbps(), 3_350.0);    // the preset's, and the name says so
    /// assert!(p.name().contains("memory from h100-sxm"));
    /// ```
    pub fn peaks(&self, fallback: Option<&DevicePeaks>) -> Result<Option<DevicePeaks>> {
        let compute = match (self.compute_units, self.clock_mhz, self.flops_per_cu_cycle) {
            (Some(cu), Some(mhz), Some(f)) if cu > 0 && mhz > 0 && f > 0 => {
                Some(f64::from(cu) * f64::from(mhz) * 1e-3 * f64::from(f))
            }
            _ => None,
        };
        let (gflops, gflops_from) = match (compute, fallback) {
            (Some(g), _) => (g, "reported".to_string()),
            (None, Some(p)) => (p.gflops(), format!("from {}", p.name())),
            (None, None) => return Ok(None),
        };
        let (gbps, gbps_from) = match (self.mem_gbps, fallback) {
            (Some(g), _) => (g, "reported".to_string()),
            (None, Some(p)) => (p.gbps(), format!("from {}", p.name())),
            (None, None) => return Ok(None),
        };
        let name = format!(
            "{}: compute {gflops_from}, memory {gbps_from}",
            crate::base::printable::printable(&self.name)
        );
        let source = if compute.is_some() && self.mem_gbps.is_some() {
            PeakSource::Reported
        } else {
            fallback
                .and_then(DevicePeaks::source)
                .unwrap_or(PeakSource::Reported)
        };
        let mut p = DevicePeaks::new(name, gflops, gbps)?.with_source(source);
        match (self.cache, fallback) {
            (Some((bytes, cache_gbps)), _) => {
                p = p.with_levels(vec![CacheRoof::new(MemLevel::L2, bytes, cache_gbps)?])?;
            }
            // Memory from the fallback: its cache levels too.
            (None, Some(f)) if self.mem_gbps.is_none() => {
                p = p.with_levels(f.levels().to_vec())?;
            }
            _ => {}
        }
        Ok(Some(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Was the doc example of `ddr_gbps` (crate-internal since 0.4): an H100 SXM reports a
    /// 2619 MHz memory clock and a 5120-bit bus.
    #[test]
    fn ddr_bandwidth_of_an_h100() {
        assert_eq!(ddr_gbps(2_619_000, 5_120), 3_352.32);
    }

    #[test]
    fn a_report_without_compute_figures_needs_a_fallback() {
        // spec/work-accounting.md "Device peaks"
        let r = DeviceReport {
            name: "cl".into(),
            compute_units: Some(2),
            ..Default::default()
        };
        assert_eq!(r.peaks(None).unwrap(), None);
        let preset = DevicePeaks::preset("mi300x").unwrap();
        let p = r.peaks(Some(&preset)).unwrap().unwrap();
        assert_eq!(
            (p.gflops(), p.source()),
            (preset.gflops(), Some(PeakSource::Preset))
        );
        let full = DeviceReport {
            compute_units: Some(2),
            clock_mhz: Some(3_000),
            flops_per_cu_cycle: Some(32),
            mem_gbps: Some(20.0),
            ..r
        };
        let p = full.peaks(None).unwrap().unwrap();
        assert_eq!((p.gflops(), p.gbps()), (192.0, 20.0));
        assert_eq!(p.source(), Some(PeakSource::Reported));
    }
}
