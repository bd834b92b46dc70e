//! spec/work-accounting.md: derived numbers, the roofline in reports, and no NaN anywhere.

use crate::common::render::{render_csv, render_json};
use brickprof::{
    figures::Derived,
    output::{render_table, TableOptions},
};
use brickprof::{
    roofline::DevicePeaks, stats::TileLevel, timeline::HostClock, BrickId, BrickProfiler,
    CpuTimeline, ProfilerConfig, Work,
};

/// A profile with hand-chosen times and work, on a mock clock.
fn profile() -> brickprof::Profile {
    let (clock, mock) = HostClock::mock();
    let mut prof =
        BrickProfiler::with_timeline(ProfilerConfig::default(), CpuTimeline::with_clock(clock))
            .unwrap();
    // DownProjection: 2 calls of 1 µs, 4 MFLOP and 1 MB each -> 4000 GFLOP/s, 1000 GB/s, AI 4.
    for _ in 0..2 {
        let t = prof.start_brick(BrickId::DownProjection);
        let tile = prof.start_tile(TileLevel::Macro);
        mock.increment(600);
        prof.stop_tile(
            tile,
            Work {
                elements: 0,
                flops: 2_000_000,
                bytes: 500_000,
            },
        );
        mock.increment(400);
        prof.stop_brick_with(
            t,
            Work {
                elements: 10,
                flops: 4_000_000,
                bytes: 1_000_000,
            },
        );
    }
    // Zero time, with work.
    let t = prof.start_brick(BrickId::ResidualAdd);
    prof.stop_brick_with(
        t,
        Work {
            elements: 5,
            flops: 5,
            bytes: 60,
        },
    );
    // Time, but zero bytes and zero FLOPs.
    let t = prof.start_brick(BrickId::Sampling);
    mock.increment(100);
    prof.stop_brick(t, 1);
    // Zero time and no work at all.
    let t = prof.start_brick(BrickId::Embedding);
    prof.stop_brick(t, 0);
    prof.end_pass(1).unwrap();
    prof.profile()
}

#[test]
fn derived_numbers_match_hand_computation() {
    // spec/work-accounting.md "Derived numbers" and "Roofline".
    let peaks = DevicePeaks::new("toy", 8_000.0, 1_000.0).unwrap(); // ridge 8 FLOP/B
    let d = Derived::of(&profile(), Some(&peaks));
    let down = d
        .bricks
        .iter()
        .find(|r| r.name == "DownProjection")
        .unwrap();
    assert_eq!((down.calls, down.total_ns), (2, 2_000));
    assert_eq!(down.gflops, 4_000.0);
    assert_eq!(down.gbps, 1_000.0);
    assert_eq!(down.intensity, Some(4.0));
    assert_eq!(down.bound, Some(brickprof::roofline::Bound::Memory));
    assert_eq!(down.roof_pct, Some(100.0)); // roof = 4 FLOP/B x 1000 GB/s = 4000 GFLOP/s
    assert_eq!(down.elements_per_sec, 20.0 / 2e-6);
    let tile = d.tiles.iter().find(|t| t.name == "DownProjection").unwrap();
    assert_eq!(
        (tile.tile, tile.calls, tile.total_ns),
        (Some(TileLevel::Macro), 2, 1_200)
    );
    assert_eq!(tile.pct, 60.0, "a tile's share of its brick");
    assert_eq!(tile.gflops, 4_000_000.0 / 1_200.0);
    let ffn = d.categories.iter().find(|c| c.name == "Ffn").unwrap();
    assert_eq!((ffn.flops, ffn.bytes), (8_000_000, 2_000_000));
    let residual = d.bricks.iter().find(|r| r.name == "ResidualAdd").unwrap();
    assert_eq!(
        (residual.gflops, residual.roof_pct),
        (0.0, Some(0.0)),
        "zero time"
    );
    let sampling = d.bricks.iter().find(|r| r.name == "Sampling").unwrap();
    assert_eq!(
        (sampling.intensity, sampling.bound),
        (None, Some(brickprof::roofline::Bound::Unknown))
    );
}

#[test]
fn no_report_shows_nan_or_infinity() {
    // spec/work-accounting.md "Derived numbers".
    let p = profile();
    for peaks in [
        None,
        Some(DevicePeaks::new("toy", 8_000.0, 1_000.0).unwrap()),
    ] {
        let opts = TableOptions {
            peaks,
            ..TableOptions::default()
        };
        // serde_json writes NaN as null, so the JSON text alone cannot show one: check the
        // derived numbers behind every report directly.
        let d = Derived::of(&p, opts.peaks.as_ref());
        for r in d
            .bricks
            .iter()
            .chain(&d.layers)
            .chain(&d.tiles)
            .chain(&d.categories)
        {
            let numbers = [
                r.pct,
                r.mean_ns,
                r.std_dev_ns,
                r.host_mean_ns,
                r.elements_per_sec,
                r.gflops,
                r.gbps,
                r.intensity.unwrap_or(0.0),
                r.roof_pct.unwrap_or(0.0),
            ];
            assert!(
                numbers.iter().all(|x| x.is_finite()),
                "{}: {numbers:?}",
                r.name
            );
        }
        assert!(d.tokens_per_sec.is_finite() && d.pass_mean_ns.is_finite());
        for (what, text) in [
            ("table", render_table(&p, &opts)),
            ("json", render_json(&p, &opts)),
            ("csv", render_csv(&p, &opts)),
        ] {
            let lower = text.to_lowercase();
            assert!(
                !lower.contains("nan") && !lower.contains("inf"),
                "{what}:\n{text}"
            );
        }
    }
}

#[test]
fn table_shows_the_work_section_with_tiles_and_categories() {
    let peaks = DevicePeaks::new("toy", 8_000.0, 1_000.0).unwrap();
    let text = render_table(
        &profile(),
        &TableOptions {
            peaks: Some(peaks),
            ..TableOptions::default()
        },
    );
    let work = &text[text.find("\nWork").expect("a work section")..];
    assert!(work.contains("DownProjection"), "{work}");
    assert!(work.contains("  macro x1/call"), "{work}");
    assert!(work.contains("by category"), "{work}");
    assert!(work.contains("memory"), "{work}");
    assert!(work.contains("100.0%"), "{work}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
}

#[test]
fn tiles_merge_with_their_bricks() {
    // spec/work-accounting.md "Tiles": merging profiles and profilers adds tile statistics.
    let p = profile();
    let mut twice = p.clone();
    twice.merge(&p).unwrap();
    let (one, two) = (
        &p.brick("DownProjection").unwrap().tiles[0].stats,
        &twice.brick("DownProjection").unwrap().tiles[0].stats,
    );
    assert_eq!(
        (two.summary().count, two.summary().total_ns),
        (2 * one.summary().count, 2 * one.summary().total_ns)
    );
    assert_eq!(two.summary().work.flops, 2 * one.summary().work.flops);

    let run = |prof: &mut BrickProfiler, mock: &brickprof::timeline::MockClock| {
        let t = prof.start_brick(BrickId::UpProjection);
        let tile = prof.start_tile(TileLevel::Midi);
        mock.increment(40);
        prof.stop_tile(
            tile,
            Work {
                elements: 0,
                flops: 0,
                bytes: 8,
            },
        );
        prof.stop_brick(t, 1);
        prof.finalize().unwrap();
    };
    let (ca, ma) = HostClock::mock();
    let (cb, mb) = HostClock::mock();
    let mut a =
        BrickProfiler::with_timeline(ProfilerConfig::default(), CpuTimeline::with_clock(ca))
            .unwrap();
    let mut b =
        BrickProfiler::with_timeline(ProfilerConfig::default(), CpuTimeline::with_clock(cb))
            .unwrap();
    run(&mut a, &ma);
    run(&mut b, &mb);
    let mut merged = a.profile();
    merged.merge(&b.profile()).unwrap();
    let up = merged.brick(BrickId::UpProjection.name()).unwrap();
    let tiles = &up
        .tiles
        .iter()
        .find(|t| t.level == TileLevel::Midi)
        .unwrap()
        .stats;
    assert_eq!(
        (
            tiles.summary().count,
            tiles.summary().total_ns,
            tiles.summary().work.bytes
        ),
        (2, 80, 16)
    );
}

#[test]
fn tiles_on_a_device_timeline_are_a_share_of_host_time_and_say_so() {
    // spec/work-accounting.md "Tiles": tiles are host time, also on a device timeline.
    let device = brickprof::timeline::SimDevice::new(1_000);
    let mut prof = brickprof::BrickProfiler::with_timeline(
        brickprof::ProfilerConfig::default(),
        device.timeline(64),
    )
    .unwrap();
    let t = prof.start_brick(brickprof::BrickId::QkvProjection);
    let tile = prof.start_tile(brickprof::stats::TileLevel::Macro);
    device.launch(1_000_000); // 1 ms of device time, 1 µs of host dispatch
    prof.stop_tile(
        tile,
        brickprof::Work {
            elements: 1,
            flops: 10,
            bytes: 10,
        },
    );
    prof.stop_brick_with(
        t,
        brickprof::Work {
            elements: 1,
            flops: 10,
            bytes: 10,
        },
    );
    prof.end_pass(1).unwrap();
    let mut p = prof.profile();
    p.meta.peaks = Some(brickprof::roofline::DevicePeaks::new("x", 1.0, 1.0).unwrap());
    let d = brickprof::figures::Derived::of(&p, None);
    let tile_row = &d.tiles[0];
    assert!(
        (tile_row.pct - 100.0).abs() < 1e-9,
        "the tile covers the brick's whole host time, not 0.1 % of its device time: {}",
        tile_row.pct
    );
    let text = brickprof::output::render_table(&p, &Default::default());
    assert!(text.contains("Tiles are host time"), "{text}");
}

/// Every way a table prints a number: default, by layer, with the profile's roofline.
fn every_table(p: &brickprof::Profile) -> Vec<String> {
    [false, true]
        .into_iter()
        .map(|by_layer| {
            render_table(
                p,
                &TableOptions {
                    by_layer,
                    ..TableOptions::default()
                },
            )
        })
        .collect()
}

#[test]
fn extreme_peaks_never_print_inf_or_nan() {
    // spec/work-accounting.md "Reports": a percentage or rate that is not a finite number
    // prints as "-", one over the column's width as ">9999%". Before: `inf%` in the Work table.
    let extremes = [1e308, f64::MAX, 1e-308, f64::MIN_POSITIVE, 5e-324, 1.0];
    for gflops in extremes {
        for gbps in extremes {
            let mut p = profile();
            p.meta.peaks = Some(DevicePeaks::new("extreme", gflops, gbps).unwrap());
            for text in every_table(&p) {
                for bad in ["inf", "NaN"] {
                    assert!(!text.contains(bad), "{gflops} {gbps}: {bad} in\n{text}");
                }
            }
        }
    }
}

#[test]
fn bricks_without_elements_print_no_throughput() {
    // spec/work-accounting.md "Reports": throughput is shown only for bricks with an element
    // count. Before: `0/s` for every brick of a tracing-mode profile.
    let (clock, mock) = HostClock::mock();
    let mut prof = BrickProfiler::with_timeline(
        ProfilerConfig::with_layers(1),
        CpuTimeline::with_clock(clock),
    )
    .unwrap();
    prof.begin_layer(0);
    for brick in [BrickId::RmsNorm, BrickId::Activation] {
        let t = prof.start_brick(brick);
        mock.increment(1_000);
        prof.stop_brick_with(t, Work::default());
    }
    prof.end_layer();
    prof.end_pass(1).unwrap();
    let p = prof.profile();
    for text in every_table(&p) {
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("RmsNorm") || l.contains("Activation"))
            .collect();
        assert!(!rows.is_empty(), "{text}");
        for line in rows {
            assert!(!line.contains("0/s"), "{line:?}");
        }
    }
}
