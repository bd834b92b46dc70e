//! spec/work-accounting.md "Brick tree" and spec/profile-format.md "Nesting": nesting edges
//! recorded by the profiler, saved and loaded with the profile, and drawn as folded stacks
//! (flamegraphs) and a DOT graph that Graphviz renders.

use crate::common;

use crate::common::render::{render_dot, render_folded};
use brickprof::output::folded_stacks;
use brickprof::{BrickId, Profile};
use common::{mock_profiler, nested_chain};

/// Two layers of `Attention { q_proj, k_proj }` (the shape of candle's tracing spans), and a
/// top-level LmHead; every duration is exact on a mock clock.
fn attention_profile() -> Profile {
    let (mut prof, mock) = mock_profiler(2);
    let attention = prof
        .register("Attention", brickprof::BrickCategory::Other)
        .unwrap();
    let q = prof
        .register("q_proj", brickprof::BrickCategory::Other)
        .unwrap();
    let k = prof
        .register("k_proj", brickprof::BrickCategory::Other)
        .unwrap();
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

/// `d00`, `d01`, ... `depth` bricks deep, 1 ns of self time each.
fn deep_chain(depth: usize) -> Profile {
    let names: Vec<String> = (0..depth).map(|i| format!("d{i:02}")).collect();
    let chain: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 1)).collect();
    nested_chain(&chain)
}

/// Frames below the row frame.
fn frames(stack: &str) -> Vec<&str> {
    stack.split(';').skip(1).collect()
}

#[test]
fn recursion_keeps_its_time_on_the_outer_frame() {
    // spec/work-accounting.md "Brick tree": a row's stacks add up to its bricks' self time,
    // and a brick nested in itself is one frame. Before: Attention's 15 ns of self time (5 +
    // 3 outside, 7 inside itself) came out as 12.
    let (mut prof, mock) = mock_profiler(1);
    let attention = prof
        .register("Attention", brickprof::BrickCategory::Other)
        .unwrap();
    prof.begin_layer(0);
    let outer = prof.start_brick(attention);
    mock.increment(5);
    let inner = prof.start_brick(attention);
    mock.increment(7);
    prof.stop_brick(inner, 1);
    mock.increment(3);
    prof.stop_brick(outer, 1);
    prof.end_layer();
    prof.end_pass(1).unwrap();
    let p = prof.profile();
    assert_eq!(p.brick("Attention").unwrap().stats.summary().self_ns, 15);
    assert_eq!(folded_stacks(&p), vec![("L0;Attention".to_string(), 15)]);

    // A cycle through another brick: A (1 ns) { B (2 ns) { A (4 ns) } }. The inner A is cut
    // onto the outer one, and B is never drawn as a top-level brick.
    let p = nested_chain(&[("A", 1), ("B", 2), ("A", 4)]);
    assert_eq!(
        folded_stacks(&p),
        vec![("L0;A".to_string(), 5), ("L0;A;B".to_string(), 2)]
    );
}

#[test]
fn deep_stacks_keep_their_root_and_mark_the_cut() {
    // spec/work-accounting.md "Brick tree": at most 32 brick frames below the row; what is
    // deeper is one `…` frame under the 32nd, holding the deeper bricks' self time. Before: a
    // 33-deep chain gave a 33-frame stack, and a 40-deep one dropped its outer frames, so
    // `L0;d07;...;d39` read as if d07 were a top-level brick.
    let p = deep_chain(32);
    let stacks = folded_stacks(&p);
    assert_eq!(stacks.len(), 32);
    assert!(stacks.iter().all(|(s, _)| !s.contains('…')));
    for depth in [33, 40] {
        let p = deep_chain(depth);
        let stacks = folded_stacks(&p);
        let sum: u64 = stacks.iter().map(|s| s.1).sum();
        assert_eq!(sum, p.total_ns(), "{depth}");
        for (stack, _) in &stacks {
            let f = frames(stack);
            assert_eq!(f[0], "d00", "{depth}: {stack} lost its root");
            assert!(f.len() <= 33, "{depth}: {stack}");
            assert!(f.iter().filter(|&&x| x != "…").count() <= 32, "{stack}");
        }
        let cut = stacks
            .iter()
            .find(|(s, _)| s.ends_with(";…"))
            .unwrap_or_else(|| panic!("{depth}: no cut marker in {stacks:?}"));
        assert_eq!(frames(&cut.0).len(), 33);
        assert_eq!(frames(&cut.0)[31], "d31");
        assert_eq!(cut.1, (depth - 32) as u64, "the deeper bricks' self time");
    }
}

#[test]
fn an_edge_claiming_more_time_than_its_child_had_is_refused_on_load() {
    // spec/profile-format.md "Nesting": the edges into a brick in a row share out what it did
    // there, so together they claim no more calls, inclusive or self time than it had. Before:
    // an edge of 2^64-1 ns loaded, and the DOT graph labelled it "18446744074s".
    let p = attention_profile();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    p.save(&path).unwrap();
    let original: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let edits: [(&str, u64); 4] = [
        ("total_ns", u64::MAX),
        ("total_ns", 301), // q_proj had 300 ns in L0
        ("self_ns", 301),
        ("calls", 4), // and 3 calls
    ];
    for (field, value) in edits {
        let mut v = original.clone();
        let edge = v["nesting"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|e| e["child"] == "q_proj" && e["row"] == 0)
            .unwrap();
        edge[field] = value.into();
        if field == "self_ns" {
            edge["total_ns"] = value.into(); // keep self <= total: only the sum is at fault
        }
        std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
        match Profile::load(&path) {
            Err(brickprof::Error::Invalid { path: p, message }) => {
                assert_eq!(p, path);
                assert!(message.contains("nesting"), "{field}: {message}");
            }
            other => panic!("{field} = {value}: {other:?}"),
        }
    }
    // Two parents that together claim more than the child had are refused as well.
    let mut v = original.clone();
    let nesting = v["nesting"].as_array_mut().unwrap();
    let mut second = nesting
        .iter()
        .find(|e| e["child"] == "q_proj" && e["row"] == 0)
        .unwrap()
        .clone();
    second["parent"] = "k_proj".into();
    nesting.push(second);
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    let err = Profile::load(&path).unwrap_err().to_string();
    assert!(err.contains("claim"), "{err}");

    // A merged run whose times saturate still labels its edges within 8 characters.
    let mut big = p.clone();
    for e in &mut big.nesting {
        e.total_ns = u64::MAX;
    }
    let dot = render_dot(&big);
    assert!(!dot.contains("18446744074s"), "{dot}");
    assert!(dot.contains("585y"), "{dot}");
}
