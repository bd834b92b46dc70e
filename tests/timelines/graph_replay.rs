//! spec/sync-modes.md "Graph capture" through the thread-local front door, on the simulated
//! device. The rest of the graph-replay tests are unit tests of the crate
//! (src/output/tests/graph_replay.rs: they read the device's kernel log).

use brickprof::{
    timeline::{BoxedTimeline, DeviceGraph, SimDevice},
    BrickId, PassShape, ProfilerConfig, SyncMode,
};

const LAYERS: usize = 2;
const US: u64 = 1_000;
/// The QKV projection's kernel.
const QKV: u64 = 120 * US;

fn config(mode: SyncMode) -> ProfilerConfig {
    ProfilerConfig {
        layers: LAYERS,
        sync_mode: mode,
        pending_capacity: 256,
        max_passes_in_flight: 3,
        ..ProfilerConfig::default()
    }
}

fn decode() -> PassShape {
    PassShape::new(1, 1, 100).unwrap()
}

/// The durations `n` kernels of `ns` run on a device jittered with `seed` and `ppm`: a twin
/// device launches them one by one (the same seed and launches give the same times,
/// spec/sync-modes.md "The simulated device"), each read from its busy time.
fn jittered_twin(seed: u64, ppm: u32, ns: u64, n: usize) -> Vec<u64> {
    let twin = SimDevice::with_jitter(0, seed, ppm);
    (0..n)
        .map(|_| {
            let before = twin.counts().busy_ns;
            twin.launch(ns);
            twin.counts().busy_ns - before
        })
        .collect()
}

// spec/sync-modes.md "Graph capture", spec/front-doors.md "Thread-local profiler": the
// thread-local front door has the same calls; a thread's replays are timed passes in the
// collected profile, in Lagged mode too. Disabled, a replay is inert and counts nothing.
#[test]
fn the_thread_front_door_times_replays() {
    use brickprof::thread as bp;
    let _serial = crate::SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    bp::reset();
    bp::configure(config(SyncMode::Lagged)).unwrap();
    bp::set_enabled(false);
    let graph = DeviceGraph::from_raw(1, 2);
    let r = bp::begin_replay(graph).unwrap();
    bp::end_replay(r, 1).unwrap();
    bp::set_enabled(true);
    let ran = std::thread::spawn(|| {
        let device = SimDevice::with_jitter(0, 7, 50_000);
        bp::init_thread(Some(BoxedTimeline::new(device.timeline(2 * 256 + 18)))).unwrap();
        let graph = device
            .capture(|| {
                for layer in 0..LAYERS {
                    let _l = bp::layer(layer);
                    let _g = brickprof::brick!(BrickId::QkvProjection);
                    device.launch(QKV);
                }
                bp::end_pass(1)
            })
            .unwrap();
        bp::adopt_graph(graph).unwrap();
        for _ in 0..50 {
            let r = bp::begin_replay(graph).unwrap();
            bp::set_pass_shape(decode());
            device.launch_graph(&graph).unwrap();
            bp::end_replay(r, 1).unwrap();
            device.host_work(1_000 * US);
        }
        bp::flush().unwrap();
        bp::forget_graph(graph);
        let c = device.counts();
        (c.launches, c.busy_ns)
    })
    .join()
    .unwrap();
    // The kernels the replays ran, in order: the twin's (the captured pass ran none).
    let log = jittered_twin(7, 50_000, QKV, 50 * LAYERS);
    assert_eq!(ran, ((50 * LAYERS) as u64, log.iter().sum::<u64>()));
    let profile = bp::collect().unwrap();
    bp::set_enabled(false);
    let qkv = &profile.brick("QkvProjection").unwrap().stats;
    assert_eq!(log.len(), 50 * LAYERS);
    assert_eq!(
        (
            qkv.summary().count,
            qkv.summary().total_ns,
            qkv.summary().min_ns,
            qkv.summary().max_ns
        ),
        (
            log.len() as u64,
            log.iter().sum::<u64>(),
            *log.iter().min().unwrap(),
            *log.iter().max().unwrap()
        )
    );
    let c = profile.meta.counters;
    assert_eq!(
        (c.graph_replays, c.untimed_replays, c.blocking_waits),
        (50, 0, 0)
    );
}
