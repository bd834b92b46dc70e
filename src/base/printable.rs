//! Names from files made safe to print: the one escaper every report and error message uses
//! for text a file supplied (brick names, `tool_version`, hosts), so that a file cannot drive
//! the terminal (spec/profile-format.md "Reports").

use std::borrow::Cow;
use std::fmt;

/// `s` with every character that could drive a terminal or reorder the text around it shown
/// as a space: control characters (an ESC sequence, a bell, a newline that would split a row)
/// and the bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A..=U+202E,
/// U+2066..=U+2069; a right-to-left override would make the rest of a line read backwards).
/// One character in, one out, so column widths hold. Borrows when nothing needs escaping.
pub fn printable(s: &str) -> Cow<'_, str> {
    if s.chars().any(unsafe_to_print) {
        Cow::Owned(
            s.chars()
                .map(|c| if unsafe_to_print(c) { ' ' } else { c })
                .collect(),
        )
    } else {
        Cow::Borrowed(s)
    }
}

/// A [`fmt::Write`] that passes text on through [`printable`]'s rule: every character that
/// could drive a terminal becomes a space. [`crate::Error`]'s `Display` writes through one.
pub(crate) struct PrintableWriter<'a, W: fmt::Write + ?Sized>(&'a mut W);

impl<'a, W: fmt::Write + ?Sized> PrintableWriter<'a, W> {
    pub(crate) fn new(inner: &'a mut W) -> Self {
        PrintableWriter(inner)
    }
}

impl<W: fmt::Write + ?Sized> fmt::Write for PrintableWriter<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Runs of safe text pass whole; each unsafe character becomes one space.
        let mut rest = s;
        while let Some(i) = rest.find(unsafe_to_print) {
            self.0.write_str(&rest[..i])?;
            self.0.write_char(' ')?;
            let width = rest[i..].chars().next().map_or(1, char::len_utf8);
            rest = &rest[i + width..];
        }
        self.0.write_str(rest)
    }
}

fn unsafe_to_print(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_and_bidi_characters_become_spaces() {
        // spec/profile-format.md "Reports".
        assert_eq!(printable("a\u{1b}[2Jb"), "a [2Jb");
        assert_eq!(printable("x\u{202e}y\u{2066}z\n"), "x y z ");
        assert!(matches!(
            printable("RmsNorm µs"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn the_writer_escapes_as_printable_does() {
        // spec/profile-format.md "Reports": one rule for names and for error messages.
        use std::fmt::Write as _;
        for s in [
            "a\u{1b}]0;pwned\u{7}b",
            "µ\u{9b}x\u{202e}",
            "plain",
            "\u{7f}\n",
        ] {
            let mut out = String::new();
            write!(super::PrintableWriter::new(&mut out), "{s}").unwrap();
            assert_eq!(out, printable(s), "{s:?}");
        }
    }
}
