//! Helpers for tests that exercise native code: a per-thread counting allocator, compiling a
//! C stand-in library, and re-running the test binary with it loaded.

use std::cell::Cell;
use std::path::Path;
use std::process::Command;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// A global allocator that counts allocations per thread, so other tests' threads and a
/// driver's own threads do not disturb the count. Install it in a test crate with
/// `#[global_allocator] static GLOBAL: ThreadCounting = ThreadCounting;`.
pub struct ThreadCounting;

// SAFETY: forwards to the system allocator; only counts.
unsafe impl std::alloc::GlobalAlloc for ThreadCounting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        std::alloc::System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        std::alloc::System.realloc(ptr, layout, size)
    }
}

/// Allocations this thread made while `f` ran (with [`ThreadCounting`] installed).
pub fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Compile the C file `source` (relative to the crate root) into the shared library `out`
/// with the system C compiler (`$CC`, else `cc`).
pub fn compile_c_library(source: &str, out: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(out)
        .arg(&source)
        .arg("-lpthread")
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler {cc:?}: {e}"));
    assert!(built.success(), "compiling {} failed", source.display());
}

/// The test harness's name of the test `test` in the module `module` (pass `module_path!()`):
/// the module path without the test binary's own name, so that a test in a file of a grouped
/// binary (`tests/<group>/x.rs`) is `x::test`, and one at a binary's root is `test`.
pub fn test_name(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_binary, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    }
}

/// Re-run this test binary's ignored test `test` (its full name, see [`test_name`]) alone with
/// `env` set, and return its output; panics unless it succeeded and printed `done` (so a
/// skipped child cannot pass).
pub fn run_child(test: &str, env: &[(&str, &std::ffi::OsStr)], done: &str) -> String {
    let mut cmd = Command::new(std::env::current_exe().expect("this test binary"));
    cmd.args([
        "--exact",
        test,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("re-run this test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains(done), "child did not run:\n{text}");
    text
}
