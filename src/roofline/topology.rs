//! This CPU's cache topology ([`CacheTopology`]): the data and unified caches of CPU 0 by level,
//! read from Linux sysfs (`/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}`), or
//! preset sizes, labelled as such, where sysfs has none. The working-set sweeps of
//! [`super::peaks`] are sized from it (spec/work-accounting.md "Measured CPU peaks").

use std::path::Path;

use super::MemLevel;

/// Where the cache sizes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TopologySource {
    /// Read from sysfs.
    Sysfs,
    /// Not readable here: typical sizes (32 KiB L1, 1 MiB L2, 32 MiB LLC), labelled "preset".
    Preset,
}

/// The data caches of one core, innermost first: (level, bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CacheTopology {
    /// (level, capacity in bytes), innermost first, capacities growing; the last is the LLC.
    pub(crate) caches: Vec<(MemLevel, u64)>,
    /// Where the sizes come from.
    pub(crate) source: TopologySource,
}

/// Sizes used when sysfs tells nothing.
const PRESET: [(MemLevel, u64); 3] = [
    (MemLevel::L1, 32 << 10),
    (MemLevel::L2, 1 << 20),
    (MemLevel::Llc, 32 << 20),
];

impl CacheTopology {
    /// This machine's caches (sysfs), else the preset.
    pub(crate) fn detect() -> CacheTopology {
        Self::from_sysfs(Path::new("/sys/devices/system/cpu/cpu0/cache")).unwrap_or_else(|| {
            CacheTopology {
                caches: PRESET.to_vec(),
                source: TopologySource::Preset,
            }
        })
    }

    /// Read `dir/index*/{level,type,size}`: data and unified caches only (instruction caches
    /// hold no data), one per level. `None` when nothing usable is there.
    pub(crate) fn from_sysfs(dir: &Path) -> Option<CacheTopology> {
        let mut found: Vec<(u32, u64)> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| {
                let p = e.ok()?.path();
                let read = |f: &str| std::fs::read_to_string(p.join(f)).ok();
                let kind = read("type")?;
                if kind.trim() == "Instruction" {
                    return None;
                }
                let level: u32 = read("level")?.trim().parse().ok()?;
                Some((level, parse_size(read("size")?.trim())?))
            })
            .filter(|&(level, size)| (1..=4).contains(&level) && size > 0)
            .collect();
        found.sort_unstable();
        found.dedup_by_key(|c| c.0);
        Self::named(&found)
    }

    /// Name levels by number, the last one "LLC"; drop a level that does not grow.
    fn named(found: &[(u32, u64)]) -> Option<CacheTopology> {
        let mut caches: Vec<(MemLevel, u64)> = Vec::new();
        for &(level, size) in found {
            if caches.last().is_some_and(|&(_, s)| s >= size) {
                continue;
            }
            let name = match level {
                1 => MemLevel::L1,
                2 => MemLevel::L2,
                _ => MemLevel::L3,
            };
            caches.push((name, size));
        }
        if let Some(last) = caches.last_mut() {
            if last.0 != MemLevel::L1 {
                last.0 = MemLevel::Llc;
            }
        }
        (!caches.is_empty()).then_some(CacheTopology {
            caches,
            source: TopologySource::Sysfs,
        })
    }

    /// The last-level cache's size, if there is a cache.
    pub(crate) fn llc_bytes(&self) -> Option<u64> {
        self.caches.last().map(|c| c.1)
    }
}

/// "107520K", "32M", "512" (bytes).
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_size("107520K"), Some(107520 << 10));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("lots"), None);
    }

    #[test]
    fn sysfs_levels_are_named_and_the_last_is_the_llc() {
        // spec/work-accounting.md "Measured CPU peaks": a fake sysfs with an instruction cache.
        let dir = tempfile::tempdir().unwrap();
        for (i, (level, kind, size)) in [
            (1, "Data", "32K"),
            (1, "Instruction", "32K"),
            (2, "Unified", "512K"),
            (3, "Unified", "32768K"),
        ]
        .iter()
        .enumerate()
        {
            let d = dir.path().join(format!("index{i}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        let t = CacheTopology::from_sysfs(dir.path()).unwrap();
        assert_eq!(
            t.caches,
            vec![
                (MemLevel::L1, 32 << 10),
                (MemLevel::L2, 512 << 10),
                (MemLevel::Llc, 32 << 20)
            ]
        );
        assert_eq!(t.source, TopologySource::Sysfs);
        assert!(CacheTopology::from_sysfs(&dir.path().join("none")).is_none());
    }
}
