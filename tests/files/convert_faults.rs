//! spec/traces.md "Command line": converting a trace that is not whole or not in order is an
//! error naming the input file, never a silent loss.

use super::bad_traces;

use bad_traces::{out_of_order_chrome, unended_perfetto};
use brickprof::output::{convert, output};
use brickprof::Error;

#[test]
fn slices_out_of_order_name_the_input_file() {
    // Before: "trace slice "RmsNorm" at 10000 ns comes after one at 20000 ns on the same
    // track", naming no file.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("shuffled.json");
    out_of_order_chrome(&input);
    let err = convert(
        &input,
        &dir.path().join("x.pftrace"),
        output("perfetto").unwrap(),
    )
    .unwrap_err();
    let Error::InFile { path, source } = &err else {
        panic!("not an error naming the input: {err:?}");
    };
    assert_eq!(path, &input);
    assert!(
        matches!(
            **source,
            Error::TraceOrder {
                start_ns: 10_000,
                previous_ns: 20_000,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with(&format!("{}: trace slice", input.display())),
        "{err}"
    );
}

#[test]
fn a_slice_that_never_ends_is_an_error_not_a_silent_loss() {
    // Before: the outer slice and the 20 slices inside it were dropped, and convert succeeded.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("cut.pftrace");
    unended_perfetto(&input, 20);
    let err = convert(
        &input,
        &dir.path().join("x.json"),
        output("chrome").unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::UnendedSlice { path, start_ns: 1000, slices: 21, name }
            if path == &input && name == "\"Outer\""),
        "{err:?}"
    );
    let shown = err.to_string();
    assert!(
        shown.contains("cut.pftrace") && shown.contains("never ends"),
        "{shown}"
    );
}
