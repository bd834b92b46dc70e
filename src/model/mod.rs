//! What is measured and how it is named: bricks and their registry, phases and pass shapes,
//! the work a call did, sync and sampling modes, the run's counters, and the (row, slot) grid
//! with the row keys a saved profile uses. Leaves: they import only `base`.

pub mod brick;
pub mod counters;
pub mod grid;
pub mod phase;
pub mod registry;
pub mod row_key;
pub mod sampling;
pub mod sync;
pub mod work;
