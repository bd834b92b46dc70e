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

/// From tests/files/files_robust.rs (`RunFile` is internal: `brickprof diff` reads run files
/// through it): a file that begins with a UTF-8 byte-order mark loads as a run file too.
#[test]
fn a_run_file_with_a_byte_order_mark_loads_as_a_profile() {
    use crate::profile::RunFile;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    // A profile written by brickprof 0.3.0's demo, saved by this build.
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile-v2.json");
    crate::Profile::load(fixture).unwrap().save(&path).unwrap();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&path).unwrap());
    std::fs::write(&path, bytes).unwrap();
    assert!(matches!(RunFile::load(&path), Ok(RunFile::Profile(_))));
}
