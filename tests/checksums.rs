//! spec/checksums.md: checksums recorded by the profiler, comparison of runs, persistence.

use brickprof::checksum::{ChecksumLog, CHECKSUM_FORMAT_VERSION};
use brickprof::{compare, BrickId, BrickProfiler, Error, ProfilerConfig, Tolerance, Verdict};

const BRICKS: [BrickId; 3] = [
    BrickId::RmsNorm,
    BrickId::QkvProjection,
    BrickId::DownProjection,
];

/// What to do to one kernel's output in a synthetic run.
#[derive(Clone, Copy, PartialEq)]
enum Plant {
    Nothing,
    Perturb(usize, BrickId, f32),
    Nan(usize, BrickId),
    Skip(usize, BrickId),
}

/// A deterministic 4-layer "model": each brick transforms a 512-element state and is
/// checksummed; two passes; every later kernel depends on every earlier one.
fn run(plant: Plant) -> ChecksumLog {
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 4,
        checksums: true,
        ..ProfilerConfig::default()
    })
    .unwrap();
    let mut x: Vec<f32> = (0..512).map(|i| (i as f32 * 0.37).sin()).collect();
    for _pass in 0..2 {
        for layer in 0..4 {
            prof.begin_layer(layer);
            for (k, brick) in BRICKS.iter().enumerate() {
                if plant == Plant::Skip(layer, *brick) {
                    continue;
                }
                let t = prof.start_brick(*brick);
                let mean = x.iter().sum::<f32>() / x.len() as f32;
                for (i, v) in x.iter_mut().enumerate() {
                    *v = (*v * 0.9 + mean * 0.1 + (i + k) as f32 * 1e-3).tanh();
                }
                prof.stop_brick(t, x.len() as u64);
                match plant {
                    Plant::Perturb(l, b, by) if l == layer && b == *brick => x[100] += by,
                    Plant::Nan(l, b) if l == layer && b == *brick => x[7] = f32::NAN,
                    _ => {}
                }
                prof.record_checksum(Some(layer), *brick, &x);
            }
            prof.end_layer();
        }
        prof.record_checksum(None, BrickId::LmHead, &x[..16]);
        prof.end_pass(1).unwrap();
    }
    prof.take_checksums()
}

#[test]
fn the_report_names_the_planted_perturbation() {
    // spec/checksums.md "Comparing runs": first divergence.
    let reference = run(Plant::Nothing);
    assert_eq!(reference.len(), 2 * (4 * 3 + 1));
    let candidate = run(Plant::Perturb(2, BrickId::QkvProjection, 1e-3));
    let report = compare(&reference, &candidate, Tolerance::EXACT);
    let first = report.first().expect("a divergence");
    assert_eq!(first.key.pass, 0);
    assert_eq!(first.key.layer, Some(2));
    assert_eq!(first.key.brick, "QkvProjection");
    assert_eq!(first.verdict, Verdict::Diverged);
    assert!(first.relative_difference > 0.0);
    assert_eq!(
        report.bitwise_equal,
        2 * 3 + 1,
        "everything before layer 2 QKV matches"
    );
    assert!(!report.is_match());
    let text = report.to_string();
    assert!(
        text.contains("First divergence: pass 0 layer 2 QkvProjection"),
        "{text}"
    );
    assert!(report.nan_origin.is_none());
    assert!(!report.structural_mismatch());
}

#[test]
fn a_small_perturbation_within_tolerance_is_close_not_diverged() {
    // spec/checksums.md "Verdicts".
    let reference = run(Plant::Nothing);
    let candidate = run(Plant::Perturb(3, BrickId::DownProjection, 1e-6));
    let strict = compare(&reference, &candidate, Tolerance::EXACT);
    assert!(!strict.is_match());
    let loose = compare(
        &reference,
        &candidate,
        Tolerance {
            rtol: 1e-3,
            atol: 1e-6,
        },
    );
    let first = loose.first().unwrap();
    assert_eq!(
        (first.key.layer, first.key.brick.as_str()),
        (Some(3), "DownProjection")
    );
    assert_eq!(first.verdict, Verdict::WithinTolerance);
    assert!(loose.is_match(), "{loose}");
}

#[test]
fn the_report_names_the_nan_origin() {
    // spec/checksums.md "NaN origin".
    let reference = run(Plant::Nothing);
    let candidate = run(Plant::Nan(1, BrickId::RmsNorm));
    let report = compare(&reference, &candidate, Tolerance::EXACT);
    let origin = report.nan_origin.as_ref().expect("a NaN origin");
    assert_eq!((origin.key.pass, origin.key.layer), (0, Some(1)));
    assert_eq!(origin.key.brick, "RmsNorm");
    assert!(origin.summary.nan >= 1);
    assert!(report
        .to_string()
        .contains("NaN/Inf origin: pass 0 layer 1 RmsNorm"));
}

#[test]
fn a_kernel_present_in_one_run_only_is_a_structural_mismatch() {
    // spec/checksums.md "Structural mismatch".
    let reference = run(Plant::Nothing);
    let candidate = run(Plant::Skip(0, BrickId::DownProjection));
    let report = compare(&reference, &candidate, Tolerance::EXACT);
    assert!(report.structural_mismatch());
    assert_eq!(report.only_in_reference.len(), 2, "one per pass");
    assert!(report
        .only_in_reference
        .iter()
        .all(|k| k.brick == "DownProjection"));
    assert!(report.only_in_candidate.is_empty());
    let swapped = compare(&candidate, &reference, Tolerance::EXACT);
    assert_eq!(swapped.only_in_candidate.len(), 2);
    assert!(!report.is_match() && !swapped.is_match());
}

#[test]
fn identical_runs_match_bitwise() {
    let a = run(Plant::Nothing);
    let report = compare(&a, &run(Plant::Nothing), Tolerance::EXACT);
    assert!(report.is_match());
    assert_eq!(report.bitwise_equal, a.len());
    assert!(report.first().is_none());
}

#[test]
fn call_indices_separate_repeated_bricks_and_reset_each_pass() {
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 1,
        checksums: true,
        ..ProfilerConfig::default()
    })
    .unwrap();
    for _ in 0..2 {
        prof.record_checksum(Some(0), BrickId::RmsNorm, &[1.0]);
        prof.record_checksum(Some(0), BrickId::RmsNorm, &[2.0]);
        prof.end_pass(1).unwrap();
    }
    let keys: Vec<(u64, u32)> = prof
        .checksums()
        .entries
        .iter()
        .map(|e| (e.key.pass, e.key.call))
        .collect();
    assert_eq!(keys, [(0, 0), (0, 1), (1, 0), (1, 1)]);
}

#[test]
fn checksums_off_records_nothing() {
    let mut prof = BrickProfiler::default();
    prof.record_checksum(Some(0), BrickId::RmsNorm, &[1.0]);
    assert!(prof.checksums().is_empty());
    prof.set_checksums(true);
    prof.record_checksum(None, BrickId::RmsNorm, &[1.0]);
    assert_eq!(prof.checksums().len(), 1);
}

#[test]
fn logs_round_trip_through_disk() {
    // spec/checksums.md "File format".
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let log = run(Plant::Nan(0, BrickId::QkvProjection));
    log.save(&path).unwrap();
    let back = ChecksumLog::load(&path).unwrap();
    assert_eq!(back, log);
}

#[test]
fn bad_files_are_errors_naming_the_file_and_fault() {
    // spec/checksums.md "File format": never a panic, always the file and the fault.
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    run(Plant::Nothing).save(&good).unwrap();
    let text = std::fs::read_to_string(&good).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("empty.json", String::new(), "empty"),
        ("garbage.json", "this is not json".into(), "line 1"),
        (
            "truncated.json",
            text[..text.len() / 2].to_string(),
            "ends early",
        ),
        (
            "version.json",
            text.replace(
                &format!("\"format_version\": {CHECKSUM_FORMAT_VERSION}"),
                "\"format_version\": 99",
            ),
            "version 99",
        ),
        (
            "kind.json",
            text.replace("\"checksums\"", "\"profile\""),
            "not a brickprof checksums",
        ),
        (
            "nokind.json",
            "{\"format_version\": 1}".into(),
            "no \"kind\"",
        ),
        (
            "badhash.json",
            text.replacen("\"hash\": \"", "\"hash\": \"zz", 1),
            "hex",
        ),
    ];
    for (name, body, fault) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let err = ChecksumLog::load(&path).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(name), "{name}: {msg}");
        assert!(msg.contains(fault), "{name}: expected {fault:?} in {msg}");
    }
    let missing = ChecksumLog::load(dir.path().join("missing.json")).unwrap_err();
    assert!(matches!(missing, Error::Io { .. }), "{missing}");
    let is_dir = ChecksumLog::load(dir.path()).unwrap_err();
    assert!(is_dir.to_string().contains("directory"), "{is_dir}");
}

#[test]
fn zero_tolerance_calls_every_bit_difference_a_divergence() {
    // spec/checksums.md "Verdicts": a permutation keeps every summary statistic.
    use brickprof::checksum::KernelKey;
    let key = KernelKey {
        pass: 0,
        layer: Some(0),
        brick: "AttentionOutput".into(),
        call: 0,
    };
    let (mut a, mut b) = (ChecksumLog::new(), ChecksumLog::new());
    a.record_f32(key.clone(), &[1.0, 2.0, 3.0]);
    b.record_f32(key, &[3.0, 2.0, 1.0]);
    let exact = compare(&a, &b, Tolerance::EXACT);
    assert_eq!(exact.first().unwrap().verdict, Verdict::Diverged);
    assert_eq!(exact.first().unwrap().relative_difference, 0.0);
    assert!(!exact.is_match());
    let tolerant = compare(
        &a,
        &b,
        Tolerance {
            rtol: 1e-6,
            atol: 0.0,
        },
    );
    assert_eq!(tolerant.first().unwrap().verdict, Verdict::WithinTolerance);
    assert!(tolerant.is_match());
}
