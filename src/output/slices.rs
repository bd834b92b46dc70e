//! The one slice-building path of both trace formats: a profiler's [`TraceView`] becomes
//! [`Slice`]s in start order with their flows ([`feed`]) for a [`TraceSink`] (a writer, or
//! anything else that takes slices), and every writer places each slice on
//! its track through [`Nesting`], which keeps slices in start order and clips a child to its
//! parent's end. The writers ([`super::chrome_writer`], [`super::perfetto_writer`]) only encode
//! what comes out. Specified in `spec/traces.md` ("Slices").

use crate::model::phase::PassShape;
use crate::profile::trace::{TraceEvent, TraceView, Track};
use crate::{profile::RunMeta, BrickHandle, Error, Result};

/// The arrow from a host dispatch slice to the device slice it launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// No arrow.
    None,
    /// The arrow with this id starts here (host dispatch).
    Out(u64),
    /// The arrow with this id ends here (device execution).
    In(u64),
}

/// One measurement on one track.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slice<'a> {
    /// Which clock.
    pub(crate) track: Track,
    /// Layer row.
    pub(crate) row: u16,
    /// Brick name.
    pub(crate) name: &'a str,
    /// Brick category name.
    pub(crate) category: &'a str,
    /// Start, ns since the clock's origin.
    pub(crate) start_ns: u64,
    /// Duration, ns.
    pub(crate) dur_ns: u64,
    /// Its flow arrow.
    pub(crate) flow: Flow,
}

/// One shaped pass, for the trace's `passes` track: a slice named after its phase, with the
/// shape as arguments, and a point of the `context tokens` counter (spec/traces.md "Passes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PassSlice {
    /// Start, ns since the host origin.
    pub(crate) start_ns: u64,
    /// Wall time, ns.
    pub(crate) dur_ns: u64,
    /// Its shape (and so its phase).
    pub(crate) shape: PassShape,
}

/// A trace writer. Slices arrive in start order per track (a parent before the slices nested
/// in it); counters arrive in time order. Only [`TraceSink::finish`] puts a file in place
/// (whole or not at all): a writer dropped unfinished leaves the old file as it was. Writing
/// into memory, a writer dropped unfinished still leaves a well-formed trace (the Chrome array
/// closed, the Perfetto slices ended).
pub(crate) trait TraceSink {
    /// Write one slice.
    fn slice(&mut self, slice: &Slice<'_>) -> Result<()>;
    /// Write one tokens/s sample.
    fn counter(&mut self, at_ns: u64, tokens_per_sec: f64) -> Result<()>;
    /// Write one shaped pass (they arrive in time order, after the slices and the counters).
    /// A sink without a passes track ignores it.
    fn pass(&mut self, pass: &PassSlice) -> Result<()> {
        let _ = pass;
        Ok(())
    }
    /// Close the trace, flush it and put it in place (an [`crate::io::OutputFile`] is committed).
    fn finish(&mut self) -> Result<()>;
}

/// Opens the output once a reader knows the run's facts ([`super::formats::TraceFormat::read`]).
pub(crate) type OpenSink<'a> = dyn FnMut(&RunMeta) -> Result<Box<dyn TraceSink>> + 'a;

/// Feed every event of `view` to `sink` in start order (ties: the longer, enclosing slice
/// first), pairing each device slice with the host slice recorded with it as a flow, then the
/// tokens/s samples, then the shaped passes ([`TraceSink::pass`]). Does not call [`TraceSink::finish`]. Extra memory: 4 bytes per event.
pub(crate) fn feed(view: &TraceView<'_>, sink: &mut dyn TraceSink) -> Result<()> {
    let (events, registry) = (view.events, view.registry);
    let mut order: Vec<u32> = (0..events.len() as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let e = &events[i as usize];
        (e.start_ns, std::cmp::Reverse(e.dur_ns), i)
    });
    for &i in &order {
        let i = i as usize;
        let e = &events[i];
        let h = BrickHandle(e.slot);
        sink.slice(&Slice {
            track: e.track,
            row: e.row,
            name: registry.name(h).unwrap_or("?"),
            category: registry.category(h).map_or("Other", |c| c.name()),
            start_ns: e.start_ns,
            dur_ns: e.dur_ns,
            flow: flow(events, i),
        })?;
    }
    for p in view.passes {
        sink.counter(p.at_ns, p.tokens_per_sec)?;
    }
    for p in view.passes {
        if let Some(shape) = p.shape {
            sink.pass(&PassSlice {
                start_ns: p.start_ns,
                dur_ns: p.at_ns.saturating_sub(p.start_ns),
                shape,
            })?;
        }
    }
    Ok(())
}

/// The flow of event `i`: the profiler pushes a device event immediately followed by its host
/// event (same brick, same row).
fn flow(events: &[TraceEvent], i: usize) -> Flow {
    let e = &events[i];
    let same = |o: &TraceEvent| o.slot == e.slot && o.row == e.row;
    match e.track {
        Track::Device
            if events
                .get(i + 1)
                .is_some_and(|h| h.track == Track::Host && same(h)) =>
        {
            Flow::In(i as u64)
        }
        Track::Host if i > 0 && events[i - 1].track == Track::Device && same(&events[i - 1]) => {
            Flow::Out(i as u64 - 1)
        }
        _ => Flow::None,
    }
}

/// The open slices of every track ("lane") of one writer: the ends of the open slices,
/// innermost last, and the last start. A writer numbers its own lanes (which slices share a
/// track is a property of its format) and asks [`Nesting::place`] for each slice's end.
/// Memory: one stack per lane, as deep as the deepest nesting.
#[derive(Debug, Default)]
pub(crate) struct Nesting {
    lanes: Vec<Lane>,
}

#[derive(Debug, Default)]
struct Lane {
    open: Vec<u64>,
    last_start: u64,
}

impl Nesting {
    /// Place `slice` on `lane`: first end (calling `ended` with their ends, innermost first)
    /// the open slices that end at or before its start, then return its end, clipped to its
    /// parent's: a child never outlasts its parent (a start and a duration converted from ticks
    /// separately may round a child 1 ns past its parent). A slice that starts before the last
    /// one on its lane is an [`Error::TraceOrder`].
    pub(crate) fn place(
        &mut self,
        lane: usize,
        slice: &Slice<'_>,
        mut ended: impl FnMut(u64) -> Result<()>,
    ) -> Result<u64> {
        if self.lanes.len() <= lane {
            self.lanes.resize_with(lane + 1, Lane::default);
        }
        let l = &mut self.lanes[lane];
        while let Some(end) = l.open.last().copied().filter(|&e| e <= slice.start_ns) {
            l.open.pop();
            ended(end)?;
        }
        if slice.start_ns < l.last_start {
            return Err(Error::TraceOrder {
                name: format!("\"{}\"", crate::base::printable::printable(slice.name)),
                start_ns: slice.start_ns,
                previous_ns: l.last_start,
            });
        }
        let mut end = slice.start_ns.saturating_add(slice.dur_ns);
        if let Some(&parent_end) = l.open.last() {
            end = end.min(parent_end);
        }
        l.open.push(end);
        l.last_start = slice.start_ns;
        Ok(end)
    }

    /// End every open slice of every lane, innermost first: `ended(lane, end)`.
    pub(crate) fn close_all(
        &mut self,
        mut ended: impl FnMut(usize, u64) -> Result<()>,
    ) -> Result<()> {
        for (i, l) in self.lanes.iter_mut().enumerate() {
            while let Some(end) = l.open.pop() {
                ended(i, end)?;
            }
        }
        Ok(())
    }

    /// Forget every lane (a new process of the same writer).
    pub(crate) fn clear(&mut self) {
        self.lanes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(start_ns: u64, dur_ns: u64) -> Slice<'static> {
        Slice {
            track: Track::Cpu,
            row: 0,
            name: "b",
            category: "Other",
            start_ns,
            dur_ns,
            flow: Flow::None,
        }
    }

    #[test]
    fn a_child_is_clipped_to_its_parent_and_ends_come_innermost_first() {
        // spec/traces.md "Slices": a child never outlasts its parent.
        let mut n = Nesting::default();
        let mut ends = Vec::new();
        let mut place = |n: &mut Nesting, lane, start, dur| {
            n.place(lane, &slice(start, dur), |e| {
                ends.push(e);
                Ok(())
            })
            .unwrap()
        };
        assert_eq!(place(&mut n, 0, 0, 10), 10);
        assert_eq!(place(&mut n, 0, 3, 8), 10, "clipped to its parent's end");
        assert_eq!(place(&mut n, 1, 4, 100), 104, "another lane");
        assert_eq!(place(&mut n, 0, 10, 5), 15);
        assert_eq!(ends, [10, 10]);
        assert!(
            n.place(0, &slice(9, 1), |_| Ok(())).is_err(),
            "out of order"
        );
        let mut all = Vec::new();
        n.close_all(|lane, e| {
            all.push((lane, e));
            Ok(())
        })
        .unwrap();
        assert_eq!(all, [(0, 15), (1, 104)]);
    }
}
