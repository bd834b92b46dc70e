//! The GGUF file's own tokenizer: GPT-2 byte-level BPE from `tokenizer.ggml.tokens` and
//! `tokenizer.ggml.merges`. Decoding is exact; encoding uses a simplified GPT-2 pre-tokenizer
//! (words with their leading space, digit runs, punctuation runs, whitespace), enough for
//! plain-text prompts.

use std::collections::HashMap;

use candle_core::quantized::gguf_file::Content;

/// Token ids to text and back, from the GGUF metadata.
pub struct Vocab {
    tokens: Vec<String>,
    ids: HashMap<String, u32>,
    merges: HashMap<(String, String), usize>,
}

/// GPT-2's byte -> printable char table (bytes that are printable map to themselves).
fn byte_to_char() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        table[b as usize] = if printable {
            b as char
        } else {
            let c = char::from_u32(next).unwrap_or('?');
            next += 1;
            c
        };
    }
    table
}

impl Vocab {
    /// Read the vocabulary from a GGUF file's metadata.
    pub fn from_gguf(content: &Content) -> Result<Vocab, String> {
        let get = |k: &str| {
            content
                .metadata
                .get(k)
                .ok_or_else(|| format!("the GGUF file has no {k}"))
        };
        let tokens: Vec<String> = get("tokenizer.ggml.tokens")?
            .to_vec()
            .map_err(|e| e.to_string())?
            .iter()
            .map(|v| v.to_string().cloned().unwrap_or_default())
            .collect();
        let merges = match get("tokenizer.ggml.merges") {
            Ok(v) => v
                .to_vec()
                .map_err(|e| e.to_string())?
                .iter()
                .enumerate()
                .filter_map(|(rank, m)| {
                    let m = m.to_string().ok()?;
                    let (a, b) = m.split_once(' ')?;
                    Some(((a.to_string(), b.to_string()), rank))
                })
                .collect(),
            Err(_) => HashMap::new(),
        };
        let ids = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        Ok(Vocab {
            tokens,
            ids,
            merges,
        })
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// The text of `ids` (byte-level BPE symbols mapped back to bytes, then UTF-8, lossy).
    pub fn decode(&self, ids: &[u32]) -> String {
        let table = byte_to_char();
        let mut reverse = HashMap::new();
        for (b, c) in table.iter().enumerate() {
            reverse.insert(*c, b as u8);
        }
        let mut bytes = Vec::new();
        for &id in ids {
            let Some(tok) = self.tokens.get(id as usize) else {
                continue;
            };
            for c in tok.chars() {
                match reverse.get(&c) {
                    Some(&b) => bytes.push(b),
                    None => bytes.extend(c.to_string().as_bytes()),
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The ids of `text`: pre-tokenized into words, each byte-level BPE-merged by merge rank.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        let table = byte_to_char();
        let mut out = Vec::new();
        for piece in pre_tokenize(text) {
            let mut symbols: Vec<String> = piece
                .bytes()
                .map(|b| table[b as usize].to_string())
                .collect();
            loop {
                let best = symbols
                    .windows(2)
                    .enumerate()
                    .filter_map(|(i, w)| {
                        self.merges
                            .get(&(w[0].clone(), w[1].clone()))
                            .map(|&r| (r, i))
                    })
                    .min();
                let Some((_, i)) = best else { break };
                let merged = format!("{}{}", symbols[i], symbols[i + 1]);
                symbols.splice(i..i + 2, [merged]);
            }
            for s in symbols {
                let id = self
                    .ids
                    .get(&s)
                    .ok_or_else(|| format!("the vocabulary has no token for {s:?}"))?;
                out.push(*id);
            }
        }
        Ok(out)
    }
}

#[derive(PartialEq, Clone, Copy)]
enum Class {
    Letter,
    Digit,
    Space,
    Other,
}

fn class(c: char) -> Class {
    if c.is_alphabetic() {
        Class::Letter
    } else if c.is_numeric() {
        Class::Digit
    } else if c.is_whitespace() {
        Class::Space
    } else {
        Class::Other
    }
}

/// GPT-2-like pre-tokenization: ` ?letters`, single digits, ` ?punctuation`, whitespace runs.
pub(crate) fn pre_tokenize(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let mut start = i;
        let mut cls = class(chars[i]);
        // A single space attaches to the word that follows it.
        if chars[i] == ' ' && i + 1 < chars.len() && class(chars[i + 1]) != Class::Space {
            i += 1;
            cls = class(chars[i]);
        } else if cls == Class::Space {
            // Whitespace run; leave the last space for the next word.
            while i + 1 < chars.len() && class(chars[i + 1]) == Class::Space {
                i += 1;
            }
            if i + 1 < chars.len() && chars[i] == ' ' && i > start {
                out.push(chars[start..i].iter().collect());
                continue;
            }
            out.push(chars[start..=i].iter().collect());
            i += 1;
            continue;
        }
        if cls == Class::Digit {
            out.push(chars[start..=i].iter().collect());
            i += 1;
            continue;
        }
        while i + 1 < chars.len() && class(chars[i + 1]) == cls {
            i += 1;
        }
        out.push(chars[start..=i].iter().collect());
        i += 1;
        start = i;
        let _ = start;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_tokenizer_keeps_leading_spaces_with_words() {
        assert_eq!(
            pre_tokenize("The capital of France is 42!"),
            ["The", " capital", " of", " France", " is", " 4", "2", "!"]
        );
        assert_eq!(pre_tokenize("a  b"), ["a", " ", " b"]);
    }

    #[test]
    fn byte_table_is_a_bijection() {
        let t = byte_to_char();
        let mut seen: Vec<char> = t.to_vec();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 256);
        assert_eq!(t[b' ' as usize], 'Ġ');
    }
}
