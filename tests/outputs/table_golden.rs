//! Golden-file tests of the report layouts (spec/profile-format.md "Reports"). The profile is
//! built on a mock clock, so every number is fixed. To accept an intended layout change, run
//! `BLESS=1 cargo test --test library outputs::table_golden` and review the diff of `tests/golden/`.

use crate::common;
use crate::common::render::render_csv;

use brickprof::roofline::DevicePeaks;
use brickprof::{
    model::PhaseFilter,
    output::{render_table, SortKey, TableOptions},
};

fn check(name: &str, actual: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let actual = actual.replace(env!("CARGO_PKG_VERSION"), "{version}");
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with BLESS=1 to create it)", path.display()));
    if expected != actual {
        panic!(
            "{name} differs from its golden file; run with BLESS=1 to accept.\n--- expected\n{expected}\n--- actual\n{actual}"
        );
    }
}

fn assert_fits(text: &str) {
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "over 100 columns: {line:?}");
    }
}

#[test]
fn default_table() {
    let text = render_table(&common::fixed_profile(false), &TableOptions::default());
    assert_fits(&text);
    check("table_default.txt", &text);
}

#[test]
fn by_layer_sorted_by_p99_top_5() {
    let opts = TableOptions {
        sort: SortKey::P99,
        top: Some(5),
        by_layer: true,
        peaks: None,
    };
    let text = render_table(&common::fixed_profile(false), &opts);
    assert_fits(&text);
    assert!(text.contains("more rows (--top)"));
    check("table_by_layer_p99_top5.txt", &text);
}

#[test]
fn table_with_roofline() {
    let opts = TableOptions {
        peaks: Some(DevicePeaks::new("toy gpu", 1_000.0, 100.0).unwrap()),
        ..TableOptions::default()
    };
    let text = render_table(&common::fixed_profile(false), &opts);
    assert_fits(&text);
    check("table_roofline.txt", &text);
}

#[test]
fn csv_export() {
    check(
        "report.csv",
        &render_csv(&common::fixed_profile(false), &TableOptions::default()),
    );
}

#[test]
fn timing_diff() {
    let a = common::fixed_profile(false);
    let mut b = a.clone();
    for brick in &mut b.bricks {
        if brick.name == "QkvProjection" {
            let same = brick.stats.clone();
            brick.stats.merge(&same); // twice the calls, twice the time
        }
    }
    let text = brickprof::compare::timing_diff(&a, &b, PhaseFilter::All).render(&a, &b);
    assert_fits(&text);
    assert!(
        text.lines().nth(3).unwrap().starts_with("QkvProjection"),
        "{text}"
    );
    check("timing_diff.txt", &text);
}
