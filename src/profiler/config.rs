//! [`ProfilerConfig`]: how a profiler is set up, checked against the limits before anything is
//! allocated (spec/hot-path.md "Limits").

use super::ChecksumPlan;
use crate::base::limits::{
    Limit, MAX_CELLS, MAX_LAYERS, MAX_PASSES_IN_FLIGHT, MAX_PASS_SERIES, MAX_PENDING,
};
use crate::capture::CapturePlan;
use crate::stats::pass_series::DEFAULT_PASS_SERIES;
use crate::{
    model::{OverflowPolicy, Sampling},
    BrickId, Error, Result, SyncMode,
};

/// How a profiler is set up. Every field has a sensible default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfilerConfig {
    /// Number of transformer layers to break statistics down by (0: no per-layer rows; at most
    /// `Limit::Layers.max()` (4096)).
    pub layers: usize,
    /// When marks are synchronized and resolved.
    pub sync_mode: SyncMode,
    /// Capacity of the pending buffer (bricks started and not yet resolved), allocated up
    /// front; at least 1, at most `Limit::PendingCapacity.max()` (2^24).
    pub pending_capacity: usize,
    /// What to do when the pending buffer is full.
    pub overflow: OverflowPolicy,
    /// Number of leading forward passes whose timings are discarded (warm-up).
    pub warmup_passes: u64,
    /// Whether the profiler starts enabled.
    pub enabled: bool,
    /// Whether `prof.checksums().record*` records (off: a no-op).
    pub checksums: bool,
    /// Which kernels are checksummed when `checksums` is on (default: all, every pass).
    pub checksum_plan: ChecksumPlan,
    /// Which kernels' whole outputs are captured by the checksum recording calls (default:
    /// none; spec/divergence.md "Capture plans"). Independent of `checksums`.
    pub capture_plan: CapturePlan,
    /// Capacity of the trace event log (0: no trace). Allocated at construction.
    pub trace_capacity: usize,
    /// Rank (process) id written to traces; several ranks' traces then sit side by side.
    pub rank: u32,
    /// What to mark: every brick, only layer boundaries, or every Nth pass (bounded marking
    /// cost on device timelines; spec/sync-modes.md "Sampling").
    pub sampling: Sampling,
    /// Also open a vendor tool range `L{layer}/{Brick}` around every brick (NVTX, roctx; needs
    /// the `nvtx` or `roctx` cargo feature). Off by default, unless
    /// [`ProfilerConfig::VENDOR_RANGES_ENV`] asks for a tool this build has.
    pub vendor_ranges: bool,
    /// In [`SyncMode::Lagged`]: how many ended passes may wait unresolved before `end_pass`
    /// waits for the oldest (1 to `Limit::PassesInFlight.max()` (16); default 3, as wgpu-profiler).
    pub max_passes_in_flight: usize,
    /// How many passes the pass series keeps (the newest; 96 bytes each,
    /// allocated at construction): shaped passes only, for TTFT, TPOT and the fits of cost
    /// against shape (spec/hot-path.md "Pass series"). 0 turns the series and the fits off;
    /// at most `Limit::PassSeries.max()` (262,144); default 4096 (384 KiB).
    pub pass_series: usize,
}

impl Default for ProfilerConfig {
    fn default() -> Self {
        ProfilerConfig {
            layers: 0,
            sync_mode: SyncMode::Deferred,
            pending_capacity: 4096,
            overflow: OverflowPolicy::Flush,
            warmup_passes: 0,
            enabled: true,
            checksums: false,
            checksum_plan: ChecksumPlan::default(),
            capture_plan: CapturePlan::default(),
            trace_capacity: 0,
            rank: 0,
            sampling: Sampling::All,
            vendor_ranges: vendor_ranges_wanted(std::env::var(Self::VENDOR_RANGES_ENV).ok()),
            max_passes_in_flight: 3,
            pass_series: DEFAULT_PASS_SERIES,
        }
    }
}

impl ProfilerConfig {
    /// The environment variable that turns [`ProfilerConfig::vendor_ranges`] on by default:
    /// `BRICKPROF_VENDOR_RANGES=nvtx`, `roctx` or `nvtx,roctx` (what `brickprof vendor` sets for
    /// the program it runs). It is on when the value names a tool whose cargo feature this
    /// build has; any other value, or a tool this build lacks, leaves it off, so the program
    /// runs as it would without the variable. Read by [`ProfilerConfig::default`], and so by
    /// every front door that starts from it; a configuration that sets the field itself wins.
    pub const VENDOR_RANGES_ENV: &'static str = "BRICKPROF_VENDOR_RANGES";

    /// The default configuration with `layers` layers.
    pub fn with_layers(layers: usize) -> Self {
        ProfilerConfig {
            layers,
            ..Self::default()
        }
    }

    /// Check the limits, before anything is allocated.
    pub(super) fn validate(&self) -> Result<()> {
        if self.layers > MAX_LAYERS {
            return Err(Error::OverLimit {
                limit: Limit::Layers,
                requested: self.layers,
            });
        }
        check_cells(self.layers + 2, BrickId::COUNT)?;
        if self.pending_capacity == 0 || self.pending_capacity > MAX_PENDING {
            return Err(Error::OverLimit {
                limit: Limit::PendingCapacity,
                requested: self.pending_capacity,
            });
        }
        if self.max_passes_in_flight == 0 || self.max_passes_in_flight > MAX_PASSES_IN_FLIGHT {
            return Err(Error::OverLimit {
                limit: Limit::PassesInFlight,
                requested: self.max_passes_in_flight,
            });
        }
        if self.pass_series > MAX_PASS_SERIES {
            return Err(Error::OverLimit {
                limit: Limit::PassSeries,
                requested: self.pass_series,
            });
        }
        Ok(())
    }
}

/// Whether `$BRICKPROF_VENDOR_RANGES` (`value`) names a range tool this build has.
fn vendor_ranges_wanted(value: Option<String>) -> bool {
    const BUILT: [(&str, bool); 2] = [
        ("nvtx", cfg!(feature = "nvtx")),
        ("roctx", cfg!(feature = "roctx")),
    ];
    value.is_some_and(|v| {
        v.split(',')
            .any(|tool| BUILT.contains(&(tool.trim(), true)))
    })
}

/// The cell limit ([`MAX_CELLS`]) for `rows × slots`.
pub(super) fn check_cells(rows: usize, slots: usize) -> Result<()> {
    let cells = rows.saturating_mul(slots);
    if cells > MAX_CELLS {
        return Err(Error::OverLimit {
            limit: Limit::Cells,
            requested: cells,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::vendor_ranges_wanted;

    #[test]
    fn the_environment_names_the_range_tools_this_build_has() {
        let wanted = |v: &str| vendor_ranges_wanted(Some(v.to_string()));
        assert!(!vendor_ranges_wanted(None));
        for off in ["", "0", "off", "NVTX", "nvtx2", "cupti"] {
            assert!(!wanted(off), "{off:?}");
        }
        assert_eq!(wanted("nvtx"), cfg!(feature = "nvtx"));
        assert_eq!(wanted("roctx"), cfg!(feature = "roctx"));
        assert_eq!(
            wanted("nvtx, roctx"),
            cfg!(any(feature = "nvtx", feature = "roctx"))
        );
    }
}
