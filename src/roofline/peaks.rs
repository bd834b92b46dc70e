//! Measuring this CPU's peaks for a cache-aware roofline ([`measure_cpu_peaks`]), so that the
//! same brick gets the same verdict run after run (spec/work-accounting.md "Measured CPU
//! peaks"):
//! - compute: independent vector FMA chains (AVX2+FMA when the CPU has them, else code the
//!   compiler vectorizes), enough chains to hide the FMA latency on two units;
//! - bandwidth per level: a working-set sweep sized from the cache topology
//!   ([`super::CacheTopology`]): reads repeated over 1/4 and 1/2 of each cache's capacity (L1,
//!   L2, ..., LLC), and a streaming read over 2× the LLC (64..512 MiB) for DRAM;
//! - each is the best of several trials of fixed duration, which drops the trials an
//!   interruption or a frequency ramp slowed down;
//! - the theoretical compute peak (clock × SIMD lanes × FMA units × 2) is reported beside the
//!   measured one, with the clock it used: the maximum turbo clock where the OS reports it.
//!
//! Whole cost: about 0.5 s in a release build (the figures of a debug build mean nothing). The
//! `brickprof demo` CLI uses it for its CPU roofline; an engine on the CPU can call it too.

use std::hint::black_box;
use std::time::Duration;

use super::trial_clock::TrialClock;
use super::{CacheRoof, CacheTopology, DevicePeaks, MemLevel, PeakSource, TopologySource};

/// Trials of the compute kernel, and how long each runs.
const COMPUTE_TRIALS: usize = 5;
const COMPUTE_TRIAL: Duration = Duration::from_millis(20);
/// Streaming passes over the working set (the first also pages it in, and is not counted).
const STREAM_TRIALS: usize = 4;
/// Working set bounds for the bandwidth kernel. Debug builds (of this library: the test suite's
/// demo runs) use a token 8 MiB: their figures are meaningless anyway, and a full pass would take seconds.
#[cfg(not(debug_assertions))]
const MIN_STREAM_BYTES: usize = 64 << 20;
#[cfg(not(debug_assertions))]
const MAX_STREAM_BYTES: usize = 512 << 20;
#[cfg(debug_assertions)]
const MIN_STREAM_BYTES: usize = 8 << 20;
#[cfg(debug_assertions)]
const MAX_STREAM_BYTES: usize = 8 << 20;
/// Each cache sweep point: the best of this many trials of this duration.
const SWEEP_TRIALS: usize = 3;
#[cfg(not(debug_assertions))]
const SWEEP_TRIAL: Duration = Duration::from_millis(10);
#[cfg(debug_assertions)]
const SWEEP_TRIAL: Duration = Duration::from_millis(1);

/// What [`measure_cpu_peaks`] measured, and the theoretical compute peak to compare with.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MeasuredPeaks {
    /// The peaks the roofline uses (measured).
    pub peaks: DevicePeaks,
    /// Frequency × lanes × FMA units × 2, when the frequency is known.
    pub theoretical_gflops: Option<f64>,
    /// How the theoretical figure was made, e.g. "3.00 GHz × 8 lanes × 2 FMA units × 2".
    pub theoretical_how: String,
    /// Which clock the theoretical figure used and where it was read, e.g. "max turbo,
    /// cpuinfo_max_freq" (empty when no clock was found).
    pub clock: String,
    /// The instruction set the compute kernel ran.
    pub isa: &'static str,
    /// Bytes the bandwidth kernel streamed over.
    pub stream_bytes: usize,
    /// Last-level cache size, if known.
    pub llc_bytes: Option<usize>,
    /// The cache topology the sweep was sized from.
    pub(crate) topology: CacheTopology,
    /// Each sweep point: (level, working set in bytes, best GB/s).
    pub sweep: Vec<(MemLevel, usize, f64)>,
}

/// Three lines (under 100 columns) saying what was measured and how, e.g. for the demo's
/// output.
impl std::fmt::Display for MeasuredPeaks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let theory = match self.theoretical_gflops {
            Some(t) => format!(
                "theoretical {t:.1} GFLOP/s = {} ({:.0}% reached)\n    clock: {}{}",
                self.theoretical_how,
                self.peaks.gflops() / t * 100.0,
                self.clock,
                if self.peaks.gflops() > t {
                    " (below the clock the core ran at)"
                } else {
                    ""
                }
            ),
            None => "theoretical peak unknown (no CPU frequency found)".to_string(),
        };
        let sizes = match self.topology.source {
            TopologySource::Sysfs => "cache sizes from sysfs",
            TopologySource::Preset => "cache sizes PRESET (sysfs unreadable)",
        };
        let roofs: Vec<String> = self
            .peaks
            .memory_roofs()
            .map(|(level, bytes, gbps)| match bytes {
                Some(b) => format!("{level} {} {gbps:.1}", size_label(b)),
                None => format!("DRAM {gbps:.1}"),
            })
            .collect();
        write!(
            f,
            "CPU peaks, 1 thread: {:.1} GFLOP/s measured ({}, best of {COMPUTE_TRIALS} trials)\n  \
             {theory}\n  GB/s by level: {}\n    ({sizes}; working-set sweep; DRAM streams \
             over {} MiB)",
            self.peaks.gflops(),
            self.isa,
            roofs.join(", "),
            self.stream_bytes >> 20,
        )
    }
}

/// "32K", "512K", "32M".
fn size_label(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}M", b >> 20)
    } else {
        format!("{}K", b >> 10)
    }
}

/// Measure this CPU (one thread): best-of-trials FMA GFLOP/s and streaming GB/s over a working
/// set beyond the last-level cache, as [`DevicePeaks`] for the roofline, with the theoretical
/// compute peak beside them. Takes about 0.3 s in a release build; a debug build's figures mean
/// nothing.
///
/// # Errors
/// When a figure came out as zero (a clock too coarse): the error of [`DevicePeaks::new`].
pub fn measure_cpu_peaks() -> crate::Result<MeasuredPeaks> {
    let (isa, lanes, fma_units) = isa();
    let gflops = (0..COMPUTE_TRIALS)
        .map(|_| measure_gflops(COMPUTE_TRIAL))
        .fold(0.0, f64::max);
    let topology = CacheTopology::detect();
    let llc_bytes = topology.llc_bytes().map(|b| b as usize);
    let sweep = sweep(&topology);
    let stream_bytes = llc_bytes
        .map_or(MIN_STREAM_BYTES, |b| 2 * b)
        .clamp(MIN_STREAM_BYTES, MAX_STREAM_BYTES);
    let gbps = measure_gbps(stream_bytes);
    let ghz = cpu_ghz();
    let theoretical_gflops = ghz.map(|(f, _)| f * lanes as f64 * fma_units as f64 * 2.0);
    let theoretical_how = ghz.map_or(String::new(), |(f, _)| {
        format!("{f:.2} GHz × {lanes} lanes × {fma_units} FMA units × 2")
    });
    let clock = ghz.map_or(String::new(), |(_, which)| which.to_string());
    let name = match (theoretical_gflops, ghz) {
        (Some(t), Some((_, which))) => {
            let clock = which.split(',').next().unwrap_or(which);
            format!("cpu {isa} 1 thread, theory {t:.0} GFLOP/s at the {clock} clock")
        }
        _ => format!("cpu {isa} 1 thread"),
    };
    let mut levels = Vec::new();
    for &(level, bytes) in &topology.caches {
        let best = sweep
            .iter()
            .filter(|s| s.0 == level)
            .map(|s| s.2)
            .fold(0.0, f64::max);
        if best > 0.0 {
            levels.push(CacheRoof::new(level, bytes, best)?);
        }
    }
    let peaks = DevicePeaks::new(name, gflops, gbps)?
        .with_levels(levels)?
        .with_source(PeakSource::Measured);
    Ok(MeasuredPeaks {
        peaks,
        theoretical_gflops,
        theoretical_how,
        clock,
        isa,
        stream_bytes,
        llc_bytes,
        topology,
        sweep,
    })
}

/// The working-set sweep: for each cache, reads repeated over 1/4 and 1/2 of its capacity
/// (points not above the next inner cache's capacity are skipped); (level, bytes, best GB/s).
fn sweep(topology: &CacheTopology) -> Vec<(MemLevel, usize, f64)> {
    let mut out = Vec::new();
    let mut inner = 0usize;
    for &(level, size) in &topology.caches {
        let size = size as usize;
        for ws in [size / 4, size / 2] {
            let ws = ws.min(MAX_STREAM_BYTES);
            if ws <= inner || ws < 1024 {
                continue;
            }
            let best = (0..SWEEP_TRIALS)
                .map(|_| measure_resident_gbps(ws, SWEEP_TRIAL))
                .fold(0.0, f64::max);
            out.push((level, ws, best));
        }
        inner = size;
    }
    out
}

/// GB/s of reads repeated over a `bytes` working set for `trial` (one untimed pass first
/// brings it into the cache).
fn measure_resident_gbps(bytes: usize, trial: Duration) -> f64 {
    let buf: Vec<f32> = vec![1.0; bytes / 4];
    black_box(stream_sum(black_box(&buf)));
    // Reading the trial clock is a system call (thread CPU time has no vDSO path): read it
    // once per MiB of reads, so that it costs nothing next to an L1-sized working set.
    let batch = ((1 << 20) / bytes.max(1)).max(1);
    let t0 = TrialClock::start();
    let mut read = 0usize;
    while t0.elapsed() < trial {
        for _ in 0..batch {
            black_box(stream_sum(black_box(&buf)));
        }
        read += batch * buf.len() * 4;
    }
    read as f64 / t0.elapsed().as_nanos().max(1) as f64
}

/// The kernel's instruction set, its f32 lanes and the FMA units assumed per core.
fn isa() -> (&'static str, usize, usize) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // Every AVX2+FMA core since Haswell / Zen 2 issues two 256-bit FMAs per cycle.
        return ("AVX2+FMA", 8, 2);
    }
    ("portable", 4, 1)
}

/// GFLOP/s of the FMA kernel over `trial` of the thread's CPU time (the trial clock).
fn measure_gflops(trial: Duration) -> f64 {
    let t0 = TrialClock::start();
    let mut flops = 0u64;
    while t0.elapsed() < trial {
        flops += fma_block();
    }
    flops as f64 / t0.elapsed().as_nanos().max(1) as f64
}

/// One block of independent FMA chains; returns the FLOPs done.
fn fma_block() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features `fma_avx2` is compiled for (checked above).
        return unsafe { x86::fma_avx2() };
    }
    fma_portable()
}

/// Chains × lanes × iterations of the portable kernel.
const PORTABLE_CHAINS: usize = 8;
const PORTABLE_ITERS: usize = 1 << 14;

fn fma_portable() -> u64 {
    const LANES: usize = 8;
    let mut acc = [[1.0f32; LANES]; PORTABLE_CHAINS];
    let a = black_box([0.999_9f32; LANES]);
    let b = black_box([1e-4f32; LANES]);
    for _ in 0..PORTABLE_ITERS {
        for chain in acc.iter_mut() {
            for i in 0..LANES {
                chain[i] = chain[i] * a[i] + b[i];
            }
        }
    }
    black_box(acc);
    (2 * LANES * PORTABLE_CHAINS * PORTABLE_ITERS) as u64
}

/// Best GB/s of a streaming read over `bytes` (first pass pages the buffer in, not counted).
fn measure_gbps(bytes: usize) -> f64 {
    let buf: Vec<f32> = vec![1.0; bytes / 4];
    let mut best = 0.0f64;
    for trial in 0..STREAM_TRIALS {
        let t0 = TrialClock::start();
        black_box(stream_sum(black_box(&buf)));
        let gbps = (buf.len() * 4) as f64 / t0.elapsed().as_nanos().max(1) as f64;
        if trial > 0 {
            best = best.max(gbps);
        }
    }
    best
}

fn stream_sum(buf: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked above).
        return unsafe { x86::sum_avx2(buf) };
    }
    let mut acc = [0f32; 16];
    for c in buf.chunks_exact(16) {
        for i in 0..16 {
            acc[i] += c[i];
        }
    }
    acc.iter().sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Iterations of the AVX2 kernel per block.
    const ITERS: usize = 1 << 14;

    /// Twelve independent 8-lane FMA chains: 12 × 8 × 2 FLOPs per iteration, enough to keep two
    /// FMA units with a 4–5 cycle latency busy.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn fma_avx2() -> u64 {
        let a = _mm256_set1_ps(std::hint::black_box(0.999_9));
        let b = _mm256_set1_ps(std::hint::black_box(1e-4));
        let mut c = [_mm256_set1_ps(1.0); 12];
        for _ in 0..ITERS {
            // A fixed-length loop: fully unrolled, the chains stay in registers.
            for x in c.iter_mut() {
                *x = _mm256_fmadd_ps(*x, a, b);
            }
        }
        std::hint::black_box(c);
        (12 * 8 * 2 * ITERS) as u64
    }

    /// Sum `buf` with eight independent 8-lane accumulators: enough adds in flight to keep two
    /// load ports busy, so loads, not adds, are the limit (in L1 too).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sum_avx2(buf: &[f32]) -> f32 {
        let mut acc = [_mm256_setzero_ps(); 8];
        let chunks = buf.chunks_exact(64);
        let tail: f32 = chunks.remainder().iter().sum();
        for c in chunks {
            let p = c.as_ptr();
            // SAFETY: `c` holds 64 f32s; unaligned loads.
            for (j, a) in acc.iter_mut().enumerate() {
                *a = _mm256_add_ps(*a, unsafe { _mm256_loadu_ps(p.add(8 * j)) });
            }
        }
        let mut lanes = [0f32; 8];
        let s = _mm256_add_ps(
            _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])),
            _mm256_add_ps(_mm256_add_ps(acc[4], acc[5]), _mm256_add_ps(acc[6], acc[7])),
        );
        // SAFETY: `lanes` holds 8 f32s.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), s) };
        lanes.iter().sum::<f32>() + tail
    }
}

/// The CPU's maximum (turbo) frequency in GHz (sysfs `cpuinfo_max_freq`), else the clock
/// /proc/cpuinfo reports (nominal: turbo can then beat the "theoretical" peak); and which of
/// the two it is, with where it was read (the part before the comma names the clock).
fn cpu_ghz() -> Option<(f64, &'static str)> {
    if let Ok(khz) =
        std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    {
        if let Ok(k) = khz.trim().parse::<f64>() {
            return Some((k / 1e6, "max turbo, cpuinfo_max_freq"));
        }
    }
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|mhz| {
            (
                mhz / 1e3,
                "nominal, /proc/cpuinfo (no cpufreq max reported)",
            )
        })
}
