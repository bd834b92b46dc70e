//! [`RowKey`]: a per-layer row as a saved profile names it (a layer number, `"model"` or
//! `"unassigned"`). A leaf, so that every part of a profile can name rows.

use serde::{Deserialize, Serialize};

use crate::model::LayerRow;

/// A per-layer row as saved: a layer number, `"model"` or `"unassigned"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RowKey {
    /// Layer `n` (a number; a decimal string reads too, spec/profile-format.md "Large
    /// integers").
    Layer(
        #[serde(
            serialize_with = "crate::base::exact_int::ser_usize",
            deserialize_with = "crate::base::exact_int::de_usize"
        )]
        usize,
    ),
    /// `"model"` or `"unassigned"`.
    Named(NamedRow),
}

/// The non-numbered rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NamedRow {
    /// Outside any layer.
    Model,
    /// Out-of-range layer index.
    Unassigned,
}

impl From<LayerRow> for RowKey {
    fn from(r: LayerRow) -> Self {
        match r {
            LayerRow::Layer(n) => RowKey::Layer(n),
            LayerRow::Model => RowKey::Named(NamedRow::Model),
            LayerRow::Unassigned => RowKey::Named(NamedRow::Unassigned),
        }
    }
}

impl std::fmt::Display for RowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowKey::Layer(n) => write!(f, "L{n}"),
            RowKey::Named(NamedRow::Model) => f.write_str("model"),
            RowKey::Named(NamedRow::Unassigned) => f.write_str("unassigned"),
        }
    }
}
