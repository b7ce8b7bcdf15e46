//! The KnowHub engine: ingestion, storage and search, wired together in one place.
//!
//! Front ends (the `knowhub` CLI, the desktop shell, later the HTTP API) are thin wrappers over
//! [`Engine`]. The engine owns the store (SQLite, the source of truth), the full-text index
//! (tantivy, derived and rebuildable) and the parser sandbox, and keeps them consistent:
//!
//! * every store write that changes what the index must contain leaves a marker (a `pending`
//!   document or a tombstone) in the same transaction;
//! * markers are cleared only after the index commit that covers them;
//! * [`Engine::open`] replays whatever markers a crash left behind, and cross-checks the
//!   index's document set against the store.
//!
//! Every call that reads or writes data takes the caller's [`RequestContext`]: a [`Hub`] turns
//! credentials (an API key, or nothing in dev mode) into one and hands out the account's engine.
//!
//! ```no_run
//! use knowhub_engine::{Credentials, EngineConfig, Hub, SearchOptions};
//!
//! let hub = Hub::open(EngineConfig::new("/tmp/kb"))?;
//! let ctx = hub.authenticate(&Credentials::default())?; // dev mode: the default ROOT user
//! let engine = hub.engine(&ctx)?;
//! engine.ingest(&ctx, &["./handbook".into()], &Default::default(), &mut |_| {})?;
//! for hit in engine.search(&ctx, "annual leave 年假", &SearchOptions::default())? {
//!     println!("{} p.{:?} {}", hit.title, hit.page_start, hit.snippet);
//! }
//! # Ok::<(), knowhub_engine::EngineError>(())
//! ```

mod chat;
mod check;
mod crawl;
mod fs;
mod groups;
mod hub;
mod ingest;
pub mod keyring;
mod knowledge;
mod memory;
mod memory_model;
mod ocr;
mod permissions;
mod queue;
mod resources;
mod rules;
mod sandbox;
mod search;
mod secrets;
mod semantic;
mod session;
pub mod team;
mod watcher;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use knowhub_chunk::{ChunkConfig, HeuristicTokenCounter, TokenCounter};
use knowhub_index::{IndexError, TantivyIndex, TextIndex};
use knowhub_store::{Store, StoreStats, backend::Backend};
use thiserror::Error;

pub use chat::{QueryableData, QueryableTable};
pub use check::CheckReport;
pub use crawl::{CrawlRun, CrawlSettings, CrawlSummary, CrawlView, MIN_EVERY};
pub use fs::{FakeFs, FileMeta, Fs, RealFs, skip_name};
pub use groups::{
    GROUP_KINDS, GroupDeleted, GroupMemberSpec, GroupMemberView, GroupView, NewGroup,
    group_space_name,
};
pub use hub::{AccountInfo, Credentials, Hub, Mode, dev_context};
pub use ingest::{FileOutcome, IngestEvent, IngestOptions, IngestReport, RemoveReport};
pub use knowhub_authz as authz;
pub use knowhub_authz::{AccountId, RequestContext, Role, UserId};
pub use knowhub_crawl::{Outcome as PageOutcome, PageReport};
pub use knowhub_embed::{DeviceChoice, Embedder, Reranker};
pub use knowhub_index::DocFilter;
pub use knowhub_parse::DocumentMeta;
pub use knowhub_store::StoreError;
pub use knowhub_store::UserRecord;
pub use knowhub_store::{AuditRecord, ChunkId, ChunkRecord, DocumentId};
pub use knowhub_store::{DocumentRecord, SourceRecord};
pub use knowhub_store::{FeedbackCase, KnowledgeEval, KnowledgeSource};
pub use knowhub_store::{
    FeedbackRecord, SessionRecord, SessionSummary, SqlSourceRecord, TraceRecord, TurnRecord,
};
pub use knowhub_store::{JobRecord, JobState, QueueCounts};
pub use knowledge::{
    BatchOutcome, KNOWLEDGE_TYPES, KnowledgeHit, KnowledgeItem, KnowledgeListOptions,
    KnowledgeQuery, KnowledgeUpdate, KnowledgeVersion, NewKnowledge, Rewriter,
    SLIM_COSINE_THRESHOLD, SLIM_JACCARD_THRESHOLD, SlimGroup, SlimMethod, SlimOptions, SlimPlan,
};
pub use memory::{
    CommitMessage, CommitWith, GROUP_MEMORY_KINDS, GroupCommitOptions, MEMORY_KINDS,
    MemoryCandidate, MemoryCommit, MemoryNode, MemorySpaces, SkippedCandidate,
    extract_explicit_memories, extract_group_conversation_memories,
};
pub use memory_model::{CASE_KIND, MemoryModel, ProposedMemory};
pub use permissions::{
    Access, DEFAULT_ACCOUNT, DEFAULT_USER, DocRef, DocumentView, FolderAcl, FolderEntry,
    FolderReader, FolderReaders, new_trace_id,
};
pub use queue::{
    BatchReport, MAX_ATTEMPTS, ProcessOptions, QueueView, UploadDestination, UploadKind,
    UploadTarget, WatchedFolder, backoff, priority,
};
pub use resources::{
    NewResource, RESOURCE_TYPES, Resource, ResourceListOptions, ResourceUpdate, parse_rfc3339,
};
pub use rules::{IGNORE_FILE, RuleMatcher, SourceRules};
pub use sandbox::{ParserBackend, SandboxError, SandboxLimits, run_worker};
pub use search::{
    Fusion, MetaFilter, Retrieval, RetrievalMode, RetrievalTrace, SearchHit, SearchOptions,
};
pub use secrets::{FileKeySource, KeySource, MemoryKeySource, SecretError, SecretKey, SecureBody};
pub use semantic::{
    DEFAULT_EMBEDDER, EmbedProgress, EmbedderSpec, ModelConfig, ModelSet, OCR_MODEL,
};
pub use session::Session;
pub use watcher::{PagesRead, QueueProgress, WatchEvent, WatchOptions, WatchService};

/// Errors from engine calls. Per-file ingestion problems are not errors: they are recorded
/// with the document and reported in [`IngestReport`].
#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    InvalidInput(String),
    /// A model could not be loaded or failed to run.
    #[error("model: {0}")]
    Model(String),
    #[error("no data directory: set --data-dir or KNOWHUB_DATA_DIR")]
    NoDataDir,
    /// The caller could not be identified (missing/invalid API key, removed user).
    #[error("not signed in: {0}")]
    Unauthenticated(String),
    /// The caller may see the object but not do this to it (e.g. change a document they do
    /// not own). Never used for things the caller may not see: those are `NotFound`.
    #[error("not allowed: {0}")]
    Forbidden(String),
    /// No such object — or one the caller may not see (the two are indistinguishable).
    #[error("not found: {0}")]
    NotFound(String),
    /// The request clashes with what exists (an id taken, a group left without an owner).
    #[error("conflict: {0}")]
    Conflict(String),
    #[error(
        "another KnowHub process is updating this knowledge base (an ingest or the app); \
         searching works, changes must wait until it finishes"
    )]
    Busy,
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// Where everything lives: one data directory, one subdirectory per account (accounts are
/// isolated: separate store, tables and indexes).
#[derive(Debug, Clone)]
pub struct DataPaths {
    pub root: PathBuf,
    pub account: PathBuf,
    pub store: PathBuf,
    pub tables: PathBuf,
    pub index: PathBuf,
}

impl DataPaths {
    /// The layout of `account` under the data directory `root`.
    pub fn new(root: &Path, account: &AccountId) -> DataPaths {
        let account = root.join("accounts").join(account.as_str());
        DataPaths {
            root: root.to_path_buf(),
            store: account.join("store.sqlite"),
            tables: account.join("tables.sqlite"),
            index: account.join("fulltext"),
            account,
        }
    }

    /// Brings the account's local store up to this version's schema (what opening an engine
    /// does first), for tools that read it directly, such as `knowhub migrate`.
    pub fn upgrade_store(&self) -> Result<()> {
        Store::open(&self.store, &self.tables)?;
        Ok(())
    }
}

/// How to open an engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub data_dir: PathBuf,
    pub parser: ParserBackend,
    pub limits: SandboxLimits,
    /// Parallel parser slots; defaults to the number of CPUs, at most 4.
    pub parse_workers: usize,
    pub chunking: ChunkConfig,
    /// Embedder, reranker and device (default: multilingual-e5-small when installed).
    pub models: ModelConfig,
    /// The account this engine serves (each account is a separate store and index).
    pub account: AccountId,
    /// A new data directory keeps the key sealing resource secrets in the OS keyring when
    /// one answers (the desktop app); else in `secret.key`. An existing key stays where it
    /// is either way (see `keyring.rs`).
    pub keyring_for_new_keys: bool,
    /// Serve from a shared team database instead of the local SQLite store (see `team.rs`).
    pub team: Option<team::TeamConfig>,
}

impl EngineConfig {
    /// Defaults with the given data directory and in-process parsing.
    pub fn new(data_dir: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            data_dir: data_dir.into(),
            parser: ParserBackend::InProcess,
            limits: SandboxLimits::default(),
            parse_workers: std::thread::available_parallelism()
                .map(|n| n.get().min(4))
                .unwrap_or(2),
            chunking: ChunkConfig::default(),
            models: ModelConfig::default(),
            account: default_account(),
            keyring_for_new_keys: false,
            team: None,
        }
    }

    /// The platform's data directory for KnowHub (e.g. `~/.local/share/knowhub`).
    pub fn default_data_dir() -> Option<PathBuf> {
        directories::ProjectDirs::from("", "", "knowhub").map(|d| d.data_dir().to_path_buf())
    }
}

/// The engine. Cheap to share behind an `Arc`; calls are serialised where they write.
pub struct Engine {
    config: EngineConfig,
    account: AccountId,
    /// Readable-document sets of recent permission snapshots (see `permissions.rs`).
    readable_cache: permissions::ReadableCache,
    paths: DataPaths,
    fs: Arc<dyn Fs>,
    store: Mutex<Box<dyn Backend>>,
    index: Box<dyn TextIndex>,
    counter: Arc<dyn TokenCounter>,
    /// Chunk sizes (fitted to the embedder's window when there is one).
    chunking: ChunkConfig,
    semantic: Option<Arc<semantic::Semantic>>,
    /// The derived in-memory index of knowledge items (see `knowledge.rs`).
    knowledge: knowledge::KnowledgeIndex,
    /// Where the key for resources' secure bodies comes from (see `secrets.rs`).
    resource_keys: secrets::KeySlot,
    reranker: Option<Arc<dyn Reranker>>,
    /// The OCR model's folder: parsers read images with it (`None`: images keep a notice).
    ocr_model: Option<PathBuf>,
    model_notes: Vec<String>,
    /// Serialises ingest/remove/reindex so two writers never interleave index commits.
    write_lock: Mutex<()>,
    /// Another process holds the index writer: reads work, writes fail with `Busy`.
    read_only: bool,
    /// Team mode: the thread that keeps this replica's index in step; held to be dropped
    /// with the engine, which stops it.
    _follower: Option<team::Follower>,
    /// Team mode: the index the follower writes (also behind `index`, for its position).
    team_index: Option<Arc<team::FollowedIndex>>,
    /// Team mode: dense retrieval in pgvector instead of the in-memory vectors.
    team_vectors: Option<team::DenseVectors>,
    /// Crawl sources being run now (a second run of one is refused).
    running_crawls: Mutex<std::collections::HashSet<i64>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("data_dir", &self.paths.root)
            .finish_non_exhaustive()
    }
}

/// Counts for `knowhub status`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    /// Where the knowledge base lives on its machine: administrators only (over HTTP it is
    /// the server's file system).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<String>,
    #[serde(flatten)]
    pub store: StoreStats,
    pub indexed_chunks: u64,
    /// The embedder in use (`None`: keyword search only) and how many chunks have its vector.
    pub embedder: Option<String>,
    pub embedded_chunks: u64,
    pub reranker: Option<String>,
    /// Why configured models are not in use.
    pub model_notes: Vec<String>,
    pub sources: Vec<SourceRecord>,
    pub failures: Vec<DocumentRecord>,
    /// The ingestion queue (administrators; users see their jobs with `queue`).
    pub queue: Option<knowhub_store::QueueCounts>,
}

impl Engine {
    /// Opens the engine on the real file system, creating the data directory if needed,
    /// loading the configured models, and repairing whatever a crash left half-done.
    pub fn open(config: EngineConfig) -> Result<Engine> {
        Engine::open_with_fs(config, Arc::new(RealFs))
    }

    /// Opens the engine with the given file system (tests use [`FakeFs`]).
    pub fn open_with_fs(config: EngineConfig, fs: Arc<dyn Fs>) -> Result<Engine> {
        let models = ModelSet::load(&config.models)?;
        Engine::open_with(config, fs, models)
    }

    /// Opens the engine with already loaded models (`config.models` is not looked at): the one
    /// place storage, indexes, parsers and models are wired together.
    pub fn open_with(config: EngineConfig, fs: Arc<dyn Fs>, models: ModelSet) -> Result<Engine> {
        let mut paths = DataPaths::new(&config.data_dir, &config.account);
        if config.team.is_some() {
            // Derived from the team database, so never the local store's primary tables file.
            paths.tables = paths.account.join("team-tables.sqlite");
        }
        let keyring_for_new_keys = config.keyring_for_new_keys;
        std::fs::create_dir_all(&paths.index).map_err(|source| EngineError::Io {
            path: paths.index.display().to_string(),
            source,
        })?;
        let team_db = match &config.team {
            Some(t) => Some(team::connect(t, &config.account)?),
            None => None,
        };
        let store: Box<dyn Backend> = match (&config.team, &team_db) {
            (Some(t), Some(db)) => {
                Box::new(knowhub_pg::PgStore::new(db, &t.replica).with_host(&t.host))
            }
            _ => Box::new(Store::open(&paths.store, &paths.tables)?),
        };
        // Team mode: this process follows the change log into its data directory's index, or,
        // when another process here already does, reads that index.
        let mut follower = None;
        let mut team_index = None;
        let (mut rebuilt, mut read_only) = (false, false);
        let index: Box<dyn TextIndex> = if let Some(db) = &team_db {
            let state = knowhub_pg::state_file(&paths.index);
            let followed = match TantivyIndex::open(&paths.index) {
                Ok(index) => {
                    let index = Arc::new(index);
                    let (thread, position) =
                        team::follow(db, &config.account, Arc::clone(&index), &paths)?;
                    follower = Some(thread);
                    team::FollowedIndex::new(index, team::Position::Here(position), db)
                }
                Err(IndexError::Locked { .. }) => team::FollowedIndex::new(
                    Arc::new(TantivyIndex::open_read_only(&paths.index)?),
                    team::Position::File(state),
                    db,
                ),
                Err(e) => return Err(e.into()),
            };
            let followed = Arc::new(followed);
            team_index = Some(Arc::clone(&followed));
            Box::new(followed)
        } else {
            match TantivyIndex::open(&paths.index) {
                Ok(index) => Box::new(index),
                // Another process (an ingest, the app) is writing: serve reads; writes say busy.
                Err(IndexError::Locked { .. }) => {
                    read_only = true;
                    Box::new(TantivyIndex::open_read_only(&paths.index)?)
                }
                Err(e) => {
                    // A damaged index is derived data: set it aside and rebuild it from the store.
                    tracing::warn!("full-text index unreadable ({e}); rebuilding from the store");
                    let aside = paths
                        .account
                        .join(format!("fulltext.damaged-{}", std::process::id()));
                    let _ = std::fs::rename(&paths.index, &aside);
                    std::fs::create_dir_all(&paths.index).map_err(|source| EngineError::Io {
                        path: paths.index.display().to_string(),
                        source,
                    })?;
                    rebuilt = true;
                    Box::new(TantivyIndex::open(&paths.index)?)
                }
            }
        };
        let (counter, chunking): (Arc<dyn TokenCounter>, ChunkConfig) = match &models.embedder {
            Some(e) => {
                let counter = semantic::EmbedderTokenCounter::new(Arc::clone(e));
                let chunking = counter.fit(config.chunking);
                (Arc::new(counter), chunking)
            }
            None => (Arc::new(HeuristicTokenCounter), config.chunking.sanitized()),
        };
        let semantic = models
            .embedder
            .map(|e| Arc::new(semantic::Semantic::new(e)));
        let mut engine = Engine {
            account: config.account.clone(),
            readable_cache: Default::default(),
            read_only,
            config,
            paths,
            fs,
            store: Mutex::new(store),
            index,
            counter,
            chunking,
            semantic,
            knowledge: Default::default(),
            resource_keys: secrets::KeySlot::new(keyring_for_new_keys),
            reranker: models.reranker,
            ocr_model: models.ocr,
            model_notes: models.notes,
            write_lock: Mutex::new(()),
            _follower: follower,
            team_index,
            team_vectors: None,
            running_crawls: Mutex::default(),
        };
        if let (Some(t), Some(db)) = (&engine.config.team, &team_db) {
            engine.resource_keys.set(match &t.secret_key_file {
                Some(path) => Arc::new(FileKeySource::new(path)),
                None => Arc::new(secrets::NoTeamKey),
            });
            if let Some(sem) = &engine.semantic {
                let (model, dim) = (sem.embedder.model_id(), sem.embedder.dim());
                engine.team_vectors = Some(team::DenseVectors::open(db, model, dim)?);
            }
            // The follower (started above) is this replica's repair: it replays the change log
            // from the position its index last committed.
            return Ok(engine);
        }
        engine.load_vectors()?;
        if rebuilt {
            engine.rebuild_all(&mut |_| {})?;
        } else if !read_only {
            engine.repair()?;
        }
        Ok(engine)
    }

    /// Team mode: how many change-log entries the index is behind after waiting a moment for
    /// it (`None` in local mode).
    pub(crate) fn index_behind_log(&self) -> Result<Option<i64>> {
        self.team_index
            .as_ref()
            .map(|f| f.wait_caught_up(team::FOLLOW_POLL * 5))
            .transpose()
    }

    /// The data directory layout in use.
    pub fn paths(&self) -> &DataPaths {
        &self.paths
    }

    pub(crate) fn store(&self) -> MutexGuard<'_, Box<dyn Backend>> {
        // A panic while holding the lock cannot leave SQLite inconsistent (transactions roll
        // back), so a poisoned lock is safe to keep using.
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the writer lock, or fails with [`EngineError::Busy`] when another process writes.
    pub(crate) fn begin_write(&self) -> Result<MutexGuard<'_, ()>> {
        if self.read_only {
            return Err(EngineError::Busy);
        }
        Ok(self.write_lock.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Whether another process holds the index writer (this engine only reads).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Brings the index in line with the store: replays pending documents and tombstones, then
    /// cross-checks document sets (covers an index restored from an older backup, or a crash
    /// between an index commit and the store update that follows it).
    pub(crate) fn repair(&self) -> Result<RepairReport> {
        let _guard = self.begin_write()?;
        let mut report = RepairReport::default();
        let (pending, tombstones, expected) = {
            let store = self.store();
            report.dropped_tables = store.drop_orphan_sheet_tables()?;
            (
                store.pending_index_documents()?,
                store.tombstones()?,
                store.documents_with_chunks()?,
            )
        };
        let present = self.index.doc_ids()?;
        let expected_set: std::collections::BTreeSet<u64> =
            expected.iter().map(|d| d.0 as u64).collect();
        let mut to_index: Vec<DocumentId> = pending.clone();
        for d in &expected {
            if !present.contains(&(d.0 as u64)) && !to_index.contains(d) {
                to_index.push(*d);
            }
        }
        let mut to_delete: Vec<u64> = tombstones.iter().map(|d| d.0 as u64).collect();
        to_delete.extend(
            present
                .iter()
                .copied()
                .filter(|id| !expected_set.contains(id)),
        );
        to_delete.sort_unstable();
        to_delete.dedup();
        if to_index.is_empty() && to_delete.is_empty() {
            return Ok(report);
        }
        for id in &to_delete {
            self.drop_from_indexes(DocumentId(*id as i64))?;
        }
        for id in &to_index {
            self.index_document(*id)?;
        }
        self.index.commit()?;
        let mut store = self.store();
        store.mark_indexed(&to_index)?;
        store.clear_tombstones(&tombstones)?;
        report.reindexed_documents = to_index.len();
        report.removed_documents = to_delete.len();
        tracing::info!(?report, "repaired the full-text index");
        Ok(report)
    }

    /// Deletes a document from the full-text index writer (not yet committed) and from the
    /// in-memory vectors.
    pub(crate) fn drop_from_indexes(&self, id: DocumentId) -> Result<()> {
        self.index.delete_document(id.0 as u64)?;
        if let Some(sem) = &self.semantic {
            sem.vectors_mut().delete_document(id.0 as u64);
        }
        Ok(())
    }

    /// Writes one stored document's chunks into the index writer (not yet committed) and
    /// brings its in-memory vectors in line with the store.
    fn index_document(&self, id: DocumentId) -> Result<()> {
        self.sync_document_vectors(id)?;
        let entries = self.store().index_entries(id)?;
        let chunks: Vec<knowhub_index::ChunkEntry<'_>> = entries
            .iter()
            .map(|e| knowhub_index::ChunkEntry {
                chunk_id: e.chunk_id.0 as u64,
                title: &e.title,
                heading: &e.heading,
                body: &e.text,
            })
            .collect();
        if chunks.is_empty() {
            self.index.delete_document(id.0 as u64)?;
        } else {
            self.index.replace_document(id.0 as u64, &chunks)?;
        }
        Ok(())
    }

    /// Rebuilds the full-text index from the store (no re-parsing). Administrators only.
    pub fn rebuild_index(
        &self,
        ctx: &RequestContext,
        progress: &mut dyn FnMut(&IngestEvent),
    ) -> Result<usize> {
        let access = self.authorize(ctx)?;
        self.require_admin(&access, "rebuild the index")?;
        let n = self.rebuild_all(progress)?;
        self.audit_write(&access, "reindex", "", true)?;
        Ok(n)
    }

    fn rebuild_all(&self, progress: &mut dyn FnMut(&IngestEvent)) -> Result<usize> {
        let _guard = self.begin_write()?;
        let docs = self.store().documents_with_chunks()?;
        progress(&IngestEvent::Planned {
            files: docs.len(),
            bytes: 0,
        });
        self.index.clear()?;
        for (i, id) in docs.iter().enumerate() {
            self.index_document(*id)?;
            if i % 500 == 499 {
                self.index.commit()?;
            }
            progress(&IngestEvent::Reindexed { done: i + 1 });
        }
        self.index.commit()?;
        let mut store = self.store();
        store.mark_indexed(&docs)?;
        let tombstones = store.tombstones()?;
        store.clear_tombstones(&tombstones)?;
        Ok(docs.len())
    }

    /// Counts, sources and recent failures — of what `ctx` may read: administrators get the
    /// whole account, a user counts only readable documents and sees only sources holding one
    /// (no count, size or failure ever reveals a document they may not read).
    pub fn status(&self, ctx: &RequestContext) -> Result<Status> {
        let access = self.authorize(ctx)?;
        let status = if access.sees_everything() {
            let store = self.store();
            let embedded_chunks = match self.embedder_id() {
                Some(model) => store.vector_count(model)?,
                None => 0,
            };
            Status {
                data_dir: Some(self.paths.root.display().to_string()),
                store: store.stats()?,
                indexed_chunks: self.index.num_chunks()?,
                embedder: self.embedder_id().map(str::to_owned),
                embedded_chunks,
                reranker: self.reranker_id().map(str::to_owned),
                model_notes: self.model_notes.clone(),
                sources: store.sources()?,
                failures: store.failures(50)?,
                queue: Some(store.queue_counts()?),
            }
        } else {
            self.status_of_readable(&access)?
        };
        self.audit(
            &access,
            ("status", "", "ok"),
            status.store.documents,
            0,
            serde_json::Value::Null,
        )?;
        Ok(status)
    }

    /// Status counted over the documents `access` may read only.
    fn status_of_readable(&self, access: &Access) -> Result<Status> {
        let docs: Vec<DocumentRecord> = self
            .all_documents(None)?
            .into_iter()
            .filter(|d| access.can_read(d.id))
            .collect();
        let store = self.store();
        let mut by_status: std::collections::BTreeMap<String, u64> = Default::default();
        let mut stats = StoreStats {
            documents: docs.len() as u64,
            bytes: 0,
            pages: 0,
            chunks: 0,
            tables: 0,
            sources: 0,
            by_status: Vec::new(),
            stale_with_errors: 0,
            pending_index: 0,
        };
        let mut embedded_chunks = 0;
        // One read of the table list, not one per document (a round trip each in team mode).
        let mut tables_of: std::collections::BTreeMap<DocumentId, u64> = Default::default();
        for (doc, _) in store.all_sheet_tables()? {
            *tables_of.entry(doc).or_default() += 1;
        }
        for d in &docs {
            stats.bytes += d.size;
            stats.pages += u64::from(d.page_count.unwrap_or(0));
            stats.chunks += d.chunk_count;
            stats.tables += tables_of.get(&d.id).copied().unwrap_or(0);
            stats.pending_index += u64::from(d.index_pending);
            if d.error_code.is_some() && d.chunk_count > 0 {
                stats.stale_with_errors += 1;
            }
            *by_status.entry(d.status.clone()).or_default() += 1;
        }
        if let Some(model) = self.embedder_id() {
            let ids: Vec<DocumentId> = docs.iter().map(|d| d.id).collect();
            embedded_chunks = store.vector_count_for(model, &ids)?;
        }
        stats.by_status = by_status.into_iter().collect();
        let sources: Vec<SourceRecord> = store
            .sources()?
            .into_iter()
            .filter_map(|mut s| {
                s.documents = docs.iter().filter(|d| d.source == s.id).count() as u64;
                (s.documents > 0).then_some(s)
            })
            .collect();
        stats.sources = sources.len() as u64;
        let mut failures: Vec<DocumentRecord> = docs
            .iter()
            .filter(|d| d.error_code.is_some() || !matches!(d.status.as_str(), "indexed" | "empty"))
            .cloned()
            .collect();
        failures.sort_by_key(|d| std::cmp::Reverse(d.updated_at_ms));
        failures.truncate(50);
        Ok(Status {
            data_dir: None,
            indexed_chunks: stats.chunks
                - docs
                    .iter()
                    .filter(|d| d.index_pending)
                    .map(|d| d.chunk_count)
                    .sum::<u64>(),
            store: stats,
            embedder: self.embedder_id().map(str::to_owned),
            embedded_chunks,
            reranker: self.reranker_id().map(str::to_owned),
            model_notes: self.model_notes.clone(),
            sources,
            failures,
            queue: None,
        })
    }

    /// The account this engine serves.
    pub fn account(&self) -> &AccountId {
        &self.account
    }

    /// Every stored document (no permission check: callers filter), optionally only those
    /// under a folder.
    pub(crate) fn all_documents(&self, under: Option<&Path>) -> Result<Vec<DocumentRecord>> {
        let prefix = under.map(|p| {
            self.resolve(p)
                .unwrap_or_else(|_| p.to_path_buf())
                .display()
                .to_string()
        });
        Ok(self.store().documents(prefix.as_deref())?)
    }

    fn resolve(&self, path: &Path) -> Result<PathBuf> {
        self.fs
            .canonicalize(path)
            .map_err(|source| EngineError::Io {
                path: path.display().to_string(),
                source,
            })
    }
}

pub(crate) fn default_account() -> AccountId {
    // A constant that satisfies the id rules; `AccountId::new` only fails on invalid input.
    AccountId::new(DEFAULT_ACCOUNT).unwrap_or_else(|_| unreachable!("valid constant id"))
}

/// What [`Engine::repair`] fixed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RepairReport {
    /// Spreadsheet tables left behind by a crash between the two database files.
    pub dropped_tables: usize,
    pub reindexed_documents: usize,
    pub removed_documents: usize,
}

#[cfg(test)]
mod knowledge_tests;
#[cfg(test)]
mod permissions_tests;
#[cfg(test)]
mod queue_tests;
#[cfg(test)]
mod resources_tests;
#[cfg(test)]
mod semantic_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
