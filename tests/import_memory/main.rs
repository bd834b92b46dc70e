//! spec/imports.md "Memory": an import streams. A file over 100 times the fixture imports with
//! the same peak heap as the fixture and exactly its repeat count times its calls, time and
//! counters: the CSV formats (csv_files.rs) and the SQLite ones (sqlite.rs). One test in the binary,
//! running both checks in turn: the allocation counter is process-wide.

mod csv_files;
mod sqlite;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
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
pub fn peak_during<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = NOW.load(Ordering::SeqCst);
    PEAK.store(base, Ordering::SeqCst);
    let out = f();
    (out, PEAK.load(Ordering::SeqCst) - base)
}

/// What both formats' checks hold: `big` is at least 100 times the fixture `small`, the counter
/// counted, and `big`'s peak heap (`many_peak`, `times` runs) is `base`'s (`one_peak`, `base`
/// runs) give or take a record buffer's growth (64 KiB).
pub fn assert_bounded(
    small: &Path,
    big: &Path,
    (base, one_peak): (u64, usize),
    (times, many_peak): (u64, usize),
) {
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    assert!(
        size(big) >= 100 * size(small),
        "{}: {} bytes, at least 100 times {}",
        big.display(),
        size(big),
        size(small)
    );
    assert!(one_peak > 0, "the counter counts");
    assert!(
        many_peak <= one_peak + (64 << 10),
        "{}: peak heap {many_peak} bytes for {times}x against {one_peak} for {base}x",
        small.display()
    );
}

/// A fixture of tests/fixtures/vendor/.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vendor")
        .join(name)
}

#[test]
fn files_100_times_the_fixtures_import_exactly_with_bounded_memory() {
    csv_files::a_file_100_times_the_fixture_imports_exactly_with_bounded_memory();
    sqlite::a_database_100_times_the_fixture_imports_exactly_with_bounded_memory();
}

/// Exactness at scale: every brick of `many` has `times` the calls and the time of `one`'s.
pub fn assert_every_call_times(one: &brickprof::Profile, many: &brickprof::Profile, times: u64) {
    for (a, b) in one.bricks.iter().zip(&many.bricks) {
        let (a_sum, b_sum) = (a.stats.summary(), b.stats.summary());
        assert_eq!(b_sum.count, times * a_sum.count, "{}", a.name);
        assert_eq!(b_sum.total_ns, times * a_sum.total_ns, "{}", a.name);
    }
}
