//! The `brickprof` binary, run as a user would: every subcommand, exit codes, bad input.

use crate::common::cli;

use cli::{assert_clean_error, brickprof, demo, text};

#[test]
fn demo_prints_a_table_and_writes_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let o = demo(dir.path(), &[]);
    let (out, _) = text(&o);
    for needle in ["QkvProjection", "Category", "tokens/s", "Attention", "p99"] {
        assert!(out.contains(needle), "{needle} missing from\n{out}");
    }
    assert!(dir.path().join("profile.json").is_file());
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
}

#[test]
fn demo_prints_ttft_tpot_both_throughputs_and_the_fits() {
    // spec/hot-path.md "Pass series": the demo shapes its prompt pass as prefill and each
    // generated token as decode, so its report opens with TTFT, TPOT and the two throughputs,
    // and fits the attention's cost against the context.
    let dir = tempfile::tempdir().unwrap();
    let o = demo(dir.path(), &["--timeline", "sim"]);
    let (out, _) = text(&o);
    let line = |start: &str| {
        out.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?} in\n{out}"))
            .to_string()
    };
    for start in ["TTFT  p50", "TPOT  p50"] {
        let l = line(start);
        assert!(l.contains("p90") && l.contains("p99"), "{l}");
    }
    assert!(line("Prefill").contains("prompt tokens"));
    assert!(line("Decode ").contains("generated tokens"));
    assert!(out.contains("belongs to the server"), "{out}");
    assert!(out.contains("Cost against shape (decode)"), "{out}");
    let fit = line("  AttentionScore");
    assert!(fit.contains("per 1k context"), "{fit}");
    assert!(out.contains("(R² 1.00, "), "{out}");
    assert!(
        out.contains("Share of brick time as the context grows"),
        "{out}"
    );
    // The saved profile carries the series and the fits.
    let p = brickprof::Profile::load(dir.path().join("profile.json")).unwrap();
    assert!(p.pass_series.is_some_and(|s| s.records().next().is_some()));
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
}

#[test]
fn diff_names_the_perturbed_kernel_and_exits_1() {
    // spec/checksums.md "Comparing runs", end to end.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    demo(a.path(), &["--checksums"]);
    demo(b.path(), &["--checksums", "--perturb", "1:qkv"]);
    let ca = a.path().join("checksums.json");
    let cb = b.path().join("checksums.json");
    let o = brickprof(&["diff", ca.to_str().unwrap(), cb.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("First divergence: pass 0 layer 1 QkvProjection"),
        "{out}"
    );
    let same = brickprof(&["diff", ca.to_str().unwrap(), ca.to_str().unwrap()]);
    assert_eq!(same.status.code(), Some(0), "{:?}", text(&same));
    assert!(text(&same).0.contains("MATCH"));
}

#[test]
fn diff_finds_the_nan_origin() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    demo(a.path(), &["--checksums"]);
    demo(b.path(), &["--checksums", "--nan", "2:down_proj"]);
    let o = brickprof(&[
        "diff",
        a.path().join("profile.json").to_str().unwrap(),
        b.path().join("checksums.json").to_str().unwrap(),
    ]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        out.contains("NaN/Inf origin: pass 0 layer 2 DownProjection"),
        "{out}"
    );
}

#[test]
fn diff_bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &["--checksums"]);
    let good = dir.path().join("checksums.json");
    let good = good.to_str().unwrap();
    let missing = dir.path().join("nope.json");
    assert_clean_error(
        &brickprof(&["diff", good, missing.to_str().unwrap()]),
        "nope.json",
    );
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{ not json").unwrap();
    assert_clean_error(
        &brickprof(&["diff", garbage.to_str().unwrap(), good]),
        "garbage.json: line 1",
    );
    let o = brickprof(&["diff", good, good, "--rtol", "-1"]);
    assert_clean_error(&o, "non-negative");
    // A profile without checksums has nothing to compare.
    let plain = tempfile::tempdir().unwrap();
    demo(plain.path(), &[]);
    let p = plain.path().join("profile.json");
    assert_clean_error(
        &brickprof(&["diff", p.to_str().unwrap(), good]),
        "nothing to compare",
    );
}

#[test]
fn demo_rejects_a_bad_kernel_spot() {
    let o = brickprof(&["demo", "--no-save", "--perturb", "2:nonsense"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("unknown brick"), "{err}");
}

#[test]
fn demo_writes_profile_and_trace_into_out() {
    let dir = tempfile::tempdir().unwrap();
    let o = demo(dir.path(), &["--timeline", "sim"]);
    let (out, _) = text(&o);
    assert!(out.contains("Host vs device"), "{out}");
    let trace = std::fs::read_to_string(dir.path().join("trace.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&trace).unwrap();
    assert!(doc["traceEvents"].as_array().unwrap().len() > 100);
    let profile = brickprof::Profile::load(dir.path().join("profile.json")).unwrap();
    assert_eq!(
        profile.meta.timeline,
        brickprof::timeline::TimelineKind::Sim
    );
    assert!(profile.meta.peaks.is_some());
}

#[test]
fn report_prints_every_format() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &[]);
    let p = dir.path().join("profile.json");
    let p = p.to_str().unwrap();
    let table = brickprof(&["report", p, "--sort", "p99", "--top", "3", "--by-layer"]);
    let (out, err) = text(&table);
    assert!(table.status.success(), "{err}");
    assert!(
        out.contains("Layer Brick") && out.contains("more rows"),
        "{out}"
    );
    let json = brickprof(&["report", p, "--format", "json", "--peaks", "mi300x"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON report");
    assert!(doc["bricks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["bound"].is_string()));
    assert_eq!(doc["peaks"]["name"], "mi300x");
    let csv = brickprof(&["report", p, "--format", "csv"]);
    let (out, _) = text(&csv);
    assert!(out.starts_with("name,category,layer,calls,total_ns"));
    assert!(out.lines().count() > 10);
    let bad_sort = brickprof(&["report", p, "--sort", "colour"]);
    assert_eq!(bad_sort.status.code(), Some(2));
    assert!(text(&bad_sort).1.contains("unknown column"));
}

#[test]
fn merge_combines_runs_and_diff_compares_timings() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    demo(a.path(), &[]);
    demo(b.path(), &["--seed", "7"]);
    let (pa, pb) = (a.path().join("profile.json"), b.path().join("profile.json"));
    let out = a.path().join("merged/all.json");
    let o = brickprof(&[
        "merge",
        pa.to_str().unwrap(),
        pb.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    let merged = brickprof::Profile::load(&out).unwrap();
    let single = brickprof::Profile::load(&pa).unwrap();
    assert_eq!(merged.meta.merged_from, 2);
    assert_eq!(merged.meta.counters.tokens, 2 * single.meta.counters.tokens);
    let d = brickprof(&["diff", pa.to_str().unwrap(), pb.to_str().unwrap()]);
    let (dout, derr) = text(&d);
    assert_eq!(
        d.status.code(),
        Some(0),
        "timings alone never fail a diff: {derr}"
    );
    assert!(
        dout.contains("sorted by impact") && dout.contains("Summary:"),
        "{dout}"
    );
}

#[test]
fn every_subcommand_rejects_bad_files_cleanly() {
    // spec/profile-format.md "Loading": one line naming the file and the fault, exit 2.
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path(), &[]);
    let good = dir.path().join("profile.json");
    let text_ok = std::fs::read_to_string(&good).unwrap();
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let unsupported = format!(
        "version.json: profile format version {} is not supported",
        brickprof::profile::PROFILE_FORMAT_VERSION + 1
    );
    let bad: Vec<(std::path::PathBuf, &str)> = vec![
        (dir.path().join("missing.json"), "missing.json"),
        (dir.path().to_path_buf(), "directory"),
        (write("empty.json", ""), "empty.json: the file is empty"),
        (write("garbage.json", "garbage"), "garbage.json: line 1"),
        (
            write("truncated.json", &text_ok[..text_ok.len() / 2]),
            "truncated.json: line",
        ),
        (
            // The version after this build's (it was 3 while this build wrote 2).
            write(
                "version.json",
                &text_ok.replace(
                    &format!(
                        "\"format_version\": {}",
                        brickprof::profile::PROFILE_FORMAT_VERSION
                    ),
                    &format!(
                        "\"format_version\": {}",
                        brickprof::profile::PROFILE_FORMAT_VERSION + 1
                    ),
                ),
            ),
            &unsupported,
        ),
    ];
    let good = good.to_str().unwrap();
    let out = dir.path().join("out.json");
    for (path, needle) in &bad {
        let p = path.to_str().unwrap();
        assert_clean_error(&brickprof(&["report", p]), needle);
        assert_clean_error(&brickprof(&["diff", good, p]), needle);
        assert_clean_error(&brickprof(&["diff", p, good]), needle);
        assert_clean_error(
            &brickprof(&["merge", good, p, "-o", out.to_str().unwrap()]),
            needle,
        );
    }
    assert!(!out.exists(), "a failed merge writes nothing");
}

#[test]
fn every_subcommand_has_help() {
    for sub in ["demo", "report", "diff", "merge", "convert", "import"] {
        let o = brickprof(&[sub, "--help"]);
        assert!(o.status.success());
        assert!(text(&o).0.contains("Usage: brickprof"), "{sub}");
    }
}

#[test]
fn demo_rejects_sizes_it_cannot_run() {
    for (args, needle) in [
        (vec!["--layers", "100000"], "too many"),
        (vec!["--tokens", "100000"], "context"),
        (
            vec!["--layers", "2", "--perturb", "5:qkv"],
            "does not exist",
        ),
    ] {
        let mut all = vec!["demo", "--no-save"];
        all.extend(args);
        assert_clean_error(&brickprof(&all), needle);
    }
}

#[test]
fn the_demos_prefill_is_one_batched_call_a_brick_and_reads_unlike_decode() {
    // spec/work-accounting.md "The demo's prefill": the prompt pass runs every brick once a
    // layer over all 16 prompt tokens (matrix-matrix projections), so its declared work has
    // the weights once and 16x the FLOPs: the projections' arithmetic intensity is far above
    // decode's. Both the CPU and the simulated device.
    for timeline in ["cpu", "sim"] {
        let dir = tempfile::tempdir().unwrap();
        let args = [
            "--layers",
            "2",
            "--prompt",
            "16",
            "--tokens",
            "4",
            "--timeline",
            timeline,
        ];
        demo(dir.path(), &args);
        let p = brickprof::Profile::load(dir.path().join("profile.json")).unwrap();
        let of = |phase| {
            brickprof::profile::phase_profile(&p, brickprof::model::PhaseFilter::Only(phase))
        };
        let (prefill, decode) = (of(brickprof::Phase::Prefill), of(brickprof::Phase::Decode));
        assert_eq!(prefill.passes.summary().count, 1);
        assert_eq!(decode.passes.summary().count, 4);
        let intensity = |s: &brickprof::stats::BrickStats| {
            s.summary().work.flops as f64 / s.summary().work.bytes as f64
        };
        for brick in [
            "QkvProjection",
            "OutputProjection",
            "GateProjection",
            "UpProjection",
            "DownProjection",
        ] {
            let (pre, dec) = (
                &prefill.brick(brick).unwrap().stats,
                &decode.brick(brick).unwrap().stats,
            );
            // Once a layer in the one prefill pass (not once a prompt token), once a layer in
            // each decode pass.
            assert_eq!(pre.summary().count, 2, "{timeline} {brick} prefill calls");
            assert_eq!(
                dec.summary().count,
                2 * 4,
                "{timeline} {brick} decode calls"
            );
            // 16 tokens of FLOPs per call, the weights read once.
            assert_eq!(
                pre.summary().work.flops * 4,
                dec.summary().work.flops * 16,
                "{timeline} {brick}"
            );
            let ratio = intensity(pre) / intensity(dec);
            assert!(
                ratio >= 8.0,
                "{timeline} {brick}: prefill {:.2} FLOP/B, decode {:.2}: only {ratio:.1}x",
                intensity(pre),
                intensity(dec)
            );
        }
        // Attention is causal over the prompt: token i attends i + 1 positions.
        let score = &prefill.brick("AttentionScore").unwrap().stats;
        assert_eq!(score.summary().count, 2);
        assert_eq!(score.summary().work.elements, 2 * 8 * (1..=16).sum::<u64>());
    }
}

#[test]
fn the_demo_shapes_its_passes_and_report_filters_by_phase() {
    // spec/profile-format.md "Reports" ("Phases"): the demo's prompt pass is a prefill, each
    // generated token a decode step; `report --phase` shows one phase's passes.
    let dir = tempfile::tempdir().unwrap();
    let o = demo(dir.path(), &["--prompt", "4", "--tokens", "3"]);
    let (out, _) = text(&o);
    assert!(out.contains("Phases (self %, p50)"), "{out}");
    assert!(out.contains("Throughput by phase: prefill "), "{out}");
    let profile = dir.path().join("profile.json");
    let p = profile.to_str().unwrap();
    let report = |phase: &str| brickprof(&["report", p, "--phase", phase]);
    let (prefill, decode) = (report("prefill"), report("decode"));
    assert_eq!(prefill.status.code(), Some(0), "{:?}", text(&prefill));
    let (prefill, decode) = (text(&prefill).0, text(&decode).0);
    assert!(prefill.contains("1 passes, 4 tokens"), "{prefill}");
    assert!(decode.contains("3 passes, 3 tokens"), "{decode}");
    assert!(!decode.contains("prefill"), "{decode}");
    let bad = brickprof(&["report", p, "--phase", "warmup"]);
    assert_eq!(bad.status.code(), Some(2), "{:?}", text(&bad));
}
