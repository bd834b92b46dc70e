//! The pass series: one small record per forward pass (its shape, wall time, device time and
//! time per category), kept in a bounded ring while a run records ([`PassRing`]) and saved in a
//! profile as one run or, after merges, several ([`PassSeries`]). A leaf: TTFT, TPOT and
//! cost-against-shape are computed from it at report time, never on the hot path.
//! Specified in `spec/hot-path.md` ("Pass series").

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use strum::IntoEnumIterator;

use crate::base::limits::{Limit, MAX_PASS_SERIES};
use crate::model::phase::{PassShape, Phase};
use crate::{base::exact_int, BrickCategory, Error, Result};

/// How many categories a record splits its time by.
const CATEGORIES: usize = BrickCategory::COUNT;

/// The records a ring keeps unless configured otherwise: the newest 4096 passes, in
/// `4096 × PassRecord::MEMORY_BYTES` = 384 KiB, allocated once.
pub(crate) const DEFAULT_PASS_SERIES: usize = 4096;

/// One forward pass, as the series keeps it.
///
/// `device_ns` is the time in the pass's bricks as the timeline measured it (self times
/// summed: device time on a device timeline, host time on the CPU), and `category_ns` splits it
/// by [`BrickCategory`], so the categories always add up to `device_ns`. `wall_ns` is the host
/// wall time of the pass, from `begin_pass` to `end_pass`. Fields are private: a loaded record
/// keeps the same rules as a built one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawRecord", into = "RawRecord")]
pub struct PassRecord {
    shape: Option<PassShape>,
    wall_ns: u64,
    device_ns: u64,
    category_ns: [u64; CATEGORIES],
}

impl PassRecord {
    /// Bytes one record takes in a ring: 96 (a test keeps this number true).
    #[cfg(test)]
    pub(crate) const MEMORY_BYTES: usize = std::mem::size_of::<PassRecord>();

    /// A pass of `shape` (`None`: begun without one, phase unspecified) that took `wall_ns` of
    /// wall time, and `category_ns[c]` in the bricks of each category `c` (indexed in
    /// [`BrickCategory`] order). `device_ns` is their sum (saturating).
    pub fn new(
        shape: Option<PassShape>,
        wall_ns: u64,
        category_ns: [u64; CATEGORIES],
    ) -> PassRecord {
        let device_ns = category_ns
            .iter()
            .fold(0u64, |sum, &ns| sum.saturating_add(ns));
        PassRecord {
            shape,
            wall_ns,
            device_ns,
            category_ns,
        }
    }

    /// The pass's shape, if it was given one.
    pub(crate) fn shape(&self) -> Option<&PassShape> {
        self.shape.as_ref()
    }

    /// The pass's phase ([`Phase::Unspecified`] without a shape).
    pub(crate) fn phase(&self) -> Phase {
        self.shape.map_or(Phase::Unspecified, |s| s.phase())
    }

    /// Host wall time of the pass, ns.
    pub fn wall_ns(&self) -> u64 {
        self.wall_ns
    }

    /// Time in the pass's bricks (self times summed), ns: the sum of [`Self::category_ns`].
    pub(crate) fn device_ns(&self) -> u64 {
        self.device_ns
    }

    /// Time in the bricks of one category, ns.
    pub(crate) fn category_ns(&self, category: BrickCategory) -> u64 {
        self.category_ns[category as usize]
    }

    /// A total order on records (shape, then times), used to put runs in one canonical order.
    fn order(&self, other: &PassRecord) -> Ordering {
        let key = |r: &PassRecord| {
            r.shape
                .map(|s| (s.phase(), s.new_tokens(), s.sequences(), s.context_tokens()))
        };
        key(self)
            .cmp(&key(other))
            .then(self.wall_ns.cmp(&other.wall_ns))
            .then(self.category_ns.cmp(&other.category_ns))
    }
}

/// The bounded ring a profiler records its passes into: it keeps the newest `capacity`
/// records and counts the older ones it overwrote. Allocated once, at construction:
/// [`PassRing::push`] never allocates (capacity 0 keeps nothing and counts every pass as
/// dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PassRing {
    /// Never longer than `capacity`; once full, `next` is the oldest record's index.
    records: Vec<PassRecord>,
    capacity: usize,
    next: usize,
    dropped: u64,
}

impl PassRing {
    /// A ring of `capacity` records (`PassRecord::MEMORY_BYTES` each), allocated now; an
    /// [`Error::OverLimit`] (`Limit::PassSeries`) above [`MAX_PASS_SERIES`].
    pub(crate) fn new(capacity: usize) -> Result<PassRing> {
        if capacity > MAX_PASS_SERIES {
            return Err(Error::OverLimit {
                limit: Limit::PassSeries,
                requested: capacity,
            });
        }
        Ok(PassRing {
            records: Vec::with_capacity(capacity),
            capacity,
            next: 0,
            dropped: 0,
        })
    }

    /// A ring that keeps nothing (capacity 0: the series is off).
    pub(crate) fn empty() -> PassRing {
        PassRing {
            records: Vec::new(),
            capacity: 0,
            next: 0,
            dropped: 0,
        }
    }

    /// Record a pass, overwriting the oldest record when the ring is full. Never allocates.
    #[inline]
    pub(crate) fn push(&mut self, record: PassRecord) {
        if self.records.len() < self.capacity {
            self.records.push(record);
            return;
        }
        self.dropped = self.dropped.saturating_add(1);
        if let Some(slot) = self.records.get_mut(self.next) {
            *slot = record;
            self.next = (self.next + 1) % self.capacity;
        }
    }

    /// The records kept, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &PassRecord> + '_ {
        let (newer, older) = self.records.split_at(self.next);
        older.iter().chain(newer)
    }

    /// Whether no record is kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Records overwritten (or, at capacity 0, never kept).
    #[cfg(test)]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// How many records the ring keeps at most.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Forget every record and the drop count; the allocation is kept.
    pub(crate) fn clear(&mut self) {
        self.records.clear();
        self.next = 0;
        self.dropped = 0;
    }

    /// What the ring holds as a series of one run (no run at all when nothing was pushed).
    /// Allocates: call it when a profile is taken, not per pass.
    pub(crate) fn series(&self) -> PassSeries {
        let mut series = PassSeries::default();
        if !self.is_empty() || self.dropped > 0 {
            series.runs.push(PassRun {
                capacity: self.capacity,
                dropped: self.dropped,
                records: self.iter().copied().collect(),
                brick_passes: None,
                brick_ns: BTreeMap::new(),
            });
        }
        series
    }
}

/// The passes of one run, oldest first: the newest `capacity` at most, after `dropped` older
/// ones that the ring overwrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawRun", into = "RawRun")]
pub(crate) struct PassRun {
    capacity: usize,
    dropped: u64,
    records: Vec<PassRecord>,
    /// How many of the newest records the pass-brick record covers (`None`: the run has no
    /// pass-brick record, as in older files; spec/timing-verdicts.md).
    brick_passes: Option<usize>,
    /// Per brick with any time, its self time in each of those passes, oldest first.
    brick_ns: BTreeMap<String, Vec<u32>>,
}

impl PassRun {
    /// The records, oldest first.
    pub(crate) fn records(&self) -> &[PassRecord] {
        &self.records
    }

    /// Older passes of the run that are not kept.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Whether the run has a pass-brick record (files from before it have none).
    #[cfg(test)]
    pub(crate) fn has_brick_record(&self) -> bool {
        self.brick_passes.is_some()
    }

    /// The per-pass self times of brick `name`, ns, paired with their records: the newest
    /// records the pass-brick record covers, oldest first, a pass with no time for the brick
    /// giving 0. `None` when the run has no pass-brick record.
    pub(crate) fn brick_times<'a>(
        &'a self,
        name: &str,
    ) -> Option<impl Iterator<Item = (&'a PassRecord, u64)> + 'a> {
        let k = self.brick_passes?;
        let column = self.brick_ns.get(name);
        let records = &self.records[self.records.len().saturating_sub(k)..];
        Some(records.iter().enumerate().map(move |(i, r)| {
            (
                r,
                column.and_then(|c| c.get(i)).map_or(0, |&ns| u64::from(ns)),
            )
        }))
    }

    /// The bricks with time in the pass-brick record, by name.
    pub(crate) fn brick_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.brick_ns.keys().map(String::as_str)
    }

    fn order(&self, other: &PassRun) -> Ordering {
        let by_records = self
            .records
            .iter()
            .zip(&other.records)
            .map(|(a, b)| a.order(b))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal);
        by_records
            .then(self.records.len().cmp(&other.records.len()))
            .then(self.dropped.cmp(&other.dropped))
            .then(self.capacity.cmp(&other.capacity))
            .then(self.brick_passes.cmp(&other.brick_passes))
            .then(self.brick_ns.cmp(&other.brick_ns))
    }
}

/// The pass series a profile saves: the passes of each run merged into it (its records, and
/// how many older passes its ring overwrote), never mixed, in a canonical order (so merge is
/// commutative), holding at most `Limit::PassSeries.max()` (262,144) records in all.
///
/// A merge of two profiles ([`crate::Profile::merge`]) keeps the runs of both series apart.
/// When the union would hold more than `Limit::PassSeries.max()` (262,144) records, it keeps
/// the runs, in canonical order, while they fit and counts the rest (saved as
/// `merge_dropped`); that rule is associative and commutative (the runs kept depend only on the
/// set of runs merged).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawSeries", into = "RawSeries")]
pub struct PassSeries {
    runs: Vec<PassRun>,
    /// Runs and records left out by merges over the budget.
    merge_dropped: MergeDropped,
}

/// What merges left out of a series to stay within `Limit::PassSeries.max()` (262,144) records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MergeDropped {
    /// Whole runs left out.
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    pub(crate) runs: u64,
    /// Their records.
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    pub(crate) records: u64,
}

impl MergeDropped {
    fn is_zero(&self) -> bool {
        self.runs == 0 && self.records == 0
    }
}

impl PassSeries {
    /// A series of one run: `records` oldest first, after `dropped` older passes not kept,
    /// recorded by a ring of `capacity`. Checked as a loaded run is: at most `capacity`
    /// records, exactly `capacity` when any was dropped, and a capacity within
    /// `Limit::PassSeries.max()` (262,144).
    pub fn from_run(records: Vec<PassRecord>, dropped: u64, capacity: usize) -> Result<Self> {
        let run = PassRun::try_from(RawRun {
            capacity,
            dropped,
            records,
            brick_passes: None,
            brick_ns: BTreeMap::new(),
        })
        .map_err(|m| Error::invalid_value("pass series run", capacity, m))?;
        Ok(PassSeries {
            runs: vec![run],
            merge_dropped: MergeDropped::default(),
        })
    }

    /// The series with a pass-brick record on its single run: `passes` newest records covered,
    /// and per brick its column (each `passes` long). Checked as a loaded run is; a series of
    /// other than one run, or columns that do not fit, are returned unchanged (a profiler
    /// always builds them to fit).
    pub(crate) fn with_brick_ns(
        mut self,
        passes: usize,
        columns: BTreeMap<String, Vec<u32>>,
    ) -> Self {
        if let [run] = self.runs.as_mut_slice() {
            if check_bricks(run.records.len(), Some(passes), &columns).is_ok() {
                run.brick_passes = Some(passes);
                run.brick_ns = columns;
            }
        }
        self
    }

    /// The per-pass self times of brick `name` in the passes of `phase` (every pass when
    /// `None`), ns, over every run: a pass with no time for the brick gives no sample (spec/
    /// timing-verdicts.md "What a sample is"). `None` when a run with passes of the phase has no
    /// pass-brick record (an older file).
    pub fn brick_samples(&self, phase: Option<Phase>, name: &str) -> Option<Vec<u64>> {
        let mut out = Vec::new();
        for run in &self.runs {
            let of_phase = |r: &PassRecord| phase.is_none_or(|p| r.phase() == p);
            match run.brick_times(name) {
                Some(times) => out.extend(
                    times
                        .filter(|&(r, ns)| of_phase(r) && ns > 0)
                        .map(|(_, ns)| ns),
                ),
                None if run.records.iter().any(of_phase) => return None,
                None => {}
            }
        }
        Some(out)
    }

    /// The runs, in canonical order.
    pub(crate) fn runs(&self) -> &[PassRun] {
        &self.runs
    }

    /// Whether the series has no run.
    pub(crate) fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Records kept, over all runs.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.runs.iter().map(|r| r.records.len()).sum()
    }

    /// Every record kept, run by run, each run oldest first.
    pub fn records(&self) -> impl Iterator<Item = &PassRecord> + '_ {
        self.runs.iter().flat_map(|r| &r.records)
    }

    /// Passes recorded but not kept, over every run: the older passes each run's ring
    /// overwrote (its records are the newest it held).
    pub fn dropped(&self) -> u64 {
        self.runs
            .iter()
            .fold(0u64, |sum, r| sum.saturating_add(r.dropped))
    }

    /// What merges left out to stay within `Limit::PassSeries.max()` (262,144) records.
    #[cfg(test)]
    pub(crate) fn merge_dropped(&self) -> MergeDropped {
        self.merge_dropped
    }

    /// Add the runs of `other`, keeping every run apart (see the type's documentation for the
    /// budget rule). What [`crate::Profile::merge`] does to the profiles' series.
    pub(crate) fn merge(&mut self, other: &PassSeries) {
        self.merge_within(other, MAX_PASS_SERIES);
    }

    /// [`Self::merge`] with a budget of `budget` records.
    fn merge_within(&mut self, other: &PassSeries, budget: usize) {
        let mut runs: Vec<PassRun> = self.runs.drain(..).chain(other.runs.clone()).collect();
        runs.sort_by(PassRun::order);
        let mut dropped = MergeDropped {
            runs: self
                .merge_dropped
                .runs
                .saturating_add(other.merge_dropped.runs),
            records: self
                .merge_dropped
                .records
                .saturating_add(other.merge_dropped.records),
        };
        let mut kept = 0usize;
        let fits = runs
            .iter()
            .position(|r| {
                kept += r.records.len();
                kept > budget
            })
            .unwrap_or(runs.len());
        for r in runs.drain(fits..) {
            dropped.runs = dropped.runs.saturating_add(1);
            dropped.records = dropped.records.saturating_add(r.records.len() as u64);
        }
        self.runs = runs;
        self.merge_dropped = dropped;
    }
}

/// The saved form of a [`PassRecord`]: the shape (absent when the pass had none), the times,
/// and the categories' times by name (zero ones left out).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shape: Option<PassShape>,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    wall_ns: u64,
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    device_ns: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    category_ns: BTreeMap<BrickCategory, Ns>,
}

/// A time in a map, written as [`exact_int`] writes integers.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
struct Ns(
    #[serde(
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    u64,
);

impl From<PassRecord> for RawRecord {
    fn from(r: PassRecord) -> RawRecord {
        RawRecord {
            shape: r.shape,
            wall_ns: r.wall_ns,
            device_ns: r.device_ns,
            category_ns: BrickCategory::iter()
                .zip(r.category_ns)
                .filter(|&(_, ns)| ns > 0)
                .map(|(c, ns)| (c, Ns(ns)))
                .collect(),
        }
    }
}

impl TryFrom<RawRecord> for PassRecord {
    type Error = String;

    fn try_from(raw: RawRecord) -> std::result::Result<PassRecord, String> {
        let mut category_ns = [0u64; CATEGORIES];
        for (c, Ns(ns)) in raw.category_ns {
            category_ns[c as usize] = ns;
        }
        let r = PassRecord::new(raw.shape, raw.wall_ns, category_ns);
        if r.device_ns != raw.device_ns {
            return Err(format!(
                "pass record: device_ns {} is not the sum of its categories' times ({})",
                raw.device_ns, r.device_ns
            ));
        }
        Ok(r)
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    #[serde(
        serialize_with = "exact_int::ser_usize",
        deserialize_with = "exact_int::de_usize"
    )]
    capacity: usize,
    #[serde(
        default,
        serialize_with = "exact_int::ser_u64",
        deserialize_with = "exact_int::de_u64"
    )]
    dropped: u64,
    #[serde(deserialize_with = "de_records")]
    records: Vec<PassRecord>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "exact_int::ser_opt_usize",
        deserialize_with = "exact_int::de_opt_usize"
    )]
    brick_passes: Option<usize>,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "de_brick_ns"
    )]
    brick_ns: BTreeMap<String, Vec<u32>>,
}

impl From<PassRun> for RawRun {
    fn from(r: PassRun) -> RawRun {
        RawRun {
            capacity: r.capacity,
            dropped: r.dropped,
            records: r.records,
            brick_passes: r.brick_passes,
            brick_ns: r.brick_ns,
        }
    }
}

impl TryFrom<RawRun> for PassRun {
    type Error = String;

    fn try_from(r: RawRun) -> std::result::Result<PassRun, String> {
        if r.capacity > MAX_PASS_SERIES {
            return Err(format!(
                "pass series run: capacity {} is over the limit of {MAX_PASS_SERIES} records",
                r.capacity
            ));
        }
        if r.records.len() > r.capacity {
            return Err(format!(
                "pass series run: {} records, more than its capacity {}",
                r.records.len(),
                r.capacity
            ));
        }
        if r.dropped > 0 && r.records.len() != r.capacity {
            return Err(format!(
                "pass series run: {} passes dropped, yet only {} of its {} records are kept",
                r.dropped,
                r.records.len(),
                r.capacity
            ));
        }
        if r.dropped == 0 && r.records.is_empty() {
            return Err("pass series run: a run with no record and none dropped".into());
        }
        check_bricks(r.records.len(), r.brick_passes, &r.brick_ns)?;
        Ok(PassRun {
            capacity: r.capacity,
            dropped: r.dropped,
            records: r.records,
            brick_passes: r.brick_passes,
            brick_ns: r.brick_ns,
        })
    }
}

/// The pass-brick record of a run of `records` records: `brick_passes` at most the records,
/// every column exactly `brick_passes` long, no column without it, no empty name.
fn check_bricks(
    records: usize,
    brick_passes: Option<usize>,
    brick_ns: &BTreeMap<String, Vec<u32>>,
) -> std::result::Result<(), String> {
    match brick_passes {
        Some(k) if k > records => {
            return Err(format!(
                "pass series run: brick_passes {k} is more than its {records} records"
            ))
        }
        None if !brick_ns.is_empty() => {
            return Err("pass series run: brick_ns without brick_passes".into())
        }
        _ => {}
    }
    let k = brick_passes.unwrap_or(0);
    if let Some((name, c)) = brick_ns.iter().find(|(_, c)| c.len() != k) {
        return Err(format!(
            "pass series run: brick_ns of {} has {} passes, not brick_passes {k}",
            crate::base::printable::printable(name),
            c.len()
        ));
    }
    if brick_ns.keys().any(String::is_empty) {
        return Err("pass series run: brick_ns names a brick with an empty name".into());
    }
    Ok(())
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSeries {
    #[serde(deserialize_with = "de_runs")]
    runs: Vec<PassRun>,
    #[serde(default, skip_serializing_if = "MergeDropped::is_zero")]
    merge_dropped: MergeDropped,
}

impl From<PassSeries> for RawSeries {
    fn from(s: PassSeries) -> RawSeries {
        RawSeries {
            runs: s.runs,
            merge_dropped: s.merge_dropped,
        }
    }
}

impl TryFrom<RawSeries> for PassSeries {
    type Error = String;

    /// Checks the budget and puts the runs in canonical order.
    fn try_from(r: RawSeries) -> std::result::Result<PassSeries, String> {
        let total: usize = r.runs.iter().map(|run| run.records.len()).sum();
        if total > MAX_PASS_SERIES {
            return Err(format!(
                "pass series: {total} records, over the limit of {MAX_PASS_SERIES}"
            ));
        }
        let mut runs = r.runs;
        runs.sort_by(PassRun::order);
        Ok(PassSeries {
            runs,
            merge_dropped: r.merge_dropped,
        })
    }
}

/// The limits of a series checked while it is read (spec/profile-format.md "Limits while
/// reading"): a list is refused as soon as it holds one element more than its limit, so a file
/// far over it costs the limit, not its size. The limit is noted ([`crate::base::limits::trip`]) for
/// the reader's typed error.
fn over<E: serde::de::Error>(limit: Limit, what: &str) -> E {
    crate::base::limits::trip(limit);
    E::custom(format!(
        "pass series: more than {} {what}, over the limit (refused while reading)",
        limit.max()
    ))
}

/// A list of at most `max` elements, refused at element `max + 1` ([`over`]).
struct Bounded<T> {
    limit: Limit,
    what: &'static str,
    _of: std::marker::PhantomData<T>,
}

impl<T> Bounded<T> {
    fn new(limit: Limit, what: &'static str) -> Self {
        Bounded {
            limit,
            what,
            _of: std::marker::PhantomData,
        }
    }
}

impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Bounded<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a list of at most {} {}", self.limit.max(), self.what)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Vec<T>, A::Error> {
        let max = self.limit.max();
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(max).min(4096));
        while let Some(x) = seq.next_element()? {
            if out.len() == max {
                return Err(over(self.limit, self.what));
            }
            out.push(x);
        }
        Ok(out)
    }
}

/// A run's records: at most [`MAX_PASS_SERIES`].
fn de_records<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<PassRecord>, D::Error> {
    d.deserialize_seq(Bounded::new(Limit::PassSeries, "records in a run"))
}

/// The runs: at most [`MAX_PASS_SERIES`] records over all of them, refused as soon as a run
/// takes the total over (so at most one run more than the limit is ever held).
fn de_runs<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<PassRun>, D::Error> {
    struct Runs;
    impl<'de> serde::de::Visitor<'de> for Runs {
        type Value = Vec<PassRun>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(
                f,
                "a list of runs of at most {MAX_PASS_SERIES} records in all"
            )
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Vec<PassRun>, A::Error> {
            let (mut out, mut records) = (Vec::new(), 0usize);
            while let Some(run) = seq.next_element::<PassRun>()? {
                records = records.saturating_add(run.records.len());
                if records > MAX_PASS_SERIES || out.len() == MAX_PASS_SERIES {
                    return Err(over(Limit::PassSeries, "records over all runs"));
                }
                out.push(run);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(Runs)
}

/// A run's pass-brick record: at most [`crate::base::limits::MAX_BRICKS`] bricks, each column at most
/// [`MAX_PASS_SERIES`] passes.
fn de_brick_ns<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<BTreeMap<String, Vec<u32>>, D::Error> {
    struct Column(Vec<u32>);
    impl<'de> Deserialize<'de> for Column {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            d.deserialize_seq(Bounded::new(
                Limit::PassSeries,
                "passes in a brick_ns column",
            ))
            .map(Column)
        }
    }
    struct Columns;
    impl<'de> serde::de::Visitor<'de> for Columns {
        type Value = BTreeMap<String, Vec<u32>>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map from brick names to their per-pass times")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((name, Column(c))) = map.next_entry::<String, Column>()? {
                if out.len() == Limit::Bricks.max() {
                    return Err(over(Limit::Bricks, "bricks in brick_ns"));
                }
                if out.insert(name, c).is_some() {
                    return Err(serde::de::Error::custom(
                        "pass series run: brick_ns names a brick twice",
                    ));
                }
            }
            Ok(out)
        }
    }
    d.deserialize_map(Columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(wall: u64) -> PassRecord {
        let mut cats = [0; CATEGORIES];
        cats[BrickCategory::Attention as usize] = wall / 2;
        PassRecord::new(Some(PassShape::new(1, 1, wall).unwrap()), wall, cats)
    }

    // spec/hot-path.md "Pass series": memory per record and the default ring.
    #[test]
    fn a_record_weighs_what_the_spec_says() {
        assert_eq!(PassRecord::MEMORY_BYTES, 96);
        assert_eq!(DEFAULT_PASS_SERIES * PassRecord::MEMORY_BYTES, 384 << 10);
        assert_eq!(MAX_PASS_SERIES * PassRecord::MEMORY_BYTES, 24 << 20);
    }

    // spec/hot-path.md "Pass series": the ring keeps the newest N and counts the rest.
    #[test]
    fn the_ring_keeps_the_newest_and_counts_what_it_overwrote() {
        let mut ring = PassRing::new(3).unwrap();
        let before = ring.records.as_ptr();
        for w in 1..=7 {
            ring.push(rec(w));
        }
        assert_eq!(ring.records.as_ptr(), before, "push never reallocates");
        let walls: Vec<u64> = ring.iter().map(|r| r.wall_ns()).collect();
        assert_eq!(walls, [5, 6, 7]);
        assert_eq!((ring.records.len(), ring.dropped()), (3, 4));
        let s = ring.series();
        assert_eq!(s.runs().len(), 1);
        assert_eq!(s.runs()[0].dropped(), 4);
        let walls: Vec<u64> = s.records().map(|r| r.wall_ns()).collect();
        assert_eq!(walls, [5, 6, 7]);
        ring.clear();
        assert!(ring.series().is_empty());
    }

    #[test]
    fn a_ring_of_nothing_keeps_nothing_and_counts_every_pass() {
        let mut ring = PassRing::new(0).unwrap();
        ring.push(rec(1));
        ring.push(rec(2));
        assert_eq!((ring.records.len(), ring.dropped()), (0, 2));
        let s = ring.series();
        assert_eq!((s.len(), s.runs()[0].dropped()), (0, 2));
    }

    #[test]
    fn a_ring_over_the_limit_is_refused_before_allocating() {
        let e = PassRing::new(MAX_PASS_SERIES + 1).unwrap_err();
        assert!(matches!(
            e,
            Error::OverLimit {
                limit: Limit::PassSeries,
                ..
            }
        ));
        assert!(e.to_string().contains("pass series"), "{e}");
    }

    #[test]
    fn device_time_is_the_sum_of_the_categories() {
        let mut cats = [0; CATEGORIES];
        cats[BrickCategory::Ffn as usize] = 30;
        cats[BrickCategory::Norm as usize] = 12;
        let r = PassRecord::new(None, 100, cats);
        assert_eq!((r.device_ns(), r.phase()), (42, Phase::Unspecified));
        assert_eq!(r.category_ns(BrickCategory::Ffn), 30);
    }

    fn run(walls: &[u64]) -> PassSeries {
        PassSeries::from_run(walls.iter().map(|&w| rec(w)).collect(), 0, 8).unwrap()
    }

    // spec/profile-format.md "Pass series": over the budget, a merge keeps the runs in
    // canonical order while they fit, whatever the order of the merges.
    #[test]
    fn a_merge_over_the_budget_keeps_a_prefix_of_the_runs_in_any_grouping() {
        let parts = [run(&[5, 5, 5]), run(&[1, 1]), run(&[3, 3, 3, 3]), run(&[2])];
        let budget = 6;
        let merged = |order: &[usize], split: usize| {
            let (mut left, mut right) = (PassSeries::default(), PassSeries::default());
            for (k, &i) in order.iter().enumerate() {
                let side = if k < split { &mut left } else { &mut right };
                side.merge_within(&parts[i], budget);
            }
            left.merge_within(&right, budget);
            left
        };
        let first = merged(&[0, 1, 2, 3], 4);
        // Canonical order: [1,1], [2], [3,3,3,3] (total 7 > 6: it and all after are left out).
        let kept: Vec<Vec<u64>> = first
            .runs()
            .iter()
            .map(|r| r.records().iter().map(|r| r.wall_ns()).collect())
            .collect();
        assert_eq!(kept, [vec![1, 1], vec![2]]);
        assert_eq!(
            first.merge_dropped(),
            MergeDropped {
                runs: 2,
                records: 7
            }
        );
        for (order, split) in [
            ([3, 2, 1, 0], 2),
            ([2, 0, 3, 1], 1),
            ([1, 3, 0, 2], 3),
            ([0, 2, 3, 1], 3), // the first merges already drop [5, 5, 5]
        ] {
            assert_eq!(merged(&order, split), first, "{order:?} split at {split}");
        }
    }

    // spec/profile-format.md "Pass series": saved and checked on load.
    #[test]
    fn a_series_round_trips_and_bad_ones_are_refused() {
        let mut ring = PassRing::new(2).unwrap();
        for w in [10, 20, 30] {
            ring.push(rec(w));
        }
        let mut cats = [u64::MAX; CATEGORIES];
        cats[0] = 0;
        ring.push(PassRecord::new(None, 1 << 60, cats));
        let s = ring.series();
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<PassSeries>(&json).unwrap(), s);
        let bad = [
            // device time that is not the categories' sum
            json.replacen("\"device_ns\":15", "\"device_ns\":16", 1),
            // a shape PassShape::new refuses
            json.replacen("\"context_tokens\":30", "\"context_tokens\":0", 1),
            // more records than the capacity
            json.replacen("\"capacity\":2", "\"capacity\":1", 1),
            // passes dropped from a ring that is not full
            json.replacen("\"capacity\":2", "\"capacity\":3", 1),
            json.replacen("\"Attention\"", "\"Nope\"", 1),
        ];
        for b in bad {
            assert_ne!(b, json);
            assert!(serde_json::from_str::<PassSeries>(&b).is_err(), "{b}");
        }
    }
}
