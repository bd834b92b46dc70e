//! Merging another profiler's statistics into this one (threads of one process).

use strum::EnumCount;

use super::BrickProfiler;
use crate::timeline::Timeline;
use crate::{BrickCategory, Error, Result, TileLevel};

impl<T: Timeline> BrickProfiler<T> {
    /// Add another profiler's statistics to this one's. Layer counts must match; dynamic
    /// bricks are matched by name (registered here if new). Pending measurements of `other`
    /// are not included: finalize it first.
    pub fn merge<U: Timeline>(&mut self, other: &BrickProfiler<U>) -> Result<()> {
        if other.layers != self.layers {
            return Err(Error::Merge(format!(
                "profilers have {} and {} layers",
                self.layers, other.layers
            )));
        }
        for h in other.registry.handles() {
            let name = other.registry.name(h).unwrap_or_default();
            let cat = other.registry.category(h).unwrap_or(BrickCategory::Other);
            let mine = self.register_with_category(name, cat)?;
            for row in 0..self.rows {
                if let (Some(dst), Some(src)) = (
                    self.stats.get_mut(mine.slot() * self.rows + row),
                    other.stats.get(h.slot() * other.rows + row),
                ) {
                    dst.merge(src);
                }
            }
            for level in 0..TileLevel::COUNT {
                if let (Some(dst), Some(src)) = (
                    self.tiles.get_mut(mine.slot() * TileLevel::COUNT + level),
                    other.tiles.get(h.slot() * TileLevel::COUNT + level),
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
