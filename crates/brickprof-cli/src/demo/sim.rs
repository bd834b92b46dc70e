//! The demo on the simulated GPU (the `sim` timeline): a roofline device with a launch
//! overhead, on which each of the model's CPU kernels is also launched for the virtual time its
//! work takes.

use brickprof::{
    roofline::DevicePeaks, timeline::SimDevice, BrickProfiler, ProfilerConfig, Result, Work,
};

use super::cpu::{drive, Device};
use super::options::DemoOptions;
use super::outcome::DemoRun;

/// Host cost of one kernel launch.
pub const LAUNCH_OVERHEAD_NS: u64 = 3_000;
/// Fixed cost of any kernel on the device.
pub const KERNEL_FLOOR_NS: u64 = 1_000;
/// Peak FLOPs per ns (2 TFLOP/s: a small integrated GPU).
pub const FLOPS_PER_NS: f64 = 2_000.0;
/// Peak bytes per ns (100 GB/s).
pub const BYTES_PER_NS: f64 = 100.0;

/// The simulated GPU's peaks, for the roofline.
pub fn peaks() -> Result<DevicePeaks> {
    DevicePeaks::new("sim-gpu", FLOPS_PER_NS, BYTES_PER_NS)
}

/// The virtual duration of a kernel that does `work`.
pub fn kernel_ns(work: Work) -> u64 {
    let compute = work.flops as f64 / FLOPS_PER_NS;
    let memory = work.bytes as f64 / BYTES_PER_NS;
    KERNEL_FLOOR_NS + compute.max(memory).ceil() as u64
}

/// The simulated GPU at the run's speed (`--sim-jitter`: 1 without).
struct Sim<'a> {
    device: &'a SimDevice,
    speed: f64,
}

impl Device for Sim<'_> {
    fn launch(&self, work: Work, stretch: f64) {
        let ns = kernel_ns(work);
        self.device
            .launch((ns as f64 * stretch * self.speed).round() as u64);
    }
}

/// Run the demo on the simulated GPU; its peaks are the roof unless `--peaks` says otherwise.
pub fn run(opts: &DemoOptions, config: ProfilerConfig) -> Result<DemoRun> {
    let (device, speed) = match opts.sim_jitter {
        None => (SimDevice::new(LAUNCH_OVERHEAD_NS), 1.0),
        Some(j) => (
            SimDevice::with_jitter(
                LAUNCH_OVERHEAD_NS,
                opts.seed,
                (j.kernel_pct * 10_000.0).round() as u32,
            ),
            j.run_factor(opts.seed),
        ),
    };
    // Two marks per pending brick, plus one end-of-pass mark per pass in flight (Lagged).
    let timeline = device.timeline(
        config
            .pending_capacity
            .saturating_mul(2)
            .saturating_add(2 + brickprof::model::Limit::PassesInFlight.max()),
    );
    let prof = BrickProfiler::with_timeline(config, timeline)?;
    let sim = Sim {
        device: &device,
        speed,
    };
    let mut run = drive(opts, prof, Some(&sim))?;
    if opts.peaks.is_none() {
        run.profile.meta.peaks = Some(peaks()?);
    }
    Ok(run)
}
