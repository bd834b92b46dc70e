//! spec/sync-modes.md "Your own timeline" and "Resolution": a user's timeline names itself in
//! saved profiles, its resolution is recorded and shown, and bricks below it are flagged.

use brickprof::output::{render_table, TableOptions};
use brickprof::{
    timeline::{HostClock, Mark, TimelineKind},
    BrickId, BrickProfiler, CpuTimeline, Profile, ProfilerConfig, Result, Timeline,
};

/// A "vulkan" timeline: the CPU timeline under another name, with a 1 µs grain.
struct Vulkan(CpuTimeline);

impl Timeline for Vulkan {
    fn kind(&self) -> TimelineKind {
        "vulkan".parse::<TimelineKind>().expect("a valid name")
    }
    fn resolution_ns(&self) -> u64 {
        1_000
    }
    fn host_clock(&self) -> HostClock {
        self.0.host_clock()
    }
    fn mark(&mut self, host_ticks: u64) -> Mark {
        self.0.mark(host_ticks)
    }
    fn sync(&mut self) -> Result<()> {
        self.0.sync()
    }
    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        self.0.resolve_ns(start, end)
    }
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        self.0.timestamp_ns(mark)
    }
}

#[test]
fn a_custom_timeline_names_itself_and_its_resolution_is_recorded_and_shown() {
    let (clock, mock) = HostClock::mock();
    let timeline = Vulkan(CpuTimeline::with_clock(clock));
    let mut prof = BrickProfiler::with_timeline(ProfilerConfig::default(), timeline).unwrap();
    for _ in 0..3 {
        let t = prof.start_brick(BrickId::ResidualAdd);
        mock.increment(400); // below 1 µs
        prof.stop_brick(t, 1);
        let t = prof.start_brick(BrickId::LmHead);
        mock.increment(50_000);
        prof.stop_brick(t, 1);
        prof.end_pass(1).unwrap();
    }
    let profile = prof.profile();
    assert_eq!(profile.meta.timeline.name(), "vulkan");
    assert_eq!(profile.meta.timer_resolution_ns, Some(1_000));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vulkan.json");
    profile.save(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"timeline\": \"vulkan\""), "{text}");
    let back = Profile::load(&path).unwrap();
    assert_eq!(
        back.meta.timeline,
        "vulkan".parse::<TimelineKind>().unwrap()
    );
    assert_eq!(back.meta.timer_resolution_ns, Some(1_000));

    let table = render_table(&back, &TableOptions::default());
    assert!(
        table.starts_with(&format!(
            "brickprof {} | timeline vulkan (resolution 1.00µs)",
            env!("CARGO_PKG_VERSION")
        )),
        "{table}"
    );
    let flagged = table
        .lines()
        .find(|l| l.starts_with("Below the timer resolution"))
        .unwrap_or_else(|| panic!("no flag in\n{table}"));
    assert!(flagged.contains("ResidualAdd"), "{flagged}");
    assert!(!flagged.contains("LmHead"), "{flagged}");
}

#[test]
fn profiles_without_a_resolution_still_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    let mut prof = BrickProfiler::default();
    let t = prof.start_brick(BrickId::RmsNorm);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
    prof.profile().save(&path).unwrap();
    // Strip the field, as a file written before it existed.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let meta = json["meta"].as_object_mut().unwrap();
    assert!(
        meta.remove("timer_resolution_ns").is_some(),
        "the field was there"
    );
    std::fs::write(&path, serde_json::to_string(&json).unwrap()).unwrap();
    let back = Profile::load(&path).unwrap();
    assert_eq!(back.meta.timer_resolution_ns, None);
    assert_eq!(back.meta.timeline, TimelineKind::Cpu);
}

/// A timeline whose marks cost the device 3.3 µs each, as CUDA events on an H200.
struct Evented(CpuTimeline);

impl Timeline for Evented {
    fn kind(&self) -> TimelineKind {
        "evented".parse::<TimelineKind>().expect("a valid name")
    }
    fn mark_cost_ns(&self) -> Option<u64> {
        Some(3_300)
    }
    fn host_clock(&self) -> HostClock {
        self.0.host_clock()
    }
    fn mark(&mut self, host_ticks: u64) -> Mark {
        self.0.mark(host_ticks)
    }
    fn sync(&mut self) -> Result<()> {
        self.0.sync()
    }
    fn resolve_ns(&mut self, start: Mark, end: Mark) -> Result<u64> {
        self.0.resolve_ns(start, end)
    }
    fn timestamp_ns(&mut self, mark: Mark) -> Result<u64> {
        self.0.timestamp_ns(mark)
    }
}

/// spec/sync-modes.md "Observer effect": the mark's cost is recorded, kept through a save, a
/// load and a merge (the larger), and bricks whose mean call is within 2x of it are flagged.
#[test]
fn bricks_within_twice_the_marking_cost_are_flagged() {
    let (clock, mock) = HostClock::mock();
    let mut prof = BrickProfiler::with_timeline(
        ProfilerConfig::default(),
        Evented(CpuTimeline::with_clock(clock)),
    )
    .unwrap();
    for _ in 0..3 {
        let t = prof.start_brick(BrickId::RmsNorm);
        mock.increment(6_500); // under 2 x 3.3 µs
        prof.stop_brick(t, 1);
        let t = prof.start_brick(BrickId::LmHead);
        mock.increment(6_700); // over it
        prof.stop_brick(t, 1);
        prof.end_pass(1).unwrap();
    }
    let profile = prof.profile();
    assert_eq!(profile.meta.mark_cost_ns, Some(3_300));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evented.json");
    profile.save(&path).unwrap();
    let back = Profile::load(&path).unwrap();
    assert_eq!(back.meta.mark_cost_ns, Some(3_300));

    let table = render_table(&back, &TableOptions::default());
    let flagged = table
        .lines()
        .find(|l| l.starts_with("Within 2x of the marking cost (3.30µs a mark)"))
        .unwrap_or_else(|| panic!("no flag in\n{table}"));
    assert!(flagged.contains("RmsNorm"), "{flagged}");
    assert!(!flagged.contains("LmHead"), "{flagged}");

    // A merge keeps the larger cost, whichever side has it.
    let mut dearer = back.clone();
    dearer.meta.mark_cost_ns = Some(4_000);
    let mut merged = back.clone();
    merged.merge(&dearer).unwrap();
    assert_eq!(merged.meta.mark_cost_ns, Some(4_000));
    let mut merged = dearer.clone();
    merged.merge(&back).unwrap();
    assert_eq!(merged.meta.mark_cost_ns, Some(4_000));
}

#[test]
fn the_host_clock_records_no_marking_cost_and_flags_nothing() {
    let (clock, mock) = HostClock::mock();
    let mut prof =
        BrickProfiler::with_timeline(ProfilerConfig::default(), CpuTimeline::with_clock(clock))
            .unwrap();
    let t = prof.start_brick(BrickId::RmsNorm);
    mock.increment(10);
    prof.stop_brick(t, 1);
    prof.end_pass(1).unwrap();
    let profile = prof.profile();
    assert_eq!(profile.meta.mark_cost_ns, None);
    let table = render_table(&profile, &TableOptions::default());
    assert!(!table.contains("marking cost"), "{table}");
}
