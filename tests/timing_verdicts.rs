//! spec/timing-verdicts.md "Measured rates": on the simulated device with known, seeded
//! noise (per-launch jitter and a per-run speed), identical runs hold the false-positive rate
//! and a planted slowdown is detected with the stated power. Exact: every number follows from
//! the seeds, so this test cannot flake.

use brickprof::report::{timing_verdicts, Quantity, TimingVerdict, VerdictOptions, Withheld};
use brickprof::{BrickId, BrickProfiler, PassShape, Phase, Profile, ProfilerConfig, SimDevice};

const US: u64 = 1_000;
const LAYERS: usize = 4;
const PROMPT: u32 = 16;
const DECODES: u32 = 64;
/// Per-launch jitter: ±5 %.
const JITTER_PPM: u32 = 50_000;
/// Per-run speed: ±1.5 % (the machine's state from run to run), in ppm.
const RUN_SPREAD_PPM: u64 = 15_000;
/// The brick a slowdown is planted in: about 2.8 % of the time.
const PLANTED: BrickId = BrickId::RmsNorm;

/// The bricks of a layer and their cost at `context` tokens, ns. ResidualAdd is tiny (about
/// 0.3 % of the time): under the default minimum share, never judged.
fn layer_bricks(context: u64) -> [(BrickId, u64); 6] {
    [
        (BrickId::RmsNorm, 3 * US),
        (BrickId::ResidualAdd, 300),
        (BrickId::QkvProjection, 20 * US),
        (BrickId::AttentionScore, 10 * US + 20 * context),
        (BrickId::UpProjection, 30 * US),
        (BrickId::DownProjection, 30 * US),
    ]
}

/// One run: a prompt pass, then `DECODES` decode passes, on a device seeded with `seed`,
/// `PLANTED` stretched by `slow_pct` percent.
fn run(seed: u64, slow_pct: u64) -> Profile {
    let device = SimDevice::with_jitter(1_000, seed, JITTER_PPM);
    // The run's speed, from its seed: 1 ± RUN_SPREAD_PPM / 10⁶.
    let speed_ppm = 1_000_000 - RUN_SPREAD_PPM
        + (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) % (2 * RUN_SPREAD_PPM + 1);
    let cost = |ns: u64| ns * speed_ppm / 1_000_000;
    let config = ProfilerConfig {
        layers: LAYERS,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(4096)).unwrap();
    let pass = |prof: &mut BrickProfiler<_>, shape: PassShape| {
        prof.begin_pass_with(shape);
        for layer in 0..LAYERS {
            prof.begin_layer(layer);
            for (brick, ns) in layer_bricks(shape.context_tokens()) {
                let ns = if brick == PLANTED {
                    ns * (100 + slow_pct) / 100
                } else {
                    ns
                };
                let t = prof.start_brick(brick);
                device.launch(cost(ns));
                prof.stop_brick(t, 1);
            }
            prof.end_layer();
        }
        let t = prof.start_brick(BrickId::LmHead);
        device.launch(cost(50 * US));
        prof.stop_brick(t, 1);
        prof.end_pass(u64::from(shape.new_tokens())).unwrap();
    };
    pass(
        &mut prof,
        PassShape::new(PROMPT, 1, u64::from(PROMPT)).unwrap(),
    );
    for i in 0..DECODES {
        pass(
            &mut prof,
            PassShape::new(1, 1, u64::from(PROMPT + 1 + i)).unwrap(),
        );
    }
    prof.finalize().unwrap();
    prof.profile()
}

/// Pair `i`: a reference, two noise runs and a candidate with `slow_pct` planted. Returns
/// whether any row was flagged, and whether the planted brick's decode row was judged slower.
fn pair(i: u64, slow_pct: u64) -> (bool, bool) {
    let reference = run(4 * i + 1, 0);
    let noise = [run(4 * i + 2, 0), run(4 * i + 3, 0)];
    let candidate = run(4 * i + 4, slow_pct);
    let v = timing_verdicts(
        &reference,
        &candidate,
        &[&noise[0], &noise[1]],
        &VerdictOptions::default(),
    );
    assert_eq!(v.noise_runs, 2);
    assert!(v.withheld.is_none());
    // Every decode brick and TPOT got a verdict.
    let judged = v
        .rows
        .iter()
        .filter(|r| r.phase == Phase::Decode && r.judgement.is_some())
        .count();
    assert_eq!(judged, 6 + 2, "{v:#?}");
    let tiny = v
        .rows
        .iter()
        .find(|r| r.phase == Phase::Decode && r.name == "ResidualAdd")
        .unwrap();
    assert_eq!(tiny.withheld, Some(Withheld::BelowShare));
    let flagged = v.changed().next().is_some();
    let detected = v.rows.iter().any(|r| {
        r.phase == Phase::Decode
            && r.quantity == Quantity::Brick
            && r.name == PLANTED.name()
            && r.verdict() == Some(TimingVerdict::Slower)
    });
    (flagged, detected)
}

#[test]
fn identical_runs_hold_the_false_positive_rate() {
    // Target: at most 1 pair in 20 flags anything.
    let flagged = (0..20).filter(|&i| pair(i, 0).0).count();
    eprintln!("false positives: {flagged} of 20 pairs");
    assert!(flagged <= 1, "{flagged} of 20 identical pairs flagged");
}

#[test]
fn a_planted_ten_percent_slowdown_is_detected() {
    // Target: a 10 % slowdown of a brick with at least 2 % of the time, in 19 of 20 pairs.
    let reference = run(1, 0);
    let series = reference.pass_series.as_ref().unwrap();
    let planted: u64 = series
        .brick_samples(Some(Phase::Decode), PLANTED.name())
        .unwrap()
        .iter()
        .sum();
    let total: u64 = series
        .records()
        .filter(|r| r.phase() == Phase::Decode)
        .map(|r| r.device_ns())
        .sum();
    assert!(
        planted * 50 >= total,
        "the planted brick has {planted} of {total}"
    );
    let mut rates = Vec::new();
    for pct in [3, 5, 10] {
        let detected = (0..20).filter(|&i| pair(i, pct).1).count();
        eprintln!("detected {pct} %: {detected} of 20 pairs");
        rates.push(detected);
    }
    assert!(rates[2] >= 19, "10 %: detected in {} of 20", rates[2]);
}
