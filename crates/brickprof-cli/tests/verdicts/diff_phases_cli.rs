//! spec/profile-format.md "Comparing runs" and "The CLI": `report A --diff B` prints the
//! timing comparison after the table, and `--phase` chooses whose passes are compared (as it
//! chooses what the report shows); `diff A B --phase` likewise. Two demo runs on the simulated
//! device, so their passes have phases.

use crate::common::cli;

use cli::{brickprof, demo, text};

fn profiles() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    demo(&a, &["--timeline", "sim"]);
    demo(&b, &["--timeline", "sim", "--tokens", "5"]);
    let path = |d: &std::path::Path| d.join("profile.json").display().to_string();
    (dir, path(&a), path(&b))
}

/// The comparison part of `report A --diff B --phase PHASE`'s output.
fn compared(a: &str, b: &str, phase: &str) -> String {
    let o = brickprof(&["report", a, "--diff", b, "--phase", phase]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let at = out
        .find("Compared with")
        .unwrap_or_else(|| panic!("no comparison: {out}"));
    out[at..].to_string()
}

#[test]
fn report_diff_compares_the_phase_it_is_given() {
    let (_dir, a, b) = profiles();
    let decode = compared(&a, &b, "decode");
    let prefill = compared(&a, &b, "prefill");
    let all = compared(&a, &b, "all");
    assert_ne!(decode, prefill);
    assert!(
        decode.contains("[decode]") && !decode.contains("[prefill]"),
        "{decode}"
    );
    assert!(
        decode.contains("TPOT") && !decode.contains("TTFT"),
        "{decode}"
    );
    assert!(
        prefill.contains("[prefill]") && !prefill.contains("[decode]"),
        "{prefill}"
    );
    assert!(
        prefill.contains("TTFT") && !prefill.contains("TPOT"),
        "{prefill}"
    );
    assert!(
        all.contains("[prefill]") && all.contains("[decode]"),
        "{all}"
    );
    // `brickprof diff --phase` prints the same comparison.
    let o = brickprof(&["diff", &a, &b, "--phase", "decode"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(decode.ends_with(&out), "{out}\n---\n{decode}");
}
