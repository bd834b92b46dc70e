//! A few SVG helpers for the HTML report ([`super::html`]): an element writer that escapes
//! text, a colour scale, and linear / log10 axes. No dependency, no script.

use std::fmt::Write as _;

/// Text and attribute values go through the one XML escaper.
pub(crate) use super::xml::escape;

/// An SVG document being written: `<svg>` open, elements appended, closed by [`Svg::finish`].
#[derive(Debug)]
pub(crate) struct Svg {
    out: String,
}

impl Svg {
    /// Open an `<svg>` of `width` × `height` user units with class `class`.
    pub(crate) fn new(width: f64, height: f64, class: &str) -> Svg {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg class="{class}" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img">"#
        );
        Svg { out }
    }

    /// A rectangle `(x, y, width, height)` with a hover title.
    pub(crate) fn rect(
        &mut self,
        class: &str,
        (x, y, w, h): (f64, f64, f64, f64),
        fill: &str,
        title: &str,
    ) {
        let _ = write!(
            self.out,
            r#"<rect class="{class}" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}"><title>{}</title></rect>"#,
            w.max(0.0),
            h.max(0.0),
            escape(title)
        );
    }

    /// Text anchored at (x, y): `anchor` is start, middle or end; `rotate` in degrees.
    pub(crate) fn text(&mut self, class: &str, x: f64, y: f64, anchor: &str, rotate: f64, s: &str) {
        let transform = if rotate == 0.0 {
            String::new()
        } else {
            format!(r#" transform="rotate({rotate:.0} {x:.1} {y:.1})""#)
        };
        let _ = write!(
            self.out,
            r#"<text class="{class}" x="{x:.1}" y="{y:.1}" text-anchor="{anchor}"{transform}>{}</text>"#,
            escape(s)
        );
    }

    /// A straight line.
    pub(crate) fn line(&mut self, class: &str, x1: f64, y1: f64, x2: f64, y2: f64) {
        let _ = write!(
            self.out,
            r#"<line class="{class}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}"/>"#
        );
    }

    /// A polyline through `points`, with a title.
    pub(crate) fn polyline(&mut self, class: &str, points: &[(f64, f64)], title: &str) {
        let pts: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            self.out,
            r#"<polyline class="{class}" points="{}"><title>{}</title></polyline>"#,
            pts.join(" "),
            escape(title)
        );
    }

    /// A circle with a hover title.
    pub(crate) fn circle(
        &mut self,
        class: &str,
        cx: f64,
        cy: f64,
        r: f64,
        fill: &str,
        title: &str,
    ) {
        let _ = write!(
            self.out,
            r#"<circle class="{class}" cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="{fill}"><title>{}</title></circle>"#,
            escape(title)
        );
    }

    /// The frame of a log-log chart `w` × `h` with the plot area `left..w - right` ×
    /// `top..h - bottom`: a grid line and a tick label per decade of each axis (the y labels
    /// written by `y_tick`), both axes, and their labels.
    pub(crate) fn log_frame(
        &mut self,
        (x, y): (&LogAxis, &LogAxis),
        (w, h, left, right, top, bottom): (f64, f64, f64, f64, f64, f64),
        (x_label, y_label): (&str, &str),
        y_tick: impl Fn(f64) -> String,
    ) {
        for d in x.decades() {
            self.line("grid", x.px(d), top, x.px(d), h - bottom);
            let label = tick_label(d);
            self.text("small", x.px(d), h - bottom + 16.0, "middle", 0.0, &label);
        }
        for d in y.decades() {
            self.line("grid", left, y.px(d), w - right, y.px(d));
            self.text("small", left - 6.0, y.px(d) + 4.0, "end", 0.0, &y_tick(d));
        }
        self.line("axis", left, h - bottom, w - right, h - bottom);
        self.line("axis", left, top, left, h - bottom);
        let (mid_x, mid_y) = ((left + w) / 2.0, (top + h - bottom) / 2.0);
        self.text("axis-label", mid_x, h - 10.0, "middle", 0.0, x_label);
        self.text("axis-label", 16.0, mid_y, "middle", -90.0, y_label);
    }

    /// Close the document.
    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

/// A heat colour for `frac` in 0..=1: pale yellow through orange to dark red.
pub(crate) fn heat(frac: f64) -> String {
    let t = if frac.is_finite() {
        frac.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let lerp = |a: f64, b: f64, t: f64| a + (b - a) * t;
    let (r, g, b) = if t < 0.5 {
        let u = t / 0.5;
        (
            lerp(255.0, 253.0, u),
            lerp(250.0, 141.0, u),
            lerp(225.0, 60.0, u),
        )
    } else {
        let u = (t - 0.5) / 0.5;
        (
            lerp(253.0, 165.0, u),
            lerp(141.0, 15.0, u),
            lerp(60.0, 21.0, u),
        )
    };
    format!("#{:02x}{:02x}{:02x}", r as u8, g as u8, b as u8)
}

/// One colour per brick category (colour-blind friendly palette), by index.
pub(crate) fn palette(i: usize) -> &'static str {
    const P: [&str; 8] = [
        "#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#000000",
    ];
    P[i % P.len()]
}

/// A log10 axis mapping `[lo, hi]` (both > 0) onto pixels `[p0, p1]`.
///
/// Bounded whatever numbers it is given (spec/html-report.md "Bounded drawings"): the ends are
/// whole powers of ten between 10^[`LogAxis::MIN_EXP`] and 10^[`LogAxis::MAX_EXP`] (a value
/// outside, infinity or NaN is drawn at the nearest end), and [`LogAxis::decades`] gives at
/// most [`LogAxis::MAX_TICKS`] ticks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogAxis {
    /// Exponents of the ends, `lo_exp < hi_exp`, both within `MIN_EXP..=MAX_EXP`.
    lo_exp: i32,
    hi_exp: i32,
    p0: f64,
    p1: f64,
}

impl LogAxis {
    /// The lowest end: 10^-12 (smaller values are drawn on it).
    pub(crate) const MIN_EXP: i32 = -12;
    /// The highest end: 10^300 (larger values, and infinity, are drawn on it).
    pub(crate) const MAX_EXP: i32 = 300;
    /// The most ticks [`LogAxis::decades`] gives: past that, every k-th power of ten.
    pub(crate) const MAX_TICKS: usize = 13;

    /// The decades that cover `lo..=hi`, clamped into the axis's bounds, mapped onto `p0..p1`.
    pub(crate) fn covering(lo: f64, hi: f64, p0: f64, p1: f64) -> LogAxis {
        let exp = |v: f64, round: fn(f64) -> f64| -> i32 {
            if v.is_nan() || v <= 0.0 {
                Self::MIN_EXP
            } else {
                // An infinite log10 clamps like any other; `as` saturates.
                round(v.log10()).clamp(f64::from(Self::MIN_EXP), f64::from(Self::MAX_EXP)) as i32
            }
        };
        let lo_exp = exp(lo, f64::floor).min(Self::MAX_EXP - 1);
        let hi_exp = exp(hi, f64::ceil).max(lo_exp + 1);
        LogAxis {
            lo_exp,
            hi_exp,
            p0,
            p1,
        }
    }

    /// Pixel of value `v` (clamped into the axis; NaN at the lower end).
    pub(crate) fn px(&self, v: f64) -> f64 {
        let (lo, hi) = (f64::from(self.lo_exp), f64::from(self.hi_exp));
        let e = if v > 0.0 { v.log10().clamp(lo, hi) } else { lo };
        let f = (e - lo) / (hi - lo);
        self.p0 + f * (self.p1 - self.p0)
    }

    /// The lower and upper ends.
    pub(crate) fn range(&self) -> (f64, f64) {
        (pow10(self.lo_exp), pow10(self.hi_exp))
    }

    /// Powers of ten on the axis to draw ticks at, from the lower end: each of them, or every
    /// k-th when there are more than [`LogAxis::MAX_TICKS`].
    pub(crate) fn decades(&self) -> Vec<f64> {
        let span = (self.hi_exp - self.lo_exp) as usize;
        let step = span.div_ceil(Self::MAX_TICKS - 1).max(1);
        (self.lo_exp..=self.hi_exp)
            .step_by(step)
            .map(pow10)
            .collect()
    }
}

/// 10^`e`, the double nearest to it (`powi` drifts for large exponents: 1.0000000000000002e14).
fn pow10(e: i32) -> f64 {
    format!("1e{e}").parse().unwrap_or(f64::NAN)
}

/// A compact label for a power of ten or any axis value: 0.01, 1, 100, 10k, 1M, and from 10^9
/// on or below 10^-3, scientific (`1e12`, `1e-5`), so a label stays short whatever the value.
pub(crate) fn tick_label(v: f64) -> String {
    if !v.is_finite() {
        "-".to_string()
    } else if v.abs() >= 1e9 || (v != 0.0 && v.abs() < 1e-3) {
        format!("{v:e}")
    } else if v >= 1e6 {
        format!("{}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{}k", v / 1e3)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let mut s = Svg::new(10.0, 10.0, "t");
        s.text("x", 0.0, 0.0, "start", 0.0, "</svg><script>");
        assert!(!s.finish().contains("<script>"));
    }

    #[test]
    fn log_axis_covers_whole_decades_and_maps_ends() {
        let a = LogAxis::covering(0.3, 250.0, 0.0, 300.0);
        assert_eq!(a.range(), (0.1, 1000.0));
        assert_eq!(a.decades(), vec![0.1, 1.0, 10.0, 100.0, 1000.0]);
        assert!((a.px(0.1) - 0.0).abs() < 1e-9 && (a.px(1000.0) - 300.0).abs() < 1e-9);
        assert!((a.px(10.0) - 150.0).abs() < 1e-9);
    }

    #[test]
    fn log_axes_stay_finite_and_have_few_ticks_whatever_they_cover() {
        // spec/html-report.md "Bounded drawings". Before: an infinite end made `decades` walk
        // every exponent up to i32::MAX.
        let ends = [
            0.0,
            -1.0,
            5e-324,
            1e-300,
            1.0,
            1e300,
            f64::MAX,
            f64::INFINITY,
            f64::NAN,
        ];
        for lo in ends {
            for hi in ends {
                let a = LogAxis::covering(lo, hi, 0.0, 100.0);
                let (l, h) = a.range();
                assert!(
                    l.is_finite() && h.is_finite() && 0.0 < l && l < h,
                    "{lo} {hi}"
                );
                let d = a.decades();
                assert!(
                    !d.is_empty() && d.len() <= LogAxis::MAX_TICKS,
                    "{lo} {hi}: {d:?}"
                );
                for v in ends {
                    assert!((0.0..=100.0).contains(&a.px(v)), "{lo} {hi} {v}");
                }
            }
        }
        let wide = LogAxis::covering(1e-12, 1e300, 0.0, 1.0);
        assert_eq!(wide.decades().first(), Some(&1e-12));
        assert!(tick_label(1e300).len() <= 6 && tick_label(1e-12) == "1e-12");
    }

    #[test]
    fn heat_runs_from_pale_to_dark() {
        assert_eq!(heat(0.0), "#fffae1");
        assert_eq!(heat(1.0), "#a50f15");
        assert_eq!(heat(f64::NAN), heat(0.0));
    }
}
