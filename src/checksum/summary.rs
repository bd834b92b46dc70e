//! [`TensorSummary`]: the cheap numeric summary kept beside each hash (spec/checksums.md
//! "Summary"), finished from the lane accumulators ([`super::lanes`]) of the hash's pass.

use serde::{Deserialize, Serialize};

use super::lanes::{Acc, ACC_LANES};

/// The largest count a checksum file may hold (2^53: every count stays exact as a JSON number
/// in any reader, jq and Python included).
pub(crate) const MAX_COUNT: u64 = 1 << 53;

/// A cheap numeric summary of a tensor, so two runs can be compared with a tolerance and a
/// distance reported. NaN and ±Inf are counted, not summed: `min`, `max`, `sum` and `sum_sq`
/// cover the finite values only (f64 accumulators). `+0.0` and `-0.0` summarize equally.
///
/// Plain data to read. A summary comes from data ([`TensorSummary::of`],
/// [`crate::checksum::checksum`]) or from a validated file (`#[non_exhaustive]`: it cannot be
/// built field by field outside brickprof), so `nan + pos_inf + neg_inf <= len`; the derived
/// numbers below saturate anyway.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TensorSummary {
    /// Number of elements.
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    pub len: u64,
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    /// Number of NaNs.
    pub nan: u64,
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    /// Number of +Inf.
    pub pos_inf: u64,
    #[serde(
        serialize_with = "crate::base::exact_int::ser_u64",
        deserialize_with = "crate::base::exact_int::de_u64"
    )]
    /// Number of -Inf.
    pub neg_inf: u64,
    /// Smallest finite value (0 when there is none).
    pub min: f64,
    /// Largest finite value (0 when there is none).
    pub max: f64,
    /// Sum of the finite values.
    pub sum: f64,
    /// Sum of squares of the finite values.
    pub sum_sq: f64,
}

impl TensorSummary {
    /// Summarize a tensor (its values decoded to f32; quantized blocks dequantized; opaque
    /// bytes: their count only). One vectorizable pass.
    ///
    /// ```
    /// use brickprof::checksum::{Tensor, TensorSummary};
    /// let s = TensorSummary::of(Tensor::F32(&[1.0, -2.0, f32::NAN, f32::INFINITY]));
    /// assert_eq!((s.len, s.nan, s.pos_inf, s.neg_inf), (4, 1, 1, 0));
    /// assert_eq!((s.min, s.max, s.sum, s.sum_sq), (-2.0, 1.0, -1.0, 5.0));
    /// ```
    pub fn of(tensor: super::Tensor<'_>) -> TensorSummary {
        use super::Tensor;
        match tensor {
            Tensor::F32(x) => Self::of_decoded(x, super::pass::AsIs),
            Tensor::F16(x) => Self::of_decoded(x, super::dtype::f16_to_f32),
            Tensor::Bf16(x) => Self::of_decoded(x, |b| super::HalfFormat::Bf16.to_f32(b)),
            Tensor::I8(x) => Self::of_decoded(x, f32::from),
            Tensor::U8(x) => Self::of_decoded(x, f32::from),
            Tensor::Quantized(q) => super::quantized_summary(q),
            Tensor::Bytes(x) => Self::of_bytes(x.len()),
        }
    }

    /// The summary of opaque bytes: their count, nothing else.
    pub(crate) fn of_bytes(len: usize) -> TensorSummary {
        TensorSummary {
            len: len as u64,
            ..Self::EMPTY
        }
    }

    const EMPTY: TensorSummary = TensorSummary {
        len: 0,
        nan: 0,
        pos_inf: 0,
        neg_inf: 0,
        min: 0.0,
        max: 0.0,
        sum: 0.0,
        sum_sq: 0.0,
    };

    /// One pass of [`Acc`] lanes over the decoded values (the widest vector code this CPU has).
    pub(crate) fn of_decoded<X: super::fnv::Element>(
        data: &[X],
        decode: impl super::pass::Decode<X>,
    ) -> TensorSummary {
        let acc = super::pass::summary_pass(super::Simd::detect(), data, decode);
        acc.finish(data.iter().map(|&v| decode.value(v)))
    }

    /// Check what a loaded summary must satisfy; the message names the field.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.len > MAX_COUNT {
            return Err(format!("summary.len {} exceeds 2^53", self.len));
        }
        let non_finite = self
            .nan
            .checked_add(self.pos_inf)
            .and_then(|x| x.checked_add(self.neg_inf));
        match non_finite {
            Some(n) if n <= self.len => {}
            _ => {
                return Err(format!(
                    "summary.nan + pos_inf + neg_inf ({} + {} + {}) exceeds summary.len {}",
                    self.nan, self.pos_inf, self.neg_inf, self.len
                ))
            }
        }
        for (name, v) in [
            ("min", self.min),
            ("max", self.max),
            ("sum", self.sum),
            ("sum_sq", self.sum_sq),
        ] {
            if !v.is_finite() {
                return Err(format!("summary.{name} is not a finite number"));
            }
        }
        if self.sum_sq < 0.0 {
            return Err(format!("summary.sum_sq {} is negative", self.sum_sq));
        }
        if self.min > self.max {
            return Err(format!(
                "summary.min {} is greater than summary.max {}",
                self.min, self.max
            ));
        }
        Ok(())
    }

    /// Number of NaN and ±Inf values (saturating).
    pub(crate) fn non_finite(&self) -> u64 {
        self.nan
            .saturating_add(self.pos_inf)
            .saturating_add(self.neg_inf)
    }

    /// Number of finite values (saturating).
    pub(crate) fn finite(&self) -> u64 {
        self.len.saturating_sub(self.non_finite())
    }

    /// Mean of the finite values (0 when none).
    pub(crate) fn mean(&self) -> f64 {
        match self.finite() {
            0 => 0.0,
            n => self.sum / n as f64,
        }
    }

    /// Root mean square of the finite values (0 when none).
    pub(crate) fn rms(&self) -> f64 {
        match self.finite() {
            0 => 0.0,
            n => (self.sum_sq / n as f64).sqrt(),
        }
    }
}

impl Acc {
    /// The summary of `values`, every one of which went through [`Self::block`] (or a vector
    /// kernel doing the same). When a sum came out non-finite (some value was NaN or ±Inf, or
    /// finite values beyond about 1.8e19 overflowed an f32 window sum) the values are walked
    /// again: NaN and ±Inf counted, the finite ones summarized with f64 sums.
    pub(crate) fn finish(mut self, values: impl ExactSizeIterator<Item = f32>) -> TensorSummary {
        self.flush();
        let len = values.len() as u64;
        let sum: f64 = self.sum.iter().sum();
        let sum_sq: f64 = self.sum_sq.iter().sum();
        if sum.is_finite() && sum_sq.is_finite() {
            return lane_summary(len, &self.min, &self.max, sum, sum_sq);
        }
        let mut min = [f32::INFINITY; ACC_LANES];
        let mut max = [f32::NEG_INFINITY; ACC_LANES];
        let mut sum = [0f64; ACC_LANES];
        let mut sum_sq = [0f64; ACC_LANES];
        let (mut nan, mut pos_inf, mut neg_inf) = (0u64, 0u64, 0u64);
        for (k, v) in values.enumerate() {
            let i = k % ACC_LANES;
            if v.is_finite() {
                min[i] = if v < min[i] { v } else { min[i] };
                max[i] = if v > max[i] { v } else { max[i] };
                let x = f64::from(v);
                sum[i] += x;
                sum_sq[i] += x * x;
            } else if v.is_nan() {
                nan += 1;
            } else if v > 0.0 {
                pos_inf += 1;
            } else {
                neg_inf += 1;
            }
        }
        let mut s = lane_summary(len, &min, &max, sum.iter().sum(), sum_sq.iter().sum());
        (s.nan, s.pos_inf, s.neg_inf) = (nan, pos_inf, neg_inf);
        if s.finite() == 0 {
            (s.min, s.max) = (0.0, 0.0);
        }
        s
    }
}

/// Combine per-lane extremes and the sums into a summary without non-finite values.
fn lane_summary(
    len: u64,
    min: &[f32; ACC_LANES],
    max: &[f32; ACC_LANES],
    sum: f64,
    sum_sq: f64,
) -> TensorSummary {
    let min = min.iter().copied().fold(f32::INFINITY, f32::min);
    let max = max.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let (min, max) = if len == 0 {
        (0.0, 0.0)
    } else {
        (f64::from(min), f64::from(max))
    };
    TensorSummary {
        len,
        min,
        max,
        sum,
        sum_sq,
        ..TensorSummary::EMPTY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::Tensor;

    #[test]
    fn summary_of_empty_and_non_finite_tensors() {
        let e = TensorSummary::of(Tensor::F32(&[]));
        assert_eq!(
            (e.len, e.min, e.max, e.mean(), e.rms()),
            (0, 0.0, 0.0, 0.0, 0.0)
        );
        let s = TensorSummary::of(Tensor::F32(&[f32::NEG_INFINITY, f32::NAN]));
        assert_eq!((s.neg_inf, s.nan, s.finite()), (1, 1, 0));
        assert!(s.non_finite() > 0);
        assert_eq!((s.min, s.max), (0.0, 0.0));
    }

    #[test]
    fn signed_zeros_and_nan_payloads_summarize_equally() {
        assert_eq!(
            TensorSummary::of(Tensor::F32(&[0.0])),
            TensorSummary::of(Tensor::F32(&[-0.0]))
        );
        let (a, b) = (f32::from_bits(0x7fc0_0001), f32::from_bits(0x7fc0_0002));
        assert_eq!(
            TensorSummary::of(Tensor::F32(&[a])),
            TensorSummary::of(Tensor::F32(&[b]))
        );
    }

    #[test]
    fn validation_names_the_field_and_never_overflows() {
        let mut s = TensorSummary::of(Tensor::F32(&[1.0, 2.0]));
        assert!(s.validate().is_ok());
        s.nan = u64::MAX;
        s.pos_inf = u64::MAX;
        assert!(s.validate().unwrap_err().contains("summary.nan"));
        assert_eq!((s.finite(), s.non_finite()), (0, u64::MAX));
        let mut s = TensorSummary::of(Tensor::F32(&[1.0, 2.0]));
        s.min = 3.0;
        assert!(s.validate().unwrap_err().contains("summary.min"));
        s = TensorSummary::of(Tensor::F32(&[1.0]));
        s.len = u64::MAX;
        assert!(s.validate().unwrap_err().contains("2^53"));
    }

    use proptest::prelude::*;

    fn any_f32s() -> impl Strategy<Value = Vec<f32>> {
        proptest::collection::vec(any::<u32>().prop_map(f32::from_bits), 1..200)
    }

    proptest! {
        /// Invariant: the summary counts every element exactly once, its min and max are the
        /// finite extremes, and min <= mean <= max over the finite values.
        #[test]
        fn summary_accounts_for_every_element(data in any_f32s()) {
            let s = TensorSummary::of(Tensor::F32(&data));
            let finite: Vec<f32> = data.iter().copied().filter(|v| v.is_finite()).collect();
            prop_assert_eq!(s.len, data.len() as u64);
            prop_assert_eq!(s.nan, data.iter().filter(|v| v.is_nan()).count() as u64);
            prop_assert_eq!(s.pos_inf, data.iter().filter(|&&v| v == f32::INFINITY).count() as u64);
            prop_assert_eq!(s.finite(), finite.len() as u64);
            if !finite.is_empty() {
                prop_assert_eq!(s.min, f64::from(finite.iter().copied().fold(f32::INFINITY, f32::min)));
                prop_assert_eq!(s.max, f64::from(finite.iter().copied().fold(f32::NEG_INFINITY, f32::max)));
                prop_assert!(s.mean() >= s.min - 1e-9 * s.min.abs() && s.mean() <= s.max + 1e-9 * s.max.abs());
            }
        }

        /// Invariant: an f16/bf16/i8 tensor summarizes exactly like the f32 tensor of its
        /// decoded values (one summary algorithm for every dtype). (From
        /// proptests/checksum_props.rs: it decodes with `HalfFormat`, internal since 0.4.)
        #[test]
        fn typed_summaries_equal_the_decoded_f32_summary(bits in proptest::collection::vec(any::<u16>(), 0..100)) {
            use crate::checksum::{checksum, Algorithm, HalfFormat};
            for (format, tensor) in [(HalfFormat::F16, Tensor::F16(&bits)), (HalfFormat::Bf16, Tensor::Bf16(&bits))] {
                let decoded: Vec<f32> = bits.iter().map(|&b| format.to_f32(b)).collect();
                prop_assert_eq!(TensorSummary::of(tensor), TensorSummary::of(Tensor::F32(&decoded)));
                prop_assert_eq!(checksum(Algorithm::default(), tensor).1, TensorSummary::of(Tensor::F32(&decoded)));
            }
            let bytes: Vec<i8> = bits.iter().map(|&b| b as i8).collect();
            let decoded: Vec<f32> = bytes.iter().map(|&b| f32::from(b)).collect();
            prop_assert_eq!(checksum(Algorithm::default(), Tensor::I8(&bytes)).1, TensorSummary::of(Tensor::F32(&decoded)));
        }
    }
}
