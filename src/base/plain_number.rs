//! Numbers as a user writes them in a live-server query: whole numbers written plainly. No
//! sign, no leading zero, no exponent, no blank: `-0`, `+1` and `01` are refused rather than
//! read as 0, 1 and 1, so a typo cannot pass as a number (spec/live.md "Endpoints"). The CLI's
//! flags, gates and budgets follow the same rule (its own `plain_number`).

/// `s` as a whole number written plainly: ASCII digits only, no leading zero unless `s` is
/// `0`; `None` otherwise or past `u64::MAX`.
pub(crate) fn plain_uint(s: &str) -> Option<u64> {
    plain_digits(s).then(|| s.parse().ok()).flatten()
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
    }
}
