//! Decode in device graphs, on the simulated device: a prefill pass run eagerly, one decode
//! step captured into a graph, then 64 replays of it timed brick by brick in the Lagged sync
//! mode (spec/sync-modes.md "Graph capture"). On CUDA the calls are the same, with
//! `DeviceGraph::cuda(&graph)` for cudarc's `CudaGraph` (docs/gpus.md "Decode in CUDA graphs").
//!
//! `cargo run --example graph_replay`

use brickprof::output::{render_table, TableOptions};
use brickprof::{
    timeline::{SimDevice, SimTimeline},
    BrickId, BrickProfiler, PassShape, ProfilerConfig, SyncMode,
};

const LAYERS: usize = 4;
const US: u64 = 1_000;

/// One forward pass of `tokens` tokens: four bricks a layer, kernels of known durations.
fn forward(prof: &mut BrickProfiler<SimTimeline>, device: &SimDevice, tokens: u64) {
    for layer in 0..LAYERS {
        prof.begin_layer(layer);
        for (brick, us) in [
            (BrickId::QkvProjection, 40),
            (BrickId::AttentionScore, 25),
            (BrickId::GateProjection, 60),
            (BrickId::DownProjection, 55),
        ] {
            let t = prof.start_brick(brick);
            device.launch(us * US * tokens.min(8));
            prof.stop_brick(t, tokens);
        }
        prof.end_layer();
    }
}

fn main() -> brickprof::Result<()> {
    let device = SimDevice::with_jitter(2 * US, 7, 20_000);
    let config = ProfilerConfig {
        sync_mode: SyncMode::Lagged,
        ..ProfilerConfig::with_layers(LAYERS)
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(1024))?;

    // The prompt, eagerly.
    prof.begin_pass();
    prof.set_pass_shape(PassShape::new(16, 1, 16)?);
    forward(&mut prof, &device, 16);
    prof.end_pass(16)?;

    // One decode step captured: its bricks become the graph's template.
    let graph = device.capture(|| {
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(1, 1, 17)?);
        forward(&mut prof, &device, 1);
        prof.end_pass(1)
    })?;
    prof.graphs().adopt(graph)?;

    // Every decode step after it is a replay, timed like any pass; the profiler never waits
    // (the engine itself waits for the previous step's token before it launches the next).
    for step in 0..64 {
        let replay = prof.graphs().begin_replay(graph)?;
        prof.set_pass_shape(PassShape::new(1, 1, 18 + step)?);
        device.synchronize();
        device.launch_graph(&graph)?;
        prof.graphs().end_replay(replay, 1)?;
    }
    prof.finalize()?;
    let profile = prof.profile();
    print!("{}", render_table(&profile, &TableOptions::default()));
    Ok(())
}
