//! The demo with HIP events (the `hip` timeline). The demo's kernels run on the CPU; on a HIP
//! device the marks are recorded on a stream the timeline creates, so the report shows that
//! (empty) stream's timeline: this checks the event path.

use brickprof::{timeline::HipTimeline, BrickProfiler, ProfilerConfig, Result};

use super::cpu::{cpu_roof, drive};
use super::options::DemoOptions;
use super::outcome::DemoRun;

/// Run the demo with HIP events on the first device.
pub fn run(opts: &DemoOptions, config: ProfilerConfig) -> Result<DemoRun> {
    let timeline = HipTimeline::new(config.pending_capacity)?;
    let prof = BrickProfiler::with_timeline(config, timeline)?;
    let mut run = drive(opts, prof, None)?;
    cpu_roof(opts, &mut run);
    Ok(run)
}
