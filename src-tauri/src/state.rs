//! Everything the app holds between commands: the hub, who is signed in, the answer model,
//! the background ingestion service and the HTTP API when it is served. Commands borrow it
//! through Tauri's managed state.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock, TryLockError};

use knowhub_agent::CancelFlag;
use knowhub_agent::providers::LlmChoice;
use knowhub_engine::{
    Credentials, EmbedderSpec, Engine, EngineConfig, Hub, ModelConfig, ParserBackend,
    RequestContext, Role, WatchOptions, WatchService,
};
use knowhub_llm::Llm;

use crate::api_server::{self, RunningApi};
use crate::dto::{Base, TeamAnswers, TeamModels, TeamStatus};
use crate::error::{CmdResult, CommandError};
use crate::library::{Library, LocalLibrary};
use crate::settings::{ApiServerSetting, SearchModels, Settings};
use crate::team::{self, TeamLibrary, TeamLink};

/// How the app was started (environment variables shared with the CLI).
#[derive(Debug, Clone)]
pub struct AppConfig {
    pub data_dir: PathBuf,
    /// The configured user's key (`KNOWHUB_API_KEY`); none in single-user (dev) mode.
    pub api_key: Option<String>,
    pub account: Option<String>,
    /// `KNOWHUB_EMBEDDER`: `default`, a manifest name, a folder, or `off`; overrides the
    /// settings pane's choice when set.
    pub embedder: Option<String>,
    /// Run parsers in worker processes of this executable (the CLI's sandbox).
    pub sandbox_parsers: bool,
    /// Keep the team server's key in the OS keyring when the session has one
    /// (`KNOWHUB_NO_KEYRING=1`: always the private file).
    pub prefer_keyring: bool,
}

impl AppConfig {
    pub fn from_env() -> CmdResult<AppConfig> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let data_dir = match var("KNOWHUB_DATA_DIR") {
            Some(d) => PathBuf::from(d),
            None => EngineConfig::default_data_dir().ok_or_else(|| {
                CommandError::new("io", "no data directory: set KNOWHUB_DATA_DIR")
            })?,
        };
        Ok(AppConfig {
            data_dir,
            api_key: var("KNOWHUB_API_KEY"),
            account: var("KNOWHUB_ACCOUNT"),
            embedder: var("KNOWHUB_EMBEDDER"),
            sandbox_parsers: true,
            prefer_keyring: var("KNOWHUB_NO_KEYRING").is_none_or(|v| v == "0"),
        })
    }
}

/// The signed-in user and their account's engine.
#[derive(Debug, Clone)]
pub(crate) struct Signed {
    pub ctx: RequestContext,
    pub engine: Arc<Engine>,
}

impl Signed {
    /// Administrators of the account (and ROOT): what the settings pane offers. The engine
    /// still decides every call.
    pub(crate) fn is_admin(&self) -> bool {
        matches!(self.ctx.role, Role::Root | Role::Admin)
    }
}

/// The loaded answer model, for the choice it was loaded from.
#[derive(Debug, Default)]
struct LlmSlot {
    /// The setting and the search models' GPU switch the model was loaded for.
    choice: Option<(LlmChoice, bool)>,
    llm: Option<Arc<dyn Llm>>,
    note: Option<String>,
}

/// The HTTP API: the running server, or why the last start failed.
#[derive(Debug, Default)]
struct ApiSlot {
    running: Option<RunningApi>,
    /// A sentence for the settings pane (the port is in use, …).
    error: Option<String>,
}

/// What the settings pane shows about the HTTP API.
#[derive(Debug, Clone)]
pub(crate) struct ApiStatus {
    pub setting: ApiServerSetting,
    /// Where it listens, while it runs.
    pub addr: Option<SocketAddr>,
    pub error: Option<String>,
}

pub struct AppState {
    /// Shared with the HTTP API when it is served (same engines, same permission checks).
    hub: Arc<Hub>,
    pub(crate) data_dir: PathBuf,
    signed: RwLock<Signed>,
    settings: Mutex<Settings>,
    /// The search models the knowledge base was opened with (the settings may differ until
    /// the next start).
    pub(crate) opened_with: SearchModels,
    /// `KNOWHUB_EMBEDDER`, when set (it wins over the settings).
    pub(crate) embedder_override: Option<String>,
    llm: Mutex<LlmSlot>,
    /// Questions in flight, by the window's request id (for the stop button).
    asks: Mutex<HashMap<String, CancelFlag>>,
    /// The databases' schemas, read once for every question the window asks.
    pub(crate) schemas: Arc<knowhub_agent::SchemaCache>,
    watch: Mutex<Option<WatchService>>,
    /// An async lock: starting and stopping the server await, and never overlap.
    api: tokio::sync::Mutex<ApiSlot>,
    /// The team server the app joined, when it did.
    team: RwLock<Option<Arc<TeamLink>>>,
    prefer_keyring: bool,
    /// Why the stored team link could not be restored at start (shown as the team's state).
    team_error: Mutex<Option<CommandError>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Opens the knowledge base as the configured user (models load here, once).
    pub fn open(config: &AppConfig) -> CmdResult<AppState> {
        let settings = Settings::load(&config.data_dir);
        let search = effective_search(&settings.search, config.embedder.as_deref());
        let mut engine_config = EngineConfig::new(&config.data_dir);
        engine_config.models = ModelConfig {
            models_dir: None,
            embedder: search
                .embedder
                .parse::<EmbedderSpec>()
                .map_err(|e| CommandError::invalid(format!("embedder {}: {e}", search.embedder)))?,
            reranker: search.reranker.clone(),
            device: search.device(),
            require_embedder: false,
            ocr: true,
        };
        if config.sandbox_parsers {
            let exe = std::env::current_exe()
                .map_err(|e| CommandError::new("io", format!("cannot locate the app: {e}")))?;
            engine_config.parser = ParserBackend::Worker {
                program: exe,
                args: vec!["parse-worker".into()],
            };
        }
        // A new knowledge base keeps its secrets' key in the OS keyring when the session has
        // one (an existing key stays where it is).
        engine_config.keyring_for_new_keys = true;
        let hub = Arc::new(Hub::open(engine_config)?);
        let ctx = hub.authenticate(&Credentials {
            api_key: config.api_key.clone(),
            account: config.account.clone(),
            ..Credentials::default()
        })?;
        let engine = hub.engine(&ctx)?;
        // The joined team: its address from the settings, its key from where it was kept.
        // Nothing is sent yet; a failure here is the team's state, not the app's.
        let (team, team_error) = match &settings.team {
            None => (None, None),
            Some(setting) => match team::load_key(&config.data_dir).and_then(|key| {
                let (key, store) = key.ok_or_else(|| {
                    CommandError::new(
                        "unauthenticated",
                        "the team key is missing: join the team again",
                    )
                })?;
                TeamLink::new(setting.clone(), &key, store)
            }) {
                Ok(link) => (Some(Arc::new(link)), None),
                Err(e) => (None, Some(e)),
            },
        };
        Ok(AppState {
            hub,
            data_dir: config.data_dir.clone(),
            signed: RwLock::new(Signed { ctx, engine }),
            settings: Mutex::new(settings),
            opened_with: search,
            embedder_override: config.embedder.clone(),
            llm: Mutex::new(LlmSlot::default()),
            asks: Mutex::new(HashMap::new()),
            schemas: Arc::default(),
            watch: Mutex::new(None),
            api: tokio::sync::Mutex::new(ApiSlot::default()),
            team: RwLock::new(team),
            prefer_keyring: config.prefer_keyring,
            team_error: Mutex::new(team_error),
        })
    }

    /// The knowledge base `base` names, as the signed-in user (the team: as the key's user).
    pub(crate) fn library(&self, base: Base) -> CmdResult<Box<dyn Library + '_>> {
        match base {
            Base::Local => Ok(Box::new(LocalLibrary {
                state: self,
                signed: self.signed(),
                team: None,
                team_only: false,
            })),
            Base::Team => {
                let link = self.joined_team()?;
                let team = TeamLibrary {
                    link: link.clone(),
                    downloads: self.data_dir.join("team-downloads"),
                };
                Ok(Box::new(crate::team_here::TeamHereLibrary {
                    team,
                    answers: self.team_answers(),
                    here: LocalLibrary {
                        state: self,
                        signed: self.signed(),
                        team: Some(link),
                        team_only: true,
                    },
                    answered: crate::team_here::AnsweredHere::of(&self.data_dir),
                }))
            }
        }
    }

    /// The Settings panes' administration of `base` (the team: as the key's user).
    pub(crate) fn administration(
        &self,
        base: Base,
    ) -> CmdResult<Box<dyn crate::administration::Administration>> {
        Ok(match base {
            Base::Local => Box::new(crate::administration::LocalAdministration {
                signed: self.signed(),
            }),
            Base::Team => Box::new(crate::administration::TeamAdministration::new(
                self.joined_team()?,
            )?),
        })
    }

    /// Who writes the team's answers (Settings → Team).
    pub(crate) fn team_answers(&self) -> TeamAnswers {
        self.settings().team.map(|t| t.answers).unwrap_or_default()
    }

    /// Chooses who writes the team's answers.
    pub(crate) fn set_team_answers(&self, answers: TeamAnswers) -> CmdResult<TeamStatus> {
        let mut settings = self.settings();
        let Some(team) = settings.team.as_mut() else {
            return Err(CommandError::new(
                "not_joined",
                "this app has not joined a team server",
            ));
        };
        team.answers = answers;
        let setting = team.clone();
        self.save_settings(settings)?;
        let mut slot = self.team.write().unwrap_or_else(|p| p.into_inner());
        if let Some(link) = slot.as_ref() {
            *slot = Some(Arc::new(TeamLink {
                setting,
                client: link.client.clone(),
                key_store: link.key_store,
            }));
        }
        drop(slot);
        Ok(self.team_status())
    }

    /// Where a question is answered: in `base`, or with `with_team` by this computer's
    /// copilot over this computer's documents and the team's.
    pub(crate) fn question_library(
        &self,
        base: Base,
        with_team: bool,
    ) -> CmdResult<Box<dyn Library + '_>> {
        if !with_team || base == Base::Team {
            return self.library(base);
        }
        Ok(Box::new(LocalLibrary {
            state: self,
            signed: self.signed(),
            team: Some(self.joined_team()?),
            team_only: false,
        }))
    }

    /// The joined team server, or why there is none.
    pub(crate) fn joined_team(&self) -> CmdResult<Arc<TeamLink>> {
        self.team_link().ok_or_else(|| {
            self.team_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .unwrap_or_else(|| {
                    CommandError::new("not_joined", "this app has not joined a team server")
                })
        })
    }

    fn team_link(&self) -> Option<Arc<TeamLink>> {
        self.team.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The models the joined team server answers and searches with (asks the server).
    pub(crate) fn team_models(&self) -> CmdResult<TeamModels> {
        let m = self.joined_team()?.client.models()?;
        Ok(TeamModels {
            answer_model: m.answer_model,
            embedder: m.embedder,
            reranker: m.reranker,
            notes: m.notes,
        })
    }

    /// The joined team and whether it answers now (asks the server).
    pub(crate) fn team_status(&self) -> TeamStatus {
        match self.team_link() {
            Some(link) => link.status(),
            None => match self
                .team_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
            {
                Some(e) => TeamStatus {
                    joined: true,
                    server: self.settings().team.map(|t| t.server),
                    state: e.kind,
                    message: Some(e.message),
                    answers: self.team_answers(),
                    ..team::not_joined()
                },
                None => team::not_joined(),
            },
        }
    }

    /// Joins the team server at `server` with `api_key`: kept only when the server accepts
    /// the key (nothing is stored otherwise).
    pub(crate) fn join_team(
        &self,
        server: &str,
        api_key: &str,
        ca_file: Option<PathBuf>,
    ) -> CmdResult<TeamStatus> {
        let setting = team::TeamSetting {
            server: server.trim().trim_end_matches('/').to_owned(),
            ca_file,
            // Joining again (a new key) keeps the choice made for this app.
            answers: self.team_answers(),
        };
        let mut link = TeamLink::new(setting.clone(), api_key.trim(), "file")?;
        link.client.me()?;
        link.key_store = team::store_key(&self.data_dir, api_key.trim(), self.prefer_keyring)?;
        let mut settings = self.settings();
        settings.team = Some(setting);
        settings.welcomed = true;
        self.save_settings(settings)?;
        *self.team.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(link));
        *self.team_error.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(self.team_status())
    }

    /// Leaves the team server: its address and key are forgotten (the server keeps the
    /// user's conversations).
    pub(crate) fn leave_team(&self) -> CmdResult<()> {
        let mut settings = self.settings();
        if let Some(left) = settings.team.take() {
            crate::team_here::AnsweredHere::of(&self.data_dir).forget_server(&left.server)?;
        }
        self.save_settings(settings)?;
        team::forget_key(&self.data_dir)?;
        let downloads = self.data_dir.join("team-downloads");
        if downloads.exists() {
            let _ = std::fs::remove_dir_all(&downloads);
        }
        *self.team.write().unwrap_or_else(|p| p.into_inner()) = None;
        *self.team_error.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }

    /// Whether saved search-model settings differ from what is loaded (a restart applies them).
    pub(crate) fn restart_needed(&self) -> bool {
        effective_search(&self.settings().search, self.embedder_override.as_deref())
            != self.opened_with
    }

    pub(crate) fn signed(&self) -> Signed {
        self.signed
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn requires_key(&self) -> bool {
        matches!(self.hub.mode(), Ok(knowhub_engine::Mode::Production))
    }

    /// Switches user: only with that user's key (or the root key).
    pub(crate) fn sign_in(&self, api_key: &str) -> CmdResult<Signed> {
        let key = api_key.trim();
        if key.is_empty() {
            return Err(CommandError::new("unauthenticated", "enter an API key"));
        }
        let ctx = self.hub.authenticate(&Credentials {
            api_key: Some(key.to_string()),
            ..Credentials::default()
        })?;
        let engine = self.hub.engine(&ctx)?;
        let signed = Signed { ctx, engine };
        *self.signed.write().unwrap_or_else(|p| p.into_inner()) = signed.clone();
        Ok(signed)
    }

    pub(crate) fn settings(&self) -> Settings {
        self.settings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn save_settings(&self, settings: Settings) -> CmdResult<()> {
        settings.save(&self.data_dir)?;
        *self.settings.lock().unwrap_or_else(|p| p.into_inner()) = settings;
        Ok(())
    }

    /// The answer model of the current settings, loaded on first use (seconds for a local
    /// model) and kept; `None` = extractive answers. Call from a worker thread.
    pub(crate) fn llm(&self) -> CmdResult<Option<Arc<dyn Llm>>> {
        let settings = self.settings();
        let choice = (settings.llm, settings.search.gpu);
        let mut slot = self.llm.lock().unwrap_or_else(|p| p.into_inner());
        if slot.choice.as_ref() != Some(&choice) {
            // A local model shares the search models' device setting: one switch for the GPU.
            let loaded = choice.0.load(&settings.search.device().device())?;
            *slot = LlmSlot {
                choice: Some(choice),
                llm: loaded.llm,
                note: loaded.note,
            };
        }
        Ok(slot.llm.clone())
    }

    /// Forgets the loaded answer model (or that it was missing), so the next question loads
    /// it again.
    pub(crate) fn forget_llm(&self) {
        *self.llm.lock().unwrap_or_else(|p| p.into_inner()) = LlmSlot::default();
    }

    /// The answer model when it is already loaded for the current settings; never loads one
    /// (nor waits for one that is loading).
    pub(crate) fn loaded_llm(&self) -> Option<Arc<dyn Llm>> {
        let settings = self.settings();
        let choice = (settings.llm, settings.search.gpu);
        let slot = match self.llm.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        if slot.choice.as_ref() == Some(&choice) {
            slot.llm.clone()
        } else {
            None
        }
    }

    /// Starts or stops the HTTP API to match `setting` (a running server stops first, so a
    /// new port takes effect). It binds `127.0.0.1` only. Answers are written by the app's
    /// answer model when it is already loaded, else extractive (`None`); a model loaded later
    /// is used after the next switch on. A failed start keeps its reason for [`Self::api_status`].
    pub(crate) async fn apply_api(&self, setting: ApiServerSetting) -> ApiStatus {
        let mut slot = self.api.lock().await;
        if let Some(running) = slot.running.take() {
            running.stop().await;
        }
        slot.error = None;
        if setting.enabled {
            let llm = self.loaded_llm();
            match api_server::start(Arc::clone(&self.hub), llm, setting.port).await {
                Ok(running) => slot.running = Some(running),
                Err(e) => {
                    tracing::warn!("{e}");
                    slot.error = Some(e);
                }
            }
        }
        drop(slot);
        self.api_status().await
    }

    /// The saved API setting with whether the server runs, and where.
    pub(crate) async fn api_status(&self) -> ApiStatus {
        let setting = self.settings().api;
        let slot = self.api.lock().await;
        let (addr, error) = match &slot.running {
            Some(running) => match running.failure() {
                None => (Some(running.addr()), None),
                Some(failure) => (None, Some(failure)),
            },
            None => (None, slot.error.clone()),
        };
        ApiStatus {
            setting,
            addr,
            error,
        }
    }

    /// The loaded model's id and the note about a missing default model, if known yet.
    pub(crate) fn llm_status(&self) -> (Option<String>, Option<String>) {
        let slot = self.llm.lock().unwrap_or_else(|p| p.into_inner());
        (
            slot.llm.as_ref().map(|l| l.model_id().to_string()),
            slot.note.clone(),
        )
    }

    pub(crate) fn begin_ask(&self, request_id: &str) -> CancelFlag {
        let flag = CancelFlag::new();
        self.asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(request_id.to_string(), flag.clone());
        flag
    }

    pub(crate) fn end_ask(&self, request_id: &str) {
        self.asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(request_id);
    }

    /// Stops a question in flight; `false` when it already finished.
    pub(crate) fn cancel_ask(&self, request_id: &str) -> bool {
        match self
            .asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(request_id)
        {
            Some(flag) => {
                flag.cancel();
                true
            }
            None => false,
        }
    }

    /// Starts background ingestion (watched folders, drops) when the signed-in principal may
    /// run it and nobody else holds the index; returns its event stream.
    pub(crate) fn start_watching(
        &self,
    ) -> Option<crossbeam_channel::Receiver<knowhub_engine::WatchEvent>> {
        let mut watch = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        if watch.is_some() {
            return None;
        }
        let s = self.signed();
        if !s.is_admin() || s.engine.is_read_only() {
            return None;
        }
        match WatchService::start(Arc::clone(&s.engine), &s.ctx, WatchOptions::default()) {
            Ok(service) => {
                let events = service.subscribe();
                *watch = Some(service);
                Some(events)
            }
            Err(e) => {
                tracing::warn!("background ingestion not started: {e}");
                None
            }
        }
    }

    /// Wakes the ingestion service (new jobs were queued).
    pub(crate) fn wake_watcher(&self) {
        if let Some(w) = self
            .watch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            w.wake();
        }
    }

    /// Stops background work after the file in progress (window closing), and the HTTP API
    /// (dropping the server signals its shutdown).
    pub(crate) fn shutdown(&self) {
        if let Some(w) = self.watch.lock().unwrap_or_else(|p| p.into_inner()).take() {
            w.stop();
        }
        if let Ok(mut api) = self.api.try_lock() {
            drop(api.running.take());
        }
    }
}

/// The search models to open with: the settings, with `KNOWHUB_EMBEDDER` winning when set.
fn effective_search(saved: &SearchModels, embedder_override: Option<&str>) -> SearchModels {
    let mut search = saved.clone();
    if let Some(embedder) = embedder_override {
        search.embedder = embedder.to_owned();
    }
    search
}
