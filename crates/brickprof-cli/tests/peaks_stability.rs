//! spec/work-accounting.md "Measured CPU peaks": five consecutive demo runs on the CPU give
//! every brick with more than 1 % of the time the same roofline verdict (Bound). CI also runs
//! this test against a release build (`cargo test --release --test peaks_stability`), where the
//! peaks are the real ones.

use std::collections::BTreeMap;
use std::process::Command;

use brickprof::report::Derived;
use brickprof::{Bound, Profile};

#[test]
fn five_demo_runs_agree_on_every_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut verdicts: BTreeMap<String, Vec<Bound>> = BTreeMap::new();
    let mut peaks = Vec::new();
    for run in 0..5 {
        let out = dir.path().join(format!("run{run}"));
        let o = Command::new(env!("CARGO_BIN_EXE_brickprof"))
            .args(["demo", "--layers", "2", "--prompt", "4", "--tokens", "8"])
            .args(["--trace-format", "perfetto", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains("theoretical"), "{stdout}");
        let p = Profile::load(out.join("profile.json")).unwrap();
        let pk = p.meta.peaks.clone().unwrap();
        peaks.push((pk.gflops(), pk.gbps()));
        for b in Derived::of(&p, None).bricks {
            if b.pct > 1.0 {
                verdicts.entry(b.name).or_default().push(b.bound.unwrap());
            }
        }
    }
    eprintln!("peaks (GFLOP/s, GB/s) over five runs: {peaks:.1?}");
    assert!(verdicts.len() >= 4, "{verdicts:?}");
    for (brick, v) in &verdicts {
        assert!(
            v.iter().all(|b| *b == v[0]),
            "{brick} flips between runs: {v:?}; peaks {peaks:.1?}"
        );
    }
}
