//! Measuring this CPU's peaks for the demo's roofline: single-thread compute (independent
//! multiply-add chains over 8-wide lanes, so the compiler keeps them in vector registers) and
//! read bandwidth over a buffer the size of the model's weights: the demo's matrices stay
//! cache-resident between tokens, so that is the memory roof they run under. Best of a few
//! short runs.

use std::hint::black_box;
use std::time::Instant;

use brickprof::DevicePeaks;

/// Peak single-thread GFLOP/s, and read GB/s over `working_set` bytes, of this CPU.
pub fn measure_cpu_peaks(working_set: usize) -> brickprof::Result<DevicePeaks> {
    let working_set = working_set.clamp(1 << 20, 256 << 20);
    let buf: Vec<f32> = (0..working_set / 4).map(|i| i as f32).collect();
    DevicePeaks::new(
        format!("this cpu, 1 thread, {} MiB working set", working_set >> 20),
        (0..3).map(|_| measure_gflops()).fold(0.0, f64::max),
        (0..5).map(|_| measure_gbps(&buf)).fold(0.0, f64::max),
    )
}

fn measure_gflops() -> f64 {
    const LANES: usize = 8;
    const CHAINS: usize = 8;
    const ITERS: usize = 1 << 17;
    let mut acc = [[1.0f32; LANES]; CHAINS];
    let a = black_box([0.999_9f32; LANES]);
    let b = black_box([1e-4f32; LANES]);
    let t0 = Instant::now();
    for _ in 0..ITERS {
        for chain in acc.iter_mut() {
            for i in 0..LANES {
                chain[i] = chain[i] * a[i] + b[i];
            }
        }
    }
    let ns = t0.elapsed().as_nanos().max(1) as f64;
    black_box(acc);
    (2 * LANES * CHAINS * ITERS) as f64 / ns
}

fn measure_gbps(buf: &[f32]) -> f64 {
    let t0 = Instant::now();
    let mut acc = [0f32; 16];
    for c in black_box(buf).chunks_exact(16) {
        for i in 0..16 {
            acc[i] += c[i];
        }
    }
    let ns = t0.elapsed().as_nanos().max(1) as f64;
    black_box(acc);
    (buf.len() * 4) as f64 / ns
}
