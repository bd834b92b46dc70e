//! Front-door costs (spec/front-doors.md "Costs"), each against a floor measured in the same
//! run, because the machine is shared and noisy.
//!
//! - `explicit_pair`: `start_brick`+`stop_brick` on an engine-owned profiler (Immediate mode,
//!   CPU timeline). The floor for the guards.
//! - `guard_enabled`: `brick!(...)` dropped at once on the thread-local profiler, same
//!   configuration. Target <= 1.2x `explicit_pair`.
//! - `guard_disabled`: the same guard while measuring is off globally. Target <= 2 ns.
//! - `explicit_pair_disabled`: the explicit pair on a disabled profiler, for reference.
//! - `harness_floor`: the loop and `black_box` traffic alone, for reference.

use std::hint::black_box;
use std::time::Duration;

use brickprof::{brick, thread as bp, BrickId, BrickProfiler, ProfilerConfig, SyncMode};
use criterion::{criterion_group, criterion_main, Criterion};

fn config() -> ProfilerConfig {
    ProfilerConfig {
        layers: 4,
        sync_mode: SyncMode::Immediate,
        ..ProfilerConfig::default()
    }
}

fn guards(c: &mut Criterion) {
    let mut g = c.benchmark_group("front_doors");
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));

    g.bench_function("harness_floor", |b| {
        b.iter(|| {
            black_box(BrickId::QkvProjection);
        })
    });

    let mut prof = BrickProfiler::new(config()).unwrap();
    prof.begin_layer(1);
    g.bench_function("explicit_pair", |b| {
        b.iter(|| {
            let t = prof.start_brick(black_box(BrickId::QkvProjection));
            prof.stop_brick(t, black_box(1));
        })
    });
    black_box(
        prof.view()
            .brick_stats(BrickId::QkvProjection)
            .summary()
            .count,
    );

    prof.set_enabled(false);
    g.bench_function("explicit_pair_disabled", |b| {
        b.iter(|| {
            let t = prof.start_brick(black_box(BrickId::QkvProjection));
            prof.stop_brick(t, black_box(1));
        })
    });

    bp::configure(config()).unwrap();
    bp::init_thread(None).unwrap();
    bp::set_enabled(true);
    let layer = bp::layer(1);
    g.bench_function("guard_enabled", |b| {
        b.iter(|| {
            let _g = brick!(black_box(BrickId::QkvProjection), black_box(1));
        })
    });
    drop(layer);

    bp::set_enabled(false);
    g.bench_function("guard_disabled", |b| {
        b.iter(|| {
            let _g = brick!(black_box(BrickId::QkvProjection), black_box(1));
        })
    });
    g.finish();
}

criterion_group!(benches, guards);
criterion_main!(benches);
