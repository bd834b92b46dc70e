//! Tile-level profiling for cache-blocked kernels: [`TileLevel`], [`TileTimer`] and
//! `TileStats`. Tiles are timed on the host clock and attributed to the brick that encloses
//! them (spec/work-accounting.md, "Tiles").

use serde::{Deserialize, Serialize};
use strum::{EnumCount, EnumIter, EnumString, IntoStaticStr};

/// The level of a tile in a blocked kernel's hierarchy.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    EnumCount,
    EnumIter,
    EnumString,
    IntoStaticStr,
    strum::Display,
    Serialize,
    Deserialize,
)]
#[strum(ascii_case_insensitive, serialize_all = "lowercase")]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum TileLevel {
    /// Blocks sized for device memory / L3.
    Macro,
    /// Blocks sized for L2 / shared memory.
    Midi,
    /// Blocks sized for registers / SIMD lanes.
    Micro,
}

impl TileLevel {
    /// Every level, outermost first.
    pub(crate) const ALL: [TileLevel; 3] = [TileLevel::Macro, TileLevel::Midi, TileLevel::Micro];

    /// The level's name ("macro", "midi", "micro").
    pub(crate) fn name(self) -> &'static str {
        self.into()
    }
}

/// Tile statistics: the same spread statistics and work totals as a brick's.
pub(crate) type TileStats = crate::stats::BrickStats;

/// An open tile measurement, from [`crate::BrickProfiler::start_tile`]. `Copy`, 16 bytes.
#[derive(Debug, Clone, Copy)]
#[must_use = "pass the timer to stop_tile, or the tile is not recorded"]
pub struct TileTimer {
    pub(crate) start: u64,
    pub(crate) brick: u16,
    pub(crate) level: TileLevel,
    pub(crate) live: bool,
}

impl TileTimer {
    /// A timer that records nothing (what a disabled profiler hands out).
    pub(crate) const INERT: TileTimer = TileTimer {
        start: 0,
        brick: u16::MAX,
        level: TileLevel::Macro,
        live: false,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_named() {
        assert_eq!(TileLevel::COUNT, TileLevel::ALL.len());
        for (i, l) in TileLevel::ALL.iter().enumerate() {
            assert_eq!(*l as usize, i);
            assert_eq!(l.name().parse::<TileLevel>().unwrap(), *l);
        }
        assert_eq!(TileLevel::Micro.name(), "micro");
    }
}
