//! A CSV record reader for vendor files (RFC 4180: quoted fields, `""` for a quote, a quoted
//! field may span lines), one record at a time with bounded memory: a record longer than
//! [`MAX_RECORD_BYTES`] is an error, never a larger buffer. Every fault names the file and
//! the line (spec/imports.md "Bad files").

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The longest record read (bytes, quotes and separators included). Nsight Compute's widest
/// raw rows are a few kB; a record longer than this is not one of a vendor tool's.
pub(crate) const MAX_RECORD_BYTES: usize = 1 << 20;

/// Fields of one record, reusing their buffers from record to record.
#[derive(Debug, Default)]
pub(crate) struct Record {
    text: String,
    ends: Vec<usize>,
    /// The 1-based line the record starts on.
    pub(crate) line: u64,
}

impl Record {
    /// Field `i`, if the record has it.
    pub(crate) fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.text[start..end])
    }

    /// How many fields it has.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The fields in order.
    pub(crate) fn fields(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

/// Reads the records of one CSV file.
pub(crate) struct CsvReader<R> {
    input: R,
    path: PathBuf,
    format: &'static str,
    line: u64,
    raw: Vec<u8>,
}

impl<R: BufRead> CsvReader<R> {
    /// A reader of `input`, the file at `path`, for the importer named `format`.
    pub(crate) fn new(input: R, path: &Path, format: &'static str) -> Self {
        CsvReader {
            input,
            path: path.to_path_buf(),
            format,
            line: 0,
            raw: Vec::new(),
        }
    }

    /// The last line read (0 before the first).
    pub(crate) fn line(&self) -> u64 {
        self.line
    }

    /// An [`Error::Import`] at `line` of this file.
    pub(crate) fn error(&self, line: u64, message: impl Into<String>) -> Error {
        Error::Import {
            path: self.path.clone(),
            format: self.format,
            line,
            message: message.into(),
        }
    }

    /// The next physical line, without its line ending, as raw bytes in `self.raw`; `false`
    /// at the end of the file.
    fn next_line(&mut self) -> Result<bool> {
        self.raw.clear();
        let mut limited = std::io::Read::take(self.input.by_ref(), MAX_RECORD_BYTES as u64 + 1);
        let n = limited
            .read_until(b'\n', &mut self.raw)
            .map_err(|e| Error::io(&self.path, e))?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        if self.raw.len() > MAX_RECORD_BYTES {
            return Err(self.error(
                self.line,
                format!("a line longer than {MAX_RECORD_BYTES} bytes: not a CSV record"),
            ));
        }
        if self.raw.last() == Some(&b'\n') {
            self.raw.pop();
            if self.raw.last() == Some(&b'\r') {
                self.raw.pop();
            }
        }
        Ok(true)
    }

    /// The next physical line as text (for the lines before a header); `None` at the end.
    pub(crate) fn raw_line(&mut self) -> Result<Option<(u64, String)>> {
        if !self.next_line()? {
            return Ok(None);
        }
        let text = std::str::from_utf8(&self.raw)
            .map_err(|_| self.error(self.line, "not UTF-8 text"))?
            .to_string();
        Ok(Some((self.line, text)))
    }

    /// Parse `first` (a line already read, at `line`) and as many further lines as a quoted
    /// field spanning lines needs, into `rec`.
    pub(crate) fn parse_from(&mut self, line: u64, first: &str, rec: &mut Record) -> Result<()> {
        rec.text.clear();
        rec.ends.clear();
        rec.line = line;
        let mut pending = first.to_string();
        let mut quoted = false;
        let mut at_field_start = true;
        let mut after_quote = false;
        loop {
            let mut chars = pending.chars().peekable();
            while let Some(c) = chars.next() {
                if quoted {
                    if c == '"' {
                        if chars.peek() == Some(&'"') {
                            chars.next();
                            rec.text.push('"');
                        } else {
                            quoted = false;
                            after_quote = true;
                        }
                    } else {
                        rec.text.push(c);
                    }
                    continue;
                }
                match c {
                    ',' => {
                        rec.ends.push(rec.text.len());
                        at_field_start = true;
                        after_quote = false;
                    }
                    '"' if at_field_start => {
                        quoted = true;
                        at_field_start = false;
                    }
                    _ if after_quote => {
                        return Err(self.error(
                            line,
                            format!("field {}: text after a closing quote", rec.ends.len() + 1),
                        ))
                    }
                    '"' => {
                        return Err(self.error(
                            line,
                            format!(
                                "field {}: a quote inside an unquoted field",
                                rec.ends.len() + 1
                            ),
                        ))
                    }
                    c => {
                        rec.text.push(c);
                        at_field_start = false;
                    }
                }
            }
            if !quoted {
                break;
            }
            // A quoted field goes on past the line end.
            if rec.text.len() > MAX_RECORD_BYTES {
                return Err(self.error(
                    line,
                    format!("a record longer than {MAX_RECORD_BYTES} bytes: not a CSV record"),
                ));
            }
            match self.raw_line()? {
                Some((_, next)) => {
                    rec.text.push('\n');
                    pending = next;
                }
                None => return Err(self.error(line, "the file ends inside a quoted field")),
            }
        }
        rec.ends.push(rec.text.len());
        Ok(())
    }

    /// The next record into `rec`; `false` at the end of the file. Blank lines are skipped.
    pub(crate) fn next_record(&mut self, rec: &mut Record) -> Result<bool> {
        loop {
            let Some((line, text)) = self.raw_line()? else {
                return Ok(false);
            };
            if text.trim().is_empty() {
                continue;
            }
            self.parse_from(line, &text, rec)?;
            return Ok(true);
        }
    }
}

/// The index of the column named `name` in a header record.
pub(crate) fn column(header: &Record, name: &str) -> Option<usize> {
    header.fields().position(|f| f == name)
}

/// The index of the first column whose name starts with `prefix`.
pub(crate) fn column_starting(header: &Record, prefix: &str) -> Option<usize> {
    header.fields().position(|f| f.starts_with(prefix))
}

/// A number as vendor tools print it: digits, an optional fraction, thousands separators
/// (`16,096`, `699,109.33`); `None` when it is not one.
pub(crate) fn number(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() || t.len() > 64 {
        return None;
    }
    let mut plain = String::with_capacity(t.len());
    let mut digits = 0usize;
    let mut seen_dot = false;
    for (i, c) in t.chars().enumerate() {
        match c {
            '0'..='9' => {
                plain.push(c);
                digits += 1;
            }
            ',' if !seen_dot && digits > 0 => {}
            '.' if !seen_dot => {
                seen_dot = true;
                plain.push(c);
            }
            '-' | '+' if i == 0 => plain.push(c),
            'e' | 'E' if digits > 0 => plain.push(c),
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    plain.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str) -> Result<Vec<Vec<String>>> {
        let mut r = CsvReader::new(text.as_bytes(), Path::new("t.csv"), "test");
        let mut rec = Record::default();
        let mut out = Vec::new();
        while r.next_record(&mut rec)? {
            out.push(rec.fields().map(str::to_string).collect());
        }
        Ok(out)
    }

    #[test]
    fn quoted_fields_doubled_quotes_and_lines() {
        let got = records("\"a\",\"b \"\"c\"\"\",d\n\n\"x\ny\",1\r\n").unwrap();
        assert_eq!(got, vec![vec!["a", "b \"c\"", "d"], vec!["x\ny", "1"]]);
    }

    #[test]
    fn faults_name_the_line() {
        let e = records("a\n\"open").unwrap_err().to_string();
        assert!(e.contains("t.csv") && e.contains("line 2"), "{e}");
        let e = records("a\n\"x\"y").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("closing quote"), "{e}");
    }

    #[test]
    fn numbers_with_separators() {
        assert_eq!(number("16,096"), Some(16096.0));
        assert_eq!(number("699,109.33"), Some(699109.33));
        assert_eq!(number(" 7 "), Some(7.0));
        assert_eq!(number("n/a"), None);
        assert_eq!(number(""), None);
        assert_eq!(number(",5"), None);
        assert_eq!(number("1.2.3"), None);
    }
}
