//! The `brickprof` binary given hostile or meaningless input: values from files escaped on
//! stderr, trace conversion faults naming the file, options that would make a check
//! meaningless refused. Specified in spec/profile-format.md ("Reports", "The CLI"),
//! spec/traces.md ("Command line") and spec/divergence.md ("Checks").

use super::bad_traces;
use crate::common;
use crate::common::cli;

use cli::{assert_clean_error, brickprof, text};
use common::hostile::{hostile_files, raw_control, Reader};

#[test]
fn an_unknown_fixed_choice_value_reaches_stderr_escaped() {
    // spec/profile-format.md "Reports": before, ESC ] 0 ; ... BEL from each field below was
    // printed raw on stderr and retitled the terminal.
    let dir = tempfile::tempdir().unwrap();
    let mut raw = Vec::new();
    for h in hostile_files(dir.path(), &common::fixed_profile(true)) {
        let path = h.path.to_str().unwrap();
        let log = h.path.with_file_name("checksums.json");
        let log = log.to_str().unwrap();
        let o = match h.reader {
            Reader::Profile => brickprof(&["report", path]),
            Reader::Checksums => brickprof(&["diff", path, path]),
            Reader::Captures => brickprof(&["diff", log, log]),
        };
        let name = h.path.file_name().unwrap().to_string_lossy().into_owned();
        assert_clean_error(&o, &name);
        let (out, err) = text(&o);
        assert!(err.contains("pwned"), "{}: {err}", h.field);
        if let Some(c) = raw_control(&err).or_else(|| raw_control(&out)) {
            raw.push((h.field, c));
        }
    }
    assert!(raw.is_empty(), "raw control characters for {raw:?}");
}

#[test]
fn convert_names_the_input_whose_slices_are_out_of_order() {
    // spec/traces.md "Command line": bad input is one line naming the file. Before, the
    // message named none.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("shuffled.json");
    bad_traces::out_of_order_chrome(&input);
    let o = brickprof(&["convert", input.to_str().unwrap()]);
    assert_clean_error(&o, &format!("{}: trace slice", input.display()));
}

#[test]
fn convert_refuses_a_trace_whose_outermost_slice_never_ends() {
    // spec/traces.md "Command line": before, the 21 slices were dropped and convert exited 0.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("cut.pftrace");
    bad_traces::unended_perfetto(&input, 20);
    let o = brickprof(&["convert", input.to_str().unwrap()]);
    assert_clean_error(
        &o,
        "cut.pftrace: trace slice \"Outer\" at 1000 ns never ends",
    );
    assert!(text(&o).1.contains("21 slices"), "{:?}", text(&o));
}

#[test]
fn diff_refuses_tolerances_and_checks_that_make_the_verdict_constant() {
    // spec/divergence.md "Options that mean something": before, `--rtol inf` called every
    // kernel close and diff exited 0, and each --check below was accepted.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("p.json");
    common::fixed_profile(true).save(&run).unwrap();
    let run = run.to_str().unwrap();
    for (flag, value) in [("--rtol", "inf"), ("--atol", "inf"), ("--atol", "1e400")] {
        let o = brickprof(&["diff", run, run, flag, value]);
        assert_clean_error(&o, "a tolerance is a finite, non-negative number");
    }
    for (check, why) in [
        ("sqnr:inf", "finite number of dB"),
        ("cosine:2", "(-1, 1]"),
        ("cosine:-1", "(-1, 1]"),
        ("max-rel:-1", "0 or more"),
    ] {
        let o = brickprof(&["diff", run, run, "--check", check]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{check}: {err}");
        assert!(err.contains(check) && err.contains(why), "{check}: {err}");
    }
}

#[test]
fn a_planted_fault_must_name_a_kernel_of_its_row() {
    // spec/divergence.md "Options that mean something": before, `--perturb model:softmax`
    // changed nothing, and a diff of the two runs said MATCH.
    let dir = tempfile::tempdir().unwrap();
    for (flag, spot, kernels) in [
        (
            "--perturb",
            "model:softmax",
            "Embedding, RmsNorm, LmHead, Sampling",
        ),
        (
            "--nan",
            "model:softmax",
            "Embedding, RmsNorm, LmHead, Sampling",
        ),
        ("--perturb", "1:lm_head", "RmsNorm, QkvProjection"),
    ] {
        let o = brickprof(&cli::demo_args(dir.path(), &["--no-save", flag, spot]));
        assert_clean_error(&o, &format!("invalid {flag}"));
        assert!(text(&o).1.contains(kernels), "{spot}: {:?}", text(&o));
    }
}
