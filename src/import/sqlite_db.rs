//! What the SQLite importers share (spec/imports.md "Nsight Systems", "rocpd"): telling an
//! SQLite database by its first bytes, opening it read-only with a bounded page cache, the
//! names in its schema, and SQLite's faults turned into errors naming the file. Rows are
//! read by stepping statements, never collected: memory stays with SQLite's page cache.

use std::path::Path;
#[cfg(feature = "sqlite")]
use std::path::PathBuf;

use crate::Error;

/// The first 16 bytes of every SQLite 3 database.
pub(crate) const MAGIC: &[u8] = b"SQLite format 3\0";

/// Whether `head` opens an SQLite 3 database.
pub(crate) fn is_sqlite(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// The most names a schema may hold before it is taken as not a profiler's.
#[cfg(feature = "sqlite")]
const MAX_SCHEMA_NAMES: usize = 100_000;

/// An SQLite database opened read-only for one importer.
#[cfg(feature = "sqlite")]
pub(crate) struct Db {
    pub(crate) conn: rusqlite::Connection,
    path: PathBuf,
    format: &'static str,
}

#[cfg(feature = "sqlite")]
impl Db {
    /// Open `path` read-only (no journal or lock file is written) with page caches of at
    /// most 2 MiB, the database's and the one of the temporary files SQLite sorts and joins
    /// in, so that memory does not grow with the tables.
    pub(crate) fn open(path: &Path, format: &'static str) -> crate::Result<Db> {
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            rusqlite::Connection::open_with_flags(path, flags).map_err(|e| Error::Invalid {
                path: path.to_path_buf(),
                message: format!("{format}: cannot open the database: {}", sql_text(&e)),
            })?;
        let db = Db {
            conn,
            path: path.to_path_buf(),
            format,
        };
        db.conn
            .execute_batch(
                "PRAGMA cache_size = -2048; PRAGMA temp_store = FILE; \
                 PRAGMA temp.cache_size = -2048; PRAGMA query_only = 1;",
            )
            .map_err(|e| db.sql("setting up the read", e))?;
        Ok(db)
    }

    /// An error about the file: `{path}: {format}: {message}`.
    pub(crate) fn err(&self, message: impl std::fmt::Display) -> Error {
        Error::Invalid {
            path: self.path.clone(),
            message: format!("{}: {message}", self.format),
        }
    }

    /// SQLite's fault while doing `what` (a damaged page, a value of the wrong type).
    pub(crate) fn sql(&self, what: &str, e: rusqlite::Error) -> Error {
        self.err(format!("{what}: {}", sql_text(&e)))
    }

    /// Whether the schema has a table or view named `name`.
    pub(crate) fn has(&self, name: &str) -> crate::Result<bool> {
        self.conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1",
                [name],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| self.sql("reading the schema", e))
    }

    /// Fail naming every table or view of `names` the schema lacks.
    pub(crate) fn require(&self, names: &[&str]) -> crate::Result<()> {
        let mut missing = Vec::new();
        for n in names {
            if !self.has(n)? {
                missing.push(*n);
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(self.err(format!(
                "the database has no {} (not a complete export)",
                missing.join(", ")
            )))
        }
    }

    /// Whether table `table` has a column `column`.
    pub(crate) fn has_column(&self, table: &str, column: &str) -> crate::Result<bool> {
        self.conn
            .query_row(
                "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
                [table, column],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| self.sql("reading the schema", e))
    }
}

/// Whether `head` starts an SQLite database (at `path`) whose schema holds a table or view
/// whose name `wanted` accepts: how the SQLite importers recognise their files.
#[cfg(feature = "sqlite")]
pub(crate) fn has_schema_name(path: &Path, head: &[u8], wanted: impl Fn(&str) -> bool) -> bool {
    is_sqlite(head) && schema_names(path).is_ok_and(|names| names.iter().any(|n| wanted(n)))
}

/// The tables and views of the database at `path`, or why it cannot be read.
#[cfg(feature = "sqlite")]
pub(crate) fn schema_names(path: &Path) -> std::result::Result<Vec<String>, String> {
    use rusqlite::OpenFlags;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = rusqlite::Connection::open_with_flags(path, flags).map_err(|e| sql_text(&e))?;
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        .map_err(|e| sql_text(&e))?;
    let mut rows = stmt.query([]).map_err(|e| sql_text(&e))?;
    let mut names = Vec::new();
    while let Some(row) = rows.next().map_err(|e| sql_text(&e))? {
        if names.len() >= MAX_SCHEMA_NAMES {
            return Err(format!("more than {MAX_SCHEMA_NAMES} tables"));
        }
        names.push(row.get::<_, String>(0).map_err(|e| sql_text(&e))?);
    }
    Ok(names)
}

/// Why an SQLite database no importer recognised is not read: a damaged file, another
/// program's database, or (without the `sqlite` feature) a build that reads none.
pub(crate) fn unrecognised(path: &Path) -> Error {
    #[cfg(feature = "sqlite")]
    let message = match schema_names(path) {
        Err(why) => format!("an SQLite database that cannot be read ({why}): cut or damaged?"),
        Ok(_) => "an SQLite database, but neither an Nsight Systems export (no NVTX_EVENTS or CUPTI_ACTIVITY_KIND_KERNEL table) nor a rocprofv3 rocpd database (no rocpd_ tables)".to_string(),
    };
    #[cfg(not(feature = "sqlite"))]
    let message =
        "an SQLite database: this brickprof was built without the `sqlite` feature, which reads them"
            .to_string();
    Error::Invalid {
        path: path.to_path_buf(),
        message,
    }
}

/// SQLite's message, escaped and clipped (a mutated file's bytes may reach it).
#[cfg(feature = "sqlite")]
fn sql_text(e: &rusqlite::Error) -> String {
    let text = e.to_string();
    let mut end = text.len().min(200);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    crate::base::printable::printable(&text[..end]).to_string()
}
