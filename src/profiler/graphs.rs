//! Graph replays (spec/sync-modes.md "Graph capture"): the profiler's part that keeps the last
//! captured pass, each adopted graph's template and the replay under way, and the calls an
//! engine makes around a graph's launch. The [`GraphBook`] part is this file's own;
//! [`Graphs`] is the engine's handle on it, from [`BrickProfiler::graphs`].
//!
//! ```text
//! captured pass ──end_pass──▶ last capture ──adopt_graph(g)──▶ template of g's executable
//! begin_replay(g): a pass begins; the timeline points g's record nodes at a free slot
//! end_replay(r):   the template's entries, with the slot's marks, enter the pending buffer;
//!                  the pass ends as end_pass does (Deferred: sync, resolve; Lagged: in flight)
//! ```
//!
//! Per pass, never per brick: the hot path does not know graphs exist, and a replay costs one
//! copy of the template into the preallocated pending buffer.

use std::sync::atomic::{AtomicU64, Ordering};

use super::marker::Template;
use super::sampler::Switch;
use super::BrickProfiler;
use crate::profile::untimed_graphs::UntimedGraphs;
use crate::timeline::{CpuTimeline, DeviceGraph, GraphProblem, ReplayMarks, Timeline};
use crate::{Error, Phase, Result, SyncMode};

/// Replays begun in this process, for their identity (0: an inert replay).
static NEXT_REPLAY: AtomicU64 = AtomicU64::new(1);

/// A graph replay begun by [`Graphs::begin_replay`], to hand to
/// [`Graphs::end_replay`] once the graph is launched. Move-only: one replay, one end.
/// A replay never ended is counted as untimed by the next `begin_pass`, `begin_replay` or
/// `end_pass` (never a panic); one ended on another profiler than its own ends nothing.
#[must_use = "end the replay with end_replay once the graph is launched"]
#[derive(Debug)]
pub struct Replay {
    id: u64,
}

impl Replay {
    /// A replay that ends nothing (the thread front door's, while measuring is off).
    pub(crate) fn inert() -> Replay {
        Replay { id: 0 }
    }

    /// Begun while measuring was off: ends nothing.
    pub(crate) fn is_inert(&self) -> bool {
        self.id == 0
    }
}

/// An adopted graph: its executable's template and how many replays of it may be in flight.
#[derive(Debug)]
struct Adopted {
    exec: u64,
    template: Template,
    slots: usize,
}

/// The replay under way.
#[derive(Debug, Clone, Copy)]
struct Open {
    id: u64,
    graph: DeviceGraph,
    /// The timeline prepared it (its slot's marks), or it is not timed.
    marks: Option<ReplayMarks>,
}

/// The last captured pass, the adopted graphs' templates, the replay under way and the
/// graphs replayed untimed.
#[derive(Debug, Default)]
pub(crate) struct GraphBook {
    /// The last captured pass's bricks, until a graph adopts them (empty: nothing captured
    /// since the last adoption).
    last_capture: Template,
    /// Adopted graphs, by executable (a few per engine: a linear search, once per replay).
    adopted: Vec<Adopted>,
    /// The replay begun and not ended.
    open: Option<Open>,
    /// Graphs replayed untimed, named in the report.
    untimed: UntimedGraphs,
}

impl GraphBook {
    /// The adopted graph of `exec`.
    fn adopted(&self, exec: u64) -> Option<&Adopted> {
        self.adopted.iter().find(|a| a.exec == exec)
    }

    /// The graphs replayed untimed.
    pub(crate) fn untimed(&self) -> UntimedGraphs {
        self.untimed
    }

    /// Whether a replay is under way.
    #[inline]
    pub(crate) fn replay_open(&self) -> bool {
        self.open.is_some()
    }

    /// Forget the replays' counts (templates stay: the engine's graphs still exist).
    pub(crate) fn reset(&mut self) {
        self.open = None;
        self.untimed.clear();
    }
}

/// How a pass ends (spec/sync-modes.md "Graph capture"): an ordinary pass, a timed replay, or
/// a replay counted and not timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PassKind {
    Eager,
    Replay,
    Untimed,
}

impl<T: Timeline> BrickProfiler<T> {
    /// The engine's calls around graph launches (spec/sync-modes.md "Graph capture"): adopt a
    /// captured graph, begin and end each replay, forget a destroyed graph.
    #[inline]
    pub fn graphs(&mut self) -> Graphs<'_, T> {
        Graphs { prof: self }
    }
}

/// The engine's handle on a profiler's graph replays, from [`BrickProfiler::graphs`]: one
/// `&mut` borrow, nothing more.
#[derive(Debug)]
pub struct Graphs<'a, T: Timeline = CpuTimeline> {
    prof: &'a mut BrickProfiler<T>,
}

impl<T: Timeline> Graphs<'_, T> {
    /// The engine instantiated the graph the last captured pass was captured into (after that
    /// pass's `end_pass`): the pass's bricks become `graph`'s template, replacing an earlier one
    /// of the same executable (a re-capture, or `cuGraphExecUpdate` from a new capture). The
    /// timeline finds the pass's event-record nodes in the graph and keeps room for the
    /// replays in flight: `max_passes_in_flight + 1` in Lagged mode, 1 otherwise. Replays of
    /// this graph that are still in flight are resolved first (one sync).
    ///
    /// On a timeline that cannot time replays (HIP, CPU), or in sync mode `None`, this does
    /// nothing and replays are counted, not timed. Errors: no pass was captured since the last
    /// adoption ([`Error::Graph`] with [`GraphProblem::NothingCaptured`]); the timeline's.
    ///
    /// ```
    /// use brickprof::{BrickId, BrickProfiler, ProfilerConfig, timeline::SimDevice};
    /// let device = SimDevice::new(0);
    /// let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), device.timeline(64))?;
    /// let graph = device.capture(|| { // the engine captures its decode step
    ///     let t = prof.start_brick(BrickId::AttentionScore);
    ///     device.launch(300_000);
    ///     prof.stop_brick(t, 1);
    ///     prof.end_pass(1) // captured: its bricks are kept
    /// })?;
    /// prof.graphs().adopt(graph)?;
    /// for _ in 0..3 {
    ///     let replay = prof.graphs().begin_replay(graph)?;
    ///     device.launch_graph(&graph)?;
    ///     prof.graphs().end_replay(replay, 1)?;
    /// }
    /// let attention = prof.view().brick_stats(BrickId::AttentionScore).summary();
    /// assert_eq!((attention.count, attention.total_ns), (3, 900_000));
    /// assert_eq!(prof.view().counters.graph_replays, 3);
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    #[inline]
    pub fn adopt(&mut self, graph: DeviceGraph) -> Result<()> {
        self.prof.adopt_graph(graph)
    }

    /// Just before the engine launches `graph` (`cuGraphLaunch`, cudarc's `CudaGraph::launch`):
    /// a pass begins, as [`BrickProfiler::begin_pass`] begins one, and the timeline points the graph's
    /// event-record nodes at a slot of events no replay in flight uses. Hand the [`Replay`] to
    /// [`Self::end_replay`] after the launch. A replay of a graph not adopted is counted, not
    /// timed. A replay still open (its `end_replay` never came) is counted as untimed first.
    /// A shaped replay: [`BrickProfiler::set_pass_shape`] after this, as after `begin_pass`.
    #[inline]
    pub fn begin_replay(&mut self, graph: DeviceGraph) -> Result<Replay> {
        self.prof.begin_replay(graph)
    }

    /// Just after the engine launched the graph of `replay`: the template's bricks, with this
    /// replay's marks, enter the pending buffer, and the pass ends exactly as
    /// [`BrickProfiler::end_pass`]`(tokens)` ends one: Deferred, PerLayer and Immediate sync once and
    /// resolve it (a graph has no layer boundaries or stops to sync at while it runs); Lagged
    /// puts it in flight and resolves the finished passes, oldest first, without waiting. A
    /// replay that is not timed is counted in [`crate::model::Counters::untimed_replays`] (not in
    /// `passes`) and its graph named in the run's facts. A `replay` that is no longer open
    /// (a later `begin_pass` counted it as untimed) does nothing.
    #[inline]
    pub fn end_replay(&mut self, replay: Replay, tokens: u64) -> Result<()> {
        self.prof.end_replay(replay, tokens)
    }

    /// The engine destroyed `graph`: its template and the timeline's events for it go.
    /// Replays of it still in flight are resolved first (one sync); later replays of its
    /// executable handle are counted, not timed, until a graph is adopted under it again.
    #[inline]
    pub fn forget(&mut self, graph: DeviceGraph) {
        self.prof.forget_graph(graph)
    }
}

impl<T: Timeline> BrickProfiler<T> {
    /// The body of [`Graphs::adopt`].
    fn adopt_graph(&mut self, graph: DeviceGraph) -> Result<()> {
        if !self.marker.keeps_captures() {
            return Ok(());
        }
        if self.graphs.last_capture.len() == 0 {
            return Err(Error::Graph {
                exec: graph.exec(),
                problem: GraphProblem::NothingCaptured,
            });
        }
        // Replays in flight hold slots of events that the adoption replaces.
        let settled = self.settle_replays();
        let slots = match self.marker.mode() {
            SyncMode::Lagged => self.marker.max_passes_in_flight() + 1,
            _ => 1,
        };
        if let Some(g) = self.marker.timeline_mut().graphs() {
            g.adopt(graph, slots)?;
        }
        let capacity = self.marker.pending_capacity();
        let g = &mut self.graphs;
        let at = match g.adopted.iter().position(|a| a.exec == graph.exec()) {
            Some(i) => i,
            None => {
                g.adopted.push(Adopted {
                    exec: graph.exec(),
                    template: Template::with_capacity(capacity),
                    slots,
                });
                g.adopted.len() - 1
            }
        };
        // The capture becomes the template; the old template's allocation takes the next one.
        let a = &mut g.adopted[at];
        std::mem::swap(&mut a.template, &mut g.last_capture);
        a.slots = slots;
        g.last_capture.clear();
        settled
    }

    /// The body of [`Graphs::begin_replay`].
    fn begin_replay(&mut self, graph: DeviceGraph) -> Result<Replay> {
        self.begin_pass(); // closes a replay left open
        let id = NEXT_REPLAY.fetch_add(1, Ordering::Relaxed);
        let slots = match self.graphs.adopted(graph.exec()) {
            Some(a) if self.marker.keeps_captures() => Some(a.slots),
            _ => None,
        };
        let mut marks = None;
        if let Some(slots) = slots {
            // The slot this replay takes was last used `slots` replays ago: with fewer passes
            // in flight than slots it is resolved (Lagged keeps at most max_passes_in_flight in
            // flight, and has max_passes_in_flight + 1 slots), so this waits only after a
            // change of sync mode.
            if self.marker.passes_in_flight() >= slots {
                self.marker.count_blocking_wait();
                self.resolve_keeping_error();
            }
            if let Some(g) = self.marker.timeline_mut().graphs() {
                marks = g.prepare_replay(graph)?;
            }
        }
        self.graphs.open = Some(Open { id, graph, marks });
        Ok(Replay { id })
    }

    /// The body of [`Graphs::end_replay`].
    fn end_replay(&mut self, replay: Replay, tokens: u64) -> Result<()> {
        let open = match self.graphs.open {
            Some(o) if o.id == replay.id => o,
            _ => return Ok(()),
        };
        self.graphs.open = None;
        let exec = open.graph.exec();
        let timed = match (open.marks, self.graphs.adopted(exec)) {
            (Some(marks), Some(a)) => Some((marks, a.template.len())),
            _ => None,
        };
        if timed.is_none()
            && self.graphs.adopted(exec).is_some()
            && self.marker.switch() == Switch::SampledOut
        {
            // A timeline that traces only sampled passes (CUPTI) did not trace this one: a
            // pass the plan left unmarked, counted with its wall time like an eager one
            // (spec/sync-modes.md "Sampled tracing").
            return self.end_pass_as(tokens, PassKind::Eager);
        }
        let Some((marks, len)) = timed else {
            self.graphs.untimed.note(exec);
            return self.end_pass_as(tokens, PassKind::Untimed);
        };
        if !self.marker.has_room_for(len) {
            // Passes in flight fill the pending buffer: resolve them (a wait, counted).
            if self.marker.mode() == SyncMode::Lagged {
                self.marker.count_blocking_wait();
            }
            self.resolve_keeping_error();
        }
        let host = self.passes.start();
        let pushed = match self.graphs.adopted(exec) {
            Some(a) => self
                .marker
                .push_replay(&a.template, marks, self.shape, host),
            None => false,
        };
        if !pushed {
            // The template does not fit the pending buffer at all.
            self.release_replay(exec, marks);
            self.graphs.untimed.note(exec);
            return self.end_pass_as(tokens, PassKind::Untimed);
        }
        let r = self.end_pass_as(tokens, PassKind::Replay);
        self.marker.forget_replay_mark();
        r
    }

    /// The body of [`Graphs::forget`].
    fn forget_graph(&mut self, graph: DeviceGraph) {
        if let Err(e) = self.settle_replays() {
            self.marker.keep_error(e);
        }
        self.graphs.adopted.retain(|a| a.exec != graph.exec());
        if let Some(g) = self.marker.timeline_mut().graphs() {
            g.forget(graph);
        }
    }

    /// The passes in flight, resolved now (one sync) so that their replays' slots are free.
    fn settle_replays(&mut self) -> Result<()> {
        if self.marker.passes_in_flight() == 0 {
            return Ok(());
        }
        self.resolve()
    }

    /// Free the slot of a replay that will not be resolved.
    fn release_replay(&mut self, exec: u64, marks: ReplayMarks) {
        if let Some(a) = self.graphs.adopted.iter().find(|a| a.exec == exec) {
            self.marker.release_replay(&a.template, marks);
        }
    }

    /// `end_pass` of a captured pass: keep its bricks as the last capture, when the timeline
    /// can time replays (spec/sync-modes.md "Graph capture").
    pub(super) fn keep_capture(&mut self) {
        if self.marker.keeps_captures() {
            self.marker
                .copy_capture(&mut self.graphs.last_capture, self.shape);
        }
    }

    /// A replay left open (its `end_replay` never came) when a pass begins or ends: counted as
    /// untimed, its slot freed, its shape forgotten.
    #[cold]
    pub(super) fn close_open_replay(&mut self) {
        let Some(open) = self.graphs.open.take() else {
            return;
        };
        if let Some(marks) = open.marks {
            self.release_replay(open.graph.exec(), marks);
        }
        self.graphs.untimed.note(open.graph.exec());
        let mut ledger = self.shelf.write();
        ledger.books.record_untimed_replay();
        ledger.tally.set_current(None);
        drop(ledger);
        if self.passes.take_shape().is_some() {
            self.marker.set_phase(Phase::Unspecified);
        }
    }
}
