//! The limits a profiler checks before it allocates anything (spec/hot-path.md "Limits"), and
//! [`Limit`], which names one in [`crate::Error::OverLimit`]. A leaf: it imports nothing.

/// The most layers a profiler breaks statistics down by (checked before allocating).
pub(crate) const MAX_LAYERS: usize = 4096;

/// The most bricks (built-in plus registered) a profiler holds (checked before allocating).
pub(crate) const MAX_BRICKS: usize = 4096;

/// The most (row, brick) statistics cells a profiler allocates: rows (`layers + 2`) times
/// bricks. Checked at construction and at every registration, before allocating; each cell
/// takes [`crate::stats::BrickStats::MEMORY_BYTES`] bytes.
pub(crate) const MAX_CELLS: usize = 1 << 16;

/// The largest pending buffer (open and unresolved bricks) a profiler allocates.
pub(crate) const MAX_PENDING: usize = 1 << 24;

/// The most passes in flight ([`crate::ProfilerConfig::max_passes_in_flight`]) in
/// [`crate::SyncMode::Lagged`]. Device timelines size their mark pools with one end-of-pass
/// mark for each.
pub(crate) const MAX_PASSES_IN_FLIGHT: usize = 16;

/// The most pass records a profile's pass series holds (a profiler's ring, or all the runs of a
/// merged profile): 262,144 records, 24 MiB at `PassRecord::MEMORY_BYTES` (96) each.
pub(crate) const MAX_PASS_SERIES: usize = 1 << 18;

/// Bytes of one pass record (`PassRecord::MEMORY_BYTES`; a test keeps them equal).
const PASS_RECORD_BYTES: usize = 96;

/// Bytes of one statistics cell (`BrickStats::MEMORY_BYTES`; a test keeps them equal).
const CELL_BYTES: usize = 2208;

/// The limits a profiler checks ([`crate::Error::OverLimit`]); [`Limit::max`] is the largest value
/// allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Limit {
    /// [`crate::ProfilerConfig::layers`], at most `Limit::Layers.max()` (4096).
    Layers,
    /// Bricks, built-in plus registered, at most `Limit::Bricks.max()` (4096).
    Bricks,
    /// Statistics cells (rows × bricks), at most `Limit::Cells.max()` (65,536).
    Cells,
    /// [`crate::ProfilerConfig::pending_capacity`], from 1 to `Limit::PendingCapacity.max()` (2^24).
    PendingCapacity,
    /// [`crate::ProfilerConfig::max_passes_in_flight`], from 1 to `Limit::PassesInFlight.max()` (16).
    PassesInFlight,
    /// The capacity of a profiler's pass series ring, at most `Limit::PassSeries.max()` (262,144) records.
    PassSeries,
}

impl Limit {
    /// The largest value allowed.
    pub const fn max(self) -> usize {
        match self {
            Limit::Layers => MAX_LAYERS,
            Limit::Bricks => MAX_BRICKS,
            Limit::Cells => MAX_CELLS,
            Limit::PendingCapacity => MAX_PENDING,
            Limit::PassesInFlight => MAX_PASSES_IN_FLIGHT,
            Limit::PassSeries => MAX_PASS_SERIES,
        }
    }

    /// What asking for `requested` against this limit means, and what to do about it.
    pub(crate) fn describe(self, requested: usize) -> String {
        let max = self.max();
        match self {
            Limit::Layers => format!(
                "{requested} layers requested; a profiler breaks statistics down by at most {max} \
             layers"
            ),
            Limit::Bricks => {
                format!(
                "cannot register brick number {requested}: a profiler holds at most {max} bricks"
            )
            }
            Limit::Cells => format!(
            "{requested} statistics cells (rows x bricks), over the limit of {max} ({} MiB): use \
             fewer layers or register fewer bricks",
            (max * CELL_BYTES) >> 20
        ),
            Limit::PendingCapacity => {
                format!("pending capacity {requested} (ProfilerConfig::pending_capacity) is out of range 1..={max}: a timeline needs room for at least one mark pair")
            }
            Limit::PassesInFlight => format!(
                "max_passes_in_flight {requested} is out of range 1..={max} (Lagged sync mode)"
            ),
            Limit::PassSeries => format!(
                "a pass series of {requested} records is over the limit of {max} ({} MiB): keep \
                 fewer passes",
                (max * PASS_RECORD_BYTES) >> 20
            ),
        }
    }
}

std::thread_local! {
    /// The limit a reader found passed while parsing a file on this thread (see [`trip`]).
    static TRIPPED: std::cell::Cell<Option<Limit>> = const { std::cell::Cell::new(None) };
}

/// Note that a file being parsed on this thread passed `limit`, before the parser's own error
/// (which can carry only a message) unwinds: the reader turns that error into
/// [`crate::Error::OverLimit`] with [`take_tripped`] (spec/profile-format.md "Limits while
/// reading").
pub(crate) fn trip(limit: Limit) {
    TRIPPED.with(|t| t.set(Some(limit)));
}

/// The limit noted by [`trip`] since the last call, if any (and forget it).
pub(crate) fn take_tripped() -> Option<Limit> {
    TRIPPED.with(|t| t.take())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cell_weighs_what_the_stats_say() {
        assert_eq!(super::CELL_BYTES, crate::stats::BrickStats::MEMORY_BYTES);
    }

    #[test]
    fn a_pass_record_weighs_what_the_limit_says() {
        assert_eq!(
            super::PASS_RECORD_BYTES,
            crate::stats::PassRecord::MEMORY_BYTES
        );
    }
}
