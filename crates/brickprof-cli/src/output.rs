//! Standard output of the CLI. A closed pipe (`brickprof report p.json | head`) ends the
//! printing quietly: the command still finishes its work (files are still written) and exits 0.
//! Every CLI print goes through [`Stdout`]; `println!` would panic on a closed pipe.

use std::io::Write;
use std::path::PathBuf;

use brickprof::{Error, Result};

/// The CLI's standard output; see the module docs.
#[derive(Debug, Default)]
pub struct Stdout {
    /// The reader went away: print nothing more.
    closed: bool,
}

impl Stdout {
    /// Print `text` (written and flushed at once). A closed pipe is not an error; any other
    /// write fault (`/dev/full`) is.
    pub fn print(&mut self, text: &str) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(source) => Err(Error::Io {
                path: PathBuf::from("<standard output>"),
                source,
            }),
        }
    }

    /// Print `line` and a newline, every control character in it shown as a space.
    pub fn safe_line(&mut self, line: &str) -> Result<()> {
        self.line(&printable(line))
    }

    /// Print `line` and a newline.
    pub fn line(&mut self, line: &str) -> Result<()> {
        self.print(&format!("{line}\n"))
    }
}

/// Print an error line on standard error; a closed standard error is ignored (never a panic).
pub fn print_error(message: &str) {
    let _ = writeln!(
        std::io::stderr().lock(),
        "brickprof: error: {}",
        printable(message)
    );
}

/// Print a note on standard error (what was written where): never a panic on a closed standard
/// error, never a raw control character (a path given on the command line can hold one).
pub fn note(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", printable(message));
}

/// `text` as brickprof prints what files and users supply: every character that could drive a
/// terminal or reorder the line (control and bidirectional formatting characters) shown as a
/// space ([`brickprof::output::printable`], the library's one rule).
pub fn printable(text: &str) -> String {
    brickprof::output::printable(text).into_owned()
}
