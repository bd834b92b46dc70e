//! Exports carry phases (spec/profile-format.md "Reports"; that a timing diff compares prefill
//! with prefill and decode with decode is the unit test in src/compare/tests/timing_diff_phases.rs):
//! the CSV and JSON exports give one row per (phase, brick), TTFT, TPOT and
//! the throughputs, and the brick fits; a file without phases exports as phase "unspecified".
//! On the simulated device, whose clocks are simulated: exact numbers.

use crate::common::render::{render_csv, render_json};
use brickprof::output::TableOptions;
use brickprof::{
    timeline::{SimDevice, SimTimeline},
    BrickId, BrickProfiler, PassShape, Profile, ProfilerConfig,
};

const US: u64 = 1_000;
const LAYERS: usize = 2;
const PROMPT: u32 = 16;
const DECODES: u64 = 6;
/// QkvProjection's kernel time in a prefill pass and in a decode pass.
const PREFILL_QKV: u64 = 40 * US;
const DECODE_QKV: u64 = 7 * US;
/// AttentionScore costs A + B·context per call.
const ATTN_A: u64 = 2 * US;
const ATTN_B: u64 = 10;

fn pass(prof: &mut BrickProfiler<SimTimeline>, device: &SimDevice, qkv: u64, context: u64) {
    for layer in 0..LAYERS {
        prof.begin_layer(layer);
        let t = prof.start_brick(BrickId::QkvProjection);
        device.launch(qkv);
        prof.stop_brick(t, 1);
        let t = prof.start_brick(BrickId::AttentionScore);
        device.launch(ATTN_A + ATTN_B * context);
        prof.stop_brick(t, 1);
        prof.end_layer();
    }
}

/// One prompt pass, then `DECODES` decode steps whose QkvProjection takes `decode_slowdown`
/// longer than `DECODE_QKV`.
fn profile(decode_slowdown: u64) -> Profile {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: LAYERS,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(256)).unwrap();
    let prompt = u64::from(PROMPT);
    prof.begin_pass();
    prof.set_pass_shape(PassShape::new(PROMPT, 1, prompt).unwrap());
    pass(&mut prof, &device, PREFILL_QKV, prompt);
    device.host_work(US);
    prof.end_pass(prompt).unwrap();
    for i in 1..=DECODES {
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(1, 1, prompt + i).unwrap());
        pass(&mut prof, &device, DECODE_QKV + decode_slowdown, prompt + i);
        device.host_work(US);
        prof.end_pass(1).unwrap();
    }
    prof.finalize().unwrap();
    prof.profile()
}

fn csv_rows(csv: &str) -> (Vec<&str>, Vec<Vec<&str>>) {
    let mut lines = csv.lines();
    let header = lines.next().unwrap().split(',').collect();
    (header, lines.map(|l| l.split(',').collect()).collect())
}

fn column(header: &[&str], name: &str) -> usize {
    header.iter().position(|h| *h == name).unwrap()
}

// spec/profile-format.md "Reports": the CSV has one row per (phase, brick) with a phase
// column, and each brick row its fit in that phase.
#[test]
fn the_csv_has_a_row_per_phase_and_brick_with_its_fit() {
    let p = profile(0);
    let csv = render_csv(&p, &TableOptions::default());
    let (header, rows) = csv_rows(&csv);
    let (name, phase, calls) = (
        column(&header, "name"),
        column(&header, "phase"),
        column(&header, "calls"),
    );
    let keys: Vec<(&str, &str)> = rows.iter().map(|r| (r[phase], r[name])).collect();
    for key in [
        ("prefill", "QkvProjection"),
        ("prefill", "AttentionScore"),
        ("decode", "QkvProjection"),
        ("decode", "AttentionScore"),
    ] {
        assert_eq!(
            keys.iter().filter(|k| **k == key).count(),
            1,
            "{key:?}\n{csv}"
        );
    }
    assert_eq!(rows.len(), 4, "{csv}");
    let at = |ph: &str, n: &str| {
        rows.iter()
            .find(|r| r[phase] == ph && r[name] == n)
            .unwrap()
    };
    assert_eq!(
        at("decode", "QkvProjection")[calls],
        (DECODES * LAYERS as u64).to_string()
    );
    // AttentionScore in decode: A + B·context per call, over every decode pass.
    let attn = at("decode", "AttentionScore");
    assert_eq!(attn[column(&header, "fit_regressor")], "context");
    assert_eq!(attn[column(&header, "fit_per")], "call");
    let num = |c: &str| attn[column(&header, c)].parse::<f64>().unwrap();
    assert!((num("fit_a_ns") - ATTN_A as f64).abs() < 1e-6, "{csv}");
    assert!((num("fit_b_ns") - ATTN_B as f64).abs() < 1e-9, "{csv}");
    assert_eq!(num("fit_passes"), DECODES as f64);
    assert_eq!(num("fit_x_min"), f64::from(PROMPT) + 1.0);
    assert_eq!(num("fit_x_max"), f64::from(PROMPT) + DECODES as f64);
    // One prefill pass: no line, so no fit.
    assert_eq!(
        at("prefill", "AttentionScore")[column(&header, "fit_regressor")],
        ""
    );
}

// spec/profile-format.md "Reports": the JSON's rows carry their phase; it holds each phase's
// throughput, TTFT and TPOT, and the fits.
#[test]
fn the_json_has_phases_latency_and_fits() {
    let p = profile(0);
    let json: serde_json::Value =
        serde_json::from_str(&render_json(&p, &TableOptions::default())).unwrap();
    let bricks = json["bricks"].as_array().unwrap();
    assert_eq!(bricks.len(), 4);
    for phase in ["prefill", "decode"] {
        assert_eq!(bricks.iter().filter(|b| b["phase"] == phase).count(), 2);
    }
    let layers = json["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 2 * 2 * LAYERS);
    assert!(layers
        .iter()
        .all(|r| r["phase"] == "prefill" || r["phase"] == "decode"));
    let phases = json["phases"].as_array().unwrap();
    assert_eq!(phases[0]["phase"], "prefill");
    assert_eq!(phases[0]["tokens"], u64::from(PROMPT));
    assert_eq!(phases[1]["phase"], "decode");
    assert_eq!(phases[1]["passes"], DECODES);
    let l = brickprof::figures::latency(p.pass_series.as_ref().unwrap()).unwrap();
    let lat = &json["latency"];
    assert_eq!(lat["ttft"]["count"], 1);
    assert_eq!(lat["ttft"]["p50_ns"], l.ttft.summary().unwrap().p50_ns);
    assert_eq!(lat["tpot"]["count"], DECODES);
    assert_eq!(lat["tpot"]["p99_ns"], l.tpot.summary().unwrap().p99_ns);
    assert_eq!(lat["decode"]["tokens"], DECODES);
    assert_eq!(
        lat["decode"]["tokens_per_sec"].as_f64().unwrap(),
        l.decode.tokens as f64 * 1e9 / l.decode.wall_ns as f64
    );
    let fits = json["fits"].as_array().unwrap();
    let attn = fits
        .iter()
        .find(|f| f["brick"] == "AttentionScore" && f["phase"] == "decode")
        .expect("a decode fit of AttentionScore");
    assert_eq!(attn["regressor"], "context");
    assert!((attn["a_ns"].as_f64().unwrap() - ATTN_A as f64).abs() < 1e-6);
    assert!((attn["b_ns"].as_f64().unwrap() - ATTN_B as f64).abs() < 1e-9);
    assert_eq!(attn["passes"], DECODES);
    assert_eq!(attn["x_max"], u64::from(PROMPT) + DECODES);
}

// spec/profile-format.md "Reports" and "Versions": a version-2 file (no phases) exports every
// row as phase "unspecified", with no fit.
#[test]
fn a_version_2_file_exports_as_unspecified() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/profile-v2.json"
    );
    let p = Profile::load(path).unwrap();
    for by_layer in [false, true] {
        let opts = TableOptions {
            by_layer,
            ..TableOptions::default()
        };
        let csv = render_csv(&p, &opts);
        let (header, rows) = csv_rows(&csv);
        assert!(!rows.is_empty());
        let (phase, fit) = (column(&header, "phase"), column(&header, "fit_regressor"));
        assert!(rows
            .iter()
            .all(|r| r[phase] == "unspecified" && r[fit].is_empty()));
    }
    let json: serde_json::Value =
        serde_json::from_str(&render_json(&p, &TableOptions::default())).unwrap();
    let bricks = json["bricks"].as_array().unwrap();
    assert_eq!(bricks.len(), p.bricks.len());
    assert!(bricks.iter().all(|b| b["phase"] == "unspecified"));
    assert_eq!(json["phases"][0]["phase"], "unspecified");
    assert_eq!(json["phases"][0]["passes"], p.passes.summary().count);
    assert!(json["fits"].as_array().unwrap().is_empty());
    assert!(json.get("latency").is_none());
}
