//! Sources, folders, documents and chunks in the team database, with an ordered change log.
//!
//! The same rows and rules as the SQLite store (a document keeps its id across re-ingests,
//! chunk ids are never reused), so the engine reads the same records from either. Every write
//! that changes what a search index must hold appends the document to `document_changes` in
//! the same transaction. Writers take an advisory lock just before they take a sequence number
//! and hold it until commit, so sequence order is commit order: a replica that has applied
//! everything up to `seq` never later finds an older change it skipped. Commits also
//! `NOTIFY knowhub_changes`, so replicas wake at once instead of waiting for their next poll.

use knowhub_store::{
    ChunkId, ChunkRecord, DocumentId, DocumentRecord, FolderId, IndexEntry, NewDocument, SourceId,
};
use postgres::Row;
use postgres::types::ToSql;

use crate::{Database, PgError, Result, now_ms};

/// The channel replicas listen on for new changes.
pub const CHANGES_CHANNEL: &str = "knowhub_changes";

/// Key of the advisory lock that orders change-log entries by commit ("changes"): whatever
/// appends to `document_changes` takes it (transaction-scoped) before `nextval`.
pub const CHANGE_LOG_LOCK: i64 = 0x0063_6861_6e67_6573;

/// One entry of the change log: document `document_id` changed (or went) at `seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub seq: i64,
    pub document_id: DocumentId,
}

/// The documents domain of a team database.
#[derive(Debug, Clone)]
pub struct PgDocuments {
    db: Database,
}

const DOC_SELECT: &str = "SELECT id, source_id, folder_id, path, kind, content_hash, size,
    mtime_ns, title, status, error_code, error, page_count, encoding, chunk_count, index_state,
    created_at, updated_at, owner FROM documents";

const CHUNK_SELECT: &str = "SELECT c.id, c.document_id, d.path, d.title, d.kind, c.ordinal,
    c.text, c.heading_path, c.page_start, c.page_end, c.char_start, c.char_end, c.token_count,
    c.text_hash FROM chunks c JOIN documents d ON d.id = c.document_id";

impl PgDocuments {
    pub fn new(db: &Database) -> PgDocuments {
        PgDocuments { db: db.clone() }
    }

    /// The source for a watched/ingested folder, created on first use.
    pub fn folder_source(&self, root_path: &str, name: &str) -> Result<SourceId> {
        let mut client = self.db.client()?;
        let row = client.query_one(
            "WITH new AS (
                 INSERT INTO sources (kind, root_path, name, created_at)
                 VALUES ('folder', $1, $2, $3) ON CONFLICT (root_path) DO NOTHING RETURNING id)
             SELECT id FROM new UNION ALL SELECT id FROM sources WHERE root_path = $1 LIMIT 1",
            &[&root_path, &name, &now_ms()],
        )?;
        Ok(SourceId(row.get(0)))
    }

    /// The single source that holds individually added files.
    pub fn files_source(&self) -> Result<SourceId> {
        let mut client = self.db.client()?;
        // A partial unique index makes "the single" hold across replicas.
        let row = client.query_one(
            "WITH new AS (
                 INSERT INTO sources (kind, root_path, name, created_at)
                 VALUES ('files', NULL, 'Files', $1) ON CONFLICT (kind) WHERE kind = 'files'
                 DO NOTHING RETURNING id)
             SELECT id FROM new UNION ALL SELECT id FROM sources WHERE kind = 'files' LIMIT 1",
            &[&now_ms()],
        )?;
        Ok(SourceId(row.get(0)))
    }

    /// Ensures the folder `rel_path` ('' = source root, '/'-separated) and its ancestors exist.
    pub fn ensure_folder(&self, source: SourceId, rel_path: &str) -> Result<FolderId> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        let mut parent: Option<i64> = None;
        let mut prefix = String::new();
        let parts = std::iter::once("").chain(rel_path.split('/').filter(|p| !p.is_empty()));
        for (i, part) in parts.enumerate() {
            if i > 0 {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(part);
            }
            let row = tx.query_one(
                "WITH new AS (
                     INSERT INTO folders (source_id, rel_path, parent_id) VALUES ($1, $2, $3)
                     ON CONFLICT (source_id, rel_path) DO NOTHING RETURNING id)
                 SELECT id FROM new UNION ALL
                 SELECT id FROM folders WHERE source_id = $1 AND rel_path = $2 LIMIT 1",
                &[&source.0, &prefix, &parent],
            )?;
            parent = Some(row.get(0));
        }
        tx.commit()?;
        parent
            .map(FolderId)
            .ok_or_else(|| PgError::Corrupt("folder without id".into()))
    }

    /// Stores a freshly parsed document, atomically replacing any previous version at the same
    /// path (same id, new chunks), and logs the change for the replicas' indexes.
    ///
    /// Spreadsheet tables are not kept in the team database yet: a document with tables is
    /// refused rather than stored without them.
    pub fn replace_document(&self, doc: &NewDocument<'_>) -> Result<DocumentId> {
        if !doc.tables.is_empty() {
            return Err(PgError::Unsupported(
                "spreadsheet tables are not kept in the team database yet".into(),
            ));
        }
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        let now = now_ms();
        let size = i64::try_from(doc.size).map_err(|_| PgError::Invalid("size".into()))?;
        let chunk_count = doc.chunks.len() as i64;
        let params: [&(dyn ToSql + Sync); 13] = [
            &doc.source.0,
            &doc.folder.map(|f| f.0),
            &doc.path,
            &doc.kind,
            &doc.content_hash,
            &size,
            &doc.mtime_ns,
            &doc.title,
            &doc.status.as_str(),
            &doc.note,
            &doc.page_count.map(i64::from),
            &doc.encoding,
            &chunk_count,
        ];
        let mut all: Vec<&(dyn ToSql + Sync)> = params.to_vec();
        all.push(&now);
        let id: i64 = tx
            .query_one(
                "INSERT INTO documents (source_id, folder_id, path, kind, content_hash, size,
                     mtime_ns, title, status, error_code, error, page_count, encoding,
                     chunk_count, index_state, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, $10, $11, $12, $13, 'clean',
                     $14, $14)
                 ON CONFLICT (path) DO UPDATE SET
                     source_id = excluded.source_id, folder_id = excluded.folder_id,
                     kind = excluded.kind, content_hash = excluded.content_hash,
                     size = excluded.size, mtime_ns = excluded.mtime_ns, title = excluded.title,
                     status = excluded.status, error_code = NULL, error = excluded.error,
                     page_count = excluded.page_count, encoding = excluded.encoding,
                     chunk_count = excluded.chunk_count, updated_at = excluded.updated_at
                 RETURNING id",
                &all,
            )?
            .get(0);
        tx.execute("DELETE FROM chunks WHERE document_id = $1", &[&id])?;
        tx.execute(
            "INSERT INTO document_text (document_id, text) VALUES ($1, $2)
             ON CONFLICT (document_id) DO UPDATE SET text = excluded.text",
            &[&id, &doc.text],
        )?;
        let insert = tx.prepare(
            "INSERT INTO chunks (document_id, ordinal, text, heading_path, page_start, page_end,
                 char_start, char_end, token_count, text_hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )?;
        for c in doc.chunks {
            let heading = serde_json::to_string(&c.heading_path)
                .map_err(|e| PgError::Corrupt(e.to_string()))?;
            tx.execute(
                &insert,
                &[
                    &id,
                    &i64::from(c.ordinal),
                    &c.text,
                    &heading,
                    &c.page_start.map(i64::from),
                    &c.page_end.map(i64::from),
                    &(c.char_start as i64),
                    &(c.char_end as i64),
                    &i64::from(c.token_count),
                    &c.text_hash,
                ],
            )?;
        }
        log_change(&mut tx, id)?;
        tx.commit()?;
        Ok(DocumentId(id))
    }

    /// Removes a document and everything derived from it, and logs the change.
    pub fn remove_document(&self, id: DocumentId) -> Result<()> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        if tx.execute("DELETE FROM documents WHERE id = $1", &[&id.0])? > 0 {
            log_change(&mut tx, id.0)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// A document by id.
    pub fn document(&self, id: DocumentId) -> Result<Option<DocumentRecord>> {
        let mut client = self.db.client()?;
        let row = client.query_opt(&format!("{DOC_SELECT} WHERE id = $1"), &[&id.0])?;
        row.map(|r| document_record(&r)).transpose()
    }

    /// The document stored for `path`, if any.
    pub fn document_by_path(&self, path: &str) -> Result<Option<DocumentRecord>> {
        let mut client = self.db.client()?;
        let row = client.query_opt(&format!("{DOC_SELECT} WHERE path = $1"), &[&path])?;
        row.map(|r| document_record(&r)).transpose()
    }

    /// Everything the full-text index needs for the chunks of `ids`, by document then order.
    pub fn index_entries(&self, ids: &[DocumentId]) -> Result<Vec<IndexEntry>> {
        let ids: Vec<i64> = ids.iter().map(|d| d.0).collect();
        let mut client = self.db.client()?;
        let rows = client.query(
            "SELECT c.id, c.document_id, COALESCE(d.title, ''), c.heading_path, c.text
             FROM chunks c JOIN documents d ON d.id = c.document_id
             WHERE c.document_id = ANY($1) ORDER BY c.document_id, c.ordinal",
            &[&ids],
        )?;
        rows.iter()
            .map(|r| {
                Ok(IndexEntry {
                    chunk_id: ChunkId(r.get(0)),
                    document_id: DocumentId(r.get(1)),
                    title: r.get(2),
                    heading: heading_path(&r.get::<_, String>(3))?.join(" › "),
                    text: r.get(4),
                })
            })
            .collect()
    }

    /// A document's chunks, in order.
    pub fn document_chunks(&self, id: DocumentId) -> Result<Vec<ChunkRecord>> {
        let mut client = self.db.client()?;
        let rows = client.query(
            &format!("{CHUNK_SELECT} WHERE c.document_id = $1 ORDER BY c.ordinal"),
            &[&id.0],
        )?;
        rows.iter().map(chunk_record).collect()
    }

    /// Full chunk records in the order of `ids` (missing ids skipped).
    pub fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<ChunkRecord>> {
        let raw: Vec<i64> = ids.iter().map(|c| c.0).collect();
        let mut client = self.db.client()?;
        let rows = client.query(&format!("{CHUNK_SELECT} WHERE c.id = ANY($1)"), &[&raw])?;
        let mut by_id = std::collections::HashMap::new();
        for row in &rows {
            let record = chunk_record(row)?;
            by_id.insert(record.chunk_id, record);
        }
        Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
    }

    /// Number of chunks stored.
    pub fn chunk_count(&self) -> Result<u64> {
        let mut client = self.db.client()?;
        let n: i64 = client.query_one("SELECT count(*) FROM chunks", &[])?.get(0);
        Ok(n as u64)
    }

    /// Up to `limit` changes after `seq`, oldest first.
    pub fn changes_after(&self, seq: i64, limit: usize) -> Result<Vec<Change>> {
        let mut client = self.db.client()?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client.query(
            "SELECT seq, document_id FROM document_changes WHERE seq > $1 ORDER BY seq LIMIT $2",
            &[&seq, &limit],
        )?;
        Ok(rows
            .iter()
            .map(|r| Change {
                seq: r.get(0),
                document_id: DocumentId(r.get(1)),
            })
            .collect())
    }

    /// The newest change's sequence number (0 when there is none).
    pub fn last_change(&self) -> Result<i64> {
        let mut client = self.db.client()?;
        Ok(client
            .query_one("SELECT COALESCE(max(seq), 0) FROM document_changes", &[])?
            .get(0))
    }
}

fn log_change(tx: &mut postgres::Transaction<'_>, document_id: i64) -> Result<()> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CHANGE_LOG_LOCK])?;
    tx.execute(
        "INSERT INTO document_changes (seq, document_id)
         VALUES (nextval('document_change_seq'), $1)",
        &[&document_id],
    )?;
    tx.batch_execute(&format!("NOTIFY {CHANGES_CHANNEL}"))?;
    Ok(())
}

fn heading_path(json: &str) -> Result<Vec<String>> {
    serde_json::from_str(json).map_err(|e| PgError::Corrupt(format!("heading path: {e}")))
}

fn u32_of(row: &Row, i: usize) -> Result<Option<u32>> {
    row.get::<_, Option<i64>>(i)
        .map(|v| u32::try_from(v).map_err(|_| PgError::Corrupt(format!("column {i}: {v}"))))
        .transpose()
}

fn chunk_record(r: &Row) -> Result<ChunkRecord> {
    Ok(ChunkRecord {
        chunk_id: ChunkId(r.get(0)),
        document_id: DocumentId(r.get(1)),
        path: r.get(2),
        title: r.get(3),
        kind: r.get(4),
        ordinal: u32_of(r, 5)?.unwrap_or(0),
        text: r.get(6),
        heading_path: heading_path(&r.get::<_, String>(7))?,
        page_start: u32_of(r, 8)?,
        page_end: u32_of(r, 9)?,
        char_start: r.get::<_, i64>(10) as usize,
        char_end: r.get::<_, i64>(11) as usize,
        token_count: u32_of(r, 12)?.unwrap_or(0),
        text_hash: r.get(13),
    })
}

fn document_record(r: &Row) -> Result<DocumentRecord> {
    Ok(DocumentRecord {
        id: DocumentId(r.get(0)),
        source: SourceId(r.get(1)),
        folder: r.get::<_, Option<i64>>(2).map(FolderId),
        path: r.get(3),
        kind: r.get(4),
        content_hash: r.get(5),
        size: r.get::<_, i64>(6) as u64,
        mtime_ns: r.get(7),
        title: r.get(8),
        status: r.get(9),
        error_code: r.get(10),
        error: r.get(11),
        page_count: u32_of(r, 12)?,
        encoding: r.get(13),
        chunk_count: r.get::<_, i64>(14) as u64,
        index_pending: r.get::<_, String>(15) == "pending",
        created_at_ms: r.get(16),
        updated_at_ms: r.get(17),
        owner: r.get(18),
    })
}
