//! The CUDA stand-in driver (tests/cuda_standin/standin.c) for the tests that run the real FFI
//! path without a GPU: building it as `libcuda.so`, re-running a test binary's child test with
//! it first on the library path, and its control functions.

use std::ffi::{c_char, c_int, c_void, CString};

use super::native::{compile_c_library, run_child};

/// Compile the stand-in as `libcuda.so` in a temporary directory, re-run this test binary's
/// ignored test `child` with that directory first in `LD_LIBRARY_PATH` and `env_flag` set, and
/// return its output (it must print `done`).
pub fn run_on_standin(child: &str, env_flag: &str, done: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    compile_c_library(
        "tests/cuda_standin/standin.c",
        &dir.path().join("libcuda.so"),
    );
    let mut path = dir.path().as_os_str().to_owned();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    let env = [
        ("LD_LIBRARY_PATH", path.as_os_str()),
        (env_flag, "1".as_ref()),
    ];
    run_child(child, &env, done)
}

/// The stand-in's control functions, found in the library cudarc loaded.
pub struct StandIn {
    pub launch: extern "C" fn(*mut c_void, u64),
    pub stream_waits: extern "C" fn(*mut c_void) -> i64,
    pub set_clock: extern "C" fn(f64, i64),
    pub fail_next: extern "C" fn(c_int, c_int),
    pub set_capturing: extern "C" fn(c_int),
    pub capturing: extern "C" fn() -> c_int,
    counters: extern "C" fn(*mut i64, c_int) -> c_int,
    kernels_enqueued: extern "C" fn() -> u64,
    kernel_span: extern "C" fn(u64, *mut u64, *mut u64) -> c_int,
}

// standin_fail_next kinds.
pub const F_RECORD: c_int = 1;
pub const F_STREAM_SYNC: c_int = 2;
pub const F_ELAPSED: c_int = 3;
pub const F_EVENT_CREATE: c_int = 4;
pub const F_SET_CURRENT: c_int = 7;
// CUresult codes (only the driver's own: cudarc reads them as its enum).
pub const CUDA_ERROR_INVALID_HANDLE: c_int = 400;
pub const CUDA_ERROR_LAUNCH_FAILED: c_int = 719;
pub const CUDA_ERROR_UNKNOWN: c_int = 999;
pub const CUDA_ERROR_INVALID_VALUE: c_int = 1;
pub const CAPTURE_ACTIVE: c_int = 1;

/// The stand-in's counters, in standin.c's order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub event_create: i64,
    pub event_destroy: i64,
    pub record: i64,
    pub stream_sync: i64,
    pub elapsed: i64,
    pub stream_create: i64,
    pub stream_destroy: i64,
    pub get_current: i64,
    pub set_current: i64,
    pub is_capturing: i64,
    pub query: i64,
    pub event_sync: i64,
    pub record_while_capturing: i64,
    pub invalid_context: i64,
    pub ctx_sync: i64,
    pub launch: i64,
    /// `cuEventRecordWithFlags(.., CU_EVENT_RECORD_EXTERNAL)` calls.
    pub record_external: i64,
    pub graph_launch: i64,
    /// `cuGraphExecEventRecordNodeSetEvent` calls.
    pub set_event: i64,
    pub exec_update: i64,
    pub graph_get_nodes: i64,
    /// Graphs captured and not destroyed.
    pub graphs_live: i64,
    /// Executables instantiated and not destroyed.
    pub execs_live: i64,
}

unsafe extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

const RTLD_NOW: c_int = 2;

impl StandIn {
    /// The control functions of the `libcuda.so` the library path finds (the stand-in).
    pub fn load() -> StandIn {
        let name = CString::new("libcuda.so").unwrap();
        // SAFETY: opens the library the search path finds first, the one cudarc opens (the
        // same file gives the same handle).
        let lib = unsafe { dlopen(name.as_ptr(), RTLD_NOW) };
        assert!(
            !lib.is_null(),
            "libcuda.so not found: is LD_LIBRARY_PATH set?"
        );
        let find = |name: &str| {
            let c = CString::new(name).unwrap();
            // SAFETY: a symbol lookup in a live handle.
            let p = unsafe { dlsym(lib, c.as_ptr()) };
            assert!(!p.is_null(), "{name} not found: is this the stand-in?");
            p
        };
        // SAFETY: the symbols are the C functions of standin.c with these signatures.
        unsafe {
            StandIn {
                launch: std::mem::transmute::<*mut c_void, extern "C" fn(*mut c_void, u64)>(find(
                    "standin_launch",
                )),
                stream_waits: std::mem::transmute::<*mut c_void, extern "C" fn(*mut c_void) -> i64>(
                    find("standin_stream_waits"),
                ),
                set_clock: std::mem::transmute::<*mut c_void, extern "C" fn(f64, i64)>(find(
                    "standin_set_clock",
                )),
                fail_next: std::mem::transmute::<*mut c_void, extern "C" fn(c_int, c_int)>(find(
                    "standin_fail_next",
                )),
                set_capturing: std::mem::transmute::<*mut c_void, extern "C" fn(c_int)>(find(
                    "standin_set_capturing",
                )),
                capturing: std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(find(
                    "standin_capturing",
                )),
                counters: std::mem::transmute::<*mut c_void, extern "C" fn(*mut i64, c_int) -> c_int>(
                    find("standin_counters"),
                ),
                kernels_enqueued: std::mem::transmute::<*mut c_void, extern "C" fn() -> u64>(find(
                    "standin_kernels_enqueued",
                )),
                kernel_span: std::mem::transmute::<
                    *mut c_void,
                    extern "C" fn(u64, *mut u64, *mut u64) -> c_int,
                >(find("standin_kernel_span")),
            }
        }
    }

    /// The number the next kernel enqueued (launched, or run by a graph's replay) gets.
    pub fn next_kernel(&self) -> u64 {
        (self.kernels_enqueued)()
    }

    /// Device ns from kernel `first`'s start to kernel `last`'s end, as they ran (both must
    /// have run).
    pub fn kernels_ns(&self, first: u64, last: u64) -> u64 {
        let span = |k: u64| {
            let (mut start, mut end) = (0u64, 0u64);
            let code = (self.kernel_span)(k, &mut start, &mut end);
            assert_eq!(code, 0, "kernel {k} has not run (or left the log)");
            (start, end)
        };
        span(last).1.saturating_sub(span(first).0)
    }

    /// Every counter now.
    pub fn counts(&self) -> Counts {
        let mut c = [0i64; 32];
        let n = (self.counters)(c.as_mut_ptr(), c.len() as c_int);
        assert!(n >= 23, "the stand-in has {n} counters");
        Counts {
            event_create: c[0],
            event_destroy: c[1],
            record: c[2],
            stream_sync: c[3],
            elapsed: c[4],
            stream_create: c[5],
            stream_destroy: c[6],
            get_current: c[7],
            set_current: c[8],
            is_capturing: c[9],
            query: c[10],
            event_sync: c[11],
            record_while_capturing: c[12],
            invalid_context: c[13],
            ctx_sync: c[14],
            launch: c[15],
            record_external: c[16],
            graph_launch: c[17],
            set_event: c[18],
            exec_update: c[19],
            graph_get_nodes: c[20],
            graphs_live: c[21],
            execs_live: c[22],
        }
    }
}
