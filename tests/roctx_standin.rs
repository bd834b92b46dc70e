//! spec/sync-modes.md "Vendor ranges", checked against a stand-in `libroctx64.so`
//! (`tests/roctx_standin/roctx.c`): the parent compiles it into a temp directory and re-runs
//! this test binary with that directory in `LD_LIBRARY_PATH`, where brickprof's run-time
//! loader finds it. The child checks the names of the ranges, their nesting, and that ranges
//! cost the hot path no allocation, and that `$BRICKPROF_VENDOR_RANGES=roctx` turns them on in
//! the default configuration.

mod common;

use std::ffi::{c_char, c_void, CStr, CString};

use brickprof::{BrickId, BrickProfiler, CpuTimeline, ProfilerConfig};
use common::native::{allocations_during, compile_c_library, run_child, ThreadCounting};

const CHILD_ENV: &str = "BRICKPROF_ROCTX_STANDIN";

#[test]
fn roctx_ranges_reach_a_stand_in_roctx() {
    let dir = tempfile::tempdir().expect("temp dir");
    compile_c_library(
        "tests/roctx_standin/roctx.c",
        &dir.path().join("libroctx64.so"),
    );
    let env = [
        ("LD_LIBRARY_PATH", dir.path().as_os_str()),
        (CHILD_ENV, "1".as_ref()),
        (ProfilerConfig::VENDOR_RANGES_ENV, "roctx".as_ref()),
    ];
    run_child("child_pushes_named_ranges", &env, "roctx checks passed");
}

unsafe extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlopen(file: *const c_char, mode: i32) -> *mut c_void;
}

#[global_allocator]
static GLOBAL: ThreadCounting = ThreadCounting;

#[test]
#[ignore = "run by roctx_ranges_reach_a_stand_in_roctx with the stand-in on LD_LIBRARY_PATH"]
fn child_pushes_named_ranges() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    // `$BRICKPROF_VENDOR_RANGES=roctx` (what `brickprof vendor rocprofv3` sets) turns the
    // ranges on in the default configuration.
    let config = ProfilerConfig {
        layers: 2,
        ..ProfilerConfig::default()
    };
    assert!(config.vendor_ranges, "$BRICKPROF_VENDOR_RANGES=roctx");
    let mut prof = BrickProfiler::with_timeline(config, CpuTimeline::default()).unwrap();
    let tools = prof.view().vendor_tools.unwrap();
    assert!(tools.contains(&"roctx"), "roctx not loaded: {tools:?}");
    let allocations = allocations_during(|| {
        let t = prof.start_brick(BrickId::Embedding);
        prof.stop_brick(t, 1);
        for layer in 0..2 {
            prof.begin_layer(layer);
            let outer = prof.start_brick(BrickId::AttentionScore);
            let inner = prof.start_brick(BrickId::AttentionSoftmax);
            prof.stop_brick(inner, 1);
            prof.stop_brick(outer, 1);
            prof.end_layer();
        }
        let t = prof.start_brick(BrickId::LmHead);
        prof.stop_brick(t, 1);
    });
    prof.end_pass(1).unwrap();
    assert_eq!(allocations, 0, "ranges allocate nothing on the hot path");

    let (log, depths) = standin_state();
    let names: Vec<&str> = log.lines().collect();
    assert_eq!(
        names,
        [
            "Embedding",
            "L0/AttentionScore",
            "L0/AttentionSoftmax",
            "L1/AttentionScore",
            "L1/AttentionSoftmax",
            "LmHead"
        ]
    );
    assert_eq!(
        depths,
        [0, 2, 6],
        "balanced, nested two deep, one pop per push"
    );

    // spec/imports.md "Pass ranges": a pass begun with `begin_pass` is a range around its
    // bricks, `pass/{phase}/{index}`, popped at `end_pass`; a shape given before any brick
    // renames it (closed and opened again, the same index).
    prof.begin_pass();
    prof.set_pass_shape(brickprof::PassShape::new(16, 1, 16).unwrap());
    prof.begin_layer(0);
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 16);
    prof.end_layer();
    prof.end_pass(16).unwrap();
    prof.begin_pass();
    let t = prof.start_brick(BrickId::LmHead);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
    let (log, depths) = standin_state();
    let names: Vec<&str> = log.lines().skip(6).collect();
    assert_eq!(
        names,
        [
            "pass/unspecified/1",
            "pass/prefill/1",
            "L0/RmsNorm",
            "pass/unspecified/2",
            "LmHead"
        ]
    );
    assert_eq!(
        depths,
        [0, 2, 11],
        "each pass range popped once (the renamed one twice), bricks inside"
    );
    println!("roctx checks passed");
}

/// The stand-in's log of pushed names, and its (open, deepest, pops) counts.
fn standin_state() -> (String, [i32; 3]) {
    // SAFETY: the stand-in is loaded (RTLD_NOLOAD | RTLD_NOW finds it without loading again);
    // the symbols have these C signatures.
    unsafe {
        let name = CString::new("libroctx64.so").unwrap();
        let lib = dlopen(name.as_ptr(), 0x4 | 0x2);
        assert!(!lib.is_null(), "the stand-in is not loaded");
        let log = dlsym(lib, c"standin_roctx_log".as_ptr());
        let depths = dlsym(lib, c"standin_roctx_depths".as_ptr());
        assert!(!log.is_null() && !depths.is_null());
        let log: extern "C" fn() -> *const c_char = std::mem::transmute(log);
        let depths: extern "C" fn(*mut i32) = std::mem::transmute(depths);
        let mut d = [0i32; 3];
        depths(d.as_mut_ptr());
        (CStr::from_ptr(log()).to_string_lossy().into_owned(), d)
    }
}
