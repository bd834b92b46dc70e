//! The hot path against the previous release, interleaved in one process (spec/hot-path.md
//! "Costs"): both libraries are linked into this binary (`new` is this checkout, `prev` the
//! release checked out by `run.sh`), and every round measures, in an order that alternates
//! from round to round:
//!
//! - `floor`: two raw `rdtsc` reads per brick and a per-(layer, brick) count/sum/min/max in
//!   one contiguous array, on the realistic layout (as `benches/realistic_pass.rs`);
//! - `prev`/`new` `Deferred`: the realistic pass (embedding, a 14-call Llama block per layer,
//!   final norm, LM head; `begin_layer`/`end_layer`, one `begin_pass`/`end_pass`, resolve and
//!   aggregate included), per start/stop pair;
//! - `prev`/`new` disabled pass: the same pass on a disabled profiler, per pair;
//! - `loop floor`: the tight loop's `black_box` traffic alone;
//! - `prev`/`new` disabled pair: `start_brick`+`stop_brick` on a disabled profiler in a tight
//!   loop (as `benches/hot_path.rs` `disabled_pair`), per pair.
//!
//! Each round's figure is the lowest mean of five sub-samples taking about `--sample-ms`
//! together; the summary gives, per variant, the median over rounds and the range, in ns per
//! pair and as a ratio to the floor of the same round. Run it several times (`run.sh` does) and report the spread across runs.
//!
//! Two more modes tell where a difference lies:
//! - `--split 1`: TSC ticks per pair spent marking (`begin_pass` up to `end_pass`) and in
//!   `end_pass` (resolve and aggregate), apart, each library's passes interleaved;
//! - `--instructions N`: no timing, `N` passes of each; under `valgrind --tool=callgrind` the
//!   inclusive instruction count of each `passes`/`pair_loop` function is repeatable whatever
//!   the machine's load (e.g. `--toggle-collect='brickprof_cross_version::new_lib::passes'`).
//!
//! Usage: `brickprof-cross-version [--rounds N] [--sample-ms MS] [--layers 32,128]
//! [--split 1] [--instructions N]`

use std::hint::black_box;
use std::time::Instant;

#[inline(always)]
fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        new::HostClock::default().ticks()
    }
}

/// The same harness around each library: the realistic pass and the tight disabled loop.
macro_rules! harness {
    ($module:ident, $lib:ident) => {
        mod $module {
            use std::hint::black_box;

            use $lib::BrickId::{self, *};
            use $lib::{BrickProfiler, ProfilerConfig, SyncMode};

            /// One Llama block, in call order.
            pub const BLOCK: [BrickId; 14] = [
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

            pub fn pairs(layers: usize) -> usize {
                layers * BLOCK.len() + 3
            }

            /// A `Deferred` profiler whose pending buffer holds one pass.
            pub fn deferred(layers: usize) -> BrickProfiler {
                BrickProfiler::new(ProfilerConfig {
                    layers,
                    sync_mode: SyncMode::Deferred,
                    pending_capacity: pairs(layers),
                    ..ProfilerConfig::default()
                })
                .unwrap()
            }

            /// A disabled profiler (the default configuration, measuring off). Through the
            /// configuration, which both releases read the same way (`disable` became
            /// `set_enabled(false)` in 0.4.0).
            pub fn disabled(layers: usize) -> BrickProfiler {
                BrickProfiler::new(ProfilerConfig {
                    enabled: false,
                    ..ProfilerConfig::with_layers(layers)
                })
                .unwrap()
            }

            /// One realistic pass.
            #[inline(always)]
            fn pass(prof: &mut BrickProfiler, layers: usize) {
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
            }

            /// `n` realistic passes.
            #[inline(never)]
            pub fn passes(prof: &mut BrickProfiler, layers: usize, n: u64) {
                for _ in 0..n {
                    pass(prof, layers);
                    prof.end_pass(1).unwrap();
                }
            }

            /// `n` realistic passes, returning the ticks spent marking (`begin_pass` up to
            /// `end_pass`) and in `end_pass` (resolve and aggregate), apart.
            #[inline(never)]
            pub fn split_passes(prof: &mut BrickProfiler, layers: usize, n: u64) -> (u64, u64) {
                let (mut mark, mut end) = (0, 0);
                for _ in 0..n {
                    let t0 = super::rdtsc();
                    pass(prof, layers);
                    let t1 = super::rdtsc();
                    prof.end_pass(1).unwrap();
                    let t2 = super::rdtsc();
                    mark += t1 - t0;
                    end += t2 - t1;
                }
                (mark, end)
            }

            /// `n` start/stop pairs in a tight loop.
            #[inline(never)]
            pub fn pair_loop(prof: &mut BrickProfiler, n: u64) {
                for _ in 0..n {
                    let t = prof.start_brick(black_box(QkvProjection));
                    prof.stop_brick(t, black_box(1));
                }
            }

            /// What the profiler counted for a brick (so nothing is optimised away).
            pub fn count(prof: &BrickProfiler) -> u64 {
                prof.view().brick_stats(QkvProjection).count()
            }
        }
    };
}

harness!(prev_lib, prev);
harness!(new_lib, new);

/// The floor's per-cell statistics.
#[derive(Clone, Copy)]
struct Cell {
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
}

/// Two `rdtsc` reads per brick and count/sum/min/max per (layer, brick), on the same layout.
struct Floor {
    cells: Vec<Cell>,
}

impl Floor {
    fn new(layers: usize) -> Self {
        let empty = Cell {
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        };
        Floor {
            cells: vec![empty; (layers + 2) * new::BrickId::ALL.len()],
        }
    }

    #[inline(always)]
    fn brick(&mut self, row: usize, brick: new::BrickId) {
        let start = rdtsc();
        black_box(brick);
        let ticks = rdtsc().wrapping_sub(start);
        let c = &mut self.cells[row * new::BrickId::ALL.len() + brick as usize];
        c.count += 1;
        c.sum += ticks;
        c.min = c.min.min(ticks);
        c.max = c.max.max(ticks);
    }

    #[inline(never)]
    fn passes(&mut self, layers: usize, n: u64) {
        for _ in 0..n {
            self.brick(layers, new::BrickId::Embedding);
            for layer in 0..layers {
                for b in new_lib::BLOCK {
                    self.brick(layer, b);
                }
            }
            self.brick(layers, new::BrickId::RmsNorm);
            self.brick(layers, new::BrickId::LmHead);
        }
    }
}

/// The tight loop's traffic alone.
#[inline(never)]
fn loop_floor(n: u64) {
    for _ in 0..n {
        black_box(new::BrickId::QkvProjection);
        black_box(1u64);
    }
}

/// Sub-samples per sample: a sample's figure is the lowest of their means, so a burst of
/// another process's work on a shared machine does not count against one variant only.
const SUB_SAMPLES: u32 = 5;

/// Ns per unit of `run(batch)` (`units` units per batch): the lowest mean over
/// [`SUB_SAMPLES`] sub-samples taking about `sample_ms` together.
fn sample(sample_ms: u64, batch: u64, units: u64, mut run: impl FnMut(u64)) -> f64 {
    let budget = std::time::Duration::from_millis(sample_ms) / SUB_SAMPLES;
    let mut best = f64::INFINITY;
    for _ in 0..SUB_SAMPLES {
        let t0 = Instant::now();
        let mut done = 0u64;
        while t0.elapsed() < budget {
            run(batch);
            done += batch;
        }
        best = best.min(t0.elapsed().as_nanos() as f64 / (done * units) as f64);
    }
    best
}

struct Args {
    /// `Some(n)`: no timing; run `n` passes of each library once (for an instruction counter
    /// such as `valgrind --tool=callgrind`, which is repeatable whatever the machine's load).
    instructions: Option<u64>,
    /// Time marking and `end_pass` apart (`--split 1`).
    split: bool,
    rounds: usize,
    sample_ms: u64,
    layers: Vec<usize>,
}

fn args() -> Args {
    let mut a = Args {
        instructions: None,
        split: false,
        rounds: 15,
        sample_ms: 20,
        layers: vec![32, 128],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--instructions" => a.instructions = Some(value.parse().expect("--instructions N")),
            "--split" => a.split = value == "1",
            "--rounds" => a.rounds = value.parse().expect("--rounds N"),
            "--sample-ms" => a.sample_ms = value.parse().expect("--sample-ms MS"),
            "--layers" => {
                a.layers = value
                    .split(',')
                    .map(|l| l.parse().expect("--layers 32,128"))
                    .collect()
            }
            _ => panic!("unknown flag {flag}"),
        }
    }
    a
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn summary(name: &str, unit: &str, v: &[f64]) {
    let mut s = v.to_vec();
    let m = median(&mut s);
    println!(
        "  {name:<28} {m:7.3}{unit}  ({:.3}-{:.3})",
        s[0],
        s[s.len() - 1]
    );
}

/// `n` passes and `n` passes' worth of disabled pairs of each library, untimed: under
/// callgrind, each `passes`/`pair_loop` function's inclusive count over `n` is its cost.
fn count_instructions(layers: &[usize], n: u64) {
    for &layers in layers {
        let pairs = new_lib::pairs(layers) as u64;
        let mut floor = Floor::new(layers);
        floor.passes(layers, n);
        black_box(&floor.cells);
        let (mut p, mut q) = (prev_lib::deferred(layers), new_lib::deferred(layers));
        prev_lib::passes(&mut p, layers, n);
        new_lib::passes(&mut q, layers, n);
        let (mut p, mut q) = (prev_lib::disabled(layers), new_lib::disabled(layers));
        prev_lib::passes(&mut p, layers, n);
        new_lib::passes(&mut q, layers, n);
        prev_lib::pair_loop(&mut p, n * pairs);
        new_lib::pair_loop(&mut q, n * pairs);
    }
}

/// Where a Deferred pass's time goes, per library: ticks per pair marking and in `end_pass`,
/// the median over `rounds` rounds of `passes` passes each, interleaved.
fn split(layers: &[usize], rounds: usize) {
    for &layers in layers {
        let pairs = new_lib::pairs(layers) as f64;
        let (mut p, mut q) = (prev_lib::deferred(layers), new_lib::deferred(layers));
        let (mut pm, mut pe, mut qm, mut qe) = (vec![], vec![], vec![], vec![]);
        for round in 0..=rounds {
            let (a, b) = prev_lib::split_passes(&mut p, layers, 200);
            let (c, d) = new_lib::split_passes(&mut q, layers, 200);
            if round > 0 {
                pm.push(a as f64 / 200.0 / pairs);
                pe.push(b as f64 / 200.0 / pairs);
                qm.push(c as f64 / 200.0 / pairs);
                qe.push(d as f64 / 200.0 / pairs);
            }
        }
        println!("{layers} layers, TSC ticks per pair: median over rounds (range)");
        summary("prev marking", " t", &pm);
        summary("new marking", " t", &qm);
        summary("prev end_pass", " t", &pe);
        summary("new end_pass", " t", &qe);
    }
}

fn main() {
    let a = args();
    if a.split {
        return split(&a.layers, a.rounds);
    }
    if let Some(n) = a.instructions {
        return count_instructions(&a.layers, n);
    }
    println!(
        "interleaved: {} rounds, {} ms per sample; prev = the release in prev/, new = this checkout",
        a.rounds, a.sample_ms
    );
    let loop_n = 100_000;
    for &layers in &a.layers {
        let pairs = new_lib::pairs(layers) as u64;
        let mut floor = Floor::new(layers);
        let mut prev_on = prev_lib::deferred(layers);
        let mut new_on = new_lib::deferred(layers);
        let mut prev_off = prev_lib::disabled(layers);
        let mut new_off = new_lib::disabled(layers);
        // name, per-round ns per pair
        let mut rows: Vec<(&str, Vec<f64>)> = [
            "floor",
            "prev Deferred",
            "new Deferred",
            "prev disabled pass",
            "new disabled pass",
            "loop floor",
            "prev disabled pair",
            "new disabled pair",
        ]
        .iter()
        .map(|n| (*n, Vec::new()))
        .collect();
        // One warm-up round, not kept.
        for round in 0..=a.rounds {
            let ms = a.sample_ms;
            let mut fig = [0f64; 8];
            let mut measure = |i: usize| match i {
                0 => fig[0] = sample(ms, 16, pairs, |n| floor.passes(layers, n)),
                1 => fig[1] = sample(ms, 16, pairs, |n| prev_lib::passes(&mut prev_on, layers, n)),
                2 => fig[2] = sample(ms, 16, pairs, |n| new_lib::passes(&mut new_on, layers, n)),
                3 => {
                    fig[3] = sample(ms, 16, pairs, |n| {
                        prev_lib::passes(&mut prev_off, layers, n)
                    })
                }
                4 => fig[4] = sample(ms, 16, pairs, |n| new_lib::passes(&mut new_off, layers, n)),
                5 => fig[5] = sample(ms, loop_n, 1, loop_floor),
                6 => fig[6] = sample(ms, loop_n, 1, |n| prev_lib::pair_loop(&mut prev_off, n)),
                7 => fig[7] = sample(ms, loop_n, 1, |n| new_lib::pair_loop(&mut new_off, n)),
                _ => unreachable!(),
            };
            // Alternate which library goes first; the floor sits between them.
            let order: [usize; 8] = if round % 2 == 0 {
                [1, 0, 2, 3, 4, 5, 6, 7]
            } else {
                [2, 0, 1, 4, 3, 7, 5, 6]
            };
            for i in order {
                measure(i);
            }
            if round == 0 {
                continue;
            }
            for (i, (_, v)) in rows.iter_mut().enumerate() {
                v.push(fig[i]);
            }
            println!(
                "  L{layers} round {round:2}: floor {:6.2}  prev {:6.2} ({:.3}x)  new {:6.2} ({:.3}x)  \
                 disabled pair prev {:.3} new {:.3} (loop {:.3})",
                fig[0],
                fig[1],
                fig[1] / fig[0],
                fig[2],
                fig[2] / fig[0],
                fig[6],
                fig[7],
                fig[5]
            );
        }
        println!("{layers} layers, {pairs} start/stop pairs per pass: median over rounds (range)");
        let floor_v = rows[0].1.clone();
        for (name, v) in &rows {
            summary(name, " ns", v);
        }
        for i in [1, 2, 3, 4] {
            let ratio: Vec<f64> = rows[i].1.iter().zip(&floor_v).map(|(x, f)| x / f).collect();
            summary(&format!("{} / floor", rows[i].0), "x ", &ratio);
        }
        let rel: Vec<f64> = rows[2]
            .1
            .iter()
            .zip(&rows[1].1)
            .map(|(n, p)| n / p)
            .collect();
        summary("new / prev Deferred", "x ", &rel);
        // Both profilers recorded every pass, so nothing was optimised away.
        let (p, n) = (prev_lib::count(&prev_on), new_lib::count(&new_on));
        assert!(p > 0 && n > 0, "nothing recorded");
        println!("  (QkvProjection recorded {p} times by prev, {n} by new)");
        black_box(&floor.cells);
    }
}
