//! Vendor files read back as profiles (spec/imports.md): each fixture imports exactly what an
//! independent reading (scripts/vendor-check.py) finds, and bad files give errors naming the
//! file and the line, never a panic.

mod faults;
mod fixtures;
mod instruments;
mod sqlite;

use std::path::{Path, PathBuf};

use brickprof::import::Imported;
use brickprof::profile::RowKey;
use serde_json::{json, Value};

/// A fixture of tests/fixtures/vendor/.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/vendor")
        .join(name)
}

/// The import as scripts/vendor-check.py writes its reading: per (brick, row) calls, kernels,
/// time and counters, and the kernels outside every range.
pub fn summary(imp: &Imported) -> Value {
    let p = &imp.profile;
    let mut bricks: Vec<(String, (u8, usize), Value)> = Vec::new();
    for c in &imp.counters {
        let b = p
            .brick(&c.brick)
            .expect("every counted brick is in the profile");
        let r = b
            .rows
            .iter()
            .find(|r| r.row == c.row)
            .expect("every counted row is in the profile");
        assert_eq!(r.stats.count(), c.calls, "{} {:?}", c.brick, c.row);
        assert_eq!(r.stats.total_ns(), c.time_ns);
        let (row, key) = match c.row {
            RowKey::Layer(n) => (json!(n), (0, n)),
            RowKey::Model => (json!("model"), (1, 0)),
            other => panic!("unexpected row {other:?}"),
        };
        bricks.push((
            c.brick.clone(),
            key,
            json!({
                "brick": c.brick,
                "row": row,
                "calls": c.calls,
                "kernels": c.kernels,
                "total_ns": r.stats.total_ns(),
                "min_ns": r.stats.min_ns(),
                "max_ns": r.stats.max_ns(),
                "dram_bytes": c.dram_bytes,
                "flops": c.flops,
            }),
        ));
    }
    bricks.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let outside = p.meta.outside_bricks.unwrap_or_default();
    json!({
        "timeline": p.meta.timeline.name(),
        "layers": p.meta.layers,
        "bricks": bricks.into_iter().map(|b| b.2).collect::<Vec<_>>(),
        "outside": {"kernels": outside.kernels, "busy_ns": outside.busy_ns},
    })
}
