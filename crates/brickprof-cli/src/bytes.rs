//! `--capture-budget BYTES`, parsed the same way by both binaries: brickprof-candle includes
//! this file by path (`#[path]`), so there is one copy.

/// `--capture-budget BYTES`: a byte count, `1048576`, `64k`, `256M`, `2G` (powers of 1024;
/// `KiB`, `MiB`, `GiB` too).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a byte count (e.g. 1048576, 64k, 256M, 2G)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => return Err(format!("unknown unit {other:?} in {s:?} (k, M, G)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?} is too many bytes"))
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn byte_counts_parse() {
        // (the examples of `brickprof::capture::parse_bytes`, public before 0.4.0)
        assert_eq!(parse_bytes("64k"), Ok(65536));
        assert_eq!(parse_bytes("2MiB"), Ok(2 << 20));
        assert!(parse_bytes("lots").is_err());
    }
}
