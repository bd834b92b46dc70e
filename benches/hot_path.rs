//! Hot-path cost (spec/hot-path.md "Costs"): every figure is compared with a baseline measured
//! in the same run, because the machine is shared and noisy.
//!
//! - `baseline_rdtsc_pair_plus_stats`: two raw `rdtsc` reads, the tick->ns multiply-shift, and
//!   the same `BrickStats::record_nested` the profiler does, written by hand. What a profiler cannot
//!   beat; targets are ratios to it.
//! - `enabled_pair_enum` / `enabled_pair_dynamic`: `start_brick`+`stop_brick` in Immediate mode
//!   on the CPU timeline (recorded at once). Target <= 1.2x baseline.
//! - `deferred_record`: the same pair in Deferred mode (two marks + one push). Target <= 1.2x.
//! - `finalize_per_measurement`: resolving one pending measurement in `finalize`. Target <= 20 ns.
//! - `disabled_pair`: start+stop on a disabled profiler. Target <= 2 ns; `harness_floor` is
//!   the loop and `black_box` cost alone, for reference.

use std::hint::black_box;
use std::time::{Duration, Instant};

use brickprof::{
    stats::BrickStats, timeline::HostClock, BrickId, BrickProfiler, ProfilerConfig, SyncMode, Work,
};
use criterion::{criterion_group, criterion_main, Criterion};

#[inline(always)]
fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        HostClock::default().ticks()
    }
}

fn profiler(mode: SyncMode, capacity: usize) -> BrickProfiler {
    BrickProfiler::new(ProfilerConfig {
        layers: 4,
        sync_mode: mode,
        pending_capacity: capacity,
        ..ProfilerConfig::default()
    })
    .unwrap()
}

fn hot_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("hot_path");
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));

    // Baseline: the same work, written by hand.
    let clock = HostClock::default();
    let mut stats = BrickStats::default();
    g.bench_function("baseline_rdtsc_pair_plus_stats", |b| {
        b.iter(|| {
            let start = rdtsc();
            let end = rdtsc();
            let ns = clock.ticks_to_ns(start, end);
            stats.record_nested(ns, ns, ns, Work::elements(black_box(1)));
        })
    });
    black_box(&stats);

    let mut prof = profiler(SyncMode::Immediate, 1024);
    g.bench_function("enabled_pair_enum", |b| {
        b.iter(|| {
            let t = prof.start_brick(black_box(BrickId::QkvProjection));
            prof.stop_brick(t, black_box(1));
        })
    });

    let mut prof = profiler(SyncMode::Immediate, 1024);
    let handle = prof
        .register("custom_op", brickprof::BrickCategory::Other)
        .unwrap();
    g.bench_function("enabled_pair_dynamic", |b| {
        b.iter(|| {
            let t = prof.start_brick(black_box(handle));
            prof.stop_brick(t, black_box(1));
        })
    });

    // The harness floor: the same black_box traffic with no profiler call at all.
    g.bench_function("harness_floor", |b| {
        b.iter(|| {
            black_box(BrickId::QkvProjection);
            black_box(1u64);
        })
    });

    let mut prof = profiler(SyncMode::Immediate, 1024);
    prof.set_enabled(false);
    g.bench_function("disabled_pair", |b| {
        b.iter(|| {
            let t = prof.start_brick(black_box(BrickId::QkvProjection));
            prof.stop_brick(t, black_box(1));
        })
    });

    // Deferred: time batches that fit the pending buffer; finalize outside the timed region.
    const BATCH: u64 = 4096;
    let mut prof = profiler(SyncMode::Deferred, BATCH as usize);
    g.bench_function("deferred_record", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(BATCH);
                let t0 = Instant::now();
                for _ in 0..n {
                    let t = prof.start_brick(black_box(BrickId::QkvProjection));
                    prof.stop_brick(t, black_box(1));
                }
                total += t0.elapsed();
                prof.finalize().unwrap();
                left -= n;
            }
            total
        })
    });

    let mut prof = profiler(SyncMode::Deferred, BATCH as usize);
    g.bench_function("finalize_per_measurement", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(BATCH);
                for _ in 0..n {
                    let t = prof.start_brick(BrickId::QkvProjection);
                    prof.stop_brick(t, 1);
                }
                let t0 = Instant::now();
                prof.finalize().unwrap();
                total += t0.elapsed();
                left -= n;
            }
            total
        })
    });
    g.finish();
}

criterion_group!(benches, hot_path);
criterion_main!(benches);
