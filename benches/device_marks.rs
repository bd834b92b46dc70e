//! What a brick costs the host on a device timeline (spec/sync-modes.md "OpenCL"): one
//! start/stop pair in Deferred mode on the OpenCL timeline (two `clEnqueueMarkerWithWaitList`
//! calls), resolved every 256 pairs, against the same pair on the CPU timeline in the same run
//! (the floor: two clock reads). Run with `cargo bench --features opencl --bench device_marks`
//! on a machine with an OpenCL driver (PoCL runs on the CPU). The ratio is why
//! `Sampling::Layers` and `Sampling::every(n)` exist: a device mark is a runtime call.

use std::time::Duration;

use brickprof::{BrickId, BrickProfiler, CpuTimeline, OpenClDevice, ProfilerConfig, Timeline};
use criterion::{criterion_group, criterion_main, Criterion};

const PAIRS: usize = 256;

fn pass<T: Timeline>(prof: &mut BrickProfiler<T>) {
    for _ in 0..PAIRS {
        let t = prof.start_brick(BrickId::RmsNorm);
        prof.stop_brick(t, 1);
    }
    prof.end_pass(1).expect("resolve");
}

fn device_marks(c: &mut Criterion) {
    let mut g = c.benchmark_group("device_marks_256_pairs_and_resolve");
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));
    let config = ProfilerConfig {
        pending_capacity: PAIRS,
        ..ProfilerConfig::default()
    };

    let mut cpu = BrickProfiler::with_timeline(config.clone(), CpuTimeline::new()).unwrap();
    g.bench_function("floor_cpu_timeline", |b| b.iter(|| pass(&mut cpu)));

    match OpenClDevice::first() {
        Ok(device) => {
            let timeline = device.timeline(PAIRS).expect("timeline");
            let mut ocl = BrickProfiler::with_timeline(config, timeline).unwrap();
            g.bench_function("opencl_markers", |b| b.iter(|| pass(&mut ocl)));
        }
        Err(e) => eprintln!("no OpenCL device, only the floor was measured: {e}"),
    }
    g.finish();
}

criterion_group!(benches, device_marks);
criterion_main!(benches);
