//! spec/divergence.md "Options that mean something": a check or tolerance every output passes,
//! or none does, is refused before any file is read.

use std::path::Path;

use brickprof::compare::{diff_files_with, DiffOptions};
use brickprof::{
    compare::{Check, Stat, Tolerance},
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
    assert!(Tolerance::new(0.0, 0.0).is_ok());
    for (rtol, atol) in [
        (f64::INFINITY, 0.0),
        (0.0, "1e400".parse().unwrap()),
        (-1e-9, 0.0),
    ] {
        let err = Tolerance::new(rtol, atol).unwrap_err();
        assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
    }
}

#[test]
fn meaningless_options_are_refused_before_any_file_is_read() {
    // A library caller that builds the structs gets the same answer as the CLI.
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
            checks: vec![Check {
                stat: Stat::Cosine,
                threshold: 2.0,
            }],
            ..DiffOptions::default()
        },
        DiffOptions {
            noise_factor: Some(f64::NAN),
            ..DiffOptions::default()
        },
    ];
    for options in cases {
        let err = diff_files_with(missing, missing, &options).unwrap_err();
        assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
    }
}
