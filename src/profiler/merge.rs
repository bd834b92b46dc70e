//! Merging another profiler's statistics into this one (threads of one process).

use super::BrickProfiler;
use crate::timeline::Timeline;
use crate::{BrickCategory, Error, Result, TileLevel};

impl<T: Timeline> BrickProfiler<T> {
    /// Add another profiler's statistics and counters to this one's. Layer counts, sync modes
    /// and timeline kinds must match (as for [`crate::Profile::merge`]); dynamic bricks are
    /// matched by name (registered here if new). Pending measurements of `other` are not
    /// included: finalize it first.
    pub fn merge<U: Timeline>(&mut self, other: &BrickProfiler<U>) -> Result<()> {
        if other.layers != self.layers
            || other.mode != self.mode
            || other.timeline.kind() != self.timeline.kind()
        {
            return Err(Error::Merge(format!(
                "profilers differ in layers/sync mode/timeline: {}/{}/{} vs {}/{}/{}",
                self.layers,
                self.mode,
                self.timeline.kind(),
                other.layers,
                other.mode,
                other.timeline.kind()
            )));
        }
        // Register first, so a failure (a limit) leaves this profiler unchanged.
        let mut mapping = Vec::with_capacity(other.registry.len());
        for h in other.registry.handles() {
            let name = other.registry.name(h).unwrap_or_default();
            let cat = other.registry.category(h).unwrap_or(BrickCategory::Other);
            mapping.push((h, self.register_with_category(name, cat)?));
        }
        for (theirs, mine) in mapping {
            let rows = self.cells.stats.rows();
            for row in 0..rows {
                if let (Some(dst), Some(src)) = (
                    self.cells.stats.get_mut(mine.slot(), row),
                    other.cells.stats.get(theirs.slot(), row),
                ) {
                    dst.merge(src);
                }
            }
            for level in TileLevel::ALL {
                if let (Some(dst), Some(src)) = (
                    self.cells.tiles.get_mut(mine.slot(), level as usize),
                    other.cells.tiles.get(theirs.slot(), level as usize),
                ) {
                    dst.merge(src);
                }
            }
        }
        for (dst, src) in self
            .unattributed_tiles
            .iter_mut()
            .zip(other.unattributed_tiles.iter())
        {
            dst.merge(src);
        }
        self.pass_stats.merge(&other.pass_stats);
        self.counters.merge(&other.counters());
        Ok(())
    }
}
