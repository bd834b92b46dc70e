//! spec/imports.md "Memory": an import streams. A file over 100 times the fixture imports
//! with the same peak heap as the fixture (within a record's buffers), and exactly its rows'
//! repeat count times its calls, time and counters. One test a binary: the allocation counter is process-wide.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Peak;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        NOW.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static GLOBAL: Peak = Peak;

/// The peak heap above the current one while `f` runs, bytes.
fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = NOW.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst) - base)
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vendor")
        .join(name)
}

/// `src` with its data rows (those after the first `skip` lines) written `times` times.
fn repeated(src: &Path, dst: &Path, skip: usize, times: usize) {
    let text = std::fs::read_to_string(src).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(dst).unwrap());
    for l in &lines[..skip] {
        writeln!(out, "{l}").unwrap();
    }
    for _ in 0..times {
        for l in &lines[skip..] {
            writeln!(out, "{l}").unwrap();
        }
    }
}

#[test]
fn a_file_100_times_the_fixture_imports_exactly_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    // ncu: three lines before the header, the header and the units row.
    let big = dir.path().join("ncu_big.csv");
    repeated(&fixture("ncu_raw_nvtx.csv"), &big, 5, 160);
    // rocprofv3: the kernel trace 120 times, and its markers.
    let kbig = dir.path().join("1_kernel_trace.csv");
    repeated(&fixture("rocprofv3/3141_kernel_trace.csv"), &kbig, 1, 120);
    repeated(
        &fixture("rocprofv3/3141_marker_api_trace.csv"),
        &dir.path().join("1_marker_api_trace.csv"),
        1,
        120,
    );
    for (small, big, times) in [
        (fixture("ncu_raw_nvtx.csv"), big, 160u64),
        (fixture("rocprofv3/3141_kernel_trace.csv"), kbig, 120),
    ] {
        let (one, one_peak) = peak_during(|| brickprof::import::import(&small).unwrap());
        let (many, many_peak) = peak_during(|| brickprof::import::import(&big).unwrap());
        let size = |p: &Path| std::fs::metadata(p).unwrap().len();
        assert!(
            size(&big) >= 100 * size(&small),
            "at least 100 times the fixture"
        );
        eprintln!(
            "{}: peak heap {one_peak} B (1x), {many_peak} B ({times}x)",
            small.display()
        );
        assert!(one_peak > 0, "the counter counts");
        // Memory: what the fixture took, give or take a record buffer's growth.
        assert!(
            many_peak <= one_peak + (64 << 10),
            "{}: peak heap {many_peak} bytes for {times}x against {one_peak} for 1x",
            small.display()
        );
        // Exactness at scale: every call `times` times.
        for (a, b) in one.profile.bricks.iter().zip(&many.profile.bricks) {
            assert_eq!(b.stats.count(), times * a.stats.count(), "{}", a.name);
            assert_eq!(b.stats.total_ns(), times * a.stats.total_ns(), "{}", a.name);
        }
        for (a, b) in one
            .profile
            .hardware_counters
            .iter()
            .zip(&many.profile.hardware_counters)
        {
            assert_eq!(b.dram_bytes, a.dram_bytes.map(|x| times * x));
            assert_eq!(b.flops, a.flops.map(|x| times * x));
        }
        let outside = |p: &brickprof::Profile| p.meta.outside_bricks.unwrap_or_default().kernels;
        assert_eq!(outside(&many.profile), times * outside(&one.profile));
    }
}
