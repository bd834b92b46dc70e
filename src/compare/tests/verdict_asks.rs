//! spec/timing-verdicts.md "Cannot judge": a row judged within noise whose band is wider than
//! the change asked about cannot judge it; asked about a larger change, it judges; a row no
//! gate covers is asked about the minimum practical size. Moved from the CLI's gate tests,
//! which asked through `TimingVerdicts::ask`, now internal (`brickprof diff` asks through
//! [`crate::compare::DiffOptions::asked`]).

use crate::compare::{Interval, Judgement, Quantity, TimingVerdict, TimingVerdicts, VerdictRow};
use crate::Phase;

fn row(phase: Phase, name: &str, ratio: f64, verdict: TimingVerdict) -> VerdictRow {
    VerdictRow {
        phase,
        quantity: Quantity::Brick,
        name: name.into(),
        layer: None,
        relative: false,
        samples: (10, 10),
        judgement: Some(Judgement {
            ratio,
            interval: Interval {
                lo: ratio - 0.01,
                hi: ratio + 0.01,
            },
            band: None,
            verdict,
        }),
        withheld: None,
        asked: 0.03,
        cannot_judge: false,
    }
}

fn verdicts(rows: Vec<VerdictRow>) -> TimingVerdicts {
    TimingVerdicts {
        noise_runs: 0,
        min_effect: 0.03,
        noise_factor: 2.0,
        withheld: None,
        workloads_differ: Vec::new(),
        rows,
    }
}

#[test]
fn a_band_wider_than_the_change_asked_cannot_judge_it() {
    // Within noise with a band of ±20 % says nothing about a 5 % change, but does about a
    // 30 % one.
    let mut r = row(Phase::Decode, "Matmul", 1.1, TimingVerdict::WithinNoise);
    r.judgement.as_mut().unwrap().band = Some(1.2f64.ln());
    let mut v = verdicts(vec![r]);
    v.ask(|_| Some(0.05));
    assert!(v.rows[0].cannot_judge && !v.rows[0].judged());
    assert_eq!(v.rows[0].asked, 0.05);
    assert_eq!(
        v.rows[0].cannot_judge_text().unwrap(),
        "cannot judge: noise ±20 % exceeds the 5 % asked for"
    );
    let text = v.to_string();
    assert!(text.contains("[decode] Matmul"), "{text}");
    assert!(text.contains("0 within noise, 1 cannot judge"), "{text}");
    v.ask(|_| Some(0.30));
    assert!(!v.rows[0].cannot_judge && v.rows[0].judged());
    assert_eq!(v.rows[0].cannot_judge_text(), None);
    // A row no gate covers is asked about the minimum practical size.
    v.ask(|_| None);
    assert_eq!(v.rows[0].asked, 0.03);
    assert!(v.rows[0].cannot_judge);
    // A gate below the minimum practical size asks about the minimum.
    v.ask(|_| Some(0.01));
    assert_eq!(v.rows[0].asked, 0.03);
}
