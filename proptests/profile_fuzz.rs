//! spec/profile-format.md "Validation": files that cannot crash the tool.
//!
//! Invariant: loading any mutation of a real profile file (byte flips, truncation, numeric
//! fields set to extreme values) returns `Ok` or a typed `Error`, never a panic; and every
//! profile that loads can be reported (tables, the HTML report, folded stacks, the DOT graph),
//! exported, merged with itself and diffed against the original without a panic, in debug
//! builds (overflow checks on) as in release, and in bounded time and memory (a `1e308` peak
//! once made the HTML report's roofline loop about 2^31 times).

use crate::render::{render_csv, render_dot, render_folded, render_html, render_json};
use brickprof::compare::{diff_files_with, DiffOptions};
use brickprof::Profile;
use brickprof::{
    compare::timing_diff,
    model::PhaseFilter,
    output::{render_table, HtmlOptions},
};
use proptest::prelude::*;

fn real_profile_text() -> String {
    serde_json::to_string_pretty(&crate::common::nested_profile()).unwrap()
}

/// Positions of every JSON number in `text` (start, end).
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i] == b'-' || b[i].is_ascii_digit())
            && i > 0
            && matches!(b[i - 1], b' ' | b'[' | b':' | b',' | b'\n');
        if starts {
            let j = i
                + 1
                + b[i + 1..]
                    .iter()
                    .take_while(|c| {
                        c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-')
                    })
                    .count();
            out.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, byte: u8 },
    Truncate { at: usize },
    Number { which: usize, value: String },
}

fn extreme() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551615".to_string()),
        Just("\"18446744073709551615\"".to_string()),
        Just("9007199254740993".to_string()),
        Just("340282366920938463463374607431768211455".to_string()),
        Just("1e308".to_string()),
        Just("-0.0".to_string()),
        Just("NaN".to_string()),
        any::<u64>().prop_map(|v| v.to_string()),
        any::<u32>().prop_map(|v| v.to_string()),
        (0u64..2000).prop_map(|v| v.to_string()),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, byte)| Mutation::Flip {
            at: i.index(usize::MAX),
            byte
        }),
        any::<prop::sample::Index>().prop_map(|i| Mutation::Truncate {
            at: i.index(usize::MAX)
        }),
        (any::<prop::sample::Index>(), extreme()).prop_map(|(i, value)| Mutation::Number {
            which: i.index(usize::MAX),
            value
        }),
        (any::<prop::sample::Index>(), extreme()).prop_map(|(i, value)| Mutation::Number {
            which: i.index(usize::MAX),
            value
        }),
    ]
}

fn apply(text: &str, m: &Mutation) -> Vec<u8> {
    let nums = numbers(text);
    let mut bytes = text.as_bytes().to_vec();
    match m {
        Mutation::Flip { at, byte } => {
            let i = at % bytes.len();
            bytes[i] ^= byte | 1;
        }
        Mutation::Truncate { at } => bytes.truncate(at % bytes.len()),
        Mutation::Number { which, value } => {
            if !nums.is_empty() {
                let (a, b) = nums[which % nums.len()];
                bytes.splice(a..b, value.bytes());
            }
        }
    }
    bytes
}

fn exercise(p: &Profile, original: &Profile) {
    let opts = brickprof::output::TableOptions::default();
    let _ = render_table(p, &opts);
    let by_layer = brickprof::output::TableOptions {
        by_layer: true,
        ..Default::default()
    };
    let _ = render_table(p, &by_layer);
    let _ = render_json(p, &opts);
    let _ = render_csv(p, &opts);
    let _ = timing_diff(original, p, PhaseFilter::All).render(original, p);
    let _ = timing_diff(p, original, PhaseFilter::All).render(p, original);
    let _ = render_html(p, &HtmlOptions::default());
    let _ = render_folded(p);
    let _ = render_dot(p);
    let mut twice = p.clone();
    let _ = twice.merge(p);
    let _ = render_table(&twice, &opts);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Invariant: see the module docs.
    #[test]
    fn mutated_profiles_load_or_fail_cleanly_never_panic(
        mutations in proptest::collection::vec(mutation(), 1..4)
    ) {
        let text = real_profile_text();
        let original: Profile = serde_json::from_str(&text).unwrap();
        let mut bytes = text.into_bytes();
        for m in &mutations {
            let s = String::from_utf8_lossy(&bytes).into_owned();
            bytes = apply(&s, m);
            if bytes.is_empty() { break; }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        std::fs::write(&path, &bytes).unwrap();
        let loaded = Profile::load(&path);
        // Read as a run file of either kind (what `brickprof diff` reads), it is a profile
        // exactly when it loads as one: then it diffs against itself.
        let run = diff_files_with(&path, &path, &DiffOptions::default());
        prop_assert_eq!(loaded.is_ok(), run.is_ok());
        if let Ok(p) = loaded {
            exercise(&p, &original);
        }
    }
}

/// A structural edit a user could make by hand to a real profile's JSON.
#[derive(Debug, Clone)]
enum Edit {
    /// Remove a field of brick `brick` (`rows`, `tiles`, `stats`).
    Remove { brick: usize, field: &'static str },
    /// Give brick `brick` the category of brick `from`.
    Category { brick: usize, from: usize },
    /// Flip brick `brick`'s `builtin`.
    Builtin { brick: usize },
    /// A byte flip, truncation or extreme number (as above).
    Mutate(Mutation),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (
            any::<usize>(),
            prop::sample::select(vec!["rows", "tiles", "stats"])
        )
            .prop_map(|(brick, field)| Edit::Remove { brick, field }),
        (any::<usize>(), any::<usize>()).prop_map(|(brick, from)| Edit::Category { brick, from }),
        any::<usize>().prop_map(|brick| Edit::Builtin { brick }),
        mutation().prop_map(Edit::Mutate),
    ]
}

fn edited(edits: &[Edit]) -> Vec<u8> {
    let mut v = serde_json::to_value(crate::common::nested_profile()).unwrap();
    let mut bytes = None;
    for e in edits {
        let bricks = v["bricks"].as_array_mut().unwrap();
        let n = bricks.len();
        match e {
            Edit::Remove { brick, field } => {
                bricks[brick % n].as_object_mut().unwrap().remove(*field);
            }
            Edit::Category { brick, from } => {
                let c = bricks[from % n]["category"].clone();
                bricks[brick % n]["category"] = c;
            }
            Edit::Builtin { brick } => {
                let b = bricks[brick % n]["builtin"].as_bool().unwrap_or(false);
                bricks[brick % n]["builtin"] = serde_json::Value::Bool(!b);
            }
            Edit::Mutate(m) => {
                bytes = Some(apply(&serde_json::to_string_pretty(&v).unwrap(), m));
                break;
            }
        }
    }
    bytes.unwrap_or_else(|| serde_json::to_vec_pretty(&v).unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Invariant (spec/profile-format.md "Merging"): a profile that loads merges with any
    /// profile that loads into one that saves and loads again, or merge returns an error and
    /// leaves the receiver unchanged. Both orders agree on which.
    #[test]
    fn profiles_that_load_merge_into_profiles_that_load(
        a in proptest::collection::vec(edit(), 0..3),
        b in proptest::collection::vec(edit(), 0..3),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let load = |name: &str, bytes: Vec<u8>| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            Profile::load(&path).ok()
        };
        let (Some(pa), Some(pb)) = (load("a.json", edited(&a)), load("b.json", edited(&b))) else {
            return Ok(());
        };
        let mut ab = pa.clone();
        let mut ba = pb.clone();
        let (r_ab, r_ba) = (ab.merge(&pb), ba.merge(&pa));
        prop_assert_eq!(r_ab.is_ok(), r_ba.is_ok(), "{:?} vs {:?}", r_ab, r_ba);
        match r_ab {
            Ok(()) => {
                prop_assert_eq!(&ab, &ba);
                let out = dir.path().join("merged.json");
                ab.save(&out).unwrap();
                let back = Profile::load(&out);
                prop_assert!(back.is_ok(), "the merge does not load: {}", back.unwrap_err());
                prop_assert_eq!(back.unwrap(), ab);
            }
            Err(_) => {
                prop_assert_eq!(&ab, &pa, "a refused merge changes nothing");
                prop_assert_eq!(&ba, &pb);
            }
        }
    }
}
