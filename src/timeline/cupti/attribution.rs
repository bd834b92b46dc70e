//! Which records belong to which brick (spec/sync-modes.md "CUPTI", "Attribution").
//!
//! The timeline's mark is a *position*: at each mark it pops the external id it pushed at the
//! previous mark and pushes the next one, so that every call the thread makes between mark `p`
//! and mark `p + 1` carries position `p`. A brick started at mark `a` and stopped at mark `b`
//! owns the records of positions `a..b`: its own and its children's (inclusive time), on every
//! stream and device. Its device time is its last record's end minus its first record's start;
//! a brick with no record is host-only. Records at positions no brick covers (between a pass's
//! bricks, between passes) are counted outside any brick when their positions are released.
//!
//! Records are ordered by a *key*: `position << SUB_BITS | sub`. An eager record's `sub` is 0,
//! and a mark is the key of its position (`p << SUB_BITS`). A graph replay launched at position
//! `p` keys each of its kernels `p << SUB_BITS | rel`, where `rel` (1 and up) is the position,
//! relative to the captured pass's first, at which the kernel's node was created during the
//! capture (`cupti/replays.rs`): the replay's bricks are then ranges of keys like any pass's.
//! A graph launched inside an eager brick without a replay keeps `sub` 0: its kernels belong
//! to that brick.

use super::records::Op;

/// Bits of an external id below the timeline's namespace: `id = namespace << 48 | position`.
pub(crate) const NAMESPACE_SHIFT: u32 = 48;

/// The position bits of an external id.
pub(crate) const fn position_mask() -> u64 {
    (1u64 << NAMESPACE_SHIFT) - 1
}

/// Bits of a key below the position (see the module docs).
pub(crate) const SUB_BITS: u32 = 16;

/// The key of `position`, sub 0: a mark.
pub(crate) const fn key_of(position: u64) -> u64 {
    position << SUB_BITS
}

/// The position of `key`.
pub(crate) const fn position_of(key: u64) -> u64 {
    key >> SUB_BITS
}

/// One activity record joined to the external id of the call that launched it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Act {
    /// The external id (namespace and position) pushed when it was launched.
    pub(crate) external: u64,
    /// Its key (see the module docs): set when it is routed to its timeline.
    pub(crate) key: u64,
    pub(crate) op: Op,
    /// CUPTI ns.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) device: u32,
    pub(crate) stream: u32,
    /// The graph node it ran as (0: launched eagerly), and that node's graph.
    pub(crate) graph_node: u64,
    pub(crate) graph: u32,
}

impl Act {
    fn position(&self) -> u64 {
        self.key
    }
}

/// Activity outside any brick: how many records, and their summed device time.
pub(crate) type Tally = crate::stats::OutsideBricks;

/// Count `act` in `t`.
pub(crate) fn tally(t: &mut Tally, act: &Act) {
    match act.op {
        Op::Kernel => t.kernels += 1,
        Op::Memcpy | Op::Memset => t.memory_ops += 1,
    }
    t.busy_ns = t.busy_ns.saturating_add(act.end.saturating_sub(act.start));
}

/// The span of a brick's records, in CUPTI ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) first_start: u64,
    pub(crate) last_end: u64,
    pub(crate) records: usize,
}

/// One timeline's joined records, by position.
#[derive(Debug, Default)]
pub(crate) struct Attribution {
    /// Sorted by position once [`Attribution::add`] returns.
    acts: Vec<Act>,
    /// Whether a resolved brick covered each record (parallel to `acts`).
    claimed: Vec<bool>,
    outside: Tally,
}

impl Attribution {
    /// Records that completed (any order).
    pub(crate) fn add(&mut self, acts: Vec<Act>) {
        if acts.is_empty() {
            return;
        }
        let mut all: Vec<(Act, bool)> = self
            .acts
            .drain(..)
            .zip(self.claimed.drain(..))
            .chain(acts.into_iter().map(|a| (a, false)))
            .collect();
        all.sort_by_key(|(a, _)| (a.position(), a.start));
        for (a, c) in all {
            self.acts.push(a);
            self.claimed.push(c);
        }
    }

    fn range(&self, from: u64, to: u64) -> std::ops::Range<usize> {
        let lo = self.acts.partition_point(|a| a.position() < from);
        let hi = self.acts.partition_point(|a| a.position() < to);
        lo..hi.max(lo)
    }

    /// The records of keys `from..to`, claimed by a brick: `None` when it has none.
    pub(crate) fn resolve(&mut self, from: u64, to: u64) -> Option<Span> {
        let r = self.range(from, to);
        if r.is_empty() {
            return None;
        }
        let mut span = Span {
            first_start: u64::MAX,
            last_end: 0,
            records: r.len(),
        };
        for i in r {
            let a = self.acts[i];
            span.first_start = span.first_start.min(a.start);
            span.last_end = span.last_end.max(a.end);
            self.claimed[i] = true;
        }
        Some(span)
    }

    /// The first record at or after key `from` (a mark's timestamp when no brick
    /// resolved it).
    pub(crate) fn first_from(&self, from: u64) -> Option<&Act> {
        self.acts.get(self.range(from, u64::MAX).start)
    }

    /// Keys below `to` are resolved: drop their records; those no brick claimed count as
    /// outside any brick.
    pub(crate) fn release_below(&mut self, to: u64) {
        let n = self.acts.partition_point(|a| a.position() < to);
        for (a, c) in self.acts.drain(..n).zip(self.claimed.drain(..n)) {
            if !c {
                tally(&mut self.outside, &a);
            }
        }
    }

    /// Records outside any brick so far.
    pub(crate) fn outside(&self) -> Tally {
        self.outside
    }

    /// Records held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.acts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spec/sync-modes.md "CUPTI": a parent's records include its children's; a brick with
    /// none is host-only; records between bricks are outside any brick once released.
    #[test]
    fn nesting_host_only_and_gaps() {
        let k = |p: u64, s: u64, e: u64| Act {
            external: p,
            key: p,
            op: Op::Kernel,
            start: s,
            end: e,
            device: 0,
            stream: 7,
            graph_node: 0,
            graph: 0,
        };
        let mut a = Attribution::default();
        // Marks: 0 parent start, 1 child start, 2 child stop, 3 parent stop, 4 next start.
        a.add(vec![k(2, 50, 60), k(0, 10, 20), k(1, 30, 40), k(3, 70, 71)]);
        assert_eq!(
            a.resolve(1, 2).map(|s| (s.first_start, s.last_end)),
            Some((30, 40))
        );
        assert_eq!(
            a.resolve(0, 3).map(|s| (s.first_start, s.last_end)),
            Some((10, 60))
        );
        assert_eq!(a.resolve(4, 5), None, "host-only");
        assert_eq!(a.first_from(1).map(|x| x.start), Some(30));
        a.release_below(4);
        assert_eq!(
            a.outside(),
            Tally {
                kernels: 1,
                memory_ops: 0,
                busy_ns: 1
            }
        );
    }
}
