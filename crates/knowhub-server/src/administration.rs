//! Administration of the knowledge base over HTTP: what the desktop app's Settings panes do,
//! for a team server. Who may do what is the engine's decision; handlers only parse, call and
//! shape answers.
//!
//! * **Folders and ACLs**: `GET /api/v1/folders` (the folder tree with each folder's ACL),
//!   `PUT /api/v1/acl` (a folder's or a document's read scopes), `GET /api/v1/acl/readers`
//!   ("who can see this").
//! * **Watched folders**: `GET/POST/DELETE /api/v1/watches`. Paths are the server's own.
//! * **Ingestion**: `POST /api/v1/ingest` reads server-side paths now, as `knowhub ingest`
//!   does (when another process holds this knowledge base's index, they are queued for it
//!   instead: 202); `POST /api/v1/remove`; `GET /api/v1/queue` and
//!   `POST /api/v1/queue/{pause,resume,retry-failed,cancel}`.
//! * **Memberships**: `GET …/users/{user_id}/groups`, `PUT/DELETE …/groups/{group}` under
//!   `/api/v1/admin/accounts/{account_id}`, with admin.rs's account rules.
//! * **SQL data sources**: `GET/POST /api/v1/sql-sources`, `DELETE /api/v1/sql-sources/{name}`.
//!
//! Naming a path on the server is for administrators only (ingest, watch): on a desktop anyone
//! may read their own disk, but a remote user must not make the server read its files for
//! them. The engine's `Engine::require_administrator` says so (also for the folder tree, an
//! administrator's view as in the app); the other endpoints rely on the engine's own rules (a
//! folder's owner may set its ACL, a user sees their own jobs and watched folders).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use axum::Json;
use axum::http::StatusCode;
use knowhub_engine::authz::{Scope, ScopeSet};
use knowhub_engine::{
    EngineError, FileOutcome, IngestEvent, IngestOptions, QueueCounts, SourceRules, UserId,
};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::admin::user_id;
use crate::auth::{AccountCaller, ApiJson, ApiPath, ApiQuery, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(folder_tree))
        .routes(routes!(set_acl))
        .routes(routes!(readers))
        .routes(routes!(list_watches, watch, unwatch))
        .routes(routes!(ingest))
        .routes(routes!(remove))
        .routes(routes!(queue))
        .routes(routes!(pause_queue))
        .routes(routes!(resume_queue))
        .routes(routes!(retry_failed))
        .routes(routes!(cancel_jobs))
        .routes(routes!(user_groups))
        .routes(routes!(join_group, leave_group))
        .routes(routes!(list_sql_sources, add_sql_source))
        .routes(routes!(remove_sql_source))
}

/// At most this many files are listed one by one in an ingest's answer (the totals count all).
const LISTED_FILES: usize = 1_000;
/// Jobs listed by `GET /api/v1/queue` unless `limit` says otherwise, and the most it may say.
const DEFAULT_JOBS: usize = 100;
const MAX_JOBS: usize = 1_000;

// ----- input --------------------------------------------------------------------------------

/// A path on the server: absolute (a relative one would depend on the server's working
/// directory), non-empty, without NUL bytes.
fn server_path(raw: &str) -> Result<PathBuf, ApiError> {
    if raw.trim().is_empty() {
        return Err(ApiError::invalid("the path is empty"));
    }
    if raw.contains('\0') {
        return Err(ApiError::invalid("the path contains a NUL byte"));
    }
    let path = PathBuf::from(raw);
    if !path.is_absolute() {
        return Err(ApiError::invalid(format!(
            "{raw} is not an absolute path: paths are the server's own, written in full"
        )));
    }
    Ok(path)
}

fn server_paths(raw: &[String]) -> Result<Vec<PathBuf>, ApiError> {
    if raw.is_empty() {
        return Err(ApiError::invalid("paths is empty: name at least one path"));
    }
    raw.iter().map(|p| server_path(p)).collect()
}

/// Engine errors of a call that names a path on the server: the engine reports a path it
/// cannot open as an I/O failure, which the API otherwise treats as the server's fault.
fn path_error(e: EngineError) -> ApiError {
    match &e {
        EngineError::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
            ApiError::not_found(format!("{path} does not exist on the server"))
        }
        EngineError::Io { path, source }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            ApiError::invalid(format!("the server may not read {path}"))
        }
        _ => e.into(),
    }
}

/// Fails with 404 for a path that does not exist on the server (checked after the caller's
/// right to name server paths, so that nobody else learns what exists there).
fn must_exist(path: &Path) -> Result<(), ApiError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(()),
        Err(e) => Err(path_error(EngineError::Io {
            path: path.display().to_string(),
            source: e,
        })),
    }
}

/// Scopes as `"team:hr,user:alice"` or `["team:hr", "user:alice"]`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum ScopesInput {
    Text(String),
    List(Vec<String>),
}

impl ScopesInput {
    /// The scope set; `allow_empty`: whether naming no scope is meaningful here.
    pub(crate) fn parse(&self, allow_empty: bool) -> Result<ScopeSet, ApiError> {
        let parts: Vec<&str> = match self {
            ScopesInput::Text(t) => t.split(',').collect(),
            ScopesInput::List(l) => l.iter().flat_map(|s| s.split(',')).collect(),
        };
        let parts: Vec<&str> = parts
            .into_iter()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if parts.is_empty() && !allow_empty {
            return Err(ApiError::invalid(
                "scopes names no scope: send null to clear the ACL (then the parent folder's \
                 applies), or at least one of public, user:<id>, team:<id>, project:<id>, \
                 org:<id>, agent:<id>, group:<id>",
            ));
        }
        parts
            .join(",")
            .parse::<ScopeSet>()
            .map_err(|e| ApiError::invalid(format!("bad scopes: {e}")))
    }
}

/// `Some(value)` for a field that is present (also as `null`), so that a missing field can be
/// told apart from an explicit `null`.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

// ----- folders and ACLs ---------------------------------------------------------------------

/// A folder's ACL: what is set on it and what its documents get.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FolderAclBody {
    /// The folder relative to its source root (`""` for the root).
    relative: String,
    /// How deep below its source root (0: the root).
    depth: usize,
    /// Scopes set on the folder itself (`null`: inherited).
    explicit: Option<String>,
    /// Scopes its documents get (their owners and administrators can always read them).
    effective: String,
    /// Where `effective` comes from when inherited: an ancestor's relative path.
    inherited_from: Option<String>,
}

impl From<knowhub_engine::FolderAcl> for FolderAclBody {
    fn from(a: knowhub_engine::FolderAcl) -> Self {
        FolderAclBody {
            depth: if a.relative.is_empty() {
                0
            } else {
                a.relative.split('/').count()
            },
            relative: a.relative,
            explicit: a.explicit,
            effective: a.effective,
            inherited_from: a.inherited_from,
        }
    }
}

/// One folder of the tree.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FolderNode {
    /// The folder's path on the server.
    path: String,
    /// Documents inside it, at any depth.
    documents: u64,
    /// Whether it is a watched folder.
    watched: bool,
    /// `null` when the folder is no longer on the server's disk (its documents stay).
    acl: Option<FolderAclBody>,
}

/// `{"folders": [...]}`, sorted by path.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FolderTree {
    folders: Vec<FolderNode>,
}

/// Every folder holding documents, and every watched folder, with its ACL (administrators).
#[utoipa::path(get, path = "/api/v1/folders", tag = "administration",
    responses((status = 200, body = FolderTree), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn folder_tree(caller: Caller) -> Result<Json<FolderTree>, ApiError> {
    blocking(move || {
        let (engine, ctx) = (&caller.engine, &caller.ctx);
        engine.require_administrator(ctx, "see every folder's permissions")?;
        let watched: Vec<String> = engine
            .watched_folders(ctx)?
            .into_iter()
            .map(|w| w.path)
            .collect();
        let mut paths: BTreeMap<String, u64> = engine
            .folders(ctx)?
            .into_iter()
            .map(|f| (f.path, f.documents))
            .collect();
        for w in &watched {
            paths.entry(w.clone()).or_insert(0);
        }
        let mut folders = Vec::with_capacity(paths.len());
        for (path, documents) in paths {
            let acl = match engine.folder_acl(ctx, Path::new(&path)) {
                Ok(acl) => Some(acl.into()),
                // Gone from disk: listed, without an ACL to show or set.
                Err(EngineError::NotFound(_)) => None,
                Err(e) => return Err(e.into()),
            };
            folders.push(FolderNode {
                watched: watched.contains(&path),
                path,
                documents,
                acl,
            });
        }
        Ok(Json(FolderTree { folders }))
    })
    .await
}

/// Body of `PUT /api/v1/acl`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetAclBody {
    /// An ingested folder or a stored document, by its path on the server.
    path: String,
    /// Who may read it: `"team:hr,user:alice"` (or a list); `null` clears the ACL set here,
    /// so the nearest folder's applies again. Required.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<ScopesInput>, required = true)]
    scopes: Option<Option<ScopesInput>>,
}

/// The ACL after a change.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AclChanged {
    path: String,
    /// `folder` or `document`.
    kind: String,
    /// Scopes set on it now (`null`: cleared, inherited).
    explicit: Option<String>,
    /// Scopes its documents get now.
    effective: String,
    /// For a folder whose ACL is inherited: the ancestor it comes from (relative path).
    inherited_from: Option<String>,
}

/// Set or clear who may read a folder or a single document; applies to every user's next
/// request. Administrators, or whoever added the folder or document.
#[utoipa::path(put, path = "/api/v1/acl", tag = "administration",
    request_body = SetAclBody,
    responses((status = 200, body = AclChanged), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn set_acl(
    caller: Caller,
    ApiJson(b): ApiJson<SetAclBody>,
) -> Result<Json<AclChanged>, ApiError> {
    let path = server_path(&b.path)?;
    let Some(scopes) = b.scopes else {
        return Err(ApiError::invalid(
            "scopes is required: the scopes to set, or null to clear the ACL",
        ));
    };
    let scopes = scopes.map(|s| s.parse(false)).transpose()?;
    blocking(move || {
        let (engine, ctx) = (&caller.engine, &caller.ctx);
        // Whether a folder or a document is meant, and "nothing you can see there" alike for
        // both, so that the answer tells nobody which paths exist on the server.
        let unseen = || {
            ApiError::not_found(format!(
                "{} is neither an ingested folder nor a stored document you can see",
                b.path
            ))
        };
        if path.is_dir() {
            let acl = match engine.set_folder_acl(ctx, &path, scopes.as_ref()) {
                Err(EngineError::NotFound(_)) => return Err(unseen()),
                other => other?,
            };
            Ok(Json(AclChanged {
                path: b.path,
                kind: "folder".into(),
                explicit: acl.explicit,
                effective: acl.effective,
                inherited_from: acl.inherited_from,
            }))
        } else {
            let effective = match engine.set_document_acl(ctx, &path, scopes.as_ref()) {
                Err(EngineError::NotFound(_)) => return Err(unseen()),
                other => other?,
            };
            Ok(Json(AclChanged {
                path: b.path,
                kind: "document".into(),
                explicit: scopes.map(|s| s.to_string()),
                effective,
                inherited_from: None,
            }))
        }
    })
    .await
}

/// `?path=`: a path on the server.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PathParam {
    /// A folder (or a document) by its path on the server.
    path: String,
}

/// One user's view of a folder.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ReaderBody {
    user_id: String,
    display_name: String,
    /// `ROOT`, `ADMIN` or `USER`.
    role: String,
    /// How many of its documents they may read (0: it is invisible to them).
    readable: u64,
}

/// "Who can see this".
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ReadersBody {
    path: String,
    /// Documents stored under it.
    documents: u64,
    /// Every active user of the account.
    readers: Vec<ReaderBody>,
}

/// Who can see this: for every active user, how many of the documents under a folder (or the
/// document at a path) they may read, by the rule every read path uses (administrators).
#[utoipa::path(get, path = "/api/v1/acl/readers", tag = "administration",
    params(PathParam),
    responses((status = 200, body = ReadersBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn readers(
    caller: Caller,
    ApiQuery(p): ApiQuery<PathParam>,
) -> Result<Json<ReadersBody>, ApiError> {
    let path = server_path(&p.path)?;
    blocking(move || {
        let (engine, ctx) = (&caller.engine, &caller.ctx);
        let r = engine.folder_readers(ctx, &path)?;
        if r.documents == 0 {
            // Nothing stored under it: an ingested (watched) folder still empty, or nothing.
            engine.folder_acl(ctx, &path)?;
        }
        Ok(Json(ReadersBody {
            path: p.path,
            documents: r.documents,
            readers: r
                .readers
                .into_iter()
                .map(|u| ReaderBody {
                    user_id: u.user,
                    display_name: u.display_name,
                    role: u.role,
                    readable: u.readable,
                })
                .collect(),
        }))
    })
    .await
}

// ----- watched folders ----------------------------------------------------------------------

/// Include/exclude globs (gitignore syntax, relative to the folder) and a size limit.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RulesBody {
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    #[serde(default)]
    max_file_bytes: Option<u64>,
}

impl From<SourceRules> for RulesBody {
    fn from(r: SourceRules) -> Self {
        RulesBody {
            include: r.include,
            exclude: r.exclude,
            max_file_bytes: r.max_file_bytes,
        }
    }
}

impl From<RulesBody> for SourceRules {
    fn from(r: RulesBody) -> Self {
        SourceRules {
            include: r.include,
            exclude: r.exclude,
            max_file_bytes: r.max_file_bytes,
        }
    }
}

/// A watched folder.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct WatchBody {
    path: String,
    /// The user who added it.
    owner: Option<String>,
    rules: RulesBody,
    documents: u64,
}

impl From<knowhub_engine::WatchedFolder> for WatchBody {
    fn from(w: knowhub_engine::WatchedFolder) -> Self {
        WatchBody {
            path: w.path,
            owner: w.owner,
            rules: w.rules.into(),
            documents: w.documents,
        }
    }
}

/// `{"watches": [...]}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct WatchList {
    watches: Vec<WatchBody>,
}

/// Watched folders: every one for administrators, their own (such as their uploads) for
/// users.
#[utoipa::path(get, path = "/api/v1/watches", tag = "administration",
    responses((status = 200, body = WatchList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list_watches(caller: Caller) -> Result<Json<WatchList>, ApiError> {
    blocking(move || {
        let watches = caller
            .engine
            .watched_folders(&caller.ctx)?
            .into_iter()
            .map(Into::into)
            .collect();
        Ok(Json(WatchList { watches }))
    })
    .await
}

/// Body of `POST /api/v1/watches`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WatchRequest {
    /// A folder on the server.
    path: String,
    /// Default: every supported file.
    #[serde(default)]
    rules: Option<RulesBody>,
}

/// Watch a folder on the server (administrators), or change the rules of one: a reconcile
/// of it is queued, and its files are read and kept in sync by the server's queue worker
/// (`knowhub watch`); `POST /api/v1/ingest` reads them at once.
#[utoipa::path(post, path = "/api/v1/watches", tag = "administration",
    request_body = WatchRequest,
    responses((status = 201, body = WatchBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn watch(
    caller: Caller,
    ApiJson(b): ApiJson<WatchRequest>,
) -> Result<(StatusCode, Json<WatchBody>), ApiError> {
    let path = server_path(&b.path)?;
    let rules: SourceRules = b.rules.map(Into::into).unwrap_or_default();
    blocking(move || {
        let (engine, ctx) = (&caller.engine, &caller.ctx);
        engine.require_administrator(ctx, "watch folders on the server")?;
        let w = engine.watch_folder(ctx, &path, rules).map_err(path_error)?;
        Ok((StatusCode::CREATED, Json(w.into())))
    })
    .await
}

/// `{"path", "watched": false}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Unwatched {
    path: String,
    watched: bool,
}

/// Stop watching a folder; its documents stay (`POST /api/v1/remove` removes them). Its
/// owner or administrators.
#[utoipa::path(delete, path = "/api/v1/watches", tag = "administration",
    params(PathParam),
    responses((status = 200, body = Unwatched), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn unwatch(
    caller: Caller,
    ApiQuery(p): ApiQuery<PathParam>,
) -> Result<Json<Unwatched>, ApiError> {
    let path = server_path(&p.path)?;
    blocking(move || {
        caller.engine.unwatch_folder(&caller.ctx, &path)?;
        Ok(Json(Unwatched {
            path: p.path,
            watched: false,
        }))
    })
    .await
}

// ----- ingestion ----------------------------------------------------------------------------

/// Body of `POST /api/v1/ingest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IngestBody {
    /// Files and folders (read recursively) on the server.
    paths: Vec<String>,
    /// Re-parse files even when their content is unchanged.
    #[serde(default)]
    force: bool,
}

/// Totals of an ingest run.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct IngestTotals {
    files: usize,
    added: usize,
    updated: usize,
    unchanged: usize,
    no_text: usize,
    failed: usize,
    skipped: usize,
    removed: usize,
    moved: usize,
    busy: usize,
    chunks: usize,
    elapsed_ms: u64,
}

impl From<knowhub_engine::IngestReport> for IngestTotals {
    fn from(r: knowhub_engine::IngestReport) -> Self {
        IngestTotals {
            files: r.files,
            added: r.added,
            updated: r.updated,
            unchanged: r.unchanged,
            no_text: r.no_text,
            failed: r.failed,
            skipped: r.skipped,
            removed: r.removed,
            moved: r.moved,
            busy: r.busy,
            chunks: r.chunks,
            elapsed_ms: r.elapsed_ms,
        }
    }
}

/// One file's outcome.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FileLine {
    path: String,
    /// `added`, `updated`, `unchanged`, `no_text`, `failed`, `skipped`, `removed`, `moved`
    /// or `busy`.
    outcome: String,
    /// Why it failed, has no text, was skipped or must wait.
    reason: Option<String>,
}

/// What an ingest did.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct IngestAnswer {
    /// `ingested` (read now: 200) or `queued` (another process holds this knowledge base's
    /// index and reads them: 202).
    status: String,
    /// When ingested: the run's totals.
    totals: Option<IngestTotals>,
    /// When ingested: each file's outcome (the first 1,000).
    files: Vec<FileLine>,
    /// Files not listed in `files`.
    files_not_listed: usize,
    /// When queued: how many paths were newly queued.
    queued: usize,
}

/// Ingest files and folders on the server now, as `knowhub ingest` does (administrators):
/// the answer comes when they are stored and searchable here (on other team replicas within
/// a moment). When another process (the app, `knowhub daemon`) holds this knowledge base's
/// index, the paths are queued for it instead (202).
#[utoipa::path(post, path = "/api/v1/ingest", tag = "administration",
    request_body = IngestBody,
    responses((status = 200, body = IngestAnswer), (status = 202, body = IngestAnswer),
        (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn ingest(
    caller: Caller,
    ApiJson(b): ApiJson<IngestBody>,
) -> Result<(StatusCode, Json<IngestAnswer>), ApiError> {
    let paths = server_paths(&b.paths)?;
    blocking(move || {
        let (engine, ctx) = (&caller.engine, &caller.ctx);
        engine.require_administrator(ctx, "ingest files from the server's disk")?;
        for p in &paths {
            must_exist(p)?;
        }
        if engine.is_read_only() {
            let queued = engine.enqueue(ctx, &paths).map_err(path_error)?;
            return Ok((
                StatusCode::ACCEPTED,
                Json(IngestAnswer {
                    status: "queued".into(),
                    totals: None,
                    files: Vec::new(),
                    files_not_listed: 0,
                    queued,
                }),
            ));
        }
        let options = IngestOptions {
            force: b.force,
            ..IngestOptions::default()
        };
        let mut files = Vec::new();
        let mut files_not_listed = 0;
        let report = engine
            .ingest(ctx, &paths, &options, &mut |e| {
                if let IngestEvent::File { path, outcome, .. } = e {
                    if files.len() < LISTED_FILES {
                        files.push(file_line(path, outcome));
                    } else {
                        files_not_listed += 1;
                    }
                }
            })
            .map_err(path_error)?;
        Ok((
            StatusCode::OK,
            Json(IngestAnswer {
                status: "ingested".into(),
                totals: Some(report.into()),
                files,
                files_not_listed,
                queued: 0,
            }),
        ))
    })
    .await
}

fn file_line(path: &str, outcome: &FileOutcome) -> FileLine {
    FileLine {
        path: path.to_owned(),
        outcome: outcome.label().to_owned(),
        reason: outcome.reason().map(str::to_owned),
    }
}

/// Body of `POST /api/v1/remove`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoveBody {
    /// Stored documents (files), or folders (everything stored under them), by server path.
    paths: Vec<String>,
}

/// `{"removed": n}`: documents removed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Removed {
    removed: usize,
}

/// Remove documents from the knowledge base (the files on disk stay). Owner-only writes:
/// removing a document someone else added needs an administrator, and then nothing is
/// removed; paths with nothing the caller can read are 404.
#[utoipa::path(post, path = "/api/v1/remove", tag = "administration",
    request_body = RemoveBody,
    responses((status = 200, body = Removed), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn remove(
    caller: Caller,
    ApiJson(b): ApiJson<RemoveBody>,
) -> Result<Json<Removed>, ApiError> {
    let paths = server_paths(&b.paths)?;
    blocking(move || {
        let r = caller.engine.remove(&caller.ctx, &paths)?;
        Ok(Json(Removed {
            removed: r.documents,
        }))
    })
    .await
}

// ----- the queue ----------------------------------------------------------------------------

/// Jobs per state.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CountsBody {
    queued: u64,
    running: u64,
    done: u64,
    failed: u64,
    cancelled: u64,
    /// Queued jobs waiting for a retry time or for their file to stop changing.
    waiting: u64,
    /// Background processing is paused.
    paused: bool,
}

impl From<QueueCounts> for CountsBody {
    fn from(c: QueueCounts) -> Self {
        CountsBody {
            queued: c.queued,
            running: c.running,
            done: c.done,
            failed: c.failed,
            cancelled: c.cancelled,
            waiting: c.waiting,
            paused: c.paused,
        }
    }
}

/// One ingestion job.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct JobBody {
    id: i64,
    path: String,
    owner: String,
    /// `queued`, `running`, `done`, `failed` or `cancelled`.
    state: String,
    attempts: u32,
    /// What processing did (`added`, `updated`, …).
    outcome: Option<String>,
    error: Option<String>,
    /// Time since the Unix epoch, in ms.
    created_at_ms: i64,
    updated_at_ms: i64,
}

impl From<knowhub_engine::JobRecord> for JobBody {
    fn from(j: knowhub_engine::JobRecord) -> Self {
        JobBody {
            id: j.id,
            path: j.path,
            owner: j.owner,
            state: j.state.as_str().to_owned(),
            attempts: j.attempts,
            outcome: j.outcome,
            error: j.error,
            created_at_ms: j.created_at_ms,
            updated_at_ms: j.updated_at_ms,
        }
    }
}

/// The ingestion queue.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueBody {
    counts: CountsBody,
    /// The most recent jobs: every one for administrators, their own for users.
    jobs: Vec<JobBody>,
}

/// `?limit=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct QueueParams {
    /// Jobs to list (default 100, at most 1,000).
    #[param(minimum = 0, maximum = 1000)]
    limit: Option<usize>,
}

/// The ingestion queue: counts per state and the most recent jobs.
#[utoipa::path(get, path = "/api/v1/queue", tag = "administration",
    params(QueueParams),
    responses((status = 200, body = QueueBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn queue(
    caller: Caller,
    ApiQuery(p): ApiQuery<QueueParams>,
) -> Result<Json<QueueBody>, ApiError> {
    let limit = p.limit.unwrap_or(DEFAULT_JOBS).min(MAX_JOBS);
    blocking(move || {
        let q = caller.engine.queue(&caller.ctx, limit)?;
        Ok(Json(QueueBody {
            counts: q.counts.into(),
            jobs: q.jobs.into_iter().map(Into::into).collect(),
        }))
    })
    .await
}

/// `{"paused": …}`: whether background processing is paused now.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Paused {
    paused: bool,
}

async fn set_paused(caller: Caller, paused: bool) -> Result<Json<Paused>, ApiError> {
    blocking(move || {
        caller.engine.set_queue_paused(&caller.ctx, paused)?;
        let now = caller.engine.queue(&caller.ctx, 0)?.counts.paused;
        Ok(Json(Paused { paused: now }))
    })
    .await
}

/// Pause background ingestion, kept across restarts (administrators).
#[utoipa::path(post, path = "/api/v1/queue/pause", tag = "administration",
    responses((status = 200, body = Paused), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn pause_queue(caller: Caller) -> Result<Json<Paused>, ApiError> {
    set_paused(caller, true).await
}

/// Resume background ingestion (administrators).
#[utoipa::path(post, path = "/api/v1/queue/resume", tag = "administration",
    responses((status = 200, body = Paused), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn resume_queue(caller: Caller) -> Result<Json<Paused>, ApiError> {
    set_paused(caller, false).await
}

/// `?path=`, optional: only jobs at or under this server path.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PrefixParam {
    path: Option<String>,
}

impl PrefixParam {
    fn prefix(&self) -> Result<Option<PathBuf>, ApiError> {
        self.path.as_deref().map(server_path).transpose()
    }
}

/// `{"jobs": n}`: jobs affected.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct JobsChanged {
    jobs: usize,
}

/// Queue failed jobs again, all or those at or under `path` (administrators).
#[utoipa::path(post, path = "/api/v1/queue/retry-failed", tag = "administration",
    params(PrefixParam),
    responses((status = 200, body = JobsChanged), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn retry_failed(
    caller: Caller,
    ApiQuery(p): ApiQuery<PrefixParam>,
) -> Result<Json<JobsChanged>, ApiError> {
    let prefix = p.prefix()?;
    blocking(move || {
        let jobs = caller.engine.retry_failed(&caller.ctx, prefix.as_deref())?;
        Ok(Json(JobsChanged { jobs }))
    })
    .await
}

/// Cancel queued jobs, all or those at or under `path` (administrators).
#[utoipa::path(post, path = "/api/v1/queue/cancel", tag = "administration",
    params(PrefixParam),
    responses((status = 200, body = JobsChanged), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn cancel_jobs(
    caller: Caller,
    ApiQuery(p): ApiQuery<PrefixParam>,
) -> Result<Json<JobsChanged>, ApiError> {
    let prefix = p.prefix()?;
    blocking(move || {
        let jobs = caller.engine.cancel_jobs(&caller.ctx, prefix.as_deref())?;
        Ok(Json(JobsChanged { jobs }))
    })
    .await
}

// ----- memberships --------------------------------------------------------------------------

/// A user's teams, projects and orgs.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupsBody {
    user_id: String,
    /// As scopes: `team:hr`, `project:apollo`, `org:acme`.
    groups: Vec<String>,
}

/// A membership after a change.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MembershipChanged {
    user_id: String,
    group: String,
    /// Whether the user is a member now.
    member: bool,
    /// Whether this request changed it.
    changed: bool,
    /// All of the user's groups now.
    groups: Vec<String>,
}

/// The group in a path: `team:<id>`, `project:<id>` or `org:<id>` (the engine refuses other
/// scopes).
fn group_scope(raw: &str) -> Result<Scope, ApiError> {
    raw.trim()
        .parse::<Scope>()
        .map_err(|e| ApiError::invalid(format!("bad group: {e}")))
}

/// 404 unless `id` is an active user of the caller's account (as far as the caller may see).
fn active_user(caller: &Caller, id: &UserId) -> Result<(), ApiError> {
    let found = caller
        .engine
        .users(&caller.ctx)?
        .iter()
        .any(|u| u.id == *id && u.removed_at.is_none());
    if found {
        Ok(())
    } else {
        Err(ApiError::not_found(format!("no active user {id}")))
    }
}

/// A user's teams, projects and orgs (the user themself, or administrators).
#[utoipa::path(get, path = "/api/v1/admin/accounts/{account_id}/users/{user_id}/groups",
    tag = "administration",
    params(("account_id" = String, Path), ("user_id" = String, Path)),
    responses((status = 200, body = GroupsBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn user_groups(
    AccountCaller(caller): AccountCaller,
    ApiPath((_account, user)): ApiPath<(String, String)>,
) -> Result<Json<GroupsBody>, ApiError> {
    let id = user_id(&user)?;
    blocking(move || {
        let groups = caller.engine.user_groups(&caller.ctx, &id)?;
        active_user(&caller, &id)?;
        Ok(Json(GroupsBody {
            user_id: id.to_string(),
            groups,
        }))
    })
    .await
}

/// Add a user to a team, project or org (`team:hr`, …); what they may read changes on their
/// next request (administrators).
#[utoipa::path(put, path = "/api/v1/admin/accounts/{account_id}/users/{user_id}/groups/{group}",
    tag = "administration",
    params(("account_id" = String, Path), ("user_id" = String, Path),
        ("group" = String, Path, description = "`team:<id>`, `project:<id>` or `org:<id>`")),
    responses((status = 200, body = MembershipChanged), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn join_group(
    AccountCaller(caller): AccountCaller,
    ApiPath((_account, user, group)): ApiPath<(String, String, String)>,
) -> Result<Json<MembershipChanged>, ApiError> {
    let id = user_id(&user)?;
    let scope = group_scope(&group)?;
    blocking(move || {
        let changed = caller.engine.add_membership(&caller.ctx, &id, &scope)?;
        if !changed {
            // Already a member, or no such user: the store says only "nothing added".
            active_user(&caller, &id)?;
        }
        let groups = caller.engine.user_groups(&caller.ctx, &id)?;
        Ok(Json(MembershipChanged {
            user_id: id.to_string(),
            group: scope.to_string(),
            member: true,
            changed,
            groups,
        }))
    })
    .await
}

/// Remove a user from a team, project or org (administrators).
#[utoipa::path(delete, path = "/api/v1/admin/accounts/{account_id}/users/{user_id}/groups/{group}",
    tag = "administration",
    params(("account_id" = String, Path), ("user_id" = String, Path),
        ("group" = String, Path, description = "`team:<id>`, `project:<id>` or `org:<id>`")),
    responses((status = 200, body = MembershipChanged), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn leave_group(
    AccountCaller(caller): AccountCaller,
    ApiPath((_account, user, group)): ApiPath<(String, String, String)>,
) -> Result<Json<MembershipChanged>, ApiError> {
    let id = user_id(&user)?;
    let scope = group_scope(&group)?;
    blocking(move || {
        let changed = caller.engine.remove_membership(&caller.ctx, &id, &scope)?;
        if !changed {
            active_user(&caller, &id)?;
        }
        let groups = caller.engine.user_groups(&caller.ctx, &id)?;
        Ok(Json(MembershipChanged {
            user_id: id.to_string(),
            group: scope.to_string(),
            member: false,
            changed,
            groups,
        }))
    })
    .await
}

// ----- SQL data sources ---------------------------------------------------------------------

/// A registered SQLite database.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SqlSourceBody {
    name: String,
    /// Its path on the server.
    path: String,
    /// Scopes whose members may query it (none: administrators only).
    scopes: Vec<String>,
    /// Every query is restricted to the caller's organisation in this column, when set.
    tenant_column: Option<String>,
    owner: String,
}

impl From<knowhub_engine::SqlSourceRecord> for SqlSourceBody {
    fn from(s: knowhub_engine::SqlSourceRecord) -> Self {
        SqlSourceBody {
            name: s.name,
            path: s.path,
            scopes: s.scopes,
            tenant_column: s.tenant_column,
            owner: s.owner,
        }
    }
}

/// A spreadsheet sheet stored as a table.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SheetTableBody {
    sql_name: String,
    sheet_name: String,
    document_id: i64,
    document_path: String,
    rows: u64,
    columns: Vec<String>,
}

/// What the caller may query with SQL.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DataSourcesBody {
    /// Registered databases the caller shares a scope with (all for administrators).
    sources: Vec<SqlSourceBody>,
    /// Spreadsheet tables of documents the caller may read.
    tables: Vec<SheetTableBody>,
}

/// SQL data the caller may query: registered databases and imported spreadsheet tables.
#[utoipa::path(get, path = "/api/v1/sql-sources", tag = "administration",
    responses((status = 200, body = DataSourcesBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list_sql_sources(caller: Caller) -> Result<Json<DataSourcesBody>, ApiError> {
    blocking(move || {
        let d = caller.engine.queryable_data(&caller.ctx)?;
        Ok(Json(DataSourcesBody {
            sources: d.sources.into_iter().map(Into::into).collect(),
            tables: d
                .tables
                .into_iter()
                .map(|t| SheetTableBody {
                    sql_name: t.sql_name,
                    sheet_name: t.sheet_name,
                    document_id: t.document_id.0,
                    document_path: t.document_path,
                    rows: t.rows,
                    columns: t.columns,
                })
                .collect(),
        }))
    })
    .await
}

/// Body of `POST /api/v1/sql-sources`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewSqlSource {
    /// Letters, digits, `-` and `_`.
    #[schema(pattern = "^[A-Za-z0-9_-]+$")]
    name: String,
    /// A SQLite database file on the server.
    path: String,
    /// Who may query it: `"team:finance"` or a list (default: administrators only).
    #[serde(default)]
    scopes: Option<ScopesInput>,
    /// Restrict every query to the caller's organisation (`org:` membership) in this column.
    #[serde(default)]
    tenant_column: Option<String>,
}

/// Register a SQLite database for the copilot, or replace the one of the same name
/// (administrators).
#[utoipa::path(post, path = "/api/v1/sql-sources", tag = "administration",
    request_body = NewSqlSource,
    responses((status = 201, body = SqlSourceBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn add_sql_source(
    caller: Caller,
    ApiJson(b): ApiJson<NewSqlSource>,
) -> Result<(StatusCode, Json<SqlSourceBody>), ApiError> {
    let path = server_path(&b.path)?;
    let scopes = match &b.scopes {
        Some(s) => s.parse(true)?,
        None => ScopeSet::new(),
    };
    let tenant = b
        .tenant_column
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty());
    blocking(move || {
        let record = caller
            .engine
            .add_sql_source(
                &caller.ctx,
                b.name.trim(),
                &path,
                &scopes,
                tenant.as_deref(),
            )
            .map_err(path_error)?;
        Ok((StatusCode::CREATED, Json(record.into())))
    })
    .await
}

/// `{"removed": true, "name": …}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SqlSourceRemoved {
    removed: bool,
    name: String,
}

/// Unregister a SQL data source; the database file stays (administrators).
#[utoipa::path(delete, path = "/api/v1/sql-sources/{name}", tag = "administration",
    params(("name" = String, Path)),
    responses((status = 200, body = SqlSourceRemoved), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn remove_sql_source(
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<SqlSourceRemoved>, ApiError> {
    blocking(move || {
        caller.engine.remove_sql_source(&caller.ctx, &name)?;
        Ok(Json(SqlSourceRemoved {
            removed: true,
            name,
        }))
    })
    .await
}
