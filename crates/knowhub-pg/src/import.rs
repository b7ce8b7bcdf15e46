//! A local SQLite knowledge base copied into an empty team database (`knowhub migrate`).
//!
//! The SQLite file is opened read-only and read inside one transaction, so the copy is one
//! consistent snapshot even while the app or the daemon keeps writing. Everything is written
//! in one PostgreSQL transaction: the target is checked to be empty, every table is streamed
//! with `COPY` (text format; chunk vectors in binary as `halfvec`), ids are kept as they are
//! (citations, feedback evidence and summaries refer to them), sequences are advanced past
//! the highest id SQLite ever handed out, every document is appended to the change log, and
//! the row counts of both sides are compared before the commit. A mismatch rolls everything
//! back.
//!
//! Spreadsheet sheets are read from `tables.sqlite` beside the store (attached read-only, in the
//! same read transaction) and stored under the same table names.
//!
//! Not copied: the index bookkeeping of the local full-text index (`index_state`,
//! `index_tombstones`), which replicas replace by following the change log.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use half::f16;
use pgvector::HalfVector;
use postgres::Transaction;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::{CHANGE_LOG_LOCK, Database, PgError, Result};

/// What [`import_sqlite`] may do beyond copying.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The data directory's root key hash (64 hex digits): stored in the team database when it
    /// has no root key yet, so the root key keeps signing in.
    pub root_key_hash: Option<String>,
}

/// One table (or one model's vectors) as counted on both sides after the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountCheck {
    pub domain: &'static str,
    pub table: String,
    pub sqlite: u64,
    pub postgres: u64,
}

impl CountCheck {
    /// Whether the counts agree.
    pub fn matches(&self) -> bool {
        self.sqlite == self.postgres
    }

    /// `ok` or `MISMATCH`.
    pub fn status(&self) -> &'static str {
        if self.sqlite == self.postgres {
            "ok"
        } else {
            "MISMATCH"
        }
    }
}

/// What was copied, counted on both sides, and what the operator should know.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportReport {
    pub checks: Vec<CountCheck>,
    /// Sentences about what was adapted or left behind.
    pub notes: Vec<String>,
}

impl ImportReport {
    /// The checks whose counts differ.
    pub fn mismatches(&self) -> impl Iterator<Item = &CountCheck> {
        self.checks.iter().filter(|c| !c.matches())
    }

    /// The mismatches in one line (`chunks: 10 in SQLite, 9 in PostgreSQL; …`).
    pub fn mismatch_summary(&self) -> String {
        self.mismatches()
            .map(|c| {
                format!(
                    "{}: {} in SQLite, {} in PostgreSQL",
                    c.table, c.sqlite, c.postgres
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// How a column's SQLite value is written to PostgreSQL.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Int,
    /// Text, and JSON kept as text (PostgreSQL parses it into `jsonb` where the column is).
    Text,
    /// SQLite's 0/1 integer to `boolean`.
    Bool,
    Bytes,
    Real,
}

#[derive(Debug, Clone, Copy)]
struct Column {
    /// The PostgreSQL column.
    name: &'static str,
    /// The SQLite expression that yields it (usually the column of the same name).
    read: &'static str,
    kind: Kind,
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        read: name,
        kind,
    }
}

/// A table copied row for row.
#[derive(Debug)]
struct Table {
    domain: &'static str,
    name: &'static str,
    columns: &'static [Column],
    /// The integer key a sequence (or identity) generates, advanced past the copied ids.
    serial: Option<&'static str>,
    /// What SQLite reads the rows from, when not the table itself.
    from: Option<&'static str>,
}

use Kind::{Bool, Bytes, Int, Real, Text};

/// Interrupted (`running`) jobs: the first per path is queued again unless the path is queued
/// already, the others are closed, as the SQLite store's own restart does.
const JOBS_FROM: &str = "(SELECT j.*, CASE WHEN j.state <> 'running' THEN NULL
        WHEN EXISTS (SELECT 1 FROM jobs q WHERE q.path = j.path
            AND (q.state = 'queued' OR (q.state = 'running' AND q.id < j.id))) THEN 'superseded'
        ELSE 'requeued' END AS fate
    FROM jobs j) AS jobs";

/// Every copied table, parents before children (foreign keys are checked per statement).
const TABLES: &[Table] = &[
    Table {
        domain: "documents",
        name: "sources",
        columns: &[
            col("id", Int),
            col("kind", Text),
            col("root_path", Text),
            col("name", Text),
            col("owner", Text),
            col("watched", Bool),
            col("rules", Text),
            col("created_at", Int),
        ],
        serial: Some("id"),
        from: None,
    },
    Table {
        domain: "documents",
        name: "folders",
        columns: &[
            col("id", Int),
            col("source_id", Int),
            col("rel_path", Text),
            col("parent_id", Int),
        ],
        serial: Some("id"),
        from: None,
    },
    Table {
        domain: "documents",
        name: "documents",
        columns: &[
            col("id", Int),
            col("source_id", Int),
            col("folder_id", Int),
            col("path", Text),
            col("kind", Text),
            col("content_hash", Text),
            col("size", Int),
            col("mtime_ns", Int),
            col("title", Text),
            col("status", Text),
            col("error_code", Text),
            col("error", Text),
            col("page_count", Int),
            col("encoding", Text),
            col("chunk_count", Int),
            // Replicas index what the change log names; a local "pending" marker would never
            // be cleared there.
            Column {
                name: "index_state",
                read: "'clean'",
                kind: Text,
            },
            col("owner", Text),
            col("created_at", Int),
            col("updated_at", Int),
            col("parent_id", Int),
            col("meta", Text),
        ],
        serial: Some("id"),
        from: None,
    },
    Table {
        domain: "documents",
        name: "document_text",
        columns: &[col("document_id", Int), col("text", Text)],
        serial: None,
        from: None,
    },
    Table {
        domain: "documents",
        name: "chunks",
        columns: &[
            col("id", Int),
            col("document_id", Int),
            col("ordinal", Int),
            col("text", Text),
            col("heading_path", Text),
            col("page_start", Int),
            col("page_end", Int),
            col("char_start", Int),
            col("char_end", Int),
            col("token_count", Int),
            col("text_hash", Text),
        ],
        serial: Some("id"),
        from: None,
    },
    Table {
        domain: "documents",
        name: "ingest_journal",
        columns: &[
            col("id", Int),
            col("run_id", Text),
            col("path", Text),
            col("document_id", Int),
            col("action", Text),
            col("detail", Text),
            col("duration_ms", Int),
            col("at", Int),
        ],
        serial: Some("id"),
        from: None,
    },
    Table {
        domain: "identity",
        name: "users",
        columns: &[
            col("id", Text),
            col("display_name", Text),
            col("role", Text),
            col("created_at", Int),
            col("removed_at", Int),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "identity",
        name: "memberships",
        columns: &[
            col("user_id", Text),
            col("kind", Text),
            col("group_id", Text),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "identity",
        name: "api_keys",
        columns: &[
            col("hash", Text),
            col("user_id", Text),
            col("created_at", Int),
            col("label", Text),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "identity",
        name: "acl_entries",
        columns: &[
            col("source_id", Int),
            col("kind", Text),
            col("path", Text),
            col("scopes", Text),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "groups",
        name: "group_spaces",
        columns: &[
            col("id", Text),
            col("space", Text),
            col("name", Text),
            col("kind", Text),
            col("created_by", Text),
            col("created_at", Int),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "groups",
        name: "group_members",
        columns: &[
            col("group_id", Text),
            col("user_id", Text),
            col("agent_id", Text),
            col("role", Text),
            col("joined_at", Int),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "crawls",
        name: "crawls",
        columns: &[
            col("source_id", Int),
            col("url", Text),
            col("settings", Text),
            col("last_run", Int),
            col("last_report", Text),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "crawls",
        name: "crawl_pages",
        columns: &[
            col("source_id", Int),
            col("url", Text),
            col("path", Text),
            col("etag", Text),
            col("last_modified", Text),
            col("content_hash", Text),
            col("extension", Text),
            col("fetched_at", Int),
            col("anchors", Text),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "audit",
        name: "audit_log",
        columns: &[
            col("id", Int),
            col("at", Int),
            col("trace_id", Text),
            col("user_id", Text),
            col("agent_id", Text),
            col("role", Text),
            col("action", Text),
            col("target", Text),
            col("snapshot", Text),
            col("outcome", Text),
            col("allowed", Int),
            col("filtered", Int),
            col("evidence", Text),
        ],
        serial: Some("id"),
        from: None,
    },
    Table {
        domain: "jobs",
        name: "jobs",
        columns: &[
            col("id", Int),
            col("path", Text),
            col("owner", Text),
            col("priority", Int),
            Column {
                name: "state",
                read: "CASE fate WHEN 'requeued' THEN 'queued' WHEN 'superseded' THEN 'cancelled' \
                       ELSE state END",
                kind: Text,
            },
            col("attempts", Int),
            Column {
                name: "not_before",
                read: "CASE fate WHEN 'requeued' THEN 0 ELSE not_before END",
                kind: Int,
            },
            Column {
                name: "outcome",
                read: "CASE fate WHEN 'superseded' THEN 'superseded' ELSE outcome END",
                kind: Text,
            },
            col("error", Text),
            col("created_at", Int),
            col("updated_at", Int),
        ],
        serial: Some("id"),
        from: Some(JOBS_FROM),
    },
    Table {
        domain: "chat",
        name: "chat_sessions",
        columns: &[
            col("id", Text),
            col("user_id", Text),
            col("title", Text),
            col("created_at", Int),
            col("updated_at", Int),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "chat",
        name: "chat_turns",
        columns: &[
            col("id", Int),
            col("session_id", Text),
            col("question", Text),
            col("standalone", Text),
            col("answer", Text),
            col("trace_id", Text),
            col("stop_reason", Text),
            col("created_at", Int),
        ],
        serial: Some("id"),
        from: None,
    },
    Table {
        domain: "chat",
        name: "chat_summaries",
        columns: &[
            col("session_id", Text),
            col("through_turn", Int),
            col("summary", Text),
            col("by_model", Text),
            col("updated_at", Int),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "chat",
        name: "agent_traces",
        columns: &[
            col("id", Text),
            col("session_id", Text),
            col("user_id", Text),
            col("question", Text),
            col("route", Text),
            col("stop_reason", Text),
            col("total_ms", Int),
            col("prompt_tokens", Int),
            col("completion_tokens", Int),
            col("state", Text),
            col("created_at", Int),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "chat",
        name: "answer_feedback",
        columns: &[
            col("id", Int),
            col("trace_id", Text),
            col("user_id", Text),
            col("helpful", Bool),
            col("note", Text),
            col("evidence_ids", Text),
            col("created_at", Int),
        ],
        serial: Some("id"),
        from: None,
    },
    Table {
        domain: "chat",
        name: "sql_sources",
        columns: &[
            col("name", Text),
            col("path", Text),
            col("scopes", Text),
            col("tenant_column", Text),
            col("owner", Text),
            col("created_at", Int),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "knowledge",
        name: "knowledge_items",
        columns: &[
            col("seq", Int),
            col("id", Text),
            col("message_id", Text),
            col("types", Text),
            col("task", Text),
            col("tags", Text),
            col("scopes", Text),
            col("owner", Text),
            col("content", Text),
            col("resource_ids", Text),
            col("source", Text),
            col("score", Int),
            col("helpful", Int),
            col("harmful", Int),
            col("confidence", Real),
            col("helpful_history", Text),
            col("harmful_history", Text),
            col("rev", Int),
            col("created_at", Int),
            col("updated_at", Int),
        ],
        serial: Some("seq"),
        from: None,
    },
    Table {
        domain: "knowledge",
        name: "knowledge_versions",
        columns: &[
            col("id", Int),
            col("item_seq", Int),
            col("reason", Text),
            col("task", Text),
            col("content", Text),
            col("snapshot", Text),
            col("created_at", Int),
        ],
        serial: Some("id"),
        from: None,
    },
    Table {
        domain: "knowledge",
        name: "knowledge_vectors",
        columns: &[
            col("item_seq", Int),
            col("model", Text),
            col("rev", Int),
            col("dim", Int),
            col("vector", Bytes),
        ],
        serial: None,
        from: None,
    },
    Table {
        domain: "resources",
        name: "resources",
        columns: &[
            col("seq", Int),
            col("id", Text),
            col("content_type", Text),
            col("title", Text),
            col("description", Text),
            col("owner", Text),
            col("scopes", Text),
            col("tags", Text),
            col("metadata", Text),
            col("body", Text),
            col("secure_key_id", Text),
            col("secure_nonce", Bytes),
            col("secure_ciphertext", Bytes),
            col("expires_at", Int),
            col("created_at", Int),
            col("updated_at", Int),
        ],
        serial: Some("seq"),
        from: None,
    },
];

/// Key of the advisory lock an import holds ("import"): a second import waits, then finds the
/// database no longer empty.
const IMPORT_LOCK: i64 = 0x0000_696d_706f_7274;

/// Copies the SQLite store at `store_path` into `db`, which must hold no documents, users or
/// other records yet; returns the per-table counts of both sides, all equal.
///
/// Refuses a non-empty target; a count that differs after the copy rolls it back
/// ([`PgError::ImportMismatch`]).
pub fn import_sqlite(
    db: &Database,
    store_path: &Path,
    options: &ImportOptions,
) -> Result<ImportReport> {
    let mut src = open_source(store_path)?;
    // One read transaction: every table comes from the same snapshot.
    let src = src.transaction()?;

    let mut client = db.client()?;
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&IMPORT_LOCK])?;
    ensure_empty(&mut tx)?;

    let mut report = ImportReport::default();
    for table in TABLES {
        copy_table(&mut tx, &src, table)?;
        // Vectors after the last table of documents, as the report lists them.
        if table.name == "ingest_journal" {
            copy_vectors(&mut tx, db, &src)?;
        }
        if let Some(column) = table.serial {
            advance_sequence(&mut tx, &src, table.name, column)?;
        }
    }
    let paused: bool = src.query_row("SELECT paused FROM queue_control WHERE id = 1", [], |r| {
        r.get::<_, i64>(0).map(|p| p != 0)
    })?;
    tx.execute(
        "UPDATE queue_control SET paused = $1 WHERE id = 1",
        &[&paused],
    )?;
    copy_sheets(&mut tx, &src)?;
    log_every_document(&mut tx)?;

    report.checks = count_checks(&mut tx, &src)?;
    if report.mismatches().next().is_some() {
        // Dropping the transaction rolls the copy back.
        return Err(PgError::ImportMismatch(Box::new(report)));
    }
    report.notes = notes(&src)?;
    report.notes.extend(copy_originals(&mut tx, &src)?);
    if let Some(hash) = &options.root_key_hash {
        report.notes.push(store_root_key(&mut tx, hash)?);
    }
    tx.commit()?;
    // The planner chooses between a model's HNSW index and the per-document index by these
    // estimates, stale after a bulk load until autovacuum comes by.
    if let Err(e) = client.batch_execute("ANALYZE chunk_vectors; ANALYZE chunks; ANALYZE documents")
    {
        report.notes.push(format!(
            "ANALYZE after the copy failed ({e}): searches may be slow until autovacuum runs"
        ));
    }
    Ok(report)
}

/// Opens the store read-only, checking it has every table the copy reads (so an older store
/// fails with advice instead of a bare SQL error).
fn open_source(path: &Path) -> Result<Connection> {
    if !path.is_file() {
        return Err(PgError::Invalid(format!(
            "no local store at {}",
            path.display()
        )));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // Attached databases are opened with the main one's flags: read-only too. A store that
    // never had a spreadsheet may have no tables file; an empty one stands in.
    let tables = path.with_file_name("tables.sqlite");
    let tables = if tables.is_file() {
        tables.to_string_lossy().into_owned()
    } else {
        String::new()
    };
    conn.execute("ATTACH DATABASE ?1 AS sheets", [tables])?;
    let needed =
        TABLES
            .iter()
            .map(|t| t.name)
            .chain(["chunk_vectors", "sheet_tables", "queue_control"]);
    for table in needed {
        let found = conn
            .query_row(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |_| Ok(()),
            )
            .optional()?;
        if found.is_none() {
            return Err(PgError::Invalid(format!(
                "{} has no table '{table}': it was written by an older KnowHub; open it once \
                 with this version (e.g. `knowhub status`) to bring it up to date, then migrate",
                path.display()
            )));
        }
    }
    Ok(conn)
}

fn sqlite_count(src: &Connection, table: &str) -> Result<u64> {
    let n: i64 = src.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

fn pg_count(tx: &mut Transaction<'_>, sql: &str) -> Result<u64> {
    let n: i64 = tx.query_one(sql, &[])?.get(0);
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Refuses a target that holds any record: ids are copied as they are and would collide, and
/// nothing there may be merged or overwritten by accident.
fn ensure_empty(tx: &mut Transaction<'_>) -> Result<()> {
    let mut held = Vec::new();
    for table in
        TABLES
            .iter()
            .map(|t| t.name)
            .chain(["chunk_vectors", "document_changes", "document_files"])
    {
        let n = pg_count(tx, &format!("SELECT count(*) FROM {table}"))?;
        if n > 0 {
            held.push(format!("{n} row(s) in {table}"));
        }
    }
    if held.is_empty() {
        return Ok(());
    }
    Err(PgError::NotEmpty(format!(
        "{} (migrate into a new, empty database; nothing was changed)",
        held.join(", ")
    )))
}

/// Streams one table with `COPY … FROM STDIN` in text format.
fn copy_table(tx: &mut Transaction<'_>, src: &Connection, table: &Table) -> Result<u64> {
    let reads: Vec<&str> = table.columns.iter().map(|c| c.read).collect();
    let names: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
    let mut stmt = src.prepare(&format!(
        "SELECT {} FROM {} ORDER BY 1",
        reads.join(", "),
        table.from.unwrap_or(table.name)
    ))?;
    let mut rows = stmt.query([])?;
    let mut sink = tx.copy_in(&format!(
        "COPY {} ({}) FROM STDIN",
        table.name,
        names.join(", ")
    ))?;
    let mut line = String::new();
    let mut n = 0u64;
    while let Some(row) = rows.next()? {
        line.clear();
        for (i, column) in table.columns.iter().enumerate() {
            if i > 0 {
                line.push('\t');
            }
            field(&mut line, row, i, column.kind)
                .map_err(|e| in_column(e, table.name, column.name))?;
        }
        line.push('\n');
        sink.write_all(line.as_bytes())?;
        n += 1;
    }
    sink.finish()?;
    Ok(n)
}

/// Names the table and column a bad value came from.
fn in_column(e: PgError, table: &str, column: &str) -> PgError {
    match e {
        PgError::Invalid(m) => PgError::Invalid(format!("{table}.{column}: {m}")),
        PgError::Local(e) => PgError::Invalid(format!("{table}.{column} in the local store: {e}")),
        other => other,
    }
}

/// Appends one value in `COPY`'s text format (`\N` for NULL, backslash escapes).
fn field(out: &mut String, row: &rusqlite::Row<'_>, i: usize, kind: Kind) -> Result<()> {
    const NULL: &str = "\\N";
    match kind {
        Int => match row.get::<_, Option<i64>>(i)? {
            Some(v) => {
                let _ = write!(out, "{v}");
            }
            None => out.push_str(NULL),
        },
        Bool => match row.get::<_, Option<i64>>(i)? {
            Some(v) => out.push(if v != 0 { 't' } else { 'f' }),
            None => out.push_str(NULL),
        },
        Real => match row.get::<_, Option<f64>>(i)? {
            // The shortest text that reads back as the same double.
            Some(v) => {
                let _ = write!(out, "{v}");
            }
            None => out.push_str(NULL),
        },
        Bytes => match row.get::<_, Option<Vec<u8>>>(i)? {
            Some(v) => {
                // bytea's hex input `\x…`, its backslash escaped for COPY.
                out.push_str("\\\\x");
                for b in v {
                    let _ = write!(out, "{b:02x}");
                }
            }
            None => out.push_str(NULL),
        },
        Text => match row.get::<_, Option<String>>(i)? {
            Some(s) => {
                if s.contains('\0') {
                    return Err(PgError::Invalid(
                        "a NUL character, which PostgreSQL text cannot hold".into(),
                    ));
                }
                for c in s.chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        c => out.push(c),
                    }
                }
            }
            None => out.push_str(NULL),
        },
    }
    Ok(())
}

/// Registers each model of the local vectors and streams the vectors in binary `COPY`, the
/// stored f16 values unchanged.
fn copy_vectors(tx: &mut Transaction<'_>, db: &Database, src: &Connection) -> Result<()> {
    let mut models = HashMap::new();
    {
        let mut stmt = src.prepare(
            "SELECT model, min(dim), max(dim) FROM chunk_vectors GROUP BY model ORDER BY model",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let (name, low, high): (String, i64, i64) = (r.get(0)?, r.get(1)?, r.get(2)?);
            if low != high {
                return Err(PgError::Invalid(format!(
                    "the local vectors of model '{name}' have {low} to {high} dimensions \
                     (one model has one dimension): re-embed with `knowhub reindex` first"
                )));
            }
            let dim = i32::try_from(low)
                .ok()
                .filter(|d| (1..=4000).contains(d))
                .ok_or_else(|| {
                    PgError::Invalid(format!(
                        "model '{name}' has {low} dimensions; the team database keeps 1 to 4000"
                    ))
                })?;
            let id = register_model(tx, &name, dim)?;
            models.insert(name, (id, dim));
        }
    }
    if models.is_empty() {
        return Ok(());
    }
    let halfvec = crate::vectors::halfvec_type(tx, db)?;
    let sink =
        tx.copy_in("COPY chunk_vectors (chunk_id, model_id, doc_id, embedding) FROM STDIN BINARY")?;
    let mut writer = BinaryCopyInWriter::new(sink, &[Type::INT8, Type::INT4, Type::INT8, halfvec]);
    let mut stmt = src.prepare(
        "SELECT model, chunk_id, document_id, vector FROM chunk_vectors ORDER BY model, chunk_id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let model = r.get_ref(0)?.as_str().unwrap_or_default();
        let (chunk, doc): (i64, i64) = (r.get(1)?, r.get(2)?);
        let (model_id, dim) = *models
            .get(model)
            .ok_or_else(|| PgError::Corrupt(format!("vector of chunk {chunk}: no model")))?;
        let bytes: Vec<u8> = r.get(3)?;
        if bytes.len() != dim as usize * 2 {
            return Err(PgError::Corrupt(format!(
                "the local vector of chunk {chunk} has {} bytes for {dim} dimensions",
                bytes.len()
            )));
        }
        let values: Vec<f16> = bytes
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]))
            .collect();
        if values.iter().any(|v| !v.is_finite()) {
            return Err(PgError::Invalid(format!(
                "the local vector of chunk {chunk} holds NaN or infinity: re-embed with \
                 `knowhub reindex` first"
            )));
        }
        writer.write(&[&chunk, &model_id, &doc, &HalfVector::from(values)])?;
    }
    writer.finish()?;
    Ok(())
}

/// The model's row in `vector_models`, created with `dim` (one a replica registered already
/// must have the same dimension).
fn register_model(tx: &mut Transaction<'_>, name: &str, dim: i32) -> Result<i32> {
    let row = tx.query_one(
        "WITH new AS (
             INSERT INTO vector_models (name, dim) VALUES ($1, $2)
             ON CONFLICT (name) DO NOTHING RETURNING id, dim)
         SELECT id, dim FROM new UNION ALL SELECT id, dim FROM vector_models WHERE name = $1
         LIMIT 1",
        &[&name, &dim],
    )?;
    let registered: i32 = row.get(1);
    if registered != dim {
        return Err(PgError::Invalid(format!(
            "model '{name}' is registered with {registered} dimensions in the team database, \
             the local vectors have {dim}"
        )));
    }
    Ok(row.get(0))
}

/// Moves the sequence of `table.column` past every id SQLite ever handed out (deleted rows
/// included: chunk and document ids are never reused, or an old citation would point at new
/// text).
fn advance_sequence(
    tx: &mut Transaction<'_>,
    src: &Connection,
    table: &str,
    column: &str,
) -> Result<()> {
    let used: i64 = src.query_row(
        &format!(
            "SELECT max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?1), 0),
                        COALESCE((SELECT max({column}) FROM {table}), 0))"
        ),
        [table],
        |r| r.get(0),
    )?;
    tx.query_one(
        "SELECT setval(q.s, GREATEST(q.v, 1), q.v > 0)
         FROM (SELECT s, GREATEST($3::bigint, COALESCE(pg_sequence_last_value(s), 0)) AS v
               FROM (SELECT pg_get_serial_sequence($1, $2)::regclass AS s) seq) q",
        &[&table, &column, &used],
    )?;
    Ok(())
}

/// Appends every document to the change log, so each replica's full-text index takes it in.
fn log_every_document(tx: &mut Transaction<'_>) -> Result<()> {
    // Sequence order must be commit order (see `documents.rs`).
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CHANGE_LOG_LOCK])?;
    tx.execute(
        "INSERT INTO document_changes (seq, document_id)
         SELECT nextval('document_change_seq'), id FROM (SELECT id FROM documents ORDER BY id) d",
        &[],
    )?;
    crate::documents::notify_changes(tx)?;
    Ok(())
}

/// Each table's rows on both sides, the vectors per model, and the change log.
fn count_checks(tx: &mut Transaction<'_>, src: &Connection) -> Result<Vec<CountCheck>> {
    let mut checks = Vec::new();
    for table in TABLES {
        checks.push(CountCheck {
            domain: table.domain,
            table: table.name.to_owned(),
            sqlite: sqlite_count(src, table.name)?,
            postgres: pg_count(tx, &format!("SELECT count(*) FROM {}", table.name))?,
        });
        if table.name == "ingest_journal" {
            checks.push(CountCheck {
                domain: "documents",
                table: "document_changes (documents logged)".into(),
                sqlite: sqlite_count(src, "documents")?,
                postgres: pg_count(
                    tx,
                    "SELECT count(*) FROM documents d
                     WHERE EXISTS (SELECT 1 FROM document_changes c WHERE c.document_id = d.id)",
                )?,
            });
            checks.extend(vector_checks(tx, src)?);
        }
    }
    checks.push(CountCheck {
        domain: "sheets",
        table: "sheet_tables".into(),
        sqlite: sqlite_count(src, "sheet_tables")?,
        postgres: pg_count(tx, "SELECT count(*) FROM sheet_tables")?,
    });
    checks.push(CountCheck {
        domain: "sheets",
        table: "sheet rows".into(),
        sqlite: sheet_rows_in_sqlite(src)?,
        postgres: pg_count(
            tx,
            "SELECT COALESCE(sum(row_count), 0)::BIGINT FROM sheet_rows",
        )?,
    });
    Ok(checks)
}

fn vector_checks(tx: &mut Transaction<'_>, src: &Connection) -> Result<Vec<CountCheck>> {
    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    {
        let mut stmt = src.prepare("SELECT model, count(*) FROM chunk_vectors GROUP BY model")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let n: i64 = r.get(1)?;
            counts.entry(r.get(0)?).or_default().0 = u64::try_from(n).unwrap_or(0);
        }
    }
    for row in tx.query(
        "SELECT m.name, count(*) FROM chunk_vectors v JOIN vector_models m ON m.id = v.model_id
         GROUP BY m.name",
        &[],
    )? {
        let n: i64 = row.get(1);
        counts.entry(row.get(0)).or_default().1 = u64::try_from(n).unwrap_or(0);
    }
    let all = CountCheck {
        domain: "vectors",
        table: "chunk_vectors".into(),
        sqlite: counts.values().map(|c| c.0).sum(),
        postgres: pg_count(tx, "SELECT count(*) FROM chunk_vectors")?,
    };
    let per_model = counts
        .into_iter()
        .map(|(model, (sqlite, postgres))| CountCheck {
            domain: "vectors",
            table: format!("chunk_vectors ({model})"),
            sqlite,
            postgres,
        });
    Ok(std::iter::once(all).chain(per_model).collect())
}

/// Copies every spreadsheet sheet, by document in their order, under the same table names.
fn copy_sheets(tx: &mut Transaction<'_>, src: &Connection) -> Result<()> {
    let records = sheet_records(src)?;
    let mut position = (0, 0);
    for (doc, record) in records {
        position = if position.0 == doc {
            (doc, position.1 + 1)
        } else {
            (doc, 0)
        };
        let table = knowhub_store::read_sheet_table(src, "sheets", &record)
            .map_err(|e| PgError::Invalid(format!("spreadsheet table {}: {e}", record.sql_name)))?;
        crate::sheets::insert_sheet(tx, doc, position.1, &record.sql_name, &table)?;
    }
    Ok(())
}

fn sheet_records(src: &Connection) -> Result<Vec<(i64, knowhub_store::SheetTableRecord)>> {
    let mut stmt = src.prepare(
        "SELECT document_id, sheet_name, sql_name, columns, row_count FROM sheet_tables
         ORDER BY document_id, id",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, i64>(4)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (doc, sheet_name, sql_name, columns, row_count) = row?;
        let columns = serde_json::from_str(&columns)
            .map_err(|e| PgError::Corrupt(format!("columns of {sql_name}: {e}")))?;
        out.push((
            doc,
            knowhub_store::SheetTableRecord {
                sheet_name,
                sql_name,
                columns,
                row_count: u64::try_from(row_count).unwrap_or(0),
            },
        ));
    }
    Ok(out)
}

/// The rows of every listed sheet, counted in the tables themselves.
fn sheet_rows_in_sqlite(src: &Connection) -> Result<u64> {
    let mut total = 0;
    for (_, record) in sheet_records(src)? {
        let n: i64 = src.query_row(
            &format!(
                "SELECT count(*) FROM sheets.\"{}\"",
                record.sql_name.replace('"', "\"\"")
            ),
            [],
            |r| r.get(0),
        )?;
        total += u64::try_from(n).unwrap_or(0);
    }
    Ok(total)
}

/// What the operator should know: what was adapted, left behind, or needs the same files.
fn notes(src: &Connection) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let count = |sql: &str| -> Result<i64> { Ok(src.query_row(sql, [], |r| r.get(0))?) };
    let requeued = count("SELECT count(*) FROM jobs WHERE state = 'running'")?;
    if requeued > 0 {
        notes.push(format!(
            "{requeued} interrupted (running) job(s) were queued again, or closed where their \
             path was queued already"
        ));
    }
    let sealed = count("SELECT count(*) FROM resources WHERE secure_key_id IS NOT NULL")?;
    if sealed > 0 {
        notes.push(format!(
            "{sealed} resource(s) hold sealed secrets, copied as they are: the team servers \
             need this data directory's secret key (secret.key) to open them"
        ));
    }
    let sql_sources = count("SELECT count(*) FROM sql_sources")?;
    if sql_sources > 0 {
        notes.push(format!(
            "{sql_sources} SQL source(s) name files on this machine: the team servers need \
             them at the same paths"
        ));
    }
    Ok(notes)
}

/// Copies into the database the original file of every document whose file is still on this
/// machine as it was parsed (same size and content hash), so that every replica can serve it;
/// says how many were not.
fn copy_originals(tx: &mut Transaction<'_>, src: &Connection) -> Result<Option<String>> {
    let mut stmt = src.prepare(
        "SELECT id, path, content_hash, size FROM documents
         WHERE content_hash IS NOT NULL AND parent_id IS NULL",
    )?;
    let documents = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut missing = 0;
    for (id, path, hash, size) in &documents {
        let unchanged = std::fs::metadata(path)
            .is_ok_and(|m| m.is_file() && i64::try_from(m.len()).is_ok_and(|n| n == *size));
        let bytes = unchanged.then(|| std::fs::read(path).ok()).flatten();
        match bytes {
            Some(bytes) if blake3::hash(&bytes).to_hex().as_str() == hash => {
                crate::originals::keep(tx, *id, hash, Some(&bytes))?;
            }
            _ => missing += 1,
        }
    }
    // An attachment has no file of its own: the local store kept its bytes.
    let mut attached = src.prepare(
        "SELECT a.document_id, d.content_hash, a.data FROM attachment_files a
         JOIN documents d ON d.id = a.document_id WHERE d.content_hash IS NOT NULL",
    )?;
    let rows = attached.query_map([], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Vec<u8>>(2)?,
        ))
    })?;
    for row in rows {
        let (id, hash, bytes) = row?;
        crate::originals::keep(tx, id, &hash, Some(&bytes))?;
    }
    Ok((missing > 0).then(|| {
        format!(
            "{missing} of {} document(s) are no longer on this machine as they were ingested: \
             their original files were not copied, so only a replica that has them at the same \
             path serves their downloads (their text and passages are in the database)",
            documents.len()
        )
    }))
}

/// Stores the data directory's root key hash unless the team database has a root key; says
/// which.
fn store_root_key(tx: &mut Transaction<'_>, hash: &str) -> Result<String> {
    let stored = tx.execute(
        "INSERT INTO system_keys (name, hash) VALUES ('root', $1) ON CONFLICT (name) DO NOTHING",
        &[&hash],
    )?;
    Ok(if stored == 1 {
        "copied the root key's hash: the root key signs in to the team servers".to_owned()
    } else {
        "the team database keeps its own root key (this data directory's root key does not \
         sign in there)"
            .to_owned()
    })
}
