//! spec/profile-format.md "Large integers": in every file brickprof saves, an integer above
//! 2^53 is a decimal string, and every 64-bit integer field reads both forms. The checks walk
//! the JSON value tree, so they reach every field, including fields added later: no bare
//! number above 2^53 anywhere in a saved file, and, field by field, each integer leaf of a real
//! file set above 2^53 (saved again as a string) and written as a string (read back the same).

use std::path::Path;

use brickprof::{
    checksum::ChecksumLog, timeline::HostClock, BrickId, BrickProfiler, CpuTimeline, PassShape,
    Profile, ProfilerConfig, Work,
};
use serde_json::Value;

const MAX_SAFE: u64 = 1 << 53;
const BIG: u64 = MAX_SAFE + 1;

/// Every bare JSON number above 2^53 (or below -2^53) in `v`, with its path.
fn bare_large_numbers(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Number(n) => {
            let large = match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => u > MAX_SAFE,
                (None, Some(i), _) => i.unsigned_abs() > MAX_SAFE,
                // A float that is a whole number above 2^53 is an integer written as a float.
                (None, None, Some(f)) => f.fract() == 0.0 && f.abs() > MAX_SAFE as f64,
                _ => false,
            };
            if large {
                out.push(format!("{path} = {n}"));
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                bare_large_numbers(x, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                bare_large_numbers(x, &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

fn assert_no_bare_large_number(text: &str, what: &str) {
    let v: Value = serde_json::from_str(text).unwrap();
    let mut bad = Vec::new();
    bare_large_numbers(&v, "", &mut bad);
    assert!(bad.is_empty(), "{what}: bare numbers above 2^53: {bad:#?}");
}

/// The paths (as JSON pointers) of every non-negative integer leaf written as a number.
fn integer_leaves(v: &Value, path: String, out: &mut Vec<String>) {
    match v {
        Value::Number(n) if n.is_u64() => out.push(path),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                integer_leaves(x, format!("{path}/{i}"), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                let k = k.replace('~', "~0").replace('/', "~1");
                integer_leaves(x, format!("{path}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// Whether an error says the field is a narrow integer (u8/u16/u32, or the file's format
/// version): such fields never hold a value near 2^53 and are plain numbers.
fn narrow(message: &str) -> bool {
    [
        "expected u8",
        "expected u16",
        "expected u32",
        "format version",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// Field by field over the integer leaves of `saved` (a file of a kind `load` reads, returning
/// the value as it saves it again): a leaf set to 2^32 that is not refused as a narrow integer
/// is a wide field, which must (1) read its value written as a string, to the same result,
/// and (2) when set to 2^53 + 1 and loaded, be saved again as a string.
fn every_wide_field_reads_both_forms_and_writes_strings(
    dir: &Path,
    saved: &Value,
    load: &dyn Fn(&Path) -> Result<Value, String>,
) -> usize {
    let mut leaves = Vec::new();
    integer_leaves(saved, String::new(), &mut leaves);
    let file = dir.join("edited.json");
    let load_with = |edit: &dyn Fn(&mut Value)| {
        let mut v = saved.clone();
        edit(&mut v);
        std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        load(&file)
    };
    let original = load_with(&|_| {}).expect("the file loads as saved");
    let mut wide = 0;
    for leaf in &leaves {
        let set = |x: Value| move |v: &mut Value| *v.pointer_mut(leaf).unwrap() = x.clone();
        let value = saved.pointer(leaf).unwrap().as_u64().unwrap();
        if let Err(e) = load_with(&set(Value::from(1u64 << 32))) {
            if narrow(&e) {
                continue;
            }
        }
        wide += 1;
        match load_with(&set(Value::from(value.to_string()))) {
            Ok(back) => assert_eq!(back, original, "{leaf} written as \"{value}\""),
            Err(e) => panic!("{leaf} written as the string \"{value}\" is refused: {e}"),
        }
        if let Ok(back) = load_with(&set(Value::from(BIG))) {
            let mut bad = Vec::new();
            bare_large_numbers(&back, "", &mut bad);
            assert!(bad.is_empty(), "{leaf} = {BIG} is saved as {bad:?}");
            let as_string = load_with(&set(Value::from(BIG.to_string())));
            assert_eq!(as_string, Ok(back), "{leaf} = \"{BIG}\"");
        }
    }
    wide
}

/// One layer; AttentionScore around AttentionSoftmax for 2^53 + 1 ns of a mock clock, with
/// work, tokens and context above 2^53, and a checksum: every integer the profiler writes
/// that can pass 2^53 does.
fn huge_profile() -> Profile {
    let (clock, mock) = HostClock::mock();
    let config = ProfilerConfig {
        layers: 1,
        checksums: true,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, CpuTimeline::with_clock(clock)).unwrap();
    prof.begin_pass();
    prof.set_pass_shape(PassShape::new(1, 1, BIG).unwrap());
    prof.begin_layer(0);
    let score = prof.start_brick(BrickId::AttentionScore);
    let softmax = prof.start_brick(BrickId::AttentionSoftmax);
    mock.increment(BIG);
    prof.stop_brick_with(
        softmax,
        Work {
            elements: BIG,
            flops: BIG,
            bytes: BIG,
        },
    );
    prof.stop_brick(score, BIG);
    prof.checksums()
        .record(Some(0), BrickId::AttentionSoftmax, &[1.0, 2.0]);
    prof.end_layer();
    prof.end_pass(BIG).unwrap();
    let mut p = prof.profile();
    p.meta.created_unix_s = BIG;
    p.meta.timer_resolution_ns = Some(BIG);
    p.meta.mark_cost_ns = Some(BIG);
    p.meta.calibration_bound_ns = Some(BIG);
    p.meta.untimed_graphs = vec![BIG];
    p
}

#[test]
fn a_profile_with_every_integer_above_2_pow_53_has_no_bare_large_number() {
    // spec/profile-format.md "Large integers" (the outside testers' case: the nesting edge's
    // total_ns and self_ns were bare numbers while the brick's stats were strings).
    let p = huge_profile();
    assert!(
        !p.nesting.is_empty(),
        "AttentionScore encloses AttentionSoftmax"
    );
    assert_eq!(p.nesting[0].total_ns, BIG);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    p.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_no_bare_large_number(&text, "profile");
    assert!(text.contains(&format!("\"{BIG}\"")));
    assert_eq!(Profile::load(&path).unwrap(), p);
}

#[test]
fn a_nesting_edge_reads_its_integers_written_as_strings() {
    // spec/profile-format.md "Large integers": `"calls": "1"` was refused ("invalid type:
    // string").
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let p = huge_profile();
    p.save(&path).unwrap();
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v["nesting"][0]["calls"] = Value::from("1");
    std::fs::write(&path, v.to_string()).unwrap();
    assert_eq!(Profile::load(&path).unwrap(), p);
}

fn reload_profile(path: &Path) -> Result<Value, String> {
    let p = Profile::load(path).map_err(|e| e.to_string())?;
    Ok(serde_json::to_value(p).unwrap())
}

#[test]
fn every_integer_field_of_a_profile_keeps_the_rule() {
    // spec/profile-format.md "Large integers", field by field over a real profile with
    // nesting, phases, a pass series with its pass-brick record, fits, checksums and every
    // optional meta field.
    let dir = tempfile::tempdir().unwrap();
    let mut p = huge_profile();
    p.meta.timer_resolution_ns = Some(7);
    p.meta.mark_cost_ns = Some(8);
    p.meta.calibration_bound_ns = Some(9);
    p.meta.untimed_graphs = vec![3];
    let path = dir.path().join("p.json");
    p.save(&path).unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let wide =
        every_wide_field_reads_both_forms_and_writes_strings(dir.path(), &saved, &reload_profile);
    assert!(wide > 40, "{wide} wide integer fields");
}

#[test]
fn every_integer_field_of_a_checksum_log_keeps_the_rule() {
    // spec/checksums.md "File format", spec/profile-format.md "Large integers".
    let dir = tempfile::tempdir().unwrap();
    let log: ChecksumLog = huge_profile().checksums.unwrap();
    let path = dir.path().join("c.json");
    log.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_no_bare_large_number(&text, "checksum log");
    let saved: Value = serde_json::from_str(&text).unwrap();
    let wide = every_wide_field_reads_both_forms_and_writes_strings(dir.path(), &saved, &|p| {
        let log = ChecksumLog::load(p).map_err(|e| e.to_string())?;
        Ok(serde_json::to_value(log).unwrap())
    });
    assert!(wide >= 5, "{wide} wide integer fields");
}

#[test]
fn a_chrome_trace_writes_integers_above_2_pow_53_as_strings() {
    // spec/traces.md "Run facts", spec/profile-format.md "Large integers": the run's facts and
    // a pass's arguments follow the rule; timestamps, durations and counter values are the
    // format's plotted numbers (floats, in µs).
    let (clock, mock) = HostClock::mock();
    let config = ProfilerConfig {
        layers: 1,
        trace_capacity: 64,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, CpuTimeline::with_clock(clock)).unwrap();
    prof.begin_pass();
    prof.set_pass_shape(PassShape::new(1, 1, BIG).unwrap());
    let t = prof.start_brick(BrickId::LmHead);
    mock.increment(1_000);
    prof.stop_brick(t, 1);
    prof.end_pass(BIG).unwrap();
    let view = prof.view().trace_view().unwrap();
    let mut chrome = Vec::new();
    let to = brickprof::output::output("chrome").unwrap();
    to.write(&brickprof::output::Snapshot::Trace(&view), &mut chrome)
        .unwrap();
    let mut v: Value = serde_json::from_slice(&chrome).unwrap();
    let events = v["traceEvents"].as_array_mut().unwrap();
    let passes = events
        .iter()
        .filter(|e| e["args"]["context_tokens"].as_str() == Some(BIG.to_string().as_str()))
        .count();
    assert!(
        passes >= 1,
        "the pass slice carries its context as a string"
    );
    events.retain(|e| e["ph"] != "C");
    let mut bad = Vec::new();
    bare_large_numbers(&v, "", &mut bad);
    assert!(bad.is_empty(), "{bad:#?}");
}
