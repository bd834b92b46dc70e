//! The live server (spec/live.md): /metrics, /profile and /trace against a profiler whose
//! engine thread runs passes, and the clients the engine must survive. Loopback and port 0
//! only; no timed assertions (counts, not durations).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use brickprof::output::{convert, output};
use brickprof::profiler::CaptureError;
use brickprof::serve::{ServeHandle, Server};
use brickprof::{
    profiler::LiveHandle, BrickId, BrickProfiler, PassShape, Phase, Profile, ProfilerConfig,
};

use crate::common;

use common::scrape::{get, request, scrape, value, Sample};

const LAYERS: usize = 2;

fn profiler() -> BrickProfiler {
    BrickProfiler::new(ProfilerConfig::with_layers(LAYERS)).unwrap()
}

/// One pass of a small model: a prefill every 8th pass, decode steps otherwise.
fn pass(prof: &mut BrickProfiler, i: u64) {
    let shape = if i.is_multiple_of(8) {
        PassShape::new(8, 1, 8).unwrap()
    } else {
        PassShape::new(1, 1, 8 + i % 8).unwrap()
    };
    prof.begin_pass();
    prof.set_pass_shape(shape);
    for layer in 0..LAYERS {
        prof.begin_layer(layer);
        for b in [
            BrickId::RmsNorm,
            BrickId::QkvProjection,
            BrickId::AttentionSoftmax,
        ] {
            let t = prof.start_brick(b);
            std::hint::black_box((0..50 + i % 200).sum::<u64>());
            prof.stop_brick(t, 1);
        }
        prof.end_layer();
    }
    let t = prof.start_brick(BrickId::LmHead);
    prof.stop_brick(t, 1);
    prof.end_pass(u64::from(shape.new_tokens())).unwrap();
}

/// An engine thread running `passes` passes (or until `stop`), returning its profiler and the
/// passes it ran.
fn engine(
    mut prof: BrickProfiler,
    passes: u64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(BrickProfiler, u64)> {
    std::thread::spawn(move || {
        let mut ran = 0;
        for i in 0..passes {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            pass(&mut prof, i);
            ran += 1;
        }
        (prof, ran)
    })
}

fn start(live: LiveHandle) -> ServeHandle {
    start_with(live, Duration::from_secs(60))
}

/// A server on a free loopback port whose `/trace` waits at most `trace_timeout`.
fn start_with(live: LiveHandle, trace_timeout: Duration) -> ServeHandle {
    Server {
        addr: "127.0.0.1:0".into(),
        trace_timeout,
        ..Server::default()
    }
    .start(live)
    .unwrap()
}

/// Wait until a capture is asked for through `live` by someone else (a capture of our own,
/// asked for with no time to wait, is refused as busy), at most 100,000 tries.
fn wait_until_busy(live: &LiveHandle) {
    for _ in 0..100_000 {
        if matches!(
            live.capture_trace(1, Duration::ZERO),
            Err(CaptureError::Busy)
        ) {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("no capture was asked for");
}

/// spec/live.md "Metrics": per (phase, brick) histograms whose counts equal the profile's and
/// whose power-of-two buckets are the histogram's exact cumulative counts; counters monotone
/// across scrapes while the engine runs.
#[test]
fn metrics_match_the_profile_exactly_and_only_grow() {
    let mut prof = profiler();
    let live = prof.live();
    let server = start(live.clone());
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let engine = engine(prof, 3000, Arc::clone(&stop));
    let mut last: BTreeMap<String, f64> = BTreeMap::new();
    let mut scrapes = 0;
    while !engine.is_finished() && scrapes < 200 {
        let samples = scrape(addr);
        for s in samples
            .iter()
            .filter(|s| s.name.ends_with("_total") || s.name.ends_with("_count"))
        {
            let key = format!("{}{:?}", s.name, s.labels);
            let before = last.insert(key.clone(), s.value).unwrap_or(0.0);
            assert!(s.value >= before, "{key} went from {before} to {}", s.value);
        }
        scrapes += 1;
    }
    let (prof, _) = engine.join().unwrap();
    let samples = scrape(addr);
    let profile = prof.profile();
    assert_eq!(
        value(&samples, "brickprof_passes_total"),
        profile.meta.counters.passes as f64
    );
    assert_eq!(
        value(&samples, "brickprof_tokens_total"),
        profile.meta.counters.tokens as f64
    );
    let mut checked = 0;
    for b in &profile.bricks {
        for phase in [Phase::Prefill, Phase::Decode] {
            let mut stats = brickprof::stats::BrickStats::default();
            for r in b.rows.iter().filter(|r| r.phase == phase) {
                stats.merge(&r.stats);
            }
            // The histogram's buckets as saved: (lowest value of the bucket in ns, count).
            let floors: Vec<(u64, u64)> = serde_json::from_value(
                serde_json::to_value(&stats).unwrap()["histogram"]["floors"].take(),
            )
            .unwrap();
            let labels = |s: &Sample| {
                s.labels.get("brick") == Some(&b.name)
                    && s.labels.get("phase").map(String::as_str) == Some(&phase.to_string()[..])
                    && s.labels.get("category") == Some(&b.category.to_string())
                    && !s.labels.contains_key("layer")
            };
            let count = samples
                .iter()
                .find(|s| s.name == "brickprof_brick_seconds_count" && labels(s))
                .unwrap_or_else(|| panic!("no histogram for {} {phase}", b.name));
            assert_eq!(count.value, stats.summary().count as f64);
            let calls = samples
                .iter()
                .find(|s| s.name == "brickprof_brick_calls_total" && labels(s))
                .unwrap();
            assert_eq!(calls.value, stats.summary().count as f64);
            let mut previous = 0.0;
            for bucket in samples
                .iter()
                .filter(|s| s.name == "brickprof_brick_seconds_bucket" && labels(s))
            {
                let le = &bucket.labels["le"];
                assert!(bucket.value >= previous, "buckets are cumulative");
                previous = bucket.value;
                let expected = if le == "+Inf" {
                    stats.summary().count
                } else {
                    let edge_ns = (le.parse::<f64>().unwrap() * 1e9).round() as u64;
                    assert!(edge_ns.is_power_of_two(), "edge {le} is a power of two ns");
                    // The buckets starting below the edge: exactly the calls below it when the
                    // edge is a bucket edge (a bucket across it would count here, not there).
                    floors
                        .iter()
                        .filter(|&&(floor, _)| floor < edge_ns)
                        .map(|&(_, c)| c)
                        .sum()
                };
                assert_eq!(bucket.value, expected as f64, "{} {phase} le={le}", b.name);
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "{checked} buckets checked");
    let decode = profile.phase_passes(Phase::Decode);
    assert_eq!(
        value(&samples, "brickprof_tpot_seconds_count"),
        decode.summary().count as f64
    );
    assert!(live.longest_hold_ns() > 0);
}

/// spec/live.md "Metrics": the `layer` label is off by default and on when asked.
#[test]
fn the_layer_label_is_an_option() {
    let mut prof = profiler();
    let server = Server {
        addr: "127.0.0.1:0".into(),
        layer_labels: true,
        ..Server::default()
    }
    .start(prof.live())
    .unwrap();
    for i in 0..4 {
        pass(&mut prof, i);
    }
    let samples = scrape(server.local_addr());
    let layers: std::collections::BTreeSet<&str> = samples
        .iter()
        .filter(|s| s.name == "brickprof_brick_calls_total")
        .filter_map(|s| s.labels.get("layer").map(String::as_str))
        .collect();
    assert_eq!(layers, ["L0", "L1", "model"].into_iter().collect());
}

/// spec/live.md "Endpoints": /profile is the profile JSON `Profile::load` reads.
#[test]
fn profile_endpoint_loads_as_a_profile() {
    let mut prof = profiler();
    let server = start(prof.live());
    for i in 0..20 {
        pass(&mut prof, i);
    }
    let (status, body) = get(server.local_addr(), "/profile");
    assert_eq!(status, 200);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.json");
    std::fs::write(&path, body).unwrap();
    let loaded = Profile::load(&path).unwrap();
    assert_eq!(loaded.meta.counters.passes, 20);
    assert_eq!(
        loaded.brick("RmsNorm").unwrap().stats.summary().count,
        prof.view().brick_stats(BrickId::RmsNorm).summary().count
    );
}

/// What a trace reader feeds.
#[derive(Default)]
struct Count {
    slices: usize,
    passes: usize,
}

/// Read a Perfetto trace back (what `brickprof convert` does, into Chrome JSON): its slices
/// and passes (the slices of category `pass`).
fn read_trace(bytes: &[u8]) -> Count {
    let dir = tempfile::tempdir().unwrap();
    let (path, json) = (
        dir.path().join("live.pftrace"),
        dir.path().join("live.json"),
    );
    std::fs::write(&path, bytes).unwrap();
    convert(&path, &json, output("chrome").unwrap()).unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut count = Count::default();
    for e in doc["traceEvents"].as_array().unwrap() {
        match (e["ph"].as_str(), e["cat"].as_str()) {
            (Some("X"), Some("pass")) => count.passes += 1,
            (Some("X"), _) => count.slices += 1,
            _ => {}
        }
    }
    count
}

/// spec/live.md "Endpoints": /trace?passes=2 records the next 2 passes of a profiler that
/// keeps no trace of its own, and the trace reads back with exactly 2 passes and their bricks.
#[test]
fn trace_endpoint_records_exactly_the_next_passes() {
    let mut prof = profiler();
    assert!(prof.view().trace_view().map(|v| v.events).is_none());
    let server = start(prof.live());
    let stop = Arc::new(AtomicBool::new(false));
    let engine = engine(prof, u64::MAX, Arc::clone(&stop));
    let (status, body) = get(server.local_addr(), "/trace?passes=2");
    stop.store(true, Ordering::Relaxed);
    engine.join().unwrap();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let count = read_trace(&body);
    assert_eq!(count.passes, 2);
    // 2 layers × 3 bricks + the head, per pass.
    assert_eq!(count.slices, 2 * (LAYERS * 3 + 1));
}

/// spec/live.md "Endpoints": one capture at a time (409), and a capture the engine never ends
/// times out (503) and leaves the server able to capture again.
#[test]
fn a_second_capture_is_refused_and_a_stalled_one_times_out() {
    let mut prof = profiler();
    let live = prof.live();
    let server = start_with(live.clone(), Duration::from_millis(300));
    let addr = server.local_addr();
    // No pass runs: the capture cannot finish.
    let (status, _) = get(addr, "/trace?passes=2");
    assert_eq!(status, 503);
    // A capture asked for (and waiting) from another thread...
    let first = {
        let live = live.clone();
        std::thread::spawn(move || loop {
            match live.capture_trace(2, Duration::from_secs(120)) {
                Err(CaptureError::Busy) => std::thread::yield_now(),
                r => return r,
            }
        })
    };
    wait_until_busy(&live);
    // ...makes /trace answer 409.
    assert_eq!(get(addr, "/trace?passes=1").0, 409);
    for i in 0..2 {
        pass(&mut prof, i);
    }
    let trace = first.join().unwrap().unwrap();
    assert_eq!(trace.view().passes.len(), 2);
    // Free again.
    let again = {
        let live = live.clone();
        std::thread::spawn(move || live.capture_trace(1, Duration::from_secs(120)))
    };
    while !again.is_finished() {
        pass(&mut prof, 5);
    }
    assert_eq!(again.join().unwrap().unwrap().view().passes.len(), 1);
}

/// spec/live.md "Bounds": bad requests get 4xx and never stop the server.
#[test]
fn bad_requests_get_their_status() {
    let mut prof = profiler();
    let server = start(prof.live());
    pass(&mut prof, 0);
    let addr = server.local_addr();
    assert_eq!(get(addr, "/nope").0, 404);
    assert_eq!(
        request(addr, b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n").0,
        405
    );
    assert_eq!(request(addr, b"\x00\x01garbage\xff\r\n\r\n").0, 400);
    assert_eq!(get(addr, "/trace?passes=0").0, 400);
    assert_eq!(get(addr, "/trace?passes=65").0, 400);
    assert_eq!(get(addr, "/trace?passes=x").0, 400);
    assert_eq!(get(addr, "/trace?frames=2").0, 400);
    assert_eq!(get(addr, "/metrics").0, 200);
}

/// spec/live.md "Bounds" (issue 27 §4): 50 concurrent scrapers, a slow reader, half-open
/// connections, garbage, a 1 MB header, unknown paths and a second /trace, all while an
/// engine thread runs its passes: every pass completes and the server answers afterwards.
#[test]
fn the_engine_survives_bad_clients() {
    let mut prof = profiler();
    let live = prof.live();
    let server = start_with(live.clone(), Duration::from_secs(20));
    let addr = server.local_addr();
    // Half-open: connect, send nothing, keep them open through the test.
    let half_open: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let stop = Arc::new(AtomicBool::new(false));
    // The engine runs until every client is done.
    let engine = engine(prof, u64::MAX, Arc::clone(&stop));
    let mut clients = Vec::new();
    for i in 0..50 {
        clients.push(std::thread::spawn(move || {
            let path = if i % 10 == 0 { "/profile" } else { "/metrics" };
            let status = get(addr, path).0;
            assert!(status == 200 || status == 503, "scraper got {status}");
        }));
    }
    clients.push(std::thread::spawn(move || {
        // A slow reader: asks, then reads one byte a second for 3 seconds.
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut byte = [0u8; 1];
        for _ in 0..3 {
            let _ = s.read(&mut byte);
            std::thread::sleep(Duration::from_secs(1));
        }
    }));
    clients.push(std::thread::spawn(move || {
        let status = request(addr, b"\x16\x03\x01\x02\x00garbage\r\n\r\n").0;
        assert_eq!(status, 400);
    }));
    clients.push(std::thread::spawn(move || {
        // A 1 MB header: refused (431), or the connection is reset while we still write.
        let mut raw = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
        raw.extend(std::iter::repeat_n(b'a', 1 << 20));
        raw.extend_from_slice(b"\r\n\r\n");
        let status = request(addr, &raw).0;
        assert!(status == 431 || status == 0, "1 MB header got {status}");
    }));
    clients.push(std::thread::spawn(move || {
        assert_eq!(get(addr, "/../../etc/passwd").0, 404);
    }));
    let traces: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || get(addr, "/trace?passes=4").0))
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let statuses: Vec<u16> = traces.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(statuses.contains(&200), "{statuses:?}");
    assert!(
        statuses.iter().all(|s| [200, 409, 503].contains(s)),
        "{statuses:?}"
    );
    stop.store(true, Ordering::Relaxed);
    let (prof, ran) = engine.join().unwrap();
    assert!(ran > 0);
    assert_eq!(prof.view().counters.passes, ran);
    drop(half_open);
    let samples = scrape(addr);
    assert_eq!(value(&samples, "brickprof_passes_total"), ran as f64);
    let (answered, _, _) = server.connection_counts();
    assert!(answered >= 50, "{answered} answered");
}

/// spec/live.md "Sources": the thread-local front door's collector as the source.
#[test]
fn threads_source_serves_the_collected_profile() {
    use brickprof::thread as bp;
    bp::configure(ProfilerConfig::with_layers(1)).unwrap();
    bp::set_enabled(true);
    let server = Server {
        addr: "127.0.0.1:0".into(),
        ..Server::default()
    }
    .start(brickprof::serve::Source::Threads)
    .unwrap();
    std::thread::spawn(|| {
        for _ in 0..5 {
            drop(brickprof::brick!(BrickId::RmsNorm));
            bp::end_pass(1).unwrap();
        }
    })
    .join()
    .unwrap();
    let samples = scrape(server.local_addr());
    assert_eq!(value(&samples, "brickprof_passes_total"), 5.0);
    assert_eq!(get(server.local_addr(), "/trace?passes=1").0, 501);
    bp::set_enabled(false);
}

/// spec/live.md "Bounds": shutting the server down ends a `/trace` that waits for passes (503,
/// "shutting down") instead of waiting for its timeout.
#[test]
fn shutdown_ends_a_waiting_trace() {
    let mut prof = profiler();
    let live = prof.live();
    let server = start(live.clone());
    let addr = server.local_addr();
    let client = std::thread::spawn(move || get(addr, "/trace?passes=2"));
    // Wait until the request is the capture asked for (no pass runs: it cannot finish).
    wait_until_busy(&live);
    drop(server); // stops it, joining its threads
    let (status, body) = client.join().unwrap();
    assert_eq!(status, 503);
    assert!(String::from_utf8_lossy(&body).contains("shutting down"));
    // The profiler goes on, and a later capture works.
    pass(&mut prof, 0);
}

/// spec/live.md "Endpoints": N is written plainly; `+1` and `01` are refused like `x`, as the
/// CLI's numbers are. Before: both were read as 1 and started a capture.
#[test]
fn trace_passes_with_a_sign_or_a_leading_zero_is_a_bad_request() {
    let mut prof = profiler();
    let server = start(prof.live());
    pass(&mut prof, 0);
    let addr = server.local_addr();
    for bad in ["+1", "01", "1e0", "%2B1", " 1"] {
        assert_eq!(get(addr, &format!("/trace?passes={bad}")).0, 400, "{bad}");
    }
    assert_eq!(get(addr, "/metrics").0, 200);
}

/// Raise this process's open-file limit to its hard limit (the attacks below hold more
/// sockets, on both sides of each connection, than a soft limit of 1,024 allows).
fn raise_fd_limit() {
    #[cfg(target_os = "linux")]
    {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `l` is a valid rlimit for both calls.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 {
                l.rlim_cur = l.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &l);
            }
        }
    }
}

/// `/metrics` scraped `n` times one after the other: the statuses and the slowest answer.
fn scrape_timed(addr: std::net::SocketAddr, n: usize) -> (Vec<u16>, Duration) {
    let mut statuses = Vec::new();
    let mut worst = Duration::ZERO;
    for _ in 0..n {
        let t = std::time::Instant::now();
        statuses.push(get(addr, "/metrics").0);
        worst = worst.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    }
    (statuses, worst)
}

/// spec/live.md "Bounds" (issue 34 §1): slow and idle clients hold connections, never a
/// worker: with 100 slowloris connections and 600 idle ones (more than `MAX_CONNECTIONS`: new
/// ones push the oldest out), all reconnecting when closed, every `/metrics` scrape is answered
/// 200, each well within `READ_DEADLINE` plus slack (a generous bound: before the fix a scraper
/// was refused with a reset, or queued behind 64 slow connections for up to 32 s). The
/// engine's passes all count. The precise worst latency is measured by
/// `measure_scraper_latency_under_attack`.
#[test]
fn a_scraper_is_answered_while_slow_and_idle_clients_hold_connections() {
    use common::attackers::Attack;
    raise_fd_limit();
    let mut prof = profiler();
    let live = prof.live();
    let server = start(live);
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let engine = engine(prof, u64::MAX, Arc::clone(&stop));
    let slow = Attack::slowloris(addr, 100);
    let idle = Attack::idle(addr, 600);
    std::thread::sleep(Duration::from_millis(300));
    let (statuses, worst) = scrape_timed(addr, 20);
    let reconnects = idle.connects.load(Ordering::Relaxed);
    drop((slow, idle));
    eprintln!("worst scrape under attack: {worst:?} ({reconnects} idle connects)");
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
    let bound = Duration::from_secs(2) + Duration::from_secs(3); // READ_DEADLINE (2 s) + 3 s
    assert!(
        worst < bound,
        "a scrape took {worst:?}, more than {bound:?}"
    );
    stop.store(true, Ordering::Relaxed);
    let (prof, ran) = engine.join().unwrap();
    assert_eq!(prof.view().counters.passes, ran);
    assert_eq!(value(&scrape(addr), "brickprof_passes_total"), ran as f64);
}

/// spec/live.md "Bounds": the worst latency of a well-behaved scraper while the attacks of
/// issue 34 run (100 slowloris connections, one byte a second, reconnecting; 1,000 idle
/// connections, reconnecting), scraping back to back for 10 s. Prints the numbers written in
/// the spec: `cargo test --features serve --test serve -- --ignored --nocapture measure`.
#[test]
#[ignore = "a measurement (10 s per attack); run with --ignored --nocapture"]
fn measure_scraper_latency_under_attack() {
    use common::attackers::Attack;
    raise_fd_limit();
    let mut prof = profiler();
    let server = start(prof.live());
    let addr = server.local_addr();
    let stop = Arc::new(AtomicBool::new(false));
    let engine = engine(prof, u64::MAX, Arc::clone(&stop));
    let measure = |what: &str| {
        let end = std::time::Instant::now() + Duration::from_secs(10);
        let mut times = Vec::new();
        while std::time::Instant::now() < end {
            let t = std::time::Instant::now();
            let status = get(addr, "/metrics").0;
            times.push(t.elapsed());
            assert_eq!(status, 200, "{what}");
        }
        times.sort();
        eprintln!(
            "{what}: {} scrapes, median {:?}, p99 {:?}, worst {:?}",
            times.len(),
            times[times.len() / 2],
            times[times.len() * 99 / 100],
            times[times.len() - 1]
        );
    };
    measure("no attack");
    {
        let _slow = Attack::slowloris(addr, 100);
        measure("100 slowloris connections");
    }
    {
        let _idle = Attack::idle(addr, 1000);
        measure("1,000 idle connections");
    }
    {
        let _slow = Attack::slowloris(addr, 100);
        let _idle = Attack::idle(addr, 1000);
        measure("both");
    }
    stop.store(true, Ordering::Relaxed);
    engine.join().unwrap();
    eprintln!(
        "connection counts (answered, refused, abandoned): {:?}",
        server.connection_counts()
    );
}

/// spec/live.md "Endpoints": a head whose blank line never comes is answered, not dropped: 400
/// at once when its bytes are not HTTP, 408 at `READ_DEADLINE` when they are the start of a
/// request. The client keeps its side open (closing it was answered before the fix too).
#[test]
fn a_head_without_its_blank_line_is_answered() {
    let mut prof = profiler();
    let server = start(prof.live());
    let addr = server.local_addr();
    let open_request = |raw: &[u8]| {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.write_all(raw).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        common::scrape::parse_response(&out).unwrap_or((0, Vec::new()))
    };
    let (status, body) = open_request(b"\x00\x01garbage without a line end");
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    let (status, body) = open_request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n");
    assert_eq!(status, 408, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("blank line"));
}

/// spec/live.md "Endpoints": 64 header lines are served; 65 get 431 naming the limit (was 400,
/// "not an HTTP/1.x request").
#[test]
fn more_than_64_headers_get_431_naming_the_limit() {
    let mut prof = profiler();
    let server = start(prof.live());
    let addr = server.local_addr();
    let with_headers = |n: usize| {
        let mut raw = String::from("GET /metrics HTTP/1.1\r\n");
        for i in 0..n {
            raw.push_str(&format!("X-H{i}: v\r\n"));
        }
        raw.push_str("\r\n");
        request(addr, raw.as_bytes())
    };
    assert_eq!(with_headers(64).0, 200); // MAX_HEADERS (spec/live.md: 64)
    let (status, body) = with_headers(64 + 1);
    assert_eq!(status, 431);
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("more than 64 header lines"), "{body}");
}
// The exposure warning's addresses: a unit test in src/front/serve/exposure.rs.
