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
/// use brickprof::Sampling;
/// assert_eq!("every-4".parse::<Sampling>()?, Sampling::every(4)?);
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
}

impl Sampling {
    /// Name of the brick that times a whole layer under [`Sampling::Layers`].
    pub const LAYER_BRICK: &'static str = "layer";

    /// One pass out of `n` (`n >= 1`; 1 is [`Sampling::All`]).
    pub fn every(n: u32) -> Result<Self> {
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

    /// Whether pass `index` (0-based, warm-up included) is marked.
    pub(crate) fn marks_pass(self, index: u64) -> bool {
        match self {
            Sampling::EveryNthPass(n) => index.is_multiple_of(u64::from(n.get())),
            _ => true,
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
        }
    }
}

impl fmt::Display for Sampling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sampling::All => f.write_str("all"),
            Sampling::Layers => f.write_str("layers"),
            Sampling::EveryNthPass(n) => write!(f, "every-{n}"),
        }
    }
}

impl FromStr for Sampling {
    type Err = Error;

    /// `all`, `layers`, or `every-N` (N >= 1).
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "all" => Ok(Sampling::All),
            "layers" => Ok(Sampling::Layers),
            _ => match s.strip_prefix("every-").map(str::parse::<u32>) {
                Some(Ok(n)) => Sampling::every(n),
                _ => Err(Error::invalid_value(
                    "sampling",
                    &s,
                    "use all, layers or every-N (N a positive number)",
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
        let four = Sampling::every(4).unwrap();
        let marked: Vec<u64> = (0..9).filter(|&i| four.marks_pass(i)).collect();
        assert_eq!(marked, [0, 4, 8]);
    }
}
