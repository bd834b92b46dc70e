//! What gets timed: the built-in bricks of a transformer ([`BrickId`]), their categories
//! ([`BrickCategory`]), and [`BrickHandle`], the O(1) index the hot path uses for built-in and
//! registered (dynamic) bricks alike.

use serde::{Deserialize, Serialize};
use strum::{EnumCount, EnumIter, EnumString, IntoStaticStr};

/// A compute brick of a transformer layer or its surroundings.
///
/// Its discriminant is the brick's slot in the profiler's statistics array, which is why
/// timing a `BrickId` is O(1). Names parse case-insensitively, with common aliases:
///
/// ```
/// use brickprof::BrickId;
/// assert_eq!("qkv".parse::<BrickId>().unwrap(), BrickId::QkvProjection);
/// assert_eq!("SiLU".parse::<BrickId>().unwrap(), BrickId::Activation);
/// assert_eq!("rms_norm".parse::<BrickId>().unwrap(), BrickId::RmsNorm);
/// assert_eq!(BrickId::RopeEmbedding.name(), "RopeEmbedding");
/// assert_eq!(BrickId::ALL.len(), 16);
/// ```
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
#[strum(ascii_case_insensitive)]
#[repr(u16)]
pub enum BrickId {
    /// Token embedding lookup.
    #[strum(
        to_string = "Embedding",
        serialize = "embed",
        serialize = "tok_embeddings"
    )]
    Embedding,
    /// RMS normalisation.
    #[strum(to_string = "RmsNorm", serialize = "rms_norm", serialize = "rms")]
    RmsNorm,
    /// Layer normalisation.
    #[strum(to_string = "LayerNorm", serialize = "layer_norm", serialize = "ln")]
    LayerNorm,
    /// Fused Q/K/V projection.
    #[strum(
        to_string = "QkvProjection",
        serialize = "qkv",
        serialize = "qkv_proj",
        serialize = "qkv_projection"
    )]
    QkvProjection,
    /// Rotary position embedding.
    #[strum(to_string = "RopeEmbedding", serialize = "rope", serialize = "rotary")]
    RopeEmbedding,
    /// Q·Kᵀ scores.
    #[strum(
        to_string = "AttentionScore",
        serialize = "attention_score",
        serialize = "qk",
        serialize = "scores"
    )]
    AttentionScore,
    /// Softmax over attention scores.
    #[strum(
        to_string = "AttentionSoftmax",
        serialize = "softmax",
        serialize = "attention_softmax"
    )]
    AttentionSoftmax,
    /// Scores · V.
    #[strum(
        to_string = "AttentionOutput",
        serialize = "attention_output",
        serialize = "av",
        serialize = "attn_out"
    )]
    AttentionOutput,
    /// The attention output projection (Wo).
    #[strum(
        to_string = "OutputProjection",
        serialize = "output_projection",
        serialize = "o_proj",
        serialize = "wo"
    )]
    OutputProjection,
    /// FFN gate projection (W1 in SwiGLU).
    #[strum(
        to_string = "GateProjection",
        serialize = "gate",
        serialize = "gate_proj",
        serialize = "gate_projection"
    )]
    GateProjection,
    /// FFN up projection (W3 in SwiGLU).
    #[strum(
        to_string = "UpProjection",
        serialize = "up",
        serialize = "up_proj",
        serialize = "up_projection"
    )]
    UpProjection,
    /// The FFN non-linearity (SiLU, GELU, ...).
    #[strum(
        to_string = "Activation",
        serialize = "silu",
        serialize = "gelu",
        serialize = "swiglu",
        serialize = "act"
    )]
    Activation,
    /// FFN down projection (W2).
    #[strum(
        to_string = "DownProjection",
        serialize = "down",
        serialize = "down_proj",
        serialize = "down_projection"
    )]
    DownProjection,
    /// A residual addition.
    #[strum(
        to_string = "ResidualAdd",
        serialize = "residual",
        serialize = "residual_add",
        serialize = "add"
    )]
    ResidualAdd,
    /// The final projection to vocabulary logits.
    #[strum(
        to_string = "LmHead",
        serialize = "lm_head",
        serialize = "head",
        serialize = "logits"
    )]
    LmHead,
    /// Choosing the next token from the logits.
    #[strum(to_string = "Sampling", serialize = "sample", serialize = "argmax")]
    Sampling,
}

impl BrickId {
    /// Number of built-in bricks (`BrickId::ALL.len()` outside the crate).
    pub(crate) const COUNT: usize = <BrickId as EnumCount>::COUNT;

    /// Every built-in brick, in slot order.
    pub const ALL: [BrickId; <BrickId as EnumCount>::COUNT] = [
        BrickId::Embedding,
        BrickId::RmsNorm,
        BrickId::LayerNorm,
        BrickId::QkvProjection,
        BrickId::RopeEmbedding,
        BrickId::AttentionScore,
        BrickId::AttentionSoftmax,
        BrickId::AttentionOutput,
        BrickId::OutputProjection,
        BrickId::GateProjection,
        BrickId::UpProjection,
        BrickId::Activation,
        BrickId::DownProjection,
        BrickId::ResidualAdd,
        BrickId::LmHead,
        BrickId::Sampling,
    ];

    /// The canonical name (the variant's name).
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The category this brick is reported under.
    pub fn category(self) -> BrickCategory {
        use BrickId::*;
        match self {
            Embedding => BrickCategory::Embedding,
            RmsNorm | LayerNorm => BrickCategory::Norm,
            QkvProjection | RopeEmbedding | AttentionScore | AttentionSoftmax | AttentionOutput
            | OutputProjection => BrickCategory::Attention,
            GateProjection | UpProjection | Activation | DownProjection => BrickCategory::Ffn,
            ResidualAdd => BrickCategory::Residual,
            LmHead | Sampling => BrickCategory::Head,
        }
    }

    /// The brick at a slot, if the slot is a built-in one.
    pub(crate) fn from_slot(slot: usize) -> Option<BrickId> {
        BrickId::ALL.get(slot).copied()
    }
}

/// A group of bricks, for the per-category breakdown.
///
/// ```
/// use brickprof::{BrickCategory, BrickId};
/// assert_eq!(BrickId::AttentionSoftmax.category(), BrickCategory::Attention);
/// assert_eq!("ffn".parse::<BrickCategory>().unwrap(), BrickCategory::Ffn);
/// ```
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
#[strum(ascii_case_insensitive)]
pub enum BrickCategory {
    /// Token embedding.
    Embedding,
    /// Normalisation layers.
    Norm,
    /// Attention: projections, RoPE, scores, softmax, output.
    Attention,
    /// Feed-forward network.
    Ffn,
    /// Residual connections.
    Residual,
    /// LM head and sampling.
    Head,
    /// Anything else (registered bricks default here).
    Other,
}

impl BrickCategory {
    /// How many categories there are.
    pub const COUNT: usize = <BrickCategory as EnumCount>::COUNT;

    /// The category's name.
    pub(crate) fn name(self) -> &'static str {
        self.into()
    }
}

/// The O(1) index of a brick, built-in or registered: what the hot path carries.
///
/// A [`BrickId`] converts into a handle for free; [`crate::BrickProfiler::register`] returns
/// handles for bricks the enum lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BrickHandle(pub(crate) u16);

impl BrickHandle {
    /// The slot index of this brick in a profiler's statistics.
    pub(crate) fn slot(self) -> usize {
        self.0 as usize
    }

    /// The built-in brick this handle stands for, if any.
    pub(crate) fn builtin(self) -> Option<BrickId> {
        BrickId::from_slot(self.slot())
    }
}

impl From<BrickId> for BrickHandle {
    #[inline(always)]
    fn from(id: BrickId) -> Self {
        BrickHandle(id as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    #[test]
    fn all_is_in_slot_order_and_complete() {
        assert_eq!(BrickId::ALL.len(), BrickId::COUNT);
        for (i, id) in BrickId::iter().enumerate() {
            assert_eq!(BrickId::ALL[i], id);
            assert_eq!(id as usize, i);
            assert_eq!(BrickHandle::from(id).slot(), i);
            assert_eq!(BrickHandle::from(id).builtin(), Some(id));
        }
    }

    #[test]
    fn names_round_trip_case_insensitively() {
        for id in BrickId::iter() {
            assert_eq!(id.name().parse::<BrickId>().unwrap(), id);
            assert_eq!(id.name().to_lowercase().parse::<BrickId>().unwrap(), id);
            assert_eq!(id.name().to_uppercase().parse::<BrickId>().unwrap(), id);
            assert_eq!(id.to_string(), id.name());
        }
    }

    #[test]
    fn aliases_parse() {
        let cases = [
            ("qkv", BrickId::QkvProjection),
            ("rope", BrickId::RopeEmbedding),
            ("softmax", BrickId::AttentionSoftmax),
            ("silu", BrickId::Activation),
            ("GELU", BrickId::Activation),
            ("lm_head", BrickId::LmHead),
            ("down_proj", BrickId::DownProjection),
        ];
        for (s, id) in cases {
            assert_eq!(s.parse::<BrickId>().unwrap(), id, "{s}");
        }
        assert!("not_a_brick".parse::<BrickId>().is_err());
    }

    #[test]
    fn every_category_but_other_has_a_builtin_brick() {
        for cat in BrickCategory::iter() {
            let n = BrickId::iter().filter(|b| b.category() == cat).count();
            assert_eq!(n == 0, cat == BrickCategory::Other, "{cat}");
        }
    }
}
