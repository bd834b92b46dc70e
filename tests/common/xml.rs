//! Every XML-family output the tests write is read back with a real XML 1.0 parser
//! (`roxmltree`): the JUnit file, the flamegraph SVG, and each inline `<svg>` of the HTML report
//! (the page itself is HTML, not XML). Shared by the library's and the CLI's tests (the CLI
//! includes this file by path). spec/profile-format.md "Loading" (names from files).

#![allow(dead_code)]

/// Names that hold every kind of character XML 1.0 forbids or discourages: C0 controls
/// (U+0000 included), DEL and C1 controls, U+FFFE, U+FFFF and the other non-characters, beside
/// the XML specials and tab, line feed, carriage return. (A lone surrogate cannot be in a
/// Rust string.)
pub const HOSTILE_NAMES: [&str; 4] = [
    "bad\u{FFFE}\u{FFFF}name",
    "ctl\u{0}\u{1}\u{8}\u{b}\u{c}\u{e}\u{1f}\u{7f}\u{85}\u{9f}",
    "nonchar\u{FDD0}\u{FDEF}\u{1FFFE}\u{10FFFF}",
    "spec<&>\"'\t\n\r end",
];

/// `text` parsed as an XML 1.0 document; panics naming `what` and the parser's complaint.
pub fn assert_well_formed(what: &str, text: &str) {
    // The flamegraph names the SVG DTD (`<!DOCTYPE svg PUBLIC ...>`): allowed, not fetched.
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    if let Err(e) = roxmltree::Document::parse_with_options(text, options) {
        panic!("{what} is not well-formed XML: {e}\n{text}");
    }
}

/// Each inline `<svg>…</svg>` of an HTML report parsed as XML 1.0; the number of them.
pub fn assert_svgs_well_formed(what: &str, html: &str) -> usize {
    let mut n = 0;
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..]
            .find("</svg>")
            .unwrap_or_else(|| panic!("{what}: an <svg> is not closed"))
            + start
            + "</svg>".len();
        assert_well_formed(&format!("{what}, inline SVG {n}"), &rest[start..end]);
        n += 1;
        rest = &rest[end..];
    }
    n
}
