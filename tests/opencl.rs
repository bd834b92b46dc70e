//! spec/sync-modes.md "OpenCL": the deferred protocol against a real asynchronous driver. On CI
//! this is PoCL running OpenCL C kernels on the CPU; any OpenCL device works. The demo on
//! OpenCL: crates/brickprof-cli/tests/commands/opencl_demo.rs.
//!
//! Every test takes the same lock: they time kernels on a shared device, so they run one at a
//! time.

mod common;

use std::ptr;
use std::sync::Mutex;

use brickprof::{
    profile::Track,
    timeline::{Calibrated, OpenClDevice, OpenClTimeline},
    BrickId, BrickProfiler, ProfilerConfig, SyncMode, Timeline,
};
use common::native::{allocations_during, ThreadCounting};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::program::Program;

static DEVICE_LOCK: Mutex<()> = Mutex::new(());

/// A kernel whose duration is proportional to `iters`: a float recurrence per work item that
/// the compiler cannot fold (no fast-math).
const SPIN: &str = r#"
__kernel void spin(__global float* out, int iters) {
    int i = get_global_id(0);
    float x = (float)i * 0.001f;
    for (int k = 0; k < iters; ++k) { x = x * 0.99991f + 0.37f; }
    out[i] = x;
}
"#;

const ITEMS: usize = 64;

struct Spin {
    device: OpenClDevice,
    kernel: Kernel,
    out: Buffer<f32>,
    _program: Program,
}

impl Spin {
    fn new() -> Spin {
        let device = OpenClDevice::first().expect(
            "an OpenCL device (CI installs pocl-opencl-icd; run `apt install pocl-opencl-icd`)",
        );
        let program = Program::create_and_build_from_source(&device.context, SPIN, "")
            .expect("build the spin kernel");
        let kernel = Kernel::create(&program, "spin").expect("kernel");
        // SAFETY: no host pointer.
        let out = unsafe {
            Buffer::<f32>::create(&device.context, CL_MEM_READ_WRITE, ITEMS, ptr::null_mut())
        }
        .expect("buffer");
        Spin {
            device,
            kernel,
            out,
            _program: program,
        }
    }

    fn timeline(&self) -> OpenClTimeline {
        OpenClTimeline::new(&self.device.queue, 4096).expect("timeline")
    }

    /// Enqueue one kernel of `iters` iterations (does not wait).
    fn launch(&self, iters: i32) {
        // One work-group: one driver thread runs the kernel, so its time does not depend on
        // how the driver spreads work-groups over a busy machine's cores.
        let global = [ITEMS];
        let local = [ITEMS];
        // SAFETY: argument types match the kernel's signature; the buffer outlives the queue's
        // use of it (we finish before dropping).
        unsafe {
            self.kernel.set_arg(0, &self.out.get()).expect("arg 0");
            self.kernel.set_arg(1, &iters).expect("arg 1");
            self.device
                .queue
                .enqueue_nd_range_kernel(
                    self.kernel.get(),
                    1,
                    ptr::null(),
                    global.as_ptr(),
                    local.as_ptr(),
                    &[],
                )
                .expect("enqueue");
        }
    }
}

/// Iterations for a kernel of roughly `target_ms` on this device. Kernels stay short (below a
/// scheduler time slice) and tests take the minimum over many passes, so a busy machine that
/// preempts the driver's thread in some passes still leaves clean ones.
fn calibrate(spin: &Spin, target_ms: f64) -> i32 {
    let probe = 2_000;
    let mut prof =
        BrickProfiler::with_timeline(ProfilerConfig::default(), spin.timeline()).unwrap();
    for _ in 0..10 {
        let t = prof.start_brick(BrickId::Sampling);
        spin.launch(probe);
        prof.stop_brick(t, 1);
        prof.finalize().unwrap();
    }
    let ns = prof
        .view()
        .brick_stats(BrickId::Sampling)
        .summary()
        .min_ns
        .max(1) as f64;
    ((probe as f64) * target_ms * 1e6 / ns).clamp(1_000.0, 5e7) as i32
}

/// Passes per measurement: the minimum over them is the clean run.
const PASSES: usize = 25;

const BRICKS: [BrickId; 3] = [BrickId::RmsNorm, BrickId::QkvProjection, BrickId::LmHead];

/// Run `passes` passes of three kernels (1x, 2x, 3x `iters`) in `mode`.
fn run(spin: &Spin, mode: SyncMode, passes: usize, iters: i32) -> BrickProfiler<OpenClTimeline> {
    run_engine(spin, mode, passes, iters, false)
}

/// [`run`], the engine reading its output back at the end of each pass (`clFinish` of its
/// own, as an LLM engine reads the sampled token) when `reads_back`.
fn run_engine(
    spin: &Spin,
    mode: SyncMode,
    passes: usize,
    iters: i32,
    reads_back: bool,
) -> BrickProfiler<OpenClTimeline> {
    let config = ProfilerConfig {
        sync_mode: mode,
        trace_capacity: 1024,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, spin.timeline()).unwrap();
    for _ in 0..passes {
        prof.begin_pass();
        for (i, brick) in BRICKS.into_iter().enumerate() {
            let t = prof.start_brick(brick);
            spin.launch(iters * (i as i32 + 1));
            prof.stop_brick(t, 1);
        }
        if reads_back {
            spin.device.queue.finish().expect("the engine's read-back");
        }
        prof.end_pass(1).expect("resolve on the OpenCL device");
    }
    prof.finalize().expect("the final flush");
    prof
}

#[test]
fn deferred_and_immediate_agree_on_kernel_durations() {
    let _g = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let spin = Spin::new();
    let iters = calibrate(&spin, 0.3);
    let deferred = run(&spin, SyncMode::Deferred, PASSES, iters);
    let immediate = run(&spin, SyncMode::Immediate, PASSES, iters);
    let resolution = deferred.timeline().resolution_ns() as f64;
    for brick in BRICKS {
        // The minimum over passes: the least disturbed run of each kernel on a shared machine.
        let d = deferred.view().brick_stats(brick).summary().min_ns as f64;
        let i = immediate.view().brick_stats(brick).summary().min_ns as f64;
        // Immediate also counts the launch gap after each sync (spec/sync-modes.md).
        let noise = 0.15 * d.max(i) + 2.0 * resolution + 50_000.0;
        assert!(
            (d - i).abs() <= noise,
            "{brick}: deferred {d} ns vs immediate {i} ns (allowed {noise} ns)"
        );
        assert!(d > 1e5, "{brick}: {d} ns is not the kernel's time");
    }
}

/// spec/sync-modes.md "Lagged" on a real asynchronous driver: a steady stream of passes, the
/// host enqueueing far ahead of the device, needs fewer blocking waits than passes; an engine
/// that reads its output back each pass needs none; per-brick durations match Deferred's.
#[test]
fn lagged_waits_less_than_once_per_pass_and_matches_deferred() {
    let _g = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let spin = Spin::new();
    let iters = calibrate(&spin, 0.3);
    let deferred = run(&spin, SyncMode::Deferred, PASSES, iters);
    let ahead = run(&spin, SyncMode::Lagged, PASSES, iters);
    let reads_back = run_engine(&spin, SyncMode::Lagged, PASSES, iters, true);
    let resolution = deferred.timeline().resolution_ns() as f64;
    for lagged in [&ahead, &reads_back] {
        let c = lagged.view().counters;
        assert_eq!((c.passes, c.dropped), (PASSES as u64, 0));
        for brick in BRICKS {
            let d = deferred.view().brick_stats(brick).summary().min_ns as f64;
            let l = lagged.view().brick_stats(brick).summary().min_ns as f64;
            // Deferred's first brick of a pass also counts the launch gap after its sync.
            let noise = 0.15 * d.max(l) + 2.0 * resolution + 50_000.0;
            assert!(
                (d - l).abs() <= noise,
                "{brick}: deferred {d} ns vs lagged {l} ns (allowed {noise} ns)"
            );
            assert_eq!(
                lagged.view().brick_stats(brick).summary().count,
                PASSES as u64
            );
        }
    }
    let (a, r) = (ahead.view().counters, reads_back.view().counters);
    eprintln!(
        "PoCL, {PASSES} passes: Deferred {} waits; Lagged {} blocking waits with the host \
         ahead ({:.2} per pass), {} with a read-back per pass; calibration bound {} ns",
        deferred.view().counters.syncs,
        a.blocking_waits,
        a.blocking_waits as f64 / PASSES as f64,
        r.blocking_waits,
        ahead.timeline().calibration().map_or(0, |c| c.bound_ns),
    );
    assert!(
        a.blocking_waits < PASSES as u64 / 2,
        "{} blocking waits for {PASSES} passes",
        a.blocking_waits
    );
    assert_eq!(
        r.blocking_waits, 0,
        "the engine's read-back lets every pass resolve"
    );
    assert!(r.syncs <= 1, "only the final flush syncs: {}", r.syncs);
    assert_eq!(deferred.view().counters.syncs, PASSES as u64);
}

/// spec/sync-modes.md "Calibration" on PoCL: the fit has a bound, device slices are monotone
/// on their track and none starts before its host dispatch minus the bound, in Deferred and
/// in Lagged mode.
#[test]
fn calibrated_device_slices_never_precede_their_dispatch() {
    let _g = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let spin = Spin::new();
    for mode in [SyncMode::Deferred, SyncMode::Lagged] {
        let prof = run(&spin, mode, 6, 20_000);
        let fit = prof
            .timeline()
            .calibration()
            .expect("anchors at construction");
        assert!(fit.anchors_used >= 1);
        assert!(
            fit.bound_ns < 5_000_000,
            "{mode}: bound {} ns",
            fit.bound_ns
        );
        let trace = prof
            .view()
            .trace_view()
            .map(|v| v.events)
            .expect("tracing is on");
        let device: Vec<_> = trace.iter().filter(|e| e.track == Track::Device).collect();
        let host: Vec<_> = trace.iter().filter(|e| e.track == Track::Host).collect();
        assert_eq!(device.len(), 18, "{mode}");
        let mut by_dispatch: Vec<_> = device.iter().zip(&host).collect();
        by_dispatch.sort_by_key(|(_, h)| h.start_ns);
        for w in by_dispatch.windows(2) {
            let (a, b) = (w[0].0, w[1].0);
            assert!(
                a.start_ns + a.dur_ns <= b.start_ns + prof.timeline().resolution_ns(),
                "{mode}: device slices not monotone: {a:?} {b:?}"
            );
        }
        for (d, h) in &by_dispatch {
            assert!(
                d.start_ns + fit.bound_ns >= h.start_ns,
                "{mode}: device slice at {} ns precedes its dispatch at {} ns (bound {} ns)",
                d.start_ns,
                h.start_ns,
                fit.bound_ns
            );
        }
    }
}

#[test]
fn deferred_mode_waits_once_per_pass() {
    let _g = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let spin = Spin::new();
    let prof = run(&spin, SyncMode::Deferred, 5, 2_000);
    assert_eq!(prof.timeline().counts().syncs, 5, "one clFinish per pass");
    assert_eq!(prof.view().counters.syncs, 5);
    assert_eq!(prof.view().counters.dropped, 0);
    let immediate = run(&spin, SyncMode::Immediate, 5, 2_000);
    assert_eq!(
        immediate.timeline().counts().syncs,
        15,
        "immediate: one per brick"
    );
}

#[test]
fn four_times_the_work_takes_about_four_times_as_long() {
    let _g = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let spin = Spin::new();
    let iters = calibrate(&spin, 0.4);
    let mut prof =
        BrickProfiler::with_timeline(ProfilerConfig::default(), spin.timeline()).unwrap();
    for _ in 0..PASSES {
        let t = prof.start_brick(BrickId::GateProjection);
        spin.launch(iters);
        prof.stop_brick(t, 1);
        let t = prof.start_brick(BrickId::UpProjection);
        spin.launch(4 * iters);
        prof.stop_brick(t, 1);
        prof.end_pass(1).unwrap();
    }
    let one = prof
        .view()
        .brick_stats(BrickId::GateProjection)
        .summary()
        .min_ns as f64;
    let four = prof
        .view()
        .brick_stats(BrickId::UpProjection)
        .summary()
        .min_ns as f64;
    let ratio = four / one;
    assert!(
        (3.2..=4.8).contains(&ratio),
        "4x the iterations took {ratio:.2}x as long ({one} ns vs {four} ns)"
    );
}

#[test]
fn device_slices_sit_in_the_trace_in_dispatch_order() {
    let _g = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let spin = Spin::new();
    let prof = run(&spin, SyncMode::Deferred, 3, 20_000);
    let trace = prof
        .view()
        .trace_view()
        .map(|v| v.events)
        .expect("tracing is on");
    // Laid out on the timeline by start time, the slices must come in dispatch order.
    let mut device: Vec<_> = trace.iter().filter(|e| e.track == Track::Device).collect();
    device.sort_by_key(|e| e.start_ns);
    assert_eq!(device.len(), 9);
    let slack = prof.timeline().resolution_ns();
    for (i, w) in device.windows(2).enumerate() {
        assert!(
            w[0].start_ns + w[0].dur_ns <= w[1].start_ns + slack,
            "device slice {i} ends after slice {} starts: {:?} {:?}",
            i + 1,
            w[0],
            w[1]
        );
    }
    let order: Vec<u16> = device.iter().map(|e| e.slot).collect();
    let expected: Vec<u16> = (0..3).flat_map(|_| BRICKS.map(|b| b as u16)).collect();
    assert_eq!(order, expected, "dispatch order");
    // Re-anchored at each sync: a device slice starts after its host dispatch began.
    let mut host: Vec<_> = trace.iter().filter(|e| e.track == Track::Host).collect();
    host.sort_by_key(|e| e.start_ns);
    for (d, h) in device.iter().zip(&host) {
        assert!(
            d.start_ns + 50_000 >= h.start_ns,
            "device slice at {} ns precedes its dispatch at {} ns",
            d.start_ns,
            h.start_ns
        );
    }
}

#[global_allocator]
static GLOBAL: ThreadCounting = ThreadCounting;

#[test]
fn marking_allocates_nothing_on_our_side() {
    let _g = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let spin = Spin::new();
    for mode in [SyncMode::Deferred, SyncMode::PerLayer, SyncMode::Lagged] {
        let config = ProfilerConfig {
            layers: 2,
            sync_mode: mode,
            pending_capacity: 64, // the loop overflows it: flushes are exercised too
            trace_capacity: 256,
            ..ProfilerConfig::default()
        };
        let mut prof = BrickProfiler::with_timeline(config, spin.timeline()).unwrap();
        let mut counted = 0;
        for i in 0..200usize {
            counted += allocations_during(|| {
                prof.begin_layer(i % 2);
            });
            let t = prof.start_brick(BrickId::Activation);
            spin.launch(10);
            counted += allocations_during(|| {
                prof.stop_brick(t, 1);
                let t = prof.start_brick(BrickId::ResidualAdd);
                prof.stop_brick(t, 1);
                prof.end_layer();
            });
        }
        assert_eq!(counted, 0, "{mode}: {counted} allocations while marking");
        prof.finalize().unwrap();
        assert_eq!(
            prof.view().brick_stats(BrickId::Activation).summary().count,
            200,
            "{mode}"
        );
        assert_eq!(prof.view().counters.dropped, 0, "{mode}");
    }
}

#[test]
fn a_queue_without_profiling_is_refused_with_a_reason() {
    let _g = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let device = OpenClDevice::first().expect("an OpenCL device");
    let plain =
        opencl3::command_queue::CommandQueue::create_default_with_properties(&device.context, 0, 0)
            .expect("queue");
    let err = OpenClTimeline::new(&plain, 16).unwrap_err().to_string();
    assert!(err.contains("CL_QUEUE_PROFILING_ENABLE"), "{err}");
    let err = OpenClTimeline::new(&device.queue, 0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("pending capacity 0"), "{err}");
    let t = OpenClTimeline::new(&device.queue, 16).unwrap();
    assert_eq!(
        t.counts().capacity,
        34 + brickprof::model::Limit::PassesInFlight.max(),
        "2 * pending + 2 marker slots, and one per pass in flight"
    );
    assert!(t.resolution_ns() >= 1);
    assert_eq!(t.kind().name(), "opencl");
}
