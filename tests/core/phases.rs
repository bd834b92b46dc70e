//! spec/hot-path.md "Passes and phases" and spec/profile-format.md "Phases": a pass's shape
//! chooses its phase once, prefill and decode books are never mixed (in every sync mode, Lagged
//! with passes in flight across the switch and a pending buffer that flushes mid-pass
//! included), profiles keep phases through save, load and merge, and files without phases load
//! as unspecified. On the simulated device, whose clocks are simulated: exact numbers.

use brickprof::{
    model::{OverflowPolicy, PhaseFilter},
    profile::RowKey,
    profile::{phase_profile, PROFILE_FORMAT_VERSION},
    timeline::{SimDevice, SimTimeline},
    BrickId, BrickProfiler, PassShape, Phase, Profile, ProfilerConfig, SyncMode,
};

const US: u64 = 1_000;
const LAYERS: usize = 2;
/// Kernel time of QkvProjection in a prefill pass and in a decode pass.
const PREFILL_QKV: u64 = 40 * US;
const DECODE_QKV: u64 = 7 * US;
/// Each pass: per layer RmsNorm (3 µs) and QkvProjection, all inside an LmHead brick around
/// the pass (so nesting edges exist in both phases).
const RMS: u64 = 3 * US;

struct Run {
    prof: BrickProfiler<SimTimeline>,
    /// How many passes were in flight when the first decode pass began (Lagged).
    in_flight_at_switch: usize,
}

fn config(mode: SyncMode, pending: usize) -> ProfilerConfig {
    ProfilerConfig {
        layers: LAYERS,
        sync_mode: mode,
        pending_capacity: pending,
        overflow: OverflowPolicy::Flush,
        ..ProfilerConfig::default()
    }
}

fn pass(prof: &mut BrickProfiler<SimTimeline>, device: &SimDevice, qkv_ns: u64) {
    let outer = prof.start_brick(BrickId::LmHead);
    for layer in 0..LAYERS {
        prof.begin_layer(layer);
        let t = prof.start_brick(BrickId::RmsNorm);
        device.launch(RMS);
        prof.stop_brick(t, 1);
        let t = prof.start_brick(BrickId::QkvProjection);
        device.launch(qkv_ns);
        prof.stop_brick(t, 1);
        prof.end_layer();
    }
    prof.stop_brick(outer, 1);
}

/// `prefills` prompt passes of 16 tokens, then `decodes` decode steps; the host runs ahead of
/// the device (1 µs of its own between passes, never reading back), so in Lagged mode passes
/// are still in flight when the phase switches.
fn run(mode: SyncMode, pending: usize, prefills: u64, decodes: u64) -> Run {
    let device = SimDevice::new(0);
    let pool = 2 * pending + 2 + brickprof::model::Limit::PassesInFlight.max();
    let mut prof = BrickProfiler::with_timeline(config(mode, pending), device.timeline(pool))
        .expect("a valid configuration");
    for _ in 0..prefills {
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(16, 1, 16).unwrap());
        pass(&mut prof, &device, PREFILL_QKV);
        device.host_work(US);
        prof.end_pass(16).unwrap();
    }
    let in_flight_at_switch = prof.view().in_flight.passes;
    for i in 0..decodes {
        prof.begin_pass();
        prof.set_pass_shape(PassShape::new(1, 1, 17 + i).unwrap());
        pass(&mut prof, &device, DECODE_QKV);
        device.host_work(US);
        prof.end_pass(1).unwrap();
    }
    prof.finalize().unwrap();
    Run {
        prof,
        in_flight_at_switch,
    }
}

/// The statistics of QkvProjection in `layer` in `phase` as (count, min, max).
fn qkv(prof: &BrickProfiler<SimTimeline>, phase: Phase, layer: usize) -> (u64, u64, u64) {
    prof.view()
        .row_stats(
            brickprof::model::PhaseFilter::Only(phase),
            RowKey::Layer(layer),
            BrickId::QkvProjection,
        )
        .map_or((0, 0, 0), |s| {
            (s.summary().count, s.summary().min_ns, s.summary().max_ns)
        })
}

fn assert_never_mixed(r: &Run, prefills: u64, decodes: u64, what: &str) {
    let p = &r.prof;
    for layer in 0..LAYERS {
        assert_eq!(
            qkv(p, Phase::Prefill, layer),
            (prefills, PREFILL_QKV, PREFILL_QKV),
            "{what}: prefill books of layer {layer}"
        );
        assert_eq!(
            qkv(p, Phase::Decode, layer),
            (decodes, DECODE_QKV, DECODE_QKV),
            "{what}: decode books of layer {layer}"
        );
        assert_eq!(qkv(p, Phase::Unspecified, layer).0, 0, "{what}");
        assert_eq!(qkv(p, Phase::Mixed, layer).0, 0, "{what}");
    }
    let total = p.view().brick_stats(BrickId::QkvProjection);
    assert_eq!(
        total.summary().count,
        LAYERS as u64 * (prefills + decodes),
        "{what}"
    );
    assert_eq!(
        total.summary().total_ns,
        LAYERS as u64 * (prefills * PREFILL_QKV + decodes * DECODE_QKV),
        "{what}: merged over phases"
    );
    assert_eq!(
        p.view()
            .row_stats(
                brickprof::model::PhaseFilter::Only(Phase::Prefill),
                None,
                BrickId::RmsNorm
            )
            .unwrap()
            .summary()
            .count,
        LAYERS as u64 * prefills,
        "{what}"
    );
    // The outer brick's self time is its own pass's only: never the other phase's kernels.
    let outer = p
        .view()
        .row_stats(
            brickprof::model::PhaseFilter::Only(Phase::Decode),
            None,
            BrickId::LmHead,
        )
        .unwrap();
    assert_eq!(outer.summary().count, decodes, "{what}");
    let pp = p.profile().phase_passes(Phase::Prefill);
    let dp = p.profile().phase_passes(Phase::Decode);
    assert_eq!(
        (pp.summary().count, pp.summary().work.elements),
        (prefills, 16 * prefills),
        "{what}"
    );
    assert_eq!(
        (dp.summary().count, dp.summary().work.elements),
        (decodes, decodes),
        "{what}"
    );
    assert_eq!(
        p.profile().passes.summary().count,
        prefills + decodes,
        "{what}"
    );
    assert_eq!(p.view().counters.dropped, 0, "{what}");
}

#[test]
fn prefill_and_decode_books_are_never_mixed_in_any_sync_mode() {
    // spec/hot-path.md "Passes and phases": the phase is chosen at begin_pass.
    for mode in [
        SyncMode::Immediate,
        SyncMode::PerLayer,
        SyncMode::Deferred,
        SyncMode::Lagged,
    ] {
        let r = run(mode, 256, 3, 5);
        assert_never_mixed(&r, 3, 5, &format!("{mode}"));
    }
}

#[test]
fn lagged_passes_in_flight_across_the_switch_land_in_their_own_phase() {
    // spec/hot-path.md "Passes and phases": a pending entry carries its phase in its cell, so a
    // prefill pass resolved after decode passes began still lands in the prefill books.
    let r = run(SyncMode::Lagged, 256, 3, 5);
    assert!(
        r.in_flight_at_switch >= 2,
        "the test needs prefill passes in flight at the switch, had {}",
        r.in_flight_at_switch
    );
    assert_never_mixed(&r, 3, 5, "lagged");
}

#[test]
fn a_pending_buffer_that_flushes_mid_pass_keeps_the_phases_apart() {
    // spec/hot-path.md "Passes and phases" and spec/sync-modes.md "Bounded pending buffer": 11
    // bricks a pass, 4 entries.
    for mode in [SyncMode::Deferred, SyncMode::Lagged] {
        let r = run(mode, 4, 3, 5);
        assert!(
            r.prof.view().counters.overflow_flushes > 0,
            "{mode}: the buffer must flush mid-pass"
        );
        assert_never_mixed(&r, 3, 5, &format!("{mode}, tiny pending buffer"));
    }
}

#[test]
fn set_pass_shape_keeps_the_pass_start_and_end_pass_resets_the_phase() {
    // spec/hot-path.md "Passes and phases": bricks started before the shape keep their phase;
    // the pass after an end_pass is unspecified until shaped.
    let device = SimDevice::new(0);
    let mut prof =
        BrickProfiler::with_timeline(config(SyncMode::Deferred, 64), device.timeline(256)).unwrap();
    let t = prof.start_brick(BrickId::Sampling); // before the shape: unspecified
    device.launch(5 * US);
    prof.stop_brick(t, 1);
    prof.set_pass_shape(PassShape::new(1, 1, 9).unwrap());
    assert_eq!(
        prof.view().pass_shape.map(|s| s.phase()),
        Some(Phase::Decode)
    );
    pass(&mut prof, &device, DECODE_QKV);
    prof.end_pass(1).unwrap();
    assert_eq!(prof.view().pass_shape, None);
    pass(&mut prof, &device, PREFILL_QKV); // unshaped pass
    prof.end_pass(1).unwrap();
    let s = |phase| {
        prof.view()
            .row_stats(
                brickprof::model::PhaseFilter::Only(phase),
                None,
                BrickId::Sampling,
            )
            .unwrap()
            .summary()
            .count
    };
    assert_eq!((s(Phase::Unspecified), s(Phase::Decode)), (1, 0));
    assert_eq!(qkv(&prof, Phase::Decode, 0), (1, DECODE_QKV, DECODE_QKV));
    assert_eq!(
        qkv(&prof, Phase::Unspecified, 0),
        (1, PREFILL_QKV, PREFILL_QKV)
    );
    // The pass's wall time counts from the previous end_pass: it is the decode pass's.
    assert_eq!(
        prof.profile().phase_passes(Phase::Decode).summary().count,
        1
    );
    assert_eq!(
        prof.profile()
            .phase_passes(Phase::Unspecified)
            .summary()
            .count,
        1
    );
}

#[test]
fn a_mixed_pass_is_what_the_engine_says() {
    // spec/hot-path.md "Passes and phases": the engine sets Mixed; the books follow it.
    let device = SimDevice::new(0);
    let mut prof =
        BrickProfiler::with_timeline(config(SyncMode::Deferred, 64), device.timeline(256)).unwrap();
    prof.begin_pass();
    prof.set_pass_shape(PassShape::new(9, 2, 300).unwrap().with_phase(Phase::Mixed));
    pass(&mut prof, &device, PREFILL_QKV);
    prof.end_pass(9).unwrap();
    assert_eq!(qkv(&prof, Phase::Mixed, 1), (1, PREFILL_QKV, PREFILL_QKV));
    assert_eq!(qkv(&prof, Phase::Prefill, 1).0, 0);
    let profile = prof.profile();
    assert_eq!(
        profile
            .phase_passes(Phase::Mixed)
            .summary()
            .elements_per_sec,
        profile.passes.summary().elements_per_sec
    );
}

fn rows_of(p: &Profile, brick: &str) -> Vec<(Phase, RowKey, u64)> {
    p.brick(brick)
        .unwrap()
        .rows
        .iter()
        .map(|r| (r.phase, r.row, r.stats.summary().count))
        .collect()
}

#[test]
fn a_profile_keeps_its_phases_through_save_and_load() {
    // spec/profile-format.md "Phases": rows keyed by (phase, row), per-phase passes.
    let r = run(SyncMode::Deferred, 256, 2, 3);
    let p = r.prof.profile();
    assert_eq!(
        rows_of(&p, "QkvProjection"),
        vec![
            (Phase::Prefill, RowKey::Layer(0), 2),
            (Phase::Prefill, RowKey::Layer(1), 2),
            (Phase::Decode, RowKey::Layer(0), 3),
            (Phase::Decode, RowKey::Layer(1), 3),
        ]
    );
    let phases: Vec<(Phase, u64)> = p
        .phase_passes
        .iter()
        .map(|x| (x.phase, x.stats.summary().count))
        .collect();
    assert_eq!(phases, vec![(Phase::Prefill, 2), (Phase::Decode, 3)]);
    assert!(p
        .nesting
        .iter()
        .any(|e| e.phase == Phase::Prefill && e.child == "QkvProjection" && e.calls == 2));
    // `phases_of` of such a profile: src/output/tests/phases_of.rs.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    p.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("\"format_version\": {PROFILE_FORMAT_VERSION}")));
    assert!(text.contains("\"phase\": \"decode\""));
    assert_eq!(Profile::load(&path).unwrap(), p);
    // Exact per-phase throughput: 16 prompt tokens per prefill pass, 1 per decode pass.
    let prefill = p.phase_passes(Phase::Prefill);
    assert_eq!(
        p.phase_passes(Phase::Prefill).summary().elements_per_sec,
        32.0 / (prefill.summary().total_ns as f64 / 1e9)
    );
}

#[test]
fn an_unshaped_profile_has_no_phase_keys() {
    // spec/profile-format.md "Versions": an unshaped run writes the version-2 layout, with the
    // version number of today.
    let device = SimDevice::new(0);
    let mut prof =
        BrickProfiler::with_timeline(config(SyncMode::Deferred, 64), device.timeline(256)).unwrap();
    for _ in 0..3 {
        prof.begin_pass();
        pass(&mut prof, &device, DECODE_QKV);
        prof.end_pass(1).unwrap();
    }
    let p = prof.profile();
    let json = serde_json::to_value(&p).unwrap();
    fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    out.push(k.clone());
                    keys(v, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    keys(&json, &mut all);
    assert!(!all.is_empty());
    assert!(
        !all.iter().any(|k| k.starts_with("phase")),
        "unshaped: no phase keys"
    );
    assert!(
        !p.nesting.is_empty(),
        "nesting edges are written without a phase"
    );
    assert_eq!(phase_profile(&p, PhaseFilter::All), p, "folds to itself");
    // `phases_of` of an unshaped profile: src/output/tests/phases_of.rs.
    assert_eq!(p.phase_passes(Phase::Unspecified), p.passes);
}

fn fixture(name: &str) -> Profile {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    Profile::load(path).unwrap()
}

#[test]
fn version_1_and_2_files_load_as_unspecified() {
    // spec/profile-format.md "Versions": files written before phases load, every row and pass
    // unspecified. profile-v2.json was written by the demo of brickprof 0.3.0 (format 2).
    for (name, written) in [("profile-v1.json", 1), ("profile-v2.json", 2)] {
        let p = fixture(name);
        assert!(!p.bricks.is_empty(), "{name}");
        // A loaded file says the version of the layout it was read into, the current one, not
        // the version it was written in (the spec said 2 for a version-2 file).
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .join(name),
        )
        .unwrap();
        assert!(
            text.contains(&format!("\"format_version\": {written}")),
            "{name}"
        );
        assert_eq!(p.format_version, PROFILE_FORMAT_VERSION, "{name}");
        assert_eq!(
            PROFILE_FORMAT_VERSION, 3,
            "spec/profile-format.md \"Versions\" names 3"
        );
        assert!(
            p.bricks
                .iter()
                .flat_map(|b| &b.rows)
                .all(|r| r.phase == Phase::Unspecified),
            "{name}"
        );
        assert!(p.phase_passes.is_empty(), "{name}");
        // `phases_of` of these files: src/output/tests/phases_of.rs.
        assert_eq!(p.phase_passes(Phase::Unspecified), p.passes, "{name}");
        assert_eq!(p.phase_passes(Phase::Decode).summary().count, 0, "{name}");
        assert_eq!(phase_profile(&p, PhaseFilter::All), p, "{name}");
        let only = phase_profile(&p, PhaseFilter::Only(Phase::Unspecified));
        assert_eq!(
            only.bricks, p.bricks,
            "{name}: a single phase keeps everything"
        );
        assert_eq!(only.passes, p.passes, "{name}");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("again.json");
        p.save(&out).unwrap();
        assert_eq!(Profile::load(&out).unwrap(), p, "{name}");
    }
}

#[test]
fn a_merge_keeps_phases_and_is_commutative_and_associative() {
    // spec/profile-format.md "Merging": rows merge per (phase, row), passes per phase.
    let a = run(SyncMode::Deferred, 256, 2, 3).prof.profile();
    let b = run(SyncMode::Lagged, 256, 1, 4).prof.profile();
    let c = {
        // An unshaped run: its passes are unspecified.
        let device = SimDevice::new(0);
        let mut prof =
            BrickProfiler::with_timeline(config(SyncMode::Deferred, 64), device.timeline(256))
                .unwrap();
        pass(&mut prof, &device, DECODE_QKV);
        prof.end_pass(1).unwrap();
        prof.profile()
    };
    let mut c = c;
    c.meta.sync_mode = SyncMode::Deferred;
    let mut b = b;
    b.meta.sync_mode = SyncMode::Deferred; // same numbers; merged as one mode
    let merged = |x: &Profile, y: &Profile| {
        let mut m = x.clone();
        m.merge(y).unwrap();
        m
    };
    let ab = merged(&a, &b);
    let mut ab_n = ab.clone();
    let mut ba = merged(&b, &a);
    // What merge order may show: nothing but the creation time and host, which are equal here.
    ab_n.meta.created_unix_s = 0;
    ba.meta.created_unix_s = 0;
    assert_eq!(ab_n, ba, "commutative");
    assert_eq!(
        rows_of(&ab, "QkvProjection"),
        vec![
            (Phase::Prefill, RowKey::Layer(0), 3),
            (Phase::Prefill, RowKey::Layer(1), 3),
            (Phase::Decode, RowKey::Layer(0), 7),
            (Phase::Decode, RowKey::Layer(1), 7),
        ]
    );
    assert_eq!(ab.phase_passes(Phase::Prefill).summary().count, 3);
    assert_eq!(ab.phase_passes(Phase::Decode).summary().count, 7);
    let mut abc = merged(&ab, &c);
    let mut a_bc = merged(&a, &merged(&b, &c));
    abc.meta.created_unix_s = 0;
    a_bc.meta.created_unix_s = 0;
    assert_eq!(abc, a_bc, "associative");
    assert_eq!(abc.phase_passes(Phase::Unspecified).summary().count, 1);
    assert_eq!(abc.passes.summary().count, (2 + 3) + (1 + 4) + 1);
    let prefill_only = phase_profile(&abc, PhaseFilter::Only(Phase::Prefill));
    assert_eq!(prefill_only.passes.summary().count, 3);
    assert_eq!(
        prefill_only
            .brick("QkvProjection")
            .unwrap()
            .stats
            .summary()
            .min_ns,
        PREFILL_QKV
    );
    assert_eq!(
        prefill_only
            .brick("QkvProjection")
            .unwrap()
            .stats
            .summary()
            .max_ns,
        PREFILL_QKV
    );
    // The merged profile saves and loads again.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    abc.save(&path).unwrap();
    assert_eq!(Profile::load(&path).unwrap(), abc);
}

#[test]
fn phase_passes_that_do_not_add_up_are_refused_on_load() {
    // spec/profile-format.md "Validation": the per-phase passes merge to `passes`.
    let p = run(SyncMode::Deferred, 256, 2, 3).prof.profile();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let mut bad = p.clone();
    bad.phase_passes.pop();
    bad.save(&path).unwrap();
    let e = Profile::load(&path).unwrap_err().to_string();
    assert!(e.contains("phase_passes"), "{e}");
    let mut twice = p.clone();
    let row = twice.bricks[0].rows[0].clone();
    twice.bricks[0].rows.push(row);
    twice.save(&path).unwrap();
    let e = Profile::load(&path).unwrap_err().to_string();
    assert!(e.contains("twice"), "{e}");
}

#[test]
fn the_table_shows_each_phase_and_its_throughput() {
    // spec/profile-format.md "Phases": side by side, never one mixed tokens/s.
    let p = run(SyncMode::Deferred, 256, 2, 3).prof.profile();
    let text = brickprof::output::render_table(&p, &Default::default());
    assert!(text.contains("Phases (self %, p50)"), "{text}");
    assert!(
        text.contains("prefill %") && text.contains("decode %"),
        "{text}"
    );
    let rate = format!(
        "prefill {:.1} tokens/s, decode {:.1} tokens/s",
        p.phase_passes(Phase::Prefill).summary().elements_per_sec,
        p.phase_passes(Phase::Decode).summary().elements_per_sec
    );
    assert!(text.contains(&rate), "{text}");
    let time = text
        .lines()
        .find(|l| l.starts_with("Time in bricks"))
        .unwrap();
    assert!(!time.contains("tokens/s"), "no mixed rate: {time}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let unshaped = fixture("profile-v2.json");
    let plain = brickprof::output::render_table(&unshaped, &Default::default());
    assert!(!plain.contains("Phases") && !plain.contains("Throughput by phase"));
    let time = plain
        .lines()
        .find(|l| l.starts_with("Time in bricks"))
        .unwrap();
    assert!(time.contains(" tokens/s |"), "{time}");
}
