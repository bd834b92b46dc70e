//! spec/imports.md "Pass ranges": a file whose kernels sit in brickprof's pass ranges
//! (`pass/{phase}/{n}`) imports with its passes: counted, timed and split by phase, each
//! brick call in its pass's phase, so the table, phases and exports read them; kernels inside
//! a pass but outside every brick are counted outside the bricks and in the pass. Files without
//! pass ranges (the recorded ncu file) keep "no passes marked"; rocprofv3's CSV files name the
//! innermost range only, so their passes are read by time (spec/imports.md "rocprofv3"): a
//! kernel is in the pass range of its thread whose host interval holds its device interval.

use brickprof::import::import;
use brickprof::model::PhaseFilter;
use brickprof::profile::phase_profile;
use brickprof::Phase;

use super::fixture;

const WITH_PASSES: [&str; 2] = ["ncu_raw_nvtx_passes.csv", "nsys/brickprof_passes.sqlite"];

#[test]
fn pass_ranges_make_passes_by_phase() {
    for file in WITH_PASSES {
        let imp = import(fixture(file)).unwrap();
        let p = &imp.profile;
        assert_eq!(p.passes.summary().count, 3, "{file}");
        assert_eq!(p.meta.counters.passes, 3, "{file}");
        assert_eq!(p.meta.phases, [Phase::Prefill, Phase::Decode], "{file}");
        let phases = passes_by_phase(p);
        assert_eq!(phases, [(Phase::Prefill, 1), (Phase::Decode, 2)], "{file}");
        // Each brick call is in its pass's phase: one prefill call and two decode calls a row.
        for b in &p.bricks {
            for r in &b.rows {
                let want = match r.phase {
                    Phase::Prefill => 1,
                    Phase::Decode => 2,
                    // nsys: the second thread's Sampling call is in no pass.
                    Phase::Unspecified => 1,
                    Phase::Mixed => 0,
                };
                assert_eq!(
                    r.stats.summary().count,
                    want,
                    "{file} {} {:?}",
                    b.name,
                    r.phase
                );
            }
        }
        let decode = phase_profile(p, PhaseFilter::Only(Phase::Decode));
        assert_eq!(decode.passes.summary().count, 2, "{file}");
        assert_eq!(
            decode.brick("RmsNorm").unwrap().stats.summary().count,
            4,
            "{file}"
        );
        // The kernel inside each pass but outside the bricks: outside, never dropped.
        let outside = p.meta.outside_bricks.unwrap();
        assert!(outside.kernels >= 3, "{file}: {outside:?}");
        let table = brickprof::output::render_table(p, &Default::default());
        assert!(!table.contains("no passes marked"), "{file}:\n{table}");
        assert!(table.contains("(outside any brick)"), "{file}:\n{table}");
    }
}

#[test]
fn ncu_passes_are_their_kernels_time_outside_bricks_included() {
    // No timestamps: a pass's time is its kernels' durations, the one outside the bricks too.
    let imp = import(fixture("ncu_raw_nvtx_passes.csv")).unwrap();
    let p = &imp.profile;
    let in_bricks: u64 = p.bricks.iter().map(|b| b.stats.summary().total_ns).sum();
    let outside = p.meta.outside_bricks.unwrap();
    assert_eq!(outside.kernels, 3);
    assert_eq!(p.passes.summary().total_ns, in_bricks + outside.busy_ns);
    // The recorded run is the same pass three times.
    assert_eq!(p.passes.summary().min_ns, p.passes.summary().max_ns);
}

#[test]
fn nsys_passes_are_their_ranges_time() {
    // Nsight Systems gives each range's push and pop: a pass's time is its range's.
    let imp = import(fixture("nsys/brickprof_passes.sqlite")).unwrap();
    let p = &imp.profile;
    let in_bricks: u64 = p
        .bricks
        .iter()
        .flat_map(|b| &b.rows)
        .filter(|r| r.phase != Phase::Unspecified)
        .map(|r| r.stats.summary().total_ns)
        .sum();
    assert!(
        p.passes.summary().total_ns > in_bricks,
        "the range spans the launches"
    );
}

#[test]
fn files_without_pass_ranges_mark_no_pass() {
    for file in [
        "ncu_raw_nvtx.csv",
        "nsys/brickprof_run.sqlite",
        "rocprofv3/3141_kernel_trace.csv",
    ] {
        let imp = import(fixture(file)).unwrap();
        assert_eq!(imp.profile.passes.summary().count, 0, "{file}");
        assert!(imp.profile.phase_passes.is_empty(), "{file}");
        let table = brickprof::output::render_table(&imp.profile, &Default::default());
        assert!(table.contains("no passes marked"), "{file}:\n{table}");
    }
}

const ROC_PASSES: &str = "rocprofv3-passes/2718_kernel_trace.csv";

/// The rocprofv3 passes fixture's two files, copied into a fresh folder, the marker trace with
/// `extra` appended.
fn roc_copy(extra: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let kernels = dir.path().join("2718_kernel_trace.csv");
    std::fs::copy(fixture(ROC_PASSES), &kernels).unwrap();
    let markers = "rocprofv3-passes/2718_marker_api_trace.csv";
    let mut text = std::fs::read_to_string(fixture(markers)).unwrap();
    text.push_str(extra);
    std::fs::write(dir.path().join("2718_marker_api_trace.csv"), text).unwrap();
    (dir, kernels)
}

/// (phase, passes) of each phase with passes.
fn passes_by_phase(p: &brickprof::Profile) -> Vec<(Phase, u64)> {
    p.phase_passes
        .iter()
        .map(|pp| (pp.phase, pp.stats.summary().count))
        .collect()
}

/// (phase, calls) of each row of `brick` in `layer` (`None`: every row).
fn rows_of(p: &brickprof::Profile, brick: &str, layer: Option<usize>) -> Vec<(Phase, u64)> {
    p.brick(brick)
        .unwrap()
        .rows
        .iter()
        .filter(|r| layer.is_none_or(|n| r.row == brickprof::profile::RowKey::Layer(n)))
        .map(|r| (r.phase, r.stats.summary().count))
        .collect()
}

/// The checks both rocprofv3 formats share on their passes fixture `file` (three pass ranges:
/// prefill/0 and decode/1 synced, decode/2 Lagged, its LmHead call in no pass, `lagged`
/// kernels outside every pass range) and on `old`, their fixture without pass ranges.
fn passes_by_time(file: &str, lagged: u64, old: &str) -> brickprof::import::Imported {
    let imp = import(fixture(file)).unwrap();
    let p = &imp.profile;
    assert_eq!(p.passes.summary().count, 3, "{file}");
    assert_eq!(p.meta.phases, [Phase::Prefill, Phase::Decode], "{file}");
    let phases = passes_by_phase(p);
    assert_eq!(phases, [(Phase::Prefill, 1), (Phase::Decode, 2)], "{file}");
    let lm = [
        (Phase::Unspecified, 1),
        (Phase::Prefill, 1),
        (Phase::Decode, 1),
    ];
    assert_eq!(rows_of(p, "LmHead", None), lm, "{file}");
    let note = format!("{lagged} kernels fell outside every pass range");
    assert!(
        imp.notes
            .iter()
            .any(|n| n.starts_with(&note) && n.contains("Lagged")),
        "{file}: {:?}",
        imp.notes
    );
    let old = import(fixture(old)).unwrap();
    assert_eq!(old.profile.passes.summary().count, 0);
    assert!(
        !old.notes.iter().any(|n| n.contains("pass range")),
        "{:?}",
        old.notes
    );
    imp
}

#[test]
fn spec_imports_rocprofv3_passes_are_read_by_time() {
    // decode/2 Lagged: its first kernels inside its range, 8 after it closed.
    let imp = passes_by_time(ROC_PASSES, 8, "rocprofv3/3141_kernel_trace.csv");
    let p = &imp.profile;
    // A pass's time is its range's (push to pop on the host).
    assert_eq!(p.passes.summary().max_ns, 315_350);
    assert_eq!(p.passes.summary().min_ns, 70_000);
    assert_eq!(
        rows_of(p, "RmsNorm", Some(0)),
        [(Phase::Prefill, 1), (Phase::Decode, 2)]
    );
}

#[test]
fn spec_imports_rocprofv3_a_pass_range_ending_before_it_starts_is_an_error() {
    let (dir, kernels) =
        roc_copy("\"MARKER_CORE_API\",\"pass/decode/9\",2718,2718,999,5000900000,5000800000\n");
    let e = import(&kernels).unwrap_err().to_string();
    assert!(e.contains("2718_marker_api_trace.csv"), "{e}");
    assert!(
        e.contains("\"pass/decode/9\" ends (5000800000) before it starts"),
        "{e}"
    );
    drop(dir);
}

#[test]
fn spec_imports_rocprofv3_pass_ranges_of_an_unknown_thread_give_a_note() {
    // The fixture's pass ranges moved to a thread with no kernel: no kernel is in a pass.
    let text = std::fs::read_to_string(fixture("rocprofv3-passes/2718_marker_api_trace.csv"))
        .unwrap()
        .lines()
        .map(|l| {
            if l.contains("\"pass/") {
                l.replacen(",2718,2718,", ",2718,77,", 1)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let (dir, kernels) = roc_copy("");
    std::fs::write(dir.path().join("2718_marker_api_trace.csv"), text + "\n").unwrap();
    let imp = import(&kernels).unwrap();
    assert_eq!(imp.profile.passes.summary().count, 0);
    assert!(
        imp.notes
            .iter()
            .any(|n| n.starts_with("3 pass ranges") && n.contains("no kernel ran inside one")),
        "{:?}",
        imp.notes
    );
    assert!(
        !imp.notes.iter().any(|n| n.contains("Lagged")),
        "{:?}",
        imp.notes
    );
}

#[test]
fn spec_imports_rocpd_passes_are_read_by_time() {
    // decode/2 Lagged: its range closes while its LmHead kernel still runs.
    let imp = passes_by_time("rocpd/brickprof_passes.db", 1, "rocpd/brickprof_run.db");
    assert_eq!(
        rows_of(&imp.profile, "RmsNorm", Some(0)),
        [(Phase::Prefill, 1), (Phase::Decode, 2)]
    );
}
