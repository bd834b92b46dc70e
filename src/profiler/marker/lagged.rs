//! Passes in flight, for the Lagged sync mode (spec/sync-modes.md "Lagged"). `end_pass` seals
//! the pass: its bricks still open are discarded (counted as unclosed), one end-of-pass mark
//! is made, and the pass waits in the pending buffer, whose entries stay in pass order. Later
//! `end_pass` calls ask the timeline, without waiting, whether the oldest sealed pass's end
//! mark was reached, and resolve each one that was, oldest first; its marks are then released
//! through its end mark, so the timeline's pool is a ring. A pass is resolved whole, so the
//! books attribute each measurement to its own pass (warm-up passes' measurements are
//! discarded as they resolve).
//!
//! The polling is the timeline's [`LaggedPolling`] capability. A timeline without it cannot be
//! asked without waiting, so every pass end with a pass in flight is a blocking wait, counted
//! (spec/sync-modes.md "Timeline capabilities").

use std::collections::VecDeque;

use super::Marker;
use crate::profiler::measurement::Sink;
use crate::timeline::{Mark, Timeline, FAILED_MARK, INVALID_MARK};
use crate::Result;

/// One ended pass waiting to be resolved.
#[derive(Debug, Clone, Copy)]
struct Sealed {
    /// The end-of-pass mark: reached once every brick of the pass is.
    end: Mark,
    /// The pass's entries are the pending buffer's `[previous pass's len, len)`.
    len: u32,
    /// A warm-up pass: its measurements are discarded when they resolve.
    warm: bool,
    /// A graph replay: one of its marks, released with it (its slot of events is freed);
    /// [`INVALID_MARK`] for an eager pass.
    replay: Mark,
}

/// The sealed passes, oldest first, and how big the last one was.
#[derive(Debug, Clone)]
pub(crate) struct Flight {
    passes: VecDeque<Sealed>,
    /// More sealed passes than this make `end_pass` wait.
    max: usize,
    /// Bricks started in the pass sealed last (the estimate of the next pass's needs).
    last_starts: u32,
    /// The start sequence number at the last seal.
    seq_at_seal: u32,
    /// A mark of the replay pushed in the pass being ended ([`INVALID_MARK`]: none).
    replay: Mark,
}

impl Flight {
    /// Room for `max` passes in flight (plus the one being sealed), allocated now.
    pub(crate) fn new(max: usize) -> Self {
        Flight {
            passes: VecDeque::with_capacity(max + 1),
            max,
            last_starts: 0,
            seq_at_seal: 0,
            replay: INVALID_MARK,
        }
    }

    /// Sealed passes not yet resolved.
    pub(crate) fn len(&self) -> usize {
        self.passes.len()
    }

    /// Forget every sealed pass (their entries are gone).
    pub(crate) fn clear(&mut self) {
        self.passes.clear();
        self.replay = INVALID_MARK;
    }

    /// Pending entries of sealed passes: the current pass's begin after them.
    pub(super) fn sealed_len(&self) -> usize {
        self.passes.back().map_or(0, |p| p.len as usize)
    }

    /// The pass being ended is a replay, one of whose marks is `mark` (or none: INVALID).
    pub(super) fn set_replay(&mut self, mark: Mark) {
        self.replay = mark;
    }
}

impl<T: Timeline> Marker<T> {
    /// End the pass in Lagged mode: discard its open bricks (counted as unclosed) and, when it
    /// left entries to resolve, mark its end and put it in flight. Returns true when a blocking
    /// wait is due at once (the end mark could not be made).
    pub(crate) fn seal_pass(&mut self, warm: bool, now: u64) -> bool {
        let from = self.flight.passes.back().map_or(0, |p| p.len as usize);
        let discarded = self.pending.discard_open(from);
        self.counters.unclosed = self.counters.unclosed.saturating_add(u64::from(discarded));
        let seq = self.pending.seq;
        self.flight.last_starts = seq.wrapping_sub(self.flight.seq_at_seal);
        self.flight.seq_at_seal = seq;
        if self.pending.len() == from {
            return false; // nothing of this pass is pending
        }
        let end = self.timeline.mark(now);
        self.timeline.pass_ended();
        let replay = std::mem::replace(&mut self.flight.replay, INVALID_MARK);
        self.flight.passes.push_back(Sealed {
            end,
            len: self.pending.len() as u32,
            warm,
            replay,
        });
        end == INVALID_MARK || end == FAILED_MARK
    }

    /// End, in Lagged mode, a pass whose stream was being captured into a graph: its marks are
    /// not timestamps, so its entries are dropped (open ones counted as unclosed) without
    /// asking the timeline anything; the passes sealed before it stay in flight.
    pub(crate) fn drop_captured_pass(&mut self) {
        let from = self.flight.passes.back().map_or(0, |p| p.len as usize);
        let discarded = self.pending.discard_open(from);
        self.counters.unclosed = self.counters.unclosed.saturating_add(u64::from(discarded));
        self.pending.truncate(from);
        if self.pending.is_empty() {
            self.timeline.recycle();
        }
        self.timeline.pass_ended();
    }

    /// The oldest sealed pass, if the timeline reached its end mark (asked without waiting):
    /// whether it is a warm-up pass. A timeline without polling never says so
    /// ([`Self::wait_due`] then says to wait).
    pub(crate) fn oldest_reached(&mut self) -> Result<Option<bool>> {
        let (Some(&oldest), Some(polling)) = (self.flight.passes.front(), self.timeline.polling())
        else {
            return Ok(None);
        };
        Ok(polling.reached(oldest.end)?.then_some(oldest.warm))
    }

    /// The oldest sealed pass, reached or not (after a sync, all are): whether it is a warm-up
    /// pass.
    pub(crate) fn oldest_sealed(&self) -> Option<bool> {
        self.flight.passes.front().map(|p| p.warm)
    }

    /// Resolve the oldest sealed pass (its end mark is known reached) into `sink`, remove its
    /// entries and release its marks.
    pub(crate) fn resolve_oldest(&mut self, sink: &mut impl Sink) -> Result<()> {
        let Some(oldest) = self.flight.passes.pop_front() else {
            return Ok(());
        };
        let len = oldest.len as usize;
        let first_err = self.resolve_range(len, sink);
        self.pending.remove_front(len);
        for p in &mut self.flight.passes {
            p.len -= oldest.len;
        }
        if self.pending.is_empty() {
            self.timeline.recycle();
        } else if let Some(polling) = self.timeline.polling() {
            polling.release_through(oldest.end);
            if oldest.replay != INVALID_MARK {
                polling.release_through(oldest.replay); // its slot of events
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Whether `end_pass` must wait now: more passes in flight than allowed, or the pending
    /// buffer or the timeline's pool would not hold another pass as big as the last one, or
    /// the timeline cannot be polled. Nothing in flight: nothing to wait for (a pass bigger
    /// than the buffer flushes within itself).
    pub(crate) fn wait_due(&mut self) -> bool {
        if self.flight.passes.is_empty() {
            return false;
        }
        let Some(polling) = self.timeline.polling() else {
            return true; // no way to ask without waiting: sync, and count it
        };
        let next = (self.flight.last_starts as usize).min(self.pending.capacity());
        let room = self.pending.capacity() - self.pending.len();
        self.flight.passes.len() > self.flight.max
            || room < next
            || polling.marks_left() < 2 * next + 1
    }

    /// Count a wait the Lagged mode could not avoid.
    pub(crate) fn count_blocking_wait(&mut self) {
        self.counters.blocking_waits = self.counters.blocking_waits.saturating_add(1);
    }

    /// Sealed passes not yet resolved.
    pub(crate) fn passes_in_flight(&self) -> usize {
        self.flight.len()
    }

    /// How many passes may be in flight before `end_pass` waits.
    pub(crate) fn max_passes_in_flight(&self) -> usize {
        self.flight.max
    }
}
