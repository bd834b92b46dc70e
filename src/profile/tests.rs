//! Unit tests of the profile layer's internals (moved from doc and integration tests when the
//! items they test stopped being public).

use crate::profile::GeneratedTokens;

/// Was the doc example of `GeneratedTokens` (`first_difference` is internal: `brickprof diff`
/// reports it in `DiffOutcome::first_token_difference`).
#[test]
fn first_difference_names_the_first_differing_token() -> crate::Result<()> {
    let a = GeneratedTokens::new(vec![5, 7, 9], vec![" a".into(), " b".into(), " c".into()])?;
    let b = GeneratedTokens::new(vec![5, 8], vec![" a".into(), " x".into()])?;
    let d = a.first_difference(&b).unwrap();
    assert_eq!(d.position, 1);
    assert_eq!(
        d.to_string(),
        "position 1 (reference ' b' id 7 vs candidate ' x' id 8)"
    );
    Ok(())
}

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
/// timing diff show a section per phase it names): a profile of prefill and decode passes,
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

/// From tests/files/files_robust.rs (`RunFile` is internal: `brickprof diff` reads run files
/// through it): a file that begins with a UTF-8 byte-order mark loads as a run file too.
#[test]
fn a_run_file_with_a_byte_order_mark_loads_as_a_profile() {
    use crate::profile::RunFile;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let p = sim_profile(&[None]);
    p.save(&path).unwrap();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&path).unwrap());
    std::fs::write(&path, bytes).unwrap();
    assert!(matches!(RunFile::load(&path), Ok(RunFile::Profile(_))));
}
