//! spec/imports.md "Exactness": every fixture's per-brick calls, kernels, times and counters
//! (and passes, where it has pass ranges) equal scripts/vendor-check.py's reading of the same
//! file (recorded in tests/fixtures/vendor/expected/, and re-run here when python3 is present).

use std::path::Path;
use std::process::Command;

use brickprof::import::{import, importer_of};
use serde_json::Value;

use super::{fixture, same, summary};

/// Every fixture: its file, the importer that reads it, and its recorded reading.
pub const CASES: [(&str, &str, &str); 10] = [
    ("ncu_raw_nvtx.csv", "ncu-csv", "ncu_raw_nvtx.json"),
    (
        "ncu_raw_nvtx_rename.csv",
        "ncu-csv",
        "ncu_raw_nvtx_rename.json",
    ),
    (
        "ncu_raw_nvtx_passes.csv",
        "ncu-csv",
        "ncu_raw_nvtx_passes.json",
    ),
    (
        "rocprofv3/3141_kernel_trace.csv",
        "rocprofv3-csv",
        "rocprofv3.json",
    ),
    (
        "rocprofv3-passes/2718_kernel_trace.csv",
        "rocprofv3-csv",
        "rocprofv3_passes.json",
    ),
    (
        "nsys/brickprof_run.sqlite",
        "nsys-sqlite",
        "nsys_brickprof_run.json",
    ),
    (
        "nsys/brickprof_passes.sqlite",
        "nsys-sqlite",
        "nsys_brickprof_passes.json",
    ),
    (
        "nsys/extrap_profile1.sqlite",
        "nsys-sqlite",
        "nsys_extrap_profile1.json",
    ),
    (
        "rocpd/brickprof_run.db",
        "rocpd",
        "rocpd_brickprof_run.json",
    ),
    (
        "rocpd/brickprof_passes.db",
        "rocpd",
        "rocpd_brickprof_passes.json",
    ),
];

/// The SQLite fixtures among [`CASES`].
pub fn sqlite_cases() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    CASES
        .into_iter()
        .filter(|(_, format, _)| matches!(*format, "nsys-sqlite" | "rocpd"))
}

fn expected(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture("expected").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn each_fixture_imports_what_the_independent_reading_finds() {
    for (file, format, want) in CASES {
        let path = fixture(file);
        assert_eq!(importer_of(&path).unwrap().name(), format, "{file}");
        let got = summary(&import(&path).unwrap());
        if let Err(e) = same(&got, &expected(want), file) {
            panic!("{e}");
        }
    }
}

#[test]
fn the_recorded_readings_are_the_scripts() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/vendor-check.py");
    for (file, _, want) in CASES {
        let Ok(out) = Command::new("python3")
            .arg(&script)
            .arg(fixture(file))
            .output()
        else {
            eprintln!("python3 not found: the recorded readings are taken as they are");
            return;
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            got,
            expected(want),
            "{file}: re-record with scripts/vendor-check.py"
        );
    }
}

#[test]
fn ncu_bricks_layers_counters_and_the_two_kernel_brick() {
    let imp = import(fixture("ncu_raw_nvtx.csv")).unwrap();
    let p = &imp.profile;
    assert_eq!(p.meta.timeline.name(), "ncu");
    assert_eq!(p.meta.layers, 2);
    assert!(
        p.meta.outside_bricks.is_none(),
        "every kernel of the fixture is in a range"
    );
    let names: Vec<&str> = p.bricks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "RmsNorm",
            "QkvProjection",
            "Activation",
            "DownProjection",
            "LmHead"
        ]
    );
    assert!(p.bricks.iter().all(|b| b.builtin));
    // DownProjection: two kernels, one call a layer; its time is their durations' sum.
    let down = p.brick("DownProjection").unwrap();
    assert_eq!(down.stats.summary().count, 2);
    let c0 = imp
        .profile
        .hardware_counters
        .iter()
        .find(|c| c.brick == "DownProjection" && c.row == brickprof::profile::RowKey::Layer(0))
        .unwrap();
    assert_eq!((c0.calls, c0.kernels), (1, 2));
    assert_eq!(c0.time_ns, 48_896);
    // FLOPs = 2 FFMA (the FMA loop) + FADD (the reduction) + FMUL; bytes = read + write.
    assert_eq!(c0.flops, Some(2 * 67_108_864 + 4_177_920));
    assert_eq!(c0.dram_bytes, Some(33_562_368));
    let lm = imp
        .profile
        .hardware_counters
        .iter()
        .find(|c| c.brick == "LmHead")
        .unwrap();
    assert_eq!(lm.row, brickprof::profile::RowKey::Model);
    assert!(
        lm.rates().intensity.unwrap() > 60.0,
        "the FMA loop is compute-bound"
    );
    assert!(imp.notes.is_empty(), "{:?}", imp.notes);
}

#[test]
fn ncu_renamed_kernels_import_the_same_bricks() {
    let a = summary(&import(fixture("ncu_raw_nvtx.csv")).unwrap());
    let b = summary(&import(fixture("ncu_raw_nvtx_rename.csv")).unwrap());
    assert_eq!(
        a["bricks"].as_array().unwrap().len(),
        b["bricks"].as_array().unwrap().len()
    );
    let names = |v: &Value| -> Vec<(Value, Value, Value)> {
        v["bricks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| (b["brick"].clone(), b["row"].clone(), b["kernels"].clone()))
            .collect()
    };
    assert_eq!(names(&a), names(&b));
}

#[test]
fn rocprofv3_kernels_outside_ranges_get_their_own_row() {
    let imp = import(fixture("rocprofv3/3141_kernel_trace.csv")).unwrap();
    let p = &imp.profile;
    assert_eq!(p.meta.timeline.name(), "rocprofv3");
    let o = p.meta.outside_bricks.unwrap();
    assert_eq!(o.kernels, 1);
    assert!(o.busy_ns > 0);
    // Every range pushed twice (two passes), each call with kernels: no disagreement.
    assert_eq!(imp.notes.len(), 1, "{:?}", imp.notes);
    assert!(imp.notes[0].starts_with("ranges from"), "{:?}", imp.notes);
    let table = brickprof::output::render_table(p, &Default::default());
    assert!(table.contains("(outside any brick)"), "{table}");
    assert!(imp
        .profile
        .hardware_counters
        .iter()
        .all(|c| c.dram_bytes.is_none() && c.flops.is_none()));
}

#[test]
fn an_imported_profile_saves_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    for (file, _, _) in CASES {
        let imp = import(fixture(file)).unwrap();
        let out = dir.path().join("p.json");
        imp.profile.save(&out).unwrap();
        let back = brickprof::Profile::load(&out).unwrap();
        assert_eq!(back.bricks, imp.profile.bricks, "{file}");
        assert_eq!(back.meta.timeline, imp.profile.meta.timeline);
    }
}

#[test]
fn without_the_marker_trace_renamed_names_still_make_bricks() {
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("3141_kernel_trace.csv");
    std::fs::copy(fixture("rocprofv3/3141_kernel_trace.csv"), &k).unwrap();
    let alone = import(&k).unwrap();
    let beside = import(fixture("rocprofv3/3141_kernel_trace.csv")).unwrap();
    assert_eq!(summary(&alone), summary(&beside));
    assert!(
        alone.notes[0].contains("no marker_api_trace.csv"),
        "{:?}",
        alone.notes
    );
}
