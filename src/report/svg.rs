//! A few SVG helpers for the HTML report ([`super::html`]): an element writer that escapes
//! text, a colour scale, and linear / log10 axes. No dependency, no script.

use std::fmt::Write as _;

/// Escape `s` for HTML/SVG text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An SVG document being written: `<svg>` open, elements appended, closed by [`Svg::finish`].
#[derive(Debug)]
pub struct Svg {
    out: String,
}

impl Svg {
    /// Open an `<svg>` of `width` × `height` user units with class `class`.
    pub fn new(width: f64, height: f64, class: &str) -> Svg {
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg class="{class}" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img">"#
        );
        Svg { out }
    }

    /// A rectangle `(x, y, width, height)` with a hover title.
    pub fn rect(
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
    pub fn text(&mut self, class: &str, x: f64, y: f64, anchor: &str, rotate: f64, s: &str) {
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
    pub fn line(&mut self, class: &str, x1: f64, y1: f64, x2: f64, y2: f64) {
        let _ = write!(
            self.out,
            r#"<line class="{class}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}"/>"#
        );
    }

    /// A polyline through `points`, with a title.
    pub fn polyline(&mut self, class: &str, points: &[(f64, f64)], title: &str) {
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
    pub fn circle(&mut self, class: &str, cx: f64, cy: f64, r: f64, fill: &str, title: &str) {
        let _ = write!(
            self.out,
            r#"<circle class="{class}" cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="{fill}"><title>{}</title></circle>"#,
            escape(title)
        );
    }

    /// Close the document.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>");
        self.out
    }
}

/// A heat colour for `frac` in 0..=1: pale yellow through orange to dark red.
pub fn heat(frac: f64) -> String {
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
pub fn palette(i: usize) -> &'static str {
    const P: [&str; 8] = [
        "#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#000000",
    ];
    P[i % P.len()]
}

/// A log10 axis mapping `[lo, hi]` (both > 0) onto pixels `[p0, p1]`.
#[derive(Debug, Clone, Copy)]
pub struct LogAxis {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
}

impl LogAxis {
    /// The decades that cover `lo..=hi` (both clamped above 0), mapped onto `p0..p1`.
    pub fn covering(lo: f64, hi: f64, p0: f64, p1: f64) -> LogAxis {
        let lo = lo.max(1e-12);
        let hi = hi.max(lo * 10.0);
        LogAxis {
            lo: 10f64.powf(lo.log10().floor()),
            hi: 10f64.powf(hi.log10().ceil()),
            p0,
            p1,
        }
    }

    /// Pixel of value `v` (clamped into the axis).
    pub fn px(&self, v: f64) -> f64 {
        let v = v.clamp(self.lo, self.hi);
        let f = (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10());
        self.p0 + f * (self.p1 - self.p0)
    }

    /// The lower and upper ends.
    pub fn range(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }

    /// Each power of ten on the axis.
    pub fn decades(&self) -> Vec<f64> {
        let (a, b) = (
            self.lo.log10().round() as i32,
            self.hi.log10().round() as i32,
        );
        (a..=b).map(|e| 10f64.powi(e)).collect()
    }
}

/// A compact label for a power of ten or any axis value: 0.01, 1, 100, 10k, 1M.
pub fn tick_label(v: f64) -> String {
    if v >= 1e6 {
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
    fn heat_runs_from_pale_to_dark() {
        assert_eq!(heat(0.0), "#fffae1");
        assert_eq!(heat(1.0), "#a50f15");
        assert_eq!(heat(f64::NAN), heat(0.0));
    }
}
