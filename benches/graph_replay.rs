//! The host cost of timing a graph's replays (spec/sync-modes.md "Graph capture", "The cost"), on
//! the simulated device: a Llama-shaped decode step of 32 layers (451 bricks) captured once and
//! replayed, against the floor in the same run, an eager pass of the same bricks.
//!
//! - `eager pass`: `begin_pass`, 451 start/stop pairs (each two marks on the simulated stream,
//!   no kernel), `end_pass` (Deferred: one sync and the resolve of 451 bricks). The floor.
//! - `replay pass`: `begin_replay` + the graph's launch + `end_replay`: the template copied into
//!   the pending buffer with the replay's marks, then resolved as a pass. Minus
//!   `launch_graph alone` (the simulated device running the graph's nodes), this is what the
//!   profiler adds to a replay: per brick, the host cost of resolving a replay.
//! - `replay pass, 1-brick graph` minus `launch_graph alone, 1-brick graph`: the fixed cost of
//!   `begin_replay` + `end_replay` per pass.
//!
//! Caveat: the simulated device is not a driver. Its marks and event reads are a few loads
//! and stores behind a `RefCell`; on CUDA a replay costs one `cuGraphExecEventRecordNodeSetEvent`
//! per record node when more than one slot is in use, one `cuEventRecord` for the Lagged
//! end-of-pass mark, and one `cuEventElapsedTime` per brick to resolve (about 1 µs each), none
//! of them on the engine's critical path in Lagged mode except the node updates before the
//! launch. These figures are the profiler's own work only.

use std::time::Duration;

use brickprof::BrickId::{self, *};
use brickprof::{
    timeline::{DeviceGraph, SimDevice, SimTimeline},
    BrickProfiler, PassShape, ProfilerConfig, SyncMode,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

#[path = "common/block.rs"]
#[allow(dead_code)]
mod block;
use block::BLOCK;

const LAYERS: usize = 32;
const PENDING: usize = 1024;

/// A decode step's bricks: embedding, a block per layer, final norm, LM head.
fn step(prof: &mut BrickProfiler<SimTimeline>, layers: usize, device: Option<&SimDevice>) {
    let brick = |prof: &mut BrickProfiler<SimTimeline>, b: BrickId| {
        let t = prof.start_brick(b);
        if let Some(d) = device {
            d.launch(5_000);
        }
        prof.stop_brick(t, 1);
    };
    brick(prof, Embedding);
    for layer in 0..layers {
        prof.begin_layer(layer);
        for b in BLOCK {
            brick(prof, b);
        }
        prof.end_layer();
    }
    brick(prof, RmsNorm);
    brick(prof, LmHead);
}

/// A profiler on a fresh device, with `layers` layers of the step captured and adopted
/// (`layers == 0`: a one-brick graph, the LM head).
fn setup(mode: SyncMode, layers: usize) -> (BrickProfiler<SimTimeline>, SimDevice, DeviceGraph) {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: LAYERS,
        sync_mode: mode,
        pending_capacity: PENDING,
        ..ProfilerConfig::default()
    };
    let pool = 2 * PENDING + 2 + brickprof::model::Limit::PassesInFlight.max();
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(pool)).unwrap();
    let graph = device
        .capture(|| {
            if layers == 0 {
                let t = prof.start_brick(LmHead);
                device.launch(5_000);
                prof.stop_brick(t, 1);
            } else {
                step(&mut prof, layers, Some(&device));
            }
            prof.end_pass(1)
        })
        .unwrap();
    prof.graphs().adopt(graph).unwrap();
    (prof, device, graph)
}

fn replays(c: &mut Criterion) {
    let decode = PassShape::new(1, 1, 512).unwrap();
    for mode in [SyncMode::Deferred, SyncMode::Lagged] {
        let mut g = c.benchmark_group(format!("graph_replay/{mode}"));
        g.measurement_time(Duration::from_secs(3))
            .warm_up_time(Duration::from_secs(1))
            .sample_size(30);
        // The engine reads its token back every step: Lagged resolves the previous replay.
        let (mut prof, device, _) = setup(mode, LAYERS);
        g.bench_function(BenchmarkId::new("eager pass", "451 bricks"), |b| {
            b.iter(|| {
                prof.begin_pass();
                prof.set_pass_shape(decode);
                step(&mut prof, LAYERS, None);
                device.synchronize();
                prof.end_pass(1).unwrap();
            })
        });
        for (layers, name) in [(LAYERS, "451 bricks"), (0, "1 brick")] {
            let (mut prof, device, graph) = setup(mode, layers);
            g.bench_function(BenchmarkId::new("replay pass", name), |b| {
                b.iter(|| {
                    let r = prof.graphs().begin_replay(graph).unwrap();
                    prof.set_pass_shape(decode);
                    device.launch_graph(&graph).unwrap();
                    device.synchronize();
                    prof.graphs().end_replay(r, 1).unwrap();
                })
            });
            assert_eq!(
                prof.view().counters.blocking_waits,
                0,
                "{mode}: steady state"
            );
            let (_prof, device, graph) = setup(mode, layers);
            g.bench_function(BenchmarkId::new("launch_graph alone", name), |b| {
                b.iter(|| {
                    device.launch_graph(&graph).unwrap();
                    device.synchronize();
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, replays);
criterion_main!(benches);
