//! The host clock: raw ticks on the hot path, nanoseconds when resolving.
//!
//! Built on `quanta`: it reads the TSC (`rdtsc`) where the CPU reports an invariant TSC and
//! calibrates it once per process against the OS monotonic clock, and falls back to the
//! monotonic clock elsewhere. We use it rather than our own `rdtsc` wrapper because the
//! invariance checks, the calibration and the fallback are exactly the hard parts, and quanta
//! keeps them in one small, well-kept crate. A mock clock makes timing tests exact.

use std::sync::Arc;

/// A calibrated host clock. Cloning is cheap; all clones share one calibration.
#[derive(Clone, Debug)]
pub struct HostClock {
    inner: quanta::Clock,
    source: ClockSource,
    /// Nanoseconds per tick in 32.32 fixed point, taken from quanta's calibration at
    /// construction (`2^32` exactly for the monotonic and mock clocks, whose ticks are ns).
    ns_per_tick_q32: u64,
}

/// Where a [`HostClock`] reads its ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClockSource {
    /// The CPU's time-stamp counter (invariant TSC), calibrated to nanoseconds.
    Tsc,
    /// The OS monotonic clock (ticks are nanoseconds).
    Monotonic,
    /// A mock clock moved by hand (ticks are nanoseconds); for tests and simulated devices.
    Mock,
}

/// The handle that moves a mock [`HostClock`] (public with the `mock-clock` feature; the
/// simulated device uses it inside).
#[cfg(feature = "mock-clock")]
pub type MockClock = Arc<quanta::Mock>;
#[cfg(not(feature = "mock-clock"))]
pub(crate) type MockClock = Arc<quanta::Mock>;

/// The process's host clock (TSC where invariant, else monotonic). The first one made in a
/// process calibrates the TSC, which takes a few milliseconds.
impl Default for HostClock {
    fn default() -> Self {
        Self::new()
    }
}

impl HostClock {
    /// [`HostClock::default`].
    pub(crate) fn new() -> Self {
        let inner = quanta::Clock::new();
        // quanta does not expose its source; it reads the TSC exactly when CPUID reports an
        // invariant one. We ask CPUID the same question and check that quanta's raw reading
        // is the TSC (a monotonic-clock reading is nanoseconds, far from the cycle count), so
        // `ticks` can read the TSC inline: quanta's `raw` is not inlined across crates.
        let source = if tsc_is_invariant() && reads_tsc(&inner) {
            ClockSource::Tsc
        } else {
            ClockSource::Monotonic
        };
        Self::with_scale(inner, source)
    }

    /// Read quanta's calibration once, as a 32.32 fixed-point scale: converting a tick delta
    /// is then one multiply and one shift, inlined into the resolve loop.
    fn with_scale(inner: quanta::Clock, source: ClockSource) -> Self {
        let ns_per_tick_q32 = inner.delta_as_nanos(0, 1 << 32);
        HostClock {
            inner,
            source,
            ns_per_tick_q32,
        }
    }

    /// A clock that only moves when the returned handle says so. Ticks are nanoseconds.
    ///
    /// ```
    /// use brickprof::timeline::HostClock;
    /// let (clock, mock) = HostClock::mock();
    /// let a = clock.ticks();
    /// mock.increment(250);
    /// assert_eq!(clock.ticks_to_ns(a, clock.ticks()), 250);
    /// ```
    #[cfg(feature = "mock-clock")]
    pub fn mock() -> (Self, MockClock) {
        Self::mock_pair()
    }

    /// [`Self::mock`], for the crate itself (the simulated device) whatever the features.
    pub(crate) fn mock_pair() -> (Self, MockClock) {
        let (inner, mock) = quanta::Clock::mock();
        (Self::with_scale(inner, ClockSource::Mock), mock)
    }

    /// Raw ticks now: one `rdtsc` (or one monotonic read). The only clock read on the hot path.
    #[inline(always)]
    pub fn ticks(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.source == ClockSource::Tsc {
            // SAFETY: rdtsc has no preconditions; `new` checked that quanta reads this very
            // counter, so the reading scales with quanta's calibration.
            return unsafe { core::arch::x86_64::_rdtsc() };
        }
        self.inner.raw()
    }

    /// Nanoseconds between two tick readings (0 if `end` is not after `start`).
    ///
    /// The scale is quanta's calibration read once as nanoseconds per 2^32 ticks, so the
    /// result is within one nanosecond per second (plus one) of quanta's own conversion;
    /// exact for the monotonic and mock clocks.
    #[inline(always)]
    pub fn ticks_to_ns(&self, start: u64, end: u64) -> u64 {
        let ticks = u128::from(end.saturating_sub(start));
        let ns = (ticks * u128::from(self.ns_per_tick_q32)) >> 32;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

/// True when the CPU reports an invariant TSC (the condition under which quanta reads it).
/// Whether `clock.raw()` reads the TSC: three readings interleaved with `rdtsc` agree.
fn reads_tsc(clock: &quanta::Clock) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        (0..3).all(|_| {
            // SAFETY: rdtsc has no preconditions.
            let a = unsafe { core::arch::x86_64::_rdtsc() };
            let q = clock.raw();
            let b = unsafe { core::arch::x86_64::_rdtsc() };
            a <= q && q <= b && b - a < 1_000_000
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = clock;
        false
    }
}

fn tsc_is_invariant() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // CPUID leaf 0x8000_0007, EDX bit 8: invariant TSC.
        let max_ext = std::arch::x86_64::__cpuid(0x8000_0000).eax;
        if max_ext < 0x8000_0007 {
            return false;
        }
        let edx = std::arch::x86_64::__cpuid(0x8000_0007).edx;
        edx & (1 << 8) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_clock_moves_forward_in_nanoseconds() {
        let c = HostClock::new();
        let a = c.ticks();
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(5) {}
        let ns = c.ticks_to_ns(a, c.ticks());
        assert!(
            (4_000_000..500_000_000).contains(&ns),
            "{ns} ns for a 5 ms wait"
        );
    }

    #[test]
    fn fixed_point_conversion_agrees_with_quanta() {
        let c = HostClock::new();
        for ticks in [0u64, 1, 999, 3_000_000_000, 1 << 40, u64::MAX / 4] {
            let ours = c.ticks_to_ns(0, ticks);
            let quanta = c.inner.delta_as_nanos(0, ticks);
            let bound = quanta / 1_000_000_000 + 1;
            assert!(
                ours.abs_diff(quanta) <= bound,
                "{ticks} ticks: {ours} ns vs quanta's {quanta} ns (bound {bound})"
            );
        }
        let (mock, _) = HostClock::mock_pair();
        assert_eq!(mock.ticks_to_ns(5, 12_345_678_901), 12_345_678_896);
    }

    #[test]
    fn backwards_readings_give_zero() {
        let c = HostClock::new();
        assert_eq!(c.ticks_to_ns(10, 5), 0);
    }
}
