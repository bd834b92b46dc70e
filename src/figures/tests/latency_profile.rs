//! spec/hot-path.md "Pass series" and spec/profile-format.md "Pass series" (with fits): each
//! shaped pass leaves one record (its shape, wall time and time per category) and one point
//! per brick in its phase's fit sums; TTFT, TPOT and the fits come out of a saved profile
//! exactly. On the simulated device, whose host clock is a mock clock: exact numbers.

use crate::figures::latency::profile_latency;
use crate::figures::{brick_fit, latency};
use crate::{
    stats::Regressor,
    timeline::{SimDevice, SimTimeline},
    BrickCategory, BrickId, BrickProfiler, PassShape, Phase, Profile, ProfilerConfig, SyncMode,
};

const US: u64 = 1_000;
/// AttentionScore costs exactly A + B·context per call.
const A: u64 = 5 * US;
const B: u64 = 40;
/// Every pass: one UpProjection (an Ffn brick) of this per layer.
const QKV: u64 = 3 * US;
const LAYERS: usize = 2;

/// The prompt: two prefill chunks of 8 tokens, host walls 300 µs and 500 µs.
const CHUNKS: [(u32, u64, u64); 2] = [(8, 8, 300 * US), (8, 16, 500 * US)];
/// Decode steps: host walls 100, 110, ... µs (always longer than the pass's kernels).
const DECODES: u64 = 6;

fn decode_wall(i: u64) -> u64 {
    (100 + 10 * i) * US
}

fn profiler(device: &SimDevice, mode: SyncMode, pending: usize) -> BrickProfiler<SimTimeline> {
    let config = ProfilerConfig {
        layers: LAYERS,
        sync_mode: mode,
        pending_capacity: pending,
        ..ProfilerConfig::default()
    };
    BrickProfiler::with_timeline(config, device.timeline(4096)).unwrap()
}

/// One pass: per layer an UpProjection and an AttentionScore over `context` tokens; then the
/// host works `wall_ns` (the pass's wall time when the device is done by then). Returns the
/// pass's Attention time.
fn pass(
    prof: &mut BrickProfiler<SimTimeline>,
    device: &SimDevice,
    context: u64,
    wall_ns: u64,
) -> u64 {
    for layer in 0..LAYERS {
        prof.begin_layer(layer);
        let t = prof.start_brick(BrickId::UpProjection);
        device.launch(QKV);
        prof.stop_brick(t, 1);
        let t = prof.start_brick(BrickId::AttentionScore);
        device.launch(A + B * context);
        prof.stop_brick(t, 1);
        prof.end_layer();
    }
    device.host_work(wall_ns);
    LAYERS as u64 * (A + B * context)
}

/// A prompt in two prefill chunks, then `DECODES` decode steps, in `mode`. Returns the
/// profile, each pass's expected Attention time in pass order, and the passes in flight at
/// the switch to decode.
fn generate(mode: SyncMode, pending: usize) -> (Profile, Vec<u64>, usize) {
    generate_with(mode, pending, true)
}

/// [`generate`]; without `walls` the host spends 1 µs per pass, far less than the device,
/// so that Lagged passes stay in flight.
fn generate_with(mode: SyncMode, pending: usize, walls: bool) -> (Profile, Vec<u64>, usize) {
    let wall = |w: u64| if walls { w } else { US };
    let device = SimDevice::new(0);
    let mut prof = profiler(&device, mode, pending);
    let mut attention = Vec::new();
    for (tokens, context, wall_ns) in CHUNKS {
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(tokens, 1, context).unwrap());
        attention.push(pass(&mut prof, &device, context, wall(wall_ns)));
        prof.end_pass(u64::from(tokens)).unwrap();
    }
    let in_flight_at_switch = prof.view().in_flight.passes;
    for i in 0..DECODES {
        let context = 17 + i;
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(1, 1, context).unwrap());
        attention.push(pass(&mut prof, &device, context, wall(decode_wall(i))));
        prof.end_pass(1).unwrap();
    }
    prof.finalize().unwrap();
    (prof.profile(), attention, in_flight_at_switch)
}

fn saved_and_loaded(p: &Profile) -> Profile {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.json");
    p.save(&path).unwrap();
    Profile::load(&path).unwrap()
}

#[test]
fn ttft_and_tpot_are_exact_end_to_end() {
    // spec/hot-path.md "Pass series": TTFT = the prompt's prefill walls summed, TPOT = each
    // decode pass's wall; nearest-rank percentiles.
    let (p, _, _) = generate(SyncMode::Deferred, 4096);
    let p = saved_and_loaded(&p);
    let l = latency(p.pass_series.as_ref().expect("a series")).expect("shaped passes");
    assert_eq!(l.ttft.values(), &[800 * US]);
    let walls: Vec<u64> = (0..DECODES).map(decode_wall).collect();
    let mut tpot = l.tpot.values().to_vec();
    tpot.sort_unstable();
    assert_eq!(tpot, walls);
    // n = 6: p50 is the 3rd, p90 and p99 the 6th.
    let tpot = l.tpot.summary().unwrap();
    assert_eq!(tpot.p50_ns, decode_wall(2));
    assert_eq!(tpot.p90_ns, decode_wall(5));
    assert_eq!(tpot.p99_ns, decode_wall(5));
    assert_eq!((l.prefill.passes, l.prefill.tokens), (2, 16));
    assert_eq!(l.prefill.wall_ns, 800 * US);
    assert_eq!((l.decode.passes, l.decode.tokens), (DECODES, DECODES));
    assert_eq!(l.decode.wall_ns, walls.iter().sum::<u64>());
    assert_eq!(l.cut_prompts, 0);
    // spec/profile-format.md "The profile file" (`meta`): the run states the phases it saw.
    assert_eq!(p.meta.phases, [Phase::Prefill, Phase::Decode]);
}

#[test]
fn attention_cost_against_context_is_recovered_from_the_saved_fits() {
    // spec/profile-format.md "Pass series" (with fits): a brick costing exactly a + b·context
    // per call gives back a and b, with R² = 1.
    let (p, _, _) = generate(SyncMode::Deferred, 4096);
    let p = saved_and_loaded(&p);
    let b = p.brick("AttentionScore").unwrap();
    let sums = &b
        .fits
        .iter()
        .find(|f| f.phase == Phase::Decode)
        .unwrap()
        .sums;
    assert_eq!(sums.passes(), DECODES);
    let fit = sums.solve(Regressor::Context).expect("a line");
    assert_eq!(fit.intercept_ns, (LAYERS as u64 * A) as f64);
    assert_eq!(fit.slope_ns, (LAYERS as u64 * B) as f64);
    assert_eq!(fit.r2, 1.0);
    assert_eq!((fit.x_min, fit.x_max), (17, 17 + DECODES - 1));
    // Per call, as the report shows it.
    let shown = brick_fit(&b.name, Phase::Decode, sums).unwrap();
    assert_eq!(shown.calls_per_pass, Some(LAYERS as u64));
    assert_eq!(shown.shown(), (A as f64, B as f64));
    // Two prefill passes: fitted sums, but too few for a line.
    let prefill = &b
        .fits
        .iter()
        .find(|f| f.phase == Phase::Prefill)
        .unwrap()
        .sums;
    assert_eq!(prefill.passes(), 2);
    assert!(prefill.solve(Regressor::Context).is_none());
}

/// Each record's phase and Attention time, in pass order.
fn records(p: &Profile) -> Vec<(Phase, u64, u64)> {
    p.pass_series
        .as_ref()
        .unwrap()
        .records()
        .map(|r| {
            (
                r.phase(),
                r.category_ns(BrickCategory::Attention),
                r.device_ns(),
            )
        })
        .collect()
}

#[test]
fn each_record_holds_its_own_pass_never_the_other_phase() {
    // spec/hot-path.md "Pass series": a record's time is its own pass's bricks, in every
    // mode; Lagged passes in flight across the prefill→decode switch included, and a pending
    // buffer so small that it flushes within a pass.
    for (mode, pending) in [
        (SyncMode::Deferred, 4096),
        (SyncMode::Immediate, 4096),
        (SyncMode::PerLayer, 4096),
        (SyncMode::Lagged, 4096),
        (SyncMode::Lagged, 3),
    ] {
        let (p, attention, in_flight) = generate_with(mode, pending, false);
        if mode == SyncMode::Lagged && pending > 3 {
            assert!(in_flight > 0, "{mode}: passes in flight at the switch");
        }
        let want: Vec<(Phase, u64, u64)> = attention
            .iter()
            .enumerate()
            .map(|(i, &att)| {
                let phase = if i < 2 { Phase::Prefill } else { Phase::Decode };
                (phase, att, att + LAYERS as u64 * QKV)
            })
            .collect();
        assert_eq!(records(&p), want, "{mode}, pending {pending}");
        // The fits saw each phase's own passes only.
        let qkv = p.brick("UpProjection").unwrap();
        let passes = |ph| {
            qkv.fits
                .iter()
                .find(|f| f.phase == ph)
                .map_or(0, |f| f.sums.passes())
        };
        assert_eq!(
            (passes(Phase::Prefill), passes(Phase::Decode)),
            (2, DECODES),
            "{mode}"
        );
    }
}

#[test]
fn unshaped_runs_and_warmup_passes_leave_no_record() {
    // spec/hot-path.md "Pass series": only counted shaped passes are recorded.
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: LAYERS,
        warmup_passes: 1,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(4096)).unwrap();
    for context in [10, 11] {
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(1, 1, context).unwrap());
        pass(&mut prof, &device, context, 100 * US);
        prof.end_pass(1).unwrap();
    }
    prof.begin_pass();
    pass(&mut prof, &device, 12, 100 * US);
    prof.end_pass(1).unwrap();
    let p = prof.profile();
    let contexts: Vec<u64> = p
        .pass_series
        .as_ref()
        .unwrap()
        .records()
        .map(|r| r.shape().unwrap().context_tokens())
        .collect();
    assert_eq!(
        contexts,
        [11],
        "the warm-up pass and the unshaped one are not recorded"
    );

    let device = SimDevice::new(0);
    let mut prof = profiler(&device, SyncMode::Deferred, 4096);
    prof.begin_pass();
    pass(&mut prof, &device, 12, 100 * US);
    prof.end_pass(1).unwrap();
    let p = prof.profile();
    assert!(p.pass_series.is_none());
    assert!(p.meta.phases.is_empty());
    assert!(p.bricks.iter().all(|b| b.fits.is_empty()));
}

#[test]
fn unshaped_passes_are_counted_though_they_leave_no_record() {
    // spec/profile-format.md "Latency: TTFT and TPOT": unshaped passes are counted and left
    // out. They leave no record in the series, so the count comes from the profile. Before:
    // `unshaped_passes` was always 0 for a profiler's run, in the JSON report too.
    let device = SimDevice::new(0);
    let mut prof = profiler(&device, SyncMode::Deferred, 4096);
    for (i, context) in [10, 11, 12, 13, 14].into_iter().enumerate() {
        if i % 2 == 0 {
            prof.begin_pass();
            prof.set_pass_shape(PassShape::new(1, 1, context).unwrap());
        } else {
            prof.begin_pass();
        }
        pass(&mut prof, &device, context, 100 * US);
        prof.end_pass(1).unwrap();
    }
    let p = prof.profile();
    let series = p.pass_series.as_ref().unwrap();
    assert_eq!(
        series.records().count(),
        3,
        "only the shaped passes are recorded"
    );
    assert_eq!(
        latency(series).unwrap().unshaped_passes,
        0,
        "the series cannot know"
    );
    let l = profile_latency(&p).unwrap();
    assert_eq!((l.unshaped_passes, l.decode.passes), (2, 3));
    // The JSON export's count: output/tests/latency_json.rs.
    let loaded = saved_and_loaded(&p);
    assert_eq!(profile_latency(&loaded).unwrap().unshaped_passes, 2);
}

#[test]
fn merge_keeps_runs_apart_and_adds_the_fits() {
    // spec/profile-format.md "Merging": two runs' series stay two runs (two prompts, each its
    // own TTFT), and their fit sums add.
    let (a, _, _) = generate(SyncMode::Deferred, 4096);
    let (b, _, _) = generate(SyncMode::Deferred, 4096);
    let mut m = a.clone();
    m.merge(&b).unwrap();
    let series = m.pass_series.as_ref().unwrap();
    assert_eq!(series.runs().len(), 2);
    assert_eq!(series.records().count(), 2 * (2 + DECODES as usize));
    let l = latency(series).unwrap();
    assert_eq!(l.ttft.values(), &[800 * US, 800 * US]);
    let att = m.brick("AttentionScore").unwrap();
    let decode = &att
        .fits
        .iter()
        .find(|f| f.phase == Phase::Decode)
        .unwrap()
        .sums;
    assert_eq!(decode.passes(), 2 * DECODES);
    let fit = decode.solve(Regressor::Context).unwrap();
    assert_eq!(fit.slope_ns, (LAYERS as u64 * B) as f64);
    let m = saved_and_loaded(&m);
    assert_eq!(m.pass_series.as_ref().unwrap().runs().len(), 2);
}

#[test]
fn a_saved_profile_keeps_its_series_and_fits() {
    // spec/profile-format.md "Pass series" (with fits).
    let (p, _, _) = generate(SyncMode::Deferred, 4096);
    assert_eq!(
        p.pass_series.as_ref().unwrap().records().count(),
        2 + DECODES as usize
    );
    let loaded = saved_and_loaded(&p);
    assert_eq!(loaded.pass_series, p.pass_series);
    for b in &p.bricks {
        assert!(!b.fits.is_empty(), "{}", b.name);
        assert_eq!(loaded.brick(&b.name).unwrap().fits, b.fits);
    }
}

#[test]
fn a_file_whose_fits_count_more_passes_than_their_phase_is_refused() {
    // spec/profile-format.md "Validation": fits.n ≤ that phase's passes.
    let (mut p, _, _) = generate(SyncMode::Deferred, 4096);
    let b = p
        .bricks
        .iter_mut()
        .find(|b| b.name == "UpProjection")
        .unwrap();
    let f = b
        .fits
        .iter_mut()
        .find(|f| f.phase == Phase::Prefill)
        .unwrap();
    let extra = f.sums;
    f.sums.merge(&extra);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    p.save(&path).unwrap();
    let err = Profile::load(&path).unwrap_err().to_string();
    assert!(err.contains("fits of phase prefill"), "{err}");
}

/// The pass-brick samples of `brick` in `phase`, from a profile's series.
fn brick_samples(p: &Profile, phase: Phase, brick: &str) -> Option<Vec<u64>> {
    p.pass_series
        .as_ref()
        .unwrap()
        .brick_samples(Some(phase), brick)
}

#[test]
fn each_pass_keeps_each_bricks_own_time_in_every_sync_mode() {
    // spec/timing-verdicts.md "Where per-pass brick times come from": per counted shaped pass,
    // each brick's self time summed over its calls and layers, aligned with the pass records,
    // in every sync mode (Lagged with passes in flight included), saved and loaded.
    let runs = [
        generate(SyncMode::Deferred, 4096),
        generate(SyncMode::Immediate, 4096),
        generate(SyncMode::PerLayer, 4096),
        generate_with(SyncMode::Lagged, 4096, false),
        generate_with(SyncMode::Lagged, 3, false),
    ];
    for (p, attention, _) in runs {
        let p = saved_and_loaded(&p);
        let up = LAYERS as u64 * QKV;
        assert_eq!(
            brick_samples(&p, Phase::Prefill, "AttentionScore").unwrap(),
            attention[..2]
        );
        assert_eq!(
            brick_samples(&p, Phase::Decode, "AttentionScore").unwrap(),
            attention[2..]
        );
        assert_eq!(
            brick_samples(&p, Phase::Decode, "UpProjection").unwrap(),
            vec![up; DECODES as usize]
        );
        // A brick that never ran gives no sample; so does a phase with no pass.
        assert_eq!(brick_samples(&p, Phase::Decode, "LmHead"), Some(vec![]));
        assert_eq!(
            brick_samples(&p, Phase::Mixed, "UpProjection"),
            Some(vec![])
        );
    }
}

#[test]
fn merged_runs_keep_their_own_pass_brick_records() {
    // spec/timing-verdicts.md "Where per-pass brick times come from": a merge keeps runs
    // apart, each with its columns.
    let (a, attention, _) = generate(SyncMode::Deferred, 4096);
    let (b, _, _) = generate(SyncMode::Deferred, 4096);
    let mut m = a.clone();
    m.merge(&b).unwrap();
    let m = saved_and_loaded(&m);
    let decode = &attention[2..];
    let both: Vec<u64> = decode.iter().chain(decode).copied().collect();
    assert_eq!(
        brick_samples(&m, Phase::Decode, "AttentionScore").unwrap(),
        both
    );
}

#[test]
fn older_files_have_no_pass_brick_record_and_bad_ones_are_refused() {
    // spec/timing-verdicts.md "Where per-pass brick times come from": a v3 file from before
    // the record loads without it (no samples: verdicts are withheld); a column of the wrong
    // length is refused with the run named.
    let (p, _, _) = generate(SyncMode::Deferred, 4096);
    let mut json: serde_json::Value = serde_json::to_value(&p).unwrap();
    let run = &mut json["pass_series"]["runs"][0];
    assert!(run["brick_passes"].is_u64(), "{run}");
    let mut bad = json.clone();
    bad["pass_series"]["runs"][0]["brick_ns"]["AttentionScore"]
        .as_array_mut()
        .unwrap()
        .pop();
    let run = json["pass_series"]["runs"][0].as_object_mut().unwrap();
    run.remove("brick_passes");
    run.remove("brick_ns");
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.json");
    std::fs::write(&old, serde_json::to_string(&json).unwrap()).unwrap();
    let loaded = Profile::load(&old).unwrap();
    assert_eq!(
        brick_samples(&loaded, Phase::Decode, "AttentionScore"),
        None
    );
    assert!(!loaded.pass_series.as_ref().unwrap().runs()[0].has_brick_record());
    let path = dir.path().join("bad.json");
    std::fs::write(&path, serde_json::to_string(&bad).unwrap()).unwrap();
    let err = Profile::load(&path).unwrap_err().to_string();
    assert!(err.contains("brick_ns of AttentionScore"), "{err}");
}
