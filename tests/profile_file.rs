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

#[test]
fn version_1_profiles_still_load_with_self_time_equal_to_total() {
    // spec/profile-format.md "Versions": a file written by brickprof 0.1.0 (format 1).
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile-v1.json");
    let p = Profile::load(&path).unwrap();
    assert!(!p.bricks.is_empty());
    for b in &p.bricks {
        assert_eq!(b.stats.self_ns(), b.stats.total_ns(), "{}", b.name);
    }
    assert!(p.total_ns() > 0);
    let text = brickprof::report::render_table(&p, &Default::default());
    assert!(text.contains("QkvProjection"), "{text}");
}

/// Save `p`, edit its text with `edit`, and load it back.
fn load_edited(p: &Profile, edit: impl Fn(&str) -> String) -> Result<Profile, Error> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edited.json");
    p.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit must change the file");
    std::fs::write(&path, edited).unwrap();
    Profile::load(&path)
}

/// Replace the first `"field": value` in `text` with `"field": new`.
fn set_first(text: &str, field: &str, new: &str) -> String {
    let key = format!("\"{field}\": ");
    let at = text.find(&key).expect("field present") + key.len();
    let end = at + text[at..].find([',', '\n', '}']).unwrap();
    format!("{}{}{}", &text[..at], new, &text[end..])
}

#[test]
fn files_that_break_invariants_are_errors_naming_the_field() {
    // spec/profile-format.md "Validation": each of these panicked or printed nonsense.
    let p = common::fixed_profile(false);
    let cases: Vec<(String, &str)> = vec![
        (
            set_first(
                &serde_json::to_string_pretty(&p).unwrap(),
                "min_ns",
                "999999999",
            ),
            "min_ns",
        ),
        (
            set_first(&serde_json::to_string_pretty(&p).unwrap(), "total_ns", "1"),
            "total_ns",
        ),
        (
            set_first(&serde_json::to_string_pretty(&p).unwrap(), "count", "7"),
            "histogram",
        ),
        (
            set_first(
                &serde_json::to_string_pretty(&p).unwrap(),
                "self_ns",
                "18446744073709551615",
            ),
            "self_ns",
        ),
        (
            set_first(&serde_json::to_string_pretty(&p).unwrap(), "layers", "1"),
            "layer",
        ),
    ];
    for (text, needle) in cases {
        let err = load_edited(&p, |_| text.clone()).unwrap_err().to_string();
        assert!(err.contains("edited.json"), "{err}");
        assert!(err.contains(needle), "expected {needle:?} in: {err}");
    }
    let mut with_peaks = p.clone();
    with_peaks.meta.peaks = Some(DevicePeaks::new("gpu", 10.0, 5.0).unwrap());
    for bad in ["0.0", "-5.0", "1e999"] {
        let err = load_edited(&with_peaks, |t| set_first(t, "gflops", bad));
        assert!(err.is_err(), "gflops {bad} loaded");
    }
}

#[test]
fn a_terminal_escape_in_a_file_is_not_printed_raw() {
    // spec/profile-format.md "Reports": control characters never reach the terminal.
    let mut p = common::fixed_profile(false);
    p.meta.tool_version = "0.1\u{1b}[2J\u{1b}]0;pwned\u{7}".into();
    let text = brickprof::report::render_table(&p, &Default::default());
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(!text.contains('\u{7}'));
}

#[test]
fn integers_above_2_pow_53_survive_jq_and_python() {
    // spec/profile-format.md "Large integers".
    let mut stats = brickprof::BrickStats::new();
    for _ in 0..3 {
        stats.record(4_000_000_000_000, 1, brickprof::Work::NONE); // 4000 s: sum of squares > 2^53
    }
    let mut p = common::fixed_profile(false);
    p.bricks[0].stats = stats.clone();
    p.bricks[0].rows.clear();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    p.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(&format!("\"{}\"", stats.sum_sq_ns2())),
        "a decimal string"
    );
    for tool in [
        vec!["jq", "."],
        vec![
            "python3",
            "-c",
            "import json,sys; json.dump(json.load(sys.stdin), sys.stdout)",
        ],
    ] {
        let Ok(out) = std::process::Command::new(tool[0])
            .args(&tool[1..])
            .stdin(std::fs::File::open(&path).unwrap())
            .output()
        else {
            eprintln!("{} is not installed: skipped", tool[0]);
            continue;
        };
        assert!(out.status.success(), "{}", tool[0]);
        let back_path = dir.path().join("back.json");
        std::fs::write(&back_path, &out.stdout).unwrap();
        let back = Profile::load(&back_path).unwrap();
        assert_eq!(back.bricks[0].stats, stats, "through {}", tool[0]);
    }
}
