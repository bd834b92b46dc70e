//! Checksum throughput (spec/checksums.md "Cost") on 16 MiB and 256 MiB f32 tensors, against a
//! plain `iter().sum::<f32>()` over the same data in the same run. Criterion reports GB/s; the
//! targets are ratios: the default checksum >= 0.5x the sum's throughput, and the summary in
//! the same pass at most 10 % more time than the checksum alone. The one-pass functions use
//! the fastest code path of the CPU (the first of [`Simd::supported`]); on 16 MiB the slower
//! paths the CPU runs (AVX2, portable) are measured too.

use std::hint::black_box;
use std::time::Duration;

use brickprof::checksum::{checksum, checksum_with, Algorithm, Simd, Tensor, TensorSummary};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn checksum_bench(c: &mut Criterion) {
    for mib in [16usize, 256] {
        let n = mib * 1024 * 1024 / 4;
        let data: Vec<f32> = (0..n).map(|i| ((i as f32) * 1e-3).sin()).collect();
        let mut g = c.benchmark_group(format!("checksum_{mib}MiB"));
        g.throughput(Throughput::Bytes((n * 4) as u64));
        g.sample_size(10);
        g.warm_up_time(Duration::from_millis(500));
        g.measurement_time(Duration::from_secs(if mib > 100 { 4 } else { 2 }));
        g.bench_function("baseline_iter_sum_f32", |b| {
            b.iter(|| black_box(&data).iter().sum::<f32>())
        });
        g.bench_function("lanes8_checksum", |b| {
            b.iter(|| Algorithm::default().hash(Tensor::F32(black_box(&data))))
        });
        g.bench_function("lanes8_checksum_and_summary", |b| {
            b.iter(|| checksum(Algorithm::default(), Tensor::F32(black_box(&data))))
        });
        g.bench_function("summary_only", |b| {
            b.iter(|| TensorSummary::of(Tensor::F32(black_box(&data))))
        });
        if mib <= 16 {
            for simd in Simd::supported().skip(1) {
                let name = format!("lanes8_checksum_and_summary_{simd}");
                g.bench_function(name, |b| {
                    b.iter(|| {
                        checksum_with(simd, Algorithm::default(), Tensor::F32(black_box(&data)))
                    })
                });
            }
            g.bench_function("bytewise_fnv1a64", |b| {
                b.iter(|| Algorithm::Fnv1a64.hash(Tensor::F32(black_box(&data))))
            });
            let bf16: Vec<u16> = data.iter().map(|v| (v.to_bits() >> 16) as u16).collect();
            g.throughput(Throughput::Bytes((n * 2) as u64));
            g.bench_function("lanes8_checksum_and_summary_bf16_half_the_bytes", |b| {
                b.iter(|| checksum(Algorithm::default(), Tensor::Bf16(black_box(&bf16))))
            });
        }
        g.finish();
    }
}

criterion_group!(benches, checksum_bench);
criterion_main!(benches);
