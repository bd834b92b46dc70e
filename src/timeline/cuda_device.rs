//! What a CUDA device reports about itself, as a [`DeviceReport`] (cargo feature `cuda`;
//! spec/work-accounting.md "Device peaks"): the driver's attributes through `cudarc`
//! (`cuDeviceGetAttribute`, `cuDeviceGetName`), turned into compute units, clock, FLOPs per SM
//! per cycle and memory bandwidth. Queried once, off the hot path.

use cudarc::driver::{sys, CudaContext, DriverError};

use super::cuda::{cuda_error, CudaTimeline};
use crate::roofline::device::{ddr_gbps, DeviceReport};
use crate::Result;

use sys::CUdevice_attribute as Attr;

/// f32 FLOPs per SM per cycle (FP32 FMA lanes × 2) for compute capability `major.minor`:
/// Kepler (3.x) 384; Maxwell (5.x) 256; Pascal 6.0 128, 6.1/6.2 256; Volta and Turing (7.x)
/// 128; Ampere 8.0 128, 8.6/8.7/8.9 256; Hopper, Blackwell and later (9.x and up) 256.
/// `None` for an architecture before Kepler.
pub(crate) fn cuda_flops_per_sm_cycle(major: u32, minor: u32) -> Option<u32> {
    let lanes = match (major, minor) {
        (3, _) => 192,
        (5, _) => 128,
        (6, 0) | (7, _) | (8, 0) => 64,
        (6, _) | (8, _) => 128,
        (m, _) if m >= 9 => 128,
        _ => return None,
    };
    Some(2 * lanes)
}

/// What device `ctx` reports (spec/work-accounting.md "Device peaks"):
/// - compute units: `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`;
/// - clock: `CU_DEVICE_ATTRIBUTE_CLOCK_RATE` (kHz, the maximum) / 1000;
/// - FLOPs per SM per cycle: from the compute capability;
/// - memory GB/s: 2 × `CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE` (kHz) ×
///   `CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH` (bits) / 8, double data rate;
/// - the L2's size: `CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE`, in [`DeviceReport::cache_bytes`]
///   (the driver does not report its bandwidth).
///
/// An attribute the driver answers with 0 or does not know (`CUDA_ERROR_INVALID_VALUE`) stays
/// `None`, so [`DeviceReport::peaks`] takes that figure from its fallback; any other driver
/// failure is [`crate::Error::Cuda`].
pub(crate) fn cuda_device_report(ctx: &CudaContext) -> Result<DeviceReport> {
    let attr = |a: Attr| -> Result<Option<u32>> {
        match ctx.attribute(a) {
            Ok(v) if v > 0 => Ok(u32::try_from(v).ok()),
            Ok(_) | Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE)) => Ok(None),
            Err(e) => Err(cuda_error("cuDeviceGetAttribute", e, "")),
        }
    };
    let name = ctx
        .name()
        .map_err(|e| cuda_error("cuDeviceGetName", e, ""))?;
    let major = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?.unwrap_or(0);
    let mem_khz = attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?;
    let bus_bits = attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?;
    Ok(DeviceReport {
        name,
        compute_units: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        clock_mhz: attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?
            .map(|khz| khz / 1000)
            .filter(|&mhz| mhz > 0),
        flops_per_cu_cycle: major.and_then(|m| cuda_flops_per_sm_cycle(m, minor)),
        mem_gbps: mem_khz.zip(bus_bits).map(|(khz, bits)| ddr_gbps(khz, bits)),
        cache: None,
        cache_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.map(u64::from),
    })
}

impl CudaTimeline {
    /// What the device of the stream marked reports about itself (see `cuda_device_report`);
    /// `report.peaks(fallback)` makes the roofline's peaks from it, labelled device-reported.
    pub fn device_report(&self) -> Result<DeviceReport> {
        cuda_device_report(self.stream().context())
    }
}
