//! Accounts and sign-in: the [`Hub`] turns credentials into a [`RequestContext`] and hands out
//! one [`Engine`] per account.
//!
//! * **Accounts are isolated**: each is its own directory (`accounts/<id>/`: store, tables,
//!   full-text index, vectors); no query of one account can touch another's files, and deleting
//!   an account removes its directory, i.e. all of its data and index entries.
//! * **Modes** (seed 003 §10.2): with no root key configured the hub runs in *dev mode* —
//!   requests without a key act as the `default` user (ROOT) of the `default` account, which is
//!   what a single-user desktop wants. `knowhub auth init` creates a root key (shown once; only
//!   its SHA-256 is kept in `system/root_key.sha256`) and switches to *production mode*: every
//!   request must present a key (the root key, or a user's key), compared in constant time.
//! * **Acting as another user** (`--as`): ROOT anywhere, an ADMIN within their account, or
//!   anyone in dev mode; the resulting context has the *target's* role, so an administrator
//!   previews exactly what that user sees.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use knowhub_authz::{AccountId, AgentId, ApiKey, KeyHash, RequestContext, Role, UserId, verify};
use knowhub_store::Store;
use knowhub_store::backend::Backend;

use crate::{
    DEFAULT_ACCOUNT, DEFAULT_USER, DataPaths, Engine, EngineConfig, EngineError, Fs, ModelSet,
    RealFs, Result, new_trace_id,
};

/// Whether keys are required.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Mode {
    /// No root key configured: requests without a key act as the default ROOT user.
    Dev,
    /// A root key is configured: every request needs a valid key.
    Production,
}

/// What a front end knows about the caller.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// The root key or a user's key.
    pub api_key: Option<String>,
    /// The account to work in (ROOT and dev mode; a user key implies its account).
    pub account: Option<String>,
    /// Act as this user of the account (ROOT, the account's ADMINs, or dev mode).
    pub act_as: Option<String>,
    /// The agent acting for the user, if any.
    pub agent: Option<String>,
    /// The session the request belongs to.
    pub session: Option<String>,
}

/// An account, as ROOT sees it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AccountInfo {
    pub id: String,
    pub users: usize,
    pub documents: usize,
}

/// Accounts, sign-in and the engines serving them.
pub struct Hub {
    config: EngineConfig,
    fs: Arc<dyn Fs>,
    /// Loaded once, when the first engine opens (so a refused sign-in loads no model).
    models: Mutex<Option<ModelSet>>,
    engines: Mutex<HashMap<String, Arc<Engine>>>,
    /// Team mode: the shared database's default account (sign-in reads users, keys and the
    /// root key there; other accounts are schemas in the same database).
    team: Option<knowhub_pg::PgStore>,
    /// Team mode: the other accounts' stores sign-in has used.
    team_accounts: Mutex<HashMap<String, knowhub_pg::PgStore>>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("data_dir", &self.config.data_dir)
            .finish_non_exhaustive()
    }
}

/// Account ids name directories: a stricter rule than other ids.
fn account_id(raw: &str) -> Result<AccountId> {
    let ok = !raw.is_empty()
        && raw.len() <= 64
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && !raw.starts_with('-');
    if !ok {
        return Err(EngineError::InvalidInput(format!(
            "invalid account id {raw:?}: use 1-64 letters, digits, '_' or '-'"
        )));
    }
    AccountId::new(raw).map_err(|e| EngineError::InvalidInput(e.to_string()))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EngineError + '_ {
    move |source| EngineError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl Hub {
    /// Opens the hub on the real file system; the configured models are loaded once for all
    /// accounts, when the first engine opens.
    pub fn open(config: EngineConfig) -> Result<Hub> {
        Hub::new(config, Arc::new(RealFs), None)
    }

    /// Opens the hub with the given file system and loaded models.
    pub fn open_with(config: EngineConfig, fs: Arc<dyn Fs>, models: ModelSet) -> Result<Hub> {
        Hub::new(config, fs, Some(models))
    }

    fn new(config: EngineConfig, fs: Arc<dyn Fs>, models: Option<ModelSet>) -> Result<Hub> {
        let accounts = config.data_dir.join("accounts");
        std::fs::create_dir_all(&accounts).map_err(io(&accounts))?;
        let team = match &config.team {
            Some(t) => Some(knowhub_pg::PgStore::new(
                &crate::team::connect(t, &account_id(DEFAULT_ACCOUNT)?)?,
                &t.replica,
            )),
            None => None,
        };
        Ok(Hub {
            config,
            fs,
            models: Mutex::new(models),
            engines: Mutex::new(HashMap::new()),
            team,
            team_accounts: Mutex::new(HashMap::new()),
        })
    }

    /// Team mode: whether the shared database answers now (`None`: local mode).
    pub fn database_health(&self) -> Option<std::result::Result<(), String>> {
        self.team
            .as_ref()
            .map(|t| t.database().ping().map_err(|e| e.to_string()))
    }

    fn models(&self) -> Result<ModelSet> {
        let mut models = self.models.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = models.as_ref() {
            return Ok(m.clone());
        }
        let loaded = ModelSet::load(&self.config.models)?;
        *models = Some(loaded.clone());
        Ok(loaded)
    }

    /// A connection to an existing account's store (sign-in needs no engine).
    fn account_store(&self, account: &AccountId) -> Result<Option<Box<dyn Backend>>> {
        if !self.account_exists(account)? {
            return Ok(None);
        }
        if let (Some(team), Some(config)) = (&self.team, &self.config.team) {
            if account.as_str() == DEFAULT_ACCOUNT {
                return Ok(Some(Box::new(team.clone())));
            }
            let mut stores = self.team_accounts.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(store) = stores.get(account.as_str()) {
                return Ok(Some(Box::new(store.clone())));
            }
            let store =
                knowhub_pg::PgStore::new(&crate::team::connect(config, account)?, &config.replica);
            stores.insert(account.as_str().to_owned(), store.clone());
            return Ok(Some(Box::new(store)));
        }
        let paths = DataPaths::new(&self.config.data_dir, account);
        Ok(Some(Box::new(Store::open(&paths.store, &paths.tables)?)))
    }

    fn root_key_path(&self) -> PathBuf {
        self.config.data_dir.join("system").join("root_key.sha256")
    }

    fn root_key_hash(&self) -> Result<Option<KeyHash>> {
        if let Some(team) = &self.team {
            let stored = team.root_key_hash().map_err(crate::team::store_error)?;
            return stored
                .map(|h| {
                    KeyHash::try_from(h)
                        .map_err(|e| EngineError::InvalidInput(format!("stored root key: {e}")))
                })
                .transpose();
        }
        let path = self.root_key_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => KeyHash::try_from(text.trim().to_owned())
                .map(Some)
                .map_err(|e| EngineError::InvalidInput(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path)(e)),
        }
    }

    /// Dev mode (no root key) or production mode (keys required).
    pub fn mode(&self) -> Result<Mode> {
        Ok(if self.root_key_hash()?.is_some() {
            Mode::Production
        } else {
            Mode::Dev
        })
    }

    /// Whether account `id` exists (in team mode: in the database, asked on every call, so an
    /// account deleted through another replica is gone here too).
    fn account_exists(&self, id: &AccountId) -> Result<bool> {
        if let Some(team) = &self.team {
            return team
                .database()
                .account_exists(id.as_str())
                .map_err(crate::team::store_error);
        }
        Ok(DataPaths::new(&self.config.data_dir, id).store.exists())
    }

    /// Existing account ids (the default account always counts: it is created on first use).
    fn account_ids(&self) -> Result<Vec<AccountId>> {
        let dir = self.config.data_dir.join("accounts");
        let mut out = vec![account_id(DEFAULT_ACCOUNT)?];
        if let Some(team) = &self.team {
            for id in team
                .database()
                .accounts()
                .map_err(crate::team::store_error)?
            {
                out.push(account_id(&id)?);
            }
            out.sort_by(|a, b| a.as_str().cmp(b.as_str()));
            return Ok(out);
        }
        for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let entry = entry.map_err(io(&dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Ok(id) = account_id(&name)
                && id.as_str() != DEFAULT_ACCOUNT
                && self.account_exists(&id)?
            {
                out.push(id);
            }
        }
        out.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(out)
    }

    /// Resolves credentials into a request context (seed 003 `resolve_identity`).
    pub fn authenticate(&self, creds: &Credentials) -> Result<RequestContext> {
        let requested = creds.account.as_deref().map(account_id).transpose()?;
        let mut ctx = match creds.api_key.as_deref() {
            Some(key) => self.context_for_key(key, requested.as_ref())?,
            None => match self.mode()? {
                Mode::Production => {
                    return Err(EngineError::Unauthenticated(
                        "this KnowHub requires an API key: pass --api-key or set KNOWHUB_API_KEY"
                            .into(),
                    ));
                }
                Mode::Dev => RequestContext {
                    account: requested.unwrap_or(account_id(DEFAULT_ACCOUNT)?),
                    user: user_id(DEFAULT_USER)?,
                    agent: None,
                    role: Role::Root,
                    session: None,
                    trace_id: new_trace_id(),
                },
            },
        };
        if ctx.account.as_str() != DEFAULT_ACCOUNT && !self.account_exists(&ctx.account)? {
            return Err(EngineError::NotFound(format!("no account {}", ctx.account)));
        }
        if let Some(target) = creds.act_as.as_deref() {
            let target = user_id(target)?;
            if target != ctx.user {
                let dev = creds.api_key.is_none();
                let allowed = dev || matches!(ctx.role, Role::Root | Role::Admin);
                if !allowed {
                    return Err(EngineError::Forbidden(
                        "only administrators can act as another user".into(),
                    ));
                }
                let user = match self.account_store(&ctx.account)? {
                    Some(store) => store.user(&target)?.filter(|u| u.removed_at.is_none()),
                    None => None,
                }
                .ok_or_else(|| EngineError::NotFound(format!("no active user {target}")))?;
                if user.role == Role::Root && ctx.role != Role::Root {
                    return Err(EngineError::Forbidden(
                        "only ROOT can act as a ROOT user".into(),
                    ));
                }
                ctx.session = Some(format!("acting-for:{}", ctx.user));
                ctx.user = user.id;
                ctx.role = user.role;
            }
        }
        if let Some(agent) = creds.agent.as_deref() {
            ctx.agent =
                Some(AgentId::new(agent).map_err(|e| EngineError::InvalidInput(e.to_string()))?);
        }
        if let Some(session) = &creds.session {
            ctx.session = Some(session.clone());
        }
        Ok(ctx)
    }

    fn context_for_key(&self, key: &str, requested: Option<&AccountId>) -> Result<RequestContext> {
        if let Some(root) = self.root_key_hash()?
            && verify(key, &root)
        {
            return Ok(RequestContext {
                account: requested.cloned().unwrap_or(account_id(DEFAULT_ACCOUNT)?),
                user: user_id(crate::permissions::ROOT_KEY_USER)?,
                agent: None,
                role: Role::Root,
                session: None,
                trace_id: new_trace_id(),
            });
        }
        let hash = KeyHash::of(key);
        for account in self.account_ids()? {
            let Some(store) = self.account_store(&account)? else {
                continue;
            };
            if let Some((user, role)) = store.user_for_key_hash(&hash)? {
                if requested.is_some_and(|r| *r != account) {
                    return Err(EngineError::Unauthenticated(
                        "this API key belongs to another account".into(),
                    ));
                }
                return Ok(RequestContext {
                    account,
                    user,
                    agent: None,
                    role,
                    session: None,
                    trace_id: new_trace_id(),
                });
            }
        }
        Err(EngineError::Unauthenticated(
            "the API key is not valid (it may have been rotated, or its user removed)".into(),
        ))
    }

    /// The engine of `ctx`'s account (opened on first use).
    pub fn engine(&self, ctx: &RequestContext) -> Result<Arc<Engine>> {
        self.engine_for(&ctx.account)
    }

    /// The engine of an existing account (or the default one), opened on first use.
    fn engine_for(&self, account: &AccountId) -> Result<Arc<Engine>> {
        if account.as_str() != DEFAULT_ACCOUNT && !self.account_exists(account)? {
            // Deleted through another replica: let its engine go (its follower stops).
            self.engines
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(account.as_str());
            return Err(EngineError::NotFound(format!("no account {account}")));
        }
        self.open_engine(account)
    }

    /// Opens (creating its directory if needed) or returns the engine of `account`.
    fn open_engine(&self, account: &AccountId) -> Result<Arc<Engine>> {
        let mut engines = self.engines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = engines.get(account.as_str()) {
            return Ok(Arc::clone(e));
        }
        let mut config = self.config.clone();
        config.account = account.clone();
        let engine = Arc::new(Engine::open_with(
            config,
            Arc::clone(&self.fs),
            self.models()?,
        )?);
        engines.insert(account.as_str().to_owned(), Arc::clone(&engine));
        Ok(engine)
    }

    fn require_root(ctx: &RequestContext, what: &str) -> Result<()> {
        if ctx.role == Role::Root {
            Ok(())
        } else {
            Err(EngineError::Forbidden(format!("only ROOT can {what}")))
        }
    }

    /// Accounts with their user and document counts (ROOT only).
    pub fn accounts(&self, ctx: &RequestContext) -> Result<Vec<AccountInfo>> {
        Hub::require_root(ctx, "list accounts")?;
        let mut out = Vec::new();
        for id in self.account_ids()? {
            let engine = self.engine_for(&id)?;
            let scoped = RequestContext {
                account: id.clone(),
                ..ctx.clone()
            };
            out.push(AccountInfo {
                id: id.as_str().to_owned(),
                users: engine.users(&scoped)?.len(),
                documents: engine.status(&scoped)?.store.documents as usize,
            });
        }
        Ok(out)
    }

    /// Creates an account with its first administrator; returns that administrator's key
    /// (shown once). ROOT only.
    pub fn create_account(&self, ctx: &RequestContext, id: &str, admin: &str) -> Result<ApiKey> {
        Hub::require_root(ctx, "create accounts")?;
        let id = account_id(id)?;
        let admin = user_id(admin)?;
        if self.account_exists(&id)? {
            return Err(EngineError::InvalidInput(format!(
                "account {id} already exists"
            )));
        }
        if let Some(team) = &self.team {
            team.database()
                .create_account(id.as_str())
                .map_err(crate::team::store_error)?;
        }
        let engine = self.open_engine(&id)?;
        let scoped = RequestContext {
            account: id.clone(),
            ..ctx.clone()
        };
        engine.add_user(&scoped, &admin, admin.as_str(), Role::Admin)?;
        engine.rotate_api_key(&scoped, &admin)
    }

    /// Deletes an account and everything in it: store, spreadsheet tables, full-text index and
    /// vectors (its directory is first renamed away atomically, then removed). ROOT only; the
    /// default account cannot be deleted.
    pub fn delete_account(&self, ctx: &RequestContext, id: &str) -> Result<()> {
        Hub::require_root(ctx, "delete accounts")?;
        let id = account_id(id)?;
        if id.as_str() == DEFAULT_ACCOUNT {
            return Err(EngineError::InvalidInput(
                "the default account cannot be deleted".into(),
            ));
        }
        if !self.account_exists(&id)? {
            return Err(EngineError::NotFound(format!("no account {id}")));
        }
        {
            let mut engines = self.engines.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(engine) = engines.remove(id.as_str())
                && Arc::strong_count(&engine) > 1
            {
                engines.insert(id.as_str().to_owned(), engine);
                return Err(EngineError::Busy);
            }
        }
        let paths = DataPaths::new(&self.config.data_dir, &id);
        if let Some(team) = &self.team {
            team.database()
                .delete_account(id.as_str())
                .map_err(crate::team::store_error)?;
            self.team_accounts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(id.as_str());
            // This replica's derived copies (index, tables); other replicas drop theirs
            // when they next restart.
            if !paths.account.exists() {
                return Ok(());
            }
        }
        // `.` cannot start an account id, so the renamed directory is never mistaken for one.
        let doomed = self.config.data_dir.join("accounts").join(format!(
            ".deleted-{}-{}",
            id,
            std::process::id()
        ));
        std::fs::rename(&paths.account, &doomed).map_err(io(&paths.account))?;
        std::fs::remove_dir_all(&doomed).map_err(io(&doomed))?;
        Ok(())
    }

    /// Creates (or replaces) the root key and switches to production mode; returns the key,
    /// shown once. ROOT only (in dev mode, the default user is ROOT).
    pub fn init_root_key(&self, ctx: &RequestContext) -> Result<ApiKey> {
        Hub::require_root(ctx, "set the root key")?;
        let key = ApiKey::generate().map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        if let Some(team) = &self.team {
            team.set_root_key_hash(&key.hash().to_string())
                .map_err(crate::team::store_error)?;
            return Ok(key);
        }
        let path = self.root_key_path();
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, format!("{}\n", key.hash())).map_err(io(&tmp))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
                .map_err(io(&tmp))?;
        }
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        Ok(key)
    }
}

fn user_id(raw: &str) -> Result<UserId> {
    UserId::new(raw).map_err(|e| EngineError::InvalidInput(e.to_string()))
}

/// The context of dev mode: the `default` user, ROOT, in the `default` account. For front ends
/// that run on data they own (benchmarks, evaluations, tests) or a hub in dev mode.
pub fn dev_context() -> RequestContext {
    RequestContext {
        account: crate::default_account(),
        user: UserId::new(DEFAULT_USER).unwrap_or_else(|_| unreachable!("valid constant id")),
        agent: None,
        role: Role::Root,
        session: None,
        trace_id: new_trace_id(),
    }
}
