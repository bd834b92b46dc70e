//! spec/profile-format.md: round trip, bad files, merge rules.

mod common;

use brickprof::{DevicePeaks, Error, Profile, PROFILE_FORMAT_VERSION};

#[test]
fn save_then_load_preserves_every_stat() {
    // spec/profile-format.md "Round trip".
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let mut p = common::fixed_profile(true);
    p.meta.peaks = Some(DevicePeaks::preset("mi300x").unwrap());
    p.save(&path).unwrap();
    let back = Profile::load(&path).unwrap();
    assert_eq!(back, p);
    let down = back.brick("DownProjection").unwrap();
    assert_eq!(
        down.stats.histogram(),
        p.brick("DownProjection").unwrap().stats.histogram()
    );
    assert_eq!(down.tiles.len(), 1);
    assert_eq!(back.categories.len(), p.categories.len());
    assert!(back.checksums.as_ref().is_some_and(|c| c.len() == 24));
}

#[test]
fn categories_in_a_file_are_recomputed_from_its_bricks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let p = common::fixed_profile(false);
    let mut tampered = p.clone();
    tampered.categories.clear();
    tampered.save(&path).unwrap();
    assert_eq!(Profile::load(&path).unwrap().categories, p.categories);
}

#[test]
fn bad_profile_files_are_errors_naming_file_and_fault() {
    // spec/profile-format.md "Loading".
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    common::fixed_profile(false).save(&good).unwrap();
    let text = std::fs::read_to_string(&good).unwrap();
    let version = format!("\"format_version\": {PROFILE_FORMAT_VERSION}");
    let cases: Vec<(&str, String, &str)> = vec![
        ("empty.json", "  \n".into(), "the file is empty"),
        (
            "garbage.json",
            "\u{1}\u{2} garbage".into(),
            "line 1, column 1",
        ),
        (
            "truncated.json",
            text[..text.len() * 2 / 3].to_string(),
            "ends early",
        ),
        (
            "version.json",
            text.replace(&version, "\"format_version\": 7"),
            "version 7",
        ),
        (
            "wrongtype.json",
            text.replacen("\"count\": ", "\"count\": \"x\", \"was\": ", 1),
            "line",
        ),
        (
            "checksums.json",
            "{\"kind\":\"checksums\",\"format_version\":1,\"entries\":[]}".into(),
            "not a brickprof profile",
        ),
    ];
    for (name, body, fault) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let msg = Profile::load(&path).unwrap_err().to_string();
        assert!(msg.contains(name), "{name}: {msg}");
        assert!(msg.contains(fault), "{name}: expected {fault:?} in {msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
    }
    let missing = Profile::load(dir.path().join("missing.json")).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }) && missing.to_string().contains("missing.json"));
    let is_dir = Profile::load(dir.path()).unwrap_err();
    assert!(is_dir.to_string().contains("directory"), "{is_dir}");
}

#[test]
fn merge_refuses_what_it_cannot_combine() {
    let plain = common::fixed_profile(false);
    let mut with_checksums = common::fixed_profile(true);
    assert!(with_checksums.merge(&plain).is_err());
    let before = plain.clone();
    let mut other_mode = plain.clone();
    other_mode.meta.sync_mode = brickprof::SyncMode::Immediate;
    let mut a = plain.clone();
    assert!(a.merge(&other_mode).is_err());
    assert_eq!(a, before, "a refused merge changes nothing");
}

#[test]
fn merging_two_runs_adds_them_up() {
    let p = common::fixed_profile(false);
    let mut m = p.clone();
    m.merge(&p).unwrap();
    assert_eq!(m.meta.merged_from, 2);
    assert_eq!(m.meta.counters.passes, 2 * p.meta.counters.passes);
    let (a, b) = (
        p.brick("QkvProjection").unwrap(),
        m.brick("QkvProjection").unwrap(),
    );
    assert_eq!(b.stats.count(), 2 * a.stats.count());
    assert_eq!(b.stats.p50_ns(), a.stats.p50_ns());
    assert_eq!(m.total_ns(), 2 * p.total_ns());
}
