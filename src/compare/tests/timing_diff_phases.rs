//! A timing diff carries phases (spec/profile-format.md "Comparing runs"): prefill is compared
//! with prefill and decode with decode, never one with the other. On the simulated device,
//! whose clocks are simulated: exact numbers. Moved from tests/outputs/phase_exports.rs: the
//! diff's rows are internal ([`crate::compare::TimingDiff`] is serialized and rendered).

use crate::compare::timing_diff;
use crate::{
    model::PhaseFilter,
    timeline::{SimDevice, SimTimeline},
    BrickId, BrickProfiler, PassShape, Phase, Profile, ProfilerConfig,
};

const US: u64 = 1_000;
const LAYERS: usize = 2;
const PROMPT: u32 = 16;
const DECODES: u64 = 6;
/// QkvProjection's kernel time in a prefill pass and in a decode pass.
const PREFILL_QKV: u64 = 40 * US;
const DECODE_QKV: u64 = 7 * US;
/// AttentionScore costs A + B·context per call.
const ATTN_A: u64 = 2 * US;
const ATTN_B: u64 = 10;

fn pass(prof: &mut BrickProfiler<SimTimeline>, device: &SimDevice, qkv: u64, context: u64) {
    for layer in 0..LAYERS {
        prof.begin_layer(layer);
        let t = prof.start_brick(BrickId::QkvProjection);
        device.launch(qkv);
        prof.stop_brick(t, 1);
        let t = prof.start_brick(BrickId::AttentionScore);
        device.launch(ATTN_A + ATTN_B * context);
        prof.stop_brick(t, 1);
        prof.end_layer();
    }
}

/// One prompt pass, then `DECODES` decode steps whose QkvProjection takes `decode_slowdown`
/// longer than `DECODE_QKV`.
fn profile(decode_slowdown: u64) -> Profile {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: LAYERS,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(256)).unwrap();
    let prompt = u64::from(PROMPT);
    prof.begin_pass();
    prof.set_pass_shape(PassShape::new(PROMPT, 1, prompt).unwrap());
    pass(&mut prof, &device, PREFILL_QKV, prompt);
    device.host_work(US);
    prof.end_pass(prompt).unwrap();
    for i in 1..=DECODES {
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(1, 1, prompt + i).unwrap());
        pass(&mut prof, &device, DECODE_QKV + decode_slowdown, prompt + i);
        device.host_work(US);
        prof.end_pass(1).unwrap();
    }
    prof.finalize().unwrap();
    prof.profile()
}

// spec/profile-format.md "Comparing runs": one row per (phase, brick); a slowdown in decode
// shows in the decode row and not in the prefill row.
#[test]
fn a_decode_slowdown_shows_in_the_decode_rows_only() {
    let slowdown = 3 * US;
    let (a, b) = (profile(0), profile(slowdown));
    let diff = timing_diff(&a, &b, PhaseFilter::All);
    assert!(diff.reference_phased && diff.candidate_phased);
    let phases: Vec<Phase> = diff.phases.iter().map(|p| p.phase).collect();
    assert_eq!(phases, [Phase::Prefill, Phase::Decode]);
    let row = |phase, name: &str| {
        diff.changes
            .iter()
            .find(|c| c.phase == phase && c.name == name)
            .unwrap_or_else(|| panic!("no {phase} {name} row"))
    };
    let prefill = row(Phase::Prefill, "QkvProjection");
    assert_eq!(prefill.reference_calls, Some(LAYERS as u64));
    assert_eq!(prefill.reference_mean_ns, PREFILL_QKV as f64);
    assert_eq!(prefill.mean_delta_ns, 0.0);
    assert_eq!(prefill.impact_per_token_ns, 0.0);
    let decode = row(Phase::Decode, "QkvProjection");
    assert_eq!(decode.reference_calls, Some(DECODES * LAYERS as u64));
    assert_eq!(decode.reference_mean_ns, DECODE_QKV as f64);
    assert_eq!(decode.mean_delta_ns, slowdown as f64);
    // Each generated token pays the slowdown once per layer.
    assert_eq!(
        decode.impact_per_token_ns,
        (slowdown * LAYERS as u64) as f64
    );
    // Attention did not change in either phase.
    for phase in [Phase::Prefill, Phase::Decode] {
        assert_eq!(row(phase, "AttentionScore").mean_delta_ns, 0.0);
    }
    // Exactly one row per (phase, brick).
    assert_eq!(diff.changes.len(), 4);
    // The header: TPOT grew by the slowdown per layer, TTFT did not move.
    let l = diff.latency.expect("both runs have a pass series");
    let (ttft, tpot) = (l.ttft.unwrap(), l.tpot.unwrap());
    assert_eq!(ttft.reference.p50_ns, ttft.candidate.p50_ns);
    assert_eq!(
        tpot.candidate.p50_ns - tpot.reference.p50_ns,
        slowdown * LAYERS as u64
    );
    let (pre, dec) = (l.prefill.unwrap(), l.decode.unwrap());
    assert_eq!(pre.reference_tokens_per_sec, pre.candidate_tokens_per_sec);
    assert!(dec.candidate_tokens_per_sec < dec.reference_tokens_per_sec);
    let text = diff.render(&a, &b);
    assert!(
        text.contains("[prefill]") && text.contains("[decode]"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");

    // One phase only: its rows, its half of the header.
    let only = timing_diff(&a, &b, PhaseFilter::Only(Phase::Prefill));
    assert!(only.changes.iter().all(|c| c.phase == Phase::Prefill));
    assert_eq!(only.changes.len(), 2);
    let l = only.latency.unwrap();
    assert!(l.ttft.is_some() && l.prefill.is_some());
    assert!(l.tpot.is_none() && l.decode.is_none());
}
