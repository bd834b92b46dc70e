//! spec/sync-modes.md "Sampling": marking only every Nth pass or only layer boundaries, and the
//! report saying what was sampled.

use brickprof::output::{render_table, TableOptions};
use brickprof::{
    model::Sampling,
    timeline::{HostClock, MockClock},
    BrickId, BrickProfiler, CpuTimeline, Profile, ProfilerConfig,
};

fn profiler(sampling: Sampling) -> (BrickProfiler, MockClock) {
    let (clock, mock) = HostClock::mock();
    let config = ProfilerConfig {
        layers: 2,
        sampling,
        ..ProfilerConfig::default()
    };
    let prof = BrickProfiler::with_timeline(config, CpuTimeline::with_clock(clock)).unwrap();
    (prof, mock)
}

/// One pass: an embedding (100 ns), then per layer a norm (200 ns) and a matvec (700 ns).
fn pass(prof: &mut BrickProfiler, mock: &MockClock) {
    prof.begin_pass();
    let t = prof.start_brick(BrickId::Embedding);
    mock.increment(100);
    prof.stop_brick(t, 1);
    for layer in 0..2 {
        prof.begin_layer(layer);
        let t = prof.start_brick(BrickId::RmsNorm);
        mock.increment(200);
        prof.stop_brick(t, 1);
        let t = prof.start_brick(BrickId::QkvProjection);
        mock.increment(700);
        prof.stop_brick(t, 1);
        prof.end_layer();
    }
    prof.end_pass(1).unwrap();
}

#[test]
fn every_nth_pass_marks_one_pass_in_n_and_counts_them_all() {
    let (mut prof, mock) = profiler("every-4".parse::<Sampling>().unwrap());
    for _ in 0..9 {
        pass(&mut prof, &mock);
    }
    assert_eq!(prof.view().counters.passes, 9, "every pass is counted");
    assert_eq!(
        prof.view().brick_stats(BrickId::Embedding).summary().count,
        3,
        "passes 0, 4, 8"
    );
    assert_eq!(
        prof.view()
            .brick_stats(BrickId::QkvProjection)
            .summary()
            .count,
        6
    );
    assert!(
        prof.view().enabled,
        "sampling does not turn the profiler off"
    );
    let table = render_table(&prof.profile(), &TableOptions::default());
    assert!(table.contains("Sampled: one pass in 4"), "{table}");
}

#[test]
fn layers_sampling_times_whole_layers_and_marks_nothing_inside() {
    let (mut prof, mock) = profiler(Sampling::Layers);
    for _ in 0..3 {
        pass(&mut prof, &mock);
    }
    let layer = prof.view().registry.lookup("layer").expect("registered");
    let stats = prof.view().brick_stats(layer);
    assert_eq!(stats.summary().count, 6, "two layers a pass");
    assert_eq!(
        stats.summary().total_ns,
        6 * 900,
        "a layer spans its bricks"
    );
    assert_eq!(
        prof.view()
            .row_stats(
                brickprof::model::PhaseFilter::All,
                brickprof::profile::RowKey::Layer(1),
                layer
            )
            .unwrap()
            .summary()
            .count,
        3
    );
    assert_eq!(
        prof.view().brick_stats(BrickId::RmsNorm).summary().count,
        0,
        "inside layers: not marked"
    );
    assert_eq!(
        prof.view().brick_stats(BrickId::Embedding).summary().count,
        3,
        "outside layers: marked"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    prof.profile().save(&path).unwrap();
    let back = Profile::load(&path).unwrap();
    assert_eq!(back.meta.sampling, Sampling::Layers);
    let table = render_table(&back, &TableOptions::default());
    assert!(table.contains("Sampled: layer boundaries only"), "{table}");
}

#[test]
fn disabling_still_wins_and_every_pass_is_the_default() {
    let (mut prof, mock) = profiler(Sampling::Layers);
    prof.set_enabled(false);
    pass(&mut prof, &mock);
    assert!(!prof.view().enabled);
    let layer = prof.view().registry.lookup("layer").unwrap();
    assert_eq!(prof.view().brick_stats(layer).summary().count, 0);
    prof.set_enabled(true);
    pass(&mut prof, &mock);
    assert_eq!(prof.view().brick_stats(layer).summary().count, 2);

    let (mut prof, mock) = profiler(Sampling::default());
    pass(&mut prof, &mock);
    assert_eq!(prof.view().brick_stats(BrickId::RmsNorm).summary().count, 2);
    let table = render_table(&prof.profile(), &TableOptions::default());
    assert!(!table.contains("Sampled:"), "{table}");
}

/// spec/sync-modes.md "Sampling", spec/hot-path.md "Costs": a start the plan leaves unmarked
/// is counted on the start's cold path, which a full pending buffer also takes: it is counted
/// as sampled out even when the buffer is full, never as dropped, and a disabled start counts
/// nothing.
#[test]
fn a_sampled_out_start_is_counted_even_when_the_pending_buffer_is_full() {
    let (clock, mock) = HostClock::mock();
    let config = ProfilerConfig {
        layers: 2,
        sampling: Sampling::Layers,
        pending_capacity: 1,
        ..ProfilerConfig::default()
    };
    let mut prof = BrickProfiler::with_timeline(config, CpuTimeline::with_clock(clock)).unwrap();
    prof.begin_layer(0); // the `layer` brick fills the one-entry buffer
    assert_eq!(
        (
            prof.view().in_flight.pending,
            prof.view().in_flight.capacity
        ),
        (1, 1)
    );
    for _ in 0..3 {
        let t = prof.start_brick(BrickId::RmsNorm);
        mock.increment(10);
        prof.stop_brick(t, 1);
    }
    prof.end_layer();
    prof.set_enabled(false);
    prof.begin_layer(1);
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 1);
    prof.end_layer();
    prof.set_enabled(true);
    prof.end_pass(1).unwrap();
    let c = prof.view().counters;
    assert_eq!((c.sampled_out, c.dropped, c.stray_stops), (3, 0, 0));
    let layer = prof.view().registry.lookup("layer").unwrap();
    assert_eq!(prof.view().brick_stats(layer).summary().count, 1);
    assert_eq!(prof.view().brick_stats(layer).summary().total_ns, 30);
}
