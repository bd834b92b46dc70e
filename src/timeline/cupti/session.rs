//! The process's one CUPTI session (spec/sync-modes.md "CUPTI", "One subscriber"): libcupti
//! loaded, the buffer callbacks registered, the record kinds enabled, once; every CUPTI
//! timeline of the process shares it, each with a namespace of external ids of its own.
//!
//! CUPTI calls the buffer callbacks on its own thread or inside a flush; they parse the records
//! into the [`Join`] behind one lock, off the hot path. A flush is `cuptiActivityFlushAll(0)`,
//! which delivers every completed record before it returns.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use super::api::{
    kind, Api, CallbackFn, CompleteFn, GraphData, RequestFn, ResourceData,
    CBID_RESOURCE_GRAPHNODE_CLONED, CBID_RESOURCE_GRAPHNODE_CREATED, CB_DOMAIN_RESOURCE,
    EXTERNAL_KIND,
};
use super::attribution::{Act, Tally};
use super::graph_nodes::{self, node_runs, GraphNodes};
use super::join::{act, graph_act, ApiClass, Join};
use super::records::{bytes_needed, parse, Record};
use crate::{Error, Result};

/// Bytes of each activity buffer handed to CUPTI.
const BUFFER_BYTES: usize = 1 << 20;

/// The kinds enabled: kernels, copies and sets (what runs), API records (which call, needed
/// for external-correlation records to be emitted at all) and external correlation.
const KINDS: [u32; 6] = [
    kind::CONCURRENT_KERNEL,
    kind::MEMCPY,
    kind::MEMSET,
    kind::RUNTIME,
    kind::DRIVER,
    kind::EXTERNAL_CORRELATION,
];

/// What the join needs besides the records: the API names seen, classified once each.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) join: Join,
    classes: HashMap<(u32, u32), ApiClass>,
    /// Graph nodes made while a brick was open, and their clones.
    pub(crate) nodes: GraphNodes,
}

/// The process's CUPTI session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) api: Api,
    state: Mutex<State>,
    next_namespace: AtomicU16,
    started: Instant,
    /// Buffers delivered, and buffers CUPTI returned when no session could take them.
    buffers: AtomicU64,
    /// Whether the graph-node callbacks are on (graph replays are timed node by node).
    pub(crate) graphs: bool,
    /// Which timelines trace, and whether CUPTI is attached (spec "Sampled tracing").
    tracing: Mutex<Tracing>,
}

/// The session's tracing: records are on while any live timeline traces.
#[derive(Debug, Default)]
struct Tracing {
    /// Live timelines.
    live: u32,
    /// Live timelines that stopped tracing.
    paused: u32,
    /// Records are disabled (every live timeline paused).
    off: bool,
    /// CUPTI was detached (`cuptiFinalize`): re-attach before enabling.
    detached: bool,
}

/// Why the session could not start, kept so every later attempt answers the same.
#[derive(Debug, Clone)]
enum Failed {
    Missing {
        reason: String,
    },
    Call {
        call: &'static str,
        code: u32,
        message: String,
    },
}

static SESSION: OnceLock<std::result::Result<Session, Failed>> = OnceLock::new();

impl Session {
    /// The session, started at the first call: libcupti loaded, callbacks registered, kinds
    /// enabled. [`Error::NoDevice`] when libcupti is missing, [`Error::Cupti`] when a call
    /// failed (code 39: another tool holds CUPTI).
    pub(crate) fn get() -> Result<&'static Session> {
        match SESSION.get_or_init(Self::start) {
            Ok(s) => Ok(s),
            Err(Failed::Missing { reason }) => Err(Error::NoDevice {
                timeline: "cupti",
                reason: reason.clone(),
                install: super::api::INSTALL,
            }),
            Err(Failed::Call {
                call,
                code,
                message,
            }) => Err(Error::Cupti {
                call,
                code: *code,
                message: message.clone(),
            }),
        }
    }

    fn start() -> std::result::Result<Session, Failed> {
        let api = Api::load().map_err(|e| match e {
            Error::NoDevice { reason, .. } => Failed::Missing { reason },
            other => Failed::Missing {
                reason: other.to_string(),
            },
        })?;
        let failed = |e: Error| match e {
            Error::Cupti {
                call,
                code,
                message,
            } => Failed::Call {
                call,
                code,
                message,
            },
            other => Failed::Missing {
                reason: other.to_string(),
            },
        };
        api.register(
            buffer_requested as RequestFn,
            buffer_completed as CompleteFn,
        )
        .map_err(failed)?;
        enable_kinds(&api).map_err(failed)?;
        // The one subscriber: under Nsight it is refused (39), and the session with it.
        let graphs = api
            .subscribe_graph_nodes(resource_callback as CallbackFn)
            .map_err(failed)?;
        Ok(Session {
            graphs,
            api,
            state: Mutex::new(State {
                join: Join::new(EXTERNAL_KIND),
                classes: HashMap::new(),
                nodes: GraphNodes::default(),
            }),
            next_namespace: AtomicU16::new(1),
            started: Instant::now(),
            buffers: AtomicU64::new(0),
            tracing: Mutex::new(Tracing::default()),
        })
    }

    fn tracing(&self) -> MutexGuard<'_, Tracing> {
        self.tracing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A timeline is born (tracing, as every timeline starts) or gone (`traced`: whether it
    /// was tracing); records come back on if it was the one paused timeline left out.
    pub(crate) fn joined(&self) -> Result<()> {
        let mut t = self.tracing();
        t.live += 1;
        self.attach(&mut t)
    }

    pub(crate) fn left(&self, traced: bool) {
        let mut t = self.tracing();
        t.live = t.live.saturating_sub(1);
        if !traced {
            t.paused = t.paused.saturating_sub(1);
        }
    }

    /// A timeline stops tracing: when every live timeline has, records are disabled, or CUPTI
    /// detached (`detach`, where `cuptiFinalize` exists). Whether that happened now.
    pub(crate) fn pause(&self, detach: bool) -> Result<bool> {
        let mut t = self.tracing();
        t.paused += 1;
        if t.off || t.paused < t.live {
            return Ok(false);
        }
        self.flush()?;
        if detach && self.api.finalize()? {
            t.detached = true;
        } else {
            for k in KINDS {
                self.api.disable(k)?;
            }
        }
        t.off = true;
        Ok(true)
    }

    /// A timeline traces again: records on, CUPTI re-attached (callbacks registered, kinds
    /// enabled, the graph-node subscriber again) if it was detached.
    pub(crate) fn resume(&self) -> Result<()> {
        let mut t = self.tracing();
        t.paused = t.paused.saturating_sub(1);
        self.attach(&mut t)
    }

    fn attach(&self, t: &mut Tracing) -> Result<()> {
        if !t.off {
            return Ok(());
        }
        if t.detached {
            self.api.register(
                buffer_requested as RequestFn,
                buffer_completed as CompleteFn,
            )?;
        }
        enable_kinds(&self.api)?;
        if t.detached && self.graphs {
            self.api
                .subscribe_graph_nodes(resource_callback as CallbackFn)?;
        }
        t.detached = false;
        t.off = false;
        Ok(())
    }

    /// A namespace of external ids for a new timeline (1, 2, ...).
    pub(crate) fn namespace(&self) -> Result<u16> {
        let ns = self.next_namespace.fetch_add(1, Ordering::Relaxed);
        if ns == 0 {
            return Err(Error::Timeline(
                "cupti: 65,535 CUPTI timelines were made in this process; reuse one".into(),
            ));
        }
        Ok(ns)
    }

    /// Host ns since the session started (for the join's patience).
    fn now_ns(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Flush every completed record into the join (blocking in CUPTI, never on the device).
    pub(crate) fn flush(&self) -> Result<()> {
        self.api.flush()?;
        let now = self.now_ns();
        self.state().join.flushed(now);
        Ok(())
    }

    /// Whether namespace `ns` has an incomplete call below `position`; its complete records.
    pub(crate) fn collect(&self, ns: u16, position: u64) -> (bool, Vec<Act>) {
        let mut s = self.state();
        let pending = s.join.pending_below(ns, position);
        (pending, s.join.take(ns))
    }

    /// Whether namespace `ns` created a graph node at position `from` or later (a capture).
    pub(crate) fn captured_from(&self, ns: u16, from: u64) -> bool {
        self.state().nodes.created_from(ns, from)
    }

    /// The executable nodes cloned from the nodes namespace `ns` created at `base..=end`,
    /// each with its capture position relative to `base`, plus 1.
    pub(crate) fn template(&self, ns: u16, base: u64, end: u64) -> HashMap<u64, u16> {
        self.state().nodes.template(ns, base, end)
    }

    /// Namespace `ns` is gone: its records from now on count as outside any brick.
    pub(crate) fn retire(&self, ns: u16) {
        self.state().join.retire(ns);
    }

    /// Activity outside any brick of any timeline, launches given up, launches captured.
    pub(crate) fn totals(&self) -> (Tally, u64, u64) {
        let s = self.state();
        (s.join.outside(), s.join.missing(), s.join.captured())
    }

    /// Parse a delivered buffer into the join.
    ///
    /// # Safety
    /// `buffer` holds `valid` bytes of records CUPTI delivered.
    unsafe fn deliver(&self, buffer: *mut u8, valid: usize) {
        self.buffers.fetch_add(1, Ordering::Relaxed);
        let now = self.now_ns();
        let mut state = self.state();
        let State { join, classes, .. } = &mut *state;
        let mut at: *mut u8 = std::ptr::null_mut();
        // SAFETY: the caller's contract; each record returned lies in the buffer.
        while let Some(r) = unsafe { self.api.next_record(buffer, valid, at) } {
            at = r;
            let offset = (r as usize).wrapping_sub(buffer as usize);
            if offset >= valid {
                break;
            }
            let left = valid - offset;
            // SAFETY: `left` bytes from `r` lie in the buffer's valid part; at least 4 are
            // read only when there are 4.
            let bytes = unsafe { std::slice::from_raw_parts(r, left) };
            let need = if left >= 4 {
                bytes_needed(u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
            } else {
                0
            };
            match parse(&bytes[..left.min(need.max(4))]) {
                Some(Record::Activity {
                    op,
                    start,
                    end,
                    device,
                    stream,
                    correlation,
                    graph_node,
                    graph,
                }) => join.activity(
                    correlation,
                    graph_act(act(op, start, end, device, stream), graph_node, graph),
                    now,
                ),
                Some(Record::External {
                    kind,
                    id,
                    correlation,
                }) => join.external(kind, id, correlation, now),
                Some(Record::Api {
                    kind,
                    cbid,
                    thread,
                    correlation,
                    ..
                }) => {
                    let class = *classes.entry((kind, cbid)).or_insert_with(|| {
                        self.api
                            .callback_name(kind, cbid)
                            .map_or(ApiClass::Nothing, |n| ApiClass::of(&n))
                    });
                    join.api(correlation, thread, class, now);
                }
                None => {}
            }
        }
    }
}

/// Enable [`KINDS`]; on a refusal, disable those enabled and return it.
fn enable_kinds(api: &Api) -> Result<()> {
    for (i, k) in KINDS.iter().enumerate() {
        if let Err(e) = api.enable(*k) {
            for done in &KINDS[..i] {
                let _ = api.disable(*done);
            }
            return Err(e);
        }
    }
    Ok(())
}

fn buffer_layout() -> std::alloc::Layout {
    // 1 MiB aligned to 8, as CUPTI requires: a valid layout.
    std::alloc::Layout::from_size_align(BUFFER_BYTES, 8).unwrap_or(std::alloc::Layout::new::<u64>())
}

/// CUPTI's resource callback: graph nodes created (during a capture: the brick open on this
/// thread owns them) and cloned (at instantiation).
unsafe extern "C" fn resource_callback(
    _user: *mut std::ffi::c_void,
    domain: u32,
    cbid: u32,
    data: *const std::ffi::c_void,
) {
    if domain != CB_DOMAIN_RESOURCE
        || data.is_null()
        || !(cbid == CBID_RESOURCE_GRAPHNODE_CREATED || cbid == CBID_RESOURCE_GRAPHNODE_CLONED)
    {
        return;
    }
    let Some(Ok(s)) = SESSION.get() else {
        return;
    };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: for these callbacks CUPTI passes a CUpti_ResourceData whose descriptor is a
        // CUpti_GraphData, valid during the call.
        let g = unsafe {
            let r = &*(data as *const ResourceData);
            if r.descriptor.is_null() {
                return;
            }
            &*(r.descriptor as *const GraphData)
        };
        if !node_runs(g.node_type) {
            return;
        }
        let Some(node) = s.api.graph_node_id(g.node) else {
            return;
        };
        if cbid == CBID_RESOURCE_GRAPHNODE_CREATED {
            let open = graph_nodes::open();
            s.state().nodes.created(node, open);
        } else {
            let original = s.api.graph_node_id(g.original_node).unwrap_or(0);
            let graph = s.api.graph_id(g.graph).unwrap_or(0);
            let mut state = s.state();
            state.nodes.cloned(node, original);
            state.join.node_cloned(graph);
        }
    }));
}

/// CUPTI asks for a buffer: 1 MiB, 8-byte aligned (no limit on the records in it).
unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max: *mut usize) {
    let layout = buffer_layout();
    // SAFETY: a non-zero layout.
    let b = unsafe { std::alloc::alloc(layout) };
    // SAFETY: CUPTI passes valid out-pointers.
    unsafe {
        *buffer = b;
        *size = if b.is_null() { 0 } else { layout.size() };
        *max = 0;
    }
}

/// CUPTI hands a buffer back: parse it into the session's join, then free it.
unsafe extern "C" fn buffer_completed(
    _ctx: *mut std::ffi::c_void,
    _stream: u32,
    buffer: *mut u8,
    size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    if let Some(Ok(s)) = SESSION.get() {
        // SAFETY: CUPTI delivered `valid` bytes of records in `buffer`.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
            s.deliver(buffer, valid.min(size))
        }));
    }
    let layout = buffer_layout();
    if size == layout.size() {
        // SAFETY: allocated in `buffer_requested` with this layout.
        unsafe { std::alloc::dealloc(buffer, layout) };
    }
}
