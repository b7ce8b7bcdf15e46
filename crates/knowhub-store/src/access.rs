//! Ownership, the document-set version and the audit trail of one account.
//!
//! * Owners: the user who first added a source or a document; owner-only writes are checked by
//!   the engine against them (`knowhub_authz::can_write`). An owner is set once and never
//!   silently changed by a later ingest of the same path.
//! * `doc_version`: a single-row counter bumped by triggers whenever a document is added,
//!   removed, moved or changes owner, so a cached "documents this user may read" set can tell
//!   it is stale — across processes, because it lives in the database.
//! * `audit_log`: one row per request that read or changed data: who (user, agent, role), the
//!   permission snapshot id it was evaluated under, and each evidence item's decision.

use knowhub_authz::UserId;
use rusqlite::{OptionalExtension, params};

use crate::{DocumentId, Result, SourceId, Store, StoreError, now_ms};

/// What the permission filter needs to know about a stored document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRow {
    pub id: DocumentId,
    pub source: SourceId,
    pub path: String,
    pub owner: Option<String>,
    /// The mail this document is an attachment of: it is readable exactly when the mail is.
    pub parent: Option<DocumentId>,
}

/// One audit record to append.
#[derive(Debug, Clone)]
pub struct AuditEntry<'a> {
    pub trace_id: &'a str,
    pub user: &'a str,
    pub agent: Option<&'a str>,
    pub role: &'a str,
    /// `search`, `list`, `status`, `open`, `ingest`, `remove`, `acl`, `user`, …
    pub action: &'a str,
    /// The query, path or object acted on.
    pub target: &'a str,
    /// The permission snapshot id (hex) the request was evaluated under.
    pub snapshot: &'a str,
    /// `ok`, `not_found`, `denied`, `error`.
    pub outcome: &'a str,
    pub allowed: u64,
    pub filtered: u64,
    /// JSON: the evidence items and their decisions.
    pub evidence: &'a str,
}

/// A stored audit record.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AuditRecord {
    pub id: i64,
    /// Time since the Unix epoch, in milliseconds.
    pub at: i64,
    pub trace_id: String,
    pub user: String,
    pub agent: Option<String>,
    pub role: String,
    pub action: String,
    pub target: String,
    pub snapshot: String,
    pub outcome: String,
    pub allowed: u64,
    pub filtered: u64,
    pub evidence: serde_json::Value,
}

impl Store {
    /// Every stored document's id, source, path and owner.
    pub fn access_rows(&self) -> Result<Vec<AccessRow>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, source_id, path, owner, parent_id FROM documents ORDER BY id")?;
        let rows = stmt.query_map([], |r| {
            Ok(AccessRow {
                id: DocumentId(r.get(0)?),
                source: SourceId(r.get(1)?),
                path: r.get(2)?,
                owner: r.get(3)?,
                parent: r.get::<_, Option<i64>>(4)?.map(DocumentId),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Records `owner` as the document's owner unless it already has one.
    pub fn claim_document(&mut self, id: DocumentId, owner: &UserId) -> Result<()> {
        self.conn.execute(
            "UPDATE documents SET owner = ?2 WHERE id = ?1 AND owner IS NULL",
            params![id.0, owner.as_str()],
        )?;
        Ok(())
    }

    /// Records `owner` as the source's owner unless it already has one.
    pub fn claim_source(&mut self, id: SourceId, owner: &UserId) -> Result<()> {
        self.conn.execute(
            "UPDATE sources SET owner = ?2 WHERE id = ?1 AND owner IS NULL",
            params![id.0, owner.as_str()],
        )?;
        Ok(())
    }

    /// The owner of a source, if recorded.
    pub fn source_owner(&self, id: SourceId) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT owner FROM sources WHERE id = ?1",
                params![id.0],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten())
    }

    /// The document-set version: changes whenever a document is added, removed, moved or
    /// changes owner (in any process).
    pub fn doc_version(&self) -> Result<u64> {
        let v: i64 =
            self.conn
                .query_row("SELECT version FROM doc_version WHERE id = 1", [], |r| {
                    r.get(0)
                })?;
        u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("doc_version row: {v} < 0")))
    }

    /// Appends an audit record; returns its id.
    pub fn append_audit(&mut self, e: &AuditEntry<'_>) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO audit_log (at, trace_id, user_id, agent_id, role, action, target,
                 snapshot, outcome, allowed, filtered, evidence)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                now_ms(),
                e.trace_id,
                e.user,
                e.agent,
                e.role,
                e.action,
                e.target,
                e.snapshot,
                e.outcome,
                e.allowed as i64,
                e.filtered as i64,
                e.evidence
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The newest audit records (newest first), optionally only one user's.
    pub fn audit(&self, limit: usize, user: Option<&UserId>) -> Result<Vec<AuditRecord>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, at, trace_id, user_id, agent_id, role, action, target, snapshot, outcome,
                    allowed, filtered, evidence
             FROM audit_log WHERE (?1 IS NULL OR user_id = ?1) ORDER BY id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(
            params![
                user.map(UserId::as_str),
                limit.min(i64::MAX as usize) as i64
            ],
            |r| {
                let evidence: String = r.get(12)?;
                Ok(AuditRecord {
                    id: r.get(0)?,
                    at: r.get(1)?,
                    trace_id: r.get(2)?,
                    user: r.get(3)?,
                    agent: r.get(4)?,
                    role: r.get(5)?,
                    action: r.get(6)?,
                    target: r.get(7)?,
                    snapshot: r.get(8)?,
                    outcome: r.get(9)?,
                    allowed: r.get::<_, i64>(10)? as u64,
                    filtered: r.get::<_, i64>(11)? as u64,
                    evidence: serde_json::from_str(&evidence).unwrap_or(serde_json::Value::Null),
                })
            },
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewDocument, Store};

    fn uid(s: &str) -> UserId {
        UserId::new(s).expect("valid id")
    }

    #[test]
    fn owners_are_claimed_once_and_doc_version_tracks_the_document_set() {
        let mut store = Store::open_in_memory().expect("store");
        let source = store.files_source().expect("source");
        let v0 = store.doc_version().expect("version");
        let doc = NewDocument {
            parent: None,
            source,
            folder: None,
            path: "/a/x.txt",
            kind: "text",
            content_hash: "h",
            size: 10,
            mtime_ns: Some(1),
            title: Some("T"),
            status: crate::DocumentStatus::Indexed,
            note: None,
            page_count: None,
            encoding: Some("UTF-8"),
            meta: &crate::NO_META,
            text: "whole text",
            chunks: &[],
            tables: &[],
            original: None,
        };
        let id = store.replace_document(&doc).expect("stored");
        let v1 = store.doc_version().expect("version");
        assert!(v1 > v0, "insert bumps the version");
        store.claim_document(id, &uid("alice")).expect("claim");
        store
            .claim_document(id, &uid("bob"))
            .expect("second claim is a no-op");
        let rows = store.access_rows().expect("rows");
        assert_eq!(rows[0].owner.as_deref(), Some("alice"));
        let v2 = store.doc_version().expect("version");
        assert!(v2 > v1, "a new owner bumps the version");
        // Re-storing the same path (a new version of the file) keeps the owner and id.
        assert_eq!(store.replace_document(&doc).expect("stored"), id);
        assert_eq!(store.doc_version().expect("version"), v2);
        assert_eq!(
            store
                .document(id)
                .expect("doc")
                .expect("exists")
                .owner
                .as_deref(),
            Some("alice")
        );
        store.remove_document(id).expect("removed");
        assert!(store.doc_version().expect("version") > v2);
        store.claim_source(source, &uid("carol")).expect("claim");
        assert_eq!(
            store.source_owner(source).expect("owner").as_deref(),
            Some("carol")
        );
    }

    #[test]
    fn audit_records_round_trip_newest_first() {
        let mut store = Store::open_in_memory().expect("store");
        for (user, action) in [("alice", "search"), ("bob", "list"), ("alice", "open")] {
            store
                .append_audit(&AuditEntry {
                    trace_id: "t",
                    user,
                    agent: None,
                    role: "USER",
                    action,
                    target: "q",
                    snapshot: "ab",
                    outcome: "ok",
                    allowed: 2,
                    filtered: 1,
                    evidence: r#"[{"chunk":1,"decision":"allow"}]"#,
                })
                .expect("appended");
        }
        let all = store.audit(10, None).expect("audit");
        assert_eq!(
            all.iter().map(|r| r.action.as_str()).collect::<Vec<_>>(),
            ["open", "list", "search"]
        );
        assert_eq!(all[0].evidence[0]["decision"], "allow");
        let alice = store.audit(10, Some(&uid("alice"))).expect("audit");
        assert_eq!(alice.len(), 2);
        assert_eq!(store.audit(1, None).expect("audit").len(), 1);
    }
}
