//! The CUPTI functions the timeline calls, loaded from `libcupti` at run time with
//! `libloading` (spec/sync-modes.md "CUPTI"). Only the documented activity API: callbacks for
//! buffers, enabling kinds, flushing, reading records, external correlation, the timestamp.
//!
//! Why not cudarc's `cupti` module: it pulls in cudarc's runtime bindings and a 41,000-line
//! binding file for a dozen calls, and its loader panics when the library or one symbol is
//! missing, where brickprof must fall back to the event timeline with one line. Here a missing
//! library or symbol is an [`Error::NoDevice`], never a panic.

use std::ffi::{c_char, c_void, CStr};

use crate::{Error, Result};

/// `CUptiResult` values the timeline tells apart.
pub(crate) const CUPTI_SUCCESS: u32 = 0;
/// Another subscriber holds CUPTI (Nsight Systems, Nsight Compute, another profiler).
pub(crate) const CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: u32 = 39;

/// `CUpti_ActivityKind` values.
pub(crate) mod kind {
    pub(crate) const MEMCPY: u32 = 1;
    pub(crate) const MEMSET: u32 = 2;
    pub(crate) const KERNEL: u32 = 3;
    pub(crate) const DRIVER: u32 = 4;
    pub(crate) const RUNTIME: u32 = 5;
    pub(crate) const CONCURRENT_KERNEL: u32 = 10;
    pub(crate) const EXTERNAL_CORRELATION: u32 = 39;
}

/// `CUpti_CallbackDomain` values (for `cuptiGetCallbackName`).
pub(crate) const CB_DOMAIN_DRIVER_API: u32 = 1;
pub(crate) const CB_DOMAIN_RUNTIME_API: u32 = 2;

/// The resource callback domain and its graph-node callbacks.
pub(crate) const CB_DOMAIN_RESOURCE: u32 = 3;
pub(crate) const CBID_RESOURCE_GRAPHNODE_CREATED: u32 = 13;
pub(crate) const CBID_RESOURCE_GRAPHNODE_CLONED: u32 = 20;

/// `CUpti_ResourceData`: the resource callback's data.
#[repr(C)]
pub(crate) struct ResourceData {
    pub(crate) context: *mut c_void,
    pub(crate) stream: *mut c_void,
    pub(crate) descriptor: *mut c_void,
}

/// `CUpti_GraphData`: a graph-node callback's descriptor.
#[repr(C)]
pub(crate) struct GraphData {
    pub(crate) graph: *mut c_void,
    pub(crate) original_graph: *mut c_void,
    pub(crate) node: *mut c_void,
    pub(crate) original_node: *mut c_void,
    pub(crate) node_type: i32,
    pub(crate) dependency: *mut c_void,
    pub(crate) graph_exec: *mut c_void,
}

/// The subscriber callback's C signature (`CUpti_CallbackFunc`).
pub(crate) type CallbackFn = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);

/// brickprof's external-correlation kind: `CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1`, so that
/// an engine pushing `CUSTOM0` ids of its own (as the fixture's program does) is left alone.
pub(crate) const EXTERNAL_KIND: u32 = 4;

/// The buffer-request callback's C signature.
pub(crate) type RequestFn = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
/// The buffer-completed callback's C signature.
pub(crate) type CompleteFn = unsafe extern "C" fn(*mut c_void, u32, *mut u8, usize, usize);

type RegisterFn = unsafe extern "C" fn(Option<RequestFn>, Option<CompleteFn>) -> u32;
type KindFn = unsafe extern "C" fn(u32) -> u32;
type FlushFn = unsafe extern "C" fn(u32) -> u32;
type NextFn = unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> u32;
type PushFn = unsafe extern "C" fn(u32, u64) -> u32;
type PopFn = unsafe extern "C" fn(u32, *mut u64) -> u32;
type TimestampFn = unsafe extern "C" fn(*mut u64) -> u32;
type FinalizeFn = unsafe extern "C" fn() -> u32;
type NameFn = unsafe extern "C" fn(u32, u32, *mut *const c_char) -> u32;
type ResultStringFn = unsafe extern "C" fn(u32, *mut *const c_char) -> u32;
type SubscribeFn = unsafe extern "C" fn(*mut *mut c_void, CallbackFn, *mut c_void) -> u32;
type EnableCallbackFn = unsafe extern "C" fn(u32, *mut c_void, u32, u32) -> u32;
type NodeIdFn = unsafe extern "C" fn(*mut c_void, *mut u64) -> u32;
type GraphIdFn = unsafe extern "C" fn(*mut c_void, *mut u32) -> u32;

/// The functions graph attribution needs (all present, or graph replays are not timed).
#[derive(Clone, Copy)]
struct GraphFns {
    subscribe: SubscribeFn,
    enable_callback: EnableCallbackFn,
    node_id: NodeIdFn,
    graph_id: GraphIdFn,
}

/// The hot path's two calls, copied into each timeline (plain function pointers: no lock).
#[derive(Clone, Copy)]
pub(crate) struct Correlation {
    push: PushFn,
    pop: PopFn,
}

impl Correlation {
    /// Pop the id this thread pushed last (if any), push `id`. Hot path: two calls into
    /// CUPTI, no allocation, no lock of ours.
    #[inline(always)]
    pub(crate) fn replace(&self, had: bool, id: u64) -> u32 {
        let mut popped = 0u64;
        if had {
            // SAFETY: CUPTI's documented signature; `popped` outlives the call. An empty
            // stack (another thread pushed) is CUPTI_ERROR_QUEUE_EMPTY, harmless.
            unsafe { (self.pop)(EXTERNAL_KIND, &mut popped) };
        }
        // SAFETY: CUPTI's documented signature.
        unsafe { (self.push)(EXTERNAL_KIND, id) }
    }

    /// Pop this thread's id (the timeline is dropped).
    pub(crate) fn pop(&self) -> u32 {
        let mut popped = 0u64;
        // SAFETY: as in `replace`.
        unsafe { (self.pop)(EXTERNAL_KIND, &mut popped) }
    }
}

/// libcupti, opened, with the functions brickprof calls.
pub(crate) struct Api {
    /// Where it was found.
    pub(crate) path: String,
    register: RegisterFn,
    enable: KindFn,
    disable: KindFn,
    flush_all: FlushFn,
    next_record: NextFn,
    timestamp: TimestampFn,
    callback_name: Option<NameFn>,
    result_string: Option<ResultStringFn>,
    finalize: Option<FinalizeFn>,
    graph: Option<GraphFns>,
    pub(crate) correlation: Correlation,
    /// Kept open for the process's life (the callbacks live in it).
    _lib: libloading::Library,
}

/// Where to look for libcupti, in order: `$BRICKPROF_CUPTI_LIB` (a path), then the names the
/// dynamic loader resolves through the library path.
pub(crate) fn candidates() -> Vec<String> {
    let mut names = Vec::new();
    if let Some(p) = std::env::var_os("BRICKPROF_CUPTI_LIB") {
        names.push(p.to_string_lossy().into_owned());
    }
    for n in [
        "libcupti.so",
        "libcupti.so.13",
        "libcupti.so.12",
        "libcupti.so.11.8",
    ] {
        names.push(n.to_owned());
    }
    names
}

/// What to do when libcupti is missing.
pub(crate) const INSTALL: &str = "install CUPTI (the CUDA toolkit's extras/CUPTI/lib64, or pip's \
     nvidia-cuda-cupti package) and put libcupti.so on LD_LIBRARY_PATH or name it in \
     BRICKPROF_CUPTI_LIB; brickprof times bricks with CUDA events instead";

impl Api {
    /// Open libcupti and look up every function; [`Error::NoDevice`] naming what was tried
    /// when it is missing or lacks a function.
    pub(crate) fn load() -> Result<Api> {
        let tried = candidates();
        let mut last = String::new();
        for name in &tried {
            // SAFETY: opening CUPTI runs its initializers, which have no preconditions.
            match unsafe { libloading::Library::new(name) } {
                Ok(lib) => return Self::from_library(lib, name),
                Err(e) => last = e.to_string(),
            }
        }
        Err(Error::NoDevice {
            timeline: "cupti",
            reason: format!(
                "libcupti could not be loaded (tried {}; last error: {last})",
                tried.join(", ")
            ),
            install: INSTALL,
        })
    }

    fn from_library(lib: libloading::Library, path: &str) -> Result<Api> {
        let missing = |sym: &str, e: libloading::Error| Error::NoDevice {
            timeline: "cupti",
            reason: format!("{path} has no function {sym} ({e})"),
            install: INSTALL,
        };
        // SAFETY: each symbol is looked up with CUPTI's documented C signature.
        unsafe {
            macro_rules! sym {
                ($name:literal, $ty:ty) => {
                    *lib.get::<$ty>(concat!($name, "\0").as_bytes())
                        .map_err(|e| missing($name, e))?
                };
            }
            macro_rules! opt {
                ($name:literal, $ty:ty) => {
                    lib.get::<$ty>(concat!($name, "\0").as_bytes())
                        .ok()
                        .map(|s| *s)
                };
            }
            let api = Api {
                path: path.to_owned(),
                register: sym!("cuptiActivityRegisterCallbacks", RegisterFn),
                enable: sym!("cuptiActivityEnable", KindFn),
                disable: sym!("cuptiActivityDisable", KindFn),
                flush_all: sym!("cuptiActivityFlushAll", FlushFn),
                next_record: sym!("cuptiActivityGetNextRecord", NextFn),
                timestamp: sym!("cuptiGetTimestamp", TimestampFn),
                callback_name: opt!("cuptiGetCallbackName", NameFn),
                result_string: opt!("cuptiGetResultString", ResultStringFn),
                finalize: opt!("cuptiFinalize", FinalizeFn),
                graph: (|| {
                    Some(GraphFns {
                        subscribe: opt!("cuptiSubscribe", SubscribeFn)?,
                        enable_callback: opt!("cuptiEnableCallback", EnableCallbackFn)?,
                        node_id: opt!("cuptiGetGraphNodeId", NodeIdFn)?,
                        graph_id: opt!("cuptiGetGraphId", GraphIdFn)?,
                    })
                })(),
                correlation: Correlation {
                    push: sym!("cuptiActivityPushExternalCorrelationId", PushFn),
                    pop: sym!("cuptiActivityPopExternalCorrelationId", PopFn),
                },
                _lib: lib,
            };
            Ok(api)
        }
    }

    /// The typed error of a CUPTI call that returned `code`.
    pub(crate) fn error(&self, call: &'static str, code: u32, context: &str) -> Error {
        let mut text: *const c_char = std::ptr::null();
        let name = match self.result_string {
            // SAFETY: documented signature; CUPTI returns a static string.
            Some(f) if unsafe { f(code, &mut text) } == CUPTI_SUCCESS && !text.is_null() => {
                // SAFETY: a NUL-terminated static string from CUPTI.
                crate::base::printable::printable(
                    &unsafe { CStr::from_ptr(text) }.to_string_lossy(),
                )
                .into_owned()
            }
            _ => format!("CUptiResult {code}"),
        };
        let held = if code == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED {
            " (another tool holds CUPTI in this process: Nsight Systems, Nsight Compute or \
             another profiler)"
        } else {
            ""
        };
        Error::Cupti {
            call,
            code,
            message: format!("{name}{held}{context}"),
        }
    }

    fn check(&self, call: &'static str, code: u32) -> Result<()> {
        if code == CUPTI_SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, code, ""))
        }
    }

    /// `cuptiActivityRegisterCallbacks`.
    pub(crate) fn register(&self, request: RequestFn, complete: CompleteFn) -> Result<()> {
        // SAFETY: both callbacks are `extern "C"` functions that live for the process.
        let code = unsafe { (self.register)(Some(request), Some(complete)) };
        self.check("cuptiActivityRegisterCallbacks", code)
    }

    /// `cuptiActivityEnable(kind)`.
    pub(crate) fn enable(&self, kind: u32) -> Result<()> {
        // SAFETY: documented signature.
        self.check("cuptiActivityEnable", unsafe { (self.enable)(kind) })
    }

    /// `cuptiActivityDisable(kind)`.
    pub(crate) fn disable(&self, kind: u32) -> Result<()> {
        // SAFETY: documented signature.
        self.check("cuptiActivityDisable", unsafe { (self.disable)(kind) })
    }

    /// `cuptiFinalize`: detach CUPTI from the process (records flushed, kinds disabled, the
    /// subscriber gone). `Ok(false)`: this libcupti has no `cuptiFinalize`.
    pub(crate) fn finalize(&self) -> Result<bool> {
        let Some(f) = self.finalize else {
            return Ok(false);
        };
        // SAFETY: documented signature; no CUPTI call of ours is in flight (the session's
        // tracing lock is held).
        self.check("cuptiFinalize", unsafe { f() }).map(|()| true)
    }

    /// Subscribe `callback` (the process's one subscriber) and enable the graph-node
    /// callbacks. `Ok(false)`: this libcupti lacks a function graph attribution needs; an
    /// error with code 39: another tool is CUPTI's subscriber.
    pub(crate) fn subscribe_graph_nodes(&self, callback: CallbackFn) -> Result<bool> {
        let Some(g) = self.graph else {
            return Ok(false);
        };
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: documented signature; `callback` lives for the process; `handle` outlives
        // the call.
        let code = unsafe { (g.subscribe)(&mut handle, callback, std::ptr::null_mut()) };
        self.check("cuptiSubscribe", code)?;
        for cbid in [
            CBID_RESOURCE_GRAPHNODE_CREATED,
            CBID_RESOURCE_GRAPHNODE_CLONED,
        ] {
            // SAFETY: documented signature; `handle` is the subscriber CUPTI returned.
            let code = unsafe { (g.enable_callback)(1, handle, CB_DOMAIN_RESOURCE, cbid) };
            self.check("cuptiEnableCallback", code)?;
        }
        Ok(true)
    }

    /// The id CUPTI's records give graph node `node` (`cuptiGetGraphNodeId`).
    pub(crate) fn graph_node_id(&self, node: *mut c_void) -> Option<u64> {
        let g = self.graph?;
        let mut id = 0u64;
        // SAFETY: documented signature; `node` is a node CUPTI passed to the callback.
        (!node.is_null() && unsafe { (g.node_id)(node, &mut id) } == CUPTI_SUCCESS).then_some(id)
    }

    /// The id CUPTI's records give graph `graph` (`cuptiGetGraphId`).
    pub(crate) fn graph_id(&self, graph: *mut c_void) -> Option<u32> {
        let g = self.graph?;
        let mut id = 0u32;
        // SAFETY: documented signature; `graph` is a graph CUPTI passed to the callback.
        (!graph.is_null() && unsafe { (g.graph_id)(graph, &mut id) } == CUPTI_SUCCESS).then_some(id)
    }

    /// `cuptiActivityFlushAll(0)`: completed records, delivered to the callback before it
    /// returns.
    pub(crate) fn flush(&self) -> Result<()> {
        // SAFETY: documented signature.
        self.check("cuptiActivityFlushAll", unsafe { (self.flush_all)(0) })
    }

    /// CUPTI's clock now (wall-clock ns).
    pub(crate) fn timestamp(&self) -> Result<u64> {
        let mut t = 0u64;
        // SAFETY: documented signature; `t` outlives the call.
        let code = unsafe { (self.timestamp)(&mut t) };
        self.check("cuptiGetTimestamp", code).map(|()| t)
    }

    /// The next record of a completed buffer after `record` (null: the first), or `None`.
    ///
    /// # Safety
    /// `buffer` holds `valid` bytes of records CUPTI delivered; `record` is null or a record
    /// of it.
    pub(crate) unsafe fn next_record(
        &self,
        buffer: *mut u8,
        valid: usize,
        record: *mut u8,
    ) -> Option<*mut u8> {
        let mut r = record;
        // SAFETY: the caller's contract.
        let code = unsafe { (self.next_record)(buffer, valid, &mut r) };
        (code == CUPTI_SUCCESS && !r.is_null()).then_some(r)
    }

    /// The name of API `cbid` of an API record of activity kind `kind` (RUNTIME or DRIVER).
    pub(crate) fn callback_name(&self, kind: u32, cbid: u32) -> Option<String> {
        let domain = match kind {
            kind::RUNTIME => CB_DOMAIN_RUNTIME_API,
            kind::DRIVER => CB_DOMAIN_DRIVER_API,
            _ => return None,
        };
        let f = self.callback_name?;
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: documented signature; CUPTI returns a static string.
        if unsafe { f(domain, cbid, &mut name) } != CUPTI_SUCCESS || name.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated static string from CUPTI.
        Some(
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned(),
        )
    }
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("path", &self.path).finish()
    }
}

impl std::fmt::Debug for Correlation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Correlation")
    }
}
