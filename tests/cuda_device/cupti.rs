//! The conformance kit's CUPTI section (spec/sync-modes.md "CUPTI", "Conformance kit"; cargo
//! feature `cupti`): the same layers as the eager and graph sections, timed by
//! [`CuptiTimeline`] from CUPTI's own kernel records instead of events.
//!
//! CUPTI's record of a kernel spans its launch and retire on the device, which the kernel's
//! own `%globaltimer` span leaves out. The section measures that first, with the timeline's
//! own marks around one lone kernel behind a lead ([`launch_retire`]), then expects every
//! brick, in eager passes (Deferred, Lagged) and graph replays (Deferred, Lagged), within
//! max(0.5 µs, 1 %) of its kernels' own span plus it (a single instance: plus the spread of
//! that measurement). Lagged makes no blocking wait; the hot path allocates nothing. Where
//! CUPTI cannot be had (libcupti missing; another tool holds it, as under Nsight), the section
//! prints the fallback line the front doors print, and the event sections stand.

use std::sync::Arc;

use brickprof::{
    timeline::{nvidia_timeline, CuptiTimeline, DeviceGraph, NvidiaChoice},
    BrickId, BrickProfiler, ProfilerConfig, SyncMode, Timeline,
};
use cudarc::driver::{result, sys, CudaStream};

use super::{
    allocations_during, judge, EventOverhead, Expect, Spin, BRICKS_PER_LAYER, FLAT_NS, INNER_NS,
    LAYERS, LEAD_NS, OUTER_NS, PASSES, REPLAYS, US,
};

/// max(0.5 µs, 1 %): CUPTI's records are the kernels' own, with nothing added on the stream.
fn tolerance(ns: f64) -> f64 {
    (0.5 * US as f64).max(0.01 * ns)
}

/// The section; the duration checks that failed (printed with every run's figures first).
pub(super) fn cupti_section(stream: &Arc<CudaStream>, spin: &mut Spin) -> Vec<String> {
    // What a user gets: CUPTI, or the events and the one line saying why.
    let chosen = nvidia_timeline(stream.clone(), 8, NvidiaChoice::Auto).expect("a timeline");
    if !chosen.cupti {
        println!(
            "  CUPTI section: skipped; {}",
            chosen.fallback.unwrap_or_default()
        );
        return Vec::new();
    }
    drop(chosen);
    let probe = CuptiTimeline::new().expect("cupti: the session is up");
    println!(
        "  CUPTI section: libcupti from {}",
        probe.counts().library.unwrap_or("?")
    );
    let lr = launch_retire(stream, spin, probe);
    println!(
        "  CUPTI launch and retire (a kernel's record minus its own %globaltimer span): {:.2} µs \
         a kernel (median of {}, range {:.2}..{:.2})",
        lr.per_kernel_ns / 1e3,
        lr.samples,
        lr.min_ns / 1e3,
        lr.max_ns / 1e3
    );
    let mut failures = Vec::new();
    for mode in [SyncMode::Deferred, SyncMode::Lagged] {
        failures.extend(eager(stream, spin, mode, &lr));
    }
    for mode in [SyncMode::Deferred, SyncMode::Lagged] {
        failures.extend(graph(stream, spin, mode, &lr));
    }
    failures
}

/// A kernel's record minus its own span: the timeline's marks around one lone kernel.
fn launch_retire(stream: &Arc<CudaStream>, spin: &mut Spin, mut t: CuptiTimeline) -> EventOverhead {
    const SAMPLES: usize = 41;
    let _ = spin.take(stream);
    stream.context().bind_to_thread().expect("bind the context");
    let mut over = Vec::new();
    for _ in 0..SAMPLES {
        spin.launch(stream, LEAD_NS);
        let a = t.mark(0);
        let k = spin.launch(stream, FLAT_NS);
        let b = t.mark(0);
        Timeline::sync(&mut t).expect("cupti: sync");
        let ns = t.resolve_ns(a, b).expect("cupti: resolve");
        t.recycle();
        let records = spin.take(stream);
        let own = records[k].1.saturating_sub(records[k].0) as f64;
        over.push(ns as f64 - own);
    }
    over.sort_by(f64::total_cmp);
    EventOverhead {
        per_kernel_ns: over[SAMPLES / 2].max(0.0),
        min_ns: over[0],
        max_ns: over[SAMPLES - 1],
        samples: SAMPLES,
    }
}

fn profiler(mode: SyncMode, passes: usize) -> BrickProfiler<CuptiTimeline> {
    let config = ProfilerConfig {
        layers: LAYERS,
        sync_mode: mode,
        pending_capacity: 64,
        trace_capacity: 4 * passes * LAYERS * BRICKS_PER_LAYER,
        ..ProfilerConfig::default()
    };
    let t = CuptiTimeline::new().expect("cupti: a second timeline");
    BrickProfiler::with_timeline(config, t).unwrap()
}

/// One pass's layers (lead, flat brick, lead, outer brick around an inner one); the spin
/// records of (flat, inner, outer) a layer; hot-path allocations added to `allocations`.
fn layers<T: Timeline>(
    prof: &mut BrickProfiler<T>,
    stream: &CudaStream,
    spin: &mut Spin,
    allocations: &mut u64,
) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for layer in 0..LAYERS {
        let mut hot = |f: &mut dyn FnMut()| *allocations += allocations_during(f);
        prof.begin_layer(layer);
        spin.launch(stream, LEAD_NS);
        let mut t = None;
        hot(&mut || t = Some(prof.start_brick(BrickId::QkvProjection)));
        let q = spin.launch(stream, FLAT_NS);
        hot(&mut || prof.stop_brick(t.take().unwrap(), 1));
        spin.launch(stream, LEAD_NS);
        let (mut outer, mut inner) = (None, None);
        hot(&mut || outer = Some(prof.start_brick(BrickId::DownProjection)));
        hot(&mut || inner = Some(prof.start_brick(BrickId::GateProjection)));
        let g = spin.launch(stream, INNER_NS);
        hot(&mut || prof.stop_brick(inner.take().unwrap(), 1));
        let d = spin.launch(stream, OUTER_NS);
        hot(&mut || prof.stop_brick(outer.take().unwrap(), 1));
        prof.end_layer();
        out.push((q, g, d));
    }
    out
}

/// The bricks' references from the spin records: flat and inner their kernel's own span, the
/// outer one from its inner kernel's start to its own kernel's end.
fn expects(records: &[(u64, u64)], runs: &[(usize, usize, usize)]) -> [Expect; 3] {
    let own = |i: usize| records[i].1.saturating_sub(records[i].0);
    [
        Expect {
            brick: BrickId::QkvProjection,
            kernels: runs.iter().map(|&(q, _, _)| own(q)).collect(),
            overheads: 1.0,
        },
        Expect {
            brick: BrickId::GateProjection,
            kernels: runs.iter().map(|&(_, g, _)| own(g)).collect(),
            overheads: 1.0,
        },
        Expect {
            brick: BrickId::DownProjection,
            kernels: runs
                .iter()
                .map(|&(_, g, d)| records[d].1.saturating_sub(records[g].0))
                .collect(),
            overheads: 1.0,
        },
    ]
}

fn eager(
    stream: &Arc<CudaStream>,
    spin: &mut Spin,
    mode: SyncMode,
    lr: &EventOverhead,
) -> Vec<String> {
    let mut prof = profiler(mode, PASSES);
    let _ = spin.take(stream);
    let mut allocations = 0u64;
    let mut runs = Vec::new();
    for pass in 0..PASSES {
        let mut n = 0;
        prof.begin_pass();
        let layers = layers(&mut prof, stream, spin, &mut n);
        prof.end_pass(1)
            .unwrap_or_else(|e| panic!("cupti {mode}: {e}"));
        if mode == SyncMode::Lagged {
            stream.synchronize().unwrap(); // the engine reads its token back
        }
        if pass >= 2 {
            allocations += n; // the first passes load driver functions
        }
        runs.extend(layers);
    }
    prof.finalize()
        .unwrap_or_else(|e| panic!("cupti {mode}: finalize: {e}"));
    let c = prof.view().counters;
    assert_eq!(c.dropped, 0, "cupti {mode}");
    assert_eq!(allocations, 0, "cupti {mode}: the hot path allocated");
    if mode == SyncMode::Lagged {
        assert_eq!(c.blocking_waits, 0, "cupti lagged: no blocking wait");
    }
    let records = spin.take(stream);
    let k = prof.timeline().counts();
    println!(
        "  cupti {mode}: {} flushes, {} sync waits, {} polls not ready, hot path allocations 0",
        k.flushes, k.sync_waits, k.polls_not_ready
    );
    judge(
        &prof,
        &format!("cupti {mode}"),
        mode,
        &expects(&records, &runs),
        lr,
        tolerance,
    )
}

fn graph(
    stream: &Arc<CudaStream>,
    spin: &mut Spin,
    mode: SyncMode,
    lr: &EventOverhead,
) -> Vec<String> {
    let mut prof = profiler(mode, REPLAYS);
    let _ = spin.take(stream);
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .expect("cuStreamBeginCapture");
    let mut n = 0;
    prof.begin_pass();
    let captured_layers = layers(&mut prof, stream, spin, &mut n);
    let captured = prof.end_pass(1);
    // SAFETY: a live stream being captured.
    let status = unsafe { result::stream::is_capturing(stream.cu_stream()) };
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap_or_else(|e| panic!("cupti {mode}: the capture was invalidated: {e}"))
        .expect("a graph");
    captured.unwrap_or_else(|e| panic!("cupti {mode}: a captured pass is not an error: {e}"));
    assert_eq!(
        status,
        Ok(sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE),
        "cupti {mode}: the capture stayed active"
    );
    let dg = DeviceGraph::cuda(&graph);
    prof.graphs()
        .adopt(dg)
        .unwrap_or_else(|e| panic!("cupti {mode}: adopt: {e}"));
    let (mut flat, mut inner, mut outer) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..REPLAYS {
        let replay = prof
            .graphs()
            .begin_replay(dg)
            .unwrap_or_else(|e| panic!("cupti {mode}: {e}"));
        graph.launch().expect("cuGraphLaunch");
        prof.graphs()
            .end_replay(replay, 1)
            .unwrap_or_else(|e| panic!("cupti {mode}: {e}"));
        let records = spin.take(stream);
        let [q, g, d] = expects(&records, &captured_layers);
        flat.extend(q.kernels);
        inner.extend(g.kernels);
        outer.extend(d.kernels);
    }
    prof.finalize()
        .unwrap_or_else(|e| panic!("cupti {mode}: finalize: {e}"));
    let c = prof.view().counters;
    assert_eq!(
        (c.graph_replays, c.untimed_replays, c.dropped),
        (REPLAYS as u64, 0, 0),
        "cupti graph, {mode}: every replay timed"
    );
    if mode == SyncMode::Lagged {
        assert_eq!(c.blocking_waits, 0, "cupti graph, lagged: no blocking wait");
    }
    println!("  cupti graph, {mode}: {REPLAYS} replays of one capture, timed node by node");
    let expects = [
        Expect {
            brick: BrickId::QkvProjection,
            kernels: flat,
            overheads: 1.0,
        },
        Expect {
            brick: BrickId::GateProjection,
            kernels: inner,
            overheads: 1.0,
        },
        Expect {
            brick: BrickId::DownProjection,
            kernels: outer,
            overheads: 1.0,
        },
    ];
    let failures = judge(
        &prof,
        &format!("cupti graph, {mode}"),
        mode,
        &expects,
        lr,
        tolerance,
    );
    drop(graph);
    failures
}
