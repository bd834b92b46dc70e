//! `brickprof diff` across instruments (spec/imports.md "Cross-instrument diff"): a profile
//! of brickprof's own (the simulated device, its marks costing 3.3 µs a call) against the
//! Nsight Compute fixture, and two imports of different formats against each other; the
//! ratios and the explanations by value.

use brickprof::compare::{instrument_diff, Explanation, InstrumentRow, Side};
use brickprof::import::import;
use brickprof::profile::RowKey;
use brickprof::timeline::SimDevice;
use brickprof::{BrickId, BrickProfiler, Profile, ProfilerConfig};
use serde_json::Value;

use super::fixture;

const MARK_NS: u64 = 3_300;

/// The ncu fixture's run as brickprof's own CUDA events would time it: each call the
/// kernels' time plus the marks' cost, and one more DownProjection call in layer 1.
fn own() -> Profile {
    let device = SimDevice::new(0);
    let config = ProfilerConfig {
        layers: 2,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, device.timeline(256)).unwrap();
    let call = |prof: &mut BrickProfiler<_>, brick, ns: u64| {
        let t = prof.start_brick(brick);
        device.launch(ns + MARK_NS);
        prof.stop_brick(t, 1);
    };
    prof.begin_pass();
    for (layer, [rms, qkv, act, down]) in [
        [16_096, 24_384, 15_680, 48_896],
        [15_584, 24_256, 15_776, 48_448],
    ]
    .into_iter()
    .enumerate()
    {
        prof.begin_layer(layer);
        call(&mut prof, BrickId::RmsNorm, rms);
        call(&mut prof, BrickId::QkvProjection, qkv);
        call(&mut prof, BrickId::Activation, act);
        call(&mut prof, BrickId::DownProjection, down);
        if layer == 1 {
            call(&mut prof, BrickId::DownProjection, down);
        }
        prof.end_layer();
    }
    call(&mut prof, BrickId::LmHead, 35_776);
    prof.end_pass(1).unwrap();
    prof.finalize().unwrap();
    let mut p = prof.profile();
    p.meta.mark_cost_ns = Some(MARK_NS);
    p
}

fn row<'a>(rows: &'a [InstrumentRow], brick: &str, key: Option<RowKey>) -> &'a InstrumentRow {
    rows.iter()
        .find(|r| r.brick == brick && r.row == key)
        .unwrap_or_else(|| panic!("no row {brick} {key:?}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn own_profile_against_ncu_names_the_event_overhead_and_the_extra_call() {
    let own = own();
    let ncu = import(fixture("ncu_raw_nvtx.csv")).unwrap().profile;
    let d = instrument_diff(&own, &ncu, ["own.json", "ncu_raw_nvtx.csv"], false);
    assert_eq!(d.instruments[0].timeline, "sim");
    assert_eq!(d.instruments[1].timeline, "ncu");
    assert_eq!(d.instruments[0].mark_cost_ns, Some(MARK_NS));
    // The larger device time first: DownProjection (3 calls against 2).
    assert_eq!(d.rows[0].brick, "DownProjection");
    let rms = row(&d.rows, "RmsNorm", None);
    let a_mean = (16_096.0 + 15_584.0) / 2.0 + MARK_NS as f64;
    assert_eq!(
        rms.sides,
        [
            Some(Side {
                calls: 2,
                total_ns: 16_096 + 15_584 + 2 * MARK_NS
            }),
            Some(Side {
                calls: 2,
                total_ns: 16_096 + 15_584
            }),
        ]
    );
    assert!(close(rms.ratio.unwrap(), 15_840.0 / a_mean), "{rms:?}");
    // Without the marks' cost the two instruments agree exactly.
    assert_eq!(
        rms.explanations,
        [Explanation::EventOverhead {
            side: 0,
            per_call_ns: MARK_NS,
            total_ns: 2 * MARK_NS,
            ratio_without: Some(1.0),
        }]
    );
    let down = row(&d.rows, "DownProjection", None);
    let own_total = 48_896 + 2 * 48_448 + 3 * MARK_NS;
    let ncu_mean = (48_896.0 + 48_448.0) / 2.0;
    assert!(close(
        down.ratio.unwrap(),
        ncu_mean / (own_total as f64 / 3.0)
    ));
    let without = ncu_mean / (own_total as f64 / 3.0 - MARK_NS as f64);
    match &down.explanations[..] {
        [Explanation::EventOverhead {
            side: 0,
            per_call_ns: MARK_NS,
            total_ns,
            ratio_without: Some(r),
        }, Explanation::CallsDiffer { calls: [3, 2] }] => {
            assert_eq!(*total_ns, 3 * MARK_NS);
            assert!(close(*r, without), "{r} {without}");
        }
        other => panic!("{other:?}"),
    }
    let text = d.render();
    assert!(
        text.contains("  event overhead: A (sim) marks add 3.30µs a call (9.90µs in all); without it B/A = 1.00"),
        "{text}"
    );
    assert!(
        text.contains("  calls differ: A 3, B 2 (1 call one instrument saw and the other did not)"),
        "{text}"
    );
    assert!(
        text.contains("Kernels outside bricks: A none recorded; B none recorded"),
        "{text}"
    );
    assert!(text.ends_with(
        "Not compared: the gap before a brick's first kernel (host push to kernel start): \
         vendor files carry no host push times.\n"
    ));

    // By layer: the extra call is in layer 1, not layer 0.
    let d = instrument_diff(&own, &ncu, ["own.json", "ncu"], true);
    let l0 = row(&d.rows, "DownProjection", Some(RowKey::Layer(0)));
    assert!(!l0
        .explanations
        .iter()
        .any(|e| matches!(e, Explanation::CallsDiffer { .. })));
    assert!(close(
        l0.ratio.unwrap(),
        48_896.0 / (48_896 + MARK_NS) as f64
    ));
    let l1 = row(&d.rows, "DownProjection", Some(RowKey::Layer(1)));
    assert!(l1
        .explanations
        .contains(&Explanation::CallsDiffer { calls: [2, 1] }));
}

/// Per brick (all rows): calls and summed time from an expected reading of a fixture.
fn expected(name: &str, brick: &str) -> (u64, u64) {
    let path = fixture("expected").join(name);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["bricks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["brick"] == brick)
        .fold((0, 0), |(c, t), b| {
            (
                c + b["calls"].as_u64().unwrap(),
                t + b["total_ns"].as_u64().unwrap(),
            )
        })
}

#[test]
fn two_imports_of_different_formats_compare_brick_by_brick() {
    let (a, b) = (
        fixture("ncu_raw_nvtx.csv"),
        fixture("rocprofv3/3141_kernel_trace.csv"),
    );
    let (x, y) = (import(&a).unwrap(), import(&b).unwrap());
    let d = instrument_diff(&x.profile, &y.profile, ["ncu", "rocprofv3"], false);
    for r in &d.rows {
        let (ca, ta) = expected("ncu_raw_nvtx.json", &r.brick);
        let (cb, tb) = expected("rocprofv3.json", &r.brick);
        assert_eq!(
            r.sides,
            [
                Some(Side {
                    calls: ca,
                    total_ns: ta
                }),
                Some(Side {
                    calls: cb,
                    total_ns: tb
                })
            ],
            "{}",
            r.brick
        );
        let want = (tb as f64 / cb as f64) / (ta as f64 / ca as f64);
        assert!(close(r.ratio.unwrap(), want), "{}", r.brick);
        // Neither marks with a cost: the only explanation is the calls.
        assert_eq!(
            r.explanations,
            [Explanation::CallsDiffer { calls: [ca, cb] }]
        );
    }
    assert_eq!(d.rows.len(), 5);
    let outside = d.instruments[1].outside_bricks.unwrap();
    assert_eq!((outside.kernels, outside.busy_ns), (1, 8_013));
    assert!(d
        .render()
        .contains("Kernels outside bricks: A none recorded; B 1 kernel, 0 copies/sets, 8.01µs"));
}
