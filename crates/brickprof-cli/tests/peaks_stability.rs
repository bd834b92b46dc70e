//! spec/work-accounting.md "Measured CPU peaks" and "Cache-aware roofline": five consecutive
//! demo runs on the CPU give every brick with more than 1 % of the time the same roofline
//! verdict (Bound) and the same memory level, measure every cache level the topology names, and
//! print no brick above every roof without its flag. CI also runs this test against a release
//! build (`cargo test --release --test peaks_stability`), where the peaks are the real ones.

use std::collections::BTreeMap;
use std::process::Command;

use brickprof::figures::Derived;
use brickprof::roofline::{Excess, MemLevel};
use brickprof::{roofline::Bound, Profile};

#[test]
fn five_demo_runs_agree_on_every_bound_and_level() {
    let dir = tempfile::tempdir().unwrap();
    let mut verdicts: BTreeMap<String, Vec<(Bound, Option<MemLevel>)>> = BTreeMap::new();
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
        assert!(stdout.contains("GB/s by level"), "{stdout}");
        let p = Profile::load(out.join("profile.json")).unwrap();
        let pk = p.meta.peaks.clone().unwrap();
        // The saved profile keeps every level: at least L1 and one more cache before DRAM.
        assert!(pk.memory_roofs().count() >= 3, "{pk:?}");
        assert_eq!(pk.memory_roofs().next().unwrap().0, MemLevel::L1);
        let roofs: Vec<String> = pk
            .memory_roofs()
            .map(|(l, _, g)| format!("{l} {g:.1}"))
            .collect();
        peaks.push(format!("{:.1} GFLOP/s; {}", pk.gflops(), roofs.join(", ")));
        for b in Derived::of(&p, None).bricks {
            if b.excess == Some(Excess::AboveEvery) {
                let work = stdout.split("\nWork ").nth(1).unwrap_or("");
                let line = work.lines().find(|l| l.starts_with(&b.name)).unwrap_or("");
                assert!(
                    line.contains('!'),
                    "{} above every roof, unflagged: {line}",
                    b.name
                );
            }
            if b.pct > 1.0 {
                verdicts
                    .entry(b.name)
                    .or_default()
                    .push((b.bound.unwrap(), b.level));
            }
        }
    }
    eprintln!("peaks over five runs:\n  {}", peaks.join("\n  "));
    eprintln!("verdicts: {verdicts:?}");
    assert!(verdicts.len() >= 4, "{verdicts:?}");
    for (brick, v) in &verdicts {
        assert!(
            v.iter().all(|b| *b == v[0]),
            "{brick} flips between runs: {v:?}; peaks {peaks:?}"
        );
        assert!(v[0].1.is_some(), "{brick} has no level: {v:?}");
    }
}
