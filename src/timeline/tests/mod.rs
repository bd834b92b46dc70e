//! Unit tests of the timeline layer that need its internals (moved from the integration
//! tests and proptests when those items stopped being public).

mod calibration_props;
mod graph_replay;
mod graph_replay_props;
