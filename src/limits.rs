//! The limits a profiler checks before it allocates (layers, bricks, statistics cells, pending
//! entries), and that a loaded profile is held to. A leaf: the profiler and the profile both
//! read them from here.

/// The most layers a profiler breaks statistics down by (checked before allocating).
pub const MAX_LAYERS: usize = 4096;

/// The most bricks (built-in plus registered) a profiler holds (checked before allocating).
pub const MAX_BRICKS: usize = 4096;

/// The most (row, brick) statistics cells a profiler allocates: rows (`layers + 2`) times
/// bricks. Checked at construction and at every registration, before allocating; each cell
/// takes [`BrickStats::MEMORY_BYTES`](crate::BrickStats::MEMORY_BYTES) bytes.
pub const MAX_CELLS: usize = 1 << 16;

/// The largest pending buffer (open and unresolved bricks) a profiler allocates.
pub const MAX_PENDING: usize = 1 << 24;
