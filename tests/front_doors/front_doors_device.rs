//! spec/front-doors.md "Device timelines": the thread-local front door (`brick!`, `layer`,
//! `end_pass`) and `BrickLayer`'s tracing spans on a device timeline give the kernels' device
//! durations, not their launch times; profiles and traces name the timeline.
//!
//! The simulated device (exact virtual time, 5 µs per launch) always runs; with the `opencl`
//! feature the same is checked on real kernels through PoCL.
//!
//! The thread-local front door is process-global state: every test takes `SERIAL` and starts
//! from `thread::reset()`.
#![cfg(feature = "tracing")]

use brickprof::profile::RowKey;
use brickprof::tracing_layer::{BrickLayer, SpanMap};
use brickprof::{
    brick, thread as bp,
    timeline::{BoxedTimeline, SimDevice, TimelineKind},
    BrickId, Error, Profile, ProfilerConfig,
};
use tracing::trace_span;
use tracing_subscriber::layer::SubscriberExt;

// One lock for the front door in this test binary (tests/library.rs).
use crate::SERIAL;

fn fresh(layers: usize, trace_capacity: usize) -> Serial {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    bp::reset();
    bp::set_timeline_factory(None);
    bp::configure(ProfilerConfig {
        layers,
        trace_capacity,
        ..ProfilerConfig::default()
    })
    .unwrap();
    bp::set_enabled(true);
    Serial(g)
}

/// Holds the lock for one test; detaches this thread's profiler before releasing it.
struct Serial(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

impl Drop for Serial {
    fn drop(&mut self) {
        bp::reset();
        bp::set_timeline_factory(None);
        bp::set_enabled(false);
    }
}

/// What launching a kernel costs the host on the simulated device.
const LAUNCH_NS: u64 = 5_000;
/// Untimed work queued first in each pass, so the stream runs behind the host as a GPU's does.
const BACKLOG_NS: u64 = 1_000_000;
/// The timed kernels of one layer.
const KERNELS: [(BrickId, u64); 3] = [
    (BrickId::RmsNorm, 40_000),
    (BrickId::QkvProjection, 250_000),
    (BrickId::LmHead, 130_000),
];

fn stats(p: &Profile, brick: BrickId) -> &brickprof::stats::BrickStats {
    &p.brick(&brick.to_string())
        .unwrap_or_else(|| panic!("no brick {brick}"))
        .stats
}

thread_local! {
    /// The engine's stream on this thread.
    static DEVICE: SimDevice = SimDevice::new(LAUNCH_NS);
}

fn launch(ns: u64) {
    DEVICE.with(|d| d.launch(ns));
}

#[test]
fn brick_guards_on_a_sim_thread_give_the_kernels_device_durations() {
    let _s = fresh(2, 0);
    bp::init_thread(Some(BoxedTimeline::new(DEVICE.with(|d| d.timeline(1024))))).unwrap();
    assert_eq!(bp::init_thread(None).ok(), Some(TimelineKind::Sim));
    let passes = 4;
    for _ in 0..passes {
        launch(BACKLOG_NS);
        for layer in 0..2 {
            let _l = bp::layer(layer);
            for (brick, ns) in KERNELS {
                let _g = brick!(brick, 1);
                launch(ns);
            }
        }
        bp::end_pass(1).unwrap();
    }
    let p = bp::collect().unwrap();
    assert_eq!(
        p.meta.timeline,
        TimelineKind::Sim,
        "the profile names its timeline"
    );
    for (brick, ns) in KERNELS {
        let s = stats(&p, brick);
        assert_eq!(s.summary().count, 2 * passes);
        // Before device timelines reached the front doors, a guard measured the 5 µs launch.
        assert_eq!(
            (s.summary().min_ns, s.summary().max_ns),
            (ns, ns),
            "{brick}: the kernel's time"
        );
        assert_eq!(
            s.summary().host_total_ns as f64 / s.summary().count as f64,
            LAUNCH_NS as f64,
            "{brick}: host dispatch"
        );
    }
    assert_eq!(p.meta.counters.syncs, passes, "Deferred: one sync per pass");
    let launches = DEVICE.with(|d| d.counts().launches);
    assert_eq!(launches, passes * 7);
}

#[test]
fn tracing_spans_on_a_sim_thread_give_the_kernels_device_durations() {
    let _s = fresh(2, 0);
    let layer = BrickLayer::new(SpanMap::default())
        .with_timeline(|| Some(BoxedTimeline::new(DEVICE.with(|d| d.timeline(1024)))));
    let subscriber = tracing_subscriber::registry().with(layer);
    let attn: Vec<_> = tracing::subscriber::with_default(subscriber, || {
        let attn: Vec<_> = (0..2).map(|_| trace_span!("attn")).collect(); // layers 0, 1
        for _ in 0..3 {
            let _pass = trace_span!("model").entered();
            launch(BACKLOG_NS);
            for span in &attn {
                let _a = span.enter();
                trace_span!("rms-norm").in_scope(|| launch(40_000));
                trace_span!("rope").in_scope(|| launch(70_000));
                launch(10_000); // the attention span's own kernel
            }
        } // each pass span's exit ends the pass: one sync
        attn
    });
    drop(attn);
    assert_eq!(bp::init_thread(None).ok(), Some(TimelineKind::Sim));
    let p = bp::collect().unwrap();
    assert_eq!(p.meta.timeline, TimelineKind::Sim);
    assert_eq!(p.meta.counters.passes, 3);
    assert_eq!(p.meta.counters.syncs, 3);
    let norm = stats(&p, BrickId::RmsNorm);
    assert_eq!(
        (
            norm.summary().count,
            norm.summary().min_ns,
            norm.summary().max_ns
        ),
        (6, 40_000, 40_000)
    );
    let rope = stats(&p, BrickId::RopeEmbedding);
    assert_eq!(
        (rope.summary().min_ns, rope.summary().max_ns),
        (70_000, 70_000)
    );
    assert_eq!(
        rope.summary().host_total_ns as f64 / rope.summary().count as f64,
        LAUNCH_NS as f64,
        "the launch, on the host"
    );
    let attention = &p.brick("Attention").unwrap();
    // Inclusive: its children's kernels and its own, on the device.
    assert_eq!(attention.stats.summary().min_ns, 120_000);
    let rows: Vec<RowKey> = attention.rows.iter().map(|r| r.row).collect();
    assert_eq!(rows, [RowKey::Layer(0), RowKey::Layer(1)]);
}

#[test]
fn a_cpu_thread_beside_it_still_times_the_host_and_the_trace_names_each_timeline() {
    let _s = fresh(1, 256);
    // One thread on the device stream, one on the host clock: a factory that says `None`.
    bp::set_timeline_factory(Some(Box::new(|| {
        let name = std::thread::current().name().map(str::to_string);
        (name.as_deref() == Some("gpu"))
            .then(|| BoxedTimeline::new(DEVICE.with(|d| d.timeline(64))))
    })));
    let on = |name: &str| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(|| {
                for _ in 0..2 {
                    launch(BACKLOG_NS);
                    {
                        let _l = bp::layer(0);
                        let _g = brick!(BrickId::QkvProjection);
                        launch(250_000);
                    }
                    bp::end_pass(1).unwrap();
                }
                bp::init_thread(None).ok()
            })
            .unwrap()
            .join()
            .unwrap()
    };
    assert_eq!(on("gpu"), Some(TimelineKind::Sim));
    assert_eq!(on("cpu"), Some(TimelineKind::Cpu));
    // Different timelines do not merge into one profile...
    assert!(matches!(bp::collect(), Err(Error::Merge(_))));
    // ... but one trace holds both threads, each named with its timeline.
    let trace = bp::collect_trace().expect("both threads traced");
    let json: serde_json::Value = serde_json::from_str(&trace).unwrap();
    assert_eq!(json["otherData"]["timeline"], "mixed");
    let events = json["traceEvents"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(names.contains(&"gpu (sim timeline)"), "{names:?}");
    assert!(names.contains(&"cpu (cpu timeline)"), "{names:?}");
    let device_slices: Vec<f64> = events
        .iter()
        .filter(|e| e["args"]["clock"] == "device" && e["name"] == "QkvProjection")
        .filter_map(|e| e["dur"].as_f64())
        .collect();
    assert_eq!(
        device_slices,
        [250.0, 250.0],
        "device slices in µs: the kernel"
    );
}

#[test]
fn a_thread_that_has_a_profiler_cannot_be_given_a_timeline() {
    let _s = fresh(1, 0);
    bp::init_thread(None).unwrap();
    let err = bp::init_thread(Some(BoxedTimeline::new(SimDevice::new(0).timeline(8)))).unwrap_err();
    assert!(
        matches!(&err, Error::ThreadHasProfiler { timeline } if timeline == "cpu"),
        "{err}"
    );
    assert!(err.to_string().contains("reset"), "{err}");
    bp::reset();
    bp::init_thread(Some(BoxedTimeline::new(SimDevice::new(0).timeline(8)))).unwrap();
    assert_eq!(bp::init_thread(None).ok(), Some(TimelineKind::Sim));
}

#[cfg(feature = "opencl")]
mod opencl {
    //! The same through the OpenCL timeline on a real asynchronous driver (PoCL on CI).

    use std::ptr;

    use brickprof::{
        timeline::{OpenClDevice, OpenClTimeline},
        BrickProfiler,
    };
    use opencl3::kernel::Kernel;
    use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
    use opencl3::program::Program;

    use super::*;

    /// A kernel whose duration is proportional to `iters` (as in tests/opencl.rs).
    const SPIN_SOURCE: &str = r#"
    __kernel void spin(__global float* out, int iters) {
        int i = get_global_id(0);
        float x = (float)i * 0.001f;
        for (int k = 0; k < iters; ++k) { x = x * 0.99991f + 0.37f; }
        out[i] = x;
    }
    "#;
    const ITEMS: usize = 64;
    const PASSES: usize = 15;

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
            let program = Program::create_and_build_from_source(&device.context, SPIN_SOURCE, "")
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

        /// Enqueue one kernel of `iters` iterations (does not wait).
        fn launch(&self, iters: i32) {
            let (global, local) = ([ITEMS], [ITEMS]);
            // SAFETY: argument types match the kernel's signature; the buffer outlives the
            // queue's use of it (every pass ends with a sync or a finish).
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

        /// The kernel's device time (min over passes) by the explicit API, and iterations for
        /// about `target_ms`.
        fn calibrate(&self, target_ms: f64) -> (i32, f64) {
            let timeline = OpenClTimeline::new(&self.device.queue, 256).expect("timeline");
            let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), timeline)
                .expect("profiler");
            let mut iters = 2_000;
            for round in 0..2 {
                prof.reset();
                for _ in 0..PASSES {
                    let t = prof.start_brick(BrickId::Sampling);
                    self.launch(iters);
                    prof.stop_brick(t, 1);
                    prof.end_pass(1).expect("resolve");
                }
                let ns = prof
                    .view()
                    .brick_stats(BrickId::Sampling)
                    .summary()
                    .min_ns
                    .max(1) as f64;
                if round == 0 {
                    iters = (f64::from(iters) * target_ms * 1e6 / ns).clamp(1e3, 5e7) as i32;
                } else {
                    return (iters, ns);
                }
            }
            unreachable!()
        }
    }

    fn close(front_door: f64, explicit: f64, what: &str) {
        // As tests/opencl.rs: the minimum over passes, 15 % plus 50 µs for a busy machine.
        let noise = 0.15 * explicit.max(front_door) + 50_000.0;
        assert!(
            (front_door - explicit).abs() <= noise,
            "{what}: {front_door} ns vs the explicit API's {explicit} ns (allowed {noise} ns)"
        );
        assert!(
            front_door > 1e5,
            "{what}: {front_door} ns is not the kernel's time"
        );
    }

    thread_local! {
        /// The engine's queue and kernel on this thread.
        static SPIN: Spin = Spin::new();
    }

    #[test]
    fn guards_and_spans_on_an_opencl_thread_give_the_kernels_device_durations() {
        let _s = fresh(1, 0);
        SPIN.with(on_opencl);
    }

    fn on_opencl(spin: &Spin) {
        let (iters, kernel_ns) = spin.calibrate(0.4);

        // brick! guards on a thread given the OpenCL timeline.
        bp::init_thread(Some(BoxedTimeline::new(
            OpenClTimeline::new(&spin.device.queue, 256).unwrap(),
        )))
        .unwrap();
        for _ in 0..PASSES {
            {
                let _l = bp::layer(0);
                let _g = brick!(BrickId::QkvProjection);
                spin.launch(iters);
            }
            bp::end_pass(1).unwrap();
        }
        let p = bp::collect().unwrap();
        assert_eq!(p.meta.timeline, TimelineKind::OpenCl);
        assert_eq!(p.meta.counters.syncs, PASSES as u64);
        let guard_ns = stats(&p, BrickId::QkvProjection).summary().min_ns as f64;
        close(guard_ns, kernel_ns, "brick! guard");

        // BrickLayer spans, the thread's timeline made by the layer's factory.
        bp::reset();
        let layer = BrickLayer::new(SpanMap::default()).with_timeline(|| {
            SPIN.with(|s| {
                OpenClTimeline::new(&s.device.queue, 256)
                    .ok()
                    .map(BoxedTimeline::new)
            })
        });
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let attn = trace_span!("attn");
            for _ in 0..PASSES {
                let _pass = trace_span!("model").entered();
                let _a = attn.enter();
                trace_span!("rope").in_scope(|| spin.launch(iters));
            }
        });
        let p = bp::collect().unwrap();
        assert_eq!(p.meta.timeline, TimelineKind::OpenCl);
        let span_ns = stats(&p, BrickId::RopeEmbedding).summary().min_ns as f64;
        close(span_ns, kernel_ns, "tracing span");

        // The contrast: the same guard on the host clock measures the enqueue.
        bp::reset();
        for _ in 0..PASSES {
            {
                let _g = brick!(BrickId::QkvProjection);
                spin.launch(iters);
            }
            spin.device.queue.finish().unwrap();
            bp::end_pass(1).unwrap();
        }
        let p = bp::collect().unwrap();
        assert_eq!(p.meta.timeline, TimelineKind::Cpu);
        let host_ns = stats(&p, BrickId::QkvProjection).summary().min_ns as f64;
        assert!(
            host_ns < 0.5 * kernel_ns,
            "host clock: {host_ns} ns (launch) vs the kernel's {kernel_ns} ns"
        );
    }
}
