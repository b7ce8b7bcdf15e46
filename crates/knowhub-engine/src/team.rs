//! Team mode: the engine on a shared PostgreSQL database, one of several replicas.
//!
//! The database is the only thing replicas share. Records go through
//! [`PgStore`](knowhub_pg::PgStore); each replica keeps its own tantivy index in its data
//! directory, derived from the database's ordered change log by an [`IndexFollower`] on a
//! background thread (a new replica catches up from the log on start). The same follower keeps
//! the replica's copy of the spreadsheet tables (`team-tables.sqlite`), which the SQL tool
//! queries as in local mode. Dense retrieval asks pgvector, with the caller's readable documents
//! inside the query ([`DenseVectors`]), so no replica holds vectors in memory. Permissions need no following:
//! every request reads the permission state it uses from the database (see `permissions.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use knowhub_index::{
    ChunkEntry, Result as IndexResult, SearchRequest, Snippet, TantivyIndex, TextHit, TextIndex,
};
use knowhub_pg::{Database, IndexFollower, PgDocuments, PgVectors, VectorModel, state_file};
use knowhub_store::{SheetReplica, StoreError};
use knowhub_vector::VectorHit;

use crate::{AccountId, DataPaths, EngineError, Result};

/// How often a replica looks for changes when no notification arrives (a notification is lost
/// while the listening connection is broken): the bound on how stale its search data can be.
pub const FOLLOW_POLL: Duration = Duration::from_secs(1);

/// How often a replica compacts the change log (one replica at a time; the first a minute
/// after start, so short-lived replicas also compact).
const COMPACT_EVERY: Duration = Duration::from_secs(3600);
const COMPACT_FIRST: Duration = Duration::from_secs(60);

/// How long the log keeps a removed document's last entry: a replica away for longer rebuilds
/// its index from the log when it returns.
pub const KEEP_REMOVALS: Duration = Duration::from_secs(7 * 24 * 3600);

/// Where a replica's shared state lives.
#[derive(Clone)]
pub struct TeamConfig {
    /// `postgres://user:password@host:port/database` (or `host=/socket/dir dbname=…`).
    pub database: String,
    /// This replica's name, unique among running replicas (its job claims carry it).
    pub replica: String,
    /// Which files this replica can read: replicas with the same host id (one machine, or
    /// storage shared under the same paths) take each other's ingestion jobs; no replica takes
    /// a job for a file it cannot see. Default: the machine's host name.
    pub host: String,
    /// The key file sealing resources' secure bodies: the same key on every replica (created
    /// by the first replica that needs it when missing). `None`: secure bodies are refused.
    pub secret_key_file: Option<PathBuf>,
}

impl TeamConfig {
    /// A team configuration named after this host and process.
    pub fn new(database: impl Into<String>) -> TeamConfig {
        let host = host_name();
        TeamConfig {
            database: database.into(),
            replica: format!("{host}:{}", std::process::id()),
            host,
            secret_key_file: None,
        }
    }
}

/// The machine's host name (Linux: the kernel's; else `$HOSTNAME`), or `localhost`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

impl std::fmt::Debug for TeamConfig {
    /// The address may hold a password: it is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamConfig")
            .field("replica", &self.replica)
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

pub(crate) fn store_error(e: knowhub_pg::PgError) -> EngineError {
    EngineError::Store(StoreError::from(e))
}

/// Connects to `account`'s tables in the team database (running their migrations, or
/// refusing a newer schema).
pub fn connect(config: &TeamConfig, account: &AccountId) -> Result<Database> {
    Database::connect_account(&config.database, account.as_str()).map_err(account_error)
}

/// A missing account is the caller's error, not the database's.
pub(crate) fn account_error(e: knowhub_pg::PgError) -> EngineError {
    match e {
        knowhub_pg::PgError::NoAccount(id) => EngineError::NotFound(format!("no account {id}")),
        other => store_error(other),
    }
}

/// Where a replica's index stands in the change log.
pub(crate) enum Position {
    /// This process follows the log into the index.
    Here(Arc<AtomicI64>),
    /// Another process on this data directory does (e.g. the CLI beside `knowhub serve`): its
    /// position file says how far.
    File(PathBuf),
}

impl Position {
    fn applied(&self) -> i64 {
        match self {
            Position::Here(p) => p.load(Ordering::Acquire),
            Position::File(path) => knowhub_pg::applied_position(path),
        }
    }
}

/// A team replica's full-text index as the engine sees it. The follower alone writes it, from
/// the change log, so the engine's own index writes are no-ops (the database holds them), and
/// `commit` (make writes visible) waits until the follower has applied everything committed
/// so far: a replica reads its own writes without indexing them twice.
pub(crate) struct FollowedIndex {
    index: Arc<TantivyIndex>,
    position: Position,
    documents: PgDocuments,
}

impl FollowedIndex {
    pub(crate) fn new(index: Arc<TantivyIndex>, position: Position, db: &Database) -> Self {
        FollowedIndex {
            index,
            position,
            documents: PgDocuments::new(db),
        }
    }

    /// Waits (at most `limit`) until the index has applied every change committed before this
    /// call; returns how many changes it is still behind (0: caught up).
    pub(crate) fn wait_caught_up(&self, limit: Duration) -> Result<i64> {
        let last = self.documents.last_change().map_err(store_error)?;
        let start = std::time::Instant::now();
        loop {
            let behind = last - self.position.applied();
            if behind <= 0 || start.elapsed() >= limit {
                if matches!(self.position, Position::File(_)) {
                    self.index.reload().map_err(EngineError::Index)?;
                }
                return Ok(behind.max(0));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl TextIndex for FollowedIndex {
    fn replace_document(&self, _doc_id: u64, _chunks: &[ChunkEntry<'_>]) -> IndexResult<()> {
        Ok(())
    }
    fn delete_document(&self, _doc_id: u64) -> IndexResult<()> {
        Ok(())
    }
    fn clear(&self) -> IndexResult<()> {
        Ok(())
    }
    fn commit(&self) -> IndexResult<()> {
        match self.wait_caught_up(FOLLOW_POLL * 5) {
            Ok(0) => {}
            Ok(behind) => tracing::warn!(behind, "the replica's index is behind the change log"),
            Err(e) => tracing::warn!("cannot read the change log's position: {e}"),
        }
        Ok(())
    }
    fn search(&self, request: &SearchRequest) -> IndexResult<Vec<TextHit>> {
        self.index.search(request)
    }
    fn snippet(&self, query_text: &str, text: &str, max_chars: usize) -> IndexResult<Snippet> {
        self.index.snippet(query_text, text, max_chars)
    }
    fn num_chunks(&self) -> IndexResult<u64> {
        self.index.num_chunks()
    }
    fn doc_ids(&self) -> IndexResult<BTreeSet<u64>> {
        self.index.doc_ids()
    }
    fn doc_chunk_counts(&self) -> IndexResult<BTreeMap<u64, u64>> {
        self.index.doc_chunk_counts()
    }
}

/// The embedder's vectors in the team database: searched there, never loaded.
#[derive(Debug, Clone)]
pub(crate) struct DenseVectors {
    vectors: PgVectors,
    model: VectorModel,
}

impl DenseVectors {
    /// Registers the embedder's model and makes sure its HNSW index exists (built once, by
    /// whichever replica gets there first; kept current by PostgreSQL after that).
    pub(crate) fn open(db: &Database, model: &str, dim: usize) -> Result<DenseVectors> {
        let vectors = PgVectors::new(db);
        let model = vectors.register_model(model, dim).map_err(store_error)?;
        vectors.build_index(&model).map_err(store_error)?;
        Ok(DenseVectors { vectors, model })
    }

    /// The `k` nearest chunks among `readable` documents (`None`: all), best first.
    pub(crate) fn search(
        &self,
        query: &[f32],
        k: usize,
        readable: Option<&[u64]>,
    ) -> Result<Vec<VectorHit>> {
        self.vectors
            .search(&self.model, query, k, readable)
            .map_err(store_error)
    }
}

/// Compacts the change log, saying what it removed; a failure waits for the next round.
fn compact(log: &PgDocuments) {
    match log.compact_changes(KEEP_REMOVALS) {
        Ok(done) if done.superseded + done.removed > 0 => tracing::info!(
            superseded = done.superseded,
            removed = done.removed,
            remaining = done.remaining,
            "compacted the team database's change log"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!("compacting the team database's change log failed: {e}"),
    }
}

/// The background thread that keeps a replica's index and vectors in step; stopped on drop.
pub(crate) struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Brings this replica's index (and its copy of the spreadsheet tables) up to the change log's
/// end, then follows the log on a thread; returns the thread and the index's position.
pub(crate) fn follow(
    db: &Database,
    account: &AccountId,
    index: Arc<TantivyIndex>,
    paths: &DataPaths,
) -> Result<(Follower, Arc<AtomicI64>)> {
    let index_dir = &paths.index;
    let sheets = SheetReplica::open(&paths.tables)?;
    let mut follower = IndexFollower::new(db, index, state_file(index_dir))
        .and_then(|f| f.with_sheets(sheets))
        .map_err(store_error)?;
    let position = follower.position();
    let caught_up = follower.catch_up().map_err(store_error)?;
    tracing::info!(
        changes = caught_up.changes,
        documents = caught_up.documents,
        applied = caught_up.applied,
        rebuilt = caught_up.rebuilt,
        "replica index caught up with the team database"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let log = PgDocuments::new(db);
    let (database, account) = (db.clone(), account.as_str().to_owned());
    let mut next_compaction = Instant::now() + COMPACT_FIRST;
    let thread = std::thread::Builder::new()
        .name("knowhub-follow".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let result = follower.follow(FOLLOW_POLL, |_| {
                    if Instant::now() >= next_compaction {
                        next_compaction = Instant::now() + COMPACT_EVERY;
                        compact(&log);
                    }
                    flag.load(Ordering::Relaxed)
                });
                if let Err(e) = result {
                    // An account deleted through another replica: nothing left to follow.
                    if !database.account_exists(&account).unwrap_or(true) {
                        tracing::info!(%account, "the account was deleted; stopped following it");
                        return;
                    }
                    // Not retryable (a corrupt row, the index's disk): say so, and try again
                    // later rather than leave the replica silently stale.
                    tracing::error!("following the team database's change log failed: {e}");
                    std::thread::sleep(FOLLOW_POLL * 5);
                }
            }
        })
        .map_err(|source| EngineError::Io {
            path: index_dir.display().to_string(),
            source,
        })?;
    Ok((
        Follower {
            stop,
            thread: Some(thread),
        },
        position,
    ))
}
