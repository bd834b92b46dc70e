//! Unit tests of the outputs that reach their limits: the brick tree's depth cut and frame limit
//! (`brick_tree_props`) and the bounded walk (`folded_bounds`); the trace writers fed slices
//! directly (`writers`). Also the graph-replay tests on the simulated device (`graph_replay`,
//! `graph_replay_props`: they read its kernel log, internal to the crate, and reach the
//! profiler, the profile and the table, so they sit in the highest layer they use).

use crate::timeline::{HostClock, MockClock};
use crate::{BrickProfiler, CpuTimeline, ProfilerConfig};

mod brick_tree_props;
mod folded_bounds;
mod graph_replay;
mod graph_replay_props;
mod latency_json;
mod phases_of;
mod writers;

/// A profiler on a mock clock.
fn mock_profiler(config: ProfilerConfig) -> (MockClock, BrickProfiler) {
    let (clock, mock) = HostClock::mock();
    let prof = BrickProfiler::with_timeline(config, CpuTimeline::with_clock(clock)).unwrap();
    (mock, prof)
}
