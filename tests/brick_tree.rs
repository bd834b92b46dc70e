//! spec/work-accounting.md "Brick tree" and spec/profile-format.md "Nesting": nesting edges
//! recorded by the profiler, saved and loaded with the profile, and drawn as folded stacks
//! (flamegraphs) and a DOT graph that Graphviz renders.

use brickprof::report::{folded_stacks, render_dot, render_folded};
use brickprof::{BrickId, BrickProfiler, CpuTimeline, HostClock, Profile, ProfilerConfig};

/// Two layers of `Attention { q_proj, k_proj }` (the shape of candle's tracing spans), and a
/// top-level LmHead; every duration is exact on a mock clock.
fn attention_profile() -> Profile {
    let (clock, mock) = HostClock::mock();
    let mut prof = BrickProfiler::with_timeline(
        ProfilerConfig::with_layers(2),
        CpuTimeline::with_clock(clock),
    )
    .unwrap();
    let attention = prof.register("Attention").unwrap();
    let q = prof.register("q_proj").unwrap();
    let k = prof.register("k_proj").unwrap();
    for _pass in 0..3 {
        for layer in 0..2 {
            prof.begin_layer(layer);
            let a = prof.start_brick(attention);
            mock.increment(10);
            for (h, ns) in [(q, 100), (k, 50)] {
                let t = prof.start_brick(h);
                mock.increment(ns);
                prof.stop_brick(t, 1);
            }
            mock.increment(5);
            prof.stop_brick(a, 1);
            prof.end_layer();
        }
        let t = prof.start_brick(BrickId::LmHead);
        mock.increment(1_000);
        prof.stop_brick(t, 1);
        prof.end_pass(1).unwrap();
    }
    prof.profile()
}

#[test]
fn nesting_edges_are_recorded_saved_and_loaded() {
    let p = attention_profile();
    let edges: Vec<_> = p
        .nesting
        .iter()
        .map(|e| {
            (
                e.parent.as_str(),
                e.child.as_str(),
                e.row.to_string(),
                e.calls,
                e.self_ns,
            )
        })
        .collect();
    assert_eq!(
        edges,
        vec![
            ("Attention", "k_proj", "L0".to_string(), 3, 150),
            ("Attention", "k_proj", "L1".to_string(), 3, 150),
            ("Attention", "q_proj", "L0".to_string(), 3, 300),
            ("Attention", "q_proj", "L1".to_string(), 3, 300),
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    p.save(&path).unwrap();
    assert_eq!(Profile::load(&path).unwrap().nesting, p.nesting);
    // Merging two runs adds the counts.
    let mut m = p.clone();
    m.merge(&p).unwrap();
    assert_eq!(m.nesting[0].calls, 6);
    // A tampered edge (more nested calls than the child made) is refused, naming the field.
    let text = std::fs::read_to_string(&path).unwrap();
    let bad = text.replacen("\"calls\": 3", "\"calls\": 4", 1);
    std::fs::write(&path, bad).unwrap();
    let err = Profile::load(&path).unwrap_err().to_string();
    assert!(err.contains("nesting"), "{err}");
}

#[test]
fn folded_stacks_follow_the_tree_and_add_up_to_the_self_time() {
    let p = attention_profile();
    let stacks = folded_stacks(&p);
    let get = |s: &str| stacks.iter().find(|(k, _)| k == s).map(|x| x.1);
    assert_eq!(get("L0;Attention"), Some(45)); // 3 x (10 + 5) self
    assert_eq!(get("L0;Attention;q_proj"), Some(300));
    assert_eq!(get("L1;Attention;k_proj"), Some(150));
    assert_eq!(get("model;LmHead"), Some(3_000));
    assert_eq!(get("L0;q_proj"), None, "a nested brick is not also a root");
    let sum: u64 = stacks.iter().map(|s| s.1).sum();
    assert_eq!(sum, p.total_ns());
    assert!(render_folded(&p)
        .lines()
        .all(|l| l.rsplit_once(' ').is_some()));
}

#[test]
fn a_profile_without_nesting_gives_flat_stacks_and_a_flat_graph() {
    let mut p = attention_profile();
    p.nesting.clear();
    let stacks = folded_stacks(&p);
    assert!(stacks.iter().any(|(s, _)| s == "L0;q_proj"));
    assert!(stacks.iter().all(|(s, _)| s.split(';').count() == 2));
    let dot = render_dot(&p);
    assert!(!dot.contains("->"));
    assert!(dot.contains("\"q_proj\""));
}

#[test]
fn the_dot_graph_has_nodes_with_times_and_edges_with_counts_and_graphviz_renders_it() {
    let p = attention_profile();
    let dot = render_dot(&p);
    assert!(
        dot.contains("\"Attention\" -> \"q_proj\" [label=\"6 calls"),
        "{dot}"
    );
    assert!(
        dot.contains("\"q_proj\" [label=\"q_proj\\n6 calls\\nself"),
        "{dot}"
    );
    // Graphviz must render it. CI installs it and sets BRICKPROF_REQUIRE_GRAPHVIZ=1.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.dot");
    std::fs::write(&path, &dot).unwrap();
    match std::process::Command::new("dot")
        .arg("-Tsvg")
        .arg(&path)
        .output()
    {
        Ok(o) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert!(String::from_utf8_lossy(&o.stdout).contains("<svg"));
        }
        Err(e) => assert!(
            std::env::var_os("BRICKPROF_REQUIRE_GRAPHVIZ").is_none(),
            "graphviz `dot` is required here: {e}"
        ),
    }
}
