//! What a checksummed tensor holds (spec/checksums.md "Dtypes"): [`DType`], recorded with every
//! entry, and [`Tensor`], a borrowed view of an output in the dtype the engine computed.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The element type of a checksummed tensor, recorded with each checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DType {
    /// IEEE 754 binary32.
    #[serde(rename = "f32")]
    F32,
    /// IEEE 754 binary16.
    #[serde(rename = "f16")]
    F16,
    /// bfloat16 (the top half of an f32).
    #[serde(rename = "bf16")]
    Bf16,
    /// Signed bytes.
    #[serde(rename = "i8")]
    I8,
    /// Unsigned bytes.
    #[serde(rename = "u8")]
    U8,
    /// GGUF `Q4_0` blocks: an f16 scale and 32 4-bit values, 18 bytes a block.
    #[serde(rename = "q4_0")]
    Q4_0,
    /// GGUF `Q8_0` blocks: an f16 scale and 32 signed bytes, 34 bytes a block.
    #[serde(rename = "q8_0")]
    Q8_0,
    /// Opaque bytes (another quantized layout): hashed, not summarized.
    #[serde(rename = "bytes")]
    Bytes,
}

impl DType {
    /// Every dtype.
    pub(crate) const ALL: [DType; 8] = [
        DType::F32,
        DType::F16,
        DType::Bf16,
        DType::I8,
        DType::U8,
        DType::Q4_0,
        DType::Q8_0,
        DType::Bytes,
    ];

    /// The name written in files (its `Display`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::Q4_0 => "q4_0",
            DType::Q8_0 => "q8_0",
            DType::Bytes => "bytes",
        }
    }

    /// True when the summary holds decoded values; false for [`DType::Bytes`], whose summary
    /// only counts bytes, so any hash difference is a divergence whatever the tolerance.
    pub(crate) fn is_numeric(self) -> bool {
        self != DType::Bytes
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        DType::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| format!("unknown dtype {s:?}"))
    }
}

/// The 16-bit float formats a `&[u16]` tensor can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HalfFormat {
    /// IEEE 754 binary16.
    F16,
    /// bfloat16 (the top half of an f32).
    Bf16,
}

impl HalfFormat {
    /// Decode one value to f32 (exact: every f16 and bf16 value is an f32).
    #[inline(always)]
    pub(crate) fn to_f32(self, bits: u16) -> f32 {
        match self {
            HalfFormat::Bf16 => f32::from_bits(u32::from(bits) << 16),
            HalfFormat::F16 => f16_to_f32(bits),
        }
    }
}

/// IEEE binary16 bits to f32, exactly.
#[inline(always)]
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exp = u32::from((bits >> 10) & 0x1f);
    let mant = u32::from(bits & 0x3ff);
    let out = match (exp, mant) {
        (0, 0) => sign,
        (0, _) => {
            // Subnormal: mant * 2^-24, exact in f32.
            let v = mant as f32 * f32::from_bits(0x3380_0000);
            sign | v.to_bits()
        }
        (31, _) => sign | 0x7f80_0000 | (mant << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (mant << 13),
    };
    f32::from_bits(out)
}

/// A GGUF block-quantized layout whose values brickprof can decode for the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantFormat {
    /// `Q4_0`: f16 scale `d`, then 16 bytes; value `j` is `((q[j] & 15) - 8) * d` and value
    /// `j + 16` is `((q[j] >> 4) - 8) * d`.
    Q4_0,
    /// `Q8_0`: f16 scale `d`, then 32 signed bytes `q`; value `j` is `q[j] * d`.
    Q8_0,
}

impl QuantFormat {
    /// Bytes per block.
    pub(crate) fn block_bytes(self) -> usize {
        match self {
            QuantFormat::Q4_0 => 18,
            QuantFormat::Q8_0 => 34,
        }
    }

    /// Values per block.
    pub(crate) const BLOCK_VALUES: usize = 32;

    /// Decode one block (exactly [`Self::block_bytes`] bytes) into 32 values (exact in f32).
    pub(crate) fn decode_block(self, block: &[u8], out: &mut [f32; 32]) {
        let d = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
        match self {
            QuantFormat::Q8_0 => {
                for (o, &q) in out.iter_mut().zip(&block[2..34]) {
                    *o = f32::from(q as i8) * d;
                }
            }
            QuantFormat::Q4_0 => {
                for (j, &q) in block[2..18].iter().enumerate() {
                    out[j] = (f32::from(q & 15) - 8.0) * d;
                    out[j + 16] = (f32::from(q >> 4) - 8.0) * d;
                }
            }
        }
    }
}

/// The raw bytes of whole quantized blocks; constructed only with a length that is a whole
/// number of blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantBlocks<'a> {
    format: QuantFormat,
    bytes: &'a [u8],
}

impl<'a> QuantBlocks<'a> {
    /// Wrap `bytes` as blocks of `format`; an error when the length is not a whole number of
    /// blocks.
    ///
    /// ```
    /// use brickprof::checksum::{QuantBlocks, QuantFormat};
    /// assert!(QuantBlocks::new(QuantFormat::Q8_0, &[0; 68]).is_ok());
    /// assert!(QuantBlocks::new(QuantFormat::Q8_0, &[0; 67]).is_err());
    /// ```
    pub fn new(format: QuantFormat, bytes: &'a [u8]) -> Result<Self> {
        if !bytes.len().is_multiple_of(format.block_bytes()) {
            return Err(Error::invalid_value(
                "quantized buffer length",
                bytes.len(),
                format!(
                    "not a whole number of {format:?} blocks ({} bytes each)",
                    format.block_bytes()
                ),
            ));
        }
        Ok(QuantBlocks { format, bytes })
    }

    /// The layout.
    pub(crate) fn format(&self) -> QuantFormat {
        self.format
    }

    /// The raw bytes.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// A borrowed kernel output in the dtype the engine computed it in.
///
/// ```
/// use brickprof::checksum::{ChecksumLog, DType, KernelKey, Tensor};
/// let x = [1.0f32, 2.0];
/// let mut log = ChecksumLog::default();
/// let key = KernelKey { pass: 0, layer: None, brick: "LmHead".into(), call: 0 };
/// log.record(key, Tensor::from(&x[..])); // its dtype is recorded with the checksum
/// assert_eq!(log.entries[0].dtype, Some(DType::F32));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tensor<'a> {
    /// f32 values.
    F32(&'a [f32]),
    /// f16 values as raw bits.
    F16(&'a [u16]),
    /// bf16 values as raw bits.
    Bf16(&'a [u16]),
    /// i8 values.
    I8(&'a [i8]),
    /// u8 values.
    U8(&'a [u8]),
    /// Whole GGUF quantized blocks.
    Quantized(QuantBlocks<'a>),
    /// Opaque bytes: hashed, the summary counts bytes only.
    Bytes(&'a [u8]),
}

impl Tensor<'_> {
    /// The dtype recorded for this tensor.
    pub(crate) fn dtype(&self) -> DType {
        match self {
            Tensor::F32(_) => DType::F32,
            Tensor::F16(_) => DType::F16,
            Tensor::Bf16(_) => DType::Bf16,
            Tensor::I8(_) => DType::I8,
            Tensor::U8(_) => DType::U8,
            Tensor::Quantized(q) => match q.format {
                QuantFormat::Q4_0 => DType::Q4_0,
                QuantFormat::Q8_0 => DType::Q8_0,
            },
            Tensor::Bytes(_) => DType::Bytes,
        }
    }
}

impl<'a> From<&'a [f32]> for Tensor<'a> {
    fn from(x: &'a [f32]) -> Self {
        Tensor::F32(x)
    }
}

impl<'a> From<&'a [i8]> for Tensor<'a> {
    fn from(x: &'a [i8]) -> Self {
        Tensor::I8(x)
    }
}

impl<'a> From<&'a [u8]> for Tensor<'a> {
    fn from(x: &'a [u8]) -> Self {
        Tensor::U8(x)
    }
}

impl<'a> From<QuantBlocks<'a>> for Tensor<'a> {
    fn from(x: QuantBlocks<'a>) -> Self {
        Tensor::Quantized(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_formats_decode_exactly() {
        // (the example of `HalfFormat::to_f32`'s doc, before it became internal)
        assert_eq!(HalfFormat::F16.to_f32(0x3c00), 1.0);
        assert_eq!(HalfFormat::F16.to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(HalfFormat::Bf16.to_f32(0xc000), -2.0);
        assert!(HalfFormat::F16.to_f32(0x7e00).is_nan());
    }

    #[test]
    fn a_tensor_knows_its_dtype() {
        // (the examples of Tensor's doc, before `Tensor::dtype` became internal)
        let x = [1.0f32, 2.0];
        assert_eq!(Tensor::from(&x[..]).dtype(), DType::F32);
        assert_eq!(Tensor::Bf16(&[0x3f80]).dtype(), DType::Bf16);
    }

    #[test]
    fn every_f16_decodes_like_the_reference_conversion() {
        // Reference: the normalizing loop of the IEEE definition.
        fn reference(bits: u16) -> f32 {
            let sign = if bits >> 15 == 1 { -1.0f64 } else { 1.0 };
            let exp = i32::from((bits >> 10) & 0x1f);
            let mant = f64::from(bits & 0x3ff);
            match exp {
                0 => (sign * mant * 2f64.powi(-24)) as f32,
                31 if mant == 0.0 => (sign * f64::INFINITY) as f32,
                31 => f32::NAN,
                _ => (sign * (1.0 + mant / 1024.0) * 2f64.powi(exp - 15)) as f32,
            }
        }
        for bits in 0..=u16::MAX {
            let (a, b) = (f16_to_f32(bits), reference(bits));
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{bits:#x}"
            );
        }
    }

    #[test]
    fn quantized_blocks_decode_per_the_ggml_layout() {
        let mut q8 = vec![0x00, 0x40]; // d = 2.0
        q8.extend((0..32).map(|i| (i as i8 - 16) as u8));
        let mut out = [0.0; 32];
        QuantFormat::Q8_0.decode_block(&q8, &mut out);
        assert_eq!((out[0], out[31]), (-32.0, 30.0));
        let mut q4 = vec![0x00, 0x3c]; // d = 1.0
        q4.extend((0..16).map(|j| (j as u8) | 0xf0));
        QuantFormat::Q4_0.decode_block(&q4, &mut out);
        assert_eq!((out[0], out[15], out[16], out[31]), (-8.0, 7.0, 7.0, 7.0));
        assert_eq!(
            Tensor::from(QuantBlocks::new(QuantFormat::Q4_0, &q4).unwrap()).dtype(),
            DType::Q4_0
        );
    }
}
