//! Names from files made safe to print: the one escaper every report and error message uses
//! for text a file supplied (brick names, `tool_version`, hosts), so that a file cannot drive
//! the terminal (spec/profile-format.md "Reports").

use std::borrow::Cow;

/// `s` with every character that could drive a terminal or reorder the text around it shown
/// as a space: control characters (an ESC sequence, a bell, a newline that would split a row)
/// and the bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A..=U+202E,
/// U+2066..=U+2069; a right-to-left override would make the rest of a line read backwards).
/// One character in, one out, so column widths hold. Borrows when nothing needs escaping.
pub(crate) fn printable(s: &str) -> Cow<'_, str> {
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
}
