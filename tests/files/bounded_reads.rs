//! Files whose size or shape would cost memory out of proportion: each is refused, or read,
//! within a stated bound (spec/divergence.md "Capture files", "The token axis").

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use brickprof::capture::CaptureStore;
use brickprof::{profile::GeneratedTokens, Error};

thread_local! {
    /// Bytes this thread holds allocated now, and the most it held since the last reset.
    static HELD: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A global allocator that tracks, per thread, the bytes held and their peak (other tests'
/// threads do not disturb it).
struct PeakBytes;

fn held(grow: u64, shrink: u64) {
    let _ = HELD.try_with(|h| {
        let (now, peak) = h.get();
        let now = (now + grow).saturating_sub(shrink);
        h.set((now, peak.max(now)));
    });
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for PeakBytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        held(layout.size() as u64, 0);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        held(0, layout.size() as u64);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        // Old and new blocks both exist while the bytes move.
        held(size as u64, 0);
        held(0, layout.size() as u64);
        System.realloc(ptr, layout, size)
    }
}

#[global_allocator]
static GLOBAL: PeakBytes = PeakBytes;

/// The most bytes this thread held at once while `f` ran, above what it held before.
fn peak_bytes_during<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let (before, _) = HELD.with(Cell::get);
    HELD.with(|h| h.set((before, before)));
    let out = f();
    let (_, peak) = HELD.with(Cell::get);
    (out, peak - before)
}

#[test]
fn a_capture_file_larger_than_its_header_says_is_refused_from_the_header() {
    // spec/divergence.md "Capture files": a valid header on a sparse 3 GiB file. Before, the
    // whole file was read (3.08 GB, 10.6 s) before "file not fully covered"; now the header
    // is checked against the file's size first, and the error says what does not fit.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("captures.safetensors");
    let plan = brickprof::capture::CapturePlan {
        kernels: vec!["0:RmsNorm".parse().unwrap()],
        budget_bytes: 1 << 20,
        ..Default::default()
    };
    let mut prof = brickprof::BrickProfiler::new(brickprof::ProfilerConfig {
        layers: 1,
        capture_plan: plan,
        ..Default::default()
    })
    .unwrap();
    prof.checksums()
        .record(Some(0), brickprof::BrickId::RmsNorm, &[1.0f32, 2.0, 3.0]);
    let store = prof.checksums().take_captures();
    assert_eq!(store.tensors.len(), 1);
    store.save(&path).unwrap();
    let written = std::fs::metadata(&path).unwrap().len();
    let len = 3u64 << 30;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len)
        .unwrap();
    let err = CaptureStore::load(&path).unwrap_err();
    let shown = err.to_string();
    assert!(matches!(err, Error::Invalid { .. }), "{shown}");
    assert!(
        shown.contains("captures.safetensors")
            && shown.contains("describes 12 bytes of tensor data")
            && shown.contains(&format!("{} after it", len - (written - 12))),
        "{shown}"
    );
}

#[test]
fn a_tokens_file_costs_its_text_and_the_tokens_lean_form() {
    // spec/divergence.md "The token axis": loading holds the file's text and, per token, 4
    // bytes of id and 4 bytes plus the text's UTF-8 (each vector up to twice that while it
    // grows). Before: about 6 to 13 times the file's size (a 60 MB file took 939 MB), every
    // value buffered generically by `#[serde(flatten)]` and each text its own `String`.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.json");
    let n = 200_000u32;
    let make = || {
        let ids: Vec<u32> = (0..n)
            .map(|i| i.wrapping_mul(2_654_435_761) % 50_000)
            .collect();
        let text: Vec<String> = ids.iter().map(|i| format!(" t{}", i % 7)).collect();
        (ids, text)
    };
    let (ids, text) = make();
    let text_bytes: u64 = text.iter().map(|t| t.len() as u64).sum();
    let tokens = GeneratedTokens::new(ids, text).unwrap();
    tokens.save(&path).unwrap();
    drop(tokens);
    let file = std::fs::metadata(&path).unwrap().len();
    let (loaded, peak) = peak_bytes_during(|| GeneratedTokens::load(&path).unwrap());
    // Every id and text read back (made again, so they are not held while loading).
    let (ids, text) = make();
    assert_eq!((ids.len(), text.len()), (n as usize, n as usize));
    assert_eq!(loaded, GeneratedTokens::new(ids, text).unwrap());
    let bound = file + 2 * (8 * u64::from(n) + text_bytes);
    assert!(
        peak <= bound,
        "loading a {file}-byte tokens.json held {peak} bytes at its peak (bound {bound})"
    );
}
