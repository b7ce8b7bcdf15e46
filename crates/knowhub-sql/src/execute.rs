//! Running a [`SafeQuery`] within the policy's budgets.
//!
//! Validation already guarantees a single, rewritten, read-only query; this layer does not rely
//! on it. The connection is read-only and hardened (see `conn.rs`), and SQLite's authorizer
//! denies, while the statement is prepared, everything except SELECT, recursive CTEs, reads of
//! the tables the validator resolved (or of tables read *through* a view), and calls of
//! allowlisted functions, so a query that somehow slipped through validation still cannot
//! write, attach, run a pragma or read an object it did not name. A progress handler stops the
//! run at the deadline ([`SqlError::Timeout`]); rows are capped at `policy.limit` and the total
//! size of the values at `policy.max_result_bytes` (then `truncated` is set).

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Connection, ErrorCode, params_from_iter};

use crate::conn::{is_internal, open_read_only, set_deadline};
use crate::error::{Result, SqlError};
use crate::functions::is_allowed_function;
use crate::policy::Policy;
use crate::validate::SafeQuery;
use crate::value::{QueryResult, Value};

/// Runs `query` against the SQLite file at `db_path` (opened read-only) under `policy`.
pub fn execute(
    db_path: impl AsRef<Path>,
    query: &SafeQuery,
    policy: &Policy,
) -> Result<QueryResult> {
    policy.check()?;
    let started = Instant::now();
    let mut conn = open_read_only(db_path.as_ref())?;
    let denied = Arc::new(Mutex::new(None::<String>));
    install_authorizer(&mut conn, query.readable(), Arc::clone(&denied))?;
    let fired = set_deadline(&mut conn, policy.timeout)?;
    let outcome = run(&conn, query, policy, started);
    drop(conn);
    match outcome {
        Ok(r) => Ok(r),
        Err(_) if fired.load(Ordering::Relaxed) => Err(SqlError::Timeout(policy.timeout)),
        Err(SqlError::Sqlite(e)) => {
            let reason = denied.lock().ok().and_then(|mut g| g.take());
            match (reason, e) {
                (Some(reason), _) => Err(SqlError::Denied(reason)),
                (None, rusqlite::Error::SqliteFailure(f, _))
                    if f.code == ErrorCode::OperationInterrupted =>
                {
                    Err(SqlError::Timeout(policy.timeout))
                }
                (None, e) => Err(SqlError::Sqlite(e)),
            }
        }
        Err(other) => Err(other),
    }
}

fn run(
    conn: &Connection,
    query: &SafeQuery,
    policy: &Policy,
    started: Instant,
) -> Result<QueryResult> {
    let mut stmt = conn.prepare(query.sql())?;
    if !stmt.readonly() {
        return Err(SqlError::Denied("the statement would write".into()));
    }
    let columns: Vec<String> = stmt.column_names().map(String::from).collect();
    let width = columns.len();
    let mut bytes: usize = columns.iter().map(String::len).sum();
    let mut out = Vec::new();
    let mut truncated = false;
    let mut rows = stmt.query(params_from_iter(query.params()))?;
    while let Some(row) = rows.next()? {
        if out.len() >= policy.limit {
            truncated = true;
            break;
        }
        let mut values = Vec::with_capacity(width);
        let mut size = 0;
        for i in 0..width {
            let v = Value::from_sqlite(row.get_ref(i)?);
            size += v.size();
            values.push(v);
        }
        if bytes + size > policy.max_result_bytes {
            truncated = true;
            break;
        }
        bytes += size;
        out.push(values);
    }
    if query.limit_forced() && out.len() >= policy.limit {
        truncated = true;
    }
    Ok(QueryResult {
        columns,
        rows: out,
        truncated,
        elapsed: started.elapsed(),
    })
}

/// Denies everything but reads and allowlisted functions; the first denial's reason is kept
/// for the error message.
fn install_authorizer<'q>(
    conn: &mut Connection,
    readable: impl Iterator<Item = &'q str>,
    denied: Arc<Mutex<Option<String>>>,
) -> Result<()> {
    let allowed: Vec<String> = readable.map(str::to_ascii_lowercase).collect();
    conn.authorizer(Some(move |ctx: AuthContext<'_>| {
        let reason = refusal(&ctx, &allowed);
        match reason {
            None => Authorization::Allow,
            Some(reason) => {
                if let Ok(mut slot) = denied.lock() {
                    slot.get_or_insert(reason);
                }
                Authorization::Deny
            }
        }
    }))?;
    Ok(())
}

/// Why the authorizer denies `ctx`, or `None` to allow it.
fn refusal(ctx: &AuthContext<'_>, allowed_tables: &[String]) -> Option<String> {
    match ctx.action {
        AuthAction::Select | AuthAction::Recursive => None,
        AuthAction::Function { function_name } => (!is_allowed_function(function_name))
            .then(|| format!("the function `{function_name}` is not allowed")),
        AuthAction::Read { table_name, .. } => {
            if is_internal(table_name) {
                Some(format!("`{table_name}` is an internal SQLite object"))
            } else if ctx.database_name.is_some_and(|d| d != "main") {
                Some(format!(
                    "reading from the database `{:?}`",
                    ctx.database_name
                ))
            } else if ctx.accessor.is_some()
                || allowed_tables.contains(&table_name.to_ascii_lowercase())
            {
                None
            } else {
                Some(format!(
                    "reading `{table_name}`, which the query did not name"
                ))
            }
        }
        AuthAction::Insert { table_name }
        | AuthAction::Delete { table_name }
        | AuthAction::Update { table_name, .. } => Some(format!("writing to `{table_name}`")),
        AuthAction::Pragma { pragma_name, .. } => Some(format!("PRAGMA {pragma_name}")),
        AuthAction::Attach { .. } => Some("ATTACH".into()),
        AuthAction::Detach { .. } => Some("DETACH".into()),
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            Some("transaction control".into())
        }
        other => Some(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use super::*;

    fn fixture() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.sqlite");
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
             INSERT INTO t SELECT i, 'name ' || i, x'0102' FROM n;
             CREATE TABLE other (secret TEXT); INSERT INTO other VALUES ('s');
             CREATE VIEW v AS SELECT id, name FROM t WHERE id <= 3;",
        )
        .unwrap();
        (dir, path)
    }

    #[test]
    fn authorizer_stops_what_validation_would_have_refused() {
        let (_dir, path) = fixture();
        let policy = Policy::default();
        for (sql, tables, want) in [
            ("INSERT INTO t (name) VALUES ('x')", &["t"][..], "writing"),
            ("DELETE FROM t", &["t"], ""),
            ("PRAGMA writable_schema = 1", &[], "PRAGMA"),
            ("SELECT * FROM sqlite_master", &[], "internal"),
            ("SELECT * FROM other", &["t"], "did not name"),
            ("SELECT count(*) FROM other", &["t"], "did not name"),
            ("SELECT * FROM pragma_table_info('t')", &[], "internal"),
            ("SELECT load_extension('x')", &[], "load_extension"),
            ("SELECT randomblob(10)", &[], "randomblob"),
            ("SELECT sqlite_version()", &[], "sqlite_version"),
            ("ATTACH DATABASE 'x.db' AS x", &[], ""),
            ("BEGIN", &[], ""),
        ] {
            let q = SafeQuery::unchecked(sql, tables);
            let err = execute(&path, &q, &policy).unwrap_err();
            assert!(
                err.is_refusal() || matches!(err, SqlError::Sqlite(_)),
                "{sql}: {err}"
            );
            assert!(err.to_string().contains(want), "{sql}: {err}");
        }
        // Reads through a view the query named are fine.
        let q = SafeQuery::unchecked("SELECT name FROM v", &["v"]);
        assert_eq!(execute(&path, &q, &policy).unwrap().rows.len(), 3);
    }

    #[test]
    fn caps_rows_bytes_and_time() {
        let (_dir, path) = fixture();
        let policy = Policy {
            limit: 10,
            ..Policy::default()
        };
        let q = SafeQuery::unchecked("SELECT id, name, data FROM t", &["t"]);
        let r = execute(&path, &q, &policy).unwrap();
        assert_eq!(r.rows.len(), 10);
        assert!(r.truncated);
        assert_eq!(r.columns, ["id", "name", "data"]);
        assert_eq!(r.rows[0][2], Value::Blob { blob_bytes: 2 });

        let small = Policy {
            max_result_bytes: 100,
            ..Policy::default()
        };
        let r = execute(&path, &q, &small).unwrap();
        assert!(r.truncated);
        assert!(!r.rows.is_empty() && r.rows.len() < 10);

        let quick = Policy {
            timeout: Duration::from_millis(200),
            ..Policy::default()
        };
        let q = SafeQuery::unchecked("SELECT count(*) FROM t a, t b, t c, t d", &["t"]);
        let started = Instant::now();
        let err = execute(&path, &q, &quick).unwrap_err();
        assert!(matches!(err, SqlError::Timeout(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}
