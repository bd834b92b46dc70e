//! Vendor files read back as profiles (spec/imports.md): each fixture imports exactly what an
//! independent reading (scripts/vendor-check.py) finds, and bad files give errors naming the
//! file and the line, never a panic.

mod counters;
mod faults;
mod fixtures;
mod instruments;
mod passes;
mod sqlite;

use std::path::{Path, PathBuf};

use brickprof::import::Imported;
use brickprof::profile::RowKey;
use brickprof::stats::BrickStats;
use serde_json::{json, Value};

/// A fixture of tests/fixtures/vendor/.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vendor")
        .join(name)
}

/// Whether two readings are the same: every key and value, integers exactly, other numbers
/// (rates, ratios: one division in Rust, the same in Python) within 1e-12 of each other,
/// relatively. The first difference, by its path, when they are not.
pub fn same(got: &Value, want: &Value, at: &str) -> Result<(), String> {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) if !(a.is_u64() && b.is_u64()) => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            let close = (x - y).abs() <= 1e-12 * x.abs().max(y.abs());
            close.then_some(()).ok_or(format!("{at}: {x} against {y}"))
        }
        (Value::Object(a), Value::Object(b)) => {
            let sorted = |m: &serde_json::Map<String, Value>| {
                let mut k: Vec<String> = m.keys().cloned().collect();
                k.sort();
                k
            };
            let (ka, kb) = (sorted(a), sorted(b));
            if ka != kb {
                return Err(format!("{at}: keys {ka:?} against {kb:?}"));
            }
            a.iter()
                .try_for_each(|(k, v)| same(v, &b[k], &format!("{at}.{k}")))
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .try_for_each(|(i, (x, y))| same(x, y, &format!("{at}[{i}]"))),
        _ if got == want => Ok(()),
        _ => Err(format!("{at}: {got} against {want}")),
    }
}

/// The import as scripts/vendor-check.py writes its reading: per (brick, row) calls, kernels,
/// time and counters, and the kernels outside every range; with passes (spec/imports.md "Pass
/// ranges"), each (brick, row)'s calls by phase and the passes.
pub fn summary(imp: &Imported) -> Value {
    let p = &imp.profile;
    let passes = p.passes.summary().count > 0;
    let mut bricks: Vec<(String, (u8, usize), Value)> = Vec::new();
    for c in &imp.profile.hardware_counters {
        let b = p
            .brick(&c.brick)
            .expect("every counted brick is in the profile");
        let rows: Vec<_> = b.rows.iter().filter(|r| r.row == c.row).collect();
        assert!(!rows.is_empty(), "every counted row is in the profile");
        let mut r = BrickStats::default();
        rows.iter().for_each(|row| r.merge(&row.stats));
        assert_eq!(r.summary().count, c.calls, "{} {:?}", c.brick, c.row);
        assert_eq!(r.summary().total_ns, c.time_ns);
        let (row, key) = match c.row {
            RowKey::Layer(n) => (json!(n), (0, n)),
            RowKey::Model => (json!("model"), (1, 0)),
            other => panic!("unexpected row {other:?}"),
        };
        let mut cell = json!({
            "brick": c.brick,
            "row": row,
            "calls": c.calls,
            "kernels": c.kernels,
            "total_ns": r.summary().total_ns,
            "min_ns": r.summary().min_ns,
            "max_ns": r.summary().max_ns,
            "dram_bytes": c.dram_bytes,
            "flops": c.flops,
            "per_call": {
                "dram_bytes": c.rates().bytes_per_call,
                "flops": c.rates().flops_per_call,
                "gbps": c.rates().gbps,
                "gflops": c.rates().gflops,
                "flop_per_byte": c.rates().intensity,
            },
        });
        if passes {
            let phases: serde_json::Map<String, Value> = rows
                .iter()
                .map(|r| (r.phase.to_string(), json!(r.stats.summary().count)))
                .collect();
            cell["phases"] = Value::Object(phases);
        }
        bricks.push((c.brick.clone(), key, cell));
    }
    bricks.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let outside = p.meta.outside_bricks.unwrap_or_default();
    let mut out = json!({
        "timeline": p.meta.timeline.name(),
        "layers": p.meta.layers,
        "bricks": bricks.into_iter().map(|b| b.2).collect::<Vec<_>>(),
        "outside": {"kernels": outside.kernels, "busy_ns": outside.busy_ns},
    });
    if passes {
        // A profile whose passes are all unspecified keeps no per-phase list.
        let phases: serde_json::Map<String, Value> = if p.phase_passes.is_empty() {
            [("unspecified".to_string(), &p.passes)]
                .into_iter()
                .collect::<Vec<_>>()
        } else {
            p.phase_passes
                .iter()
                .map(|pp| (pp.phase.to_string(), &pp.stats))
                .collect()
        }
        .into_iter()
        .map(|(phase, s)| {
            (
                phase,
                json!({"count": s.summary().count, "total_ns": s.summary().total_ns}),
            )
        })
        .collect();
        out["passes"] = json!({
            "count": p.passes.summary().count,
            "total_ns": p.passes.summary().total_ns,
            "min_ns": p.passes.summary().min_ns,
            "max_ns": p.passes.summary().max_ns,
            "phases": phases,
        });
    }
    out
}
