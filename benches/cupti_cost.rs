//! What CUPTI costs a realistic decode step, against no profiler and the event timeline
//! (spec/sync-modes.md "CUPTI", "The cost bench"; issue 35's targets). Needs an NVIDIA GPU, the
//! driver and libcupti; elsewhere it prints "skipped: no CUDA device" and exits 0. Build it
//! anywhere with `cargo bench --no-run -p brickprof-benches --features cupti --bench cupti_cost`; run it with
//! `cargo bench -p brickprof-benches --features cupti --bench cupti_cost` (under two minutes on an H200).
//!
//! The step: 32 layers x 12 bricks + the LM head, one spin kernel a brick (PTX below,
//! JIT-compiled by the driver; each spins on `%globaltimer` and stores its own start and end),
//! 3.56 ms of kernels, then a stream sync (the engine reading its token back). Eager (385
//! launches a step) and as a CUDA graph (one launch a step). Arms, each in a process of its own
//! (a process has one CUPTI session), rounds interleaved:
//! - `none`: no profiler;
//! - `events`: the event timeline, every brick of every pass;
//! - `cupti`: the CUPTI timeline, every pass traced;
//! - `sampled`: the CUPTI timeline under `Sampling::within_budget(0.02, 32, TraceCost::h200(S,
//!   385))`, S the untraced step measured first in the same process: bursts of 32 passes.
//!
//! It prints, per arm: the step (median and mean, and the mean against `none`), the device time
//! of a step (first kernel's start to last kernel's end, `%globaltimer`), host enqueue (the
//! step's launches and brick marks) and host end (`end_pass` and the sync), and each brick's
//! reading against its kernel's own time (mean and worst difference over the 13 bricks).
//! `BRICKPROF_BENCH_STEPS` (default 600) and `BRICKPROF_BENCH_ROUNDS` (default 3) scale it.

use std::ffi::{c_void, CString};
use std::sync::Arc;
use std::time::Instant;

use brickprof::BrickId::{self, *};
use brickprof::{
    model::{Sampling, TraceCost},
    timeline::{BoxedTimeline, CudaTimeline, CuptiTimeline, DeviceGraph},
    BrickProfiler, Error, ProfilerConfig, SyncMode,
};
use cudarc::driver::{result, sys, CudaStream};

const SPIN_PTX: &str = r#"
.version 7.0
.target sm_50
.address_size 64

.visible .entry brickprof_spin(
	.param .u64 brickprof_spin_ns,
	.param .u64 brickprof_spin_out
)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<8>;

	ld.param.u64 	%rd1, [brickprof_spin_ns];
	ld.param.u64 	%rd2, [brickprof_spin_out];
	cvta.to.global.u64 	%rd3, %rd2;
	mov.u64 	%rd4, %globaltimer;
$L__spin:
	mov.u64 	%rd5, %globaltimer;
	sub.s64 	%rd6, %rd5, %rd4;
	setp.lt.u64 	%p1, %rd6, %rd1;
	@%p1 bra 	$L__spin;
	st.global.u64 	[%rd3], %rd4;
	st.global.u64 	[%rd3+8], %rd5;
	ret;
}
"#;

const LAYERS: usize = 32;
/// A layer's 12 bricks and their kernels' spin (ns): 108 µs a layer.
const LAYER: [(BrickId, u64); 12] = [
    (RmsNorm, 4_000),
    (QkvProjection, 14_000),
    (RopeEmbedding, 4_000),
    (AttentionScore, 10_000),
    (AttentionSoftmax, 5_000),
    (AttentionOutput, 10_000),
    (OutputProjection, 12_000),
    (ResidualAdd, 3_000),
    (GateProjection, 14_000),
    (UpProjection, 14_000),
    (Activation, 4_000),
    (DownProjection, 14_000),
];
const LM_HEAD_NS: u64 = 100_000;
const KERNELS: usize = LAYERS * LAYER.len() + 1;
const BURST: u32 = 32;
const BUDGET: f64 = 0.02;
const ARM_ENV: &str = "BRICKPROF_CUPTI_BENCH_ARM";
const ARMS: [&str; 4] = ["none", "events", "cupti", "sampled"];

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if let Ok(arm) = std::env::var(ARM_ENV) {
        child(&arm);
        return;
    }
    match CudaTimeline::on_device(0, 8) {
        Err(Error::NoDevice { reason, .. }) => {
            println!("skipped: no CUDA device ({reason})");
            return;
        }
        Err(e) => {
            println!("skipped: the CUDA driver failed ({e})");
            return;
        }
        Ok(_) => {}
    }
    let rounds = env_usize("BRICKPROF_BENCH_ROUNDS", 3);
    let steps = env_usize("BRICKPROF_BENCH_STEPS", 600);
    println!(
        "brickprof CUPTI cost bench: {LAYERS} layers x {} bricks + LM head ({KERNELS} kernels, \
         {:.2} ms), a sync a step; {steps} steps an arm, {rounds} rounds interleaved",
        LAYER.len(),
        (LAYERS as u64 * LAYER.iter().map(|l| l.1).sum::<u64>() + LM_HEAD_NS) as f64 / 1e6
    );
    let exe = std::env::current_exe().expect("this binary");
    for graph in [false, true] {
        let mode = if graph { "graph" } else { "eager" };
        let mut results: Vec<Vec<Vec<f64>>> = vec![Vec::new(); ARMS.len()];
        for _ in 0..rounds {
            for (i, arm) in ARMS.iter().enumerate() {
                let out = std::process::Command::new(&exe)
                    .env(ARM_ENV, format!("{arm}:{mode}"))
                    .output()
                    .expect("run an arm");
                let text = String::from_utf8_lossy(&out.stdout);
                match text.lines().find_map(|l| l.strip_prefix("RESULT ")) {
                    Some(r) => results[i].push(
                        r.split_whitespace()
                            .filter_map(|v| v.parse().ok())
                            .collect(),
                    ),
                    None => println!(
                        "  {mode} {arm}: failed:\n{text}{}",
                        String::from_utf8_lossy(&out.stderr)
                    ),
                }
                for l in text.lines().filter(|l| l.starts_with("NOTE ")) {
                    println!("  {mode} {arm}: {}", &l[5..]);
                }
            }
        }
        report(mode, &results);
    }
}

/// Per arm, medians over rounds: step median and mean, device, enqueue, end, brick error.
fn report(mode: &str, results: &[Vec<Vec<f64>>]) {
    let med = |arm: usize, k: usize| -> Option<f64> {
        let mut v: Vec<f64> = results[arm]
            .iter()
            .filter_map(|r| r.get(k).copied())
            .collect();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[v.len() / 2])
    };
    println!(
        "{mode}: µs a step (median over rounds)    step p50    step mean   vs none   device   \
         enqueue   end     brick-kernel mean/worst"
    );
    let base = med(0, 1);
    for (i, arm) in ARMS.iter().enumerate() {
        let Some(mean) = med(i, 1) else {
            println!("  {arm:<8} no result");
            continue;
        };
        let vs = base.map_or(String::from("-"), |b| {
            format!("{:+.1} %", 100.0 * (mean / b - 1.0))
        });
        let brick = match (med(i, 5), med(i, 6)) {
            (Some(a), Some(w)) if i > 0 => format!("{:+.2} / {:+.2} µs", a / 1e3, w / 1e3),
            _ => "-".into(),
        };
        println!(
            "  {arm:<8} {:>34.1} {:>12.1} {:>9} {:>8.1} {:>9.1} {:>7.1}   {brick}",
            med(i, 0).unwrap_or(f64::NAN) / 1e3,
            mean / 1e3,
            vs,
            med(i, 2).unwrap_or(f64::NAN) / 1e3,
            med(i, 3).unwrap_or(f64::NAN) / 1e3,
            med(i, 4).unwrap_or(f64::NAN) / 1e3,
        );
    }
}

/// The spin kernel and device memory for `slots` (start, end) readings.
struct Spin {
    func: sys::CUfunction,
    records: sys::CUdeviceptr,
    slots: usize,
}

impl Spin {
    fn load(stream: &Arc<CudaStream>, slots: usize) -> Spin {
        stream.context().bind_to_thread().expect("bind");
        let ptx = CString::new(SPIN_PTX).unwrap();
        // SAFETY: a NUL-terminated PTX image; the context is current.
        let module = unsafe { result::module::load_data(ptx.as_ptr().cast()) }.expect("PTX");
        // SAFETY: a live module.
        let func = unsafe {
            result::module::get_function(module, CString::new("brickprof_spin").unwrap())
        }
        .expect("brickprof_spin");
        // SAFETY: plain allocation in the current context.
        let records = unsafe { result::malloc_sync(slots * 16) }.expect("cuMemAlloc");
        Spin {
            func,
            records,
            slots,
        }
    }

    fn launch(&self, stream: &CudaStream, ns: u64, slot: usize) {
        let mut ns = ns;
        let mut out: sys::CUdeviceptr = self.records + ((slot % self.slots) * 16) as u64;
        let mut params: [*mut c_void; 2] = [
            (&mut ns as *mut u64).cast(),
            (&mut out as *mut sys::CUdeviceptr).cast(),
        ];
        // SAFETY: a live function with two u64 parameters, a live stream, `out` in our
        // allocation.
        unsafe {
            result::launch_kernel(
                self.func,
                (1, 1, 1),
                (1, 1, 1),
                0,
                stream.cu_stream(),
                &mut params,
            )
        }
        .expect("cuLaunchKernel");
    }

    fn take(&self, stream: &CudaStream) -> Vec<(u64, u64)> {
        stream.synchronize().expect("sync");
        let mut raw = vec![0u64; self.slots * 2];
        // SAFETY: our allocation; the stream is idle.
        unsafe { result::memcpy_dtoh_sync(&mut raw, self.records) }.expect("cuMemcpyDtoH");
        raw.chunks(2).map(|c| (c[0], c[1])).collect()
    }
}

/// One step's launches, bricks around each when profiled; slots from `base`.
fn launches(
    prof: &mut Option<BrickProfiler<BoxedTimeline>>,
    spin: &Spin,
    s: &CudaStream,
    base: usize,
) {
    let mut k = base;
    for layer in 0..LAYERS {
        if let Some(p) = prof.as_mut() {
            p.begin_layer(layer);
        }
        for (brick, ns) in LAYER {
            let t = prof.as_mut().map(|p| p.start_brick(brick));
            spin.launch(s, ns, k);
            k += 1;
            if let (Some(p), Some(t)) = (prof.as_mut(), t) {
                p.stop_brick(t, 1);
            }
        }
        if let Some(p) = prof.as_mut() {
            p.end_layer();
        }
    }
    let t = prof.as_mut().map(|p| p.start_brick(LmHead));
    spin.launch(s, LM_HEAD_NS, k);
    if let (Some(p), Some(t)) = (prof.as_mut(), t) {
        p.stop_brick(t, 1);
    }
}

fn profiler(t: BoxedTimeline, sampling: Sampling) -> BrickProfiler<BoxedTimeline> {
    let config = ProfilerConfig {
        layers: LAYERS,
        sync_mode: SyncMode::Deferred,
        pending_capacity: 1024,
        sampling,
        ..ProfilerConfig::default()
    };
    BrickProfiler::with_timeline(config, t).expect("a profiler")
}

/// One arm in this process: prints `RESULT step_p50 step_mean device enqueue end brick_mean
/// brick_worst` (ns) and `NOTE` lines.
fn child(spec: &str) {
    let (arm, mode) = spec.split_once(':').unwrap_or((spec, "eager"));
    let graph_mode = mode == "graph";
    let steps = env_usize("BRICKPROF_BENCH_STEPS", 600).max(40);
    let probe = CudaTimeline::on_device(0, 8).expect("a device");
    let stream = probe.stream().clone();
    drop(probe);
    let slots = if graph_mode { KERNELS } else { KERNELS * steps };
    let spin = Spin::load(&stream, slots);
    // The untraced step, measured before any profiler (the sampled arm's plan needs it).
    let warm = 20;
    let mut warm_ns = Vec::new();
    let plain_graph = graph_mode.then(|| {
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
            .expect("capture");
        launches(&mut None, &spin, &stream, 0);
        stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .expect("end capture")
            .expect("a graph")
    });
    for _ in 0..warm {
        let t = Instant::now();
        match &plain_graph {
            Some(g) => g.launch().expect("cuGraphLaunch"),
            None => launches(&mut None, &spin, &stream, 0),
        }
        stream.synchronize().expect("sync");
        warm_ns.push(t.elapsed().as_nanos() as u64);
    }
    warm_ns.sort_unstable();
    let step_ns = warm_ns[warm / 2];
    let mut prof = match arm {
        "none" => None,
        "events" => Some(profiler(
            BoxedTimeline::new(CudaTimeline::new(stream.clone(), 2048).expect("events")),
            Sampling::All,
        )),
        "cupti" | "sampled" => {
            let t = match CuptiTimeline::new() {
                Ok(t) => t,
                Err(e) => {
                    println!("NOTE skipped: CUPTI unavailable: {e}");
                    return;
                }
            };
            let sampling = if arm == "sampled" {
                let plan = Sampling::within_budget(
                    BUDGET,
                    BURST,
                    TraceCost::h200(step_ns, KERNELS as u64),
                )
                .expect("a plan");
                println!(
                    "NOTE plan {plan} from an untraced step of {:.1} µs",
                    step_ns as f64 / 1e3
                );
                plan
            } else {
                Sampling::All
            };
            Some(profiler(BoxedTimeline::new(t), sampling))
        }
        other => panic!("unknown arm {other}"),
    };
    drop(plain_graph);
    let graph = if graph_mode {
        let _ = spin.take(&stream);
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
            .expect("capture");
        if let Some(p) = prof.as_mut() {
            p.begin_pass();
        }
        launches(&mut prof, &spin, &stream, 0);
        let captured = prof.as_mut().map(|p| p.end_pass(1));
        let g = stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .expect("end capture")
            .expect("a graph");
        if let Some(r) = captured {
            r.expect("a captured pass");
        }
        if let Some(p) = prof.as_mut() {
            p.graphs().adopt(DeviceGraph::cuda(&g)).expect("adopt");
        }
        Some(g)
    } else {
        None
    };
    let (mut step, mut enqueue, mut end) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..steps {
        let begun = Instant::now();
        match (&graph, prof.as_mut()) {
            (Some(g), Some(p)) => {
                let r = p
                    .graphs()
                    .begin_replay(DeviceGraph::cuda(g))
                    .expect("begin_replay");
                g.launch().expect("cuGraphLaunch");
                let launched = Instant::now();
                p.graphs().end_replay(r, 1).expect("end_replay");
                stream.synchronize().expect("sync");
                enqueue.push((launched - begun).as_nanos() as f64);
                end.push(launched.elapsed().as_nanos() as f64);
            }
            (Some(g), None) => {
                g.launch().expect("cuGraphLaunch");
                let launched = Instant::now();
                stream.synchronize().expect("sync");
                enqueue.push((launched - begun).as_nanos() as f64);
                end.push(launched.elapsed().as_nanos() as f64);
            }
            (None, _) => {
                if let Some(p) = prof.as_mut() {
                    p.begin_pass();
                }
                launches(&mut prof, &spin, &stream, i * KERNELS);
                let launched = Instant::now();
                if let Some(p) = prof.as_mut() {
                    p.end_pass(1).expect("end_pass");
                }
                stream.synchronize().expect("sync");
                enqueue.push((launched - begun).as_nanos() as f64);
                end.push(launched.elapsed().as_nanos() as f64);
            }
        }
        step.push(begun.elapsed().as_nanos() as f64);
    }
    if let Some(p) = prof.as_mut() {
        p.finalize().expect("finalize");
    }
    let records = spin.take(&stream);
    // Device time of a step: its first kernel's start to its last one's end.
    let mut device: Vec<f64> = records
        .chunks(KERNELS)
        .filter(|c| c[0].0 > 0)
        .map(|c| c[KERNELS - 1].1.saturating_sub(c[0].0) as f64)
        .collect();
    device.sort_by(f64::total_cmp);
    // Each brick's reading against its kernels' own time.
    let (mut brick_mean, mut brick_worst) = (f64::NAN, f64::NAN);
    if let Some(p) = prof.as_ref() {
        let own = |brick: BrickId| -> f64 {
            let idx: Vec<usize> = if brick == LmHead {
                vec![KERNELS - 1]
            } else {
                let j = LAYER.iter().position(|l| l.0 == brick).unwrap();
                (0..LAYERS).map(|l| l * LAYER.len() + j).collect()
            };
            let v: Vec<f64> = records
                .chunks(KERNELS)
                .filter(|c| c[0].0 > 0)
                .flat_map(|c| {
                    idx.iter()
                        .map(|&i| c[i].1.saturating_sub(c[i].0) as f64)
                        .collect::<Vec<_>>()
                })
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        let diffs: Vec<f64> = LAYER
            .iter()
            .map(|l| l.0)
            .chain([LmHead])
            .map(|b| p.view().brick_stats(b).summary().mean_ns - own(b))
            .collect();
        brick_mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
        brick_worst = diffs
            .iter()
            .copied()
            .fold(0.0, |w: f64, d| if d.abs() > w.abs() { d } else { w });
        let c = p.view().counters;
        println!(
            "NOTE {} passes, {} replays ({} untimed), {} starts sampled out, {} dropped",
            c.passes, c.graph_replays, c.untimed_replays, c.sampled_out, c.dropped
        );
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mean = step.iter().sum::<f64>() / step.len() as f64;
    println!(
        "RESULT {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0}",
        median(&mut step),
        mean,
        device.get(device.len() / 2).copied().unwrap_or(f64::NAN),
        enqueue.iter().sum::<f64>() / enqueue.len() as f64,
        end.iter().sum::<f64>() / end.len() as f64,
        brick_mean,
        brick_worst
    );
}
