//! Opening an OpenCL device for profiling (cargo feature `opencl`): the first device of the
//! first platform that has one, a context, and an in-order command queue with profiling
//! enabled. Engines that already own a queue skip this and pass theirs to
//! [`OpenClTimeline::new`](super::OpenClTimeline::new).

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::error_codes::{DLOPEN_FUNCTION_NOT_AVAILABLE, DLOPEN_RUNTIME_LOAD_FAILED};
use opencl3::platform::get_platforms;

use super::opencl::cl_error;
use crate::{Error, Result};

/// What to install when there is no OpenCL device.
const INSTALL: &str = "install an OpenCL driver and the ICD loader (Debian/Ubuntu: `apt install \
                       pocl-opencl-icd ocl-icd-libopencl1` runs OpenCL on the CPU), or use the \
                       cpu or sim timeline";

/// An OpenCL device with a context and a profiling-enabled, in-order command queue: plain
/// handles to use as they are (enqueue work on [`OpenClDevice::queue`], build programs and
/// buffers in [`OpenClDevice::context`], mark the queue with
/// [`OpenClTimeline::new`](super::OpenClTimeline::new)).
#[derive(Debug)]
pub struct OpenClDevice {
    // Field order is drop order: the queue before the context.
    /// The in-order, profiling-enabled command queue to enqueue work on (and to mark:
    /// `OpenClTimeline::new(&device.queue, n)`).
    pub queue: CommandQueue,
    /// The context (to create buffers and build programs).
    pub context: Context,
    /// The device.
    pub device: Device,
    /// The device's name as the driver reports it.
    pub name: String,
}

impl OpenClDevice {
    /// The first device of the first platform that has one. With no OpenCL runtime library, no
    /// platform or no device, [`Error::NoDevice`] names what to install.
    pub fn first() -> Result<Self> {
        let no_device = |reason: String| Error::NoDevice {
            timeline: "opencl",
            reason,
            install: INSTALL,
        };
        let platforms = get_platforms().map_err(|e| {
            no_device(match e.0 {
                DLOPEN_RUNTIME_LOAD_FAILED | DLOPEN_FUNCTION_NOT_AVAILABLE => {
                    "the OpenCL runtime library (libOpenCL.so.1) could not be loaded".into()
                }
                code => format!(
                    "clGetPlatformIDs found no platform ({})",
                    opencl3::error_codes::error_text(code)
                ),
            })
        })?;
        let id = platforms
            .iter()
            .find_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).ok()?.first().copied())
            .ok_or_else(|| {
                no_device(format!(
                    "{} OpenCL platform(s) found, none with a device",
                    platforms.len()
                ))
            })?;
        let device = Device::new(id);
        let name = device
            .name()
            .map_err(|e| cl_error("clGetDeviceInfo", e.0, ""))?;
        let context =
            Context::from_device(&device).map_err(|e| cl_error("clCreateContext", e.0, ""))?;
        let queue =
            CommandQueue::create_default_with_properties(&context, CL_QUEUE_PROFILING_ENABLE, 0)
                .map_err(|e| cl_error("clCreateCommandQueueWithProperties", e.0, ""))?;
        Ok(OpenClDevice {
            queue,
            context,
            device,
            name,
        })
    }
}
