//! spec/imports.md "Bad files": truncated and mutated fixtures give errors naming the file
//! (and the line, for a fault at one), never a panic; values from the file are escaped.

use std::path::Path;

use brickprof::import::import;
use brickprof::Error;

use super::fixture;

/// A small Nsight Compute raw CSV: the columns brickprof reads, three kernels.
const SMALL_NCU: &str = "==PROF== Connected to process 9 (./a)\n\
\"ID\",\"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg\",\"Kernel Name\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\",\"gpu__time_duration.sum\",\"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum\",\"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum\",\"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum\"\n\
\"\",\"\",\"\",\"Kbyte\",\"byte\",\"us\",\"inst\",\"inst\",\"inst\"\n\
\"0\",\"9  \"\"<default domain>:L0/RmsNorm:none:none:none:none:none:none\"\" \",\"k(int)\",\"1,024.5\",\"12\",\"1.5\",\"0\",\"1,000\",\"3\"\n\
\"1\",\"9  \"\"<default domain>:L0/RmsNorm:none:none:none:none:none:none\"\" \",\"k2(int)\",\"2\",\"0\",\"2\",\"1\",\"1\",\"1\"\n\
\"2\",\"\",\"k3(int)\",\"n/a\",\"0\",\"0.25\",\"1\",\"1\",\"1\"\n";

/// What every error of a damaged file must be: naming the file, no raw control character.
fn check_error(e: &Error, path: &Path) {
    let text = e.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "the error names no file: {text}"
    );
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "a raw control character reached the message: {text:?}"
    );
}

fn try_import(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), Error> {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    match import(&path) {
        Ok(_) => Ok(()),
        Err(e) => {
            check_error(&e, &path);
            Err(e)
        }
    }
}

#[test]
fn the_small_ncu_file_reads_units_separators_and_missing_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.csv");
    std::fs::write(&path, SMALL_NCU).unwrap();
    let imp = import(&path).unwrap();
    let c = &imp.profile.hardware_counters[0];
    assert_eq!((c.brick.as_str(), c.calls, c.kernels), ("RmsNorm", 1, 2));
    assert_eq!(c.time_ns, 1_500 + 2_000, "us scaled to ns");
    assert_eq!(
        c.dram_bytes,
        Some(1_024_500 + 12 + 2_000),
        "Kbyte scaled, separators read"
    );
    assert_eq!(c.flops, Some(2 * 1_000 + 3 + 2 + 1 + 1));
    let o = imp.profile.meta.outside_bricks.unwrap();
    assert_eq!((o.kernels, o.busy_ns), (1, 250));
}

#[test]
fn every_truncation_of_the_small_files_is_an_error_or_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let ncu = SMALL_NCU.as_bytes();
    for cut in 0..ncu.len() {
        let _ = try_import(dir.path(), "cut.csv", &ncu[..cut]);
    }
    // A cut inside a row's fields is an error at that row's line.
    let row = SMALL_NCU.find("\"1\",").unwrap();
    let e = try_import(dir.path(), "cut.csv", &ncu[..row + 20]).unwrap_err();
    assert!(e.to_string().contains("line 5"), "{e}");
    let kernels = std::fs::read(fixture("rocprofv3/3141_kernel_trace.csv")).unwrap();
    let markers = std::fs::read(fixture("rocprofv3/3141_marker_api_trace.csv")).unwrap();
    for cut in 0..kernels.len() {
        let _ = try_import(dir.path(), "7_kernel_trace.csv", &kernels[..cut]);
    }
    std::fs::write(dir.path().join("7_kernel_trace.csv"), &kernels).unwrap();
    for cut in (0..markers.len()).step_by(3) {
        std::fs::write(dir.path().join("7_marker_api_trace.csv"), &markers[..cut]).unwrap();
        if let Err(e) = import(dir.path().join("7_kernel_trace.csv")) {
            check_error(&e, &dir.path().join("7_marker_api_trace.csv"));
        }
    }
}

#[test]
fn truncations_of_the_real_ncu_file_are_errors_or_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("ncu_raw_nvtx.csv")).unwrap();
    let mut cuts: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .flat_map(|(i, _)| [i, i + 1])
        .collect();
    let mut r = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..150 {
        r = splitmix(r);
        cuts.push((r % bytes.len() as u64) as usize);
    }
    for cut in cuts {
        let _ = try_import(dir.path(), "cut.csv", &bytes[..cut.min(bytes.len())]);
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn random_byte_flips_are_errors_or_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let mut r = 42u64;
    for (name, bytes, flips) in [
        ("small.csv", SMALL_NCU.as_bytes().to_vec(), 1_500),
        (
            "ncu.csv",
            std::fs::read(fixture("ncu_raw_nvtx.csv")).unwrap(),
            150,
        ),
        (
            "9_kernel_trace.csv",
            std::fs::read(fixture("rocprofv3/3141_kernel_trace.csv")).unwrap(),
            1_500,
        ),
    ] {
        for _ in 0..flips {
            let mut b = bytes.clone();
            for _ in 0..1 + (r % 3) {
                r = splitmix(r);
                let at = (r % b.len() as u64) as usize;
                r = splitmix(r);
                b[at] = match r % 4 {
                    0 => b'"',
                    1 => b',',
                    2 => b'\n',
                    _ => (r >> 8) as u8,
                };
            }
            let _ = try_import(dir.path(), name, &b);
        }
    }
}

#[test]
fn a_bad_value_names_the_file_the_line_and_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = SMALL_NCU.replace("\"1.5\"", "\"1.5\u{1b}[31m\"");
    let e = try_import(dir.path(), "bad.csv", bad.as_bytes()).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::Import { line: 4, .. }), "{e:?}");
    assert!(
        text.contains("line 4") && text.contains("gpu__time_duration.sum"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "{text:?}");
    // A stack that is not one.
    let bad = SMALL_NCU.replace("9  \"\"<default", "x  \"\"<default");
    let e = try_import(dir.path(), "bad.csv", bad.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("thread id"), "{e}");
    // A layer over the limit.
    let bad = SMALL_NCU.replace("L0/RmsNorm", "L99999999/RmsNorm");
    let e = try_import(dir.path(), "bad.csv", bad.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("over the limit"), "{e}");
    // A kernel that ends before it starts.
    let k = std::fs::read_to_string(fixture("rocprofv3/3141_kernel_trace.csv")).unwrap();
    let bad = k.replacen(",5000060524,5000076650,", ",5000076650,5000060524,", 1);
    let e = try_import(dir.path(), "1_kernel_trace.csv", bad.as_bytes()).unwrap_err();
    assert!(
        e.to_string().contains("line 3") && e.to_string().contains("before it starts"),
        "{e}"
    );
}

#[test]
fn files_no_importer_reads_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("empty.csv", &b""[..]),
        ("blank.csv", &b"  \n\n"[..]),
        ("other.csv", &b"a,b,c\n1,2,3\n"[..]),
        ("bin.csv", &[0u8, 159, 146, 150, 0xff][..]),
    ] {
        let e = try_import(dir.path(), name, bytes).unwrap_err();
        assert!(matches!(e, Error::Invalid { .. }), "{name}: {e:?}");
    }
    let e = import(dir.path().join("missing.csv")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
}

#[test]
fn a_line_longer_than_a_record_is_refused_without_reading_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = SMALL_NCU.to_string();
    text.push_str(&"x".repeat(2 << 20));
    let e = try_import(dir.path(), "long.csv", text.as_bytes()).unwrap_err();
    assert!(e.to_string().contains("longer than"), "{e}");
}
