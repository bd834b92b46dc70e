//! Integers in saved files that survive tools which read JSON numbers as `f64` (jq, JavaScript).
//!
//! A value up to 2^53 is written as a plain JSON number; a larger one as a decimal string, so
//! a round trip through such a tool keeps it exactly (spec/profile-format.md, "Large
//! integers"). Reading accepts both forms, so files written before this rule still load.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The largest integer every JSON reader holds exactly (an `f64` mantissa).
pub(crate) const MAX_SAFE: u64 = 1 << 53;

/// Serialize a `u64` as a number up to [`MAX_SAFE`], else as a decimal string.
pub(crate) fn ser_u64<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    if *v <= MAX_SAFE {
        s.serialize_u64(*v)
    } else {
        s.serialize_str(&v.to_string())
    }
}

/// Serialize a `u128` as a number up to [`MAX_SAFE`], else as a decimal string.
pub(crate) fn ser_u128<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
    if *v <= u128::from(MAX_SAFE) {
        s.serialize_u64(*v as u64)
    } else {
        s.serialize_str(&v.to_string())
    }
}

/// Read a `u64` written as a number or a decimal string.
pub(crate) fn de_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = d.deserialize_any(IntVisitor)?;
    u64::try_from(v).map_err(|_| de::Error::custom(format!("{v} does not fit in 64 bits")))
}

/// Read a `u128` written as a number or a decimal string.
pub(crate) fn de_u128<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
    d.deserialize_any(IntVisitor)
}

/// A `u64` in a container (`Option`, `Vec`, a map's value), written and read as above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct U64(
    #[serde(serialize_with = "ser_u64", deserialize_with = "de_u64")] pub(crate) u64,
);

/// [`ser_u64`] for an optional field (`skip_serializing_if = "Option::is_none"` beside it).
pub(crate) fn ser_opt_u64<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    v.map(U64).serialize(s)
}

/// [`de_u64`] for an optional field (`default` beside it); `null` reads as `None`.
pub(crate) fn de_opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Option::<U64>::deserialize(d)?.map(|v| v.0))
}

/// [`ser_u64`] for every element of a list.
pub(crate) fn ser_vec_u64<S: Serializer>(v: &[u64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|&v| U64(v)))
}

/// [`de_u64`] for every element of a list.
pub(crate) fn de_vec_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    Ok(Vec::<U64>::deserialize(d)?
        .into_iter()
        .map(|v| v.0)
        .collect())
}

/// [`ser_u64`] for a `usize` (a count or capacity a limit keeps far below 2^53: always a
/// number in practice, and read in both forms like every other integer field).
pub(crate) fn ser_usize<S: Serializer>(v: &usize, s: S) -> Result<S::Ok, S::Error> {
    ser_u64(&(*v as u64), s)
}

/// [`de_u64`] for a `usize`.
pub(crate) fn de_usize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let v = de_u64(d)?;
    usize::try_from(v).map_err(|_| de::Error::custom(format!("{v} does not fit in a usize")))
}

/// [`ser_usize`] for an optional field.
pub(crate) fn ser_opt_usize<S: Serializer>(v: &Option<usize>, s: S) -> Result<S::Ok, S::Error> {
    v.map(|v| U64(v as u64)).serialize(s)
}

/// [`de_usize`] for an optional field; `null` reads as `None`.
pub(crate) fn de_opt_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    Option::<U64>::deserialize(d)?
        .map(|v| usize::try_from(v.0))
        .transpose()
        .map_err(|_| de::Error::custom("a count that does not fit in a usize"))
}

struct IntVisitor;

impl Visitor<'_> for IntVisitor {
    type Value = u128;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a non-negative integer (a number, or a decimal string when above 2^53)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u128, E> {
        Ok(u128::from(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<u128, E> {
        Ok(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u128, E> {
        u128::try_from(v).map_err(|_| E::custom(format!("{v} is negative")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u128, E> {
        Err(E::custom(format!(
            "{v} is not an integer (write integers above 2^53 as decimal strings)"
        )))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u128, E> {
        v.parse::<u128>()
            .map_err(|_| E::custom(format!("{v:?} is not a non-negative decimal integer")))
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct T {
        #[serde(serialize_with = "super::ser_u64", deserialize_with = "super::de_u64")]
        a: u64,
        #[serde(
            serialize_with = "super::ser_u128",
            deserialize_with = "super::de_u128"
        )]
        b: u128,
    }

    #[test]
    fn large_values_are_strings_small_ones_numbers_and_both_read_back() {
        // spec/profile-format.md "Large integers"
        let t = T {
            a: u64::MAX,
            b: u128::from(u64::MAX) * 3,
        };
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(
            json,
            format!(
                r#"{{"a":"{}","b":"{}"}}"#,
                u64::MAX,
                u128::from(u64::MAX) * 3
            )
        );
        assert_eq!(serde_json::from_str::<T>(&json).unwrap(), t);
        let small = T { a: 1 << 53, b: 7 };
        let json = serde_json::to_string(&small).unwrap();
        assert_eq!(json, format!(r#"{{"a":{},"b":7}}"#, 1u64 << 53));
        assert_eq!(serde_json::from_str::<T>(&json).unwrap(), small);
        assert!(serde_json::from_str::<T>(r#"{"a":-1,"b":0}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"a":1.5,"b":0}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"a":"18446744073709551616","b":0}"#).is_err());
    }
}
