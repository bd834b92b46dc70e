//! Human-readable numbers for reports: durations, rates and percentages with SI prefixes.

/// A duration in ns as `850ns`, `12.3µs`, `1.23ms`, `2.10s`, then `16.7min`, `5.00h`, `3.50d`,
/// `585y` (2^64 ns) and `1.0e9y`: at most 8 characters whatever the value; `-` when it is not
/// a finite number of ns or is negative.
pub(crate) fn duration(ns: f64) -> String {
    const MIN: f64 = 60e9;
    const HOUR: f64 = 60.0 * MIN;
    const DAY: f64 = 24.0 * HOUR;
    const YEAR: f64 = 365.25 * DAY;
    if !ns.is_finite() || ns < 0.0 {
        return "-".to_string();
    }
    if ns < 1_000.0 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        three_digits(ns / 1e3, "µs")
    } else if ns < 1e9 {
        three_digits(ns / 1e6, "ms")
    } else if ns < 1e12 {
        three_digits(ns / 1e9, "s")
    } else if ns < 1_000.0 * MIN {
        three_digits(ns / MIN, "min")
    } else if ns < 1_000.0 * HOUR {
        three_digits(ns / HOUR, "h")
    } else if ns < 1_000.0 * DAY {
        three_digits(ns / DAY, "d")
    } else if ns < 1_000.0 * YEAR {
        three_digits(ns / YEAR, "y")
    } else {
        format!("{:.1e}y", ns / YEAR)
    }
}

/// Three significant digits: 1.23, 12.3, 123.
fn three_digits(v: f64, unit: &str) -> String {
    if v < 10.0 {
        format!("{v:.2}{unit}")
    } else if v < 100.0 {
        format!("{v:.1}{unit}")
    } else {
        format!("{v:.0}{unit}")
    }
}

/// A count per second with an SI prefix, three significant digits: `1.40/s`, `14.3/s`,
/// `950/s`, `12.3k/s`, `4.56M/s`, `1.20G/s`, `0.0123/s`, `1.00e-4/s` (never rounded to a whole count: 1.4
/// tokens/s is not "1").
pub(crate) fn rate(per_sec: f64, unit: &str) -> String {
    if !per_sec.is_finite() || per_sec <= 0.0 {
        return format!("0{unit}");
    }
    let (v, p) = if per_sec >= 1e12 {
        (per_sec / 1e12, "T")
    } else if per_sec >= 1e9 {
        (per_sec / 1e9, "G")
    } else if per_sec >= 1e6 {
        (per_sec / 1e6, "M")
    } else if per_sec >= 1e3 {
        (per_sec / 1e3, "k")
    } else if per_sec >= 1.0 {
        (per_sec, "")
    } else if per_sec >= 1e-3 {
        // Below 1: as many decimals as three significant digits need.
        let decimals = (2 - per_sec.log10().floor() as i64).clamp(3, 5) as usize;
        return format!("{per_sec:.decimals$}{unit}");
    } else {
        return format!("{per_sec:.2e}{unit}");
    };
    three_digits(v, &format!("{p}{unit}"))
}

/// A throughput cell: [`rate`] when there is one, nothing (an empty string) when no element
/// count was recorded (every brick of a tracing-mode profile) or no time passed
/// (spec/work-accounting.md "Reports").
pub(crate) fn throughput(per_sec: f64) -> String {
    if per_sec.is_finite() && per_sec > 0.0 {
        rate(per_sec, "/s")
    } else {
        String::new()
    }
}

/// A percentage cell of at most 7 characters: `12.3%`; `>9999%` above what fits; `-` when it
/// is not a finite number (absurd device peaks can make a roof percentage overflow).
pub(crate) fn percent(pct: f64) -> String {
    if !pct.is_finite() {
        "-".to_string()
    } else if pct >= 9_999.95 {
        ">9999%".to_string()
    } else {
        format!("{pct:.1}%")
    }
}

/// A plain number with `digits` decimals, or in scientific notation (`1.00e308`) from 10^9 on
/// so it stays narrow; `-` when it is not a finite number.
pub(crate) fn number(v: f64, digits: usize) -> String {
    if !v.is_finite() {
        "-".to_string()
    } else if v.abs() >= 1e9 {
        format!("{v:.2e}")
    } else {
        format!("{v:.digits$}")
    }
}

/// `part / whole * 100`, 0 when `whole` is 0.
pub(crate) fn ratio_pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 && part.is_finite() {
        part / whole * 100.0
    } else {
        0.0
    }
}

/// A bar of `width` cells filled in proportion to `pct` (0..=100), with eighth-block precision.
pub(crate) fn bar(pct: f64, width: usize) -> String {
    const PARTIAL: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let eighths = ((pct.clamp(0.0, 100.0) / 100.0) * (width * 8) as f64).round() as usize;
    let mut s = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) {
        s.push(PARTIAL[eighths % 8]);
    }
    s
}

/// Cut a name to `w` characters, marking the cut with '~'; characters that could drive the
/// terminal (a newline in a registered brick's name, an ESC sequence or a right-to-left
/// override in a file) become spaces ([`crate::base::printable::printable`]), so a row stays one
/// line and reads as written.
pub(crate) fn clip(s: &str, w: usize) -> String {
    let s = crate::base::printable::printable(s).into_owned();
    if s.chars().count() <= w {
        s
    } else {
        let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
        t.push('~');
        t
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_documented_examples() {
        // spec/work-accounting.md "Reports": the cells the table prints.
        assert_eq!(duration(850.0), "850ns");
        assert_eq!(duration(12_345.0), "12.3µs");
        assert_eq!(duration(1_234_567.0), "1.23ms");
        assert_eq!(duration(2.5e9), "2.50s");
        assert_eq!(duration(1e12), "16.7min");
        assert_eq!(duration(u64::MAX as f64), "585y");
        assert_eq!(rate(12_300.0, "/s"), "12.3k/s");
        assert_eq!(rate(0.0, "/s"), "0/s");
        assert_eq!(rate(950.0, "/s"), "950/s");
        assert_eq!(throughput(12_300.0), "12.3k/s");
        assert_eq!(throughput(0.0), "");
        assert_eq!(percent(12.34), "12.3%");
        assert_eq!(percent(1e300), ">9999%");
        assert_eq!(percent(f64::INFINITY), "-");
        assert_eq!(number(12.345, 2), "12.35");
        assert_eq!(number(1e308, 2), "1.00e308");
        assert_eq!(number(f64::NAN, 1), "-");
    }

    use super::*;

    #[test]
    fn durations_fit_eight_chars() {
        // Before: 2^64-1 ns (a nesting edge's total in a file) printed "18446744074s".
        let mut ns = 1.0;
        while ns < f64::MAX / 3.0 {
            for v in [ns, ns * 2.5, ns * 9.999, ns * 9.9999] {
                assert!(duration(v).chars().count() <= 8, "{v}: {}", duration(v));
            }
            ns *= 10.0;
        }
        assert!(duration(f64::MAX).chars().count() <= 8);
        assert_eq!(duration(u64::MAX as f64), "585y");
        assert_eq!(duration(f64::NAN), "-");
    }

    /// spec/work-accounting.md "Reports": a rate keeps three significant digits below 1000 too.
    /// Before, anything under 1k/s printed as a whole number: "Decode 1 tok/s" beside a
    /// decode of 1.4 tokens/s, and `diff` said "1 tok/s -> 1 tok/s (-1.2%)".
    #[test]
    fn rates_keep_three_significant_digits() {
        assert_eq!(rate(1.4, " tok/s"), "1.40 tok/s");
        assert_eq!(rate(1.383, " tok/s"), "1.38 tok/s");
        assert_eq!(rate(14.27, " tok/s"), "14.3 tok/s");
        assert_eq!(rate(123.4, " tok/s"), "123 tok/s");
        assert_eq!(rate(0.5, "/s"), "0.500/s");
        assert_eq!(rate(0.012_34, "/s"), "0.0123/s");
        assert_eq!(rate(1e-12, "/s"), "1.00e-12/s");
        for v in [1.0, 9.99, 42.0, 999.0] {
            assert!(rate(v, "/s").chars().count() <= 8, "{v}: {}", rate(v, "/s"));
        }
    }

    #[test]
    fn bars_are_proportional() {
        assert_eq!(bar(100.0, 10).chars().count(), 10);
        assert_eq!(bar(50.0, 10), "█████");
        assert_eq!(bar(0.0, 10), "");
        assert_eq!(bar(5.0, 10), "▌");
    }

    #[test]
    fn percent_of_zero_is_zero() {
        assert_eq!(ratio_pct(5.0, 0.0), 0.0);
        assert_eq!(ratio_pct(1.0, 4.0), 25.0);
        assert_eq!(ratio_pct(f64::NAN, 4.0), 0.0);
    }
}
