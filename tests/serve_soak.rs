//! Soak (spec/live.md "Soak", issue 27 §4): a million passes with a scraper reading /metrics
//! back to back. Every scraped counter, `_count` and bucket only
//! grows; at the end the scrape equals what the engine recorded (nothing lost); the process's
//! resident memory after warm-up and at the end differ by at most `RSS_SLACK_KIB`.
//!
//! Run in release mode (CI: `cargo test --release --features serve --test serve_soak --
//! --nocapture`): a million passes of four bricks take a few seconds. Counts only, no timed
//! assertion: the engine runs at least `PASSES` passes and until the scraper has answered
//! `MIN_SCRAPES` times.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use brickprof::serve::Server;
use brickprof::{BrickId, BrickProfiler, PassShape, Phase, ProfilerConfig};
use common::scrape::{scrape, value, Sample};

/// Passes the engine runs at least.
const PASSES: u64 = 1_000_000;
/// Passes and scrapes before the "after warm-up" memory reading: the books, the pass series
/// ring (4,096 passes), the server's threads and the allocator's pools for the scrapes'
/// buffers (the scraper's and the workers') are all in use by then.
const WARMUP_PASSES: u64 = 100_000;
const WARMUP_SCRAPES: u64 = 10;
/// Scrapes the engine waits for (running more passes) before it stops.
const MIN_SCRAPES: u64 = 100;
/// The most the engine runs, whatever the scraper does (every loop is bounded in count).
const MAX_PASSES: u64 = 100 * PASSES;
/// Resident memory may grow by at most this much from warm-up to the end: 1 MiB. Over the
/// 900,000 passes after warm-up, anything the engine kept per pass (2 bytes or more) would grow
/// by more than that; so would anything kept per scrape (over the 90 scrapes after warm-up, an
/// exposition's text of about 20 KiB each). Below it: the allocator's pools for the scrapes'
/// transient buffers, which come and go (about 0.3 MiB over the first 150 scrapes, then flat).
const RSS_SLACK_KIB: u64 = 1024;
const LAYERS: usize = 2;

/// This process's resident memory (VmRSS), KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line")
}

/// One pass: a prefill every 16th pass, decode otherwise; per layer an RmsNorm and a
/// QkvProjection, then an LmHead.
fn pass(prof: &mut BrickProfiler, i: u64) {
    let prefill = i.is_multiple_of(16);
    let shape = if prefill {
        PassShape::new(16, 1, 16).unwrap()
    } else {
        PassShape::new(1, 1, 16 + i % 16).unwrap()
    };
    prof.begin_pass();
    prof.set_pass_shape(shape);
    for layer in 0..LAYERS {
        prof.begin_layer(layer);
        for b in [BrickId::RmsNorm, BrickId::QkvProjection] {
            let t = prof.start_brick(b);
            std::hint::black_box(i);
            prof.stop_brick(t, 1);
        }
        prof.end_layer();
    }
    let t = prof.start_brick(BrickId::LmHead);
    prof.stop_brick(t, 1);
    prof.end_pass(u64::from(shape.new_tokens())).unwrap();
}

/// The series that only grow (counters, histogram counts and buckets), by name and labels.
fn monotone_series(samples: &[Sample]) -> BTreeMap<String, f64> {
    samples
        .iter()
        .filter(|s| {
            s.name.ends_with("_total") || s.name.ends_with("_count") || s.name.ends_with("_bucket")
        })
        .map(|s| (format!("{}{:?}", s.name, s.labels), s.value))
        .collect()
}

/// spec/live.md "Soak": a million passes scraped back to back; counters monotone and, at the
/// end, equal to what was recorded; resident memory flat after warm-up.
#[test]
fn a_million_passes_scraped_lose_nothing_and_keep_memory_flat() {
    let mut prof = BrickProfiler::new(ProfilerConfig::with_layers(LAYERS)).unwrap();
    let server = Server {
        addr: "127.0.0.1:0".into(),
        ..Server::default()
    }
    .start(prof.live())
    .unwrap();
    let addr = server.local_addr();
    let done = Arc::new(AtomicBool::new(false));
    let scrapes = Arc::new(AtomicU64::new(0));
    let scraper = {
        let (done, scrapes) = (Arc::clone(&done), Arc::clone(&scrapes));
        std::thread::spawn(move || {
            let mut last: BTreeMap<String, f64> = BTreeMap::new();
            let mut n = 0u64;
            while !done.load(Ordering::Relaxed) {
                n += 1;
                for (key, v) in monotone_series(&scrape(addr)) {
                    let before = last.insert(key.clone(), v).unwrap_or(0.0);
                    assert!(v >= before, "{key} went from {before} to {v} (scrape {n})");
                }
                scrapes.fetch_add(1, Ordering::Relaxed);
            }
            last
        })
    };

    let rss_start = rss_kib();
    let mut rss_warm = None;
    let mut ran = 0u64;
    while ran < PASSES || scrapes.load(Ordering::Relaxed) < MIN_SCRAPES {
        assert!(ran < MAX_PASSES, "the scraper answered too few times");
        pass(&mut prof, ran);
        ran += 1;
        if rss_warm.is_none()
            && ran >= WARMUP_PASSES
            && scrapes.load(Ordering::Relaxed) >= WARMUP_SCRAPES
        {
            rss_warm = Some((ran, rss_kib()));
        }
    }
    let (warm_passes, rss_warm) = rss_warm.expect("warmed up");
    let rss_end = rss_kib();
    done.store(true, Ordering::Relaxed);
    let last = scraper.join().unwrap();
    let scraped = scrapes.load(Ordering::Relaxed);

    // The engine's own count, and what a scrape after the last pass shows.
    let profile = prof.profile();
    let c = &profile.meta.counters;
    assert_eq!(c.passes, ran, "every pass counted");
    assert_eq!(
        (c.dropped, c.unclosed),
        (0, 0),
        "nothing dropped or left open"
    );
    let samples = scrape(addr);
    assert_eq!(value(&samples, "brickprof_passes_total"), ran as f64);
    let prefills = ran.div_ceil(16);
    let decodes = ran - prefills;
    assert_eq!(
        value(&samples, "brickprof_tokens_total"),
        (16 * prefills + decodes) as f64
    );
    let per_pass = [
        (BrickId::RmsNorm, LAYERS as u64),
        (BrickId::QkvProjection, LAYERS as u64),
        (BrickId::LmHead, 1),
    ];
    for (brick, calls) in per_pass {
        for (phase, passes) in [(Phase::Prefill, prefills), (Phase::Decode, decodes)] {
            let labelled = |name: &str| {
                samples
                    .iter()
                    .find(|s| {
                        s.name == name
                            && s.labels.get("brick").map(String::as_str) == Some(brick.name())
                            && s.labels.get("phase") == Some(&phase.to_string())
                            && s.labels.get("le").is_none_or(|le| le == "+Inf")
                    })
                    .unwrap_or_else(|| panic!("{name} of {brick} in {phase} missing"))
                    .value
            };
            let want = (calls * passes) as f64;
            assert_eq!(
                labelled("brickprof_brick_calls_total"),
                want,
                "{brick} {phase}"
            );
            assert_eq!(labelled("brickprof_brick_seconds_count"), want);
            assert_eq!(
                labelled("brickprof_brick_seconds_bucket"),
                want,
                "+Inf bucket"
            );
        }
    }
    // The final scrape is at or above every scrape taken while the engine ran.
    let end = monotone_series(&samples);
    for (key, v) in &last {
        assert!(
            end.get(key).is_some_and(|e| e >= v),
            "{key}: {v} then {:?}",
            end.get(key)
        );
    }
    drop(server); // stops it, joining its threads

    println!(
        "soak: {ran} passes, {scraped} scrapes of /metrics; VmRSS {rss_start} KiB at the \
         start, {rss_warm} KiB after warm-up ({warm_passes} passes, {WARMUP_SCRAPES} scrapes), \
         {rss_end} KiB at the end"
    );
    assert!(
        rss_end <= rss_warm + RSS_SLACK_KIB,
        "resident memory grew from {rss_warm} KiB after warm-up to {rss_end} KiB"
    );
}
