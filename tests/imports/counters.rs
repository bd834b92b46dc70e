//! An import's hardware counters (spec/imports.md "Counters", "Measured roofline", "Declared
//! and measured work"; spec/profile-format.md "Hardware counters"): saved with the profile,
//! checked on load, merged; placed under a device's roofs; set beside the work an engine
//! declares, each by value and against scripts/vendor-check.py's independent computation.

use std::path::Path;
use std::process::Command;

use brickprof::compare::{instrument_diff, DeclaredMeasured, InstrumentRow};
use brickprof::import::{import, BrickCounters};
use brickprof::profile::RowKey;
use brickprof::roofline::{Bound, DevicePeaks};
use brickprof::timeline::SimDevice;
use brickprof::{BrickId, BrickProfiler, Profile, ProfilerConfig, Work};
use serde_json::Value;

use super::{fixture, same};

/// H200 SXM: 67 TFLOP/s FP32 (the fixture's kernels are FP32 FMA loops), 4.8 TB/s HBM3e.
const H200: (f64, f64) = (67_000.0, 4_800.0);

fn ncu() -> Profile {
    import(fixture("ncu_raw_nvtx.csv")).unwrap().profile
}

fn counters<'a>(p: &'a Profile, brick: &str, row: RowKey) -> &'a BrickCounters {
    p.hardware_counters
        .iter()
        .find(|c| c.brick == brick && c.row == row)
        .unwrap_or_else(|| panic!("no counters for {brick} {row:?}"))
}

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/vendor-check.py")
}

/// scripts/vendor-check.py's reading of the ncu fixture with `args`, when python3 is present.
fn script_reading(args: &[&str]) -> Option<Value> {
    let out = Command::new("python3")
        .arg(script())
        .arg(fixture("ncu_raw_nvtx.csv"))
        .args(args)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// The script's cell for (brick, row) in a reading.
fn cell<'a>(reading: &'a Value, brick: &str, row: RowKey) -> &'a Value {
    let row = match row {
        RowKey::Layer(n) => Value::from(n),
        _ => Value::from("model"),
    };
    reading["bricks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["brick"] == brick && c["row"] == row)
        .unwrap()
}

#[test]
fn spec_imports_counters_travel_with_the_saved_profile() {
    let p = ncu();
    assert_eq!(p.hardware_counters.len(), 9);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ncu.json");
    p.save(&out).unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("\"hardware_counters\""), "{text}");
    let back = Profile::load(&out).unwrap();
    assert_eq!(back, p);
    let rms = counters(&back, "RmsNorm", RowKey::Layer(0));
    assert_eq!(
        (
            rms.calls,
            rms.kernels,
            rms.time_ns,
            rms.dram_bytes,
            rms.flops
        ),
        (1, 1, 16_096, Some(34_443_008), Some(8_388_608))
    );
    // A trace without counter columns keeps its calls and kernels, and writes no absent one.
    let rocprof = import(fixture("rocprofv3/3141_kernel_trace.csv")).unwrap();
    rocprof.profile.save(&out).unwrap();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let entries = saved["hardware_counters"].as_array().unwrap();
    assert_eq!(entries.len(), 9);
    for e in entries {
        assert!(e["kernels"].is_u64() && e.get("dram_bytes").is_none() && e.get("flops").is_none());
    }
    assert_eq!(Profile::load(&out).unwrap(), rocprof.profile);
}

#[test]
fn spec_profile_format_hardware_counters_a_file_without_them_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let old = Profile::load(fixture("../profile-v2.json")).unwrap();
    assert!(old.hardware_counters.is_empty());
    old.save(&a).unwrap();
    Profile::load(&a).unwrap().save(&b).unwrap();
    let (ta, tb) = (
        std::fs::read_to_string(&a).unwrap(),
        std::fs::read_to_string(&b).unwrap(),
    );
    assert_eq!(ta, tb);
    assert!(!ta.contains("hardware_counters"));
}

#[test]
fn spec_profile_format_hardware_counters_merge_adds_them_pair_by_pair() {
    let p = ncu();
    let mut twice = p.clone();
    twice.merge(&p).unwrap();
    let (one, two) = (
        counters(&p, "DownProjection", RowKey::Layer(1)),
        counters(&twice, "DownProjection", RowKey::Layer(1)),
    );
    assert_eq!(two.calls, 2 * one.calls);
    assert_eq!(two.kernels, 2 * one.kernels);
    assert_eq!(two.time_ns, 2 * one.time_ns);
    assert_eq!(two.dram_bytes, one.dram_bytes.map(|b| 2 * b));
    assert_eq!(two.flops, one.flops.map(|f| 2 * f));
    // Per call, nothing changes.
    assert_eq!(two.rates().flops_per_call, one.rates().flops_per_call);

    // A side without counters adds none: the counters cover the calls they counted.
    let mut bare = p.clone();
    bare.hardware_counters.clear();
    let (mut x, mut y) = (p.clone(), bare.clone());
    x.merge(&bare).unwrap();
    y.merge(&p).unwrap();
    assert_eq!(x, y, "merge order does not show");
    assert_eq!(x.hardware_counters, p.hardware_counters);
    assert_eq!(x.brick("RmsNorm").unwrap().stats.summary().count, 4);

    // A side that did not count FLOPs makes them unknown over the merged calls.
    let mut no_flops = p.clone();
    for c in &mut no_flops.hardware_counters {
        c.flops = None;
    }
    let mut m = p.clone();
    m.merge(&no_flops).unwrap();
    let c = counters(&m, "LmHead", RowKey::Model);
    assert_eq!((c.calls, c.flops), (2, None));
    assert_eq!(c.dram_bytes, Some(2 * 16_784_896));
    // Merged and saved, it loads again.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.json");
    m.save(&out).unwrap();
    assert_eq!(Profile::load(&out).unwrap(), m);
}

#[test]
fn spec_profile_format_hardware_counters_are_checked_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bad.json");
    type Mutation = fn(&mut Profile);
    let cases: [(&str, Mutation); 5] = [
        ("no such brick row", |p| {
            p.hardware_counters[0].brick = "Nowhere".into()
        }),
        ("no such brick row", |p| {
            p.hardware_counters[1].row = RowKey::Model
        }),
        ("appears twice", |p| {
            let c = p.hardware_counters[0].clone();
            p.hardware_counters.push(c);
        }),
        ("calls counted, but the row made", |p| {
            p.hardware_counters[0].calls = 2;
            p.hardware_counters[0].kernels = 2;
        }),
        ("a call has at least one", |p| {
            p.hardware_counters[0].kernels = 0
        }),
    ];
    for (want, mutate) in cases {
        let mut p = ncu();
        mutate(&mut p);
        p.save(&out).unwrap();
        let e = Profile::load(&out).unwrap_err().to_string();
        assert!(e.contains("bad.json"), "{e}");
        assert!(e.contains("hardware_counters"), "{e}");
        assert!(e.contains(want), "{want}: {e}");
    }
    let mut p = ncu();
    p.hardware_counters[0].time_ns += 1;
    p.save(&out).unwrap();
    let e = Profile::load(&out).unwrap_err().to_string();
    assert!(e.contains("ns counted, but the row's time is"), "{e}");
}

#[test]
fn spec_imports_measured_roofline_by_hand_and_by_the_script() {
    let p = ncu();
    let peaks = DevicePeaks::parse(&format!("{},{}", H200.0, H200.1)).unwrap();
    // RmsNorm, layer 0: 8,388,608 FLOPs over 34,443,008 DRAM bytes in 16,096 ns: 0.24 FLOP/B,
    // under the ridge (67000 / 4800 = 13.96): memory-bound, roof 0.24 x 4800 GFLOP/s.
    let rms = counters(&p, "RmsNorm", RowKey::Layer(0));
    let r = rms.roofline(&peaks).unwrap();
    let ai = 8_388_608.0 / 34_443_008.0;
    let achieved = 8_388_608.0 / 16_096.0;
    assert_eq!(r.bound, Bound::Memory);
    assert!((r.roof - ai * 4_800.0).abs() < 1e-9, "{r:?}");
    assert!((r.roof_pct - achieved / (ai * 4_800.0) * 100.0).abs() < 1e-9);
    assert!((44.0..45.0).contains(&r.roof_pct), "{r:?}");
    // QkvProjection: 32 FLOP/B, over the ridge: compute-bound under 67 TFLOP/s.
    let qkv = counters(&p, "QkvProjection", RowKey::Layer(0));
    let r = qkv.roofline(&peaks).unwrap();
    assert_eq!((r.bound, r.roof), (Bound::Compute, 67_000.0));
    let pct = 536_870_912.0 / 24_384.0 / 67_000.0 * 100.0;
    assert!((r.roof_pct - pct).abs() < 1e-9, "{r:?}");
    // Cache levels do not change it: the counters count DRAM bytes.
    // (Peaks with an L2 level, as a saved file carries them: spec/work-accounting.md.)
    let mut with_l2 = serde_json::to_value(&peaks).unwrap();
    with_l2["levels"] =
        serde_json::json!([{ "level": "l2", "bytes": 60u64 << 20, "gbps": 20_000.0 }]);
    let cached: brickprof::roofline::DevicePeaks = serde_json::from_value(with_l2).unwrap();
    assert_eq!(cached.memory_roofs().count(), 2, "{cached:?}");
    assert_eq!(rms.roofline(&cached), rms.roofline(&peaks));
    // Nothing counted: no roofline.
    let rocprof = import(fixture("rocprofv3/3141_kernel_trace.csv")).unwrap();
    assert!(rocprof
        .profile
        .hardware_counters
        .iter()
        .all(|c| c.roofline(&peaks).is_none()));

    // Every (brick, row) against the script's reading (recorded; re-run when python3 is here).
    let recorded: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("expected/ncu_raw_nvtx_roofline.json")).unwrap(),
    )
    .unwrap();
    if let Some(now) = script_reading(&["--peaks", "67000,4800"]) {
        assert_eq!(
            now, recorded,
            "re-record expected/ncu_raw_nvtx_roofline.json"
        );
    }
    for c in &p.hardware_counters {
        let r = c.roofline(&peaks).unwrap();
        let bound = match r.bound {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Unknown => "-",
        };
        let got = serde_json::json!({"bound": bound, "roof": r.roof, "roof_pct": r.roof_pct});
        let want = &cell(&recorded, &c.brick, c.row)["roofline"];
        if let Err(e) = same(&got, want, &format!("{} {}", c.brick, c.row)) {
            panic!("{e}");
        }
    }
}

/// The ncu fixture's run (tests/fixtures/vendor/README.md: `ncu_fixture.cu`, n = 2^22 floats)
/// as an engine would declare its work: an axpy (2n FLOPs, 3 arrays of n floats) for RmsNorm
/// and Activation, FMA loops of 64, 16 and 128 steps (2 FLOPs a step, 2 arrays) for
/// QkvProjection, DownProjection and LmHead, DownProjection's reduction besides (n adds, one
/// array).
fn declared() -> Profile {
    const N: u64 = 1 << 22;
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: 2,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(256)).unwrap();
    let call = |prof: &mut BrickProfiler<_>, brick, ns: u64, work: Work| {
        let t = prof.start_brick(brick);
        device.launch(ns);
        prof.stop_brick_with(t, work);
    };
    let axpy = Work {
        elements: N,
        flops: 2 * N,
        bytes: 12 * N,
    };
    let fma = |steps: u64| Work {
        elements: N,
        flops: 2 * steps * N,
        bytes: 8 * N,
    };
    let down = Work {
        elements: N,
        flops: 2 * 16 * N + N,
        bytes: 12 * N,
    };
    prof.begin_pass();
    for layer in 0..2 {
        prof.begin_layer(layer);
        call(&mut prof, BrickId::RmsNorm, 16_000, axpy);
        call(&mut prof, BrickId::QkvProjection, 24_000, fma(64));
        call(&mut prof, BrickId::Activation, 16_000, axpy);
        call(&mut prof, BrickId::DownProjection, 48_000, down);
        prof.end_layer();
    }
    call(&mut prof, BrickId::LmHead, 36_000, fma(128));
    prof.end_pass(1).unwrap();
    prof.finalize().unwrap();
    prof.profile()
}

fn row<'a>(rows: &'a [InstrumentRow], brick: &str, key: Option<RowKey>) -> &'a InstrumentRow {
    rows.iter()
        .find(|r| r.brick == brick && r.row == key)
        .unwrap_or_else(|| panic!("no row {brick} {key:?}"))
}

fn quantity(declared: f64, measured: f64) -> DeclaredMeasured {
    DeclaredMeasured {
        declared: Some(declared),
        measured: Some(measured),
        ratio: Some(measured / declared),
    }
}

#[test]
fn spec_imports_declared_and_measured_work_side_by_side() {
    let (own, ncu) = (declared(), ncu());
    let d = instrument_diff(&own, &ncu, ["own.json", "ncu_raw_nvtx.csv"], true);
    const N: f64 = (1u64 << 22) as f64;
    let rms = row(&d.rows, "RmsNorm", Some(RowKey::Layer(0)));
    let w = rms.work.as_ref().unwrap();
    assert_eq!((w.declared_by, w.measured_by), (0, 1));
    assert_eq!(w.flops, quantity(2.0 * N, 8_388_608.0));
    assert_eq!(w.bytes, quantity(12.0 * N, 34_443_008.0));
    let down = row(&d.rows, "DownProjection", Some(RowKey::Layer(1)));
    let w = down.work.as_ref().unwrap();
    assert_eq!(w.flops, quantity(33.0 * N, 138_395_648.0));
    let text = d.render();
    assert!(
        text.contains(
            "  FLOPs a call: declared 8.39MFLOP (A), measured 8.39MFLOP (B), measured/declared 1.00"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "  bytes a call: declared 50.3MB (A), measured 34.4MB (B, DRAM), measured/declared 0.68"
        ),
        "{text}"
    );
    let json = serde_json::to_value(&d).unwrap();
    assert!(json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["work"]["flops"]["ratio"].is_number()));

    // The vendor file as A: the same figures, the sides swapped.
    let back = instrument_diff(&ncu, &own, ["ncu", "own"], true);
    let w = row(&back.rows, "RmsNorm", Some(RowKey::Layer(0)))
        .work
        .as_ref()
        .unwrap();
    assert_eq!((w.declared_by, w.measured_by), (1, 0));
    assert_eq!(w.bytes, quantity(12.0 * N, 34_443_008.0));
    // By brick: both layers' calls, per call.
    let by_brick = instrument_diff(&own, &ncu, ["own", "ncu"], false);
    let w = row(&by_brick.rows, "RmsNorm", None).work.as_ref().unwrap();
    assert_eq!(
        w.bytes,
        quantity(12.0 * N, (34_443_008.0 + 34_474_240.0) / 2.0)
    );
    // No counters on either side (a kernel trace), or no declared work: nothing to set beside.
    let rocprof = import(fixture("rocprofv3/3141_kernel_trace.csv"))
        .unwrap()
        .profile;
    let none = instrument_diff(&own, &rocprof, ["own", "rocprof"], true);
    assert!(none.rows.iter().all(|r| r.work.is_none()));
    assert!(!none.render().contains("a call: declared"));
    let none = instrument_diff(&ncu, &ncu, ["ncu", "ncu"], true);
    assert!(none.rows.iter().all(|r| r.work.is_none()));

    // Every (brick, row) against the script's own reading of both files.
    let dir = tempfile::tempdir().unwrap();
    let own_file = dir.path().join("own.json");
    own.save(&own_file).unwrap();
    let Some(reading) = script_reading(&["--declared", own_file.to_str().unwrap()]) else {
        eprintln!("python3 not found: the declared work is checked by hand only");
        return;
    };
    for r in &d.rows {
        let w = r.work.as_ref().unwrap();
        let got = serde_json::json!({"flops": w.flops, "bytes": w.bytes});
        let want = &cell(&reading, &r.brick, r.row.unwrap())["declared_vs_measured"];
        if let Err(e) = same(&got, want, &format!("{} {:?}", r.brick, r.row)) {
            panic!("{e}");
        }
    }
}
