//! Numbers as a user writes them in a flag, a gate, a budget or a query: plain decimals. No
//! sign, no leading zero (a lone `0` before the point aside), no exponent, no `inf` or `nan`,
//! no blank: `-0`, `+1`, `01` and `1e1` are refused rather than read as 0, 1, 1 and 10, so a
//! typo cannot pass as a number (spec/timing-verdicts.md "Gates, budgets and the exit code",
//! spec/live.md "Endpoints").

/// `s` as a whole number written plainly: ASCII digits only, no leading zero unless `s` is
/// `0`; `None` otherwise or past `u64::MAX`.
pub(crate) fn plain_uint(s: &str) -> Option<u64> {
    plain_digits(s).then(|| s.parse().ok()).flatten()
}

/// `s` as a decimal written plainly: [`plain_uint`]'s digits, then optionally a point and at
/// least one digit (`5`, `0.5`, `12.25`).
pub(crate) fn plain_decimal(s: &str) -> Option<f64> {
    let (whole, fraction) = s.split_once('.').unwrap_or((s, "0"));
    let fraction_ok = !fraction.is_empty() && fraction.bytes().all(|b| b.is_ascii_digit());
    (plain_digits(whole) && fraction_ok)
        .then(|| s.parse::<f64>().ok())
        .flatten()
        .filter(|v| v.is_finite())
}

fn plain_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_leading_zeros_and_exponents_are_refused() {
        // spec/timing-verdicts.md "Gates, budgets and the exit code".
        for s in ["0", "1", "64", "18446744073709551615"] {
            assert_eq!(plain_uint(s), s.parse().ok(), "{s}");
        }
        for s in [
            "",
            "+1",
            "-0",
            "01",
            "00",
            "1e1",
            " 1",
            "1 ",
            "1.0",
            "18446744073709551616",
        ] {
            assert_eq!(plain_uint(s), None, "{s:?}");
        }
        for (s, v) in [("0", 0.0), ("5", 5.0), ("0.5", 0.5), ("12.25", 12.25)] {
            assert_eq!(plain_decimal(s), Some(v), "{s}");
        }
        for s in [
            "", "-0", "+5", "05", "00.5", ".5", "5.", "1e1", "inf", "NaN", "5.-1", "1.2.3",
        ] {
            assert_eq!(plain_decimal(s), None, "{s:?}");
        }
    }
}
