//! What is measured and how it is named: bricks and their registry, phases and pass shapes,
//! the work a call did, sync and sampling modes, the run's counters, and the (row, slot) grid
//! with the row keys a saved profile uses. Leaves: they import only `base`.

pub(crate) mod brick;
pub(crate) mod counters;
pub(crate) mod grid;
pub(crate) mod phase;
pub(crate) mod registry;
pub(crate) mod row_key;
pub(crate) mod sampling;
pub(crate) mod sync;
pub(crate) mod work;

pub use crate::base::limits::Limit;
pub use counters::Counters;
pub use phase::PhaseFilter;
pub use registry::BrickRegistry;
pub use sampling::{Sampling, TraceCost};
pub use sync::OverflowPolicy;
