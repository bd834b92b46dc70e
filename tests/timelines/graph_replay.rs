//! spec/sync-modes.md "Graph capture", on the simulated device: a pass captured into a graph
//! becomes the graph's template once adopted, and every replay of the graph is a pass whose
//! bricks resolve to exactly the durations its kernels ran (the device's jitter draws every
//! replay's durations anew, and its kernel log is the truth), in every sync mode, with several
//! replays in flight in Lagged mode and never a blocking wait; replays interleave with eager
//! passes; a re-capture replaces the template; replays of a graph never adopted, or on a
//! timeline that cannot time them, are counted, not timed, and named in the report; a replay
//! left open is counted, never a panic.

use brickprof::output::{render_table, TableOptions};
use brickprof::{
    timeline::{BoxedTimeline, DeviceGraph, GraphProblem, SimDevice, SimTimeline},
    BrickId, BrickProfiler, PassShape, Phase, ProfilerConfig, SyncMode,
};

const LAYERS: usize = 2;
const US: u64 = 1_000;
/// The step's kernels, in launch order, per layer: QKV, RoPE (inside attention), the rest of
/// attention, the down projection; then the LM head outside the layers.
const QKV: u64 = 120 * US;
const ROPE: u64 = 30 * US;
const ATTN: u64 = 200 * US;
const DOWN: u64 = 90 * US;
const HEAD: u64 = 400 * US;
/// Kernels a step launches.
const KERNELS: usize = 4 * LAYERS + 1;

/// One decode step, as the engine runs it eagerly or captures it: bricks around kernels,
/// attention with RoPE nested inside it.
fn step(prof: &mut BrickProfiler<SimTimeline>, device: &SimDevice) {
    for layer in 0..LAYERS {
        prof.begin_layer(layer);
        let t = prof.start_brick(BrickId::QkvProjection);
        device.launch(QKV);
        prof.stop_brick(t, 1);
        let attn = prof.start_brick(BrickId::AttentionScore);
        let rope = prof.start_brick(BrickId::RopeEmbedding);
        device.launch(ROPE);
        prof.stop_brick(rope, 1);
        device.launch(ATTN);
        prof.stop_brick(attn, 1);
        let t = prof.start_brick(BrickId::DownProjection);
        device.launch(DOWN);
        prof.stop_brick(t, 1);
        prof.end_layer();
    }
    let t = prof.start_brick(BrickId::LmHead);
    device.launch(HEAD);
    prof.stop_brick(t, 1);
}

/// What the books must hold for one brick: calls, inclusive total, self total, min, max.
type Truth = (u64, u64, u64, u64, u64);

/// The model: each brick's statistics from the kernels the device ran, `KERNELS` per step
/// (eager or replayed: the same kernels in the same order).
fn model(log: &[u64]) -> Vec<(BrickId, Truth)> {
    assert_eq!(log.len() % KERNELS, 0, "whole steps");
    let mut per: Vec<(BrickId, Vec<(u64, u64)>)> = vec![
        (BrickId::QkvProjection, vec![]),
        (BrickId::RopeEmbedding, vec![]),
        (BrickId::AttentionScore, vec![]),
        (BrickId::DownProjection, vec![]),
        (BrickId::LmHead, vec![]),
    ];
    for s in log.chunks(KERNELS) {
        for l in 0..LAYERS {
            let k = &s[4 * l..4 * l + 4];
            per[0].1.push((k[0], k[0]));
            per[1].1.push((k[1], k[1]));
            per[2].1.push((k[1] + k[2], k[2])); // inclusive: RoPE and the rest; self: the rest
            per[3].1.push((k[3], k[3]));
        }
        per[4].1.push((s[KERNELS - 1], s[KERNELS - 1]));
    }
    per.into_iter()
        .map(|(b, v)| {
            let inc: Vec<u64> = v.iter().map(|x| x.0).collect();
            (
                b,
                (
                    v.len() as u64,
                    inc.iter().sum(),
                    v.iter().map(|x| x.1).sum(),
                    inc.iter().copied().min().unwrap_or(u64::MAX),
                    inc.iter().copied().max().unwrap_or(0),
                ),
            )
        })
        .collect()
}

/// The books' statistics of each brick the model names.
fn books(prof: &BrickProfiler<SimTimeline>) -> Vec<(BrickId, Truth)> {
    model(&[])
        .into_iter()
        .map(|(b, _)| {
            let s = prof.view().brick_stats(b);
            (
                b,
                (
                    s.summary().count,
                    s.summary().total_ns,
                    s.summary().self_ns,
                    s.summary().min_ns,
                    s.summary().max_ns,
                ),
            )
        })
        .collect()
}

fn config(mode: SyncMode) -> ProfilerConfig {
    ProfilerConfig {
        layers: LAYERS,
        sync_mode: mode,
        pending_capacity: 256,
        max_passes_in_flight: 3,
        ..ProfilerConfig::default()
    }
}

/// A profiler on a jittered device whose kernel log is on.
fn setup(mode: SyncMode, overhead_ns: u64) -> (BrickProfiler<SimTimeline>, SimDevice) {
    let device = SimDevice::with_jitter(overhead_ns, 29, 50_000); // ±5 % per kernel, per replay
    let pool = 2 * 256 + 2 + brickprof::model::Limit::PassesInFlight.max();
    let prof = BrickProfiler::with_timeline(config(mode), device.timeline(pool)).unwrap();
    (prof, device)
}

/// Capture one step into a graph (the captured pass runs nothing) and adopt it.
fn capture(prof: &mut BrickProfiler<SimTimeline>, device: &SimDevice) -> DeviceGraph {
    let graph = device
        .capture(|| {
            prof.begin_pass();
            prof.set_pass_shape(decode());
            step(prof, device);
            prof.end_pass(1)
        })
        .unwrap();
    prof.graphs().adopt(graph).unwrap();
    graph
}

fn decode() -> PassShape {
    PassShape::new(1, 1, 100).unwrap()
}

fn replay(prof: &mut BrickProfiler<SimTimeline>, device: &SimDevice, graph: DeviceGraph) {
    let r = prof.graphs().begin_replay(graph).unwrap();
    prof.set_pass_shape(decode());
    device.launch_graph(&graph).unwrap();
    prof.graphs().end_replay(r, 1).unwrap();
}

// spec/sync-modes.md "Graph capture": captured once, replayed 1,000 times, every brick of
// every replay exact (jittered kernels, a launch overhead the graph's nodes never see).
#[test]
fn a_graph_captured_once_and_replayed_1000_times_is_timed_exactly() {
    let (mut prof, device) = setup(SyncMode::Deferred, 3 * US);
    let graph = capture(&mut prof, &device);
    assert_eq!(device.counts().launches, 0, "the captured pass ran nothing");
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::QkvProjection)
            .summary()
            .count,
        0
    );
    device.log_kernels(true);
    for _ in 0..1000 {
        replay(&mut prof, &device, graph);
    }
    prof.finalize().unwrap();
    let log = device.take_kernel_log();
    assert_eq!(log.len(), 1000 * KERNELS);
    assert_eq!(books(&prof), model(&log));
    let c = prof.view().counters;
    assert_eq!(
        (
            c.passes,
            c.graph_replays,
            c.captured_passes,
            c.untimed_replays
        ),
        (1000, 1000, 1, 0)
    );
    assert_eq!(
        (c.syncs, c.dropped, c.unclosed),
        (1000, 0, 0),
        "one sync a replay"
    );
    // The replays' phase is the call's; their layers are the template's.
    let decode_qkv = prof
        .view()
        .phase_brick_stats(Phase::Decode, BrickId::QkvProjection);
    assert_eq!(decode_qkv.summary().count, 1000 * LAYERS as u64);
    assert_eq!(
        prof.view()
            .pass_stats(brickprof::model::PhaseFilter::Only(Phase::Decode))
            .summary()
            .count,
        1000
    );
    assert_eq!(
        prof.view()
            .row_stats(
                brickprof::model::PhaseFilter::All,
                brickprof::profile::RowKey::Layer(1),
                BrickId::DownProjection
            )
            .unwrap()
            .summary()
            .count,
        1000
    );
}

// spec/sync-modes.md "Graph capture": replays and eager passes interleaved (a prefill, then
// decode steps some captured, some eager), each pass's bricks from its own kernels.
#[test]
fn replays_interleave_with_eager_passes() {
    for mode in [SyncMode::Deferred, SyncMode::Lagged] {
        let (mut prof, device) = setup(mode, 0);
        device.log_kernels(true);
        step(&mut prof, &device); // an eager pass
        prof.end_pass(8).unwrap();
        let eager_log = device.take_kernel_log();
        let graph = capture(&mut prof, &device);
        device.log_kernels(true);
        for i in 0..60 {
            if i % 3 == 2 {
                prof.begin_pass();
                prof.set_pass_shape(decode());
                step(&mut prof, &device);
                prof.end_pass(1).unwrap();
            } else {
                replay(&mut prof, &device, graph);
            }
            device.host_work(2_000 * US); // the host samples the token
        }
        prof.finalize().unwrap();
        let log = [eager_log, device.take_kernel_log()].concat();
        assert_eq!(books(&prof), model(&log), "{mode}");
        let c = prof.view().counters;
        assert_eq!((c.passes, c.graph_replays), (61, 40), "{mode}");
        assert_eq!(c.blocking_waits, 0, "{mode}");
    }
}

// spec/sync-modes.md "Graph capture", "Lagged": the host runs two steps ahead of the device
// (it waits for the token of the step before last), so several replays are in flight at once;
// each resolves from its own slot of events, none waits, every brick is exact.
#[test]
fn lagged_keeps_several_replays_in_flight_without_waiting() {
    let (mut prof, device) = setup(SyncMode::Lagged, 5 * US);
    let graph = capture(&mut prof, &device);
    device.log_kernels(true);
    let mut ends: Vec<u64> = Vec::new();
    let mut most_in_flight = 0;
    for _ in 0..300 {
        let r = prof.graphs().begin_replay(graph).unwrap();
        prof.set_pass_shape(decode());
        device.launch_graph(&graph).unwrap();
        ends.push(device.counts().device_free_ns);
        prof.graphs().end_replay(r, 1).unwrap();
        most_in_flight = most_in_flight.max(prof.view().in_flight.passes);
        // Pipelined decode: wait for the output of the replay before last.
        if let Some(&end) = ends.iter().rev().nth(2) {
            device.host_work(end.saturating_sub(device.counts().host_now_ns));
        }
    }
    let c = prof.view().counters;
    assert_eq!(c.blocking_waits, 0, "no wait in steady state");
    assert_eq!(c.syncs, 0, "polled, never synchronized");
    assert!(most_in_flight >= 2, "replays in flight: {most_in_flight}");
    prof.finalize().unwrap();
    assert_eq!(books(&prof), model(&device.take_kernel_log()));
    assert_eq!(prof.view().counters.graph_replays, 300);
}

// spec/sync-modes.md "Graph capture": a slot comes round again only after its replay was
// resolved. With the engine far ahead, Lagged waits (counted) rather than let a replay
// overwrite the events of one not yet resolved: every brick stays exact.
#[test]
fn a_host_far_ahead_waits_instead_of_overwriting_a_replay_in_flight() {
    let (mut prof, device) = setup(SyncMode::Lagged, 0);
    let graph = capture(&mut prof, &device);
    device.log_kernels(true);
    for _ in 0..40 {
        replay(&mut prof, &device, graph); // never waits for the device
    }
    prof.finalize().unwrap();
    assert_eq!(books(&prof), model(&device.take_kernel_log()));
    let c = prof.view().counters;
    assert!(c.blocking_waits > 0 && c.blocking_waits < 40, "{c:?}");
    assert_eq!(c.graph_replays, 40);
}

// spec/sync-modes.md "Graph capture": every sync mode agrees with the model; in mode None
// (host dispatch time, the device never marked) replays are counted, not timed.
#[test]
fn every_sync_mode_agrees_with_the_model() {
    for mode in [
        SyncMode::Immediate,
        SyncMode::PerLayer,
        SyncMode::Deferred,
        SyncMode::Lagged,
        SyncMode::None,
    ] {
        let (mut prof, device) = setup(mode, 2 * US);
        let graph = capture(&mut prof, &device);
        device.log_kernels(true);
        for _ in 0..25 {
            replay(&mut prof, &device, graph);
            device.synchronize(); // the engine reads its token back
        }
        prof.finalize().unwrap();
        let c = prof.view().counters;
        if mode == SyncMode::None {
            // The device is never marked, so the capture is not seen: the captured pass is
            // an ordinary pass of host dispatch time, and the replays are not timed.
            assert_eq!((c.graph_replays, c.untimed_replays, c.passes), (0, 25, 1));
            let qkv = prof
                .view()
                .brick_stats(BrickId::QkvProjection)
                .summary()
                .count;
            assert_eq!(qkv, LAYERS as u64, "the captured pass's only");
        } else {
            assert_eq!(books(&prof), model(&device.take_kernel_log()), "{mode}");
            assert_eq!((c.graph_replays, c.untimed_replays), (25, 0), "{mode}");
            assert_eq!(c.blocking_waits, 0, "{mode}");
        }
    }
}

/// A step with one more brick (the engine changed its decode step).
fn step_with_activation(prof: &mut BrickProfiler<SimTimeline>, device: &SimDevice) {
    step(prof, device);
    let t = prof.start_brick(BrickId::Activation);
    device.launch(70 * US);
    prof.stop_brick(t, 1);
}

// spec/sync-modes.md "Graph capture": a graph re-captured and its executable updated
// (`cuGraphExecUpdate`) is adopted again, and its template replaced: replays from then on
// have the new bricks. Adopting with nothing captured is a typed error.
#[test]
fn a_re_capture_replaces_the_template() {
    let (mut prof, device) = setup(SyncMode::Deferred, 0);
    let graph = capture(&mut prof, &device);
    let err = prof.graphs().adopt(graph).unwrap_err();
    assert!(
        matches!(
            err,
            brickprof::Error::Graph {
                problem: GraphProblem::NothingCaptured,
                ..
            }
        ),
        "{err}"
    );
    for _ in 0..5 {
        replay(&mut prof, &device, graph);
    }
    let recaptured = device
        .capture(|| {
            step_with_activation(&mut prof, &device);
            prof.end_pass(1)
        })
        .unwrap();
    let updated = device.update_graph(graph, recaptured).unwrap();
    assert_eq!(updated.exec(), graph.exec(), "the same executable");
    prof.graphs().adopt(updated).unwrap();
    for _ in 0..7 {
        replay(&mut prof, &device, updated);
    }
    prof.finalize().unwrap();
    let act = prof.view().brick_stats(BrickId::Activation);
    assert_eq!(
        act.summary().count,
        7,
        "the new template's brick, in the new replays only"
    );
    assert!(
        act.summary().min_ns >= 66_500 && act.summary().max_ns <= 73_500,
        "{act:?}"
    );
    assert_eq!(prof.view().brick_stats(BrickId::LmHead).summary().count, 12);
    assert_eq!(prof.view().counters.captured_passes, 2);
}

// spec/sync-modes.md "Graph capture": replays of a graph never adopted, and replays on a
// timeline that cannot time them (the host clock), are counted, not timed, and the table names
// their graphs; the profile keeps the names.
#[test]
fn replays_of_an_unknown_graph_are_counted_not_timed_and_named() {
    let (mut prof, device) = setup(SyncMode::Deferred, 0);
    let adopted = capture(&mut prof, &device);
    let stranger = device // captured, never adopted
        .capture(|| {
            step(&mut prof, &device);
            prof.end_pass(1)
        })
        .unwrap();
    for _ in 0..3 {
        replay(&mut prof, &device, stranger);
        replay(&mut prof, &device, adopted);
    }
    prof.finalize().unwrap();
    let c = prof.view().counters;
    assert_eq!((c.graph_replays, c.untimed_replays, c.passes), (3, 3, 3));
    assert_eq!(prof.view().brick_stats(BrickId::LmHead).summary().count, 3);
    let profile = prof.profile();
    assert_eq!(profile.meta.untimed_graphs, vec![stranger.exec()]);
    let table = render_table(&profile, &TableOptions::default());
    let named = format!(
        "3 graph replays NOT timed (graphs {:#x}): adopt each graph",
        stranger.exec()
    );
    assert!(table.contains(&named), "{table}");
    assert!(table.contains("3 graph replays timed as passes"), "{table}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.json");
    profile.save(&path).unwrap();
    let loaded = brickprof::Profile::load(&path).unwrap();
    assert_eq!(loaded.meta.untimed_graphs, vec![stranger.exec()]);
    assert_eq!(loaded.meta.counters.untimed_replays, 3);

    // The host clock cannot time a graph's replays: counted, named, never an error.
    let mut cpu = BrickProfiler::default();
    let graph = DeviceGraph::from_raw(0x1000, 0x2000);
    cpu.graphs().adopt(graph).unwrap();
    let r = cpu.graphs().begin_replay(graph).unwrap();
    cpu.graphs().end_replay(r, 1).unwrap();
    let c = cpu.view().counters;
    assert_eq!((c.untimed_replays, c.passes), (1, 0));
    assert_eq!(cpu.profile().meta.untimed_graphs, vec![0x2000]);
    // Named sorted, as a merge writes them, whatever order they were first seen in: a
    // profile merged with an empty one keeps its facts.
    let earlier = DeviceGraph::from_raw(0x1000, 0x0100);
    let r = cpu.graphs().begin_replay(earlier).unwrap();
    cpu.graphs().end_replay(r, 1).unwrap();
    let p = cpu.profile();
    assert_eq!(p.meta.untimed_graphs, vec![0x0100, 0x2000]);
    let empty = BrickProfiler::default().profile();
    let mut merged = p.clone();
    merged.merge(&empty).unwrap();
    assert_eq!(merged.meta.untimed_graphs, p.meta.untimed_graphs);
}

// spec/sync-modes.md "Graph capture": a replay never ended (its token leaked) is counted as
// untimed by the next pass's beginning, its slot of events freed (the next replay of the graph
// takes that slot again and is timed); a stale token ends nothing. Never a panic.
#[test]
fn a_leaked_replay_is_counted_and_frees_its_slot() {
    let (mut prof, device) = setup(SyncMode::Deferred, 0);
    let graph = capture(&mut prof, &device);
    let leaked = prof.graphs().begin_replay(graph).unwrap();
    device.launch_graph(&graph).unwrap();
    prof.begin_pass(); // the engine forgot end_replay
    prof.end_pass(1).unwrap();
    device.log_kernels(true);
    replay(&mut prof, &device, graph); // the one slot was freed: timed
    prof.graphs().end_replay(leaked, 1).unwrap(); // stale: nothing
    let r = prof.graphs().begin_replay(graph).unwrap();
    device.launch_graph(&graph).unwrap();
    drop(r);
    let r2 = prof.graphs().begin_replay(graph).unwrap(); // closes the open one first
    device.launch_graph(&graph).unwrap();
    prof.graphs().end_replay(r2, 1).unwrap();
    prof.finalize().unwrap();
    let log = device.take_kernel_log();
    // The leaked replays' kernels ran but were not timed: the books hold the two ended ones.
    let timed: Vec<u64> = [&log[..KERNELS], &log[2 * KERNELS..]].concat();
    assert_eq!(books(&prof), model(&timed));
    let c = prof.view().counters;
    assert_eq!((c.graph_replays, c.untimed_replays, c.passes), (2, 2, 3));
}

// spec/sync-modes.md "Graph capture", spec/front-doors.md "Thread-local profiler": the
// thread-local front door has the same calls; a thread's replays are timed passes in the
// collected profile, in Lagged mode too. Disabled, a replay is inert and counts nothing.
#[test]
fn the_thread_front_door_times_replays() {
    use brickprof::thread as bp;
    bp::configure(config(SyncMode::Lagged)).unwrap();
    bp::set_enabled(false);
    let graph = DeviceGraph::from_raw(1, 2);
    let r = bp::begin_replay(graph).unwrap();
    bp::end_replay(r, 1).unwrap();
    bp::set_enabled(true);
    let log = std::thread::spawn(|| {
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
        device.log_kernels(true);
        for _ in 0..50 {
            let r = bp::begin_replay(graph).unwrap();
            bp::set_pass_shape(decode());
            device.launch_graph(&graph).unwrap();
            bp::end_replay(r, 1).unwrap();
            device.host_work(1_000 * US);
        }
        bp::flush().unwrap();
        bp::forget_graph(graph);
        device.take_kernel_log()
    })
    .join()
    .unwrap();
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

// spec/sync-modes.md "Graph capture", spec/traces.md: a replay's bricks reach the trace as
// device slices at the times the graph's record nodes ran, each slice as long as its kernels,
// flat bricks never overlapping on the device track, one pass record a replay; in Lagged mode
// too, where replays resolve after later ones began.
#[test]
fn replays_are_traced_where_their_kernels_ran() {
    for mode in [SyncMode::Deferred, SyncMode::Lagged] {
        let device = SimDevice::with_jitter(4 * US, 3, 50_000);
        let config = ProfilerConfig {
            trace_capacity: 100_000,
            ..config(mode)
        };
        let pool = 2 * 256 + 2 + brickprof::model::Limit::PassesInFlight.max();
        let mut prof = BrickProfiler::with_timeline(config, device.timeline(pool)).unwrap();
        let graph = capture(&mut prof, &device);
        device.log_kernels(true);
        let mut launched_at = Vec::new();
        for _ in 0..20 {
            let r = prof.graphs().begin_replay(graph).unwrap();
            prof.set_pass_shape(decode());
            launched_at.push(device.counts().host_now_ns);
            device.launch_graph(&graph).unwrap();
            prof.graphs().end_replay(r, 1).unwrap();
            device.host_work(500 * US);
        }
        prof.finalize().unwrap();
        let log = device.take_kernel_log();
        let view = prof.view().trace_view().unwrap();
        let mut qkv: Vec<_> = view
            .events
            .iter()
            .filter(|e| {
                e.track == brickprof::profile::Track::Device
                    && e.slot == BrickId::QkvProjection as u16
            })
            .collect();
        qkv.sort_by_key(|e| e.start_ns);
        assert_eq!(qkv.len(), 20 * LAYERS, "{mode}");
        // The QKV kernels in the log, in order: the first kernel of each layer of each step.
        let truth: Vec<u64> = log
            .chunks(KERNELS)
            .flat_map(|s| (0..LAYERS).map(move |l| s[4 * l]))
            .collect();
        let durations: Vec<u64> = qkv.iter().map(|e| e.dur_ns).collect();
        assert_eq!(durations, truth, "{mode}");
        for w in qkv.windows(2) {
            assert!(
                w[0].start_ns + w[0].dur_ns <= w[1].start_ns,
                "{mode}: overlap"
            );
        }
        // Each replay's first QKV slice starts after its launch (the sim's clock is the trace's).
        for (step, at) in launched_at.iter().enumerate() {
            assert!(
                qkv[step * LAYERS].start_ns >= *at,
                "{mode}: before its launch"
            );
        }
        assert_eq!(view.passes.len(), 20, "{mode}: one record a replay");
    }
}
