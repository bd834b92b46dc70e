//! The live server's cost per pass (spec/live.md "Cost"): a realistic decode pass (32 layers,
//! a Llama block of 14 brick calls each, plus the embedding, the final norm and the LM head,
//! Deferred mode) on a profiler
//! - without a server (no live handle: the shelf is not shared, its writes take no lock),
//! - with the server running and no scrapes (a live handle: one uncontended lock per pass),
//! - with a scraper thread hitting /metrics back to back while this case runs (the worst case:
//!   a snapshot every few milliseconds instead of every scrape interval, and the scraper's
//!   encoding and HTTP work competing for the machine's cores).
//!
//! Criterion times each case; then the three run interleaved, round after round, in one loop,
//! and the medians of their per-pass costs and the ratios to "without" are printed.

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use brickprof::serve::{ServeHandle, Server};
use brickprof::{BrickProfiler, PassShape, ProfilerConfig};
use criterion::Criterion;

const LAYERS: usize = 32;

#[path = "common/block.rs"]
mod block;

/// One decode pass.
fn pass(prof: &mut BrickProfiler, pos: u64) {
    prof.begin_pass();
    prof.set_pass_shape(PassShape::new(1, 1, 64 + pos % 64).unwrap());
    block::llama_bricks(prof, LAYERS);
    prof.end_pass(1).unwrap();
}

fn profiler() -> BrickProfiler {
    BrickProfiler::new(ProfilerConfig::with_layers(LAYERS)).unwrap()
}

fn scrape(addr: SocketAddr) -> usize {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return 0;
    };
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out.len()
}

/// A case: its profiler, and what runs beside it.
struct Case {
    name: &'static str,
    prof: BrickProfiler,
    _server: Option<ServeHandle>,
    /// The scraper's stop flag, its thread, and whether it scrapes now (only while this case
    /// runs: in the interleaved loop the other cases run without it).
    scraper: Option<(
        Arc<AtomicBool>,
        std::thread::JoinHandle<u64>,
        Arc<AtomicBool>,
    )>,
    live: Option<brickprof::profiler::LiveHandle>,
    pos: u64,
}

impl Case {
    fn new(name: &'static str, server: bool, scrapes: bool) -> Case {
        let mut prof = profiler();
        let live = server.then(|| prof.live());
        let server = live.clone().map(|live| {
            Server {
                addr: "127.0.0.1:0".into(),
                ..Server::default()
            }
            .start(live)
            .unwrap()
        });
        let scraper = (scrapes && server.is_some()).then(|| {
            let addr = server.as_ref().unwrap().local_addr();
            let stop = Arc::new(AtomicBool::new(false));
            let active = Arc::new(AtomicBool::new(false));
            let (s, a) = (Arc::clone(&stop), Arc::clone(&active));
            let t = std::thread::spawn(move || {
                let mut n = 0;
                while !s.load(Ordering::Relaxed) {
                    if a.load(Ordering::Relaxed) {
                        black_box(scrape(addr));
                        n += 1;
                    } else {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
                n
            });
            (stop, t, active)
        });
        Case {
            name,
            prof,
            _server: server,
            scraper,
            live,
            pos: 0,
        }
    }

    fn run(&mut self, passes: u64) -> Duration {
        let active = self.scraper.as_ref().map(|(_, _, a)| a);
        active.inspect(|a| a.store(true, Ordering::Relaxed));
        let start = Instant::now();
        for _ in 0..passes {
            pass(&mut self.prof, self.pos);
            self.pos += 1;
        }
        let took = start.elapsed();
        active.inspect(|a| a.store(false, Ordering::Relaxed));
        took
    }

    fn stop(self) -> Option<u64> {
        self.scraper.map(|(stop, t, _)| {
            stop.store(true, Ordering::Relaxed);
            t.join().unwrap()
        })
    }
}

fn cases() -> Vec<Case> {
    vec![
        Case::new("without server", false, false),
        Case::new("server, no scrapes", true, false),
        Case::new("server, scraped back to back", true, true),
    ]
}

fn criterion_cases(c: &mut Criterion) {
    let mut group = c.benchmark_group("serve_pass_32_layers");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for mut case in cases() {
        group.bench_function(case.name, |b| b.iter_custom(|iters| case.run(iters)));
        case.stop();
    }
    group.finish();
}

/// The three cases interleaved: each round runs `PASSES` passes of each, in turn.
fn interleaved() {
    const ROUNDS: usize = 40;
    const PASSES: u64 = 200;
    let mut cases = cases();
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    for case in &mut cases {
        case.run(PASSES); // warm
    }
    for _ in 0..ROUNDS {
        for (i, case) in cases.iter_mut().enumerate() {
            ns[i].push(case.run(PASSES).as_nanos() as f64 / PASSES as f64);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = median(&mut ns[0].clone());
    println!("\ninterleaved, {ROUNDS} rounds of {PASSES} passes each, median ns per pass:");
    for (case, v) in cases.into_iter().zip(&mut ns) {
        let m = median(v);
        let name = case.name;
        let hold = case.live.as_ref().map(|l| l.longest_hold_ns());
        let scrapes = case.stop();
        let scrapes = match (scrapes, hold) {
            (Some(n), Some(h)) => format!(
                " ({n} scrapes; longest snapshot lock hold {:.1} µs)",
                h as f64 / 1e3
            ),
            _ => String::new(),
        };
        println!("  {name:<30} {m:>10.0} ns/pass  {:.3}x{scrapes}", m / base);
    }
}

/// What one snapshot holds the shelf's lock for (the most a pass's end can wait on a scrape),
/// with no pass running beside it: min, median and max over 200 snapshots of a 32-layer run.
fn snapshot_hold() {
    let mut prof = profiler();
    let live = prof.live();
    for pos in 0..1000 {
        pass(&mut prof, pos);
    }
    let mut us: Vec<f64> = (0..200)
        .map(|_| {
            let start = Instant::now();
            black_box(live.profile());
            start.elapsed().as_nanos() as f64 / 1e3
        })
        .collect();
    us.sort_by(f64::total_cmp);
    println!(
        "\nsnapshot of a 32-layer decode run (LiveHandle::profile, 200 times): min {:.1} µs, \
         median {:.1} µs, max {:.1} µs; longest lock hold {:.1} µs",
        us[0],
        us[us.len() / 2],
        us[us.len() - 1],
        live.longest_hold_ns() as f64 / 1e3
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    criterion_cases(&mut c);
    c.final_summary();
    interleaved();
    snapshot_hold();
}
