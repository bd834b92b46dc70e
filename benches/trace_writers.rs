//! Trace writers at scale (spec/traces.md): one million measurements of a 32-layer model on an
//! asynchronous timeline (each a device slice, a host slice and the flow between them) written
//! as Perfetto protobuf and as Chrome JSON. Prints bytes per event of each format (and fails
//! unless the pftrace is the smaller); Criterion reports MB/s of output. Floor, same run:
//! copying the raw in-memory events (24 bytes each) into a buffer.

use std::hint::black_box;
use std::io::Write;
use std::time::Duration;

use brickprof::{
    model::BrickRegistry,
    profile::{RunMeta, TraceEvent, Track},
    timeline::TimelineKind,
    BrickId,
};
use brickprof::{
    output::{output, Snapshot, TraceOutput},
    profile::TraceView,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const MEASUREMENTS: usize = 1_000_000;
const LAYERS: u16 = 32;

/// A counting sink: the bytes a writer produced, without keeping them.
#[derive(Default)]
struct Count(u64);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl TraceOutput for Count {}

fn buffer() -> Vec<TraceEvent> {
    let mut b = Vec::with_capacity(2 * MEASUREMENTS);
    let bricks = BrickId::ALL;
    let (mut host, mut device) = (0u64, 5_000u64);
    for i in 0..MEASUREMENTS {
        let brick = bricks[i % bricks.len()];
        let row = ((i / bricks.len()) % usize::from(LAYERS)) as u16;
        let dur = 2_000 + (i as u64 * 7919) % 50_000;
        let event = |track, start_ns, dur_ns| TraceEvent {
            start_ns,
            dur_ns,
            slot: brick as u16,
            row,
            track,
        };
        b.push(event(Track::Device, device, dur));
        b.push(event(Track::Host, host, 1_500));
        host += 1_800;
        device = device.max(host) + dur;
    }
    b
}

fn header() -> RunMeta {
    RunMeta {
        rank: Some(0),
        calibration_bound_ns: Some(0),
        ..RunMeta::new(TimelineKind::Sim, usize::from(LAYERS))
    }
}

fn write_perfetto(b: &[TraceEvent], r: &BrickRegistry, out: &mut Count) {
    let view = TraceView {
        events: b,
        passes: &[],
        registry: r,
        meta: header(),
    };
    // What `write_output` and `demo --trace` do: the format's streaming writer, fed the view.
    output("perfetto")
        .unwrap()
        .write(&Snapshot::Trace(&view), out)
        .unwrap();
}

fn write_chrome(b: &[TraceEvent], r: &BrickRegistry, out: &mut Count) {
    let view = TraceView {
        events: b,
        passes: &[],
        registry: r,
        meta: header(),
    };
    // What `write_output` and `demo --trace` do: the format's streaming writer, fed the view.
    output("chrome")
        .unwrap()
        .write(&Snapshot::Trace(&view), out)
        .unwrap();
}

fn writers(c: &mut Criterion) {
    let b = buffer();
    let r = BrickRegistry::default();
    let events = b.len() as f64;
    let (mut pf, mut js) = (Count::default(), Count::default());
    write_perfetto(&b, &r, &mut pf);
    write_chrome(&b, &r, &mut js);
    println!(
        "1M measurements = {events} slices: pftrace {:.1} MB ({:.1} bytes/event), Chrome JSON {:.1} MB ({:.1} bytes/event): pftrace is {:.2}x smaller",
        pf.0 as f64 / 1e6,
        pf.0 as f64 / events,
        js.0 as f64 / 1e6,
        js.0 as f64 / events,
        js.0 as f64 / pf.0 as f64
    );
    assert!(pf.0 < js.0, "the pftrace must be smaller than the JSON");

    let mut g = c.benchmark_group("trace_1M_measurements");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(15));
    g.throughput(Throughput::Bytes(pf.0));
    g.bench_function("perfetto_pftrace", |bench| {
        bench.iter(|| write_perfetto(black_box(&b), &r, &mut Count::default()))
    });
    g.throughput(Throughput::Bytes(js.0));
    g.bench_function("chrome_json", |bench| {
        bench.iter(|| write_chrome(black_box(&b), &r, &mut Count::default()))
    });
    let raw = std::mem::size_of_val(b.as_slice());
    g.throughput(Throughput::Bytes(raw as u64));
    let mut sink = Vec::with_capacity(raw);
    g.bench_function("floor_copy_raw_events", |bench| {
        bench.iter(|| {
            sink.clear();
            for e in black_box(&b) {
                sink.extend_from_slice(&e.start_ns.to_le_bytes());
                sink.extend_from_slice(&e.dur_ns.to_le_bytes());
                sink.extend_from_slice(&[e.slot as u8, (e.slot >> 8) as u8, e.row as u8, 0]);
                sink.extend_from_slice(&[0; 4]);
            }
            black_box(sink.len())
        })
    });
    g.finish();
}

criterion_group!(benches, writers);
criterion_main!(benches);
