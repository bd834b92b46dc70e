//! What a brick costs the host on a device timeline (spec/sync-modes.md "OpenCL", "Sampling"):
//! one start/stop pair in Deferred mode on the OpenCL timeline (two
//! `clEnqueueMarkerWithWaitList` calls), resolved every 256 pairs, against the same pair on the
//! CPU timeline in the same run (the floor: two clock reads). Run with
//! `taskset -c 1 cargo bench -p brickprof-benches --features opencl --bench device_marks` on a machine
//! with an OpenCL driver (PoCL runs on the CPU).
//!
//! Besides criterion's per-pass times, it prints:
//! - **ns per mark**, marking and resolving apart, for both timelines, measured in alternating
//!   rounds (median and spread over the rounds) and their ratio: the host cost of one device
//!   mark against the floor, on this machine, now;
//! - **what sampling saves**: a model-shaped pass (8 layers of 6 bricks, plus 2 outside) under
//!   each [`Sampling`] plan, with its host time per pass and the line the report prints for
//!   it ("Sampling every 4th pass: 3 of 4 passes unmarked, N marks saved per pass, ...").
//!   The ratio is why `Sampling::Layers` and `Sampling::EveryNthPass` exist: a device mark is a
//!   runtime call.

use std::hint::black_box;
use std::time::{Duration, Instant};

use brickprof::output::{render_table, TableOptions};
use brickprof::{
    model::Sampling,
    timeline::{OpenClDevice, OpenClTimeline},
    BrickId, BrickProfiler, CpuTimeline, ProfilerConfig, Timeline,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const PAIRS: usize = 256;
const MARKS: u64 = 2 * PAIRS as u64;

fn pass<T: Timeline>(prof: &mut BrickProfiler<T>) {
    for _ in 0..PAIRS {
        let t = prof.start_brick(black_box(BrickId::RmsNorm));
        prof.stop_brick(t, 1);
    }
    prof.end_pass(1).expect("resolve");
}

fn config() -> ProfilerConfig {
    ProfilerConfig {
        pending_capacity: PAIRS,
        ..ProfilerConfig::default()
    }
}

fn device_marks(c: &mut Criterion) {
    let mut g = c.benchmark_group("device_marks_256_pairs_and_resolve");
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));
    g.throughput(Throughput::Elements(MARKS));

    let mut cpu = BrickProfiler::with_timeline(config(), CpuTimeline::default()).unwrap();
    g.bench_function("floor_cpu_timeline", |b| b.iter(|| pass(&mut cpu)));

    let device = match OpenClDevice::first() {
        Ok(device) => Some(device),
        Err(e) => {
            eprintln!("no OpenCL device, only the floor was measured: {e}");
            None
        }
    };
    let mut ocl = device.as_ref().map(|d| {
        let timeline = OpenClTimeline::new(&d.queue, PAIRS).expect("timeline");
        BrickProfiler::with_timeline(config(), timeline).unwrap()
    });
    if let Some(ocl) = ocl.as_mut() {
        g.bench_function("opencl_markers", |b| b.iter(|| pass(ocl)));
    }
    g.finish();

    per_mark(&mut cpu, ocl.as_mut());
    if let Some(d) = device.as_ref() {
        sampling_savings(d);
    }
}

/// Host ns per mark of one pass, marking and resolving apart.
fn timed_pass<T: Timeline>(prof: &mut BrickProfiler<T>) -> (f64, f64) {
    let t0 = Instant::now();
    for _ in 0..PAIRS {
        let t = prof.start_brick(black_box(BrickId::RmsNorm));
        prof.stop_brick(t, 1);
    }
    let t1 = Instant::now();
    prof.end_pass(1).expect("resolve");
    let t2 = Instant::now();
    let per_mark = |d: Duration| d.as_nanos() as f64 / MARKS as f64;
    (per_mark(t1 - t0), per_mark(t2 - t1))
}

/// Median, min and max.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

/// Alternating rounds of `PASSES_PER_ROUND` passes on each timeline; per round, the median
/// pass (the machine is shared: a round's median is robust to a preempted pass).
fn per_mark<T: Timeline>(
    cpu: &mut BrickProfiler<CpuTimeline>,
    mut ocl: Option<&mut BrickProfiler<T>>,
) {
    const ROUNDS: usize = 15;
    const PASSES_PER_ROUND: usize = 21;
    let round = |f: &mut dyn FnMut() -> (f64, f64)| {
        let (marks, resolves): (Vec<f64>, Vec<f64>) = (0..PASSES_PER_ROUND).map(|_| f()).unzip();
        (spread(marks).0, spread(resolves).0)
    };
    let (mut cpu_mark, mut cpu_resolve, mut ocl_mark, mut ocl_resolve) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let (m, r) = round(&mut || timed_pass(cpu));
        cpu_mark.push(m);
        cpu_resolve.push(r);
        if let Some(ocl) = ocl.as_deref_mut() {
            let (m, r) = round(&mut || timed_pass(ocl));
            ocl_mark.push(m);
            ocl_resolve.push(r);
        }
    }
    let show = |name: &str, mark: Vec<f64>, resolve: Vec<f64>| {
        let (m, m_lo, m_hi) = spread(mark);
        let (r, r_lo, r_hi) = spread(resolve);
        println!(
            "  {name:<12} mark {m:>8.1} ns (rounds {m_lo:.1}-{m_hi:.1}) | resolve {r:>8.1} ns \
             (rounds {r_lo:.1}-{r_hi:.1}) | total {:>8.1} ns",
            m + r
        );
        (m, r)
    };
    println!(
        "\nHost ns per mark ({PAIRS} start/stop pairs = {MARKS} marks and one resolve per pass; \
         median of {ROUNDS} alternating rounds of {PASSES_PER_ROUND} passes):"
    );
    let (fm, fr) = show("cpu (floor)", cpu_mark, cpu_resolve);
    if !ocl_mark.is_empty() {
        let (om, or) = show("opencl", ocl_mark, ocl_resolve);
        println!(
            "  opencl / floor: mark {:.1}x, resolve {:.1}x, total {:.1}x",
            om / fm,
            or / fr,
            (om + or) / (fm + fr)
        );
    }
}

const LAYERS: usize = 8;
const IN_LAYER: [BrickId; 6] = [
    BrickId::RmsNorm,
    BrickId::QkvProjection,
    BrickId::AttentionSoftmax,
    BrickId::OutputProjection,
    BrickId::GateProjection,
    BrickId::DownProjection,
];

/// One model-shaped pass: embedding, `LAYERS` layers of `IN_LAYER`, LM head.
fn model_pass<T: Timeline>(prof: &mut BrickProfiler<T>) {
    prof.begin_pass();
    let t = prof.start_brick(BrickId::Embedding);
    prof.stop_brick(t, 1);
    for layer in 0..LAYERS {
        prof.begin_layer(layer);
        for brick in IN_LAYER {
            let t = prof.start_brick(black_box(brick));
            prof.stop_brick(t, 1);
        }
        prof.end_layer();
    }
    let t = prof.start_brick(BrickId::LmHead);
    prof.stop_brick(t, 1);
    prof.end_pass(1).expect("resolve");
}

/// Each sampling plan on the OpenCL timeline: host µs per pass and the report's line.
fn sampling_savings(device: &OpenClDevice) {
    const PASSES: usize = 200;
    println!(
        "\nSampling on the OpenCL timeline ({LAYERS} layers x {} bricks + 2 outside = {} \
         bricks per pass, {PASSES} passes):",
        IN_LAYER.len(),
        LAYERS * IN_LAYER.len() + 2
    );
    let plans = [
        Sampling::All,
        "every-4".parse::<Sampling>().expect("4 >= 1"),
        Sampling::Layers,
    ];
    for sampling in plans {
        let config = ProfilerConfig {
            layers: LAYERS,
            sampling,
            pending_capacity: 64,
            ..ProfilerConfig::default()
        };
        let timeline = OpenClTimeline::new(&device.queue, 64).expect("timeline");
        let mut prof = BrickProfiler::with_timeline(config, timeline).unwrap();
        let mut per_pass: Vec<f64> = (0..PASSES)
            .map(|_| {
                let t0 = Instant::now();
                model_pass(&mut prof);
                t0.elapsed().as_nanos() as f64 / 1e3
            })
            .collect();
        // The mean: under every-N the marked passes carry the cost (the median pass is free).
        let mean = per_pass.iter().sum::<f64>() / PASSES as f64;
        per_pass.sort_by(f64::total_cmp);
        let table = render_table(&prof.profile(), &TableOptions::default());
        let line = table
            .lines()
            .find(|l| l.starts_with("Sampling "))
            .unwrap_or("every brick marked: nothing saved");
        println!(
            "  {:<7} {mean:>7.1} µs/pass (mean; median {:.1}, p90 {:.1}) | {line}",
            sampling.to_string(),
            per_pass[PASSES / 2],
            per_pass[PASSES * 9 / 10],
        );
    }
}

criterion_group!(benches, device_marks);
criterion_main!(benches);
