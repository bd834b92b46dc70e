//! Unit tests of the timeline layer that need its internals (moved from the integration
//! tests and proptests when those items stopped being public).

mod calibration_props;
