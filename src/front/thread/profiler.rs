//! [`ThreadProfiler`]: the profiler a thread-local front door owns, on the host clock or on a
//! device timeline (spec/front-doors.md "Device timelines").
//!
//! An enum, not a trait object: the host-clock profiler keeps its statically dispatched,
//! inlined hot path (one clock read, no indirect call), and a device profiler pays one branch
//! more and an out-of-line call, next to a mark that is a runtime call anyway.

use crate::model::registry::BrickRegistry;
use crate::profiler::ShelfReader;
use crate::{
    profiler::Replay,
    timeline::{BoxedTimeline, DeviceGraph, TimelineKind},
    BrickCategory, BrickHandle, BrickProfiler, BrickToken, CpuTimeline, Result, Timeline, Work,
};

/// A thread's profiler: host clock, or a device timeline.
#[derive(Debug)]
pub(crate) enum ThreadProfiler {
    /// The host clock (the default).
    Cpu(BrickProfiler<CpuTimeline>),
    /// A device timeline given to this thread.
    Device(BrickProfiler<BoxedTimeline>),
}

/// `$body` on the profiler, whichever timeline it marks (off the hot path).
macro_rules! each {
    ($self:expr, $p:ident => $body:expr) => {
        match $self {
            ThreadProfiler::Cpu($p) => $body,
            ThreadProfiler::Device($p) => $body,
        }
    };
}

impl ThreadProfiler {
    /// Start `brick`. The host-clock arm is inlined into the caller; the device arm is a call.
    #[inline(always)]
    pub(crate) fn start_brick(&mut self, brick: BrickHandle) -> BrickToken {
        match self {
            ThreadProfiler::Cpu(p) => p.start_brick(brick),
            ThreadProfiler::Device(p) => device_start(p, brick),
        }
    }

    /// Stop a brick this profiler started.
    #[inline(always)]
    pub(crate) fn stop_brick_with(&mut self, token: BrickToken, work: Work) {
        match self {
            ThreadProfiler::Cpu(p) => p.stop_brick_with(token, work),
            ThreadProfiler::Device(p) => device_stop(p, token, work),
        }
    }

    pub(crate) fn begin_layer(&mut self, layer: usize) {
        each!(self, p => p.begin_layer(layer));
    }

    pub(crate) fn end_layer(&mut self) {
        each!(self, p => p.end_layer());
    }

    pub(crate) fn begin_pass(&mut self) {
        each!(self, p => p.begin_pass());
    }

    pub(crate) fn set_pass_shape(&mut self, shape: crate::PassShape) {
        each!(self, p => p.set_pass_shape(shape));
    }

    pub(crate) fn end_pass(&mut self, tokens: u64) -> Result<()> {
        each!(self, p => p.end_pass(tokens))
    }

    pub(crate) fn finalize(&mut self) -> Result<()> {
        each!(self, p => p.finalize())
    }

    /// Forget every measurement (see [`BrickProfiler::reset`]).
    pub(crate) fn reset(&mut self) {
        each!(self, p => p.reset());
    }

    /// A handle the collector reads this profiler's ledger through (spec/front-doors.md
    /// "Publishing").
    pub(crate) fn share(&mut self) -> ShelfReader {
        each!(self, p => p.share())
    }

    pub(crate) fn registry(&self) -> &BrickRegistry {
        each!(self, p => p.ledger().registry())
    }

    pub(crate) fn register(&mut self, name: &str, category: BrickCategory) -> Result<BrickHandle> {
        each!(self, p => p.register(name, category))
    }

    pub(crate) fn adopt_graph(&mut self, graph: DeviceGraph) -> Result<()> {
        each!(self, p => p.graphs().adopt(graph))
    }

    pub(crate) fn begin_replay(&mut self, graph: DeviceGraph) -> Result<Replay> {
        each!(self, p => p.graphs().begin_replay(graph))
    }

    pub(crate) fn end_replay(&mut self, replay: Replay, tokens: u64) -> Result<()> {
        each!(self, p => p.graphs().end_replay(replay, tokens))
    }

    pub(crate) fn forget_graph(&mut self, graph: DeviceGraph) {
        each!(self, p => p.graphs().forget(graph));
    }

    /// The timeline this thread marks.
    pub(crate) fn timeline_kind(&self) -> TimelineKind {
        each!(self, p => p.timeline().kind())
    }
}

#[inline(never)]
fn device_start(p: &mut BrickProfiler<BoxedTimeline>, brick: BrickHandle) -> BrickToken {
    p.start_brick(brick)
}

#[inline(never)]
fn device_stop(p: &mut BrickProfiler<BoxedTimeline>, token: BrickToken, work: Work) {
    p.stop_brick_with(token, work);
}
