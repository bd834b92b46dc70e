//! [`Sampling`]: bounding what marking costs. On a GPU each mark is a runtime call (about a
//! microsecond), not a clock read; a pass with thousands of bricks then pays milliseconds. A
//! profiler can mark every brick (the default), only layer boundaries, or only every Nth pass;
//! the profile records which, and the report says so (spec/sync-modes.md "Sampling").

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Result};

/// What a profiler marks.
///
/// ```
/// use brickprof::model::Sampling;
/// assert_eq!("every-4".parse::<Sampling>()?, Sampling::EveryNthPass(4.try_into().unwrap()));
/// assert_eq!(Sampling::Layers.to_string(), "layers");
/// assert!("every-0".parse::<Sampling>().is_err());
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Sampling {
    /// Every brick of every pass (the default).
    #[default]
    All,
    /// Only layer boundaries: one measurement per layer (the brick `layer`) and the bricks
    /// outside layers; bricks inside layers are not marked.
    Layers,
    /// Every brick, in one pass out of N (passes 0, N, 2N, ... counting warm-up passes).
    EveryNthPass(NonZeroU32),
    /// Bursts: every brick of `passes` consecutive passes, then `gap` passes unmarked, and
    /// again (passes `0..passes`, then from `passes + gap`, ... counting warm-up passes). A
    /// timeline that reads device records (CUPTI) traces the bursts and detaches between them
    /// (spec/sync-modes.md "Sampled tracing").
    Bursts {
        /// Consecutive passes traced.
        passes: NonZeroU32,
        /// Passes left unmarked after each burst.
        gap: u32,
    },
}

/// What tracing costs, for [`Sampling::within_budget`] (spec/sync-modes.md "Sampled
/// tracing"): measured once, on the engine's own step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceCost {
    /// The untraced step (pass), in ns.
    pub step_ns: u64,
    /// Kernels a step launches.
    pub kernels_per_step: u64,
    /// Host time CUPTI's kernel records add to each launch, in ns (2,500 on an H200).
    pub per_kernel_ns: u64,
    /// Host time of a detach and re-attach (`cuptiFinalize`, then registering again), in ns
    /// (13.5-15.2 ms on an H200).
    pub detach_ns: u64,
}

impl TraceCost {
    /// CUPTI's cost on an H200 (`tests/fixtures` README, `cupti_step_*.jsonl`): 2.5 µs of host
    /// time a kernel traced, 15.2 ms a detach and re-attach; for a step of `step_ns` launching
    /// `kernels_per_step` kernels.
    pub fn h200(step_ns: u64, kernels_per_step: u64) -> Self {
        TraceCost {
            step_ns,
            kernels_per_step,
            per_kernel_ns: 2_500,
            detach_ns: 15_200_000,
        }
    }
}

impl Sampling {
    /// Name of the brick that times a whole layer under [`Sampling::Layers`].
    pub(crate) const LAYER_BRICK: &'static str = "layer";

    /// One pass out of `n` (`n >= 1`; 1 is [`Sampling::All`]).
    pub(crate) fn every(n: u32) -> Result<Self> {
        match NonZeroU32::new(n) {
            Some(n) if n.get() == 1 => Ok(Sampling::All),
            Some(n) => Ok(Sampling::EveryNthPass(n)),
            None => Err(Error::invalid_value(
                "sampling",
                "every-0",
                "N in every-N must be at least 1",
            )),
        }
    }

    /// Bursts of `passes` traced passes, `gap` untraced passes after each (`gap` 0 is
    /// [`Sampling::All`]).
    pub(crate) fn bursts(passes: u32, gap: u32) -> Result<Self> {
        match NonZeroU32::new(passes) {
            Some(_) if gap == 0 => Ok(Sampling::All),
            Some(passes) => Ok(Sampling::Bursts { passes, gap }),
            None => Err(Error::invalid_value(
                "sampling",
                format!("bursts-0-{gap}"),
                "a burst traces at least 1 pass",
            )),
        }
    }

    /// Bursts of `burst` passes spaced so that tracing costs at most `budget` (a fraction:
    /// 0.02 is 2 %) of step time. A burst costs `detach_ns + burst * kernels_per_step *
    /// per_kernel_ns` of host time; spread over `burst + gap` steps of `step_ns` it must stay
    /// within `budget`, so `gap = ceil((detach_ns + burst * kernels_per_step * per_kernel_ns)
    /// / (budget * step_ns)) - burst`, at least 0 (spec/sync-modes.md "Sampled tracing").
    ///
    /// ```
    /// use brickprof::model::{Sampling, TraceCost};
    /// // The H200's decode step: 385 kernels, 4.07 ms; 32 passes a burst, 2 % at most.
    /// let plan = Sampling::within_budget(0.02, 32, TraceCost::h200(4_070_000, 385))?;
    /// assert_eq!(plan, "bursts-32-534".parse()?);
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    pub fn within_budget(budget: f64, burst: u32, cost: TraceCost) -> Result<Self> {
        if !(budget > 0.0 && budget <= 1.0) {
            return Err(Error::invalid_value(
                "sampling budget",
                budget.to_string(),
                "give a fraction of step time above 0 and at most 1 (0.02 is 2 %)",
            ));
        }
        if cost.step_ns == 0 {
            return Err(Error::invalid_value(
                "sampling budget",
                "step_ns 0",
                "measure the untraced step first: its time must be above 0",
            ));
        }
        let burst_cost = cost.detach_ns as f64
            + f64::from(burst) * cost.kernels_per_step as f64 * cost.per_kernel_ns as f64;
        let period = (burst_cost / (budget * cost.step_ns as f64)).ceil();
        let gap = (period - f64::from(burst)).clamp(0.0, f64::from(u32::MAX)) as u32;
        Sampling::bursts(burst, gap)
    }

    /// Whether pass `index` (0-based, warm-up included) is marked.
    pub(crate) fn marks_pass(self, index: u64) -> bool {
        match self {
            Sampling::EveryNthPass(n) => index.is_multiple_of(u64::from(n.get())),
            Sampling::Bursts { passes, gap } => {
                let n = u64::from(passes.get());
                index % (n + u64::from(gap)) < n
            }
            _ => true,
        }
    }

    /// Whether a timeline that can detach from the device's tracer (CUPTI) should, between
    /// the passes this plan traces: only between bursts, where the detach cost is spread.
    pub(crate) fn detaches(self) -> bool {
        matches!(self, Sampling::Bursts { .. })
    }

    /// Of `passes` passes (warm-up included), how many this plan marks.
    pub(crate) fn marked_of(self, passes: u64) -> u64 {
        match self {
            Sampling::EveryNthPass(n) => passes.div_ceil(u64::from(n.get())),
            Sampling::Bursts { passes: n, gap } => {
                let (n, period) = (u64::from(n.get()), u64::from(n.get()) + u64::from(gap));
                passes / period * n + (passes % period).min(n)
            }
            _ => passes,
        }
    }

    /// What was sampled, in words, for reports; `None` for [`Sampling::All`].
    pub(crate) fn describe(self) -> Option<String> {
        match self {
            Sampling::All => None,
            Sampling::Layers => Some(
                "layer boundaries only: one `layer` measurement per layer; bricks inside \
                 layers were not marked"
                    .into(),
            ),
            Sampling::EveryNthPass(n) => Some(format!(
                "one pass in {n} (passes 0, {n}, {}, ...): brick timings come from those; \
                 passes and tokens/s count every pass",
                2 * u64::from(n.get())
            )),
            Sampling::Bursts { passes, gap } => Some(format!(
                "bursts of {passes} passes every {} passes: brick timings come from those; \
                 passes and tokens/s count every pass",
                u64::from(passes.get()) + u64::from(gap)
            )),
        }
    }
}

impl fmt::Display for Sampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sampling::All => f.write_str("all"),
            Sampling::Layers => f.write_str("layers"),
            Sampling::EveryNthPass(n) => write!(f, "every-{n}"),
            Sampling::Bursts { passes, gap } => write!(f, "bursts-{passes}-{gap}"),
        }
    }
}

impl FromStr for Sampling {
    type Err = Error;

    /// `all`, `layers`, `every-N` (N >= 1) or `bursts-N-M` (N >= 1 traced, M untraced).
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim().to_ascii_lowercase();
        if let Some(rest) = s.strip_prefix("bursts-") {
            return match rest
                .split_once('-')
                .map(|(n, m)| (n.parse::<u32>(), m.parse::<u32>()))
            {
                Some((Ok(n), Ok(m))) => Sampling::bursts(n, m),
                _ => Err(Error::invalid_value(
                    "sampling",
                    &s,
                    "use bursts-N-M: N passes traced, then M untraced (numbers)",
                )),
            };
        }
        match s.as_str() {
            "all" => Ok(Sampling::All),
            "layers" => Ok(Sampling::Layers),
            _ => match s.strip_prefix("every-").map(str::parse::<u32>) {
                Some(Ok(n)) => Sampling::every(n),
                _ => Err(Error::invalid_value(
                    "sampling",
                    &s,
                    "use all, layers, every-N or bursts-N-M (N a positive number)",
                )),
            },
        }
    }
}

impl Serialize for Sampling {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Sampling {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_ones_are_refused() {
        for s in [Sampling::All, Sampling::Layers, Sampling::every(8).unwrap()] {
            assert_eq!(s.to_string().parse::<Sampling>().unwrap(), s);
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<Sampling>(&json).unwrap(), s);
        }
        assert_eq!(Sampling::every(1).unwrap(), Sampling::All);
        for bad in ["", "every-", "every-x", "every--1", "some"] {
            assert!(bad.parse::<Sampling>().is_err(), "{bad}");
        }
        let b = Sampling::bursts(2, 3).unwrap();
        assert_eq!(b.to_string().parse::<Sampling>().unwrap(), b);
        for bad in ["bursts-0-3", "bursts-2", "bursts-x-1", "bursts-2--1"] {
            assert!(bad.parse::<Sampling>().is_err(), "{bad}");
        }
        let four = Sampling::every(4).unwrap();
        let marked: Vec<u64> = (0..9).filter(|&i| four.marks_pass(i)).collect();
        assert_eq!(marked, [0, 4, 8]);
        assert_eq!(four.marked_of(9), 3);
    }

    /// spec/sync-modes.md "Sampled tracing": a burst plan traces N consecutive passes, then
    /// leaves M unmarked; it counts the passes it traced.
    #[test]
    fn bursts_trace_consecutive_passes_then_wait() {
        let b = Sampling::bursts(2, 3).unwrap();
        let marked: Vec<u64> = (0..12).filter(|&i| b.marks_pass(i)).collect();
        assert_eq!(marked, [0, 1, 5, 6, 10, 11]);
        for n in 0..12 {
            assert_eq!(
                b.marked_of(n),
                (0..n).filter(|&i| b.marks_pass(i)).count() as u64
            );
        }
        assert!(b.detaches() && !Sampling::every(2).unwrap().detaches());
        assert_eq!(Sampling::bursts(4, 0).unwrap(), Sampling::All);
    }

    /// spec/sync-modes.md "Sampled tracing": the budget formula, and its edges.
    #[test]
    fn a_cost_budget_spaces_bursts_by_the_stated_formula() {
        // 10 ms detach + 4 passes x 100 kernels x 1 µs = 10.4 ms a burst; 1 % of a 1 ms step
        // is 10 µs a step: a period of 1,040 steps, a gap of 1,036.
        let cost = TraceCost {
            step_ns: 1_000_000,
            kernels_per_step: 100,
            per_kernel_ns: 1_000,
            detach_ns: 10_000_000,
        };
        assert_eq!(
            Sampling::within_budget(0.01, 4, cost).unwrap(),
            Sampling::bursts(4, 1_036).unwrap()
        );
        // A budget larger than the burst's cost traces every pass.
        assert_eq!(
            Sampling::within_budget(1.0, 1_000_000, cost).unwrap(),
            Sampling::All
        );
        for bad in [0.0, -0.1, 1.5, f64::NAN] {
            assert!(Sampling::within_budget(bad, 4, cost).is_err(), "{bad}");
        }
        let zero = TraceCost { step_ns: 0, ..cost };
        assert!(Sampling::within_budget(0.02, 4, zero).is_err());
        assert!(Sampling::within_budget(0.02, 0, cost).is_err());
    }
}
