//! Durations as the CLI prints them in budget lines: the library's table's units (`850ns`,
//! `12.3µs`, `1.23ms`), so a budget reads as the table beside it does.

/// A duration in ns as `850ns`, `12.3µs`, `1.23ms`, `2.10s`, then `16.7min`, `5.00h`, `3.50d`,
/// `585y` (2^64 ns) and `1.0e9y`: at most 8 characters whatever the value; `-` when it is not
/// a finite number of ns or is negative.
pub fn duration(ns: f64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_the_table_writes_them() {
        assert_eq!(duration(850.0), "850ns");
        assert_eq!(duration(12_345.0), "12.3µs");
        assert_eq!(duration(1_234_567.0), "1.23ms");
        assert_eq!(duration(2.5e9), "2.50s");
        assert_eq!(duration(1e12), "16.7min");
        assert_eq!(duration(u64::MAX as f64), "585y");
        assert_eq!(duration(f64::NAN), "-");
    }
}
