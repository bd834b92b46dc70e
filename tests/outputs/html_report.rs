//! spec/html-report.md: `brickprof report --html` writes one self-contained file whose SVG holds
//! every section's elements, and which a browser (headless Chromium) draws as a real picture.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::render::render_html;
use brickprof::output::HtmlOptions;
use brickprof::{roofline::DevicePeaks, Profile, SyncMode};

fn profile() -> Profile {
    let mut p = common::fixed_profile(false);
    p.meta.peaks = Some(DevicePeaks::new("toy", 100.0, 10.0).unwrap());
    p
}

fn other() -> Profile {
    common::traced_sim_profiler(SyncMode::Deferred, 16, 0).profile()
}

/// The report, each of its inline SVGs checked by an XML parser.
fn render(p: &Profile, opts: &HtmlOptions<'_>) -> String {
    let html = render_html(p, opts);
    common::xml::assert_svgs_well_formed("the HTML report", &html);
    html
}

fn count(html: &str, needle: &str) -> usize {
    html.matches(needle).count()
}

/// The text of one `<section id=...>`.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    let end = html[start..].find("</section>").unwrap() + start;
    &html[start..end]
}

#[test]
fn the_report_is_self_contained_and_holds_every_section() {
    let p = profile();
    let b = other();
    let html = render(
        &p,
        &HtmlOptions {
            compare: Some((&b, "sim <run>")),
            label: "fixed & golden",
            ..HtmlOptions::default()
        },
    );
    // Self-contained: no script, no link, no fetch of any kind.
    assert!(html.starts_with("<!DOCTYPE html>"));
    for banned in [
        "<script", "http:", "https:", "src=", "href=", "@import", "url(",
    ] {
        assert!(!html.contains(banned), "{banned} in the report");
    }
    assert!(html.contains("fixed &amp; golden") && html.contains("sim &lt;run&gt;"));
    // Heatmap: one cell per (row, brick with time): 2 layers + model, 6 bricks.
    let bricks = p
        .bricks
        .iter()
        .filter(|b| b.stats.summary().self_ns > 0)
        .count();
    let heat = section(&html, "heatmap");
    assert_eq!(
        count(heat, "<rect class=\"cell"),
        3 * bricks,
        "{bricks} bricks"
    );
    assert_eq!(
        count(heat, "<rect class=\"cell\""),
        p.bricks.iter().map(|b| b.rows.len()).sum::<usize>()
    );
    // Categories: one bar each.
    assert_eq!(
        count(section(&html, "categories"), "<rect class=\"bar\""),
        p.categories.len()
    );
    // Top bricks: a bar and a p50 dot with a p99 whisker each.
    let top = section(&html, "top");
    assert_eq!(count(top, "<circle class=\"p50\""), bricks);
    assert_eq!(count(top, "<line class=\"p99\""), 2 * bricks);
    // Roofline: the roof, and one point per brick with FLOPs and bytes.
    let roof = section(&html, "roofline");
    assert_eq!(count(roof, "<polyline class=\"roof\""), 1);
    let with_work = p
        .bricks
        .iter()
        .filter(|b| b.stats.summary().work.flops > 0 && b.stats.summary().work.bytes > 0)
        .count();
    assert!(with_work >= 4);
    assert_eq!(count(roof, "<circle class=\"brick\""), with_work);
    // Comparison: two bars per brick of either run.
    let cmp = section(&html, "compare");
    assert_eq!(
        count(cmp, "<rect class=\"bar a\""),
        count(cmp, "<rect class=\"bar b\"")
    );
    assert!(count(cmp, "<rect class=\"bar a\"") >= bricks);
    // Without a second profile there is no comparison.
    let single = render(&p, &HtmlOptions::default());
    assert!(!single.contains("<section id=\"compare\">"));
}

#[test]
fn a_profile_without_peaks_says_how_to_get_a_roofline() {
    let mut p = profile();
    p.meta.peaks = None;
    let html = render(&p, &HtmlOptions::default());
    assert!(section(&html, "roofline").contains("--peaks"));
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
}

/// Fraction of non-white pixels, number of distinct colours, and whether a dark red (the roof
/// line, the hottest heatmap cell) is drawn.
fn picture_stats(png_path: &Path) -> (f64, usize, bool) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    let px = &buf[..info.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let (mut ink, mut red) = (0usize, false);
    let n = px.len() / channels;
    for p in px.chunks_exact(channels) {
        let (r, g, b) = (p[0], p[1], p[2]);
        if (r, g, b) != (255, 255, 255) {
            ink += 1;
        }
        red |= r > 140 && g < 40 && b < 40;
        colours.insert((r, g, b));
    }
    (ink as f64 / n as f64, colours.len(), red)
}

#[test]
fn chromium_draws_the_report() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("BRICKPROF_REQUIRE_CHROMIUM").is_none(),
            "BRICKPROF_REQUIRE_CHROMIUM is set but no chromium is on PATH"
        );
        eprintln!("skipped: no chromium on PATH (CI installs it)");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html");
    std::fs::create_dir_all(&dir).unwrap();
    let html_path = dir.join("report.html");
    let png_path = dir.join("report.png");
    let _ = std::fs::remove_file(&png_path);
    let b = other();
    let html = render(
        &profile(),
        &HtmlOptions {
            compare: Some((&b, "sim")),
            label: "fixed",
            ..HtmlOptions::default()
        },
    );
    std::fs::write(&html_path, html).unwrap();
    let out = Command::new(browser)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1100,1800",
        ])
        .arg(format!("--screenshot={}", png_path.display()))
        .arg(format!("file://{}", html_path.display()))
        .output()
        .expect("run chromium");
    assert!(
        png_path.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (ink, colours, red) = picture_stats(&png_path);
    assert!(
        ink > 0.03,
        "the screenshot is nearly blank: {:.1}% ink",
        ink * 100.0
    );
    assert!(colours > 50, "only {colours} colours: not the drawn report");
    assert!(red, "no roof line / hot cell in the picture");
}

#[test]
fn a_diff_draws_an_error_heat_map_of_layer_by_brick() {
    // spec/html-report.md "Sections", `errors`: one cell per (layer row, brick) of the reference's
    // checksum log; equal cells green, differing cells coloured, the birthplace outlined.
    use brickprof::checksum::{ChecksumLog, KernelKey, Tensor};
    let key = |layer: Option<u32>, brick: &str| KernelKey {
        pass: 0,
        layer,
        brick: brick.into(),
        call: 0,
    };
    let (mut la, mut lb) = (ChecksumLog::default(), ChecksumLog::default());
    // 3 layers x 2 bricks and an LmHead; error planted at layer 1 DownProjection, carried on.
    for (layer, brick, planted) in [
        (Some(0), "RmsNorm", 0.0),
        (Some(0), "DownProjection", 0.0),
        (Some(1), "RmsNorm", 0.0),
        (Some(1), "DownProjection", 1e-3),
        (Some(2), "RmsNorm", 1e-3),
        (Some(2), "DownProjection", 2e-3),
        (None, "LmHead", 4e-3),
    ] {
        la.record(key(layer, brick), Tensor::F32(&[1.0, 2.0, 3.0]));
        lb.record(key(layer, brick), Tensor::F32(&[1.0, 2.0, 3.0 + planted]));
    }
    let (mut a, mut b) = (profile(), profile());
    a.checksums = Some(la);
    b.checksums = Some(lb);
    let outcome = diff_saved(&a, &b);
    let html = render(
        &a,
        &HtmlOptions {
            label: "quantized",
            diff: Some((&outcome, "dequantized")),
            ..HtmlOptions::default()
        },
    );
    let errors = section(&html, "errors");
    assert!(errors.contains("quantized vs dequantized"));
    // Rows: layers 0..2 and model; columns: RmsNorm, DownProjection, LmHead.
    assert_eq!(count(errors, "<rect class=\"cell"), 4 * 3);
    assert_eq!(count(errors, "<rect class=\"cell equal\""), 3);
    assert_eq!(count(errors, "<rect class=\"cell born\""), 1);
    assert_eq!(count(errors, "<rect class=\"cell\""), 3);
    assert_eq!(count(errors, "<rect class=\"cell empty\""), 5);
    assert!(
        errors.contains("error is born at pass 0 layer 1 DownProjection"),
        "{errors}"
    );
    // Without a diff there is no error section.
    let plain = render(&a, &HtmlOptions::default());
    assert!(!plain.contains("id=\"errors\""));
}

#[test]
fn extreme_peaks_and_brick_values_draw_a_bounded_report() {
    // spec/html-report.md "Bounded drawings": whatever finite numbers a profile holds, every
    // axis ends at finite powers of ten and has at most 13 ticks, so the report stays small.
    // Before: a 1e308 GFLOP/s peak (or `--peaks 1e300,1e-300`) put an end of the roofline's
    // axis at infinity, and the loop over its powers of ten ran about 2^31 times, taking GBs.
    use brickprof::{stats::BrickStats, Work};
    let base = profile();
    let normal = render(&base, &HtmlOptions::default()).len();
    // Bricks at the ends of what a profile holds: the most time, FLOPs and bytes there are.
    let mut extreme_bricks = base.clone();
    let max = u64::MAX;
    for (b, (ns, flops, bytes)) in extreme_bricks.bricks.iter_mut().zip([
        (max, max, 1),
        (1, 1, max),
        (1, max, max),
        (max, max, max),
    ]) {
        let mut s = BrickStats::default();
        s.record_nested(
            ns,
            ns,
            ns,
            Work {
                elements: max,
                flops,
                bytes,
            },
        );
        b.stats = s;
    }
    let values = [
        1e308,
        f64::MAX,
        1e300,
        1.0,
        1e-300,
        1e-308,
        f64::MIN_POSITIVE,
        5e-324,
    ];
    for p in [&base, &extreme_bricks] {
        for gflops in values {
            for gbps in values {
                let mut p = p.clone();
                p.meta.peaks = Some(DevicePeaks::new("extreme", gflops, gbps).unwrap());
                let html = render(&p, &HtmlOptions::default());
                let roof = section(&html, "roofline");
                // One grid line per tick, on both axes.
                let grid = count(roof, "<line class=\"grid\"");
                assert!(grid <= 2 * 13, "{gflops} {gbps}: {grid} grid lines");
                assert!(
                    html.len() < 2 * normal,
                    "{gflops} {gbps}: {} bytes, {normal} for the toy peaks",
                    html.len()
                );
                for bad in ["inf", "NaN"] {
                    assert!(!roof.contains(bad), "{gflops} {gbps}: {bad} in\n{roof}");
                }
            }
        }
    }
}

/// The `cy` of every `<circle class="{class}"` in `svg`.
fn circle_ys(svg: &str, class: &str) -> Vec<f64> {
    svg.split(&format!("<circle class=\"{class}\""))
        .skip(1)
        .map(|c| attr(c, "cy"))
        .collect()
}

/// The value of attribute `name` in the element text `el` starts with.
fn attr(el: &str, name: &str) -> f64 {
    let at = el.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
    el[at..at + el[at..].find('"').unwrap()].parse().unwrap()
}

#[test]
fn a_shaped_run_draws_its_passes_with_ttft_and_tpot() {
    // spec/html-report.md "Sections", `passes`: one dot per shaped pass, by phase, the TPOT p50 and
    // the TTFT p50 as dashed lines; an unshaped run has no such section.
    let p = common::shaped_sim_profiler(256).profile();
    let html = render(&p, &HtmlOptions::default());
    let passes = section(&html, "passes");
    let phase = |new: u32, seqs: u32| new != seqs;
    let prefill = common::SHAPED_PASSES
        .iter()
        .filter(|s| phase(s.0, s.1))
        .count();
    let decode = circle_ys(passes, "pass decode");
    assert_eq!(circle_ys(passes, "pass prefill").len(), prefill);
    assert_eq!(decode.len(), common::SHAPED_PASSES.len() - prefill);
    assert!(passes.contains("2 new tokens, 2 sequences, 34 context tokens"));
    // The TPOT p50 is one decode pass's wall time: its line runs at that pass's height.
    let line = |class: &str| {
        let parts: Vec<&str> = passes.split(&format!("<line class=\"{class}\"")).collect();
        assert_eq!(parts.len(), 2, "one {class} line");
        attr(parts[1], "y1")
    };
    let tpot = line("tpot");
    assert!(decode.iter().any(|&y| (y - tpot).abs() < 0.05), "{tpot}");
    // TTFT sums the prompt's chunks: longer than any one pass, so above every dot.
    let ttft = line("ttft");
    let all = circle_ys(passes, "pass prefill").into_iter().chain(decode);
    assert!(all.into_iter().all(|y| y > ttft), "{ttft}");
    assert!(passes.contains("TTFT p50") && passes.contains("TPOT p50"));
    for bad in ["inf", "NaN"] {
        assert!(!passes.contains(bad), "{bad} in\n{passes}");
    }
    // An unshaped run: no section.
    let unshaped = render(&other(), &HtmlOptions::default());
    assert!(!unshaped.contains("<section id=\"passes\">"));
}

#[test]
fn a_huge_pass_series_of_extreme_values_draws_a_bounded_chart() {
    // spec/html-report.md "Bounded drawings": at most 2,000 dots, finite log axes, whatever
    // the walls and contexts.
    use brickprof::{
        stats::{PassRecord, PassSeries},
        BrickCategory, PassShape,
    };
    let n = 5_000usize;
    let records = (0..n)
        .map(|i| {
            let shape = match i % 3 {
                0 => PassShape::new(u32::MAX, 1, u64::MAX).unwrap(),
                1 => PassShape::new(1, 1, 1).unwrap(),
                _ => PassShape::new(4, 4, 1 << 40).unwrap(),
            };
            let wall = [0, 1, u64::MAX][i % 3];
            PassRecord::new(Some(shape), wall, [0; BrickCategory::COUNT])
        })
        .collect();
    let mut p = profile();
    p.pass_series = Some(PassSeries::from_run(records, 0, n).unwrap());
    let html = render(&p, &HtmlOptions::default());
    let passes = section(&html, "passes");
    let dots = count(passes, "<circle class=\"pass ");
    assert!(dots > 0 && dots <= 2_000, "{dots} dots");
    assert!(count(passes, "<line class=\"grid\"") <= 2 * 13);
    assert!(passes.contains(&format!("{n} shaped passes")));
    for bad in ["inf", "NaN"] {
        assert!(!passes.contains(bad), "{bad} in the chart");
    }
}

#[test]
fn names_xml_cannot_hold_leave_every_inline_svg_well_formed() {
    // spec/profile-format.md "Loading" (names from files): brick names and labels with characters XML 1.0
    // forbids (U+FFFE, U+FFFF, C0 controls) or discourages (C1 controls, non-characters) are
    // replaced, so each inline SVG parses as XML. Before: U+FFFE/U+FFFF went through as they
    // were and no parser read the SVG.
    use brickprof::checksum::{ChecksumLog, KernelKey, Tensor};
    let names = common::xml::HOSTILE_NAMES;
    let mut a = profile();
    for (b, name) in a.bricks.iter_mut().zip(names.iter().cycle()) {
        b.name = format!("{name}{}", b.name);
    }
    a.pass_series = common::shaped_sim_profiler(256).profile().pass_series;
    let (mut la, mut lb) = (ChecksumLog::default(), ChecksumLog::default());
    for (i, name) in names.iter().enumerate() {
        let key = KernelKey {
            pass: 0,
            layer: Some(i as u32 % 2),
            brick: (*name).into(),
            call: 0,
        };
        la.record(key.clone(), Tensor::F32(&[1.0, 2.0]));
        lb.record(key, Tensor::F32(&[1.0, 2.0 + i as f32]));
    }
    let mut b = a.clone();
    a.checksums = Some(la);
    b.checksums = Some(lb);
    let outcome = diff_saved(&a, &b);
    let label = names.concat();
    let html = render(
        &a,
        &HtmlOptions {
            label: &label,
            compare: Some((&b, names[0])),
            diff: Some((&outcome, names[1])),
            ..HtmlOptions::default()
        },
    );
    for id in ["heatmap", "top", "passes", "roofline", "compare", "errors"] {
        let s = section(&html, id);
        assert!(
            common::xml::assert_svgs_well_formed(id, s) > 0,
            "no SVG in {id}"
        );
    }
    for c in [
        '\u{FFFE}',
        '\u{FFFF}',
        '\u{0}',
        '\u{1f}',
        '\u{85}',
        '\u{FDD0}',
        '\u{10FFFF}',
    ] {
        assert!(!html.contains(c), "{c:?} in the report");
    }
}

/// `brickprof diff` of the checksum logs of `a` and `b` saved as files, with the default
/// options: what the HTML report's error section reads (the checksum comparison and where
/// error is born).
fn diff_saved(a: &Profile, b: &Profile) -> brickprof::compare::DiffOutcome {
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    a.checksums.as_ref().unwrap().save(&pa).unwrap();
    b.checksums.as_ref().unwrap().save(&pb).unwrap();
    brickprof::compare::diff_files_with(&pa, &pb, &brickprof::compare::DiffOptions::default())
        .unwrap()
}
