//! The limits a profiler checks before it allocates anything (spec/hot-path.md "Limits").

use crate::error::Limit;
use crate::{Error, Result};

/// The most layers a profiler breaks statistics down by (checked before allocating).
pub const MAX_LAYERS: usize = 4096;

/// The most bricks (built-in plus registered) a profiler holds (checked before allocating).
pub const MAX_BRICKS: usize = 4096;

/// The most (row, brick) statistics cells a profiler allocates: rows (`layers + 2`) times
/// bricks. Checked at construction and at every registration, before allocating; each cell
/// takes [`crate::BrickStats::MEMORY_BYTES`] bytes.
pub const MAX_CELLS: usize = 1 << 16;

/// The largest pending buffer (open and unresolved bricks) a profiler allocates.
pub const MAX_PENDING: usize = 1 << 24;

/// The cell limit ([`MAX_CELLS`]) for `rows × slots`.
pub(crate) fn check_cells(rows: usize, slots: usize) -> Result<()> {
    let cells = rows.saturating_mul(slots);
    if cells > MAX_CELLS {
        return Err(Error::OverLimit {
            limit: Limit::Cells,
            requested: cells,
        });
    }
    Ok(())
}
