//! [`PgStore`]: the team database as the engine's storage [`Backend`].
//!
//! One value per replica (cheap: it holds the connection pool). Each domain trait is
//! implemented in the module that owns the domain's tables; this module holds the struct and
//! turns the crate's errors into the store's, keeping "retry later" distinguishable from "this
//! request is wrong".

use knowhub_authz::{AclTree, KeyHash, Memberships, Role, ScopeSet, UserId};
use knowhub_store::backend::{Backend, IdentityStore};
use knowhub_store::{Group, SourceId, StoreError, UserRecord};

use crate::{Database, PgDocuments, PgError, PgIdentity, PgJobs, PgVectors, db_message};

type StoreResult<T> = knowhub_store::Result<T>;

/// How long a replica's claim on a job lasts: a replica that dies mid-job has the job taken
/// over this long after its claim. Long enough for one large file's parse and embedding (the
/// engine works one job at a time per claim).
pub const JOB_LEASE_MS: i64 = 300_000;

/// The team database as a [`Backend`] for one replica.
#[derive(Debug, Clone)]
pub struct PgStore {
    pub(crate) db: Database,
    pub(crate) documents: PgDocuments,
    pub(crate) identity: PgIdentity,
    pub(crate) jobs: PgJobs,
    pub(crate) vectors: PgVectors,
}

impl PgStore {
    /// The store of replica `replica` (a name unique among running replicas, e.g.
    /// `host:pid`) on a connected, migrated database.
    pub fn new(db: &Database, replica: impl Into<String>) -> PgStore {
        PgStore {
            db: db.clone(),
            documents: PgDocuments::new(db),
            identity: PgIdentity::new(db),
            jobs: PgJobs::new(db, replica),
            vectors: PgVectors::new(db),
        }
    }

    /// Jobs queued by this store carry `host`, and it claims only those of `host` (see
    /// [`PgJobs::with_host`]).
    pub fn with_host(mut self, host: impl Into<String>) -> PgStore {
        self.jobs = self.jobs.with_host(host);
        self
    }

    /// The database this store uses.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// The SHA-256 of the server's root key, shared by every replica (`None`: dev mode).
    pub fn root_key_hash(&self) -> crate::Result<Option<String>> {
        let mut client = self.db.client()?;
        let row = client.query_opt("SELECT hash FROM system_keys WHERE name = 'root'", &[])?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Sets (or replaces) the root key's hash for every replica.
    pub fn set_root_key_hash(&self, hash: &str) -> crate::Result<()> {
        let mut client = self.db.client()?;
        client.execute(
            "INSERT INTO system_keys (name, hash) VALUES ('root', $1)
             ON CONFLICT (name) DO UPDATE SET hash = excluded.hash",
            &[&hash],
        )?;
        Ok(())
    }
}

/// Every domain trait is implemented in the module owning its tables.
impl Backend for PgStore {
    fn kind(&self) -> &'static str {
        "postgres"
    }
}

impl From<PgError> for StoreError {
    fn from(e: PgError) -> StoreError {
        if e.is_retryable() {
            return StoreError::Unavailable(e.to_string());
        }
        match e {
            PgError::Corrupt(message) => StoreError::Corrupt(message),
            PgError::Unsupported(what) => StoreError::Unsupported(what),
            PgError::Invalid(message) => StoreError::Database(format!("invalid input: {message}")),
            PgError::Db(e) => StoreError::Database(db_message(&e)),
            other => StoreError::Database(other.to_string()),
        }
    }
}

/// `?` for `postgres::Error` inside the trait impls.
pub(crate) fn pg(e: postgres::Error) -> StoreError {
    StoreError::from(PgError::Db(e))
}

/// Identity goes through [`PgIdentity`]; the permission version covers ACLs, memberships,
/// keys and roles alike (a wider trigger than SQLite's ACL-only counter: it only costs a
/// cache miss more often).
impl IdentityStore for PgStore {
    fn user(&self, id: &UserId) -> StoreResult<Option<UserRecord>> {
        Ok(self.identity.user(id)?)
    }

    fn users(&self) -> StoreResult<Vec<UserRecord>> {
        Ok(self.identity.users()?)
    }

    fn memberships(&self, user: &UserId) -> StoreResult<Memberships> {
        Ok(self.identity.memberships(user)?)
    }

    fn api_key_count(&self) -> StoreResult<u64> {
        Ok(self.identity.api_key_count()?)
    }

    fn user_for_key_hash(&self, hash: &KeyHash) -> StoreResult<Option<(UserId, Role)>> {
        Ok(self.identity.user_for_key_hash(hash)?)
    }

    fn acl_tree(&self, source: SourceId, default: ScopeSet) -> StoreResult<AclTree> {
        Ok(self.identity.acl_tree(source, default)?)
    }

    fn acl_version(&self) -> StoreResult<u64> {
        Ok(self.identity.permission_version()?)
    }

    fn add_user(&mut self, id: &UserId, display_name: &str, role: Role) -> StoreResult<bool> {
        Ok(self.identity.add_user(id, display_name, role)?)
    }

    fn set_role(&mut self, id: &UserId, role: Role) -> StoreResult<bool> {
        Ok(self.identity.set_role(id, role)?)
    }

    fn remove_user(&mut self, id: &UserId) -> StoreResult<bool> {
        Ok(self.identity.remove_user(id)?)
    }

    fn add_membership(&mut self, user: &UserId, group: &Group) -> StoreResult<bool> {
        Ok(self.identity.add_membership(user, group)?)
    }

    fn remove_membership(&mut self, user: &UserId, group: &Group) -> StoreResult<bool> {
        Ok(self.identity.remove_membership(user, group)?)
    }

    fn add_api_key(&mut self, user: &UserId, hash: &KeyHash, label: &str) -> StoreResult<bool> {
        Ok(self.identity.add_api_key(user, hash, label)?)
    }

    fn rotate_api_keys(&mut self, user: &UserId, hash: &KeyHash) -> StoreResult<bool> {
        Ok(self.identity.rotate_api_keys(user, hash)?)
    }

    fn revoke_api_keys(&mut self, user: &UserId) -> StoreResult<usize> {
        Ok(usize::try_from(self.identity.revoke_api_keys(user)?).unwrap_or(usize::MAX))
    }

    fn set_folder_acl(
        &mut self,
        source: SourceId,
        folder: &str,
        scopes: &ScopeSet,
    ) -> StoreResult<bool> {
        Ok(self.identity.set_folder_acl(source, folder, scopes)?)
    }

    fn clear_folder_acl(&mut self, source: SourceId, folder: &str) -> StoreResult<bool> {
        Ok(self.identity.clear_folder_acl(source, folder)?)
    }

    fn set_document_acl(
        &mut self,
        source: SourceId,
        document: &str,
        scopes: &ScopeSet,
    ) -> StoreResult<bool> {
        Ok(self.identity.set_document_acl(source, document, scopes)?)
    }

    fn clear_document_acl(&mut self, source: SourceId, document: &str) -> StoreResult<bool> {
        Ok(self.identity.clear_document_acl(source, document)?)
    }
}
