//! What the engine needs from storage, one trait per domain, so that the same engine runs on
//! this crate's SQLite [`Store`] (one machine) or on PostgreSQL (`knowhub-pg`, a team server).
//!
//! The traits only move records in and out: every permission decision stays in the engine and
//! `knowhub-authz`, whichever backend holds the rows. Reads take `&self`; writes take
//! `&mut self` because SQLite transactions need the connection exclusively (a PostgreSQL
//! backend takes a pooled connection per call and ignores the exclusivity).
//!
//! [`Store`] implements each trait by calling its inherent method of the same name, so its
//! documentation is the contract. A backend that does not keep a domain yet answers
//! [`StoreError::Unsupported`].
//!
//! ```
//! use knowhub_store::backend::{Backend, DocumentStore};
//!
//! let dir = tempfile::tempdir()?;
//! let store = knowhub_store::Store::open(&dir.path().join("s.sqlite"), &dir.path().join("t.sqlite"))?;
//! let backend: Box<dyn Backend> = Box::new(store);
//! assert!(backend.sources()?.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;

use knowhub_authz::{AclTree, GroupId, GroupRole, KeyHash, Memberships, Role, ScopeSet, UserId};

use crate::{
    AccessRow, AuditEntry, AuditRecord, ChunkId, ChunkMismatch, ChunkRecord, CrawlPageRecord,
    CrawlRecord, DocumentId, DocumentRecord, FailedDocument, FeedbackRecord, FolderId, Group,
    GroupMemberRecord, GroupSpaceCreation, GroupSpaceRecord, IndexEntry, JobRecord, JobState,
    JournalEntry, KnowledgeFilter, KnowledgeRecord, KnowledgeVersion, MovedDocument, NewDocument,
    NewJob, OriginalFile, PageAddress, QueueCounts, ResourceFilter, ResourceRecord, Result,
    SessionRecord, SessionSummary, SheetTableRecord, SourceId, SourceRecord, SqlSourceRecord,
    Store, StoreStats, StoredVector, TraceRecord, TurnRecord, UnembeddedChunk, UserRecord,
};

/// Declares a domain trait and implements it for [`Store`] by delegation to the inherent
/// method of the same name (reads first, then `mut:` writes).
macro_rules! domain {
    (
        $(#[$doc:meta])*
        pub trait $name:ident {
            $( $(#[$rdoc:meta])* fn $r:ident(&self $(, $ra:ident: $rt:ty)* $(,)?) -> $rr:ty; )*
            mut:
            $( $(#[$wdoc:meta])* fn $w:ident(&mut self $(, $wa:ident: $wt:ty)* $(,)?) -> $wr:ty; )*
        }
    ) => {
        $(#[$doc])*
        pub trait $name {
            $( $(#[$rdoc])* fn $r(&self $(, $ra: $rt)*) -> $rr; )*
            $( $(#[$wdoc])* fn $w(&mut self $(, $wa: $wt)*) -> $wr; )*
        }

        impl $name for Store {
            $( fn $r(&self $(, $ra: $rt)*) -> $rr { Store::$r(self $(, $ra)*) } )*
            $( fn $w(&mut self $(, $wa: $wt)*) -> $wr { Store::$w(self $(, $wa)*) } )*
        }
    };
}

domain! {
    /// Sources, folders, documents, their text and chunks, index markers and the journal.
    pub trait DocumentStore {
        fn sources(&self) -> Result<Vec<SourceRecord>>;
        fn document_by_path(&self, path: &str) -> Result<Option<DocumentRecord>>;
        fn document(&self, id: DocumentId) -> Result<Option<DocumentRecord>>;
        fn documents(&self, prefix: Option<&str>) -> Result<Vec<DocumentRecord>>;
        fn documents_by_hash(&self, hash: &str) -> Result<Vec<DocumentRecord>>;
        fn attachments(&self, mail: DocumentId) -> Result<Vec<DocumentRecord>>;
        fn pending_index_documents(&self) -> Result<Vec<DocumentId>>;
        fn tombstones(&self) -> Result<Vec<DocumentId>>;
        fn documents_with_chunks(&self) -> Result<Vec<DocumentId>>;
        fn index_entries(&self, id: DocumentId) -> Result<Vec<IndexEntry>>;
        fn document_chunks(&self, id: DocumentId) -> Result<Vec<ChunkRecord>>;
        fn document_text(&self, id: DocumentId) -> Result<Option<String>>;
        fn original_file(&self, id: DocumentId) -> Result<Option<OriginalFile>>;
        fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<ChunkRecord>>;
        fn chunk_count(&self) -> Result<u64>;
        fn chunk_counts(&self) -> Result<BTreeMap<u64, u64>>;
        fn chunk_mismatches(&self) -> Result<Vec<ChunkMismatch>>;
        fn stats(&self) -> Result<StoreStats>;
        fn failures(&self, limit: usize) -> Result<Vec<DocumentRecord>>;
        fn source_owner(&self, id: SourceId) -> Result<Option<String>>;
        fn access_rows(&self) -> Result<Vec<AccessRow>>;
        fn doc_version(&self) -> Result<u64>;
        mut:
        fn folder_source(&mut self, root_path: &str, name: &str) -> Result<SourceId>;
        fn files_source(&mut self) -> Result<SourceId>;
        fn ensure_folder(&mut self, source: SourceId, rel_path: &str) -> Result<FolderId>;
        fn set_source_watch(&mut self, source: SourceId, watched: bool, rules: &str) -> Result<()>;
        fn replace_document(&mut self, doc: &NewDocument<'_>) -> Result<DocumentId>;
        fn record_failure(&mut self, f: &FailedDocument<'_>) -> Result<DocumentId>;
        fn touch(&mut self, id: DocumentId, size: u64, mtime_ns: Option<i64>) -> Result<()>;
        fn move_document(&mut self, m: &MovedDocument<'_>) -> Result<()>;
        fn remove_document(&mut self, id: DocumentId) -> Result<()>;
        fn mark_indexed(&mut self, ids: &[DocumentId]) -> Result<()>;
        fn clear_tombstones(&mut self, ids: &[DocumentId]) -> Result<()>;
        fn claim_document(&mut self, id: DocumentId, owner: &UserId) -> Result<()>;
        fn claim_source(&mut self, id: SourceId, owner: &UserId) -> Result<()>;
        fn journal(&mut self, entry: &JournalEntry<'_>) -> Result<()>;
    }
}

domain! {
    /// Spreadsheet sheets kept as typed tables for the SQL tool.
    pub trait TableStore {
        fn all_sheet_tables(&self) -> Result<Vec<(DocumentId, SheetTableRecord)>>;
        fn sheet_tables(&self, id: DocumentId) -> Result<Vec<SheetTableRecord>>;
        fn sheet_table_rows(&self, sql_name: &str) -> Result<u64>;
        fn drop_orphan_sheet_tables(&self) -> Result<usize>;
        mut:
    }
}

domain! {
    /// Users, roles, memberships, API key hashes and folder/document ACLs.
    pub trait IdentityStore {
        fn user(&self, id: &UserId) -> Result<Option<UserRecord>>;
        fn users(&self) -> Result<Vec<UserRecord>>;
        fn memberships(&self, user: &UserId) -> Result<Memberships>;
        fn api_key_count(&self) -> Result<u64>;
        fn user_for_key_hash(&self, hash: &KeyHash) -> Result<Option<(UserId, Role)>>;
        fn acl_tree(&self, source: SourceId, default: ScopeSet) -> Result<AclTree>;
        fn acl_version(&self) -> Result<u64>;
        mut:
        fn add_user(&mut self, id: &UserId, display_name: &str, role: Role) -> Result<bool>;
        fn set_role(&mut self, id: &UserId, role: Role) -> Result<bool>;
        fn remove_user(&mut self, id: &UserId) -> Result<bool>;
        fn add_membership(&mut self, user: &UserId, group: &Group) -> Result<bool>;
        fn remove_membership(&mut self, user: &UserId, group: &Group) -> Result<bool>;
        fn add_api_key(&mut self, user: &UserId, hash: &KeyHash, label: &str) -> Result<bool>;
        fn rotate_api_keys(&mut self, user: &UserId, hash: &KeyHash) -> Result<bool>;
        fn revoke_api_keys(&mut self, user: &UserId) -> Result<usize>;
        fn set_folder_acl(&mut self, source: SourceId, folder: &str, scopes: &ScopeSet) -> Result<bool>;
        fn clear_folder_acl(&mut self, source: SourceId, folder: &str) -> Result<bool>;
        fn set_document_acl(&mut self, source: SourceId, document: &str, scopes: &ScopeSet) -> Result<bool>;
        fn clear_document_acl(&mut self, source: SourceId, document: &str) -> Result<bool>;
    }
}

domain! {
    /// The audit log of requests.
    pub trait AuditStore {
        fn audit(&self, limit: usize, user: Option<&UserId>) -> Result<Vec<AuditRecord>>;
        mut:
        fn append_audit(&mut self, e: &AuditEntry<'_>) -> Result<i64>;
    }
}

domain! {
    /// The ingestion queue.
    pub trait JobStore {
        fn jobs(&self, state: Option<JobState>, limit: usize) -> Result<Vec<JobRecord>>;
        fn queue_counts(&self) -> Result<QueueCounts>;
        fn next_job_time(&self) -> Result<Option<i64>>;
        fn queue_paused(&self) -> Result<bool>;
        mut:
        fn enqueue(&mut self, jobs: &[NewJob<'_>]) -> Result<usize>;
        fn claim_jobs(&mut self, limit: usize) -> Result<Vec<JobRecord>>;
        fn finish_job(&mut self, id: i64, state: JobState, outcome: Option<&str>, error: Option<&str>) -> Result<()>;
        fn requeue_job(&mut self, id: i64, not_before_ms: i64, failed: bool, error: Option<&str>) -> Result<()>;
        fn requeue_running(&mut self) -> Result<usize>;
        fn cancel_jobs(&mut self, prefix: Option<&str>) -> Result<usize>;
        fn retry_failed_jobs(&mut self, prefix: Option<&str>) -> Result<usize>;
        fn prune_jobs(&mut self, keep: usize) -> Result<usize>;
        fn set_queue_paused(&mut self, paused: bool) -> Result<()>;
    }
}

domain! {
    /// Chunk embeddings, tagged with the model that made them.
    pub trait VectorStore {
        fn unembedded_chunks(&self, model: &str, limit: usize) -> Result<Vec<UnembeddedChunk>>;
        fn unembedded_count(&self, model: &str) -> Result<u64>;
        fn vector_count(&self, model: &str) -> Result<u64>;
        fn vector_count_for(&self, model: &str, docs: &[DocumentId]) -> Result<u64>;
        fn for_each_vector(&self, model: &str, f: &mut dyn FnMut(StoredVector) -> Result<()>) -> Result<()>;
        fn document_vectors(&self, model: &str, id: DocumentId) -> Result<Vec<StoredVector>>;
        fn orphan_vectors(&self) -> Result<u64>;
        mut:
        fn put_vectors(&mut self, model: &str, vectors: &[StoredVector]) -> Result<usize>;
        fn delete_vectors_except(&mut self, model: &str) -> Result<usize>;
    }
}

domain! {
    /// Chat sessions, turns, traces, feedback and registered SQL data sources.
    pub trait ChatStore {
        fn session(&self, id: &str) -> Result<Option<SessionRecord>>;
        fn sessions(&self, user: &str, limit: usize) -> Result<Vec<SessionRecord>>;
        fn turns(&self, session: &str, limit: usize) -> Result<Vec<TurnRecord>>;
        fn turns_between(&self, session: &str, after: i64, before: i64, limit: usize) -> Result<Vec<TurnRecord>>;
        fn session_summary(&self, session: &str) -> Result<Option<SessionSummary>>;
        fn trace(&self, id: &str) -> Result<Option<TraceRecord>>;
        fn traces(&self, user: Option<&str>, limit: usize) -> Result<Vec<TraceRecord>>;
        fn feedback(&self, trace_id: &str) -> Result<Vec<FeedbackRecord>>;
        fn sql_sources(&self) -> Result<Vec<SqlSourceRecord>>;
        mut:
        fn create_session(&mut self, id: &str, user: &str, title: &str) -> Result<()>;
        fn delete_session(&mut self, id: &str) -> Result<bool>;
        fn add_turn(&mut self, turn: &TurnRecord) -> Result<i64>;
        fn set_session_summary(&mut self, session: &str, s: &SessionSummary) -> Result<()>;
        fn put_trace(&mut self, t: &TraceRecord) -> Result<()>;
        fn put_feedback(&mut self, f: &FeedbackRecord) -> Result<i64>;
        fn put_sql_source(&mut self, s: &SqlSourceRecord) -> Result<()>;
        fn remove_sql_source(&mut self, name: &str) -> Result<bool>;
    }
}

domain! {
    /// Knowledge items (and memories, which are knowledge items of memory kinds).
    pub trait KnowledgeStore {
        fn knowledge(&self, id: &str) -> Result<Option<KnowledgeRecord>>;
        fn list_knowledge(&self, filter: &KnowledgeFilter, limit: usize, offset: usize) -> Result<Vec<KnowledgeRecord>>;
        fn knowledge_seqs(&self, filter: &KnowledgeFilter) -> Result<Vec<i64>>;
        fn knowledge_by_seqs(&self, seqs: &[i64]) -> Result<Vec<KnowledgeRecord>>;
        fn knowledge_revs(&self) -> Result<Vec<(i64, i64)>>;
        fn knowledge_version(&self) -> Result<i64>;
        fn knowledge_versions(&self, id: &str) -> Result<Vec<KnowledgeVersion>>;
        fn knowledge_vectors(&self, model: &str) -> Result<BTreeMap<i64, (i64, Vec<f32>)>>;
        mut:
        fn insert_knowledge(&mut self, r: &KnowledgeRecord) -> Result<KnowledgeRecord>;
        fn update_knowledge(&mut self, r: &KnowledgeRecord, keep_version: Option<&str>) -> Result<Option<KnowledgeRecord>>;
        fn merge_knowledge(&mut self, kept: &KnowledgeRecord, absorbed: &[String]) -> Result<Option<KnowledgeRecord>>;
        fn delete_knowledge(&mut self, id: &str) -> Result<bool>;
        fn put_knowledge_vector(&mut self, seq: i64, model: &str, rev: i64, vector: &[f32]) -> Result<()>;
    }
}

domain! {
    /// Resources (links, credentials with sealed secrets, …).
    pub trait ResourceStore {
        fn resource(&self, id: &str) -> Result<Option<ResourceRecord>>;
        fn resource_matching(&self, id: &str, filter: &ResourceFilter) -> Result<Option<ResourceRecord>>;
        fn list_resources(&self, filter: &ResourceFilter, limit: usize, offset: usize) -> Result<Vec<ResourceRecord>>;
        mut:
        fn insert_resource(&mut self, r: &ResourceRecord) -> Result<ResourceRecord>;
        fn update_resource(&mut self, r: &ResourceRecord) -> Result<Option<ResourceRecord>>;
        fn delete_resource(&mut self, id: &str) -> Result<bool>;
    }
}

domain! {
    /// Group spaces and their members.
    pub trait GroupStore {
        fn group_space(&self, id: &GroupId) -> Result<Option<GroupSpaceRecord>>;
        fn group_space_by_name(&self, space: &str) -> Result<Option<GroupSpaceRecord>>;
        fn group_spaces(&self, member: Option<&UserId>) -> Result<Vec<GroupSpaceRecord>>;
        fn group_members(&self, id: &GroupId) -> Result<Vec<GroupMemberRecord>>;
        fn group_role(&self, id: &GroupId, user: &UserId) -> Result<Option<GroupRole>>;
        fn scope_in_use(&self, scope: &str) -> Result<bool>;
        mut:
        fn create_group_space(&mut self, group: &GroupSpaceRecord, members: &[GroupMemberRecord]) -> Result<GroupSpaceCreation>;
        fn upsert_group_member(&mut self, id: &GroupId, member: &GroupMemberRecord) -> Result<bool>;
        fn remove_group_member(&mut self, id: &GroupId, user: &UserId) -> Result<bool>;
        fn delete_group_space(&mut self, id: &GroupId) -> Result<bool>;
    }
}

domain! {
    /// Web and wiki crawl sources and the pages they keep.
    pub trait CrawlStore {
        fn crawls(&self) -> Result<Vec<CrawlRecord>>;
        fn crawl_pages(&self, source: SourceId) -> Result<Vec<CrawlPageRecord>>;
        fn page_urls(&self, paths: &[String]) -> Result<Vec<PageAddress>>;
        mut:
        fn add_crawl(&mut self, source: SourceId, url: &str, settings: &str) -> Result<bool>;
        fn set_crawl_settings(&mut self, source: SourceId, settings: &str) -> Result<bool>;
        fn finish_crawl(&mut self, source: SourceId, at: i64, report: &str, pages: &[CrawlPageRecord]) -> Result<()>;
        fn remove_crawl(&mut self, source: SourceId) -> Result<bool>;
    }
}

/// Every domain: what [`Engine`](../../knowhub_engine/struct.Engine.html) holds.
pub trait Backend:
    DocumentStore
    + TableStore
    + IdentityStore
    + AuditStore
    + JobStore
    + VectorStore
    + ChatStore
    + KnowledgeStore
    + ResourceStore
    + GroupStore
    + CrawlStore
    + Send
{
    /// A short name for logs and `status` ("sqlite", "postgres").
    fn kind(&self) -> &'static str;
}

impl Backend for Store {
    fn kind(&self) -> &'static str {
        "sqlite"
    }
}

/// The domain traits, for `use knowhub_store::prelude::*` where store methods are called
/// through a [`Backend`].
pub mod prelude {
    pub use super::{
        AuditStore, Backend, ChatStore, CrawlStore, DocumentStore, GroupStore, IdentityStore,
        JobStore, KnowledgeStore, ResourceStore, TableStore, VectorStore,
    };
}
