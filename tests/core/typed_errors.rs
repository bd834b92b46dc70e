//! spec/hot-path.md "Errors": every error a caller can cause is a variant it can match on, with
//! the value it gave (escaped) and what to give instead; none is a bare string.

use brickprof::checksum::{QuantBlocks, QuantFormat};
use brickprof::output::{convert, output};
use brickprof::{
    model::Sampling, roofline::DevicePeaks, timeline::TimelineKind, BrickProfiler, Error,
    ProfilerConfig,
};

#[test]
fn bad_values_name_what_they_are() {
    // spec/hot-path.md "Errors".
    let what = |e: Error| match e {
        Error::InvalidValue {
            what,
            value,
            expected,
        } => (what, value, expected),
        other => panic!("expected InvalidValue, got {other:?}"),
    };
    let (w, v, x) = what("every-x".parse::<Sampling>().unwrap_err());
    assert_eq!((w, v.as_str()), ("sampling", "\"every-x\""));
    assert!(x.contains("every-N"), "{x}");
    assert_eq!(
        what("every-0".parse::<Sampling>().unwrap_err()).0,
        "sampling"
    );
    // A name with a terminal escape is shown escaped, never raw.
    let (w, v, _) = what("gpu\u{1b}[2J".parse::<TimelineKind>().unwrap_err());
    assert_eq!(w, "timeline name");
    assert!(!v.contains('\u{1b}'), "{v:?}");
    assert_eq!(
        what(QuantBlocks::new(QuantFormat::Q8_0, &[0; 67]).unwrap_err()).0,
        "quantized buffer length"
    );
    let mut prof = BrickProfiler::new(ProfilerConfig::default()).unwrap();
    assert_eq!(
        what(
            prof.register("", brickprof::BrickCategory::Other)
                .unwrap_err()
        )
        .0,
        "brick name"
    );
    let (w, v, x) = what(DevicePeaks::parse("no-such-gpu").unwrap_err());
    assert_eq!((w, v.as_str()), ("device preset", "\"no-such-gpu\""));
    assert!(x.contains("presets:"), "{x}");
    assert_eq!(
        what(DevicePeaks::parse("1e3,fast").unwrap_err()).0,
        "device peaks"
    );
    assert!(matches!(
        DevicePeaks::new("gpu", -1.0, 1.0),
        Err(Error::Peaks(_))
    ));
}

#[test]
fn converting_a_trace_onto_itself_is_refused_by_name() {
    // spec/hot-path.md "Errors"; spec/traces.md "Command line".
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, "[]").unwrap();
    match convert(&path, &path, output("chrome").unwrap()) {
        Err(Error::OutputIsInput { output, input }) => {
            assert_eq!((output, input), (path.clone(), path.clone()));
        }
        other => panic!("expected OutputIsInput, got {other:?}"),
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "[]", "input kept");
}

#[cfg(not(any(feature = "nvtx", feature = "roctx")))]
#[test]
fn vendor_ranges_without_the_feature_name_it() {
    // spec/hot-path.md "Errors".
    let config = ProfilerConfig {
        vendor_ranges: true,
        ..ProfilerConfig::default()
    };
    match BrickProfiler::new(config) {
        Err(Error::FeatureMissing { feature, .. }) => assert!(feature.contains("nvtx")),
        other => panic!("expected FeatureMissing, got {other:?}"),
    }
}
