//! Invariant: whatever characters brick names and the report's label hold, every inline SVG of
//! the HTML report parses as XML 1.0 (spec/profile-format.md "Loading", names from files in
//! XML outputs). The JUnit file of budgets on those bricks is the CLI's: its property is in
//! crates/brickprof-cli/src/junit.rs.

use crate::render::render_html;
use brickprof::output::HtmlOptions;
use proptest::prelude::*;

use crate::common::mock_profiler;

/// A character, often one XML 1.0 forbids or discourages.
fn char_() -> impl Strategy<Value = char> {
    prop_oneof![
        any::<char>(),
        (0u32..0x20).prop_map(|u| char::from_u32(u).unwrap()),
        (0x7fu32..0xa0).prop_map(|u| char::from_u32(u).unwrap()),
        (0xFDD0u32..=0xFDEF).prop_map(|u| char::from_u32(u).unwrap()),
        (0u32..=16, 0u32..2).prop_map(|(p, l)| char::from_u32(p << 16 | 0xFFFE | l).unwrap()),
        prop::sample::select(vec!['<', '&', '>', '"', '\'', ']', '\t', '\n', '\r']),
    ]
}

/// A brick name that a budget can name (no `:` or `=`, not blank at either end).
fn name() -> impl Strategy<Value = String> {
    prop::collection::vec(char_(), 0..12).prop_map(|cs| {
        let inner: String = cs.into_iter().filter(|c| !matches!(c, ':' | '=')).collect();
        format!("x{inner}x")
    })
}

fn parses(what: &str, text: &str) -> Result<(), TestCaseError> {
    roxmltree::Document::parse(text)
        .map(|_| ())
        .map_err(|e| TestCaseError::fail(format!("{what}: {e}")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn xml_outputs_parse_whatever_the_names(
        names in prop::collection::hash_set(name(), 1..5),
        label in prop::collection::vec(char_(), 0..12),
    ) {
        let (mock, mut prof) = mock_profiler(brickprof::ProfilerConfig::with_layers(1));
        prof.begin_layer(0);
        for n in &names {
            let h = prof.register(n, brickprof::BrickCategory::Other).unwrap();
            let t = prof.start_brick(h);
            mock.increment(1_000);
            prof.stop_brick(t, 1);
        }
        prof.end_layer();
        prof.end_pass(1).unwrap();
        let p = prof.profile();
        let label: String = label.into_iter().collect();
        let html = render_html(&p, &HtmlOptions { label: &label, ..HtmlOptions::default() });
        let mut rest = html.as_str();
        while let Some(start) = rest.find("<svg") {
            let end = start + rest[start..].find("</svg>").unwrap() + "</svg>".len();
            parses("an inline SVG", &rest[start..end])?;
            rest = &rest[end..];
        }
    }
}
