//! spec/imports.md "Memory", for the CSV imports: a file over 100 times the fixture imports
//! with the same peak heap as the fixture (within a record's buffers), and exactly its rows'
//! repeat count times its calls, time and counters.

use std::io::Write;
use std::path::Path;

use super::{assert_bounded, fixture, peak_during};

/// `src` with its data rows (those after the first `skip` lines) written `times` times.
fn repeated(src: &Path, dst: &Path, skip: usize, times: usize) {
    let text = std::fs::read_to_string(src).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(dst).unwrap());
    for l in &lines[..skip] {
        writeln!(out, "{l}").unwrap();
    }
    for _ in 0..times {
        for l in &lines[skip..] {
            writeln!(out, "{l}").unwrap();
        }
    }
}

/// The CSV formats' check (run by the one test of the binary).
pub fn a_file_100_times_the_fixture_imports_exactly_with_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    // ncu: three lines before the header, the header and the units row.
    let big = dir.path().join("ncu_big.csv");
    repeated(&fixture("ncu_raw_nvtx.csv"), &big, 5, 160);
    // rocprofv3: the kernel trace 120 times, and its markers.
    let kbig = dir.path().join("1_kernel_trace.csv");
    repeated(&fixture("rocprofv3/3141_kernel_trace.csv"), &kbig, 1, 120);
    repeated(
        &fixture("rocprofv3/3141_marker_api_trace.csv"),
        &dir.path().join("1_marker_api_trace.csv"),
        1,
        120,
    );
    for (small, big, times) in [
        (fixture("ncu_raw_nvtx.csv"), big, 160u64),
        (fixture("rocprofv3/3141_kernel_trace.csv"), kbig, 120),
    ] {
        let (one, one_peak) = peak_during(|| brickprof::import::import(&small).unwrap());
        let (many, many_peak) = peak_during(|| brickprof::import::import(&big).unwrap());
        eprintln!(
            "{}: peak heap {one_peak} B (1x), {many_peak} B ({times}x)",
            small.display()
        );
        // Memory: what the fixture took, give or take a record buffer's growth.
        assert_bounded(&small, &big, (1, one_peak), (times, many_peak));
        // Exactness at scale: every call `times` times.
        crate::assert_every_call_times(&one.profile, &many.profile, times);
        for (a, b) in one
            .profile
            .hardware_counters
            .iter()
            .zip(&many.profile.hardware_counters)
        {
            assert_eq!(b.dram_bytes, a.dram_bytes.map(|x| times * x));
            assert_eq!(b.flops, a.flops.map(|x| times * x));
        }
        let outside = |p: &brickprof::Profile| p.meta.outside_bricks.unwrap_or_default().kernels;
        assert_eq!(outside(&many.profile), times * outside(&one.profile));
    }
}
