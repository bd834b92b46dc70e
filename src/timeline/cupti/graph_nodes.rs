//! Which brick each graph node belongs to (spec/sync-modes.md "CUPTI", "Graphs").
//!
//! CUPTI calls the resource callback `GRAPHNODE_CREATED` on the thread that creates a node,
//! inside the call: during a stream capture, inside the captured launch. The external id this
//! thread's CUPTI timeline pushed last (kept in a thread-local by each mark, [`set_open`]) is
//! then the position the node was made at, so the node belongs to the brick open there. At
//! instantiation CUPTI clones each node into the executable graph and calls
//! `GRAPHNODE_CLONED` with the new node and its original: the executable's nodes, which
//! replayed kernels name in their records (`graphNodeId`), map back to a capture position.
//! Nothing is added to the graph and nothing is done per replay.

use std::cell::Cell;
use std::collections::HashMap;

use super::attribution::{position_mask, NAMESPACE_SHIFT};

thread_local! {
    /// The external id this thread's CUPTI timeline pushed last (0: none).
    static OPEN: Cell<u64> = const { Cell::new(0) };
}

/// A mark pushed `id` on this thread. Hot path: one thread-local store.
#[inline(always)]
pub(crate) fn set_open(id: u64) {
    OPEN.with(|c| c.set(id));
}

/// The external id open on this thread (0: none).
pub(crate) fn open() -> u64 {
    OPEN.with(Cell::get)
}

/// `CUgraphNodeType`s whose nodes run and leave a record: kernel, memcpy, memset.
pub(crate) fn node_runs(node_type: i32) -> bool {
    matches!(node_type, 0..=2)
}

/// The nodes made while a brick was open, and the clones made of them.
#[derive(Debug, Default)]
pub(crate) struct GraphNodes {
    /// Node id -> the external id open when it was created.
    created: HashMap<u64, u64>,
    /// Cloned node id -> its original's id.
    clones: HashMap<u64, u64>,
}

impl GraphNodes {
    /// Node `node` was created with external id `external` open (0: none; ignored).
    pub(crate) fn created(&mut self, node: u64, external: u64) {
        if external != 0 {
            self.created.insert(node, external);
        }
    }

    /// Node `node` is a clone of `original` (an instantiation): not a node of a capture.
    pub(crate) fn cloned(&mut self, node: u64, original: u64) {
        self.created.remove(&node);
        self.clones.insert(node, original);
    }

    /// Whether namespace `ns` created a node at position `from` or later.
    pub(crate) fn created_from(&self, ns: u16, from: u64) -> bool {
        self.created
            .values()
            .any(|&e| namespace(e) == ns && (e & position_mask()) >= from)
    }

    /// The clones of nodes namespace `ns` created at positions `base..=end`, each with its
    /// original's position relative to `base`, plus 1 (the sub of its replayed records' keys).
    pub(crate) fn template(&self, ns: u16, base: u64, end: u64) -> HashMap<u64, u16> {
        let mut out = HashMap::new();
        for (&node, original) in &self.clones {
            let Some(&e) = self.created.get(original) else {
                continue;
            };
            let p = e & position_mask();
            if namespace(e) != ns || p < base || p > end {
                continue;
            }
            if let Ok(rel) = u16::try_from(p - base + 1) {
                out.insert(node, rel);
            }
        }
        out
    }
}

fn namespace(external: u64) -> u16 {
    (external >> NAMESPACE_SHIFT) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// spec/sync-modes.md "CUPTI" ("Graphs"): nodes made while a brick was open map their
    /// clones back to that position; a node created then cloned at instantiation is a clone,
    /// not a capture's node; another namespace's nodes are left out.
    #[test]
    fn clones_map_back_to_the_capture_positions() {
        let ns = 1u64 << NAMESPACE_SHIFT;
        let mut g = GraphNodes::default();
        g.created(10, ns | 5);
        g.created(11, ns | 7);
        g.created(12, (2u64 << NAMESPACE_SHIFT) | 6);
        g.created(13, 0);
        assert!(g.created_from(1, 7));
        assert!(!g.created_from(1, 8));
        for (new, orig) in [(20, 10), (21, 11), (22, 12)] {
            g.created(new, ns | 9); // created during instantiation, with a brick open
            g.cloned(new, orig);
        }
        assert!(!g.created_from(1, 8), "clones are not a capture's nodes");
        let t = g.template(1, 5, 8);
        assert_eq!(t.len(), 2);
        assert_eq!((t[&20], t[&21]), (1, 3));
    }
}
