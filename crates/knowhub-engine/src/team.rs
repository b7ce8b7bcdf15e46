//! Team mode: the engine on a shared PostgreSQL database, one of several replicas.
//!
//! The database is the only thing replicas share. Records go through [`PgStore`]; each
//! replica keeps its own tantivy index in its data directory, derived from the database's
//! ordered change log by an [`IndexFollower`] on a background thread, which also reloads the
//! in-memory vectors of every document it applies. Permissions need no following: every
//! request reads the permission state it uses from the database (see `permissions.rs`).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use knowhub_index::TantivyIndex;
use knowhub_pg::{Database, IndexFollower, PgStore, state_file};
use knowhub_store::StoreError;

use crate::semantic::{Semantic, sync_vectors};
use crate::{EngineError, Result};

/// How often a replica looks for changes when no notification arrives (a notification is lost
/// while the listening connection is broken): the bound on how stale its search data can be.
pub const FOLLOW_POLL: Duration = Duration::from_secs(1);

/// Where a replica's shared state lives.
#[derive(Clone)]
pub struct TeamConfig {
    /// `postgres://user:password@host:port/database` (or `host=/socket/dir dbname=…`).
    pub database: String,
    /// This replica's name, unique among running replicas (its job claims carry it).
    pub replica: String,
}

impl TeamConfig {
    /// A team configuration named after this host and process.
    pub fn new(database: impl Into<String>) -> TeamConfig {
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "replica".into());
        TeamConfig {
            database: database.into(),
            replica: format!("{host}:{}", std::process::id()),
        }
    }
}

impl std::fmt::Debug for TeamConfig {
    /// The address may hold a password: it is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamConfig")
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

pub(crate) fn store_error(e: knowhub_pg::PgError) -> EngineError {
    EngineError::Store(StoreError::from(e))
}

/// Connects to the team database (running its migrations, or refusing a newer schema).
pub fn connect(config: &TeamConfig) -> Result<Database> {
    Database::connect(&config.database).map_err(store_error)
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

/// Opens this replica's index in `index_dir`, brings it up to the change log's end, then
/// follows the log on a thread. `semantic`'s vectors are reloaded for every changed document.
pub(crate) fn follow(
    config: &TeamConfig,
    db: &Database,
    index: Arc<TantivyIndex>,
    index_dir: &Path,
    semantic: Option<Arc<Semantic>>,
) -> Result<Follower> {
    let store = PgStore::new(db, &config.replica);
    let observer = Box::new(move |ids: &[knowhub_store::DocumentId]| {
        if let Some(sem) = &semantic {
            for id in ids {
                if let Err(e) = sync_vectors(&store, sem, *id) {
                    tracing::warn!(document = id.0, "reloading vectors failed: {e}");
                }
            }
        }
    });
    let mut follower = IndexFollower::new(db, index, state_file(index_dir))
        .map_err(store_error)?
        .with_observer(observer);
    let caught_up = follower.catch_up().map_err(store_error)?;
    tracing::info!(
        changes = caught_up.changes,
        documents = caught_up.documents,
        applied = caught_up.applied,
        "replica index caught up with the team database"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let address = config.database.clone();
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("knowhub-follow".into())
        .spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                let result =
                    follower.follow(&address, FOLLOW_POLL, |_| flag.load(Ordering::Relaxed));
                if let Err(e) = result {
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
    Ok(Follower {
        stop,
        thread: Some(thread),
    })
}
