//! spec/profile-format.md "Latency: TTFT and TPOT": unshaped passes are counted and left out,
//! and the JSON export says how many (before: `unshaped_passes` was always 0 for a profiler's
//! run). The same run as figures/tests/latency_profile.rs's
//! `unshaped_passes_are_counted_though_they_leave_no_record`, read through the export.

use crate::output::{export::render_json, TableOptions};
use crate::timeline::SimDevice;
use crate::{BrickId, BrickProfiler, PassShape, ProfilerConfig, SyncMode};

#[test]
fn the_json_export_counts_unshaped_passes() {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: 2,
        sync_mode: SyncMode::Deferred,
        pending_capacity: 4096,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(4096)).unwrap();
    for (i, context) in [10, 11, 12, 13, 14].into_iter().enumerate() {
        if i % 2 == 0 {
            prof.begin_pass();
            prof.set_pass_shape(PassShape::new(1, 1, context).unwrap());
        } else {
            prof.begin_pass();
        }
        for layer in 0..2 {
            prof.begin_layer(layer);
            let t = prof.start_brick(BrickId::UpProjection);
            device.launch(3_000);
            prof.stop_brick(t, 1);
            prof.end_layer();
        }
        device.host_work(100_000);
        prof.end_pass(1).unwrap();
    }
    let json: serde_json::Value =
        serde_json::from_str(&render_json(&prof.profile(), &TableOptions::default())).unwrap();
    assert_eq!(json["latency"]["unshaped_passes"], 2, "{json}");
}
