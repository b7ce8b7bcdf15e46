//! KnowHub's team store on PostgreSQL (≥ 15) with pgvector (≥ 0.8).
//!
//! Several `knowhub serve` replicas share one database and nothing else. This crate holds the
//! connection pool, the append-only migrations, and the domains stored there so far: chunk
//! vectors with their HNSW indexes, documents and chunks with an ordered change log that each
//! replica's full-text index (and its copy of the spreadsheet sheets) follows, identity (users, keys, memberships, ACLs), and the
//! ingestion queue shared by the replicas.
//!
//! It uses the synchronous `postgres` client: the engine is synchronous (as with rusqlite), the
//! HTTP server already runs engine calls on blocking threads, and the client is the same
//! protocol code as `tokio-postgres`. `sqlx` was not
//! chosen: its checked queries need a database at build time and everything in it is async.
//!
//! [`PgCluster`] starts a private server for tests, benchmarks and a one-machine team.
//!
//! ```no_run
//! use knowhub_pg::{Database, PgVectors};
//! let db = Database::connect("postgres://knowhub@db.internal/knowhub")?;
//! let vectors = PgVectors::new(&db);
//! let model = vectors.register_model("multilingual-e5-small", 384)?;
//! vectors.build_index(&model)?;
//! let readable = [1, 2, 3]; // documents the caller may read
//! let hits = vectors.search(&model, &[0.0; 384], 10, Some(&readable))?;
//! # Ok::<(), knowhub_pg::PgError>(())
//! ```

mod accounts;
mod chat;
mod cluster;
mod crawls;
mod documents;
mod follow;
mod groups;
mod identity;
mod import;
mod jobs;
mod knowledge;
pub mod migrations;
mod originals;
mod resources;
mod sheets;
mod store;
pub mod tls;
mod vectors;

use std::sync::Arc;
use std::time::Duration;

use r2d2_postgres::PostgresConnectionManager;
use r2d2_postgres::r2d2;
use thiserror::Error;

pub use accounts::{DEFAULT_ACCOUNT, account_schema};
pub use cluster::{CLUSTER_USER, PG_BIN_ENV, PG_TLS_BIN_ENV, PgCluster};
pub use documents::{CHANGE_LOG_LOCK, CHANGES_CHANNEL, Change, Compaction, PgDocuments};
pub use follow::{CatchUp, IndexFollower, applied_position, state_file};
pub use identity::PgIdentity;
pub use import::{CountCheck, ImportOptions, ImportReport, import_sqlite};
pub use jobs::PgJobs;
pub use store::{JOB_LEASE_MS, PgStore};
pub use vectors::{
    EXACT_BELOW_ROWS, EXACT_BELOW_SHARE, IndexOptions, PgVectors, Plan, SearchOptions, VectorModel,
};

/// Errors from the team store.
#[derive(Debug, Error)]
pub enum PgError {
    #[error("database error: {}", db_message(.0))]
    Db(#[from] postgres::Error),
    #[error("cannot reach the database: {0}")]
    Unreachable(String),
    #[error("invalid database address: {0}")]
    Address(String),
    #[error(
        "the database was migrated by a newer KnowHub ('{domain}' has steps this build, which \
         knows {known}, does not): upgrade this binary before serving it"
    )]
    DatabaseNewer { domain: String, known: usize },
    #[error(
        "the database was created by a different build: migration {step} of '{domain}' differs \
         (migrations are append-only)"
    )]
    MigrationEdited { domain: String, step: usize },
    #[error("migration {step} of '{domain}' failed: {source}")]
    Migration {
        domain: String,
        step: usize,
        source: postgres::Error,
    },
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
    #[error("invalid input: {0}")]
    Invalid(String),
    #[error("not supported in the team database: {0}")]
    Unsupported(String),
    #[error("full-text index: {0}")]
    Index(String),
    #[error("the replica's copy of the spreadsheet tables: {0}")]
    Sheets(String),
    #[error("private PostgreSQL cluster: {0}")]
    Cluster(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("reading the local store: {0}")]
    Local(#[from] rusqlite::Error),
    #[error("no account {0} in the team database")]
    NoAccount(String),
    #[error("the team database is not empty: {0}")]
    NotEmpty(String),
    #[error("the copy does not match the local store ({}): nothing was kept", .0.mismatch_summary())]
    ImportMismatch(Box<import::ImportReport>),
}

impl PgError {
    /// Whether retrying later may succeed (the server is restarting, a connection broke),
    /// as opposed to a request or schema that will keep failing.
    pub fn is_retryable(&self) -> bool {
        match self {
            PgError::Unreachable(_) => true,
            PgError::Db(e) => e.is_closed() || e.code().is_none_or(|c| is_transient(c.code())),
            _ => false,
        }
    }
}

/// The server's own message (with its detail) rather than the client's "db error" wrapper.
pub(crate) fn db_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_owned(),
        },
        None => e.to_string(),
    }
}

/// SQLSTATE classes of connection loss, shutdown and serialisation conflicts.
fn is_transient(code: &str) -> bool {
    code.starts_with("08") || code.starts_with("57P") || code == "40001" || code == "40P01"
}

pub type Result<T, E = PgError> = std::result::Result<T, E>;

/// An error with the causes the driver keeps behind it ("error performing TLS handshake:
/// invalid peer certificate: UnknownIssuer"), which its own message leaves out.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

/// Time since the Unix epoch in ms, as the SQLite store keeps times.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

type Pool = r2d2::Pool<PostgresConnectionManager<tls::Tls>>;

/// A pooled connection to the team database.
pub type PooledClient = r2d2::PooledConnection<PostgresConnectionManager<tls::Tls>>;

/// The team database: a connection pool over a migrated schema. Cheap to clone.
#[derive(Clone)]
pub struct Database {
    pool: Pool,
    /// For connections outside the pool (a replica's LISTEN connection).
    config: postgres::Config,
    tls: tls::Tls,
    /// The quoted schema of the pgvector extension: an account's connections do not search
    /// it (see `accounts.rs`), so SQL names its types and operators with it.
    vector_schema: Arc<str>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.pool.state();
        f.debug_struct("Database")
            .field("connections", &state.connections)
            .field("idle", &state.idle_connections)
            .finish()
    }
}

/// The quoted schema the pgvector extension is installed in.
fn vector_schema(client: &mut postgres::Client) -> Result<String> {
    client
        .query_opt(
            "SELECT quote_ident(n.nspname) FROM pg_extension e
             JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'",
            &[],
        )?
        .map(|row| row.get(0))
        .ok_or_else(|| PgError::Corrupt("the pgvector extension is not installed".into()))
}

/// Connections each process keeps at most.
const POOL_SIZE: u32 = 16;

impl Database {
    /// Connects (`postgres://user@host/db` or `host=/socket/dir dbname=…`; TLS with
    /// `sslmode=require`, see [`tls`]), and brings the schema up to this build's migrations,
    /// or refuses a database a newer build migrated.
    pub fn connect(address: &str) -> Result<Database> {
        Database::open(address, None)
    }

    /// Connects for the tables of `schema` (`None`: `public`), with its migrations.
    fn open(address: &str, schema: Option<&str>) -> Result<Database> {
        let (mut config, tls) = tls::configure(address)?;
        if let Some(schema) = schema {
            let options = config.get_options().unwrap_or_default();
            let options = format!("{options} -c search_path={schema}");
            config.options(options.trim_start());
        }
        // One connection first, so that a refused password or an unverified certificate is
        // reported as itself at once, not as a pool timeout ten seconds later.
        config
            .connect(tls.clone())
            .map_err(|e| PgError::Unreachable(with_causes(&e)))?;
        let pool = r2d2::Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(1))
            .connection_timeout(Duration::from_secs(10))
            .build(PostgresConnectionManager::new(config.clone(), tls.clone()))
            .map_err(|e| PgError::Unreachable(e.to_string()))?;
        let mut db = Database {
            pool,
            config,
            tls,
            vector_schema: Arc::from(""),
        };
        let mut client = db.client()?;
        let vector_schema = match schema {
            None => {
                migrations::run(&mut client, migrations::DOMAINS)?;
                vector_schema(&mut client)?
            }
            Some(schema) => {
                let vectors = vector_schema(&mut client)?;
                accounts::migrate(&mut client, schema, &vectors)?;
                vectors
            }
        };
        drop(client);
        db.vector_schema = Arc::from(vector_schema);
        Ok(db)
    }

    /// The quoted schema holding pgvector's types and operators.
    pub(crate) fn vector_schema(&self) -> &str {
        &self.vector_schema
    }

    /// A connection of its own, outside the pool (e.g. one that waits for notifications).
    pub fn connect_single(&self) -> Result<postgres::Client> {
        Ok(self.config.connect(self.tls.clone())?)
    }

    /// Whether connections are encrypted (the address asked for TLS).
    pub fn uses_tls(&self) -> bool {
        self.config.get_ssl_mode() != postgres::config::SslMode::Disable
    }

    /// A connection from the pool (waits up to 10 s for a free one).
    pub fn client(&self) -> Result<PooledClient> {
        self.pool
            .get()
            .map_err(|e| PgError::Unreachable(e.to_string()))
    }

    /// Whether the database answers now (for `/api/v1/health`).
    pub fn ping(&self) -> Result<()> {
        self.client()?.simple_query("SELECT 1")?;
        Ok(())
    }
}
