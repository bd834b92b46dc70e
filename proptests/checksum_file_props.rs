//! spec/checksums.md "File format": loading never panics. Real checksum files (both versions)
//! are mutated (byte flips, truncation, numeric fields replaced by extreme numbers) and loaded.

use std::sync::OnceLock;

use brickprof::checksum::{ChecksumLog, KernelKey, Tensor};
use brickprof::{
    compare::{divergence, Tolerance},
    Error,
};
use proptest::prelude::*;

/// A real version-2 file (every dtype) and the real version-1 fixture.
fn originals() -> &'static [String; 2] {
    static FILES: OnceLock<[String; 2]> = OnceLock::new();
    FILES.get_or_init(|| {
        let mut log = ChecksumLog::default();
        let key = |layer, brick: &str, call| KernelKey {
            pass: 1,
            layer,
            brick: brick.into(),
            call,
        };
        log.record(
            key(Some(0), "RmsNorm", 0),
            Tensor::F32(&[1.0, -2.5, f32::NAN, f32::NEG_INFINITY]),
        );
        log.record(
            key(Some(1), "QkvProjection", 0),
            brickprof::checksum::Tensor::Bf16(&[0x3f80, 0xc000]),
        );
        log.record(
            key(None, "LmHead", 2),
            brickprof::checksum::Tensor::I8(&[1, -128, 127]),
        );
        let v2 = serde_json::to_string_pretty(&log).expect("serialize");
        let v1 = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/golden/checksums_v1.json"
        ))
        .expect("the version-1 fixture");
        [v2, v1]
    })
}

/// Numbers that break naive arithmetic or JSON readers.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9007199254740993",
    "1e308",
    "-1e308",
    "1e999",
    "4294967295",
    "4294967296",
    "0.5",
    "\"7\"",
    "null",
    "[]",
];

/// Load `text` as a file: Ok or a typed error, never a panic; a loaded log also compares
/// with itself and renders without a panic.
fn load_never_panics(text: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mutated.json");
    std::fs::write(&path, text).expect("write");
    match ChecksumLog::load(&path) {
        Ok(log) => {
            for e in &log.entries {
                let s = &e.summary;
                // (its derived numbers, internal since 0.4, are read by `divergence` below)
                let _ = (s.len, e.key.to_string());
            }
            match divergence(&log, &log, Tolerance::default()) {
                Ok(report) => {
                    prop_assert!(report.is_match());
                    let _ = (report.to_string(), report.render_all());
                }
                Err(e) => prop_assert!(matches!(e, Error::DuplicateKernel { .. }), "{e}"),
            }
        }
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(
                msg.contains("mutated.json"),
                "the error names the file: {msg}"
            );
        }
    }
    // Read as a run file of either kind (what `brickprof diff` reads): never a panic.
    let _ = brickprof::compare::diff_files_with(&path, &path, &Default::default());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Invariant: flipping bytes of a real file gives Ok or an error naming the file.
    #[test]
    fn byte_flips_never_panic(which in 0usize..2, flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let mut bytes = originals()[which].clone().into_bytes();
        for (i, x) in flips {
            let k = i.index(bytes.len());
            bytes[k] ^= x | 1;
        }
        load_never_panics(&bytes)?;
    }

    /// Invariant: a truncated real file gives an error naming the file.
    #[test]
    fn truncation_never_panics(which in 0usize..2, cut in any::<prop::sample::Index>()) {
        let text = &originals()[which];
        let k = cut.index(text.len());
        load_never_panics(&text.as_bytes()[..k])?;
    }

    /// Invariant: replacing numeric fields of a real file with extreme numbers gives Ok or an
    /// error naming the file: counts saturate, nothing overflows (this runs in debug builds).
    #[test]
    fn extreme_numbers_never_panic(which in 0usize..2, picks in proptest::collection::vec((any::<prop::sample::Index>(), 0..EXTREMES.len()), 1..4)) {
        let text = &originals()[which];
        // The byte ranges of the numbers in the file.
        let mut numbers = Vec::new();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if (b[i].is_ascii_digit() || b[i] == b'-') && i > 0 && (b[i - 1] == b' ' || b[i - 1] == b'[') {
                let start = i;
                while i < b.len() && !matches!(b[i], b',' | b'\n' | b'}' | b']') {
                    i += 1;
                }
                numbers.push((start, i));
            }
            i += 1;
        }
        prop_assume!(!numbers.is_empty());
        let mut chosen: Vec<(usize, usize, &str)> = picks
            .iter()
            .map(|(at, x)| { let (s, e) = numbers[at.index(numbers.len())]; (s, e, EXTREMES[*x]) })
            .collect();
        chosen.sort_by_key(|c| std::cmp::Reverse(c.0));
        chosen.dedup_by_key(|c| c.0);
        let mut out = text.clone();
        for (s, e, x) in chosen {
            out.replace_range(s..e, x);
        }
        load_never_panics(out.as_bytes())?;
    }
}
