//! spec/imports.md "Pass ranges": a file whose kernels sit in brickprof's pass ranges
//! (`pass/{phase}/{n}`) imports with its passes: counted, timed and split by phase, each
//! brick call in its pass's phase, so the table, phases and exports read them; kernels inside
//! a pass but outside every brick are counted outside the bricks and in the pass. Files without
//! pass ranges (the recorded ncu file) keep "no passes marked"; rocprofv3's files name the
//! innermost range only, so their passes are not read (a note says so).

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
        assert_eq!(p.passes.count(), 3, "{file}");
        assert_eq!(p.meta.counters.passes, 3, "{file}");
        assert_eq!(p.meta.phases, [Phase::Prefill, Phase::Decode], "{file}");
        let phases: Vec<(Phase, u64)> = p
            .phase_passes
            .iter()
            .map(|pp| (pp.phase, pp.stats.count()))
            .collect();
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
                assert_eq!(r.stats.count(), want, "{file} {} {:?}", b.name, r.phase);
            }
        }
        let decode = phase_profile(p, PhaseFilter::Only(Phase::Decode));
        assert_eq!(decode.passes.count(), 2, "{file}");
        assert_eq!(decode.brick("RmsNorm").unwrap().stats.count(), 4, "{file}");
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
    let in_bricks: u64 = p.bricks.iter().map(|b| b.stats.total_ns()).sum();
    let outside = p.meta.outside_bricks.unwrap();
    assert_eq!(outside.kernels, 3);
    assert_eq!(p.passes.total_ns(), in_bricks + outside.busy_ns);
    // The recorded run is the same pass three times.
    assert_eq!(p.passes.min_ns(), p.passes.max_ns());
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
        .map(|r| r.stats.total_ns())
        .sum();
    assert!(
        p.passes.total_ns() > in_bricks,
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
        assert_eq!(imp.profile.passes.count(), 0, "{file}");
        assert!(imp.profile.phase_passes.is_empty(), "{file}");
        let table = brickprof::output::render_table(&imp.profile, &Default::default());
        assert!(table.contains("no passes marked"), "{file}:\n{table}");
    }
}

#[test]
fn rocprofv3_pass_ranges_are_noted_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let kernels = dir.path().join("3141_kernel_trace.csv");
    let markers = dir.path().join("3141_marker_api_trace.csv");
    std::fs::copy(fixture("rocprofv3/3141_kernel_trace.csv"), &kernels).unwrap();
    let mut text = std::fs::read_to_string(fixture("rocprofv3/3141_marker_api_trace.csv")).unwrap();
    text.push_str("\"MARKER_CORE_API\",\"pass/decode/1\",3141,3141,99,5000000000,5900000000\n");
    std::fs::write(&markers, text).unwrap();
    let with = import(&kernels).unwrap();
    let without = import(fixture("rocprofv3/3141_kernel_trace.csv")).unwrap();
    assert_eq!(super::summary(&with), super::summary(&without));
    assert_eq!(with.profile.passes.count(), 0);
    assert!(
        with.notes
            .iter()
            .any(|n| n.starts_with("1 pass ranges") && n.contains("not read")),
        "{:?}",
        with.notes
    );
    // The pass range is no brick, and no range name without a kernel.
    assert!(
        !with.notes.iter().any(|n| n.contains("have no kernel")),
        "{:?}",
        with.notes
    );
}
