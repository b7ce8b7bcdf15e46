//! Opening a database file so that nothing we run through the connection can change it.
//!
//! Layers, each sufficient on its own for writes: the file is opened `SQLITE_OPEN_READ_ONLY`;
//! `PRAGMA query_only` is on; `SQLITE_DBCONFIG_DEFENSIVE` blocks the schema-corrupting tricks
//! (`writable_schema`, direct shadow-table writes); attachments are limited to zero. The path
//! is made absolute first: the bundled SQLite is built with `SQLITE_USE_URI`, so a name starting
//! with `file:` would otherwise be read as a URI (`?mode=rwc`, `?vfs=…`), and an absolute path
//! never starts that way. `trusted_schema` is off, so views and triggers stored in the file
//! cannot call functions with side effects, and the double-quoted-string misfeature is off, so
//! `"x"` is always an identifier, exactly as the validator parsed it.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::limits::Limit;
use rusqlite::{Connection, OpenFlags};

use crate::error::{Result, SqlError};

/// Cap on any one string or blob a query may build or read (`SQLITE_LIMIT_LENGTH`).
const MAX_VALUE_BYTES: i32 = 16 * 1024 * 1024;
/// Cap on the SQL text SQLite accepts (`SQLITE_LIMIT_SQL_LENGTH`).
pub(crate) const MAX_SQL_BYTES: usize = 100 * 1024;

/// Opens `path` read-only with the hardening described in the module docs.
pub(crate) fn open_read_only(path: &Path) -> Result<Connection> {
    let open_err = |reason: String| SqlError::Open {
        path: path.display().to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| open_err(e.to_string()))?;
    if !meta.is_file() {
        return Err(open_err("not a regular file".into()));
    }
    let abs = std::path::absolute(path).map_err(|e| open_err(e.to_string()))?;
    // No SQLITE_OPEN_URI, no SQLITE_OPEN_CREATE: a plain, existing file, read-only.
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&abs, flags).map_err(|e| open_err(e.to_string()))?;
    harden(&conn).map_err(|e| open_err(e.to_string()))?;
    Ok(conn)
}

fn harden(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DQS_DML, false)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DQS_DDL, false)?;
    conn.pragma_update(None, "query_only", true)?;
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)?;
    conn.set_limit(
        Limit::SQLITE_LIMIT_SQL_LENGTH,
        i32::try_from(MAX_SQL_BYTES).unwrap_or(i32::MAX),
    )?;
    conn.set_limit(Limit::SQLITE_LIMIT_EXPR_DEPTH, 200)?;
    conn.set_limit(Limit::SQLITE_LIMIT_COMPOUND_SELECT, 64)?;
    conn.set_limit(Limit::SQLITE_LIMIT_VDBE_OP, 250_000)?;
    Ok(())
}

/// Installs a progress handler that interrupts whatever runs once `budget` has passed from now;
/// the returned flag tells afterwards whether it fired.
pub(crate) fn set_deadline(
    conn: &mut Connection,
    budget: Duration,
) -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let fired = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&fired);
    let deadline = Instant::now() + budget;
    // About a thousand VM instructions between checks: microseconds apart, cheap to test.
    conn.progress_handler(
        1000,
        Some(move || {
            if Instant::now() >= deadline {
                flag.store(true, Ordering::Relaxed);
                true
            } else {
                false
            }
        }),
    )?;
    Ok(fired)
}

/// Removes the progress handler.
pub(crate) fn clear_deadline(conn: &mut Connection) -> Result<()> {
    conn.progress_handler(0, None::<fn() -> bool>)?;
    Ok(())
}

/// SQLite's own objects: `sqlite_master`/`sqlite_schema`/`sqlite_stat1`/… and the `pragma_*`
/// table-valued functions.
pub(crate) fn is_internal(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.starts_with("sqlite_") || lower.starts_with("pragma_")
}

/// Quotes an identifier for SQLite (`"` doubled inside).
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn read_only_connection_refuses_writes_and_uri_tricks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.sqlite");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
                .unwrap();
        }
        let conn = open_read_only(&path).unwrap();
        let query_only: bool = conn
            .pragma_query_value(None, "query_only", |r| r.get(0))
            .unwrap();
        assert!(query_only);
        for sql in [
            "INSERT INTO t VALUES (2)",
            "CREATE TABLE u(y)",
            "PRAGMA query_only = OFF; INSERT INTO t VALUES (3)",
            "ATTACH DATABASE ':memory:' AS m",
        ] {
            assert!(conn.execute_batch(sql).is_err(), "{sql} should fail");
        }
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);

        // A `file:` name is an ordinary (missing) file, not a URI that could create one.
        let uri = Path::new("file:evil.sqlite?mode=rwc");
        assert!(open_read_only(uri).is_err());
        assert!(!Path::new("file:evil.sqlite?mode=rwc").exists());
        assert!(
            open_read_only(dir.path()).is_err(),
            "a directory is refused"
        );
    }

    #[test]
    fn quoting() {
        for (input, want) in [
            ("a", "\"a\""),
            ("we\"ird", "\"we\"\"ird\""),
            ("客户", "\"客户\""),
        ] {
            assert_eq!(quote_ident(input), want);
        }
    }
}
