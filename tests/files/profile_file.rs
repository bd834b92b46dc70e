//! spec/profile-format.md: round trip, bad files, merge rules.

use crate::common;

use brickprof::{profile::PROFILE_FORMAT_VERSION, roofline::DevicePeaks, Error, Profile};

#[test]
fn save_then_load_preserves_every_stat() {
    // spec/profile-format.md "The profile file" (round trip).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let mut p = common::fixed_profile(true);
    p.meta.peaks = Some(DevicePeaks::parse("mi300x").unwrap());
    p.save(&path).unwrap();
    let back = Profile::load(&path).unwrap();
    assert_eq!(back, p);
    let down = back.brick("DownProjection").unwrap();
    // The whole cell, its histogram included.
    assert_eq!(down.stats, p.brick("DownProjection").unwrap().stats);
    assert_eq!(down.tiles.len(), 1);
    assert_eq!(back.categories.len(), p.categories.len());
    assert!(back
        .checksums
        .as_ref()
        .is_some_and(|c| c.entries.len() == 24));
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
    assert_eq!(b.stats.summary().count, 2 * a.stats.summary().count);
    assert_eq!(b.stats.percentile_ns(0.5), a.stats.percentile_ns(0.5));
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
        assert_eq!(
            b.stats.summary().self_ns,
            b.stats.summary().total_ns,
            "{}",
            b.name
        );
    }
    assert!(p.total_ns() > 0);
    let text = brickprof::output::render_table(&p, &Default::default());
    assert!(text.contains("QkvProjection"), "{text}");
}

#[test]
fn a_profiles_run_id_is_saved_loaded_and_dropped_by_a_merge_of_two_runs() {
    // spec/profile-format.md "A run folder": `meta.run_id` (and its checksum log's) round
    // trips; files without one (version 1, or saved alone) load with none; a merge of two
    // runs carries none, a merge of a run with itself keeps it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.json");
    let mut p = common::fixed_profile(true);
    let id: brickprof::io::RunId = "1718000000-4242-0-9f3c21aa".parse().unwrap();
    p.set_run_id(Some(id.clone()));
    p.save(&path).unwrap();
    let back = Profile::load(&path).unwrap();
    assert_eq!(back.meta.run_id.as_ref(), Some(&id));
    assert_eq!(back.checksums.as_ref().unwrap().run_id.as_ref(), Some(&id));
    let text = std::fs::read_to_string(&path).unwrap();
    let bad = text.replacen(&id.to_string(), "a\\u001b]0;x", 1);
    std::fs::write(&path, bad).unwrap();
    assert!(
        Profile::load(&path).is_err(),
        "a run id with a control character"
    );
    let v1 =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile-v1.json");
    assert_eq!(Profile::load(&v1).unwrap().meta.run_id, None);

    let mut a = common::fixed_profile(false);
    a.set_run_id(Some(id.clone()));
    let mut same = a.clone();
    same.merge(&a).unwrap();
    assert_eq!(same.meta.run_id.as_ref(), Some(&id));
    let mut b = common::fixed_profile(false);
    b.set_run_id(Some("1718000000-4242-1-0b1e2c3d".parse().unwrap()));
    a.merge(&b).unwrap();
    assert_eq!(a.meta.run_id, None);
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
    let text = brickprof::output::render_table(&p, &Default::default());
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(!text.contains('\u{7}'));
}

#[test]
fn integers_above_2_pow_53_survive_jq_and_python() {
    // spec/profile-format.md "Large integers".
    let mut stats = brickprof::stats::BrickStats::default();
    for _ in 0..3 {
        stats.record_nested(
            4_000_000_000_000,
            4_000_000_000_000,
            1,
            brickprof::Work::default(),
        ); // 4000 s: sum of squares > 2^53
    }
    let mut p = common::fixed_profile(false);
    p.bricks[0].stats = stats.clone();
    p.bricks[0].rows.clear();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.json");
    p.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(&format!("\"{}\"", 3 * 4_000_000_000_000u128.pow(2))),
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

#[test]
fn merging_profiles_with_twenty_thousand_bricks_each_is_linear() {
    // spec/profile-format.md "Merging": linear in the number of bricks (65,519 bricks took
    // 65 s before). No timing assertion: 2 x 20,000 bricks finish here in well under a second.
    let mut p = common::fixed_profile(false);
    let template = p.bricks[0].clone();
    let brick = |i: usize, tag: &str| brickprof::profile::BrickProfile {
        name: format!("{tag}{i}"),
        builtin: false,
        rows: Vec::new(),
        tiles: Vec::new(),
        ..template.clone()
    };
    let mut q = p.clone();
    p.bricks.extend((0..20_000).map(|i| brick(i, "op")));
    q.bricks
        .extend((0..20_000).map(|i| brick(i, if i % 2 == 0 { "op" } else { "other" })));
    let before = p.bricks.len();
    p.merge(&q).unwrap();
    assert_eq!(p.bricks.len(), before + 10_000);
    let op0 = p.brick("op0").unwrap();
    assert_eq!(
        op0.stats.summary().count,
        2 * template.stats.summary().count
    );
}

/// The fixed profile saved with the `rows` key of its brick `name` removed (a hand-edited file
/// that loads: a brick without a per-layer breakdown).
fn without_rows(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let mut v = serde_json::to_value(common::fixed_profile(false)).unwrap();
    let brick = v["bricks"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|b| b["name"] == name)
        .unwrap();
    brick.as_object_mut().unwrap().remove("rows").unwrap();
    let path = dir.join("no-rows.json");
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    path
}

#[test]
fn a_profile_that_loads_merges_into_one_that_loads_or_the_merge_fails() {
    // spec/profile-format.md "Merging": a file that loads merges into a file that loads, or
    // the merge is an error. Before: the merge succeeded and its file did not load.
    let dir = tempfile::tempdir().unwrap();
    let edited = Profile::load(without_rows(dir.path(), "QkvProjection")).unwrap();
    let valid = common::fixed_profile(false);
    for (a, b) in [(&valid, &edited), (&edited, &valid)] {
        let mut m = a.clone();
        match m.merge(b) {
            Ok(()) => {
                let out = dir.path().join("merged.json");
                m.save(&out).unwrap();
                Profile::load(&out).expect("a merged profile loads");
            }
            Err(e) => {
                assert_eq!(&m, a, "a refused merge changes nothing");
                let msg = e.to_string();
                assert!(msg.contains("QkvProjection"), "{msg}");
            }
        }
    }
}

#[test]
fn a_fault_without_a_position_names_no_line_0_column_0() {
    // spec/profile-format.md "Validation": an error gives a line and column only when it
    // knows one. Before: "line 0, column 0: ... its stats are not the merge of its rows".
    let p = common::fixed_profile(false);
    let msg = load_edited(&p, |t| set_first(t, "layers", "1"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("edited.json") && msg.contains("layer 1"),
        "{msg}"
    );
    assert!(
        !msg.contains("line 0") && !msg.contains("column 0"),
        "{msg}"
    );
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, " \n").unwrap();
    let msg = Profile::load(&empty).unwrap_err().to_string();
    assert!(
        msg.contains("empty.json") && msg.contains("the file is empty"),
        "{msg}"
    );
    assert!(!msg.contains("line 0"), "{msg}");
}

fn v1_fixture() -> Profile {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile-v1.json");
    Profile::load(path).unwrap()
}

#[test]
fn a_version_1_profile_saved_again_says_the_current_version() {
    // spec/profile-format.md "Versions": saving always writes the current layout and version.
    // Before: `"format_version": 1` over the version-2 layout.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("again.json");
    v1_fixture().save(&out).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["format_version"], PROFILE_FORMAT_VERSION);
    assert_eq!(Profile::load(&out).unwrap(), v1_fixture());
}

#[test]
fn merging_a_version_1_and_a_version_2_profile_is_commutative() {
    // spec/profile-format.md "Merging": commutative on whole profiles, metadata included.
    // Before: the format and tool versions followed the receiving profile.
    let v1 = v1_fixture();
    let v2 = common::fixed_profile(false);
    let mut a = v1.clone();
    a.merge(&v2).unwrap();
    let mut b = v2.clone();
    b.merge(&v1).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.format_version, PROFILE_FORMAT_VERSION);
}

#[test]
fn the_spec_describes_the_histogram_a_saved_file_holds() {
    // spec/profile-format.md "The profile file": `histogram` is `{"floors": [[floor, count]]}`.
    let spec = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/profile-format.md"),
    )
    .unwrap();
    assert!(
        spec.contains("`{\"floors\": [[lowest ns of the bucket, count], ...]}`"),
        "the spec names the saved histogram layout"
    );
    let v = serde_json::to_value(common::fixed_profile(false)).unwrap();
    let floors = v["bricks"][0]["stats"]["histogram"]["floors"]
        .as_array()
        .expect("a saved histogram is {\"floors\": [...]}");
    assert!(floors
        .iter()
        .all(|pair| pair.as_array().is_some_and(|p| p.len() == 2)));
}

#[test]
fn host_only_counts_and_the_outside_row_load_merge_and_are_checked() {
    // spec/profile-format.md "The profile file" (a brick's `host_only`, `meta.outside_bricks`):
    // files without them load as 0 and none; with them they round-trip and a merge adds them; a
    // brick with more host-only calls than calls is refused, naming the file and the field.
    let plain = common::fixed_profile(false);
    let text = serde_json::to_string_pretty(&plain).unwrap();
    assert!(!text.contains("host_only") && !text.contains("outside_bricks"));
    let mut p = plain.clone();
    let calls = p.bricks[0].stats.summary().count;
    p.bricks[0].host_only = calls;
    p.meta.outside_bricks = Some(brickprof::stats::OutsideBricks {
        kernels: 3,
        memory_ops: 1,
        busy_ns: 9_000,
    });
    let back = load_edited(&plain, |_| serde_json::to_string_pretty(&p).unwrap()).unwrap();
    assert_eq!(back, p);
    let mut merged = back.clone();
    merged.merge(&plain).unwrap();
    merged.merge(&back).unwrap();
    assert_eq!(merged.bricks[0].host_only, 2 * calls);
    assert_eq!(merged.meta.outside_bricks.unwrap().kernels, 6);
    let mut bad = p.clone();
    bad.bricks[0].host_only = calls + 1;
    let err = load_edited(&plain, |_| serde_json::to_string_pretty(&bad).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("edited.json") && err.contains("host-only"),
        "{err}"
    );
}
