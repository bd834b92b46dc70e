//! [`RowKey`]: a row of the per-layer breakdown, as the profiler fills it and as a saved profile
//! names it (a layer number, `"model"` or `"unassigned"`). A leaf, so that every part of a
//! profile can name rows.

use serde::{Deserialize, Serialize};

/// A row of the per-layer breakdown: which row a measurement lands in. Saved as a layer
/// number, `"model"` or `"unassigned"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(from = "SavedRow", into = "SavedRow")]
pub enum RowKey {
    /// Inside layer `n` (between `begin_layer(n)` and `end_layer()`). Saved as a number; a
    /// decimal string reads too (spec/profile-format.md "Large integers").
    Layer(usize),
    /// Outside any layer (embedding, LM head, sampling, ...): `"model"`.
    Model,
    /// Inside a layer whose index was out of range (counted, never a panic): `"unassigned"`.
    Unassigned,
}

/// The saved form of a [`RowKey`]: a number, or the name of a non-numbered row.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(untagged)]
enum SavedRow {
    Layer(
        #[serde(
            serialize_with = "crate::base::exact_int::ser_usize",
            deserialize_with = "crate::base::exact_int::de_usize"
        )]
        usize,
    ),
    Named(NamedRow),
}

/// The non-numbered rows, by name.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum NamedRow {
    Model,
    Unassigned,
}

impl From<SavedRow> for RowKey {
    fn from(r: SavedRow) -> Self {
        match r {
            SavedRow::Layer(n) => RowKey::Layer(n),
            SavedRow::Named(NamedRow::Model) => RowKey::Model,
            SavedRow::Named(NamedRow::Unassigned) => RowKey::Unassigned,
        }
    }
}

impl From<RowKey> for SavedRow {
    fn from(r: RowKey) -> Self {
        match r {
            RowKey::Layer(n) => SavedRow::Layer(n),
            RowKey::Model => SavedRow::Named(NamedRow::Model),
            RowKey::Unassigned => SavedRow::Named(NamedRow::Unassigned),
        }
    }
}

impl std::fmt::Display for RowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowKey::Layer(n) => write!(f, "L{n}"),
            RowKey::Model => f.write_str("model"),
            RowKey::Unassigned => f.write_str("unassigned"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_save_as_numbers_and_names() {
        let rows = [RowKey::Layer(3), RowKey::Model, RowKey::Unassigned];
        let json = serde_json::to_string(&rows).unwrap();
        assert_eq!(json, r#"[3,"model","unassigned"]"#);
        assert_eq!(serde_json::from_str::<Vec<RowKey>>(&json).unwrap(), rows);
        assert_eq!(
            serde_json::from_str::<RowKey>(r#""7""#).unwrap(),
            RowKey::Layer(7)
        );
        assert!(serde_json::from_str::<RowKey>(r#""layer""#).is_err());
        assert!(RowKey::Layer(usize::MAX) < RowKey::Model && RowKey::Model < RowKey::Unassigned);
    }
}
