//! What a HIP device reports about itself, as a [`DeviceReport`] (cargo feature `hip`;
//! spec/work-accounting.md "Device peaks"): `hipDeviceGetAttribute` and `hipDeviceGetName`,
//! turned into compute units, clock, FLOPs per CU per cycle and memory bandwidth. Queried once,
//! off the hot path. The functions are declared returning a raw `c_int`, as in `hip.rs`.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use super::hip::check;
use super::HipTimeline;
use crate::roofline::device::{ddr_gbps, DeviceReport};
use crate::Result;

#[allow(clashing_extern_declarations)]
unsafe extern "C" {
    fn hipDeviceGetAttribute(value: *mut c_int, attribute: c_int, device: c_int) -> c_int;
    fn hipDeviceGetName(name: *mut c_char, len: c_int, device: c_int) -> c_int;
}

// hipDeviceAttribute_t values (the CUDA-compatible range, the same since ROCm 5.0).
const ATTR_CLOCK_RATE: c_int = 5;
const ATTR_L2_CACHE_SIZE: c_int = 19;
const ATTR_MEMORY_BUS_WIDTH: c_int = 59;
const ATTR_MEMORY_CLOCK_RATE: c_int = 60;
const ATTR_MULTIPROCESSOR_COUNT: c_int = 63;

const HIP_ERROR_INVALID_VALUE: c_int = 1;

/// f32 FLOPs per CU per cycle taken for every HIP device: 256, a CDNA2/CDNA3 CU (MI200,
/// MI300: 64 lanes, packed FP32 FMA) or an RDNA3 CU (dual issue). HIP does not report the
/// architecture as a number that tells these from CDNA1, GCN or RDNA1/2 CUs (128), whose
/// compute peak this doubles.
pub(crate) const HIP_FLOPS_PER_CU_CYCLE: u32 = 256;

/// What HIP device `device` reports ([`HipTimeline::device_report`]).
fn hip_device_report(device: i32) -> Result<DeviceReport> {
    let attr = |attribute: c_int| -> Result<Option<u32>> {
        let mut v: c_int = 0;
        // SAFETY: v is a valid out-pointer; the runtime checks attribute and device.
        let code = unsafe { hipDeviceGetAttribute(&mut v, attribute, device) };
        if code == HIP_ERROR_INVALID_VALUE {
            return Ok(None);
        }
        check("hipDeviceGetAttribute", code)?;
        Ok(u32::try_from(v).ok().filter(|&v| v > 0))
    };
    let mut buf = [0 as c_char; 256];
    // SAFETY: buf is valid for its length, which is passed.
    check("hipDeviceGetName", unsafe {
        hipDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, device)
    })?;
    // The runtime writes at most len - 1 characters and the NUL; the last one makes sure.
    buf[buf.len() - 1] = 0;
    // SAFETY: buf is NUL-terminated (above) and lives through the call.
    let name = unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let mem_khz = attr(ATTR_MEMORY_CLOCK_RATE)?;
    let bus_bits = attr(ATTR_MEMORY_BUS_WIDTH)?;
    Ok(DeviceReport {
        name,
        compute_units: attr(ATTR_MULTIPROCESSOR_COUNT)?,
        clock_mhz: attr(ATTR_CLOCK_RATE)?
            .map(|khz| khz / 1000)
            .filter(|&mhz| mhz > 0),
        flops_per_cu_cycle: Some(HIP_FLOPS_PER_CU_CYCLE),
        mem_gbps: mem_khz.zip(bus_bits).map(|(khz, bits)| ddr_gbps(khz, bits)),
        cache: None,
        cache_bytes: attr(ATTR_L2_CACHE_SIZE)?.map(u64::from),
    })
}

impl HipTimeline {
    /// What the timeline's device reports about itself (spec/work-accounting.md "Device peaks"):
    /// the device current on the thread that made the timeline (`hipGetDevice`), where its
    /// stream lives. `report.peaks(fallback)` makes the roofline's peaks from it, labelled
    /// device-reported:
    /// - compute units: `hipDeviceAttributeMultiprocessorCount`;
    /// - clock: `hipDeviceAttributeClockRate` (kHz, the peak) / 1000;
    /// - FLOPs per CU per cycle: 256 (f32, a CDNA2/CDNA3 or RDNA3 CU);
    /// - memory GB/s: 2 × `hipDeviceAttributeMemoryClockRate` (kHz) ×
    ///   `hipDeviceAttributeMemoryBusWidth` (bits) / 8, double data rate;
    /// - the L2's size: `hipDeviceAttributeL2CacheSize`, in [`DeviceReport::cache_bytes`] (HIP
    ///   does not report its bandwidth).
    ///
    /// An attribute answered with 0 or refused as unknown (`hipErrorInvalidValue`) stays `None`,
    /// so [`DeviceReport::peaks`] takes that figure from its fallback; any other failure is
    /// [`crate::Error::Hip`].
    pub fn device_report(&self) -> Result<DeviceReport> {
        hip_device_report(self.device())
    }
}
