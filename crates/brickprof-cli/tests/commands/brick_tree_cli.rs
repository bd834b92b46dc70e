//! spec/work-accounting.md "Brick tree": `brickprof report --flamegraph --folded --dot` write
//! the brick tree of a saved profile: nested (Attention holding the projections, as candle's
//! tracing spans do) and flat (the demo's).

use crate::common;
use crate::common::cli;

use cli::{brickprof, text};

/// A saved profile where `Attention` holds `q_proj` and `o_proj` in two layers.
fn nested_profile(path: &std::path::Path) {
    let (mut prof, mock) = common::mock_profiler(2);
    let attention = prof
        .register("Attention", brickprof::BrickCategory::Other)
        .unwrap();
    let q = prof
        .register("q_proj", brickprof::BrickCategory::Other)
        .unwrap();
    let o = prof
        .register("o_proj", brickprof::BrickCategory::Other)
        .unwrap();
    for layer in 0..2 {
        prof.begin_layer(layer);
        let a = prof.start_brick(attention);
        for h in [q, o] {
            let t = prof.start_brick(h);
            mock.increment(1_000);
            prof.stop_brick(t, 1);
        }
        mock.increment(100);
        prof.stop_brick(a, 1);
        prof.end_layer();
    }
    prof.end_pass(1).unwrap();
    prof.profile().save(path).unwrap();
}

/// `brickprof report P --flamegraph --folded --dot` into `dir`, which must succeed: its stderr,
/// then the flamegraph, the folded stacks and the graph.
fn report_tree(p: &std::path::Path, dir: &std::path::Path) -> (String, String, String, String) {
    let (svg, folded, dot) = (dir.join("f.svg"), dir.join("s.folded"), dir.join("g.dot"));
    let o = brickprof(&[
        "report",
        p.to_str().unwrap(),
        "--flamegraph",
        svg.to_str().unwrap(),
        "--folded",
        folded.to_str().unwrap(),
        "--dot",
        dot.to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).unwrap();
    let svg = read(svg);
    common::xml::assert_well_formed("the flamegraph", &svg);
    (err, svg, read(folded), read(dot))
}

#[test]
fn a_nested_profile_gives_a_flamegraph_folded_stacks_and_a_graph() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nested.json");
    nested_profile(&p);
    let (err, svg, folded, dot) = report_tree(&p, dir.path());
    assert!(err.contains("flamegraph written to"), "{err}");
    assert!(folded.contains("L1;Attention;q_proj 1000\n"), "{folded}");
    assert!(
        svg.starts_with("<?xml") && svg.contains("q_proj"),
        "{svg:.300}"
    );
    assert!(
        dot.contains("\"Attention\" -> \"o_proj\" [label=\"2 calls"),
        "{dot}"
    );
}

#[test]
fn the_demo_profile_gives_a_flat_graph_and_a_flamegraph() {
    let dir = tempfile::tempdir().unwrap();
    cli::demo(dir.path(), &[]);
    let p = dir.path().join("profile.json");
    let dot = dir.path().join("g.dot");
    let svg = dir.path().join("f.svg");
    let o = brickprof(&[
        "report",
        p.to_str().unwrap(),
        "--dot",
        dot.to_str().unwrap(),
        "--flamegraph",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    let dot = std::fs::read_to_string(&dot).unwrap();
    assert!(
        dot.contains("\"QkvProjection\"") && !dot.contains("->"),
        "{dot}"
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    common::xml::assert_well_formed("the flamegraph", &svg);
    assert!(svg.contains("QkvProjection"));
}

#[test]
fn an_unwritable_output_names_the_file_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nested.json");
    nested_profile(&p);
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let out = blocker.join("g.dot");
    let o = brickprof(&[
        "report",
        p.to_str().unwrap(),
        "--dot",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("file"), "{}", text(&o).1);
}

#[test]
fn deep_and_recursive_nesting_draws_the_library_stacks_everywhere() {
    // spec/work-accounting.md "Brick tree": the flamegraph, the folded file and the library
    // follow one rule: a 40-deep chain keeps its root and ends in a `…` frame, and a brick
    // inside itself is one frame. Before: `L0;d07;...;d39`, as if d07 were a top-level brick.
    let names: Vec<String> = (0..40)
        .map(|i| format!("d{:02}", if i == 6 { 5 } else { i })) // d05 inside itself too
        .collect();
    let chain: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 1_000)).collect();
    let profile = common::nested_chain(&chain);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("deep.json");
    profile.save(&p).unwrap();
    let (_, svg, folded, _) = report_tree(&p, dir.path());
    let mut library = Vec::new();
    let (folded_output, opts) = (
        brickprof::output::output("folded").unwrap(),
        Default::default(),
    );
    let snapshot = brickprof::output::Snapshot::Profile(&profile, &opts);
    folded_output.write(&snapshot, &mut library).unwrap();
    assert_eq!(folded, String::from_utf8(library).unwrap());
    for line in folded.lines() {
        assert!(line.starts_with("L0;d00"), "{line}");
        assert!(!line.contains(";d06"), "d06 is d05 inside itself: {line}");
    }
    // d05 (twice) keeps 2 µs; 32 brick frames (d00..d05, d07..d32), then the deeper 7.
    assert!(folded.contains(";d04;d05 2000\n"), "{folded}");
    let cut = folded
        .lines()
        .find(|l| l.contains('…'))
        .expect("a cut marker");
    assert!(cut.contains(";d32;… 7000"), "{cut}");
    assert!(svg.contains("d32") && svg.contains('…'), "{svg:.300}");
}

#[test]
fn names_xml_cannot_hold_leave_the_flamegraph_well_formed() {
    // spec/profile-format.md "Loading" (names from files): bricks whose names hold U+FFFE, U+FFFF, C0 and C1
    // controls or other non-characters, nested: the flamegraph parses as XML 1.0, those
    // characters shown as U+FFFD. Before: U+FFFE and U+FFFF reached the SVG.
    let names = common::xml::HOSTILE_NAMES;
    let chain: Vec<(&str, u64)> = names.iter().map(|n| (*n, 1_000)).collect();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("hostile.json");
    common::nested_chain(&chain).save(&p).unwrap();
    let (_, svg, _, _) = report_tree(&p, dir.path());
    assert!(svg.contains("bad\u{FFFD}\u{FFFD}name"), "{svg}");
    for c in [
        '\u{FFFE}',
        '\u{FFFF}',
        '\u{1}',
        '\u{85}',
        '\u{FDD0}',
        '\u{10FFFF}',
    ] {
        assert!(!svg.contains(c), "{c:?} in the flamegraph");
    }
}
