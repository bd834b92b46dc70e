//! The CUPTI timeline (cargo feature `cupti`): bricks timed from CUPTI's own kernel, copy and
//! set records, with nothing recorded on the engine's streams (spec/sync-modes.md "CUPTI").
//! libcupti is loaded at run time, so the feature builds and tests without CUDA; nothing of it
//! has run on a real GPU yet (its tests run on a stand-in, `tests/cuda/cupti_standin.rs`, and on
//! records from an H200, `tests/fixtures/cupti/`).
//!
//! - **A mark is a position.** At each mark the timeline pops the external-correlation id it
//!   pushed at its previous mark and pushes the next (`cuptiActivityPushExternalCorrelationId`,
//!   kind `CUSTOM1`): two calls into CUPTI, no allocation, no lock, no system call of ours.
//!   Every CUDA call the thread makes between marks `p` and `p + 1` carries id `p` in its
//!   external-correlation record, so a brick from mark `a` to mark `b` owns the records of
//!   positions `a..b` (its children's too): `cupti/attribution.rs`.
//! - **Device time** is the brick's last record's end minus its first record's start. A brick
//!   with no record is host-only: it resolves to 0 and is counted
//!   ([`CuptiTimeline::host_only_bricks`]). Records no brick covers are counted outside any
//!   brick ([`CuptiTimeline::outside_bricks`]), never dropped.
//! - **Graphs.** The graph-node callbacks name the brick open when each node was captured;
//!   clones map the executable's nodes back at `adopt_graph`; each replay is one pass whose
//!   kernels are keyed by their node (`cupti/graph_nodes.rs`, `cupti/replays.rs`).
//! - **Completion.** Records arrive only when flushed. [`Timeline::sync`] (Deferred, at
//!   `end_pass`) flushes until every call made before it is complete (`cupti/join.rs`);
//!   [`LaggedPolling::reached`] flushes once and answers without waiting.
//! - **Calibration.** CUPTI's clock is the wall clock; anchors bracket `cuptiGetTimestamp`
//!   between two host readings, and the existing calibrator maps CUPTI ns to host ns.
//! - **One subscriber.** The process has one CUPTI session (`cupti/session.rs`); when libcupti is
//!   missing ([`Error::NoDevice`]) or another tool holds CUPTI ([`Error::Cupti`] with code 39),
//!   [`crate::timeline::nvidia_timeline`] falls back to CUDA events and says so.

mod api;
mod attribution;
mod graph_nodes;
mod join;
mod records;
mod replays;
mod session;

pub(crate) use api::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;

use api::{Correlation, CUPTI_SUCCESS};
use attribution::{
    key_of, position_mask, position_of, Attribution, Span, NAMESPACE_SHIFT, SUB_BITS,
};
use replays::Replays;
use session::Session;

use super::{
    Calibrated, Capture, DeviceRecords, GraphReplay, LaggedPolling, Mark, Timeline, TimelineKind,
    INVALID_MARK,
};
use crate::timeline::calibration::Calibration;
use crate::timeline::calibrator::{Anchor, Calibrator};
use crate::timeline::DeviceCounts;
use crate::{stats::OutsideBricks, timeline::HostClock, Error, Result};

/// Anchors taken at construction.
const FIRST_ANCHORS: usize = 16;

/// Bricks timed from CUPTI's activity records; see the module docs. Use it on one thread at a
/// time (its marks push on the calling thread's external-correlation stack).
#[derive(Debug)]
pub struct CuptiTimeline {
    session: &'static Session,
    correlation: Correlation,
    kind: TimelineKind,
    namespace: u16,
    /// `namespace << 48`.
    base: u64,
    /// The last mark made (0: none yet).
    position: u64,
    /// Whether this timeline's id is on the current thread's stack.
    pushed: bool,
    /// Keys below this are complete (their records are all in).
    complete_below: u64,
    /// Adopted graphs and their replays in flight.
    replays: Replays,
    records: Attribution,
    /// The last brick resolved, for its two timestamps.
    last: Option<(Mark, Mark, Span)>,
    /// Whether the last brick resolved had no record (host-only).
    last_host_only: bool,
    host: HostClock,
    origin: u64,
    /// CUPTI ns at construction: device ns count from it.
    cupti_base: u64,
    calibrator: Calibrator,
    counts: DeviceCounts,
    /// Whether this timeline traces (records on for its passes).
    traced: bool,
    /// A stop asked for while a captured pass awaits `adopt_graph` (`Some(detach)`): the
    /// graph's instantiation must still be seen, so the stop waits for the adoption.
    stop_after_adopt: Option<bool>,
}

impl CuptiTimeline {
    /// A CUPTI timeline on the process's CUPTI session (started by the first one).
    /// [`Error::NoDevice`] when libcupti cannot be loaded; [`Error::Cupti`] when CUPTI refused
    /// (code `CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED`, 39: another tool holds it).
    pub fn new() -> Result<Self> {
        let session = Session::get()?;
        let namespace = session.namespace()?;
        session.joined()?;
        let host = HostClock::new();
        let origin = host.ticks();
        let cupti_base = session.api.timestamp()?;
        let mut t = CuptiTimeline {
            session,
            correlation: session.api.correlation,
            kind: TimelineKind::custom("cupti")?,
            namespace,
            base: u64::from(namespace) << NAMESPACE_SHIFT,
            position: 0,
            pushed: false,
            complete_below: key_of(1),
            replays: Replays::new(),
            records: Attribution::default(),
            last: None,
            last_host_only: false,
            host,
            origin,
            cupti_base,
            calibrator: Calibrator::default(),
            counts: DeviceCounts::default(),
            traced: true,
            stop_after_adopt: None,
        };
        for _ in 0..FIRST_ANCHORS {
            t.take_anchor()?;
        }
        Ok(t)
    }

    /// What the timeline counted, the process's launches without a record, and where libcupti
    /// was loaded from.
    pub fn counts(&self) -> DeviceCounts {
        let (_, missing, captured) = self.session.totals();
        DeviceCounts {
            library: Some(self.session.api.path.as_str()),
            launches_missing: missing,
            launches_captured: captured,
            ..self.counts
        }
    }

    /// One anchor: host ticks, `cuptiGetTimestamp`, host ticks.
    fn take_anchor(&mut self) -> Result<bool> {
        let before = self.host.ticks();
        let t = self.session.api.timestamp()?;
        let after = self.host.ticks();
        Ok(self.calibrator.add(Anchor {
            host_before_ns: self.host.ticks_to_ns(self.origin, before),
            device_ns: t.saturating_sub(self.cupti_base),
            host_after_ns: self.host.ticks_to_ns(self.origin, after),
        }))
    }

    /// Flush, take this timeline's complete records; whether calls below `position` are all
    /// complete.
    fn poll(&mut self, position: u64) -> Result<bool> {
        self.session.flush()?;
        self.counts.flushes += 1;
        let (pending, mut acts) = self.session.collect(self.namespace, position);
        self.replays.key(&mut acts);
        self.records.add(acts);
        if !pending {
            self.complete_below = self.complete_below.max(key_of(position));
        }
        Ok(!pending)
    }

    /// A mark of this timeline, made and not yet released.
    fn check(&self, mark: Mark) -> Result<()> {
        let p = position_of(mark);
        if mark == INVALID_MARK || p == 0 || p > self.position {
            return Err(super::invalid_mark("cupti"));
        }
        Ok(())
    }

    /// Host ns since the origin of CUPTI time `t`.
    fn to_host_ns(&self, t: u64) -> Result<u64> {
        let fit = self
            .calibrator
            .calibration()
            .ok_or_else(|| Error::Timeline("cupti: no calibration anchor".into()))?;
        Ok(fit.to_host_ns(t.saturating_sub(self.cupti_base)))
    }

    #[cold]
    #[inline(never)]
    fn refused(&mut self) {
        self.counts.refused_marks += 1;
    }
}

impl Timeline for CuptiTimeline {
    fn kind(&self) -> TimelineKind {
        self.kind
    }

    fn host_clock(&self) -> HostClock {
        self.host.clone()
    }

    /// Pop the previous position's id, push the next: two calls into CUPTI, and the id kept
    /// in a thread-local for the graph-node callback. The mark is the position's key.
    #[inline]
    fn mark(&mut self, _host_ticks: u64) -> Mark {
        let p = self.position + 1;
        if p >= position_mask() {
            return INVALID_MARK;
        }
        self.position = p;
        let id = self.base | p;
        let code = self.correlation.replace(self.pushed, id);
        graph_nodes::set_open(id);
        self.pushed = code == CUPTI_SUCCESS;
        if !self.pushed {
            self.refused();
        }
        key_of(p)
    }

    /// Flush until every call made so far is complete (Deferred's `end_pass`): waits only
    /// while kernels are still running; gives a launch up after 10 s (counted).
    fn sync(&mut self) -> Result<()> {
        let through = self.position + 1;
        let mut wait = std::time::Duration::from_micros(20);
        while !self.poll(through)? {
            self.counts.sync_waits += 1;
            std::thread::sleep(wait);
            wait = (wait * 2).min(std::time::Duration::from_millis(1));
        }
        self.take_anchor()?;
        Ok(())
    }

    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        self.check(start)?;
        self.check(end)?;
        if needs(end) > self.complete_below || start > end {
            return Err(Error::Timeline(format!(
                "cupti: marks {start}..{end} resolved before their records were complete"
            )));
        }
        match self.records.resolve(start, end) {
            Some(span) => {
                self.last = Some((start, end, span));
                self.last_host_only = false;
                Ok(span.last_end.saturating_sub(span.first_start))
            }
            None => {
                self.counts.host_only_bricks += 1;
                self.last = None;
                self.last_host_only = true;
                Ok(0)
            }
        }
    }

    /// The start mark of the brick resolved last: its first record's start; its end mark:
    /// its last record's end. Another mark: the start of the first record after it.
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        self.check(mark)?;
        let t = match self.last {
            Some((a, _, s)) if a == mark => s.first_start,
            Some((_, b, s)) if b == mark => s.last_end,
            _ => self
                .records
                .first_from(mark)
                .map(|a| a.start)
                .ok_or_else(|| Error::Timeline(format!("cupti: no record after mark {mark}")))?,
        };
        self.to_host_ns(t)
    }

    fn recycle(&mut self) {
        self.records.release_below(key_of(self.position));
        self.replays.release_below(self.position);
        self.last = None;
    }

    fn pass_ended(&mut self) {
        if self.session.graphs {
            self.graph_pass_ended();
        }
    }

    /// Graph capture is known from the graph-node callbacks, when CUPTI gives them.
    fn capture(&self) -> Option<&dyn Capture> {
        self.session.graphs.then_some(self as &dyn Capture)
    }

    /// Replays timed node by node, when CUPTI gives the graph-node callbacks.
    fn graphs(&mut self) -> Option<&mut dyn GraphReplay> {
        if self.session.graphs {
            Some(self)
        } else {
            None
        }
    }

    capabilities!(polling, calibrated, records);
}

impl CuptiTimeline {
    /// Stop tracing now: see [`DeviceRecords::set_traced`].
    fn stop_tracing(&mut self, detach: bool) -> Result<()> {
        if self.pushed {
            self.correlation.pop();
            graph_nodes::set_open(0);
            self.pushed = false;
        }
        Timeline::sync(self)?;
        self.traced = false;
        self.counts.tracing_stops += 1;
        if self.session.pause(detach)? {
            self.counts.records_stopped += 1;
        }
        Ok(())
    }
}

/// The key through which records must be complete for `mark` to be resolved: the mark itself
/// (calls before its position), or, for a replay's mark, its launch's position whole.
fn needs(mark: Mark) -> u64 {
    if mark & ((1 << SUB_BITS) - 1) == 0 {
        mark
    } else {
        key_of(position_of(mark) + 1)
    }
}

impl LaggedPolling for CuptiTimeline {
    /// One flush, no wait: whether every call made before `mark` is complete.
    fn reached(&mut self, mark: Mark) -> Result<bool> {
        self.check(mark)?;
        let need = needs(mark);
        if need <= self.complete_below {
            return Ok(true);
        }
        let done = self.poll(position_of(need))?;
        if !done {
            self.counts.polls_not_ready += 1;
        }
        Ok(done)
    }

    fn release_through(&mut self, mark: Mark) {
        self.records.release_below(mark);
        self.replays.release_below(position_of(mark));
    }

    fn marks_left(&self) -> usize {
        usize::MAX
    }
}

impl DeviceRecords for CuptiTimeline {
    fn last_host_only(&self) -> bool {
        self.last_host_only
    }

    /// Kernels, copies and sets outside any brick: this timeline's (launched between its
    /// bricks or passes) plus the process's launched with no brick open on any CUPTI timeline.
    fn outside_bricks(&self) -> OutsideBricks {
        let mut t = self.records.outside();
        t.merge(self.session.totals().0);
        t
    }

    /// Stop: pop this thread's id, wait until the traced passes' records are in (once a
    /// burst), then disable the records or detach CUPTI when no other timeline traces. Start:
    /// enable them (re-attaching first if detached). Marks keep their positions across.
    /// A stop right after a captured pass waits for its `adopt_graph`: the instantiation's
    /// clone callbacks must still come (spec/sync-modes.md "Sampled tracing").
    fn set_traced(&mut self, traced: bool, detach: bool) -> Result<()> {
        if traced {
            self.stop_after_adopt = None;
        }
        if traced == self.traced {
            return Ok(());
        }
        if traced {
            self.session.resume()?;
            self.traced = true;
            return Ok(());
        }
        if self.replays.capture_pending() {
            self.stop_after_adopt = Some(detach);
            return Ok(());
        }
        self.stop_tracing(detach)
    }
}

impl Calibrated for CuptiTimeline {
    fn calibration(&self) -> Option<Calibration> {
        self.calibrator.calibration()
    }

    fn anchor(&mut self) -> Result<()> {
        self.take_anchor().map(|_| ())
    }

    fn origin_ticks(&self) -> Option<u64> {
        Some(self.origin)
    }
}

impl Drop for CuptiTimeline {
    fn drop(&mut self) {
        if self.pushed {
            self.correlation.pop();
            graph_nodes::set_open(0);
        }
        self.session.retire(self.namespace);
        self.session.left(self.traced);
    }
}
