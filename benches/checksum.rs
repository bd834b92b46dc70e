//! Checksum throughput (spec/checksums.md "Cost") on a 16 MiB f32 tensor, against a plain
//! `iter().sum::<f32>()` over the same data in the same run. Criterion reports GB/s.

use std::hint::black_box;
use std::time::Duration;

use brickprof::checksum::checksum_and_summary;
use brickprof::{fnv1a_f32_checksum, TensorSummary};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn checksum(c: &mut Criterion) {
    let n = 16 * 1024 * 1024 / 4;
    let data: Vec<f32> = (0..n).map(|i| ((i as f32) * 1e-3).sin()).collect();
    let mut g = c.benchmark_group("checksum_16MiB");
    g.throughput(Throughput::Bytes((n * 4) as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(4));
    g.bench_function("baseline_iter_sum_f32", |b| {
        b.iter(|| black_box(&data).iter().sum::<f32>())
    });
    g.bench_function("fnv1a_f32_checksum", |b| {
        b.iter(|| fnv1a_f32_checksum(black_box(&data)))
    });
    g.bench_function("tensor_summary", |b| {
        b.iter(|| TensorSummary::of_f32(black_box(&data)))
    });
    g.bench_function("checksum_and_summary_one_pass", |b| {
        b.iter(|| checksum_and_summary(black_box(&data)))
    });
    g.finish();
}

criterion_group!(benches, checksum);
criterion_main!(benches);
