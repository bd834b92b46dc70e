//! spec/divergence.md "Where error is born": origin apart from propagation, on a planted error
//! and on a planted amplifier, with captures (exact relative errors) and from summaries.

use crate::capture::CaptureStore;
use crate::checksum::{ChecksumLog, KernelKey, Tensor};
use crate::compare::diff::diff_files;
use crate::compare::divergence::{apply_captures, divergence, error_flow, rerun_plan, Tolerance};

const N: usize = 64;

fn key(layer: u32, brick: &str) -> KernelKey {
    KernelKey {
        pass: 0,
        layer: Some(layer),
        brick: brick.into(),
        call: 0,
    }
}

/// A run of 5 layers, each `RmsNorm` then `ResidualAdd` (the layer's output), with the hidden
/// state `x` carried from layer to layer. `edit(layer, x)` may change a layer's output.
fn run(mut edit: impl FnMut(u32, &mut Vec<f32>)) -> (ChecksumLog, CaptureStore) {
    let mut log = ChecksumLog::default();
    let mut caps = CaptureStore::with_budget(1 << 20);
    let mut x: Vec<f32> = (0..N).map(|i| (i as f32 * 0.37).sin() + 1.5).collect();
    for layer in 0..5 {
        let norm: Vec<f32> = x.iter().map(|v| v * 0.5).collect();
        log.record(key(layer, "RmsNorm"), Tensor::F32(&norm));
        caps.record(key(layer, "RmsNorm"), Tensor::F32(&norm));
        x = x.iter().zip(&norm).map(|(a, b)| a + b * 0.25).collect();
        edit(layer, &mut x);
        log.record(key(layer, "ResidualAdd"), Tensor::F32(&x));
        caps.record(key(layer, "ResidualAdd"), Tensor::F32(&x));
    }
    (log, caps)
}

#[test]
fn a_planted_error_is_born_where_it_was_planted_and_carried_after() {
    let (a, ca) = run(|_, _| {});
    let (b, cb) = run(|layer, x| {
        if layer == 2 {
            x[7] += 1e-3;
        }
    });
    let mut report = divergence(&a, &b, Tolerance::default()).unwrap();
    apply_captures(&mut report, &ca, &cb, &[]);
    let flow = error_flow(&report, &a);
    assert_eq!(flow.born, [key(2, "ResidualAdd")]);
    // Layers 3 and 4: two kernels each, all carrying it.
    assert_eq!(flow.carried, 4);
    let birth: Vec<u32> = flow
        .layers
        .iter()
        .filter(|l| l.is_birthplace())
        .map(|l| l.layer)
        .collect();
    assert_eq!(birth, [2]);
    assert_eq!(flow.layers[2].entering, 0.0);
    assert!(flow.layers[2].leaving > 0.0);
    // The second step captures layer 2 and its input, layer 1's output.
    let plan = rerun_plan(&report, &a).unwrap();
    assert_eq!(
        plan.to_string(),
        "--capture 2:*,1:ResidualAdd --capture-passes 0"
    );
}

#[test]
fn a_planted_amplifier_is_the_layer_with_the_largest_amplification() {
    // Error born in layer 1 (one element off by 1e-4); layer 3 multiplies the difference from
    // the reference by 1000: with captures the amplification is measured exactly.
    let (a, ca) = run(|_, _| {});
    let mut reference_x = Vec::new();
    let _ = run(|_, x| reference_x.push(x.clone()));
    let (b, cb) = run(|layer, x| {
        if layer == 1 {
            x[3] += 1e-4;
        }
        if layer == 3 {
            // x = ref + d  ->  ref + 1000 d
            let r = &reference_x[3];
            for (v, &rv) in x.iter_mut().zip(r) {
                *v = rv + (*v - rv) * 1000.0;
            }
        }
    });
    let mut report = divergence(&a, &b, Tolerance::default()).unwrap();
    apply_captures(&mut report, &ca, &cb, &[]);
    let flow = error_flow(&report, &a);
    assert_eq!(flow.born, [key(1, "ResidualAdd")]);
    let top = flow.top_amplifier().unwrap();
    assert_eq!(top.layer, 3);
    let amp = top.amplification().unwrap();
    // The difference grows 1000x relative to the output, which is 1.125x the input (x + x/8)
    // like the difference: 1000 up to f32 rounding.
    assert!((amp / 1000.0 - 1.0).abs() < 1e-2, "{amp}");
    for l in flow.layers.iter().filter(|l| l.layer != 3 && l.layer > 1) {
        assert!(l.amplification().unwrap() < 2.0, "{l:?}");
    }
    // From summaries alone (no captures) the same layer is named.
    let report = divergence(&a, &b, Tolerance::default()).unwrap();
    let flow = error_flow(&report, &a);
    assert_eq!(flow.born, [key(1, "ResidualAdd")]);
    assert_eq!(flow.top_amplifier().unwrap().layer, 3);
}

#[test]
fn a_kernel_that_agrees_by_chance_does_not_make_the_next_one_an_origin() {
    // Layer 2's RmsNorm happens to agree, but its layer's input (layer 1's output) diverged:
    // layer 2's ResidualAdd carries the error, it is not born there.
    let (a, _) = run(|_, _| {});
    let (mut b, _) = run(|layer, x| {
        if layer == 1 {
            x[0] += 1e-3;
        }
    });
    let fixed = a
        .entries
        .iter()
        .find(|e| e.key == key(2, "RmsNorm"))
        .unwrap()
        .clone();
    let mut entries: Vec<_> = b.entries.to_vec();
    for e in &mut entries {
        if e.key == fixed.key {
            *e = fixed.clone();
        }
    }
    b = ChecksumLog::default();
    for e in entries {
        b.entries.push(e);
    }
    let flow = error_flow(&divergence(&a, &b, Tolerance::default()).unwrap(), &a);
    assert_eq!(flow.born, [key(1, "ResidualAdd")]);
}

/// Save a run's checksum log, captures and generated tokens in `dir`; the log's path.
fn save_run(
    dir: &std::path::Path,
    log: &ChecksumLog,
    caps: &CaptureStore,
    ids: &[u32],
) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("checksums.json");
    log.save(&path).unwrap();
    caps.save(&dir.join(crate::compare::CAPTURE_FILE)).unwrap();
    let text = ids.iter().map(|i| format!(" w{i}")).collect();
    crate::profile::GeneratedTokens::new(ids.to_vec(), text)
        .unwrap()
        .save(dir.join(crate::profile::TOKENS_FILE))
        .unwrap();
    path
}

#[test]
fn diff_shows_each_layers_cosine_and_sqnr_and_the_first_differing_token() {
    // spec/divergence.md "Where error is born" (cosine and SQNR per layer from captures) and
    // "The token axis" (the first generated token that differs, from tokens.json).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("divergence-tokens");
    let (a, ca) = run(|_, _| {});
    let (b, cb) = run(|layer, x| {
        if layer == 2 {
            x[7] += 1e-3;
        }
    });
    let ra = save_run(&dir.join("a"), &a, &ca, &[11, 12, 13, 14]);
    let rb = save_run(&dir.join("b"), &b, &cb, &[11, 12, 99, 14]);
    let out = diff_files(&ra, &rb, Tolerance::default()).unwrap();
    assert!(out.diverged);
    let d = out.first_token_difference.as_ref().unwrap();
    assert_eq!((d.position, d.candidate.as_ref().unwrap().id), (2, 99));
    assert!(
        out.text.contains(
            "First differing token: position 2 (reference ' w13' id 13 vs candidate ' w99' id 99)"
        ),
        "{}",
        out.text
    );
    // The layer table has cosine and SQNR columns; layer 2's come from its captured output.
    let header = out.text.lines().find(|l| l.contains("entering")).unwrap();
    assert!(
        header.contains("cosine") && header.contains("SQNR dB"),
        "{header}"
    );
    let flow = out.flow.as_ref().unwrap();
    let s = flow.layers[2].leaving_stats.unwrap();
    assert!(s.cosine < 1.0 && s.sqnr_db.is_finite());
    assert!(flow.layers[1].leaving_stats.is_none());
    // Same tokens: a line that says so, and no divergence from the tokens alone.
    let rc = save_run(&dir.join("c"), &a, &ca, &[11, 12, 13, 14]);
    let same = diff_files(&ra, &rc, Tolerance::default()).unwrap();
    assert!(!same.diverged && same.first_token_difference.is_none());
    assert!(
        same.text
            .contains("Generated tokens: the same 4 tokens in both runs"),
        "{}",
        same.text
    );
    // Equal kernels but another token: the runs diverge (exit 1 in the CLI).
    let rd = save_run(&dir.join("d"), &a, &ca, &[11, 12, 13, 15]);
    let other = diff_files(&ra, &rd, Tolerance::default()).unwrap();
    assert!(other.diverged);
    assert_eq!(other.first_token_difference.unwrap().position, 3);
}

#[test]
fn a_kernel_after_an_agreeing_kernel_in_a_layer_that_made_error_carries_it() {
    // spec/divergence.md "Where error is born": born needs every earlier kernel of the layer
    // within. As on SmolLM2: QKV moves, the softmax over one position agrees, the attention
    // output (which also reads V) moves.
    let (mut a, mut b) = (ChecksumLog::default(), ChecksumLog::default());
    for (brick, planted) in [
        ("RmsNorm", 0.0),
        ("QkvProjection", 1e-3),
        ("AttentionSoftmax", 0.0),
        ("AttentionOutput", 1e-3),
    ] {
        a.record(key(0, brick), Tensor::F32(&[1.0, 2.0]));
        b.record(key(0, brick), Tensor::F32(&[1.0, 2.0 + planted]));
    }
    let report = divergence(&a, &b, Tolerance::default()).unwrap();
    let flow = error_flow(&report, &a);
    assert_eq!(flow.born, [key(0, "QkvProjection")]);
    assert_eq!(flow.carried, 1);
}

#[test]
fn files_of_two_runs_read_together_are_named_and_files_without_ids_still_pair() {
    // spec/profile-format.md "A run folder": the run id rule. A checksum log, its captures and
    // its tokens carrying one run id are read together; tokens of another run beside them are
    // an error naming both files; files without a run id (older ones) are read unchecked.
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, mut caps) = run(|_, _| {});
    let (this, other) = (crate::io::RunId::new(), crate::io::RunId::new());
    log.run_id = Some(this.clone());
    caps.run_id = Some(this.clone());
    let path = save_run(tmp.path(), &log, &caps, &[1, 2]);
    let tokens_file = tmp.path().join(crate::profile::TOKENS_FILE);
    let with_id = |id: Option<&crate::io::RunId>| {
        let mut t =
            crate::profile::GeneratedTokens::new(vec![1, 2], vec!["a".into(), "b".into()]).unwrap();
        if let Some(id) = id {
            t.set_run_id(Some(id.clone()));
        }
        t.save(&tokens_file).unwrap();
    };
    for same in [None, Some(&this)] {
        with_id(same);
        let out = diff_files(&path, &path, Tolerance::default()).unwrap();
        assert!(!out.diverged);
    }
    with_id(Some(&other));
    let e = diff_files(&path, &path, Tolerance::default()).unwrap_err();
    match &e {
        crate::Error::MixedRun {
            first,
            second,
            first_id,
            second_id,
        } => {
            assert_eq!((first, second), (&path, &tokens_file));
            assert_eq!(
                (first_id.clone(), second_id.clone()),
                (this.to_string(), other.to_string())
            );
        }
        e => panic!("{e}"),
    }
    // Captures of another run, next to tokens of none: named too.
    with_id(None);
    caps.run_id = Some(other);
    caps.save(&tmp.path().join(crate::compare::CAPTURE_FILE))
        .unwrap();
    let e = diff_files(&path, &path, Tolerance::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("captures.safetensors: from another run than"),
        "{e}"
    );
}

#[test]
fn moves_are_the_summaries_changes() {
    // Was the doc example of `DivergenceInfo::moves`.
    let key = KernelKey {
        pass: 0,
        layer: Some(0),
        brick: "RmsNorm".into(),
        call: 0,
    };
    let (mut a, mut b) = (ChecksumLog::default(), ChecksumLog::default());
    a.record(key.clone(), Tensor::F32(&[1.0, 2.0]));
    b.record(key, Tensor::F32(&[1.0, 2.5]));
    let report = divergence(&a, &b, Tolerance::default()).unwrap();
    let max = report.first().unwrap().moves()[0];
    assert_eq!(
        (max.name, max.absolute(), max.relative()),
        ("max", 0.5, 0.25)
    );
}

#[test]
fn check_parses_and_passes() {
    // Was the doc example of `Check`.
    use crate::compare::divergence::{Check, ErrorStats};
    let c: Check = "cosine:0.9999".parse().unwrap();
    let s = ErrorStats::between(&[1.0, 2.0], &[1.0, 2.0]).unwrap();
    assert!(c.passes(&s));
    let bad = ErrorStats::between(&[1.0, 2.0], &[2.0, 1.0]).unwrap();
    assert!(!c.passes(&bad));
    assert!("sqnr:40".parse::<Check>().unwrap().passes(&s));
    assert!("speed:1".parse::<Check>().is_err());
    // Thresholds that pass everything, or nothing, are refused.
    for meaningless in [
        "cosine:2",
        "cosine:-1",
        "max-rel:-1",
        "sqnr:inf",
        "max-abs:1e400",
    ] {
        assert!(meaningless.parse::<Check>().is_err(), "{meaningless}");
    }
}

#[test]
fn diff_options_refuse_a_meaningless_check() {
    // spec/divergence.md "Options that mean something": a check built past the parser (moved
    // from tests/compare/diff_options.rs, where a library caller could build one) is refused
    // before any file is read.
    use crate::compare::divergence::check::{Check, Stat};
    use crate::compare::{diff_files_with, DiffOptions};
    let missing = std::path::Path::new("no/such/run.json");
    let options = DiffOptions {
        checks: vec![Check {
            stat: Stat::Cosine,
            threshold: 2.0,
        }],
        ..DiffOptions::default()
    };
    let err = diff_files_with(missing, missing, &options).unwrap_err();
    assert!(matches!(err, crate::Error::InvalidValue { .. }), "{err}");
}

#[test]
fn error_stats_between() {
    // Was the doc example of `between`.
    use crate::compare::divergence::ErrorStats;
    let s = ErrorStats::between(&[1.0, 2.0, 3.0, 4.0], &[1.0, 2.0, 3.0, 4.5]).unwrap();
    assert_eq!((s.max_abs, s.mean_abs), (0.5, 0.125));
    assert_eq!(s.max_rel, 0.125);
    assert_eq!(s.nmse, 0.25 / 30.0);
}

#[test]
fn apply_captures_decides_by_checks() -> crate::Result<()> {
    // Was the doc example of `apply_captures`.
    use crate::capture::CaptureStore;
    use crate::checksum::{ChecksumLog, KernelKey, Tensor};
    use crate::compare::divergence::{apply_captures, divergence, Tolerance, Verdict};
    let key = KernelKey {
        pass: 0,
        layer: Some(0),
        brick: "RmsNorm".into(),
        call: 0,
    };
    let (a, b) = ([1.0f32, 2.0, 3.0], [1.0f32, 2.0, 3.0001]);
    let (mut la, mut lb) = (ChecksumLog::default(), ChecksumLog::default());
    la.record(key.clone(), Tensor::F32(&a));
    lb.record(key.clone(), Tensor::F32(&b));
    let (mut ca, mut cb) = (
        CaptureStore::with_budget(1 << 20),
        CaptureStore::with_budget(1 << 20),
    );
    ca.record(key.clone(), Tensor::F32(&a));
    cb.record(key, Tensor::F32(&b));
    let mut report = divergence(&la, &lb, Tolerance::default())?;
    apply_captures(&mut report, &ca, &cb, &["sqnr:60".parse().unwrap()]);
    let d = report.first().unwrap();
    assert_eq!(d.verdict, Verdict::WithinTolerance);
    assert!(d.elementwise.unwrap().sqnr_db > 60.0);
    Ok(())
}

#[test]
fn apply_noise_within_noise() -> crate::Result<()> {
    // Was the doc example of `apply_noise`.
    use crate::checksum::{ChecksumLog, KernelKey};
    use crate::compare::divergence::{apply_noise, divergence, Tolerance, Verdict};
    let key = KernelKey {
        pass: 0,
        layer: Some(0),
        brick: "DownProjection".into(),
        call: 0,
    };
    let log = |v: f32| {
        let mut l = ChecksumLog::default();
        l.record(key.clone(), Tensor::F32(&[1.0, v]));
        l
    };
    let (reference, reference2, candidate) = (log(2.0), log(2.0001), log(2.0002));
    let noise = divergence(&reference, &reference2, Tolerance::default())?;
    let mut report = divergence(&reference, &candidate, Tolerance::default())?;
    apply_noise(&mut report, &[noise], 3.0);
    assert_eq!(report.first().unwrap().verdict, Verdict::WithinNoise);
    assert!(report.is_match());
    Ok(())
}

#[test]
fn error_flow_finds_the_birthplace() -> crate::Result<()> {
    // Was the doc example of `error_flow`.
    use crate::checksum::{ChecksumLog, KernelKey};
    use crate::compare::divergence::{divergence, error_flow, Tolerance};
    let key = |layer, brick: &str| KernelKey {
        pass: 0,
        layer: Some(layer),
        brick: brick.into(),
        call: 0,
    };
    let (mut a, mut b) = (ChecksumLog::default(), ChecksumLog::default());
    for (layer, brick, planted) in [
        (0, "RmsNorm", 0.0),
        (0, "DownProjection", 0.0),
        (1, "RmsNorm", 0.0),
        (1, "DownProjection", 0.5),
        (2, "RmsNorm", 0.5),
        (2, "DownProjection", 0.5),
    ] {
        a.record(key(layer, brick), Tensor::F32(&[1.0, 2.0]));
        b.record(key(layer, brick), Tensor::F32(&[1.0, 2.0 + planted]));
    }
    let report = divergence(&a, &b, Tolerance::default())?;
    let flow = error_flow(&report, &a);
    assert_eq!(flow.born, [key(1, "DownProjection")]);
    assert_eq!(flow.carried, 2);
    assert!(flow.layers[1].is_birthplace());
    Ok(())
}

#[test]
fn rerun_plan_names_the_capture_options() -> crate::Result<()> {
    // Was the doc example of `rerun_plan`.
    use crate::checksum::{ChecksumLog, KernelKey};
    use crate::compare::divergence::{divergence, rerun_plan, Tolerance};
    let key = |layer, brick: &str, call| KernelKey {
        pass: 0,
        layer: Some(layer),
        brick: brick.into(),
        call,
    };
    let (mut a, mut b) = (ChecksumLog::default(), ChecksumLog::default());
    for (k, planted) in [
        (key(0, "RmsNorm", 0), 0.0),
        (key(0, "ResidualAdd", 1), 0.0),
        (key(1, "RmsNorm", 0), 0.0),
        (key(1, "DownProjection", 0), 0.5),
    ] {
        a.record(k.clone(), Tensor::F32(&[1.0]));
        b.record(k, Tensor::F32(&[1.0 + planted]));
    }
    let plan = rerun_plan(&divergence(&a, &b, Tolerance::default())?, &a).unwrap();
    assert_eq!(
        plan.to_string(),
        "--capture 1:*,0:ResidualAdd --capture-passes 0"
    );
    Ok(())
}
