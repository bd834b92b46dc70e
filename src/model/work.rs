//! What a brick or tile did: [`Work`] (elements, FLOPs, bytes moved), given by the caller at
//! `stop`, never guessed from an element type. Rates derived from it live in
//! [`crate::stats::BrickStats`]; the roofline lives in [`crate::roofline`].

use serde::{Deserialize, Serialize};

/// The work one measured call did. All counts are totals for the call.
///
/// ```
/// use brickprof::Work;
/// // A 256x256 by 256 matvec in f32: 2*m*k FLOPs, reads the matrix and vector, writes the output.
/// let w = Work { elements: 256, flops: 2 * 256 * 256, bytes: 4 * (256 * 256 + 256 + 256) };
/// assert_eq!(w.flops, 131_072);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Work {
    /// Elements processed (tokens, rows, output values: whatever the caller counts).
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub elements: u64,
    /// Floating-point operations performed.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub flops: u64,
    /// Bytes moved to and from memory. Per call, they also place the brick at the memory level
    /// its working set fits in (spec/work-accounting.md "Cache-aware roofline").
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub bytes: u64,
}

impl Work {
    /// No work recorded (`Work::default()` outside the crate).
    pub(crate) const NONE: Work = Work {
        elements: 0,
        flops: 0,
        bytes: 0,
    };

    /// Work counting only elements.
    #[inline(always)]
    pub const fn elements(elements: u64) -> Work {
        Work {
            elements,
            flops: 0,
            bytes: 0,
        }
    }
}

impl std::ops::Add for Work {
    type Output = Work;

    /// Component-wise saturating sum.
    fn add(self, other: Work) -> Work {
        Work {
            elements: self.elements.saturating_add(other.elements),
            flops: self.flops.saturating_add(other.flops),
            bytes: self.bytes.saturating_add(other.bytes),
        }
    }
}

impl From<u64> for Work {
    fn from(elements: u64) -> Self {
        Work::elements(elements)
    }
}
