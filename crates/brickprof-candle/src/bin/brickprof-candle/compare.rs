//! `compare`'s table: each mode's median tokens/s over the interleaved rounds, beside two
//! labelled changes against no subscriber: the ratio of those medians (what the columns show)
//! and the median of the per-round ratios (the rounds pair the modes in time, so machine drift
//! cancels). Once, one unlabelled percentage was the second beside the first's columns, so
//! 13.33 against 12.37 tok/s read "+10.72 %".

/// The median of `v` (0 when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The table's lines: a header, then one line per mode (`names[i]`, its tokens/s in each round
/// `tps[i]`; the first mode is the baseline), then a note on the two changes.
pub fn render(names: &[&str], tps: &[Vec<f64>]) -> String {
    let mut out = format!(
        "  {:<15} {:>13} {:>18} {:>24}\n",
        "mode", "median tok/s", "ratio of medians", "median per-round ratio"
    );
    let base = tps.first().map(|v| median(v)).unwrap_or(0.0);
    for (name, v) in names.iter().zip(tps) {
        let m = median(v);
        let ratios: Vec<f64> = v
            .iter()
            .zip(&tps[0])
            .map(|(a, b)| a / b)
            .filter(|r| r.is_finite())
            .collect();
        out.push_str(&format!(
            "  {name:<15} {m:>13.2} {:>+16.2} % {:>+22.2} %\n",
            (m / base - 1.0) * 100.0,
            (median(&ratios) - 1.0) * 100.0
        ));
    }
    out.push_str(&format!(
        "  changes vs {}: the ratio of the medians beside them, and the median of each round's\n  \
         ratio (the rounds pair the modes in time, so drift on a shared machine cancels)\n",
        names.first().copied().unwrap_or("the first mode")
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/real-model.md (Overhead): the percentage beside the medians is their
    /// ratio, and the median of per-round ratios is labelled as such. The tester's numbers:
    /// 13.33 against 12.37 tok/s, whose rounds' ratios have a median of +10.72 %; before,
    /// "+10.72 %" stood alone beside 13.33 and 12.37.
    #[test]
    fn the_percentage_beside_the_medians_is_their_ratio() {
        let none = vec![12.37, 11.0, 14.0];
        let layer = vec![13.33, 11.0 * 1.1072, 14.0 * 1.2];
        let text = render(&["no subscriber", "BrickLayer"], &[none, layer]);
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("BrickLayer"))
            .unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[1], "13.33", "{text}");
        // 13.33 / 12.37 - 1 = +7.76 %.
        assert_eq!(cells[2], "+7.76", "{text}");
        assert_eq!(cells[4], "+10.72", "{text}");
        assert!(text.contains("ratio of medians"), "{text}");
        assert!(text.contains("median per-round ratio"), "{text}");
        let baseline = text.lines().nth(1).unwrap();
        assert!(baseline.contains(" +0.00 %"), "{text}");
    }
}
