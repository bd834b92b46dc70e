//! spec/checksums.md: the algorithms' test vectors, dtypes, checksums recorded by the profiler
//! and sampled by a plan, comparison of runs, the file format (v2, v1 still loading). The CLI's
//! checksum tests: crates/brickprof-cli/tests/verdicts/checksums_cli.rs.

use std::num::NonZeroU64;
use std::path::Path;
use std::process::Command;

use brickprof::checksum::{
    checksum, Algorithm, ChecksumLog, DType, KernelKey, QuantBlocks, QuantFormat, Tensor,
};
use brickprof::{
    compare::{diff_files_with, divergence, DiffOptions, Tolerance, Verdict},
    profiler::ChecksumPlan,
    BrickId, BrickProfiler, Error, ProfilerConfig,
};

const BRICKS: [BrickId; 4] = [
    BrickId::RmsNorm,
    BrickId::QkvProjection,
    BrickId::AttentionScore,
    BrickId::DownProjection,
];

/// What to do to one kernel's output in a synthetic run.
#[derive(Clone, Copy, PartialEq)]
enum Plant {
    Nothing,
    Perturb(usize, BrickId, f32),
    Nan(usize, BrickId),
    Skip(usize, BrickId),
    /// A causal mask: `-inf` in every run's output of this brick (not a fault).
    Mask(BrickId),
    /// A mask in every run, and a NaN in this kernel of the candidate.
    MaskAndNan(BrickId, usize, BrickId),
}

/// A deterministic 4-layer "model": each brick transforms a 512-element state and is
/// checksummed; two passes; every later kernel depends on every earlier one.
fn run(plant: Plant) -> ChecksumLog {
    run_with(plant, ChecksumPlan::default())
}

fn run_with(plant: Plant, checksum_plan: ChecksumPlan) -> ChecksumLog {
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 4,
        checksums: true,
        checksum_plan,
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
                    Plant::MaskAndNan(_, l, b) if l == layer && b == *brick => x[7] = f32::NAN,
                    _ => {}
                }
                match plant {
                    Plant::Mask(m) | Plant::MaskAndNan(m, ..) if m == *brick => {
                        // The masked scores are recorded; the state goes on without them.
                        let mut scores = x.clone();
                        scores[256..].fill(f32::NEG_INFINITY);
                        prof.checksums().record(Some(layer), *brick, &scores);
                    }
                    _ => prof.checksums().record(Some(layer), *brick, &x),
                }
            }
            prof.end_layer();
        }
        prof.checksums().record(None, BrickId::LmHead, &x[..16]);
        prof.end_pass(1).unwrap();
    }
    prof.checksums().take_log()
}

#[test]
fn the_report_names_the_planted_perturbation() {
    // spec/checksums.md "Comparing runs": first divergence.
    let reference = run(Plant::Nothing);
    assert_eq!(reference.entries.len(), 2 * (4 * 4 + 1));
    let candidate = run(Plant::Perturb(2, BrickId::QkvProjection, 1e-3));
    let report = divergence(&reference, &candidate, Tolerance::default()).unwrap();
    let first = report.divergences.first().expect("a divergence");
    assert_eq!(first.key.pass, 0);
    assert_eq!(first.key.layer, Some(2));
    assert_eq!(first.key.brick, "QkvProjection");
    assert_eq!(first.verdict, Verdict::Diverged);
    assert!(first.relative_difference > 0.0);
    assert_eq!(
        report.bitwise_equal,
        2 * 4 + 1,
        "everything before layer 2 QKV matches"
    );
    assert!(!report.is_match());
    let text = report.to_string();
    assert!(
        text.contains("First divergence: pass 0 layer 2 QkvProjection"),
        "{text}"
    );
    assert!(report.nan_origin.is_none());
    assert!(report.only_in_reference.is_empty() && report.only_in_candidate.is_empty());
}

#[test]
fn a_small_perturbation_within_tolerance_is_close_not_diverged() {
    // spec/checksums.md "Comparing runs" (verdicts).
    let reference = run(Plant::Nothing);
    let candidate = run(Plant::Perturb(3, BrickId::DownProjection, 1e-6));
    let strict = divergence(&reference, &candidate, Tolerance::default()).unwrap();
    assert!(!strict.is_match());
    let loose = divergence(
        &reference,
        &candidate,
        Tolerance {
            rtol: 1e-3,
            atol: 1e-6,
        },
    )
    .unwrap();
    let first = loose.divergences.first().unwrap();
    assert_eq!(
        (first.key.layer, first.key.brick.as_str()),
        (Some(3), "DownProjection")
    );
    assert_eq!(first.verdict, Verdict::WithinTolerance);
    assert!(loose.is_match(), "{loose}");
}

#[test]
fn the_report_names_the_nan_origin() {
    // spec/checksums.md "Comparing runs" (NaN origin).
    let reference = run(Plant::Nothing);
    let candidate = run(Plant::Nan(1, BrickId::RmsNorm));
    let report = divergence(&reference, &candidate, Tolerance::default()).unwrap();
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
    // spec/checksums.md "Comparing runs" (structural mismatch).
    let reference = run(Plant::Nothing);
    let candidate = run(Plant::Skip(0, BrickId::DownProjection));
    let report = divergence(&reference, &candidate, Tolerance::default()).unwrap();
    assert!(!report.only_in_reference.is_empty() || !report.only_in_candidate.is_empty());
    assert_eq!(report.only_in_reference.len(), 2, "one per pass");
    assert!(report
        .only_in_reference
        .iter()
        .all(|k| k.brick == "DownProjection"));
    assert!(report.only_in_candidate.is_empty());
    let swapped = divergence(&candidate, &reference, Tolerance::default()).unwrap();
    assert_eq!(swapped.only_in_candidate.len(), 2);
    assert!(!report.is_match() && !swapped.is_match());
}

#[test]
fn identical_runs_match_bitwise() {
    let a = run(Plant::Nothing);
    let report = divergence(&a, &run(Plant::Nothing), Tolerance::default()).unwrap();
    assert!(report.is_match());
    assert_eq!(report.bitwise_equal, a.entries.len());
    assert!(report.divergences.is_empty());
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
        prof.checksums().record(Some(0), BrickId::RmsNorm, &[1.0]);
        prof.checksums().record(Some(0), BrickId::RmsNorm, &[2.0]);
        prof.end_pass(1).unwrap();
    }
    let keys: Vec<(u64, u32)> = prof
        .view()
        .checksum_log
        .entries
        .iter()
        .map(|e| (e.key.pass, e.key.call))
        .collect();
    assert_eq!(keys, [(0, 0), (0, 1), (1, 0), (1, 1)]);
}

#[test]
fn checksums_off_records_nothing() {
    let mut prof = BrickProfiler::default();
    prof.checksums().record(Some(0), BrickId::RmsNorm, &[1.0]);
    assert!(prof.view().checksum_log.entries.is_empty());
    prof.checksums().set_enabled(true);
    prof.checksums().record(None, BrickId::RmsNorm, &[1.0]);
    assert_eq!(prof.view().checksum_log.entries.len(), 1);
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
            text.replace("\"format_version\": 2", "\"format_version\": 99"),
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
    // spec/checksums.md "Comparing runs" (verdicts): a permutation keeps every summary statistic.
    let key = KernelKey {
        pass: 0,
        layer: Some(0),
        brick: "AttentionOutput".into(),
        call: 0,
    };
    let (mut a, mut b) = (ChecksumLog::default(), ChecksumLog::default());
    a.record(key.clone(), Tensor::F32(&[1.0, 2.0, 3.0]));
    b.record(key, Tensor::F32(&[3.0, 2.0, 1.0]));
    let exact = divergence(&a, &b, Tolerance::default()).unwrap();
    assert_eq!(
        exact.divergences.first().unwrap().verdict,
        Verdict::Diverged
    );
    assert_eq!(exact.divergences.first().unwrap().relative_difference, 0.0);
    assert!(!exact.is_match());
    let tolerant = divergence(
        &a,
        &b,
        Tolerance {
            rtol: 1e-6,
            atol: 0.0,
        },
    )
    .unwrap();
    assert_eq!(
        tolerant.divergences.first().unwrap().verdict,
        Verdict::WithinTolerance
    );
    assert!(tolerant.is_match());
}

/// The test-vector table of spec/checksums.md: id -> (fnv1a64, fnv1a64-lanes8,
/// fnv1a64-lanes8-v2).
fn spec_vectors() -> Vec<(String, [u64; 3])> {
    let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/spec/checksums.md"))
        .expect("spec/checksums.md");
    spec.lines()
        .map(|l| {
            l.split('|')
                .map(|c| c.trim().trim_matches('`'))
                .collect::<Vec<_>>()
        })
        .filter(|cells| cells.len() == 7 && cells[3..6].iter().all(|c| c.len() == 16))
        .map(|cells| {
            let hex = |s: &str| u64::from_str_radix(s, 16).expect("a hex hash in the table");
            (
                cells[1].to_string(),
                [hex(cells[3]), hex(cells[4]), hex(cells[5])],
            )
        })
        .collect()
}

/// The inputs the spec's table describes, built independently of the table.
fn vector_input(id: &str) -> Vec<u8> {
    match id {
        "empty" => vec![],
        "a" => b"a".to_vec(),
        "foobar" => b"foobar".to_vec(),
        "abcdefgh" => b"abcdefgh".to_vec(),
        "seq64" => (0..64).collect(),
        "seq71" => (0..71).collect(),
        "mod1000" => (0..1000u32).map(|i| ((31 * i + 7) % 256) as u8).collect(),
        "f32x100" => (0..100)
            .flat_map(|i| (i as f32 / 4.0 - 12.0).to_le_bytes())
            .collect(),
        "bf16x5" => [0x3f80u16, 0xc000, 0x0000, 0x8000, 0x7fc0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        "ones32" => collision_pair()
            .0
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        "ones32flip" => collision_pair()
            .1
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        other => panic!("spec/checksums.md names an unknown test vector {other:?}"),
    }
}

/// The collision of `fnv1a64-lanes8` (spec/checksums.md "Algorithms"): 32 f32 1.0 (16 words,
/// two per lane), and the same with element 1 negated (the sign bit: bit 63 of word 0, lane 0)
/// and bit 26 of element 16 flipped (the low half of word 8: lane 0's next word).
fn collision_pair() -> (Vec<f32>, Vec<f32>) {
    let a = vec![1.0f32; 32];
    let mut b = a.clone();
    b[1] = -b[1];
    b[16] = f32::from_bits(b[16].to_bits() ^ 1 << 26);
    (a, b)
}

#[test]
fn a_sign_flip_and_bit_26_of_the_lanes_next_word_change_the_checksum() {
    // spec/checksums.md "Algorithms": the two-bit collision of fnv1a64-lanes8 (found by
    // proptests/checksum_props.rs two_bit_flips_change_the_lane_hash) is gone from the
    // default algorithm, at every offset of the tensor and on any contents.
    let (a, b) = collision_pair();
    assert_ne!(a, b);
    assert_ne!(
        Algorithm::default().hash(Tensor::F32(&b)),
        Algorithm::default().hash(Tensor::F32(&a))
    );
    assert_ne!(
        checksum(Algorithm::default(), Tensor::F32(&b)).0,
        checksum(Algorithm::default(), Tensor::F32(&a)).0
    );
    // Through a comparison of two runs: a divergence, never "bitwise equal".
    let key = KernelKey {
        pass: 0,
        layer: Some(0),
        brick: "down_proj".into(),
        call: 0,
    };
    let (mut ra, mut rb) = (ChecksumLog::default(), ChecksumLog::default());
    ra.record(key.clone(), Tensor::F32(&a));
    rb.record(key, Tensor::F32(&b));
    let report = divergence(&ra, &rb, Tolerance::default()).unwrap();
    assert_eq!(report.bitwise_equal, 0);
    assert!(!report.is_match());
    // Every word j of a longer tensor of any values (one-pass SIMD path and tail alike):
    // the high element of word j negated, bit 26 of the low element of word j + 8 flipped.
    let x: Vec<f32> = (0..1100).map(|i| (i as f32 * 0.71).sin() * 100.0).collect();
    let before = Algorithm::default().hash(Tensor::F32(&x));
    for j in 0..x.len() / 2 - 8 {
        let mut y = x.clone();
        y[2 * j + 1] = -y[2 * j + 1];
        y[2 * (j + 8)] = f32::from_bits(y[2 * (j + 8)].to_bits() ^ 1 << 26);
        assert_ne!(
            Algorithm::default().hash(Tensor::F32(&y)),
            before,
            "word {j}"
        );
        assert_ne!(
            checksum(Algorithm::default(), Tensor::F32(&y)).0,
            before,
            "word {j}"
        );
    }
    // The old algorithm, still computed for its files, keeps its collision.
    let old = |x: &[f32]| checksum(Algorithm::Fnv1a64Lanes8, Tensor::F32(x)).0;
    assert_eq!(old(&b), old(&a));
}

#[test]
fn the_spec_test_vectors_hold() {
    // spec/checksums.md "Test vectors" (computed by spec/checksum_vectors.py).
    let vectors = spec_vectors();
    assert!(vectors.len() >= 11, "the spec's vector table was not found");
    let algorithms = [
        Algorithm::Fnv1a64,
        Algorithm::Fnv1a64Lanes8,
        Algorithm::Fnv1a64Lanes8V2,
    ];
    for (id, hashes) in vectors {
        let input = vector_input(&id);
        for (a, hash) in algorithms.into_iter().zip(hashes) {
            assert_eq!(a.hash(Tensor::Bytes(&input)), hash, "{id}: {a}");
            // Every code path (one-pass SIMD, assembly, portable) of every algorithm.
            assert_eq!(checksum(a, Tensor::Bytes(&input)).0, hash, "{id}: {a}");
            assert_eq!(checksum(a, Tensor::U8(&input)).0, hash, "{id}: {a}");
        }
    }
    // Typed views hash their little-endian bytes: the f32 and bf16 vectors again.
    let f: Vec<f32> = (0..100).map(|i| i as f32 / 4.0 - 12.0).collect();
    let (hash, summary) = checksum(Algorithm::default(), Tensor::F32(&f));
    assert_eq!(
        hash,
        Algorithm::Fnv1a64Lanes8V2.hash(Tensor::Bytes(&vector_input("f32x100")))
    );
    assert_eq!((summary.min, summary.max, summary.len), (-12.0, 12.75, 100));
    let bf = [0x3f80u16, 0xc000, 0x0000, 0x8000, 0x7fc0];
    let (hash, summary) = checksum(Algorithm::default(), Tensor::Bf16(&bf));
    assert_eq!(
        hash,
        Algorithm::Fnv1a64Lanes8V2.hash(Tensor::Bytes(&vector_input("bf16x5")))
    );
    assert_eq!((summary.sum, summary.nan), (-1.0, 1));
}

#[test]
fn every_dtype_is_recorded_with_its_entry() {
    // spec/checksums.md "Dtypes".
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 1,
        checksums: true,
        ..ProfilerConfig::default()
    })
    .unwrap();
    let q8: Vec<u8> = [0x00u8, 0x3c].into_iter().chain(0..32).collect();
    let q4: Vec<u8> = [0x00u8, 0x40].into_iter().chain(0..16).collect();
    let tensors = [
        Tensor::F32(&[1.0, 2.0]),
        Tensor::F16(&[0x3c00, 0xc000]),
        Tensor::Bf16(&[0x3f80, 0xc000]),
        Tensor::I8(&[-1, 2]),
        Tensor::U8(&[1, 2]),
        Tensor::Quantized(QuantBlocks::new(QuantFormat::Q4_0, &q4).unwrap()),
        Tensor::Quantized(QuantBlocks::new(QuantFormat::Q8_0, &q8).unwrap()),
        Tensor::Bytes(&[1, 2, 3]),
    ];
    for t in tensors {
        prof.checksums()
            .record_tensor(Some(0), BrickId::DownProjection, t);
    }
    let log = prof.checksums().take_log();
    let dtypes: Vec<DType> = log.entries.iter().filter_map(|e| e.dtype).collect();
    assert_eq!(
        dtypes,
        [
            DType::F32,
            DType::F16,
            DType::Bf16,
            DType::I8,
            DType::U8,
            DType::Q4_0,
            DType::Q8_0,
            DType::Bytes
        ]
    );
    let sums: Vec<f64> = log.entries.iter().map(|e| e.summary.sum).collect();
    // q8_0: d = 1, values 0..31; q4_0: d = 2, values (j & 15) - 8 and (j >> 4) - 8, j < 16.
    assert_eq!(sums, [3.0, -1.0, -1.0, 1.0, 3.0, -136.0 * 2.0, 496.0, 0.0]);
    assert!(QuantBlocks::new(QuantFormat::Q4_0, &q4[..17]).is_err());
    // The same bits as different dtypes are different kernels' outputs: never "equal".
    let key = |brick: &str| KernelKey {
        pass: 0,
        layer: None,
        brick: brick.into(),
        call: 0,
    };
    let (mut a, mut b) = (ChecksumLog::default(), ChecksumLog::default());
    a.record(key("x"), Tensor::F16(&[0x3c00]));
    b.record(key("x"), Tensor::Bf16(&[0x3c00]));
    a.record(key("y"), Tensor::Bytes(&[1, 2]));
    b.record(key("y"), Tensor::Bytes(&[1, 3]));
    let loose = Tolerance {
        rtol: 1.0,
        atol: 1.0,
    };
    let report = divergence(&a, &b, loose).unwrap();
    assert_eq!(report.bitwise_equal, 0);
    let opaque = &report.divergences[1];
    assert_eq!(
        opaque.verdict,
        Verdict::Diverged,
        "opaque bytes have no tolerance"
    );
}

#[test]
fn the_saved_file_is_version_2_and_names_the_algorithm() {
    // spec/checksums.md "File format".
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.json");
    run(Plant::Nothing).save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // (CHECKSUM_FORMAT_VERSION == 2: a unit test in src/checksum/log.rs)
    assert!(text.contains("\"format_version\": 2"), "{text}");
    assert!(text.contains("\"algorithm\": \"fnv1a64-lanes8-v2\""));
    assert!(text.contains("\"dtype\": \"f32\""));
    assert_eq!(
        ChecksumLog::load(&path).unwrap().algorithm,
        Algorithm::Fnv1a64Lanes8V2
    );
}

/// A golden checksum file of the demo's 54 kernels (`demo --layers 1 --prompt 2 --tokens 1
/// --checksums`), made with `algorithm`.
fn golden(name: &str, algorithm: Algorithm) -> ChecksumLog {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let log = ChecksumLog::load(&path).unwrap();
    assert_eq!(log.algorithm, algorithm);
    assert_eq!(log.entries.len(), 54);
    log
}

#[test]
fn a_version_1_file_still_loads_and_compares_with_its_algorithm() {
    // spec/checksums.md "File format": tests/golden/checksums_v1.json was written by
    // brickprof 0.1.0.
    let v1 = golden("checksums_v1.json", Algorithm::Fnv1a64);
    assert!(v1.entries.iter().all(|e| e.dtype.is_none()));
    assert_eq!(v1.entries[0].hash, 0x3da746f1bd8f28b9);
    // A version-2 log hashed with the default algorithm: a clear error, never "diverged".
    let err = divergence(&v1, &run(Plant::Nothing), Tolerance::default()).unwrap_err();
    assert!(matches!(err, Error::AlgorithmMismatch { .. }), "{err}");
    assert!(err.to_string().contains("fnv1a64-lanes8-v2"), "{err}");
    // The CLI half (the demo re-recorded with this algorithm diffs clean against it):
    // crates/brickprof-cli/tests/verdicts/checksums_cli.rs.
}

#[test]
fn a_fnv1a64_lanes8_file_still_loads_and_compares_among_its_own() {
    // spec/checksums.md "Algorithms" and "File format": tests/golden/checksums_lanes8.json was
    // written by brickprof 0.3.0 (f09a6b2), before fnv1a64-lanes8-v2.
    let old = golden("checksums_lanes8.json", Algorithm::Fnv1a64Lanes8);
    // Two files of the old algorithm compare (their hashes are stored: nothing recomputed).
    let report = divergence(&old, &old.clone(), Tolerance::default()).unwrap();
    assert_eq!(report.bitwise_equal, 54);
    assert!(report.is_match());
    // Against a run of the default algorithm: a typed error that names both algorithms and
    // says how to re-run with one.
    let new = run(Plant::Nothing);
    for (a, b) in [(&old, &new), (&new, &old)] {
        let err = divergence(a, b, Tolerance::default()).unwrap_err();
        assert!(
            matches!(
                err,
                Error::AlgorithmMismatch {
                    reference,
                    candidate
                } if [reference.to_string(), candidate.to_string()] == [a.algorithm.to_string(), b.algorithm.to_string()]
            ),
            "{err}"
        );
        let msg = err.to_string();
        let (ra, rb) = (a.algorithm, b.algorithm);
        assert!(
            msg.contains(&format!("the reference used {ra}, the candidate {rb};")),
            "{msg}"
        );
        assert!(
            msg.contains(&format!("--checksum-algorithm {},", a.algorithm)),
            "{msg}"
        );
    }
    // The CLI half (the demo re-recorded with fnv1a64-lanes8 diffs clean against it):
    // crates/brickprof-cli/tests/verdicts/checksums_cli.rs.
}

#[test]
fn duplicate_keys_are_a_typed_error_in_either_argument_order() {
    // spec/checksums.md "Comparing runs": duplicates.
    let good = run(Plant::Nothing);
    let mut dup = good.clone();
    dup.entries.push(good.entries[3].clone());
    for (a, b, which) in [(&dup, &good, "reference"), (&good, &dup, "candidate")] {
        match divergence(a, b, Tolerance::default()) {
            Err(Error::DuplicateKernel {
                log, first, second, ..
            }) => assert_eq!((log, first, second), (which, 3, good.entries.len())),
            other => panic!("expected a duplicate-key error, got {other:?}"),
        }
    }
}

#[test]
fn a_legitimate_minus_infinity_blames_nothing() {
    // spec/checksums.md "Comparing runs" (NaN origin): the causal mask in AttentionScore is in both
    // runs.
    let reference = run(Plant::Mask(BrickId::AttentionScore));
    let same = run(Plant::Mask(BrickId::AttentionScore));
    let report = divergence(&reference, &same, Tolerance::default()).unwrap();
    assert!(report.nan_origin.is_none(), "{report}");
    assert!(report.is_match());
    // A NaN later in the candidate: that kernel is the origin, not the one after the mask.
    let candidate = run(Plant::MaskAndNan(
        BrickId::AttentionScore,
        2,
        BrickId::DownProjection,
    ));
    let report = divergence(&reference, &candidate, Tolerance::default()).unwrap();
    let origin = report.nan_origin.as_ref().expect("a NaN origin");
    assert_eq!(
        (origin.key.pass, origin.key.layer, origin.key.brick.as_str()),
        (0, Some(2), "DownProjection")
    );
    let text = report.to_string();
    assert!(
        text.contains("NaN/Inf origin: pass 0 layer 2 DownProjection (1 NaN, 0 +Inf, 0 -Inf"),
        "{text}"
    );
    // More -Inf than the reference: blamed.
    let unmasked = run(Plant::Nothing);
    let report = divergence(&unmasked, &reference, Tolerance::default()).unwrap();
    let origin = report.nan_origin.as_ref().expect("a -Inf origin");
    assert_eq!(origin.key.brick, "AttentionScore");
    assert!(origin.summary.neg_inf > 0);
}

/// Serve a log through a mutation of its saved text; the load error.
fn load_mutated(name: &str, edit: impl Fn(&str) -> String) -> String {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    run(Plant::Nothing).save(&good).unwrap();
    let text = std::fs::read_to_string(&good).unwrap();
    let path = dir.path().join(name);
    let edited = edit(&text);
    assert_ne!(edited, text, "{name}: the edit changed nothing");
    std::fs::write(&path, edited).unwrap();
    let msg = ChecksumLog::load(&path).unwrap_err().to_string();
    assert!(msg.contains(name), "{msg}");
    msg
}

#[test]
fn loaded_files_are_validated_field_by_field() {
    // spec/checksums.md "File format": validation on load.
    type Edit = Box<dyn Fn(&str) -> String>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "short_hash.json",
            Box::new(|t| t.replacen("\"hash\": \"", "\"hash\": \"ab\", \"x\": \"", 1)),
            "16 hex digits",
        ),
        (
            "long_hash.json",
            Box::new(|t| t.replacen("\"hash\": \"", "\"hash\": \"0", 1)),
            "16 hex digits",
        ),
        (
            "too_many_nans.json",
            Box::new(|t| t.replacen("\"nan\": 0", "\"nan\": 100000", 1)),
            "summary.nan + pos_inf + neg_inf",
        ),
        (
            "overflowing_counts.json",
            Box::new(|t| {
                t.replacen("\"nan\": 0", "\"nan\": 18446744073709551615", 1)
                    .replacen("\"pos_inf\": 0", "\"pos_inf\": 18446744073709551615", 1)
            }),
            "summary.nan",
        ),
        (
            "huge_len.json",
            Box::new(|t| t.replacen("\"len\": 512", "\"len\": 18446744073709551615", 1)),
            "2^53",
        ),
        (
            "min_above_max.json",
            Box::new(|t| t.replacen("\"min\": ", "\"min\": 1e300, \"x\": ", 1)),
            "summary.min",
        ),
        (
            "no_algorithm.json",
            Box::new(|t| t.replacen("\"algorithm\": \"fnv1a64-lanes8-v2\",", "", 1)),
            "algorithm",
        ),
        (
            "bad_algorithm.json",
            Box::new(|t| t.replacen("fnv1a64-lanes8-v2", "crc32", 1)),
            "crc32",
        ),
        (
            "bad_dtype.json",
            Box::new(|t| t.replacen("\"dtype\": \"f32\"", "\"dtype\": \"f64\"", 1)),
            "f64",
        ),
    ];
    for (name, edit, fault) in cases {
        let msg = load_mutated(name, edit);
        assert!(msg.contains(fault), "{name}: expected {fault:?} in {msg}");
    }
}

#[test]
fn big_numbers_survive_a_round_trip_through_python_exactly() {
    // spec/checksums.md "File format": hashes are hex strings, counts at most 2^53, floats
    // shortest round-trip decimals, so a generic JSON reader keeps every value.
    let Ok(python) = Command::new("python3").arg("--version").output() else {
        eprintln!("python3 not found: skipping (CI installs it)");
        return;
    };
    assert!(python.status.success());
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let mut log = run(Plant::Nan(1, BrickId::RmsNorm));
    log.record(
        KernelKey {
            pass: 9,
            layer: None,
            brick: "LmHead".into(),
            call: 0,
        },
        Tensor::F32(&[f32::MAX, f32::MIN_POSITIVE, 1e-45, -3.0e38]),
    );
    log.save(&a).unwrap();
    let o = Command::new("python3")
        .args([
            "-c",
            "import json,sys; json.dump(json.load(open(sys.argv[1])), open(sys.argv[2], 'w'))",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    assert_eq!(ChecksumLog::load(&b).unwrap(), log);
}

#[test]
fn a_plan_samples_passes_layers_and_bricks_with_the_full_runs_keys() {
    // spec/checksums.md "Recording": sampling.
    let full = run(Plant::Nothing);
    let plan = ChecksumPlan {
        every: NonZeroU64::new(2).unwrap(),
        layers: Some(vec![1, 3]),
        outside_layers: false,
        bricks: Some(vec!["QkvProjection".into(), "DownProjection".into()]),
        ..ChecksumPlan::default()
    };
    let sampled = run_with(Plant::Nothing, plan);
    let keys: Vec<String> = sampled.entries.iter().map(|e| e.key.to_string()).collect();
    assert_eq!(
        keys,
        [
            "pass 0 layer 1 QkvProjection",
            "pass 0 layer 1 DownProjection",
            "pass 0 layer 3 QkvProjection",
            "pass 0 layer 3 DownProjection",
        ]
    );
    // Every sampled entry is the full run's entry of the same key.
    for e in &sampled.entries {
        assert!(full.entries.contains(e), "{}", e.key);
    }
    // Call indices count skipped calls too, so keys never depend on the plan.
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 1,
        checksums: true,
        checksum_plan: ChecksumPlan {
            bricks: Some(vec!["RmsNorm".into()]),
            ..ChecksumPlan::default()
        },
        ..ProfilerConfig::default()
    })
    .unwrap();
    prof.checksums().record(Some(0), BrickId::RmsNorm, &[1.0]);
    prof.checksums()
        .record(Some(0), BrickId::Activation, &[1.0]);
    prof.checksums().record(Some(0), BrickId::RmsNorm, &[2.0]);
    let calls: Vec<u32> = prof
        .view()
        .checksum_log
        .entries
        .iter()
        .map(|e| e.key.call)
        .collect();
    assert_eq!(calls, [0, 1]);
}

/// A checksum log whose one brick name carries a terminal escape and a right-to-left override,
/// recorded twice under the same key.
fn hostile_duplicate_log() -> ChecksumLog {
    let key = KernelKey {
        pass: 0,
        layer: Some(3),
        brick: "Attn\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}xam".into(),
        call: 1,
    };
    let mut log = ChecksumLog::default();
    log.record(key.clone(), Tensor::F32(&[1.0]));
    log.record(key, Tensor::F32(&[2.0]));
    log
}

/// No terminal control or bidirectional override character in `text`.
fn assert_printable(text: &str) {
    for c in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(!text.contains(c), "{c:?} printed raw in {text:?}");
    }
}

#[test]
fn names_from_a_checksum_log_are_escaped_in_errors_and_reports() {
    // spec/checksums.md "Comparing runs": names from files are escaped before they are
    // printed. Before: the error's Display held the ESC sequence and U+202E as they were.
    let dup = hostile_duplicate_log();
    let good = ChecksumLog::default();
    let err = divergence(&good, &dup, Tolerance::default()).unwrap_err();
    assert!(matches!(err, Error::DuplicateKernel { .. }), "{err}");
    assert_printable(&err.to_string());
    assert!(err.to_string().contains("Attn"), "{err}");
    let key = &dup.entries[0].key;
    assert_printable(&key.to_string());
}

#[test]
fn a_duplicate_kernel_error_from_files_names_the_file() {
    // spec/checksums.md "Comparing runs": a fault of one log names its file. Before: "the
    // candidate checksum log records ... twice", no path.
    let dir = tempfile::tempdir().unwrap();
    let (good, dup) = (dir.path().join("ref.json"), dir.path().join("cand.json"));
    run(Plant::Nothing).save(&good).unwrap();
    hostile_duplicate_log().save(&dup).unwrap();
    let err = diff_files_with(&good, &dup, &DiffOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&*dup.to_string_lossy()), "{msg}");
    assert_printable(&msg);
    let err = diff_files_with(&dup, &good, &DiffOptions::default()).unwrap_err();
    assert!(err.to_string().contains("cand.json"), "{err}");
}
