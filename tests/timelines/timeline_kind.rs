//! spec/sync-modes.md "Your own timeline" and "Resolution": a user's timeline names itself in
//! saved profiles, its resolution is recorded and shown, and bricks below it are flagged.

use brickprof::report::{render_table, TableOptions};
use brickprof::{
    BrickId, BrickProfiler, CpuTimeline, HostClock, Mark, Profile, ProfilerConfig, Result,
    Timeline, TimelineKind,
};

/// A "vulkan" timeline: the CPU timeline under another name, with a 1 µs grain.
struct Vulkan(CpuTimeline);

impl Timeline for Vulkan {
    fn kind(&self) -> TimelineKind {
        TimelineKind::custom("vulkan").expect("a valid name")
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
    assert_eq!(back.meta.timeline, TimelineKind::custom("vulkan").unwrap());
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
