//! The `brickprof` binary given hostile or meaningless input: values from files escaped on
//! stderr, trace conversion faults naming the file, options that would make a check
//! meaningless refused. Specified in spec/profile-format.md ("Reports", "The CLI"),
//! spec/traces.md ("Command line") and spec/divergence.md ("Checks").

#[path = "common/cli.rs"]
mod cli;
mod common;

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
    common::bad_traces::out_of_order_chrome(&input);
    let o = brickprof(&["convert", input.to_str().unwrap()]);
    assert_clean_error(&o, &format!("{}: trace slice", input.display()));
}

#[test]
fn convert_refuses_a_trace_whose_outermost_slice_never_ends() {
    // spec/traces.md "Command line": before, the 21 slices were dropped and convert exited 0.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("cut.pftrace");
    common::bad_traces::unended_perfetto(&input, 20);
    let o = brickprof(&["convert", input.to_str().unwrap()]);
    assert_clean_error(
        &o,
        "cut.pftrace: trace slice \"Outer\" at 1000 ns never ends",
    );
    assert!(text(&o).1.contains("21 slices"), "{:?}", text(&o));
}
