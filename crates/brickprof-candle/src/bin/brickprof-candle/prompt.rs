//! Where `generate`'s prompt comes from: `--prompt TEXT`, the built-in `--long-prompt` (at
//! least [`LONG_PROMPT_MIN_TOKENS`] tokens, so the prefill is a real workload and attention's
//! cost against the context has a range to be fitted over), or `--prompt-file PATH`.

use std::path::{Path, PathBuf};

use brickprof::output::printable;

use crate::vocab::Vocab;

/// The built-in long prompt (plain English prose, ASCII).
const LONG_PROMPT: &str = include_str!("long_prompt.txt");

/// The fewest tokens the built-in long prompt must encode to.
pub const LONG_PROMPT_MIN_TOKENS: usize = 256;

/// A prompt's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    /// Text given on the command line.
    Text(String),
    /// The built-in long prompt.
    Long,
    /// A UTF-8 text file (its trailing whitespace dropped).
    File(PathBuf),
}

/// A prompt, read from its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    source: PromptSource,
    text: String,
}

/// Its path, escaped for a message.
fn shown(path: &Path) -> String {
    printable(&path.display().to_string()).into_owned()
}

impl Prompt {
    /// Read the prompt of `source`. A file that cannot be read, is not UTF-8 or holds no text
    /// is an error naming it.
    pub fn read(source: PromptSource) -> Result<Prompt, String> {
        let text = match &source {
            PromptSource::Text(t) => t.clone(),
            PromptSource::Long => LONG_PROMPT.trim_end().to_string(),
            PromptSource::File(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read the prompt file {}: {e}", shown(path)))?;
                let text = text.trim_end().to_string();
                if text.trim_start().is_empty() {
                    return Err(format!("the prompt file {} holds no text", shown(path)));
                }
                text
            }
        };
        Ok(Prompt { source, text })
    }

    /// The prompt's token ids. The built-in long prompt must give at least
    /// [`LONG_PROMPT_MIN_TOKENS`]; a file's encoding error names the file.
    pub fn encode(&self, vocab: &Vocab) -> Result<Vec<u32>, String> {
        let ids = vocab.encode(&self.text).map_err(|e| match &self.source {
            PromptSource::File(path) => format!("the prompt file {}: {e}", shown(path)),
            _ => e,
        })?;
        if ids.is_empty() {
            return Err("the prompt encodes to no token".into());
        }
        if self.source == PromptSource::Long && ids.len() < LONG_PROMPT_MIN_TOKENS {
            return Err(format!(
                "the built-in long prompt encodes to {} tokens, fewer than {LONG_PROMPT_MIN_TOKENS}",
                ids.len()
            ));
        }
        Ok(ids)
    }

    /// What stands for the prompt before the generated text: the prompt when it fits on a
    /// line, else an ellipsis.
    pub fn lead(&self) -> &str {
        if self.text.chars().count() <= 100 && !self.text.contains('\n') {
            &self.text
        } else {
            "…"
        }
    }

    /// The prompt as a one-line header shows it: whole when short, else its length and its
    /// last words (escaped).
    pub fn headline(&self) -> String {
        const SHORT: usize = 100;
        const TAIL: usize = 60;
        let n = self.text.chars().count();
        if n <= SHORT {
            return format!("{:?}", self.text);
        }
        let tail: String = self.text.chars().skip(n - TAIL).collect();
        let tail = tail.split_whitespace().collect::<Vec<_>>().join(" ");
        let origin = match &self.source {
            PromptSource::Long => "built-in long prompt".to_string(),
            PromptSource::File(path) => shown(path),
            PromptSource::Text(_) => "text".to_string(),
        };
        format!("{origin}, {n} characters ending {:?}", printable(&tail))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // spec/profile-format.md "Latency: TTFT and TPOT" (against an engine's own clock).
    /// Every piece the pre-tokenizer makes becomes at least one token (BPE merges only within
    /// a piece), so the pieces bound the token count from below, without the model's
    /// vocabulary. `generate --long-prompt` also checks the real count at run time.
    #[test]
    fn the_long_prompt_encodes_to_at_least_256_tokens() {
        let p = Prompt::read(PromptSource::Long).unwrap();
        let pieces = crate::vocab::pre_tokenize(&p.text);
        assert!(
            pieces.len() >= LONG_PROMPT_MIN_TOKENS,
            "{} pieces",
            pieces.len()
        );
        assert!(p.text.is_ascii(), "plain ASCII prose");
        assert_eq!(
            p.text,
            p.text.trim_end(),
            "no trailing newline in the prompt"
        );
    }

    // spec/profile-format.md "Latency: TTFT and TPOT": an error names the prompt file.
    #[test]
    fn prompt_file_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-prompt.txt");
        let e = Prompt::read(PromptSource::File(missing.clone())).unwrap_err();
        assert!(e.contains("no-such-prompt.txt"), "{e}");
        assert!(e.starts_with("cannot read the prompt file"), "{e}");

        let blank = dir.path().join("blank.txt");
        std::fs::write(&blank, " \n\t\n").unwrap();
        let e = Prompt::read(PromptSource::File(blank)).unwrap_err();
        assert!(e.contains("blank.txt") && e.contains("no text"), "{e}");

        let binary = dir.path().join("latin1.txt");
        std::fs::write(&binary, b"caf\xe9").unwrap();
        let e = Prompt::read(PromptSource::File(binary)).unwrap_err();
        assert!(e.contains("latin1.txt"), "{e}");

        // A name with a control character is escaped in the message.
        let odd = dir.path().join("odd\u{1b}[31m.txt");
        let e = Prompt::read(PromptSource::File(odd)).unwrap_err();
        assert!(!e.contains('\u{1b}'), "{e:?}");
    }

    #[test]
    fn a_prompt_file_is_read_without_its_trailing_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.txt");
        std::fs::write(&path, "The capital of France is\n").unwrap();
        let p = Prompt::read(PromptSource::File(path)).unwrap();
        assert_eq!(p.text, "The capital of France is");
        assert_eq!(p.headline(), "\"The capital of France is\"");
    }

    #[test]
    fn a_long_prompt_headline_is_one_short_line() {
        let p = Prompt::read(PromptSource::Long).unwrap();
        let h = p.headline();
        assert!(h.starts_with("built-in long prompt, "), "{h}");
        assert!(h.ends_with("automated was\""), "{h}");
        assert!(!h.contains('\n') && h.chars().count() < 140, "{h}");
    }
}
