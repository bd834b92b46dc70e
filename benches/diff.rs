//! `brickprof diff` timings (spec/profile-format.md "Comparing runs") must be linear in the
//! number of bricks. Criterion reports time per brick (Throughput::Elements) at 1,000 and
//! 16,000 bricks in the same run: linear means the two per-brick times are about equal (nested
//! lookups made the 16,000-brick case 16× slower per brick). The floor is building one
//! `HashMap` of the names, the least any name-matching diff does.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use brickprof::compare::timing_diff;
use brickprof::model::PhaseFilter;
use brickprof::{BrickId, BrickProfiler, Profile, ProfilerConfig};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// A profile with `n` distinct bricks, made from a real one through its file format.
fn profile_with(n: usize) -> Profile {
    let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(1)).expect("1 layer");
    prof.begin_pass();
    prof.begin_layer(0);
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 1);
    prof.end_layer();
    prof.end_pass(1).expect("sync");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("p.json");
    prof.profile().save(&path).expect("save");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    let mut brick = v["bricks"][0].clone();
    brick["builtin"] = false.into();
    v["bricks"] = (0..n)
        .map(|i| {
            let mut b = brick.clone();
            b["name"] = format!("expert_{i:06}").into();
            b
        })
        .collect::<Vec<_>>()
        .into();
    std::fs::write(&path, serde_json::to_string(&v).expect("json")).expect("write");
    Profile::load(&path).expect("load")
}

fn diff(c: &mut Criterion) {
    let mut g = c.benchmark_group("diff_timing");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    for n in [1_000, 16_000] {
        let (a, b) = (profile_with(n), profile_with(n));
        let names: Vec<String> = (0..n).map(|i| format!("expert_{i:06}")).collect();
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(
            BenchmarkId::new("floor_hashmap_of_names", n),
            &n,
            |bch, _| {
                bch.iter(|| {
                    black_box(&names)
                        .iter()
                        .map(|s| (s.as_str(), 0u8))
                        .collect::<HashMap<_, _>>()
                })
            },
        );
        g.bench_with_input(BenchmarkId::new("timing_changes", n), &n, |bch, _| {
            bch.iter(|| timing_diff(black_box(&a), black_box(&b), PhaseFilter::All))
        });
    }
    g.finish();
}

criterion_group!(benches, diff);
criterion_main!(benches);
