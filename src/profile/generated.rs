//! The tokens a run generated, saved beside its profile as `tokens.json`, and the first token
//! where two runs differ (spec/divergence.md "The token axis"). A leaf above `json_file`:
//! the engine writes it, `brickprof diff` reads it.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::base::printable::printable;
use crate::io::json_file::{self, FileKind};
use crate::{io::RunId, Error, Result};

/// The name of the generated-tokens file beside a run's files.
pub const TOKENS_FILE: &str = "tokens.json";

/// The format version of `tokens.json` this build writes and reads.
pub(crate) const TOKENS_FORMAT_VERSION: u32 = 1;

/// The tokens a run generated, in order: their ids and, for people, their text.
///
/// ```
/// use brickprof::profile::GeneratedTokens;
/// let tokens = GeneratedTokens::new(vec![5, 7, 9], vec![" a".into(), " b".into(), " c".into()])?;
/// assert!(GeneratedTokens::new(vec![5, 8], vec![" a".into()]).is_err()); // one text per id
/// # let _ = tokens;
/// # Ok::<(), brickprof::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratedTokens {
    ids: Vec<u32>,
    text: Texts,
    /// The run the tokens belong to, when saved into a run folder (spec/profile-format.md "A
    /// run folder"); `None` in older files and tokens saved alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_id: Option<RunId>,
}

/// The tokens' texts, lean: one string and where each text ends in it (4 bytes per text
/// besides its own bytes, where a `Vec<String>` takes 24 and an allocation each). In files, a
/// JSON array of strings, read straight into this form.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Texts {
    all: String,
    ends: Vec<u32>,
}

impl Texts {
    /// Append `s`; `false` when the texts would pass 4 GiB (more than a file brickprof reads).
    fn push(&mut self, s: &str) -> bool {
        match u32::try_from(self.all.len() + s.len()) {
            Ok(end) => {
                self.all.push_str(s);
                self.ends.push(end);
                true
            }
            Err(_) => false,
        }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)? as usize;
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j] as usize);
        Some(&self.all[start..end])
    }

    fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or_default())
    }
}

impl Serialize for Texts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Texts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Seq;
        /// One text, appended where it is read (no `String` per text).
        struct Piece<'a>(&'a mut Texts);
        impl<'de> serde::de::Visitor<'de> for Seq {
            type Value = Texts;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of token texts")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Texts, A::Error> {
                let mut texts = Texts::default();
                while seq.next_element_seed(Piece(&mut texts))?.is_some() {}
                Ok(texts)
            }
        }
        impl<'de> serde::de::DeserializeSeed<'de> for Piece<'_> {
            type Value = ();
            fn deserialize<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> std::result::Result<(), D::Error> {
                d.deserialize_str(self)
            }
        }
        impl<'de> serde::de::Visitor<'de> for Piece<'_> {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a token text")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<(), E> {
                if self.0.push(s) {
                    Ok(())
                } else {
                    Err(E::custom("the token texts pass 4 GiB"))
                }
            }
        }
        d.deserialize_seq(Seq)
    }
}

/// The file form: a header, then the tokens (no `#[serde(flatten)]`: flattening buffers every
/// value of the file as a generic value first, about 10 times the file's size).
#[derive(Serialize, Deserialize)]
struct TokensFile {
    kind: FileKind,
    format_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run_id: Option<RunId>,
    ids: Vec<u32>,
    text: Texts,
}

/// One side of a [`TokenDifference`]: a token, or none where that run generated fewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenAt {
    /// The token id.
    pub id: u32,
    /// Its text.
    pub text: String,
}

/// The first position where two runs generated different tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenDifference {
    /// The position among the generated tokens (0: the first token after the prompt).
    pub position: usize,
    /// The reference's token there (`None`: the reference generated fewer).
    pub reference: Option<TokenAt>,
    /// The candidate's token there (`None`: the candidate generated fewer).
    pub candidate: Option<TokenAt>,
}

impl GeneratedTokens {
    /// Tokens from their ids and texts; an [`Error::InvalidValue`] when the counts differ (or
    /// the texts pass 4 GiB together).
    pub fn new(ids: Vec<u32>, text: Vec<String>) -> Result<GeneratedTokens> {
        if ids.len() != text.len() {
            return Err(Error::invalid_value(
                "token texts",
                format!("{} texts", text.len()),
                format!("one text per token id ({})", ids.len()),
            ));
        }
        let mut texts = Texts::default();
        if !text.iter().all(|t| texts.push(t)) {
            return Err(Error::invalid_value(
                "token texts",
                format!("{} texts", text.len()),
                "at most 4 GiB of text",
            ));
        }
        Self::checked(ids, texts)
    }

    /// Ids and texts of equal counts.
    fn checked(ids: Vec<u32>, text: Texts) -> Result<GeneratedTokens> {
        if ids.len() != text.len() {
            return Err(Error::invalid_value(
                "token texts",
                format!("{} texts", text.len()),
                format!("one text per token id ({})", ids.len()),
            ));
        }
        Ok(GeneratedTokens {
            ids,
            text,
            run_id: None,
        })
    }

    /// The run the tokens belong to, when they were saved into a run folder.
    pub(crate) fn run_id(&self) -> Option<&RunId> {
        self.run_id.as_ref()
    }

    /// Stamp the tokens as a file of run `id` (`None`: of no run folder).
    pub fn set_run_id(&mut self, id: Option<RunId>) {
        self.run_id = id;
    }

    /// The token ids.
    pub(crate) fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// The text of token `i` (`None` past the last token).
    pub(crate) fn text(&self, i: usize) -> Option<&str> {
        self.text.get(i)
    }

    /// The tokens' texts, in order.
    #[cfg(test)]
    pub(crate) fn texts(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.text.iter()
    }

    /// Save as `path` (atomically).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        json_file::save_json(
            path.as_ref(),
            &TokensFile {
                kind: FileKind::Tokens,
                format_version: TOKENS_FORMAT_VERSION,
                run_id: self.run_id.clone(),
                ids: self.ids.clone(),
                text: self.text.clone(),
            },
        )
    }

    /// Load a `tokens.json`: another kind or version, or ids and texts of different counts,
    /// are errors naming the file. Memory: the file's text while it is parsed, and the tokens
    /// read straight into their lean form (4 bytes per id, 4 bytes plus its UTF-8 per text;
    /// spec/divergence.md "The token axis").
    pub fn load(path: impl AsRef<Path>) -> Result<GeneratedTokens> {
        let path = path.as_ref();
        let f: TokensFile = json_file::load(
            path,
            FileKind::Tokens,
            TOKENS_FORMAT_VERSION..=TOKENS_FORMAT_VERSION,
        )?;
        let mut tokens = GeneratedTokens::checked(f.ids, f.text).map_err(|_| {
            Error::invalid(
                path,
                "\"ids\" and \"text\" hold different numbers of tokens",
            )
        })?;
        tokens.run_id = f.run_id;
        Ok(tokens)
    }

    /// The first position where `candidate` generated another token than `self` (or where one
    /// run stops before the other); `None` when both generated the same ids.
    pub(crate) fn first_difference(&self, candidate: &GeneratedTokens) -> Option<TokenDifference> {
        let at = |t: &GeneratedTokens, i: usize| {
            t.ids.get(i).map(|&id| TokenAt {
                id,
                text: t.text(i).unwrap_or_default().to_string(),
            })
        };
        let n = self.ids.len().max(candidate.ids.len());
        (0..n)
            .find(|&i| self.ids.get(i) != candidate.ids.get(i))
            .map(|position| TokenDifference {
                position,
                reference: at(self, position),
                candidate: at(candidate, position),
            })
    }
}

impl fmt::Display for TokenDifference {
    /// `position 3 (reference ' Paris' id 7042 vs candidate ' the' id 260)`, texts escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |t: &Option<TokenAt>| match t {
            Some(t) => format!("'{}' id {}", printable(&t.text), t.id),
            None => "no token (the run stopped)".to_string(),
        };
        write!(
            f,
            "position {} (reference {} vs candidate {})",
            self.position,
            side(&self.reference),
            side(&self.candidate)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(ids: &[u32]) -> GeneratedTokens {
        let text = ids.iter().map(|i| format!("t{i}")).collect();
        GeneratedTokens::new(ids.to_vec(), text).unwrap()
    }

    #[test]
    fn the_first_differing_position_is_named() {
        // spec/divergence.md "The token axis".
        assert_eq!(toks(&[1, 2, 3]).first_difference(&toks(&[1, 2, 3])), None);
        let d = toks(&[1, 2, 3])
            .first_difference(&toks(&[1, 4, 3]))
            .unwrap();
        assert_eq!(d.position, 1);
        assert_eq!(d.reference.unwrap().id, 2);
        assert_eq!(d.candidate.unwrap().id, 4);
        let d = toks(&[1, 2]).first_difference(&toks(&[1, 2, 3])).unwrap();
        assert!(d.to_string().contains("reference no token"), "{d}");
        assert_eq!(
            (d.position, d.reference, d.candidate.map(|t| t.id)),
            (2, None, Some(3))
        );
    }

    #[test]
    fn texts_from_files_are_escaped() {
        // spec/divergence.md "The token axis": names from files are escaped.
        let a = GeneratedTokens::new(vec![1], vec!["\u{1b}[2J".into()]).unwrap();
        let d = toks(&[2]).first_difference(&a).unwrap();
        assert!(!d.to_string().contains('\u{1b}'));
    }

    #[test]
    fn save_load_round_trips_and_bad_files_name_themselves() {
        // spec/divergence.md "The token axis".
        let dir = std::env::temp_dir().join(format!("bp-tokens-{}", std::process::id()));
        let path = dir.join(TOKENS_FILE);
        let mut t = toks(&[3, 1, 4]);
        t.save(&path).unwrap();
        assert_eq!(GeneratedTokens::load(&path).unwrap(), t);
        // spec/profile-format.md "A run folder": the tokens carry the run id.
        t.set_run_id(Some(RunId::new()));
        t.save(&path).unwrap();
        assert_eq!(GeneratedTokens::load(&path).unwrap(), t);
        // Texts that JSON escapes, empty texts and multi-byte ones keep their boundaries.
        let texts = ["", "a\"b\n", "é", "", "\u{1b}"].map(String::from);
        let t = GeneratedTokens::new(vec![1, 2, 3, 4, 5], texts.to_vec()).unwrap();
        t.save(&path).unwrap();
        let back = GeneratedTokens::load(&path).unwrap();
        assert_eq!(back.texts().collect::<Vec<_>>(), texts);
        assert_eq!((back.text(2), back.text(5)), (Some("é"), None));
        std::fs::write(
            &path,
            r#"{"kind":"tokens","format_version":1,"ids":[1,2],"text":["a"]}"#,
        )
        .unwrap();
        let e = GeneratedTokens::load(&path).unwrap_err();
        assert!(matches!(e, Error::Invalid { .. }), "{e}");
        std::fs::write(&path, r#"{"kind":"profile","format_version":1}"#).unwrap();
        assert!(GeneratedTokens::load(&path).is_err());
        assert!(GeneratedTokens::new(vec![1], vec![]).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
