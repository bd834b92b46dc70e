//! Graph templates in the marker (spec/sync-modes.md "Graph capture"). The closed entries of a
//! pass captured into a graph are copied out as the graph's *template*: which capture mark
//! opens and closes which brick, and the nesting between them. A replay's entries are the
//! template's with the replay's marks, pushed closed into the pending buffer, so that the one
//! resolve path (`resolve.rs`, and `lagged.rs` for passes in flight) resolves them like any
//! pass's. Per pass, never per brick: the hot path does not know graphs exist.

use super::pending::{Entry, EntryState};
use super::Marker;
use crate::model::grid::Shape;
use crate::profiler::token::NO_ENTRY;
use crate::timeline::{ReplayMarks, Timeline, INVALID_MARK};
use crate::SyncMode;

/// A graph's template: the closed entries of the pass captured into it, in order (their
/// marks are the capture's; opaque outside the marker).
#[derive(Debug, Clone, Default)]
pub(crate) struct Template(Vec<Entry>);

impl Template {
    /// A template with room for `n` bricks (allocated now, at a capture or an adoption).
    pub(crate) fn with_capacity(n: usize) -> Self {
        Template(Vec::with_capacity(n))
    }

    /// Its bricks.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Forget its bricks, keeping the allocation.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

impl<T: Timeline> Marker<T> {
    /// Whether the entries of a captured pass are kept for a template: the timeline can time
    /// replays and the mode marks the device. They then stay in the pending buffer until
    /// `end_pass` copies them ([`Self::copy_capture`]), instead of being dropped at every
    /// resolve within the pass.
    pub(crate) fn keeps_captures(&mut self) -> bool {
        self.settings.mode != SyncMode::None && self.timeline.graphs().is_some()
    }

    /// The current pass's closed entries, copied into `into` (cleared first) as a template:
    /// parent links within the template (an entry whose parent is not in it is top-level),
    /// cells moved to the unspecified phase plane (a replay's phase is its own). Once per
    /// captured pass, never per replay: it allocates (a map of where each entry went).
    pub(crate) fn copy_capture(&self, into: &mut Template, cells: Shape) {
        let into = &mut into.0;
        into.clear();
        let from = self.flight.sealed_len();
        let rows = self.settings.rows;
        // Where each entry of the pass went in the template (NO_ENTRY: not kept).
        let mut moved = vec![NO_ENTRY; self.pending.len().saturating_sub(from)];
        for i in from..self.pending.len() {
            let e = self.pending[i];
            if e.state != EntryState::Closed {
                continue;
            }
            let parent = e
                .parent
                .checked_sub(from as u32)
                .and_then(|p| moved.get(p as usize).copied())
                .unwrap_or(NO_ENTRY);
            moved[i - from] = into.len() as u32;
            into.push(Entry {
                parent,
                child_ns: 0,
                detached: e.detached && parent != NO_ENTRY,
                outlived_parent: e.outlived_parent && parent != NO_ENTRY,
                cell: cells.rebased(rows, e.cell, 0),
                ..e
            });
        }
    }

    /// Whether the pending buffer has room for `n` more entries.
    pub(crate) fn has_room_for(&self, n: usize) -> bool {
        self.pending.capacity() - self.pending.len() >= n
    }

    /// Push a replay of `template` into the pending buffer, closed, with the marks of
    /// `replay` (mapped by the timeline), host time `host` at both ends (a graph's bricks
    /// have no host dispatch of their own), and cells in the current phase's plane. The caller
    /// made room ([`Self::has_room_for`]). Returns false when the timeline has no graphs or
    /// there was no room (nothing pushed).
    pub(crate) fn push_replay(
        &mut self,
        template: &Template,
        replay: ReplayMarks,
        cells: Shape,
        host: u64,
    ) -> bool {
        let template = &template.0;
        if !self.has_room_for(template.len()) {
            return false;
        }
        let (rows, base) = (self.settings.rows, self.phase_base);
        let Some(graphs) = self.timeline.graphs() else {
            return false;
        };
        let offset = self.pending.len() as u32;
        let mut last = INVALID_MARK;
        for e in template {
            let seq = self.pending.seq;
            self.pending.seq = seq.wrapping_add(1);
            last = graphs.replay_mark(replay, e.end);
            let entry = Entry {
                start: graphs.replay_mark(replay, e.start),
                end: last,
                host_start: host,
                host_end: host,
                parent: if e.parent == NO_ENTRY {
                    NO_ENTRY
                } else {
                    e.parent + offset
                },
                seq,
                cell: cells.rebased(rows, e.cell, base),
                state: EntryState::Closed,
                ..*e
            };
            // Within the capacity checked above: never refused, never allocates.
            let _ = self.pending.push(entry);
        }
        self.flight.set_replay(last);
        true
    }

    /// A mark of the replay just pushed, for releasing its slot once it is resolved
    /// ([`INVALID_MARK`] when the pass is not a replay); forgotten by the next seal or
    /// [`Self::forget_replay_mark`].
    pub(crate) fn forget_replay_mark(&mut self) {
        self.flight.set_replay(INVALID_MARK);
    }

    /// Release the slot of a replay that will not be resolved (one left open). A timeline
    /// without [`crate::timeline::LaggedPolling`] frees it at its next recycle.
    pub(crate) fn release_replay(&mut self, template: &Template, replay: ReplayMarks) {
        let mark = match (self.timeline.graphs(), template.0.last()) {
            (Some(g), Some(e)) => g.replay_mark(replay, e.end),
            _ => return,
        };
        if let Some(p) = self.timeline.polling() {
            p.release_through(mark);
        }
    }
}
