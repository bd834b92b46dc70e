//! From tests/core/phases.rs: the phases a profile has, which decide the per-phase sections of
//! the table and the JSON export (`crate::profile::phases_of` is internal).

/// A Deferred run on the simulated device of 2 layers (RmsNorm and QkvProjection in each,
/// inside an LmHead), one pass per entry of `shapes` (`None`: a pass begun without a shape),
/// as tests/core/phases.rs runs it.
fn sim_profile(shapes: &[Option<crate::PassShape>]) -> crate::Profile {
    use crate::{timeline::SimDevice, BrickId, BrickProfiler, ProfilerConfig};
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: 2,
        pending_capacity: 256,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(1024)).unwrap();
    for shape in shapes {
        prof.begin_pass();
        if let Some(shape) = shape {
            prof.set_pass_shape(*shape);
        }
        let outer = prof.start_brick(BrickId::LmHead);
        for layer in 0..2 {
            prof.begin_layer(layer);
            for brick in [BrickId::RmsNorm, BrickId::QkvProjection] {
                let t = prof.start_brick(brick);
                device.launch(10_000);
                prof.stop_brick(t, 1);
            }
            prof.end_layer();
        }
        prof.stop_brick(outer, 1);
        prof.end_pass(shape.map_or(1, |s| u64::from(s.new_tokens())))
            .unwrap();
    }
    prof.finalize().unwrap();
    prof.profile()
}

/// From tests/core/phases.rs (`phases_of` is internal: the table, the JSON export and the
/// timing diff show a section per phase it names; here beside the outputs, which may run a
/// profiler): a profile of prefill and decode passes,
/// an unshaped one, and the files written before phases.
#[test]
fn phases_of_names_the_phases_a_profile_has_passes_or_rows_of() {
    use crate::profile::phases_of;
    use crate::{PassShape, Phase, Profile};
    let prefill = Some(PassShape::new(16, 1, 16).unwrap());
    let decode = |i: u64| Some(PassShape::new(1, 1, 17 + i).unwrap());
    let shaped = sim_profile(&[prefill, prefill, decode(0), decode(1), decode(2)]);
    assert_eq!(phases_of(&shaped), vec![Phase::Prefill, Phase::Decode]);
    let unshaped = sim_profile(&[None, None, None]);
    assert_eq!(phases_of(&unshaped), vec![Phase::Unspecified]);
    for name in ["profile-v1.json", "profile-v2.json"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        let p = Profile::load(path).unwrap();
        assert_eq!(phases_of(&p), vec![Phase::Unspecified], "{name}");
    }
}
