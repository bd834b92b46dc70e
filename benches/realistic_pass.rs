//! A realistic forward pass (spec/hot-path.md "Costs"): 32 and 128 layers, each a Llama block
//! of 14 brick calls over its 12 per-layer bricks (two norms, two residual adds), plus the
//! embedding, the final norm and the LM head; `begin_layer`/`end_layer` around each layer and
//! one `end_pass` per pass, so the resolve and aggregate stages are inside the timed region.
//!
//! The floor, measured in the same run on the same layout: two raw `rdtsc` reads per brick and
//! a per-(layer, brick) count/sum/min/max in one contiguous array. Every figure is a pass; the
//! ratio to the floor is the ratio per start/stop pair. Target: Deferred <= 1.3x the floor at
//! 32 and at 128 layers, with p50/p90/p99 per (layer, brick) kept.
//!
//! More references in the same run, to tell where brickprof's cost lies (spec/hot-path.md
//! "Costs"): the floor plus a naive 8 KiB histogram per cell; the floor's deferred form (pairs
//! buffered during the pass, the same four statistics updated in one loop at its end: what
//! deferring costs); and that deferred form recording brickprof's own `BrickStats` in
//! brickprof's cell order (what the statistics cost with no tokens, nesting or checks).

use std::hint::black_box;
use std::time::Duration;

use brickprof::{
    stats::BrickStats, timeline::HostClock, BrickId, BrickProfiler, ProfilerConfig, SyncMode, Work,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

use BrickId::*;

#[path = "common/block.rs"]
mod block;
use block::BLOCK;

#[inline(always)]
fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        brickprof::timeline::HostClock::default().ticks()
    }
}

/// The pass's bricks in call order, with their row (`layers` is the model row): embedding,
/// a Llama block per layer, final norm, LM head. Every floor walks this same layout.
#[inline(always)]
fn each_brick(layers: usize, mut brick: impl FnMut(usize, BrickId)) {
    brick(layers, Embedding);
    for layer in 0..layers {
        for b in BLOCK {
            brick(layer, b);
        }
    }
    brick(layers, RmsNorm);
    brick(layers, LmHead);
}

/// The floor's per-cell statistics.
#[derive(Clone, Copy)]
struct Cell {
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

/// The bucket of brickprof's log-linear histogram (spec/hot-path.md "Histogram": 16 linear
/// sub-buckets per power of two, exact below 32, 528 buckets), the same few instructions the
/// library runs (its function is internal).
#[inline(always)]
fn bucket_index(v: u64) -> usize {
    let e = 63 - (v | 16).leading_zeros();
    let s = e - 4;
    (((s as usize) << 4) + (v >> s) as usize).min(527)
}

struct Floor {
    cells: Vec<Cell>,
    /// With `Some`, the floor also counts each value in a naive 1024-bucket `u64` histogram
    /// per cell (8 KiB each), for reference.
    histograms: Option<Vec<Box<[u64; 1024]>>>,
}

impl Floor {
    fn new(layers: usize, histograms: bool) -> Self {
        let cells = (layers + 2) * BrickId::ALL.len();
        Floor {
            histograms: histograms.then(|| (0..cells).map(|_| Box::new([0u64; 1024])).collect()),
            cells: vec![
                Cell {
                    count: 0,
                    sum: 0,
                    min: u64::MAX,
                    max: 0
                };
                cells
            ],
        }
    }

    #[inline(always)]
    fn brick(&mut self, row: usize, brick: BrickId) {
        let start = rdtsc();
        black_box(brick);
        let ticks = rdtsc().wrapping_sub(start);
        let cell = row * BrickId::ALL.len() + brick as usize;
        if let Some(h) = self.histograms.as_mut() {
            h[cell][bucket_index(ticks)] += 1;
        }
        let c = &mut self.cells[cell];
        c.count += 1;
        c.sum += ticks;
        c.min = c.min.min(ticks);
        c.max = c.max.max(ticks);
    }

    fn pass(&mut self, layers: usize) {
        each_brick(layers, |row, b| self.brick(row, b));
    }
}

/// Clock-read pairs buffered during a pass: the same two `rdtsc` reads per brick as the floor,
/// each pair only written to a preallocated buffer (start, end, cell: 24 bytes), the cell's
/// flat index computed at the brick as brickprof computes it at `start_brick`
/// (`row * row_stride + slot * slot_stride`, so every layout pays the same arithmetic).
struct Pairs {
    marks: Vec<(u64, u64, u32)>,
    row_stride: usize,
    slot_stride: usize,
}

impl Pairs {
    fn new(layers: usize, row_stride: usize, slot_stride: usize) -> Self {
        Pairs {
            marks: Vec::with_capacity(layers * BLOCK.len() + 3),
            row_stride,
            slot_stride,
        }
    }

    #[inline(always)]
    fn brick(&mut self, row: usize, brick: BrickId) {
        let start = rdtsc();
        black_box(brick);
        let end = rdtsc();
        let cell = row * self.row_stride + brick as usize * self.slot_stride;
        // Within the reserved capacity: no reallocation.
        self.marks.push((start, end, cell as u32));
    }

    /// Mark one pass's bricks.
    fn mark_pass(&mut self, layers: usize) {
        each_brick(layers, |row, b| self.brick(row, b));
    }
}

/// The floor's deferred form: the pass's pairs buffered ([`Pairs`], the floor's row-major
/// cells), then one loop at the end of the pass updates the same count/sum/min/max cells. What
/// deferring costs by itself, with the least statistics, on this layout.
struct DeferredFloor {
    pairs: Pairs,
    floor: Floor,
}

impl DeferredFloor {
    fn new(layers: usize) -> Self {
        DeferredFloor {
            pairs: Pairs::new(layers, BrickId::ALL.len(), 1),
            floor: Floor::new(layers, false),
        }
    }

    fn pass(&mut self, layers: usize) {
        self.pairs.mark_pass(layers);
        for (start, end, cell) in self.pairs.marks.drain(..) {
            let ticks = end.wrapping_sub(start);
            let c = &mut self.floor.cells[cell as usize];
            c.count += 1;
            c.sum += ticks;
            c.min = c.min.min(ticks);
            c.max = c.max.max(ticks);
        }
    }
}

/// The deferred floor with brickprof's statistics: the same buffered pairs, resolved by the
/// leanest loop that records what a brickprof cell records (`BrickStats`: count, inclusive and
/// self totals, min, max, sum of squares, host total, work, histogram), in brickprof's cell
/// order (slot-major), newest first (children before parents), ticks converted to ns. No
/// tokens, no nesting, no checks: what the statistics cost by themselves.
struct DeferredStatsFloor {
    pairs: Pairs,
    clock: HostClock,
    stats: Vec<BrickStats>,
}

impl DeferredStatsFloor {
    fn new(layers: usize) -> Self {
        DeferredStatsFloor {
            pairs: Pairs::new(layers, 1, layers + 2),
            clock: HostClock::default(),
            stats: vec![BrickStats::default(); (layers + 2) * BrickId::ALL.len()],
        }
    }

    fn pass(&mut self, layers: usize) {
        self.pairs.mark_pass(layers);
        for &(start, end, cell) in self.pairs.marks.iter().rev() {
            let ns = self.clock.ticks_to_ns(start, end);
            self.stats[cell as usize].record_nested(ns, ns, ns, Work::elements(1));
        }
        self.pairs.marks.clear();
    }
}

fn brickprof_pass(prof: &mut BrickProfiler, layers: usize) {
    prof.begin_pass();
    block::llama_bricks(prof, layers);
    prof.end_pass(1).unwrap();
}

fn realistic(c: &mut Criterion) {
    let mut g = c.benchmark_group("realistic_pass");
    g.measurement_time(Duration::from_secs(4));
    g.warm_up_time(Duration::from_secs(1));
    for layers in [32usize, 128] {
        let pairs = layers * BLOCK.len() + 3;
        eprintln!("realistic_pass: {layers} layers = {pairs} start/stop pairs per pass");
        let mut floor = Floor::new(layers, false);
        g.bench_function(
            BenchmarkId::new("floor_rdtsc_count_sum_min_max", layers),
            |b| b.iter(|| floor.pass(layers)),
        );
        black_box(&floor.cells);
        let mut deferred_floor = DeferredFloor::new(layers);
        g.bench_function(
            BenchmarkId::new("floor_deferred_count_sum_min_max", layers),
            |b| b.iter(|| deferred_floor.pass(layers)),
        );
        black_box(&deferred_floor.floor.cells);
        let mut stats_floor = DeferredStatsFloor::new(layers);
        g.bench_function(BenchmarkId::new("floor_deferred_brickstats", layers), |b| {
            b.iter(|| stats_floor.pass(layers))
        });
        black_box(&stats_floor.stats);
        let mut floor = Floor::new(layers, true);
        g.bench_function(
            BenchmarkId::new("floor_plus_naive_8k_histogram", layers),
            |b| b.iter(|| floor.pass(layers)),
        );
        black_box(&floor.histograms);
        for mode in [
            SyncMode::Deferred,
            SyncMode::PerLayer,
            SyncMode::Immediate,
            SyncMode::None,
        ] {
            let mut prof = BrickProfiler::new(ProfilerConfig {
                layers,
                sync_mode: mode,
                pending_capacity: pairs,
                ..ProfilerConfig::default()
            })
            .unwrap();
            g.bench_function(BenchmarkId::new(format!("brickprof_{mode}"), layers), |b| {
                b.iter(|| brickprof_pass(&mut prof, layers))
            });
            black_box(prof.view().brick_stats(QkvProjection).percentile_ns(0.99));
        }
        let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(layers)).unwrap();
        prof.set_enabled(false);
        g.bench_function(BenchmarkId::new("brickprof_disabled", layers), |b| {
            b.iter(|| brickprof_pass(&mut prof, layers))
        });
    }
    g.finish();
}

criterion_group!(benches, realistic);
criterion_main!(benches);
