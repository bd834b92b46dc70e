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
