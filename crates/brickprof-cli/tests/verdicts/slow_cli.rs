//! spec/timing-verdicts.md "Measured rates": `demo --slow LAYER:BRICK:PCT` plants a slowdown of
//! one kernel by PCT percent of its own time. On the simulated device every kernel's time is
//! exact, so the planted time is too, and nothing else moves.

use crate::common::cli;

use brickprof::{Phase, Profile};
use cli::{brickprof, demo, demo_args, text};

/// Per decode pass, the time of `brick` summed over its layers (the pass-brick record).
fn decode_samples(p: &Profile, brick: &str) -> Vec<u64> {
    p.pass_series
        .as_ref()
        .expect("a shaped run")
        .brick_samples(Some(Phase::Decode), brick)
        .expect("a pass-brick record")
}

#[test]
fn a_planted_slowdown_stretches_one_kernel_by_its_percentage() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    demo(&a, &["--timeline", "sim"]);
    demo(&b, &["--timeline", "sim", "--slow", "1:down_proj:10"]);
    let load = |d: &std::path::Path| Profile::load(d.join("profile.json")).unwrap();
    let (a, b) = (load(&a), load(&b));
    let layers = a.meta.layers as u64;
    let (before, after) = (
        decode_samples(&a, "DownProjection"),
        decode_samples(&b, "DownProjection"),
    );
    assert_eq!(before.len(), 3, "three decode passes");
    assert_eq!(before.len(), after.len());
    for (x, y) in before.iter().zip(&after) {
        // Every layer's down projection is the same kernel: layer 1's share is x / layers,
        // stretched by 10 % (rounded to the ns).
        assert_eq!(x % layers, 0, "{x}");
        let one = x / layers;
        let stretched = (one as f64 * 1.10).round() as u64;
        assert_eq!(*y, x - one + stretched, "{x} -> {y}");
    }
    // Nothing else moved.
    for brick in ["UpProjection", "AttentionScore", "RmsNorm"] {
        assert_eq!(
            decode_samples(&a, brick),
            decode_samples(&b, brick),
            "{brick}"
        );
    }
}

#[test]
fn a_slowdown_that_names_no_kernel_or_no_percentage_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (slow, needle) in [
        ("1:down_proj", "is not LAYER:BRICK:PCT"),
        ("1:down_proj:0", "is not a percentage"),
        ("1:down_proj:ten", "is not a percentage"),
        ("7:down_proj:10", "layer 7 does not exist"),
        ("model:down_proj:10", "--slow"),
    ] {
        let o = brickprof(&demo_args(
            dir.path(),
            &["--timeline", "sim", "--slow", slow],
        ));
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{slow}: {err}");
        assert!(
            err.contains(needle),
            "{slow}: expected {needle:?} in {err:?}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_slowdown_in_every_layer_stretches_the_whole_brick() {
    // `*:BRICK:PCT`: every layer's kernel, so the brick's per-pass time moves by PCT.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    demo(&a, &["--timeline", "sim"]);
    demo(&b, &["--timeline", "sim", "--slow", "*:down_proj:10"]);
    let load = |d: &std::path::Path| Profile::load(d.join("profile.json")).unwrap();
    let (a, b) = (load(&a), load(&b));
    let layers = a.meta.layers as u64;
    for (x, y) in decode_samples(&a, "DownProjection")
        .iter()
        .zip(decode_samples(&b, "DownProjection"))
    {
        let one = x / layers;
        assert_eq!(y, layers * (one as f64 * 1.10).round() as u64, "{x} -> {y}");
    }
    assert_eq!(
        decode_samples(&a, "UpProjection"),
        decode_samples(&b, "UpProjection")
    );
}
