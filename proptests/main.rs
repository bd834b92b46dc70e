//! Property tests. Each module states the invariant it checks and the spec section it covers.

mod checksum_file_props;
mod checksum_props;
mod common;
mod error_display_props;
mod pass_series_props;
mod profile_fuzz;
mod profile_props;
mod profiler_props;
#[path = "../tests/common/render.rs"]
mod render;
mod self_time_model_props;
mod sync_props;
mod tile_props;
mod tracing_is_neutral_props;
mod xml_props;
