//! Vendor profilers' files read back as profiles (spec/imports.md): a kernel's innermost
//! range, named as brickprof names its vendor ranges (`L{layer}/{Brick}`, `{Brick}` outside
//! layers), says which brick it ran in; an [`Importer`] a format turns the file into an
//! [`Imported`]: a [`Profile`] whose timeline is named after the tool, with each brick's
//! hardware counters in it ([`BrickCounters`], `Profile::hardware_counters`; their measured
//! roofline: [`BrickCounters::roofline`]). Kernels outside every range are counted
//! in the profile's `meta.outside_bricks`, never dropped. Files are read as a stream: memory
//! grows with the bricks and threads, never with the kernels.
//!
//! ```no_run
//! let imported = brickprof::import::import("ncu.csv")?;
//! println!("{} bricks", imported.profile.bricks.len());
//! # Ok::<(), brickprof::Error>(())
//! ```

pub(crate) mod builder;
pub(crate) mod counters;
pub(crate) mod csv_records;
pub(crate) mod ncu_csv;
#[cfg(feature = "sqlite")]
pub(crate) mod nsys_sqlite;
pub(crate) mod pass_ranges;
#[cfg(feature = "sqlite")]
pub(crate) mod rocpd;
pub(crate) mod rocprof_csv;
pub(crate) mod sqlite_db;

use std::io::Read;
use std::path::{Path, PathBuf};

pub use crate::stats::brick_counters::{BrickCounters, CounterRates};
use ncu_csv::NcuCsv;
#[cfg(feature = "sqlite")]
use nsys_sqlite::NsysSqlite;
#[cfg(feature = "sqlite")]
use rocpd::Rocpd;
use rocprof_csv::RocprofCsv;

use crate::{Error, Profile, Result};

/// A vendor file read back.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The profile: bricks and layers from the ranges, the timeline named after the tool,
    /// kernels outside every range in `meta.outside_bricks`, each (brick, row)'s calls,
    /// kernels and counters in `hardware_counters` (in the profile's brick order).
    pub profile: Profile,
    /// Facts about the file worth saying (a file without ranges, call counts that the
    /// markers and the kernels disagree on).
    pub notes: Vec<String>,
}

/// One vendor file format, as [`importer_of`] finds it: one type a format (Nsight Compute raw
/// CSV, rocprofv3 CSV, and with the `sqlite` feature Nsight Systems and rocpd databases); a
/// new format is one new type, listed in `src/import/mod.rs`.
pub trait Importer: Sync {
    /// The format's name (`ncu-csv`).
    fn name(&self) -> &'static str;
    /// What it reads, for a user ("Nsight Compute raw CSV (ncu --nvtx --csv --page raw)").
    fn describe(&self) -> &'static str;
    /// Whether the file at `path`, whose first bytes are `head` (up to 64 KiB), is
    /// one of this format's.
    fn recognise(&self, path: &Path, head: &[u8]) -> bool;
    /// Read the file, streaming.
    fn read(&self, path: &Path) -> Result<Imported>;
    /// Every file reading `path` reads: `path`, and those found beside it (so that a command
    /// never writes over one of them).
    fn inputs(&self, path: &Path) -> Vec<PathBuf> {
        vec![path.to_path_buf()]
    }
}

/// How many bytes of a file [`Importer::recognise`] sees.
pub(crate) const HEAD_BYTES: usize = 1 << 16;

/// Every importer, in the order files are offered to them (the SQLite ones with the
/// `sqlite` feature).
pub(crate) fn importers() -> &'static [&'static dyn Importer] {
    #[cfg(feature = "sqlite")]
    return &[&NcuCsv, &RocprofCsv, &NsysSqlite, &Rocpd];
    #[cfg(not(feature = "sqlite"))]
    return &[&NcuCsv, &RocprofCsv];
}

/// The importer that reads the file at `path`, told from its first bytes: an error naming
/// the file when none does.
pub fn importer_of(path: &Path) -> Result<&'static dyn Importer> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    file.take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, e))?;
    if head.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::invalid(path, "the file is empty"));
    }
    importers()
        .iter()
        .copied()
        .find(|i| i.recognise(path, &head))
        .ok_or_else(|| {
            if sqlite_db::is_sqlite(&head) {
                return sqlite_db::unrecognised(path);
            }
            let known: Vec<&str> = importers().iter().map(|i| i.describe()).collect();
            Error::invalid(
                path,
                format!("not a file brickprof imports ({})", known.join("; ")),
            )
        })
}

/// Read the vendor file at `path` with the importer that recognises it.
pub fn import(path: impl AsRef<Path>) -> Result<Imported> {
    let path = path.as_ref();
    importer_of(path)?.read(path)
}

/// Open `path` for a streaming read.
pub(crate) fn open(path: &Path) -> Result<std::io::BufReader<std::fs::File>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(std::io::BufReader::with_capacity(1 << 16, file))
}

/// The first line of `head` (lossy), for recognising a header.
pub(crate) fn first_line(head: &[u8]) -> String {
    let end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    String::from_utf8_lossy(&head[..end]).into_owned()
}
