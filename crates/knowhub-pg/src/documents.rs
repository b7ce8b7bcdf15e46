//! Sources, folders, documents and chunks in the team database, with an ordered change log.
//!
//! The same rows and rules as the SQLite store (a document keeps its id across re-ingests,
//! chunk ids are never reused), so the engine reads the same records from either. Every write
//! that changes what a search index must hold appends the document to `document_changes` in
//! the same transaction. Writers take an advisory lock just before they take a sequence number
//! and hold it until commit, so sequence order is commit order: a replica that has applied
//! everything up to `seq` never later finds an older change it skipped. Commits also notify
//! the account's channel (`knowhub_changes` for the default account), so replicas wake at once
//! instead of waiting for their next poll.

use std::collections::BTreeMap;

use knowhub_authz::UserId;
use knowhub_store::backend::DocumentStore;
use knowhub_store::{
    AccessRow, ChunkId, ChunkMismatch, ChunkRecord, DocumentId, DocumentRecord, FailedDocument,
    FolderId, IndexEntry, JournalEntry, MovedDocument, NewDocument, OriginalFile, SourceId,
    SourceRecord, StoreError, StoreStats,
};
use postgres::Row;
use postgres::types::ToSql;

use crate::store::pg;
use crate::{Database, PgError, PgStore, Result, now_ms};

type StoreResult<T> = knowhub_store::Result<T>;

/// The channel replicas of the default account listen on for new changes; another account's
/// replicas listen on `knowhub_changes:<its schema>`, so a commit wakes only its own account.
pub const CHANGES_CHANNEL: &str = "knowhub_changes";

/// SQL giving the channel of the connection's account (its schema comes first in `search_path`).
pub(crate) const CHANNEL_SQL: &str = "SELECT CASE current_schema() WHEN 'public' THEN \
    'knowhub_changes' ELSE 'knowhub_changes:' || current_schema() END";

/// Tells the replicas of the connection's account that changes were committed.
pub(crate) fn notify_changes(tx: &mut postgres::Transaction<'_>) -> Result<()> {
    tx.execute(&format!("SELECT pg_notify(({CHANNEL_SQL}), '')"), &[])?;
    Ok(())
}

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
    pub(crate) db: Database,
}

const DOC_SELECT: &str = "SELECT id, source_id, folder_id, path, kind, content_hash, size,
    mtime_ns, title, status, error_code, error, page_count, encoding, chunk_count, index_state,
    created_at, updated_at, owner, parent_id, meta FROM documents";

const CHUNK_SELECT: &str = "SELECT c.id, c.document_id, d.path, d.title, d.kind, c.ordinal,
    c.text, c.heading_path, c.page_start, c.page_end, c.char_start, c.char_end, c.token_count,
    c.text_hash, d.meta FROM chunks c JOIN documents d ON d.id = c.document_id";

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
    /// A spreadsheet's sheets are replaced in the same transaction.
    pub fn replace_document(&self, doc: &NewDocument<'_>) -> Result<DocumentId> {
        let note = doc.note;
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
            &note,
            &doc.page_count.map(i64::from),
            &doc.encoding,
            &chunk_count,
        ];
        let parent = doc.parent.map(|p| p.0);
        let meta = knowhub_store::meta_to_json(doc.meta);
        let mut all: Vec<&(dyn ToSql + Sync)> = params.to_vec();
        all.push(&now);
        all.push(&parent);
        all.push(&meta);
        let id: i64 = tx
            .query_one(
                "INSERT INTO documents (source_id, folder_id, path, kind, content_hash, size,
                     mtime_ns, title, status, error_code, error, page_count, encoding,
                     chunk_count, index_state, created_at, updated_at, parent_id, meta)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, $10, $11, $12, $13, 'clean',
                     $14, $14, $15, $16)
                 ON CONFLICT (path) DO UPDATE SET
                     source_id = excluded.source_id, folder_id = excluded.folder_id,
                     parent_id = excluded.parent_id, meta = excluded.meta,
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
        crate::sheets::write_sheets(&mut tx, id, doc.tables)?;
        crate::originals::keep(&mut tx, id, doc.content_hash, doc.original)?;
        log_change(&mut tx, id)?;
        tx.commit()?;
        Ok(DocumentId(id))
    }

    /// Removes a document, its attachments (and theirs), and everything derived from them,
    /// and logs the change of each.
    pub fn remove_document(&self, id: DocumentId) -> Result<()> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        remove_family(&mut tx, id)?;
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

impl PgDocuments {
    /// The highest sequence number compaction removed for a document that no longer exists
    /// (0 when none was). A replica that applied less than this may have missed a removal and
    /// must rebuild its index from the log.
    pub fn change_log_horizon(&self) -> Result<i64> {
        let mut client = self.db.client()?;
        Ok(client
            .query_one("SELECT horizon FROM change_log_state WHERE id = 1", &[])?
            .get(0))
    }

    /// The change log's identity, made when its tables were: a replica's index made from
    /// another log (a database or account deleted and created again under the same name,
    /// whose sequence numbers and ids start over) is rebuilt, never resumed.
    pub fn change_log_id(&self) -> Result<String> {
        let mut client = self.db.client()?;
        Ok(client
            .query_one("SELECT log_id FROM change_log_state WHERE id = 1", &[])?
            .get(0))
    }

    /// Shortens the change log. A replica re-reads a changed document's current rows, so only
    /// each document's newest entry matters: older ones are removed at once. The last entry of
    /// a removed document is kept for `keep_removed`, so that replicas which were away see the
    /// removal; dropping it raises the horizon, and a replica behind the horizon rebuilds.
    /// Replicas compacting at the same moment take turns: one that finds the lock taken does
    /// nothing.
    pub fn compact_changes(&self, keep_removed: std::time::Duration) -> Result<Compaction> {
        let mut client = self.db.client()?;
        let mut tx = client.transaction()?;
        let locked: bool = tx
            .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&COMPACTION_LOCK])?
            .get(0);
        if !locked {
            return Ok(Compaction::default());
        }
        let superseded = tx.execute(
            "DELETE FROM document_changes c USING document_changes n
             WHERE n.document_id = c.document_id AND n.seq > c.seq",
            &[],
        )?;
        let seconds = i64::try_from(keep_removed.as_secs()).unwrap_or(i64::MAX);
        let removed = tx.query_one(
            "WITH gone AS (
                 DELETE FROM document_changes c
                 WHERE c.changed_at < now() - $1::bigint * interval '1 second'
                   AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = c.document_id)
                 RETURNING seq)
             SELECT count(*), max(seq) FROM gone",
            &[&seconds],
        )?;
        let removed_count: i64 = removed.get(0);
        let removed_last: Option<i64> = removed.get(1);
        if let Some(seq) = removed_last {
            tx.execute(
                "UPDATE change_log_state SET horizon = GREATEST(horizon, $1) WHERE id = 1",
                &[&seq],
            )?;
        }
        let remaining: i64 = tx
            .query_one("SELECT count(*) FROM document_changes", &[])?
            .get(0);
        tx.commit()?;
        Ok(Compaction {
            superseded,
            removed: removed_count as u64,
            remaining: remaining as u64,
        })
    }
}

/// What one compaction of the change log removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compaction {
    /// Entries with a newer entry for the same document.
    pub superseded: u64,
    /// Last entries of documents removed longer ago than the retention.
    pub removed: u64,
    /// Entries left.
    pub remaining: u64,
}

/// Key of the advisory lock one compaction holds ("compact").
const COMPACTION_LOCK: i64 = 0x0063_6f6d_7061_6374;

/// Removes a document and its attachments (the rows go by foreign key) with their vectors
/// (which have no foreign key: they are bulk-loaded with COPY), logging each.
fn remove_family(tx: &mut postgres::Transaction<'_>, id: DocumentId) -> Result<()> {
    let family: Vec<i64> = tx
        .query(
            "WITH RECURSIVE family(id) AS (
                 SELECT id FROM documents WHERE id = $1
                 UNION SELECT d.id FROM documents d JOIN family f ON d.parent_id = f.id)
             SELECT id FROM family",
            &[&id.0],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if family.is_empty() {
        return Ok(());
    }
    tx.execute(
        "DELETE FROM chunk_vectors WHERE doc_id = ANY($1)",
        &[&family],
    )?;
    tx.execute("DELETE FROM documents WHERE id = $1", &[&id.0])?;
    for member in family {
        log_change(tx, member)?;
    }
    Ok(())
}

pub(crate) fn log_change(tx: &mut postgres::Transaction<'_>, document_id: i64) -> Result<()> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CHANGE_LOG_LOCK])?;
    tx.execute(
        "INSERT INTO document_changes (seq, document_id)
         VALUES (nextval('document_change_seq'), $1)",
        &[&document_id],
    )?;
    notify_changes(tx)?;
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
        meta: knowhub_store::meta_from_json(r.get(14)),
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
        parent: r.get::<_, Option<i64>>(19).map(DocumentId),
        meta: knowhub_store::meta_from_json(r.get(20)),
    })
}

// ----- the engine's view: DocumentStore -----------------------------------------

/// Documents under `prefix` (the path itself or anything below it as a directory).
fn under(prefix: &str) -> (String, String) {
    let dir = if prefix.ends_with(std::path::MAIN_SEPARATOR) {
        prefix.to_string()
    } else {
        format!("{prefix}{}", std::path::MAIN_SEPARATOR)
    };
    (prefix.to_string(), dir)
}

fn documents_of(rows: &[Row]) -> Result<Vec<DocumentRecord>> {
    rows.iter().map(document_record).collect()
}

impl DocumentStore for PgStore {
    fn sources(&self) -> StoreResult<Vec<SourceRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT s.id, s.kind, s.root_path, s.name,
                        (SELECT count(*) FROM documents d WHERE d.source_id = s.id), s.owner,
                        s.watched, s.rules
                 FROM sources s ORDER BY s.id",
                &[],
            )
            .map_err(pg)?;
        Ok(rows
            .iter()
            .map(|r| SourceRecord {
                id: SourceId(r.get(0)),
                kind: r.get(1),
                root_path: r.get(2),
                name: r.get(3),
                documents: r.get::<_, i64>(4) as u64,
                owner: r.get(5),
                watched: r.get(6),
                rules: r.get(7),
            })
            .collect())
    }

    fn document_by_path(&self, path: &str) -> StoreResult<Option<DocumentRecord>> {
        Ok(self.documents.document_by_path(path)?)
    }

    fn document(&self, id: DocumentId) -> StoreResult<Option<DocumentRecord>> {
        Ok(self.documents.document(id)?)
    }

    fn documents(&self, prefix: Option<&str>) -> StoreResult<Vec<DocumentRecord>> {
        let mut client = self.db.client()?;
        let rows = match prefix {
            Some(prefix) => {
                let (path, dir) = under(prefix);
                client.query(
                    &format!("{DOC_SELECT} WHERE path = $1 OR starts_with(path, $2) ORDER BY path"),
                    &[&path, &dir],
                )
            }
            None => client.query(&format!("{DOC_SELECT} ORDER BY path"), &[]),
        }
        .map_err(pg)?;
        Ok(documents_of(&rows)?)
    }

    fn documents_by_hash(&self, hash: &str) -> StoreResult<Vec<DocumentRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!("{DOC_SELECT} WHERE content_hash = $1 ORDER BY id"),
                &[&hash],
            )
            .map_err(pg)?;
        Ok(documents_of(&rows)?)
    }

    fn attachments(&self, mail: DocumentId) -> StoreResult<Vec<DocumentRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!(
                    "WITH RECURSIVE family(id) AS (
                         SELECT id FROM documents WHERE parent_id = $1
                         UNION SELECT d.id FROM documents d JOIN family f ON d.parent_id = f.id)
                     {DOC_SELECT} WHERE id IN (SELECT id FROM family) ORDER BY path COLLATE \"C\""
                ),
                &[&mail.0],
            )
            .map_err(pg)?;
        Ok(documents_of(&rows)?)
    }

    /// Each replica's full-text index follows the change log ([`crate::IndexFollower`]), so
    /// the database keeps no per-index markers: nothing is pending here.
    fn pending_index_documents(&self) -> StoreResult<Vec<DocumentId>> {
        Ok(Vec::new())
    }

    /// See [`DocumentStore::pending_index_documents`]: removals reach indexes through the log.
    fn tombstones(&self) -> StoreResult<Vec<DocumentId>> {
        Ok(Vec::new())
    }

    fn documents_with_chunks(&self) -> StoreResult<Vec<DocumentId>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT id FROM documents WHERE chunk_count > 0 ORDER BY id",
                &[],
            )
            .map_err(pg)?;
        Ok(rows.iter().map(|r| DocumentId(r.get(0))).collect())
    }

    fn index_entries(&self, id: DocumentId) -> StoreResult<Vec<IndexEntry>> {
        Ok(self.documents.index_entries(&[id])?)
    }

    fn document_chunks(&self, id: DocumentId) -> StoreResult<Vec<ChunkRecord>> {
        Ok(self.documents.document_chunks(id)?)
    }

    fn document_text(&self, id: DocumentId) -> StoreResult<Option<String>> {
        let mut client = self.db.client()?;
        let row = client
            .query_opt(
                "SELECT text FROM document_text WHERE document_id = $1",
                &[&id.0],
            )
            .map_err(pg)?;
        Ok(row.map(|r| r.get(0)))
    }

    fn original_file(&self, id: DocumentId) -> StoreResult<Option<OriginalFile>> {
        Ok(crate::originals::open(&self.db, id)?)
    }

    fn chunks(&self, ids: &[ChunkId]) -> StoreResult<Vec<ChunkRecord>> {
        Ok(self.documents.chunks(ids)?)
    }

    fn chunk_count(&self) -> StoreResult<u64> {
        Ok(self.documents.chunk_count()?)
    }

    fn chunk_counts(&self) -> StoreResult<BTreeMap<u64, u64>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT id, chunk_count FROM documents WHERE chunk_count > 0",
                &[],
            )
            .map_err(pg)?;
        Ok(rows
            .iter()
            .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, i64>(1) as u64))
            .collect())
    }

    fn chunk_mismatches(&self) -> StoreResult<Vec<ChunkMismatch>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT d.id, d.chunk_count, count(c.id), max(c.ordinal), min(c.ordinal)
                 FROM documents d LEFT JOIN chunks c ON c.document_id = d.id
                 GROUP BY d.id
                 HAVING count(c.id) != d.chunk_count
                     OR (count(c.id) > 0
                         AND (max(c.ordinal) != count(c.id) - 1 OR min(c.ordinal) != 0))
                 ORDER BY d.id",
                &[],
            )
            .map_err(pg)?;
        Ok(rows
            .iter()
            .map(|r| ChunkMismatch {
                document: DocumentId(r.get(0)),
                chunk_count: r.get::<_, i64>(1) as u64,
                rows: r.get::<_, i64>(2) as u64,
                max_ordinal: r.get(3),
            })
            .collect())
    }

    fn stats(&self) -> StoreResult<StoreStats> {
        let mut client = self.db.client()?;
        let totals = client
            .query_one(
                "SELECT count(*), COALESCE(sum(size), 0)::bigint,
                        COALESCE(sum(page_count), 0)::bigint,
                        count(*) FILTER (WHERE status = 'indexed' AND error_code IS NOT NULL),
                        count(*) FILTER (WHERE index_state = 'pending'),
                        (SELECT count(*) FROM chunks), (SELECT count(*) FROM sources),
                        (SELECT count(*) FROM sheet_tables)
                 FROM documents",
                &[],
            )
            .map_err(pg)?;
        let by_status = client
            .query(
                "SELECT status, count(*) FROM documents GROUP BY status ORDER BY status",
                &[],
            )
            .map_err(pg)?
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1) as u64))
            .collect();
        let n = |i: usize| totals.get::<_, i64>(i) as u64;
        Ok(StoreStats {
            documents: n(0),
            bytes: n(1),
            pages: n(2),
            chunks: n(5),
            tables: n(7),
            sources: n(6),
            by_status,
            stale_with_errors: n(3),
            pending_index: n(4),
        })
    }

    fn failures(&self, limit: usize) -> StoreResult<Vec<DocumentRecord>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                &format!(
                    "{DOC_SELECT} WHERE error_code IS NOT NULL OR status NOT IN ('indexed', 'empty')
                     ORDER BY updated_at DESC, path LIMIT $1"
                ),
                &[&(limit.min(i64::MAX as usize) as i64)],
            )
            .map_err(pg)?;
        Ok(documents_of(&rows)?)
    }

    fn source_owner(&self, id: SourceId) -> StoreResult<Option<String>> {
        let mut client = self.db.client()?;
        let row = client
            .query_opt("SELECT owner FROM sources WHERE id = $1", &[&id.0])
            .map_err(pg)?;
        Ok(row.and_then(|r| r.get(0)))
    }

    fn access_rows(&self) -> StoreResult<Vec<AccessRow>> {
        let mut client = self.db.client()?;
        let rows = client
            .query(
                "SELECT id, source_id, path, owner, parent_id FROM documents ORDER BY id",
                &[],
            )
            .map_err(pg)?;
        Ok(rows
            .iter()
            .map(|r| AccessRow {
                id: DocumentId(r.get(0)),
                source: SourceId(r.get(1)),
                path: r.get(2),
                owner: r.get(3),
                parent: r.get::<_, Option<i64>>(4).map(DocumentId),
            })
            .collect())
    }

    fn doc_version(&self) -> StoreResult<u64> {
        let mut client = self.db.client()?;
        let v: i64 = client
            .query_one("SELECT version FROM doc_version WHERE id = 1", &[])
            .map_err(pg)?
            .get(0);
        u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("doc_version row: {v} < 0")))
    }

    fn folder_source(&mut self, root_path: &str, name: &str) -> StoreResult<SourceId> {
        Ok(self.documents.folder_source(root_path, name)?)
    }

    fn files_source(&mut self) -> StoreResult<SourceId> {
        Ok(self.documents.files_source()?)
    }

    fn ensure_folder(&mut self, source: SourceId, rel_path: &str) -> StoreResult<FolderId> {
        Ok(self.documents.ensure_folder(source, rel_path)?)
    }

    fn set_source_watch(
        &mut self,
        source: SourceId,
        watched: bool,
        rules: &str,
    ) -> StoreResult<()> {
        let mut client = self.db.client()?;
        let n = client
            .execute(
                "UPDATE sources SET watched = $2, rules = $3 WHERE id = $1 AND kind = 'folder'",
                &[&source.0, &watched, &rules],
            )
            .map_err(pg)?;
        if n == 0 {
            return Err(StoreError::Corrupt(format!(
                "no folder source {}",
                source.0
            )));
        }
        Ok(())
    }

    fn replace_document(&mut self, doc: &NewDocument<'_>) -> StoreResult<DocumentId> {
        Ok(self.documents.replace_document(doc)?)
    }

    /// A document that already has content keeps it; the failure is recorded beside it.
    fn record_failure(&mut self, f: &FailedDocument<'_>) -> StoreResult<DocumentId> {
        let now = now_ms();
        let mut client = self.db.client()?;
        let kept = client
            .query_opt(
                "UPDATE documents SET error_code = $2, error = $3, updated_at = $4
                 WHERE path = $1 AND chunk_count > 0 RETURNING id",
                &[
                    &f.path,
                    &f.code,
                    &format!("kept the previous version: {}", f.error),
                    &now,
                ],
            )
            .map_err(pg)?;
        if let Some(row) = kept {
            return Ok(DocumentId(row.get(0)));
        }
        let size = i64::try_from(f.size).map_err(|_| StoreError::Corrupt("size".into()))?;
        let row = client
            .query_one(
                "INSERT INTO documents (source_id, folder_id, path, kind, content_hash, size,
                     mtime_ns, title, status, error_code, error, chunk_count, index_state,
                     created_at, updated_at, parent_id)
                 VALUES ($1, $2, $3, $4, NULL, $5, $6, $7, $8, $9, $10, 0, 'clean', $11, $11,
                     $12)
                 ON CONFLICT (path) DO UPDATE SET
                     kind = excluded.kind, content_hash = NULL, size = excluded.size,
                     mtime_ns = excluded.mtime_ns, status = excluded.status,
                     error_code = excluded.error_code, error = excluded.error,
                     updated_at = excluded.updated_at
                 RETURNING id",
                &[
                    &f.source.0,
                    &f.folder.map(|x| x.0),
                    &f.path,
                    &f.kind,
                    &size,
                    &f.mtime_ns,
                    &f.title,
                    &f.status.as_str(),
                    &f.code,
                    &f.error,
                    &now,
                    &f.parent.map(|p| p.0),
                ],
            )
            .map_err(pg)?;
        let id: i64 = row.get(0);
        // A file that no longer parses has no current content to serve.
        client
            .execute("DELETE FROM document_files WHERE document_id = $1", &[&id])
            .map_err(pg)?;
        Ok(DocumentId(id))
    }

    fn touch(&mut self, id: DocumentId, size: u64, mtime_ns: Option<i64>) -> StoreResult<()> {
        let size = i64::try_from(size).map_err(|_| StoreError::Corrupt("size".into()))?;
        let mut client = self.db.client()?;
        client
            .execute(
                "UPDATE documents SET size = $2, mtime_ns = $3 WHERE id = $1",
                &[&id.0, &size, &mtime_ns],
            )
            .map_err(pg)?;
        Ok(())
    }

    /// Keeps the id, chunks and history; the change is logged because the title (which the
    /// index holds) may change with the name.
    fn move_document(&mut self, m: &MovedDocument<'_>) -> StoreResult<()> {
        let size = i64::try_from(m.size).map_err(|_| StoreError::Corrupt("size".into()))?;
        let mut client = self.db.client()?;
        let mut tx = client.transaction().map_err(pg)?;
        // Chunks without a heading are embedded with the title: a new title means new vectors.
        if let Some(title) = m.title {
            tx.execute(
                "DELETE FROM chunk_vectors WHERE doc_id = $1 AND EXISTS (
                     SELECT 1 FROM documents WHERE id = $1 AND title IS DISTINCT FROM $2)",
                &[&m.id.0, &title],
            )
            .map_err(pg)?;
        }
        let n = tx
            .execute(
                "UPDATE documents SET path = $2, source_id = $3, folder_id = $4,
                        title = COALESCE($5, title), size = $6, mtime_ns = $7, updated_at = $8
                 WHERE id = $1",
                &[
                    &m.id.0,
                    &m.path,
                    &m.source.0,
                    &m.folder.map(|f| f.0),
                    &m.title,
                    &size,
                    &m.mtime_ns,
                    &now_ms(),
                ],
            )
            .map_err(pg)?;
        if n == 0 {
            return Err(StoreError::Corrupt(format!("no document {}", m.id.0)));
        }
        log_change(&mut tx, m.id.0)?;
        tx.commit().map_err(pg)?;
        Ok(())
    }

    /// See [`PgDocuments::remove_document`].
    fn remove_document(&mut self, id: DocumentId) -> StoreResult<()> {
        Ok(self.documents.remove_document(id)?)
    }

    /// See [`DocumentStore::pending_index_documents`].
    fn mark_indexed(&mut self, _ids: &[DocumentId]) -> StoreResult<()> {
        Ok(())
    }

    /// See [`DocumentStore::pending_index_documents`].
    fn clear_tombstones(&mut self, _ids: &[DocumentId]) -> StoreResult<()> {
        Ok(())
    }

    fn claim_document(&mut self, id: DocumentId, owner: &UserId) -> StoreResult<()> {
        let mut client = self.db.client()?;
        client
            .execute(
                "UPDATE documents SET owner = $2 WHERE id = $1 AND owner IS NULL",
                &[&id.0, &owner.as_str()],
            )
            .map_err(pg)?;
        Ok(())
    }

    fn claim_source(&mut self, id: SourceId, owner: &UserId) -> StoreResult<()> {
        let mut client = self.db.client()?;
        client
            .execute(
                "UPDATE sources SET owner = $2 WHERE id = $1 AND owner IS NULL",
                &[&id.0, &owner.as_str()],
            )
            .map_err(pg)?;
        Ok(())
    }

    fn journal(&mut self, entry: &JournalEntry<'_>) -> StoreResult<()> {
        let mut client = self.db.client()?;
        client
            .execute(
                "INSERT INTO ingest_journal (run_id, path, document_id, action, detail,
                     duration_ms, at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &entry.run_id,
                    &entry.path,
                    &entry.document.map(|d| d.0),
                    &entry.action,
                    &entry.detail,
                    &entry.duration_ms.map(|d| d.min(i64::MAX as u64) as i64),
                    &now_ms(),
                ],
            )
            .map_err(pg)?;
        Ok(())
    }
}
