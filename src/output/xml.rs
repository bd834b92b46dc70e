//! The one escaper for every XML-family file brickprof writes (the JUnit file, the HTML
//! report and its inline SVGs; the CLI's flamegraph through [`xml_safe`]): text from a file
//! (a brick name, a label) must not make the output not well-formed (spec/profile-format.md
//! "Loading", names from files).

use std::borrow::Cow;

/// What stands for a character XML 1.0 cannot hold or asks documents to avoid.
pub(crate) const XML_REPLACEMENT: char = '\u{FFFD}';

/// `s` with every character that XML 1.0 forbids (the C0 controls other than tab, line feed
/// and carriage return; U+FFFE and U+FFFF) or discourages (the C1 controls, DEL, and the
/// other non-characters: U+FDD0..=U+FDEF and the last two code points of every plane) replaced
/// by U+FFFD, one character for one. The XML specials are left as they are: for a writer that
/// escapes them itself (the flamegraph's `inferno`). Borrows when nothing needs replacing.
pub fn xml_safe(s: &str) -> Cow<'_, str> {
    if s.chars().any(unfit) {
        Cow::Owned(
            s.chars()
                .map(|c| if unfit(c) { XML_REPLACEMENT } else { c })
                .collect(),
        )
    } else {
        Cow::Borrowed(s)
    }
}

/// `s` ready for XML text or a quoted attribute value: [`xml_safe`], then the specials
/// (`& < > " '`) as entities and tab, line feed and carriage return as character references
/// (so that an attribute keeps them: a parser turns literal ones into spaces).
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' => out.push_str("&#9;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            c if unfit(c) => out.push(XML_REPLACEMENT),
            c => out.push(c),
        }
    }
    out
}

/// Not a character XML 1.0 allows in a document, or one it asks documents to avoid
/// (XML 1.0 section 2.2, "Characters"). Tab, line feed and carriage return are allowed.
fn unfit(c: char) -> bool {
    let u = u32::from(c);
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        || (0xFDD0..=0xFDEF).contains(&u)
        || (u & 0xFFFE) == 0xFFFE
}

#[cfg(test)]
mod tests {
    // spec/profile-format.md "Loading", names from files in XML outputs.
    use super::*;

    #[test]
    fn characters_xml_forbids_or_discourages_are_replaced() {
        for c in [
            '\0', '\u{1}', '\u{b}', '\u{1f}', '\u{7f}', '\u{85}', '\u{9f}',
        ] {
            assert_eq!(xml_safe(&format!("a{c}b")), "a\u{FFFD}b", "{:?}", c);
        }
        for c in [
            '\u{FFFE}',
            '\u{FFFF}',
            '\u{FDD0}',
            '\u{FDEF}',
            '\u{1FFFE}',
            '\u{10FFFF}',
        ] {
            assert_eq!(escape(&format!("a{c}b")), "a\u{FFFD}b", "{:?}", c);
        }
        for c in [
            '\u{FDCF}',
            '\u{FDF0}',
            '\u{FFFD}',
            '\u{1FFFD}',
            'µ',
            '\u{E000}',
        ] {
            assert!(
                matches!(xml_safe(&format!("a{c}b")), Cow::Borrowed(_)),
                "{c:?}"
            );
        }
    }

    #[test]
    fn specials_and_line_ends_become_references() {
        assert_eq!(
            escape("<a href=\"x\">&'\t\n\r"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&#9;&#10;&#13;"
        );
        assert_eq!(xml_safe("<&>\n"), "<&>\n");
    }
}
