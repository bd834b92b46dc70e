//! Pass ranges read by time (spec/imports.md "Pass ranges", "rocprofv3"): a file whose kernels
//! name their innermost range only (rocprofv3) still says which pass each kernel ran in, by
//! time: the pass range's host interval [start, end] on the kernel's thread contains the
//! kernel's device interval when the pass synced before its range closed (every sync mode but
//! Lagged; rocprofv3 stamps host and device times on one clock). Memory: one entry a pass range,
//! at most [`MAX_PASS_RANGES`].

use std::collections::HashMap;

use super::builder::{PassOf, MAX_NAME_BYTES};

/// The most pass ranges one import keeps.
pub(crate) const MAX_PASS_RANGES: usize = 1 << 18;

/// One pass range: its host interval and its name.
#[derive(Debug)]
struct PassRange {
    start: u64,
    end: u64,
    name: Box<str>,
}

/// The pass ranges of a file, by thread, each thread's sorted by start.
#[derive(Debug, Default)]
pub(crate) struct PassRanges {
    by_thread: HashMap<u64, Vec<PassRange>>,
    count: usize,
}

/// Where a kernel falls among its thread's pass ranges.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PassFound<'a> {
    /// Inside this pass range.
    In(PassOf<'a>),
    /// After its thread's first pass range opened, but inside none (it straddles a range's end
    /// or runs after it closed: a Lagged run).
    Outside,
    /// Before its thread's first pass range, or on a thread without pass ranges.
    NoPass,
}

impl PassRanges {
    /// How many pass ranges were kept.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Keep the pass range `name` of `thread` over [`start`, `end`]; the fault when it ends
    /// before it starts, its name is too long, or there are too many.
    pub(crate) fn add(
        &mut self,
        thread: u64,
        (start, end): (u64, u64),
        name: &str,
    ) -> std::result::Result<(), String> {
        let quoted = || format!("{:?}", crate::base::printable::printable(name));
        if end < start {
            return Err(format!(
                "the pass range {} ends ({end}) before it starts ({start})",
                quoted()
            ));
        }
        if name.len() > MAX_NAME_BYTES {
            return Err(format!(
                "a pass range name is longer than {MAX_NAME_BYTES} bytes"
            ));
        }
        if self.count >= MAX_PASS_RANGES {
            return Err(format!("more than {MAX_PASS_RANGES} pass ranges"));
        }
        self.count += 1;
        self.by_thread.entry(thread).or_default().push(PassRange {
            start,
            end,
            name: name.into(),
        });
        Ok(())
    }

    /// Sort each thread's ranges by start (then end): call once, after the last [`Self::add`].
    pub(crate) fn sort(&mut self) {
        for ranges in self.by_thread.values_mut() {
            ranges.sort_by_key(|r| (r.start, r.end));
        }
    }

    /// The pass of a kernel of `thread` over [`start`, `end`]: the pass range that opened last
    /// at or before the kernel's start, when the kernel ends at or before that range's end.
    pub(crate) fn of(&self, thread: u64, start: u64, end: u64) -> PassFound<'_> {
        let Some(ranges) = self.by_thread.get(&thread) else {
            return PassFound::NoPass;
        };
        let i = ranges.partition_point(|r| r.start <= start);
        let Some(r) = i.checked_sub(1).map(|i| &ranges[i]) else {
            return PassFound::NoPass;
        };
        if end <= r.end {
            PassFound::In(PassOf {
                name: &r.name,
                wall_ns: Some(r.end - r.start),
            })
        } else {
            PassFound::Outside
        }
    }
}

/// The notes on how kernels fell among `ranges` pass ranges: `in_pass` kernels inside one,
/// `outside` kernels outside every pass range of their thread after its first one opened.
pub(crate) fn notes(ranges: usize, in_pass: u64, outside: u64) -> Vec<String> {
    let mut notes = Vec::new();
    if ranges > 0 && in_pass == 0 {
        notes.push(format!(
            "{ranges} pass ranges (pass/{{phase}}/{{n}}) in the markers, but no kernel ran inside one on its thread: no passes read"
        ));
    }
    if outside > 0 {
        notes.push(format!(
            "{outside} kernels fell outside every pass range although pass ranges were present, and belong to no pass (a Lagged run: its kernels run after their pass range closes)"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_in_straddling_and_before_pass_ranges() {
        let mut p = PassRanges::default();
        p.add(1, (200, 300), "pass/decode/1").unwrap();
        p.add(1, (100, 150), "pass/prefill/0").unwrap();
        p.sort();
        assert!(
            matches!(p.of(1, 110, 150), PassFound::In(r) if r.name == "pass/prefill/0" && r.wall_ns == Some(50))
        );
        assert!(matches!(p.of(1, 210, 300), PassFound::In(r) if r.name == "pass/decode/1"));
        assert!(matches!(p.of(1, 290, 310), PassFound::Outside));
        assert!(matches!(p.of(1, 160, 170), PassFound::Outside));
        assert!(matches!(p.of(1, 50, 60), PassFound::NoPass));
        assert!(matches!(p.of(2, 110, 120), PassFound::NoPass));
        assert!(p
            .add(1, (5, 4), "pass/decode/2")
            .unwrap_err()
            .contains("ends (4) before"));
        assert_eq!(p.count, 2);
    }
}
