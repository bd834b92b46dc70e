//! The pass series on hand-built passes: saving and loading (TTFT and TPOT exact, a ring that
//! drops passes and merges that keep runs apart: the unit tests in
//! src/figures/tests/latency_series.rs).

use crate::common;

use brickprof::{
    stats::{PassRecord, PassSeries},
    BrickCategory, PassShape,
};

const CATS: usize = BrickCategory::COUNT;

/// A pass of one sequence: `new` new tokens at context `ctx`, `wall` ns of wall time, a third of
/// it in attention.
fn pass(new: u32, ctx: u64, wall: u64) -> PassRecord {
    let mut cats = [0; CATS];
    cats[BrickCategory::Attention as usize] = wall / 3;
    let shape = PassShape::new(new, 1, ctx).unwrap();
    PassRecord::new(Some(shape), wall, cats)
}

// spec/profile-format.md "Pass series": saved as JSON and checked on load.
#[test]
fn a_series_survives_a_json_round_trip() {
    // Six passes into a run of capacity 3: the newest 3 kept, 3 dropped.
    let mut all = Vec::new();
    let (prefill, decode) = (
        PassShape::new(32, 1, 32).unwrap(),
        PassShape::new(1, 1, 33).unwrap(),
    );
    for (i, (shape, wall)) in [(prefill, 5_000), (decode, 700)]
        .iter()
        .cycle()
        .take(5)
        .enumerate()
    {
        let mut cats = [0; CATS];
        cats[i % CATS] = i as u64 * 10;
        all.push(PassRecord::new(Some(*shape), wall + i as u64, cats));
    }
    all.push(PassRecord::new(None, 9, [0; CATS]));
    let series = PassSeries::from_run(all[3..].to_vec(), 3, 3).unwrap();
    let json = serde_json::to_string_pretty(&series).unwrap();
    let back: PassSeries = serde_json::from_str(&json).unwrap();
    assert_eq!(back, series);
    assert_eq!(back.dropped(), 3);
    let again = serde_json::to_string_pretty(&back).unwrap();
    assert_eq!(again, json);
    // An unknown field is refused, not dropped.
    let bad = json.replacen("\"wall_ns\"", "\"wall\": 1, \"wall_ns\"", 1);
    assert!(serde_json::from_str::<PassSeries>(&bad).is_err());
}

#[test]
fn a_hand_built_run_is_checked_like_a_loaded_one() {
    let r = pass(1, 2, 3);
    assert!(PassSeries::from_run(vec![r; 3], 0, 4).is_ok());
    assert!(PassSeries::from_run(vec![r; 3], 0, 2).is_err());
    assert!(PassSeries::from_run(vec![r; 3], 5, 4).is_err());
    assert!(PassSeries::from_run(vec![r; 4], 5, 4).is_ok());
    let e = PassSeries::from_run(vec![], 0, usize::MAX).unwrap_err();
    assert!(matches!(e, brickprof::Error::InvalidValue { .. }), "{e}");
}

/// The profile of [`common::shaped_sim_profiler`] with its run's records replaced by `records`
/// copies of its first, and, as given, a second run of `second` records and a pass-brick
/// column of `column` passes, loaded. The long lists are spliced in as text (building them as
/// JSON values costs a debug build a minute).
fn load_with(
    records: usize,
    second: usize,
    column: usize,
) -> brickprof::Result<brickprof::Profile> {
    let p = common::shaped_sim_profiler(0).profile();
    let mut v = serde_json::to_value(&p).unwrap();
    let run = &mut v["pass_series"]["runs"][0];
    let first = run["records"][0].to_string();
    run["records"] = "@RECORDS@".into();
    run["capacity"] = brickprof::model::Limit::PassSeries.max().into();
    run["dropped"] = 0.into();
    if column > 0 {
        run["brick_passes"] = 1.into();
        run["brick_ns"] = serde_json::json!({ "UpProjection": "@COLUMN@" });
    }
    if second > 0 {
        let mut other = run.clone();
        other["records"] = "@SECOND@".into();
        let o = other.as_object_mut().unwrap();
        o.remove("brick_passes");
        o.remove("brick_ns");
        v["pass_series"]["runs"].as_array_mut().unwrap().push(other);
    }
    let list = |item: &str, n: usize| format!("[{}]", vec![item; n].join(","));
    let text = v
        .to_string()
        .replace("\"@RECORDS@\"", &list(&first, records))
        .replace(
            "\"@SECOND@\"",
            &list(r#"{"wall_ns":7,"device_ns":0}"#, second),
        )
        .replace("\"@COLUMN@\"", &list("1", column));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    std::fs::write(&path, text).unwrap();
    brickprof::Profile::load(&path)
}

fn is_over_the_series_limit(e: &brickprof::Error) -> bool {
    matches!(
        e,
        brickprof::Error::InFile { source, .. }
            if matches!(
                **source,
                brickprof::Error::OverLimit { limit: brickprof::model::Limit::PassSeries, .. }
            )
    )
}

#[test]
fn a_series_over_the_limit_is_refused_while_it_is_read() {
    // spec/profile-format.md "Limits while reading": one record over MAX_PASS_SERIES, in one
    // run or over two, or a pass-brick column one pass over, is a typed OverLimit naming the
    // file (it was a parse error after the whole series was held: 10 million passes took 1.19
    // GB). Memory is measured in the report, not asserted here.
    let max = brickprof::model::Limit::PassSeries.max();
    let one_over = load_with(max + 1, 0, 0).unwrap_err();
    assert!(is_over_the_series_limit(&one_over), "{one_over:?}");
    let text = one_over.to_string();
    assert!(text.contains("p.json") && text.contains("262144"), "{text}");
    let two_runs = load_with(max / 2, max / 2 + 1, 0).unwrap_err();
    assert!(is_over_the_series_limit(&two_runs), "{two_runs:?}");
    let column = load_with(6, 0, max + 1).unwrap_err();
    assert!(is_over_the_series_limit(&column), "{column:?}");
    let within = load_with(6, 3, 0);
    assert!(within.is_ok(), "{within:?}");
}
