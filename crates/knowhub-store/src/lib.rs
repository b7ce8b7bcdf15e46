//! KnowHub's on-disk store: documents, chunks, sources and the ingestion journal in SQLite.
//!
//! The store is the source of truth. Derived indexes (full-text today, vectors later) are
//! rebuilt from it (chunk vectors are kept here too, tagged with the model that made them), and it records which documents the indexes have not caught up with yet
//! (`index_state = 'pending'` and `index_tombstones`): every write that changes what an index
//! must contain sets those markers *in the same transaction*, and the engine clears them only
//! after the index has committed. A crash in between leaves markers behind, which the engine
//! replays on start-up — so store and indexes always converge.
//!
//! Spreadsheet sheets are also kept as real typed tables in a second database file
//! (`tables.sqlite`, attached as `sheets`), so the SQL tool can later open it read-only without
//! seeing anything else.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let store = knowhub_store::Store::open(&dir.path().join("store.sqlite"), &dir.path().join("tables.sqlite"))?;
//! assert_eq!(store.stats()?.documents, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod access;
pub mod backend;
mod chat;
mod crawls;
mod filter;
mod groups;
mod identity;
mod jobs;
mod knowledge;
mod migrations;
mod records;
mod resources;
mod sheets;
mod vectors;

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params, params_from_iter};
use thiserror::Error;

pub use access::{AccessRow, AuditEntry, AuditRecord};
pub use backend::prelude;
pub use chat::{
    FeedbackRecord, SessionRecord, SessionSummary, SqlSourceRecord, TraceRecord, TurnRecord,
};
pub use crawls::{CrawlPageRecord, CrawlRecord, PageAddress, anchors_from_json, anchors_to_json};
pub use groups::{GroupMemberRecord, GroupSpaceCreation, GroupSpaceRecord};
pub use identity::{
    Group, UserRecord, acl_tree_from_rows, document_acl_path, memberships_from_rows,
};
pub use jobs::{ChunkMismatch, JobRecord, JobState, MovedDocument, NewJob, QueueCounts};
pub use knowledge::{
    FeedbackCase, KnowledgeEval, KnowledgeFilter, KnowledgeRecord, KnowledgeSource,
    KnowledgeVersion,
};
pub use records::*;
pub use resources::{ResourceFilter, ResourceRecord, SealedSecret};
pub use sheets::{ReplicaTable, SheetReplica, read_sheet_table, sheet_sql_name};
pub use vectors::{StoredVector, UnembeddedChunk};

/// Errors from the store.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
    /// A caller-supplied id, path or scope was rejected by the permission policy.
    #[error("invalid input: {0}")]
    Invalid(knowhub_authz::AuthzError),
    #[error(
        "the store was created by a different build: migration {step} of '{domain}' differs \
         (migrations are append-only)"
    )]
    MigrationEdited { domain: String, step: usize },
    /// The database server could not be reached or dropped the connection: retrying may work.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// An error the database server reported.
    #[error("database error: {0}")]
    Database(String),
    /// This backend does not keep this kind of data.
    #[error("not available with this store: {0}")]
    Unsupported(String),
    #[error("cannot open the store at {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The SQLite store. One writer per process; the engine serialises access.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
}

impl Store {
    /// Opens (creating if needed) the store and its tables database, applying migrations.
    pub fn open(db_path: &Path, tables_path: &Path) -> Result<Store> {
        let open_err = |source| StoreError::Open {
            path: db_path.display().to_string(),
            source,
        };
        let mut conn = Connection::open(db_path).map_err(open_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
        )
        .map_err(open_err)?;
        conn.execute(
            "ATTACH DATABASE ?1 AS sheets",
            params![tables_path.to_string_lossy()],
        )?;
        conn.execute_batch("PRAGMA sheets.journal_mode = WAL;")?;
        migrations::run(&mut conn)?;
        Ok(Store { conn })
    }

    /// Opens a throw-away in-memory store (tests, evaluation runs).
    pub fn open_in_memory() -> Result<Store> {
        let mut conn = Connection::open_in_memory()?;
        conn.execute_batch("PRAGMA foreign_keys = ON; ATTACH DATABASE ':memory:' AS sheets;")?;
        migrations::run(&mut conn)?;
        Ok(Store { conn })
    }

    // ----- sources and folders -------------------------------------------------------------

    /// The source for a watched/ingested folder, created on first use.
    pub fn folder_source(&mut self, root_path: &str, name: &str) -> Result<SourceId> {
        self.conn.execute(
            "INSERT INTO sources (kind, root_path, name, created_at) VALUES ('folder', ?1, ?2, ?3)
             ON CONFLICT (root_path) DO NOTHING",
            params![root_path, name, now_ms()],
        )?;
        let id = self.conn.query_row(
            "SELECT id FROM sources WHERE root_path = ?1",
            params![root_path],
            |r| r.get(0),
        )?;
        Ok(SourceId(id))
    }

    /// The single source that holds individually added files.
    pub fn files_source(&mut self) -> Result<SourceId> {
        if let Some(id) = self
            .conn
            .query_row("SELECT id FROM sources WHERE kind = 'files'", [], |r| {
                r.get(0)
            })
            .optional()?
        {
            return Ok(SourceId(id));
        }
        self.conn.execute(
            "INSERT INTO sources (kind, root_path, name, created_at) VALUES ('files', NULL, 'Files', ?1)",
            params![now_ms()],
        )?;
        Ok(SourceId(self.conn.last_insert_rowid()))
    }

    /// All sources.
    pub fn sources(&self) -> Result<Vec<SourceRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT s.id, s.kind, s.root_path, s.name,
                    (SELECT COUNT(*) FROM documents d WHERE d.source_id = s.id), s.owner,
                    s.watched, s.rules
             FROM sources s ORDER BY s.id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(SourceRecord {
                id: SourceId(r.get(0)?),
                kind: r.get(1)?,
                root_path: r.get(2)?,
                name: r.get(3)?,
                documents: r.get::<_, i64>(4)? as u64,
                owner: r.get(5)?,
                watched: r.get::<_, i64>(6)? != 0,
                rules: r.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Ensures the folder `rel_path` ('' = source root, '/'-separated) and its ancestors exist.
    pub fn ensure_folder(&mut self, source: SourceId, rel_path: &str) -> Result<FolderId> {
        let tx = self.conn.transaction()?;
        let mut parent: Option<i64> = None;
        let mut prefix = String::new();
        let parts: Vec<&str> = std::iter::once("")
            .chain(rel_path.split('/').filter(|p| !p.is_empty()))
            .collect();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(part);
            }
            tx.execute(
                "INSERT INTO folders (source_id, rel_path, parent_id) VALUES (?1, ?2, ?3)
                 ON CONFLICT (source_id, rel_path) DO NOTHING",
                params![source.0, prefix, parent],
            )?;
            parent = Some(tx.query_row(
                "SELECT id FROM folders WHERE source_id = ?1 AND rel_path = ?2",
                params![source.0, prefix],
                |r| r.get(0),
            )?);
        }
        tx.commit()?;
        parent
            .map(FolderId)
            .ok_or_else(|| StoreError::Corrupt("folder without id".into()))
    }

    // ----- documents ----------------------------------------------------------------------

    /// The document stored for `path`, if any.
    pub fn document_by_path(&self, path: &str) -> Result<Option<DocumentRecord>> {
        Ok(self
            .conn
            .query_row(
                &format!("{DOC_SELECT} WHERE path = ?1"),
                params![path],
                DocumentRecord::from_row,
            )
            .optional()?)
    }

    /// A document by id.
    pub fn document(&self, id: DocumentId) -> Result<Option<DocumentRecord>> {
        Ok(self
            .conn
            .query_row(
                &format!("{DOC_SELECT} WHERE id = ?1"),
                params![id.0],
                DocumentRecord::from_row,
            )
            .optional()?)
    }

    /// Documents whose path starts with `prefix` (a folder), or all documents for `None`.
    pub fn documents(&self, prefix: Option<&str>) -> Result<Vec<DocumentRecord>> {
        let mut out = Vec::new();
        match prefix {
            Some(prefix) => {
                let mut stmt = self.conn.prepare(&format!(
                    "{DOC_SELECT} WHERE path = ?1 OR substr(path, 1, length(?2)) = ?2 ORDER BY path"
                ))?;
                let dir = if prefix.ends_with(std::path::MAIN_SEPARATOR) {
                    prefix.to_string()
                } else {
                    format!("{prefix}{}", std::path::MAIN_SEPARATOR)
                };
                for row in stmt.query_map(params![prefix, dir], DocumentRecord::from_row)? {
                    out.push(row?);
                }
            }
            None => {
                let mut stmt = self.conn.prepare(&format!("{DOC_SELECT} ORDER BY path"))?;
                for row in stmt.query_map([], DocumentRecord::from_row)? {
                    out.push(row?);
                }
            }
        }
        Ok(out)
    }

    /// Stores a freshly parsed document, atomically replacing any previous version at the same
    /// path (same id, new chunks, new tables). The document is left `pending` for the indexes.
    pub fn replace_document(&mut self, doc: &NewDocument<'_>) -> Result<DocumentId> {
        let tx = self.conn.transaction()?;
        let now = now_ms();
        tx.execute(
            "INSERT INTO documents (source_id, folder_id, path, kind, content_hash, size, mtime_ns,
                 title, status, error_code, error, page_count, encoding, chunk_count, index_state,
                 created_at, updated_at, parent_id, meta)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, NULL, ?10, ?11, ?12, ?13, 'pending', ?14, ?14,
                 ?15, ?16)
             ON CONFLICT (path) DO UPDATE SET
                 source_id = excluded.source_id, folder_id = excluded.folder_id, kind = excluded.kind,
                 parent_id = excluded.parent_id, meta = excluded.meta,
                 content_hash = excluded.content_hash, size = excluded.size,
                 mtime_ns = excluded.mtime_ns, title = excluded.title, status = excluded.status,
                 error_code = NULL, error = excluded.error, page_count = excluded.page_count,
                 encoding = excluded.encoding, chunk_count = excluded.chunk_count,
                 index_state = 'pending', updated_at = excluded.updated_at",
            params![
                doc.source.0,
                doc.folder.map(|f| f.0),
                doc.path,
                doc.kind,
                doc.content_hash,
                doc.size as i64,
                doc.mtime_ns,
                doc.title,
                doc.status.as_str(),
                doc.note,
                doc.page_count,
                doc.encoding,
                doc.chunks.len() as i64,
                now,
                doc.parent.map(|p| p.0),
                records::meta_to_json(doc.meta),
            ],
        )?;
        let id: i64 = tx.query_row(
            "SELECT id FROM documents WHERE path = ?1",
            params![doc.path],
            |r| r.get(0),
        )?;
        tx.execute("DELETE FROM chunks WHERE document_id = ?1", params![id])?;
        tx.execute(
            "INSERT INTO document_text (document_id, text) VALUES (?1, ?2)
             ON CONFLICT (document_id) DO UPDATE SET text = excluded.text",
            params![id, doc.text],
        )?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO chunks (document_id, ordinal, text, heading_path, page_start, page_end,
                     char_start, char_end, token_count, text_hash)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            for c in doc.chunks {
                let heading = serde_json::to_string(&c.heading_path)
                    .map_err(|e| StoreError::Corrupt(e.to_string()))?;
                insert.execute(params![
                    id,
                    c.ordinal,
                    c.text,
                    heading,
                    c.page_start,
                    c.page_end,
                    c.char_start as i64,
                    c.char_end as i64,
                    c.token_count,
                    c.text_hash,
                ])?;
            }
        }
        sheets::drop_document_tables(&tx, id)?;
        for (n, table) in doc.tables.iter().enumerate() {
            sheets::create_document_table(&tx, id, n, table)?;
        }
        match (doc.parent, doc.original) {
            (Some(_), Some(bytes)) => tx.execute(
                "INSERT INTO attachment_files (document_id, data) VALUES (?1, ?2)
                 ON CONFLICT (document_id) DO UPDATE SET data = excluded.data",
                params![id, bytes],
            )?,
            _ => tx.execute(
                "DELETE FROM attachment_files WHERE document_id = ?1",
                params![id],
            )?,
        };
        tx.commit()?;
        Ok(DocumentId(id))
    }

    /// Records that a file could not be ingested.
    ///
    /// A document that already has indexed content keeps it (nothing stored is lost because a
    /// newer version of the file is broken); the failure is recorded beside it and its hash is
    /// left as it was, so the next ingest tries again.
    pub fn record_failure(&mut self, f: &FailedDocument<'_>) -> Result<DocumentId> {
        let now = now_ms();
        let existing = self.document_by_path(f.path)?;
        match existing {
            Some(doc) if doc.chunk_count > 0 => {
                self.conn.execute(
                    "UPDATE documents SET error_code = ?2, error = ?3, updated_at = ?4 WHERE id = ?1",
                    params![doc.id.0, f.code, format!("kept the previous version: {}", f.error), now],
                )?;
                Ok(doc.id)
            }
            _ => {
                self.conn.execute(
                    "INSERT INTO documents (source_id, folder_id, path, kind, content_hash, size,
                         mtime_ns, title, status, error_code, error, chunk_count, index_state,
                         created_at, updated_at, parent_id)
                     VALUES (?1, ?2, ?3, ?4, NULL, ?5, ?6, ?7, ?8, ?9, ?10, 0, 'clean', ?11, ?11,
                         ?12)
                     ON CONFLICT (path) DO UPDATE SET
                         kind = excluded.kind, content_hash = NULL, size = excluded.size,
                         mtime_ns = excluded.mtime_ns, status = excluded.status,
                         error_code = excluded.error_code, error = excluded.error,
                         updated_at = excluded.updated_at",
                    params![
                        f.source.0,
                        f.folder.map(|x| x.0),
                        f.path,
                        f.kind,
                        f.size as i64,
                        f.mtime_ns,
                        f.title,
                        f.status.as_str(),
                        f.code,
                        f.error,
                        now,
                        f.parent.map(|p| p.0),
                    ],
                )?;
                let id = self.conn.query_row(
                    "SELECT id FROM documents WHERE path = ?1",
                    params![f.path],
                    |r| r.get(0),
                )?;
                Ok(DocumentId(id))
            }
        }
    }

    /// Updates size/mtime of a document whose content did not change (same hash).
    pub fn touch(&mut self, id: DocumentId, size: u64, mtime_ns: Option<i64>) -> Result<()> {
        self.conn.execute(
            "UPDATE documents SET size = ?2, mtime_ns = ?3 WHERE id = ?1",
            params![id.0, size as i64, mtime_ns],
        )?;
        Ok(())
    }

    /// Removes a document, its attachments (and theirs), and everything derived from them;
    /// their index entries are tombstoned in the same transaction so the indexes drop them
    /// even across a crash.
    pub fn remove_document(&mut self, id: DocumentId) -> Result<()> {
        let tx = self.conn.transaction()?;
        let family: Vec<i64> = {
            let mut stmt = tx.prepare(
                "WITH RECURSIVE family(id) AS (
                     SELECT ?1 UNION SELECT d.id FROM documents d JOIN family f ON d.parent_id = f.id)
                 SELECT id FROM family",
            )?;
            let rows = stmt.query_map(params![id.0], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for member in family {
            tx.execute(
                "INSERT OR IGNORE INTO index_tombstones (document_id) VALUES (?1)",
                params![member],
            )?;
            sheets::drop_document_tables(&tx, member)?;
        }
        tx.execute("DELETE FROM documents WHERE id = ?1", params![id.0])?;
        tx.commit()?;
        Ok(())
    }

    // ----- index bookkeeping -------------------------------------------------------------

    /// Documents whose chunks the indexes have not committed yet.
    pub fn pending_index_documents(&self) -> Result<Vec<DocumentId>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM documents WHERE index_state = 'pending' ORDER BY id")?;
        let rows = stmt.query_map([], |r| r.get(0).map(DocumentId))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Marks documents as committed in every index.
    pub fn mark_indexed(&mut self, ids: &[DocumentId]) -> Result<()> {
        self.for_each_id(
            "UPDATE documents SET index_state = 'clean' WHERE id = ?1",
            ids,
        )
    }

    /// Removed documents whose index entries may still exist.
    pub fn tombstones(&self) -> Result<Vec<DocumentId>> {
        let mut stmt = self
            .conn
            .prepare("SELECT document_id FROM index_tombstones")?;
        let rows = stmt.query_map([], |r| r.get(0).map(DocumentId))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Forgets tombstones once the indexes have committed the deletions.
    pub fn clear_tombstones(&mut self, ids: &[DocumentId]) -> Result<()> {
        self.for_each_id("DELETE FROM index_tombstones WHERE document_id = ?1", ids)
    }

    /// Runs a one-parameter statement for every id, in one transaction.
    fn for_each_id(&mut self, sql: &str, ids: &[DocumentId]) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut stmt = tx.prepare(sql)?;
            for id in ids {
                stmt.execute(params![id.0])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Ids of documents that have chunks (what the indexes should contain).
    pub fn documents_with_chunks(&self) -> Result<Vec<DocumentId>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM documents WHERE chunk_count > 0 ORDER BY id")?;
        let rows = stmt.query_map([], |r| r.get(0).map(DocumentId))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Everything the full-text index needs for one document's chunks.
    pub fn index_entries(&self, id: DocumentId) -> Result<Vec<IndexEntry>> {
        let mut stmt = self.conn.prepare(
            "SELECT c.id, COALESCE(d.title, ''), c.heading_path, c.text
             FROM chunks c JOIN documents d ON d.id = c.document_id
             WHERE c.document_id = ?1 ORDER BY c.ordinal",
        )?;
        let rows = stmt.query_map(params![id.0], |r| {
            let heading: String = r.get(2)?;
            Ok(IndexEntry {
                chunk_id: ChunkId(r.get(0)?),
                document_id: id,
                title: r.get(1)?,
                heading: heading_from_json(&heading).join(" › "),
                text: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// A document's chunks, in order.
    pub fn document_chunks(&self, id: DocumentId) -> Result<Vec<ChunkRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT c.id, c.document_id, d.path, d.title, d.kind, c.ordinal, c.text, c.heading_path,
                    c.page_start, c.page_end, c.char_start, c.char_end, c.token_count, c.text_hash,
                    d.meta
             FROM chunks c JOIN documents d ON d.id = c.document_id
             WHERE c.document_id = ?1 ORDER BY c.ordinal",
        )?;
        let rows = stmt.query_map(params![id.0], ChunkRecord::from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The canonical extracted text of a document (what chunk offsets refer to).
    pub fn document_text(&self, id: DocumentId) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT text FROM document_text WHERE document_id = ?1",
                params![id.0],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The original file a store kept for a document: only an attachment's, which has no
    /// file of its own. A local store's files stay on this machine, where the engine opens
    /// them by path.
    pub fn original_file(&self, id: DocumentId) -> Result<Option<OriginalFile>> {
        let data: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT data FROM attachment_files WHERE document_id = ?1",
                params![id.0],
                |r| r.get(0),
            )
            .optional()?;
        Ok(data.map(|data| OriginalFile {
            len: data.len() as u64,
            reader: Box::new(std::io::Cursor::new(data)),
        }))
    }

    /// Full chunk records with their document, in the order of `ids` (missing ids skipped).
    pub fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<ChunkRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = vec!["?"; ids.len()].join(",");
        let mut stmt = self.conn.prepare(&format!(
            "SELECT c.id, c.document_id, d.path, d.title, d.kind, c.ordinal, c.text, c.heading_path,
                    c.page_start, c.page_end, c.char_start, c.char_end, c.token_count, c.text_hash,
                    d.meta
             FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id IN ({placeholders})"
        ))?;
        let mut by_id = std::collections::HashMap::new();
        for row in stmt.query_map(
            params_from_iter(ids.iter().map(|i| i.0)),
            ChunkRecord::from_row,
        )? {
            let row = row?;
            by_id.insert(row.chunk_id, row);
        }
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    /// Number of chunks stored.
    pub fn chunk_count(&self) -> Result<u64> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM chunks", [], |r| r.get::<_, i64>(0))?
            as u64)
    }

    // ----- status and journal ------------------------------------------------------------

    /// Counts for `knowhub status`.
    pub fn stats(&self) -> Result<StoreStats> {
        let (documents, bytes, pages): (i64, i64, i64) = self.conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(size), 0), COALESCE(SUM(page_count), 0) FROM documents",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let mut by_status = Vec::new();
        let mut stmt = self
            .conn
            .prepare("SELECT status, COUNT(*) FROM documents GROUP BY status ORDER BY status")?;
        for row in stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })? {
            by_status.push(row?);
        }
        let with_errors: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM documents WHERE status = 'indexed' AND error_code IS NOT NULL",
            [],
            |r| r.get(0),
        )?;
        let tables: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM sheet_tables", [], |r| r.get(0))?;
        let pending: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM documents WHERE index_state = 'pending'",
            [],
            |r| r.get(0),
        )?;
        Ok(StoreStats {
            documents: documents as u64,
            bytes: bytes as u64,
            pages: pages as u64,
            chunks: self.chunk_count()?,
            tables: tables as u64,
            sources: self.sources()?.len() as u64,
            by_status,
            stale_with_errors: with_errors as u64,
            pending_index: pending as u64,
        })
    }

    /// Documents that failed (or kept an older version because the newest failed).
    pub fn failures(&self, limit: usize) -> Result<Vec<DocumentRecord>> {
        let mut stmt = self.conn.prepare(&format!(
            "{DOC_SELECT} WHERE error_code IS NOT NULL OR status NOT IN ('indexed', 'empty')
             ORDER BY updated_at DESC, path LIMIT ?1"
        ))?;
        let rows = stmt.query_map(params![limit as i64], DocumentRecord::from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Appends an entry to the ingestion journal.
    pub fn journal(&mut self, entry: &JournalEntry<'_>) -> Result<()> {
        self.conn.execute(
            "INSERT INTO ingest_journal (run_id, path, document_id, action, detail, duration_ms, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                entry.run_id,
                entry.path,
                entry.document.map(|d| d.0),
                entry.action,
                entry.detail,
                entry.duration_ms.map(|d| d as i64),
                now_ms()
            ],
        )?;
        Ok(())
    }

    /// The typed tables stored for a document.
    /// Every spreadsheet table with the document it came from.
    pub fn all_sheet_tables(&self) -> Result<Vec<(DocumentId, SheetTableRecord)>> {
        let mut ids: Vec<i64> = {
            let mut stmt = self
                .conn
                .prepare("SELECT DISTINCT document_id FROM sheet_tables ORDER BY document_id")?;
            stmt.query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?
        };
        let mut out = Vec::new();
        for id in ids.drain(..) {
            for t in self.sheet_tables(DocumentId(id))? {
                out.push((DocumentId(id), t));
            }
        }
        Ok(out)
    }

    pub fn sheet_tables(&self, id: DocumentId) -> Result<Vec<SheetTableRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT sheet_name, sql_name, columns, row_count FROM sheet_tables
             WHERE document_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![id.0], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (sheet_name, sql_name, columns, row_count) = row?;
            let columns =
                serde_json::from_str(&columns).map_err(|e| StoreError::Corrupt(e.to_string()))?;
            out.push(SheetTableRecord {
                sheet_name,
                sql_name,
                columns,
                row_count: row_count as u64,
            });
        }
        Ok(out)
    }

    /// Counts rows of a stored sheet table (used by tests and status).
    pub fn sheet_table_rows(&self, sql_name: &str) -> Result<u64> {
        let n: i64 = self.conn.query_row(
            &format!(
                "SELECT COUNT(*) FROM sheets.{}",
                sheets::quote_ident(sql_name)
            ),
            [],
            |r| r.get(0),
        )?;
        Ok(n as u64)
    }

    /// Drops tables left in `tables.sqlite` by a crash between the two database files.
    ///
    /// Only the process that holds the write side may call this: another writer's commit can
    /// make a new table visible in `tables.sqlite` a moment before its row in the main file.
    pub fn drop_orphan_sheet_tables(&self) -> Result<usize> {
        let mut stmt = self.conn.prepare(
            "SELECT name FROM sheets.sqlite_master WHERE type = 'table'
             AND name NOT IN (SELECT sql_name FROM main.sheet_tables)",
        )?;
        let orphans: Vec<String> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        for name in &orphans {
            self.conn.execute_batch(&format!(
                "DROP TABLE IF EXISTS sheets.{}",
                sheets::quote_ident(name)
            ))?;
        }
        Ok(orphans.len())
    }
}

pub(crate) const DOC_SELECT: &str =
    "SELECT id, source_id, folder_id, path, kind, content_hash, size, mtime_ns,
    title, status, error_code, error, page_count, encoding, chunk_count, index_state, created_at,
    updated_at, owner, parent_id, meta FROM documents";

pub(crate) fn heading_from_json(s: &str) -> Vec<String> {
    serde_json::from_str(s).unwrap_or_default()
}

#[cfg(test)]
mod identity_tests;
#[cfg(test)]
mod tests;
