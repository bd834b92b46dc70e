//! The output formats as one list (spec/profile-format.md "The CLI", spec/traces.md "Command
//! line"): every output recognises the files it wrote and no other output's, a profile.json is
//! no trace, and an output is written whole or not at all.

use std::path::{Path, PathBuf};

use brickprof::output::{
    convert, output, outputs, trace_output_of, write_output, ReportOptions, Snapshot, Takes,
};
use brickprof::{BrickId, BrickProfiler, Error, ProfilerConfig};

/// A small traced run.
fn profiler() -> BrickProfiler {
    let mut prof = BrickProfiler::new(ProfilerConfig {
        layers: 2,
        trace_capacity: 256,
        ..Default::default()
    })
    .unwrap();
    for _ in 0..2 {
        for layer in 0..2 {
            prof.begin_layer(layer);
            let outer = prof.start_brick(BrickId::AttentionScore);
            let inner = prof.start_brick(BrickId::AttentionSoftmax);
            std::hint::black_box((0..100).sum::<u64>());
            prof.stop_brick(inner, 4);
            prof.stop_brick(outer, 4);
            prof.end_layer();
        }
        prof.end_pass(1).unwrap();
    }
    prof
}

/// Every output's file of one run, named `out.EXTENSION` (or `out-NAME.EXTENSION` when two
/// share an extension), and the profile itself.
fn write_every_output(dir: &Path) -> (Vec<(&'static str, PathBuf)>, PathBuf) {
    let prof = profiler();
    let p = prof.profile();
    let opts = ReportOptions::default();
    let view = prof.view().trace_view().unwrap();
    let mut files = Vec::new();
    for o in outputs() {
        let path = dir.join(format!("out-{}.{}", o.name(), o.extension()));
        match o.takes() {
            Takes::Profile => write_output(*o, &Snapshot::Profile(&p, &opts), &path).unwrap(),
            Takes::Trace => write_output(*o, &Snapshot::Trace(&view), &path).unwrap(),
        }
        files.push((o.name(), path));
    }
    let profile = dir.join("profile.json");
    p.save(&profile).unwrap();
    (files, profile)
}

fn head(path: &Path) -> Vec<u8> {
    let mut h = std::fs::read(path).unwrap();
    h.truncate(4096);
    h
}

#[test]
fn each_output_recognises_its_own_files_and_no_other() {
    // spec/profile-format.md "The CLI": `recognise` tells a file by name and first bytes.
    let dir = tempfile::tempdir().unwrap();
    let (files, profile) = write_every_output(dir.path());
    assert_eq!(files.len(), outputs().len());
    for (writer, path) in &files {
        let h = head(path);
        assert!(!h.is_empty(), "{writer} wrote something");
        for o in outputs() {
            assert_eq!(
                o.recognise(path, &h),
                o.name() == *writer,
                "{} recognising the {writer} output {}",
                o.name(),
                path.display()
            );
        }
    }
    // A profile is no output's (a profile.json is not a Chrome trace).
    let h = head(&profile);
    for o in outputs() {
        assert!(!o.recognise(&profile, &h), "{} took profile.json", o.name());
    }
    let err = convert(
        &profile,
        &dir.path().join("x.pftrace"),
        output("perfetto").unwrap(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("profile.json"), "{err}");
    assert!(err.to_string().contains("not a trace"), "{err}");
}

#[test]
fn a_trace_is_told_by_its_content_whatever_its_name() {
    // spec/traces.md "Command line": the input format is the output that recognises it.
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = write_every_output(dir.path());
    for (writer, path) in files {
        let o = output(writer).unwrap();
        if o.takes() != Takes::Trace {
            continue;
        }
        let renamed = dir.path().join(format!("{writer}.data"));
        std::fs::rename(&path, &renamed).unwrap();
        assert_eq!(trace_output_of(&renamed).unwrap().name(), writer);
    }
}

#[test]
fn names_are_unique_and_each_output_is_written_whole_or_not_at_all() {
    // spec/profile-format.md "Reading and writing files": whole or nothing.
    let mut names: Vec<&str> = outputs().iter().map(|o| o.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), outputs().len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    std::fs::write(&path, "old").unwrap();
    let p = profiler().profile();
    let opts = ReportOptions::default();
    // A trace output given a profile: an error, and the old file stays.
    let err = write_output(
        output("chrome").unwrap(),
        &Snapshot::Profile(&p, &opts),
        &path,
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidValue { .. }), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
}
