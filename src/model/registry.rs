//! The names of a profiler's bricks: the built-in [`BrickId`]s, then dynamic bricks registered
//! by name. Registration and by-name lookup hash (FNV); the hot path uses the handle only.

use fnv::FnvHashMap;

use crate::{BrickCategory, BrickHandle, BrickId, Error, Result};

/// Slot value meaning "no brick" (for example, a tile outside any brick).
pub(crate) const NO_BRICK: u16 = u16::MAX;

/// Built-in and dynamic brick names, indexed by slot.
#[derive(Debug, Clone, Default)]
pub struct BrickRegistry {
    dynamic_names: Vec<String>,
    dynamic_categories: Vec<BrickCategory>,
    by_name: FnvHashMap<String, u16>,
}

impl BrickRegistry {
    /// Number of slots (built-in plus dynamic).
    pub(crate) fn len(&self) -> usize {
        BrickId::COUNT + self.dynamic_names.len()
    }

    /// The handle for `name`: a built-in brick if it is a built-in brick's canonical name, else
    /// the dynamic brick of that exact name, registered now (with `category`) if it is new.
    pub(crate) fn register(&mut self, name: &str, category: BrickCategory) -> Result<BrickHandle> {
        if let Some(h) = self.lookup(name) {
            return Ok(h);
        }
        let slot = self.len();
        if slot >= NO_BRICK as usize {
            return Err(Error::OverLimit {
                limit: crate::base::limits::Limit::Bricks,
                requested: slot + 1,
            });
        }
        if name.is_empty() {
            return Err(Error::invalid_value(
                "brick name",
                name,
                "a brick name cannot be empty",
            ));
        }
        if crate::Phase::of_pass_range(name).is_some() {
            // spec/imports.md "Pass ranges": the name of a pass's vendor range.
            return Err(Error::invalid_value(
                "brick name",
                name,
                "`pass/{phase}` and `pass/{phase}/{n}` name a pass's vendor range, not a brick",
            ));
        }
        self.dynamic_names.push(name.to_string());
        self.dynamic_categories.push(category);
        self.by_name.insert(name.to_string(), slot as u16);
        Ok(BrickHandle(slot as u16))
    }

    /// The handle for `name` if it is a built-in brick's canonical name (`"RmsNorm"`, exactly)
    /// or a registered name. Aliases (`"gate"`, `"norm"`) are for parsing user input
    /// ([`BrickId`]'s `FromStr`), not for registration: an MoE `"gate"` is its own brick, not
    /// [`BrickId::GateProjection`]. Hashes; not for the hot path.
    pub fn lookup(&self, name: &str) -> Option<BrickHandle> {
        if let Some(&slot) = self.by_name.get(name) {
            return Some(BrickHandle(slot));
        }
        BrickId::ALL
            .iter()
            .find(|id| id.name() == name)
            .map(|&id| BrickHandle::from(id))
    }

    /// The name of a slot (`None` for a slot this registry does not have).
    pub(crate) fn name(&self, h: BrickHandle) -> Option<&str> {
        match h.builtin() {
            Some(id) => Some(id.name()),
            None => self
                .dynamic_names
                .get(h.slot() - BrickId::COUNT)
                .map(String::as_str),
        }
    }

    /// The category of a slot.
    pub(crate) fn category(&self, h: BrickHandle) -> Option<BrickCategory> {
        match h.builtin() {
            Some(id) => Some(id.category()),
            None => self
                .dynamic_categories
                .get(h.slot() - BrickId::COUNT)
                .copied(),
        }
    }

    /// Registered (dynamic) handles sorted by name.
    pub(crate) fn dynamic_by_name(&self) -> Vec<BrickHandle> {
        let mut hs: Vec<BrickHandle> = (BrickId::COUNT..self.len())
            .map(|s| BrickHandle(s as u16))
            .collect();
        hs.sort_by(|a, b| self.name(*a).cmp(&self.name(*b)));
        hs
    }

    /// Every handle, built-in first, in slot order.
    pub fn handles(&self) -> impl Iterator<Item = BrickHandle> {
        (0..self.len() as u16).map(BrickHandle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_is_idempotent_and_builtin_names_map_to_builtins() {
        let mut r = BrickRegistry::default();
        let a = r.register("moe_router", BrickCategory::Ffn).unwrap();
        let b = r.register("moe_router", BrickCategory::Other).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.slot(), BrickId::COUNT);
        assert_eq!(r.name(a), Some("moe_router"));
        assert_eq!(r.category(a), Some(BrickCategory::Ffn));
        assert_eq!(
            r.register("RmsNorm", BrickCategory::Other).unwrap(),
            BrickId::RmsNorm.into()
        );
        assert_eq!(r.len(), BrickId::COUNT + 1);
        // Aliases parse as built-ins, but register as bricks of their own (an MoE "gate").
        assert_eq!("gate".parse::<BrickId>().unwrap(), BrickId::GateProjection);
        let gate = r.register("gate", BrickCategory::Ffn).unwrap();
        assert_ne!(gate, BrickId::GateProjection.into());
        assert_eq!(r.name(gate), Some("gate"));
        assert_ne!(
            r.register("rmsnorm", BrickCategory::Other).unwrap(),
            BrickId::RmsNorm.into()
        );
        assert!(r.register("", BrickCategory::Other).is_err());
        assert_eq!(r.name(BrickHandle(999)), None);
    }
}
