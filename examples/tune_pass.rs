//! Tuning aid (not a benchmark): interleaved min/median pass times.
use brickprof::{BrickId, BrickProfiler, ProfilerConfig, SyncMode};
use std::hint::black_box;
use strum::EnumCount;
use BrickId::*;

/// One Llama block, in call order.
const BLOCK: [BrickId; 14] = [
    RmsNorm,
    QkvProjection,
    RopeEmbedding,
    AttentionScore,
    AttentionSoftmax,
    AttentionOutput,
    OutputProjection,
    ResidualAdd,
    RmsNorm,
    GateProjection,
    UpProjection,
    Activation,
    DownProjection,
    ResidualAdd,
];

#[inline(always)]
fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        brickprof::HostClock::new().ticks()
    }
}

/// The floor's per-cell statistics.
#[derive(Clone, Copy)]
struct Cell {
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

struct Floor {
    cells: Vec<Cell>,
    /// With `Some`, the floor also counts each value in a naive 1024-bucket `u64` histogram
    /// per cell (8 KiB each), for reference.
    histograms: Option<Vec<Box<[u64; 1024]>>>,
}

impl Floor {
    fn new(layers: usize, histograms: bool) -> Self {
        let cells = (layers + 2) * BrickId::COUNT;
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
        let cell = row * BrickId::COUNT + brick as usize;
        if let Some(h) = self.histograms.as_mut() {
            h[cell][brickprof::histogram::bucket_index(ticks)] += 1;
        }
        let c = &mut self.cells[cell];
        c.count += 1;
        c.sum += ticks;
        c.min = c.min.min(ticks);
        c.max = c.max.max(ticks);
    }

    fn pass(&mut self, layers: usize) {
        self.brick(layers, Embedding);
        for layer in 0..layers {
            for b in BLOCK {
                self.brick(layer, b);
            }
        }
        self.brick(layers, RmsNorm);
        self.brick(layers, LmHead);
    }
}

fn brickprof_pass(prof: &mut BrickProfiler, layers: usize) {
    prof.begin_pass();
    let t = prof.start_brick(Embedding);
    black_box(Embedding);
    prof.stop_brick(t, 1);
    for layer in 0..layers {
        prof.begin_layer(layer);
        for b in BLOCK {
            let t = prof.start_brick(b);
            black_box(b);
            prof.stop_brick(t, 1);
        }
        prof.end_layer();
    }
    let t = prof.start_brick(RmsNorm);
    black_box(RmsNorm);
    prof.stop_brick(t, 1);
    let t = prof.start_brick(LmHead);
    black_box(LmHead);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
}

fn main() {
    if std::env::var("ONLY").is_ok() {
        let layers = 128;
        let mut p = BrickProfiler::new(ProfilerConfig {
            layers,
            pending_capacity: 2000,
            ..Default::default()
        })
        .unwrap();
        for _ in 0..200000 {
            brickprof_pass(&mut p, layers);
        }
        black_box(p.brick_stats(QkvProjection).count());
        return;
    }
    for layers in [32usize, 128] {
        let pairs = (layers * BLOCK.len() + 3) as f64;
        let mut f0 = Floor::new(layers, false);
        let mut f1 = Floor::new(layers, true);
        let mut profs: Vec<(String, BrickProfiler)> = [
            SyncMode::Deferred,
            SyncMode::PerLayer,
            SyncMode::Immediate,
            SyncMode::None,
        ]
        .into_iter()
        .map(|m| {
            (
                m.to_string(),
                BrickProfiler::new(ProfilerConfig {
                    layers,
                    sync_mode: m,
                    pending_capacity: pairs as usize,
                    ..Default::default()
                })
                .unwrap(),
            )
        })
        .collect();
        let mut dis = BrickProfiler::new(ProfilerConfig::with_layers(layers)).unwrap();
        dis.disable();
        profs.push(("disabled".into(), dis));
        let n = 3000;
        let mut times: Vec<Vec<u64>> = vec![Vec::with_capacity(n); 2 + profs.len()];
        for _ in 0..n {
            let t = std::time::Instant::now();
            f0.pass(layers);
            times[0].push(t.elapsed().as_nanos() as u64);
            let t = std::time::Instant::now();
            f1.pass(layers);
            times[1].push(t.elapsed().as_nanos() as u64);
            for (i, (_, p)) in profs.iter_mut().enumerate() {
                let t = std::time::Instant::now();
                brickprof_pass(p, layers);
                times[2 + i].push(t.elapsed().as_nanos() as u64);
            }
        }
        let mut names = vec!["floor".to_string(), "floor+hist8k".to_string()];
        names.extend(profs.iter().map(|p| p.0.clone()));
        let mins: Vec<u64> = times
            .iter_mut()
            .map(|v| {
                v.sort_unstable();
                v[v.len() / 10]
            })
            .collect();
        for (name, m) in names.iter().zip(&mins) {
            println!(
                "{layers:>4} layers {name:>14}: p10 {:>7.2} ns/pair  ratio {:.2}",
                *m as f64 / pairs,
                *m as f64 / mins[0] as f64
            );
        }
    }
}
