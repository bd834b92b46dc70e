//! Vendor files read back as profiles (spec/imports.md): each fixture imports exactly what an
//! independent reading (scripts/vendor-check.py) finds, and bad files give errors naming the
//! file and the line, never a panic.

mod faults;
mod fixtures;
mod instruments;
mod passes;
mod sqlite;

use std::path::{Path, PathBuf};

use brickprof::import::Imported;
use brickprof::profile::{NamedRow, RowKey};
use brickprof::stats::BrickStats;
use serde_json::{json, Value};

/// A fixture of tests/fixtures/vendor/.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vendor")
        .join(name)
}

/// The import as scripts/vendor-check.py writes its reading: per (brick, row) calls, kernels,
/// time and counters, and the kernels outside every range; with passes (spec/imports.md "Pass
/// ranges"), each (brick, row)'s calls by phase and the passes.
pub fn summary(imp: &Imported) -> Value {
    let p = &imp.profile;
    let passes = p.passes.count() > 0;
    let mut bricks: Vec<(String, (u8, usize), Value)> = Vec::new();
    for c in &imp.counters {
        let b = p
            .brick(&c.brick)
            .expect("every counted brick is in the profile");
        let rows: Vec<_> = b.rows.iter().filter(|r| r.row == c.row).collect();
        assert!(!rows.is_empty(), "every counted row is in the profile");
        let mut r = BrickStats::new();
        rows.iter().for_each(|row| r.merge(&row.stats));
        assert_eq!(r.count(), c.calls, "{} {:?}", c.brick, c.row);
        assert_eq!(r.total_ns(), c.time_ns);
        let (row, key) = match c.row {
            RowKey::Layer(n) => (json!(n), (0, n)),
            RowKey::Named(NamedRow::Model) => (json!("model"), (1, 0)),
            RowKey::Named(other) => panic!("unexpected row {other:?}"),
        };
        let mut cell = json!({
            "brick": c.brick,
            "row": row,
            "calls": c.calls,
            "kernels": c.kernels,
            "total_ns": r.total_ns(),
            "min_ns": r.min_ns(),
            "max_ns": r.max_ns(),
            "dram_bytes": c.dram_bytes,
            "flops": c.flops,
        });
        if passes {
            let phases: serde_json::Map<String, Value> = rows
                .iter()
                .map(|r| (r.phase.to_string(), json!(r.stats.count())))
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
        .map(|(phase, s)| (phase, json!({"count": s.count(), "total_ns": s.total_ns()})))
        .collect();
        out["passes"] = json!({
            "count": p.passes.count(),
            "total_ns": p.passes.total_ns(),
            "min_ns": p.passes.min_ns(),
            "max_ns": p.passes.max_ns(),
            "phases": phases,
        });
    }
    out
}
