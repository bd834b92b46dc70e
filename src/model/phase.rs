//! What kind of forward pass a pass is: its [`Phase`] (prefill, decode, mixed, unspecified) and
//! its [`PassShape`] (new tokens, sequences, context tokens). A leaf: the profiler chooses a
//! pass's phase once, at `begin_pass`, and reports split their numbers by it.
//! Specified in `spec/hot-path.md` ("Passes and phases").

use serde::{Deserialize, Serialize};
use strum::{Display, EnumCount, EnumIter, EnumString, IntoStaticStr};

use crate::{Error, Result};

/// The kind of work a forward pass does.
///
/// Derived from a [`PassShape`] (more than one new token per sequence is a prefill, exactly one
/// a decode step) or set by the engine ([`PassShape::with_phase`]: a chunked-prefill pass that
/// also decodes is [`Phase::Mixed`]). A pass begun without a shape is [`Phase::Unspecified`],
/// and so is every pass of a profile saved before phases existed.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Default,
    Serialize,
    Deserialize,
    Display,
    EnumString,
    EnumIter,
    EnumCount,
    IntoStaticStr,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
#[repr(u8)]
pub enum Phase {
    /// No shape was given (and files from before phases).
    #[default]
    Unspecified = 0,
    /// More than one new token per sequence: the prompt, whole or in chunks.
    Prefill = 1,
    /// Exactly one new token per sequence.
    Decode = 2,
    /// Prefill chunks and decode steps in one pass, as the engine says.
    Mixed = 3,
}

impl Phase {
    /// How many phases there are (the books keep one plane each).
    pub(crate) const COUNT: usize = <Phase as EnumCount>::COUNT;

    /// Every phase, in index order.
    pub(crate) const ALL: [Phase; Phase::COUNT] = [
        Phase::Unspecified,
        Phase::Prefill,
        Phase::Decode,
        Phase::Mixed,
    ];

    /// The phase's index, `0..Phase::COUNT`.
    #[inline(always)]
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The phase at `index`, if there is one.
    pub(crate) fn from_index(index: usize) -> Option<Phase> {
        Phase::ALL.get(index).copied()
    }

    /// Whether this is [`Phase::Unspecified`] (saved files leave such phases out).
    pub(crate) fn is_unspecified(&self) -> bool {
        *self == Phase::Unspecified
    }

    /// The phase a pass range's name carries (spec/imports.md "Pass ranges"): `pass/{phase}`,
    /// or `pass/{phase}/{n}` with `n` decimal digits (the pass index brickprof pushes), the
    /// phase lowercase (`pass/decode/17`). `None` for any other name: a brick's range. No
    /// brick can be named so (the registry refuses it), so the two never mix.
    pub(crate) fn of_pass_range(name: &str) -> Option<Phase> {
        let rest = name.strip_prefix(PASS_RANGE_PREFIX)?;
        let (phase, index) = match rest.split_once('/') {
            Some((phase, index)) => (phase, Some(index)),
            None => (rest, None),
        };
        if index.is_some_and(|i| i.is_empty() || !i.bytes().all(|b| b.is_ascii_digit())) {
            return None;
        }
        Phase::ALL.into_iter().find(|p| <&str>::from(*p) == phase)
    }
}

/// How a pass range's name starts (`pass/decode/17`: [`Phase::of_pass_range`]).
pub(crate) const PASS_RANGE_PREFIX: &str = "pass/";

/// The shape of one forward pass: new tokens, sequences in the batch, and context tokens
/// attended (the KV length at the end of the pass, summed over the sequences: cached tokens plus
/// the new ones), with the [`Phase`] that follows from them or that the engine set.
///
/// Built only through [`PassShape::new`], which checks that the numbers describe a pass:
/// at least one sequence, at least one new token per sequence, and at least as many context
/// tokens as new ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawShape", into = "RawShape")]
pub struct PassShape {
    new_tokens: u32,
    sequences: u32,
    context_tokens: u64,
    phase: Phase,
}

impl PassShape {
    /// A pass of `new_tokens` new tokens over `sequences` sequences attending `context_tokens`
    /// tokens in all; its phase is [`Phase::Decode`] when every sequence gets exactly one new
    /// token, otherwise [`Phase::Prefill`].
    ///
    /// ```
    /// use brickprof::{PassShape, Phase};
    /// let prompt = PassShape::new(256, 1, 256)?;
    /// assert_eq!(prompt.phase(), Phase::Prefill);
    /// let step = PassShape::new(8, 8, 8 * 300)?; // 8 sequences, one token each
    /// assert_eq!(step.phase(), Phase::Decode);
    /// assert!(PassShape::new(0, 1, 0).is_err());
    /// # Ok::<(), brickprof::Error>(())
    /// ```
    pub fn new(new_tokens: u32, sequences: u32, context_tokens: u64) -> Result<PassShape> {
        if sequences == 0 {
            return Err(Error::invalid_value(
                "pass shape sequences",
                sequences,
                "at least 1",
            ));
        }
        if new_tokens < sequences {
            return Err(Error::invalid_value(
                "pass shape new tokens",
                new_tokens,
                format!("at least one per sequence ({sequences})"),
            ));
        }
        if context_tokens < u64::from(new_tokens) {
            return Err(Error::invalid_value(
                "pass shape context tokens",
                context_tokens,
                format!("at least the new tokens ({new_tokens}): context counts them too"),
            ));
        }
        let phase = if new_tokens == sequences {
            Phase::Decode
        } else {
            Phase::Prefill
        };
        Ok(PassShape {
            new_tokens,
            sequences,
            context_tokens,
            phase,
        })
    }

    /// The same shape with the phase the engine says (for example [`Phase::Mixed`] for a
    /// chunked-prefill pass that also decodes, or [`Phase::Prefill`] for a prompt fed one token
    /// a pass).
    pub fn with_phase(self, phase: Phase) -> PassShape {
        PassShape { phase, ..self }
    }

    /// New tokens in the pass, over all sequences.
    pub fn new_tokens(&self) -> u32 {
        self.new_tokens
    }

    /// Sequences in the batch.
    pub fn sequences(&self) -> u32 {
        self.sequences
    }

    /// Context tokens attended, summed over the sequences (the new tokens included).
    pub fn context_tokens(&self) -> u64 {
        self.context_tokens
    }

    /// The pass's phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }
}

/// The saved form of a [`PassShape`], checked by [`PassShape::new`] on load.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShape {
    new_tokens: u32,
    sequences: u32,
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    context_tokens: u64,
    phase: Phase,
}

impl TryFrom<RawShape> for PassShape {
    type Error = Error;
    fn try_from(raw: RawShape) -> Result<PassShape> {
        Ok(
            PassShape::new(raw.new_tokens, raw.sequences, raw.context_tokens)?
                .with_phase(raw.phase),
        )
    }
}

impl From<PassShape> for RawShape {
    fn from(s: PassShape) -> RawShape {
        RawShape {
            new_tokens: s.new_tokens,
            sequences: s.sequences,
            context_tokens: s.context_tokens,
            phase: s.phase,
        }
    }
}

/// Which passes a report shows: all of them, or one phase's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PhaseFilter {
    /// Every pass, whatever its phase.
    #[default]
    All,
    /// Only the passes of one phase.
    Only(Phase),
}

impl std::str::FromStr for PhaseFilter {
    type Err = Error;
    fn from_str(s: &str) -> Result<PhaseFilter> {
        if s == "all" {
            return Ok(PhaseFilter::All);
        }
        s.parse::<Phase>().map(PhaseFilter::Only).map_err(|_| {
            Error::invalid_value(
                "phase",
                s,
                "one of all, prefill, decode, mixed, unspecified",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // spec/hot-path.md "Passes and phases": the phase follows from the shape.
    #[test]
    fn the_phase_follows_from_the_shape() {
        assert_eq!(PassShape::new(16, 1, 16).unwrap().phase(), Phase::Prefill);
        assert_eq!(PassShape::new(1, 1, 17).unwrap().phase(), Phase::Decode);
        assert_eq!(PassShape::new(4, 4, 400).unwrap().phase(), Phase::Decode);
        assert_eq!(PassShape::new(5, 4, 400).unwrap().phase(), Phase::Prefill);
        let mixed = PassShape::new(5, 4, 400).unwrap().with_phase(Phase::Mixed);
        assert_eq!(mixed.phase(), Phase::Mixed);
        assert_eq!(mixed.new_tokens(), 5);
    }

    // spec/imports.md "Pass ranges": which names are pass ranges, and their phase.
    #[test]
    fn pass_range_names_carry_their_phase() {
        assert_eq!(Phase::of_pass_range("pass/prefill/0"), Some(Phase::Prefill));
        assert_eq!(Phase::of_pass_range("pass/decode/17"), Some(Phase::Decode));
        assert_eq!(Phase::of_pass_range("pass/mixed"), Some(Phase::Mixed));
        assert_eq!(
            Phase::of_pass_range("pass/unspecified/3"),
            Some(Phase::Unspecified)
        );
        for brick in [
            "pass 0",
            "pass/",
            "pass/decode/",
            "pass/decode/x",
            "pass/Decode/1",
            "L0/pass/decode",
        ] {
            assert_eq!(Phase::of_pass_range(brick), None, "{brick}");
        }
        // No brick can be named as a pass range.
        let mut registry = crate::model::registry::BrickRegistry::default();
        let e = registry
            .register("pass/decode/1", crate::BrickCategory::Other)
            .unwrap_err();
        assert!(matches!(e, Error::InvalidValue { .. }), "{e}");
        assert!(registry
            .register("pass 1", crate::BrickCategory::Other)
            .is_ok());
    }

    #[test]
    fn shapes_that_describe_no_pass_are_refused() {
        for (n, s, c) in [(1, 0, 1), (0, 1, 0), (3, 4, 10), (10, 1, 9)] {
            let e = PassShape::new(n, s, c).unwrap_err();
            assert!(matches!(e, Error::InvalidValue { .. }), "{e}");
        }
    }

    #[test]
    fn a_saved_shape_is_checked_on_load() {
        let s = PassShape::new(8, 2, 100).unwrap().with_phase(Phase::Mixed);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<PassShape>(&json).unwrap(), s);
        let bad = r#"{"new_tokens":8,"sequences":2,"context_tokens":3,"phase":"decode"}"#;
        assert!(serde_json::from_str::<PassShape>(bad).is_err());
    }

    #[test]
    fn phases_and_filters_parse_by_name() {
        for p in Phase::ALL {
            assert_eq!(p.to_string().parse::<Phase>().unwrap(), p);
            assert_eq!(Phase::from_index(p.index()), Some(p));
        }
        assert_eq!("all".parse::<PhaseFilter>().unwrap(), PhaseFilter::All);
        assert_eq!(
            "decode".parse::<PhaseFilter>().unwrap(),
            PhaseFilter::Only(Phase::Decode)
        );
        assert!("\u{1b}]0;x\u{7}".parse::<PhaseFilter>().is_err());
    }
}
