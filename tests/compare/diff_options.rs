//! spec/divergence.md "Options that mean something": a check or tolerance every output passes,
//! or none does, is refused before any file is read.

use std::path::Path;

use brickprof::compare::{diff_files_with, DiffOptions};
use brickprof::{
    compare::{Check, Tolerance},
    Error,
};

#[test]
fn thresholds_at_the_edge_of_meaning() {
    // Before: each refused one below was accepted, and diff's verdict became a constant.
    let ok = [
        "cosine:1",
        "cosine:-0.999",
        "max-abs:0",
        "max-rel:1e-3",
        "nmse:0",
        "sqnr:-10",
        "sqnr:40",
    ];
    let refused = [
        "cosine:2",
        "cosine:1.0000001",
        "cosine:-1",
        "cosine:-inf",
        "max-rel:-1",
        "max-abs:inf",
        "mean-abs:1e400",
        "p99-abs:-0.1",
        "nmse:inf",
        "sqnr:inf",
        "sqnr:-inf",
    ];
    for s in ok {
        assert!(s.parse::<Check>().is_ok(), "{s}");
    }
    for s in refused {
        assert!(s.parse::<Check>().is_err(), "{s}");
    }
    // A tolerance is checked before any file is read: a good one gets as far as the missing
    // file, a bad one is refused.
    let missing = Path::new("no/such/run.json");
    let with = |rtol, atol| DiffOptions {
        tolerance: Tolerance { rtol, atol },
        ..DiffOptions::default()
    };
    let err = diff_files_with(missing, missing, &with(0.0, 0.0)).unwrap_err();
    assert!(!matches!(err, Error::InvalidValue { .. }), "{err}");
    for (rtol, atol) in [
        (f64::INFINITY, 0.0),
        (0.0, "1e400".parse().unwrap()),
        (-1e-9, 0.0),
    ] {
        let err = diff_files_with(missing, missing, &with(rtol, atol)).unwrap_err();
        assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
    }
}

#[test]
fn meaningless_options_are_refused_before_any_file_is_read() {
    // A library caller that builds the structs gets the same answer as the CLI. (A check is
    // built only by parsing, which refuses a threshold without meaning; that `DiffOptions`
    // refuses one too is the unit test `diff_options_refuse_a_meaningless_check` in
    // src/compare/divergence/tests.rs.)
    let missing = Path::new("no/such/run.json");
    let cases = [
        DiffOptions {
            tolerance: Tolerance {
                rtol: f64::INFINITY,
                atol: 0.0,
            },
            ..DiffOptions::default()
        },
        DiffOptions {
            noise_factor: f64::NAN,
            ..DiffOptions::default()
        },
    ];
    for options in cases {
        let err = diff_files_with(missing, missing, &options).unwrap_err();
        assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
    }
}
