//! `POST /api/v1/uploads`: files sent as `multipart/form-data`, copied into one of the caller's
//! upload destinations ([`Engine::upload_targets`](knowhub_engine::Engine::upload_targets)),
//! queued, and parsed on this replica before the answer.
//!
//! * **Streamed to disk**: each `file` part goes chunk by chunk to a temporary folder under the
//!   data directory (never a whole file in memory); the folder is removed on every path.
//! * **Limits**: a per-file and a per-request limit ([`ServerState::with_upload_limits`]);
//!   anything larger is refused with 413 before the engine sees a byte of it, so nothing is
//!   stored. The 2 MB limit of JSON bodies does not apply to this route (and only to it).
//! * **Parsed here**: in team mode a received file exists only on this replica's disk, so this
//!   replica ingests it itself (the queued job then finds it unchanged); the answer has each
//!   file's outcome and the documents are searchable on every replica within the follow delay.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::multipart::{Field, MultipartError};
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Request, State};
use futures_util::StreamExt;
use knowhub_engine::{
    DataPaths, EngineError, FileOutcome, IngestEvent, IngestOptions, UploadKind, UploadTarget,
};
use serde::Serialize;
use tokio::sync::mpsc;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::{ServerState, blocking};

/// The route (the body-size middleware recognises it by this path).
pub(crate) const PATH: &str = "/api/v1/uploads";
/// Default largest file of an upload.
pub(crate) const DEFAULT_FILE_LIMIT: u64 = 100 * 1024 * 1024;
/// Default largest upload request (all parts and their multipart framing).
pub(crate) const DEFAULT_REQUEST_LIMIT: u64 = 500 * 1024 * 1024;
/// File names longer than this (in bytes) are refused: most file systems cannot store them.
const MAX_NAME_BYTES: usize = 255;
/// The `destination` part is a name or a path, never more.
const MAX_DESTINATION_BYTES: usize = 4096;
/// Temporary folders older than this were left by a crash and are swept.
const STALE_SPOOL: Duration = Duration::from_secs(24 * 60 * 60);

/// The size limits of uploads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UploadLimits {
    pub(crate) per_file: u64,
    pub(crate) per_request: u64,
}

impl Default for UploadLimits {
    fn default() -> UploadLimits {
        UploadLimits {
            per_file: DEFAULT_FILE_LIMIT,
            per_request: DEFAULT_REQUEST_LIMIT,
        }
    }
}

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    // The handler enforces the upload limits itself while streaming, so the router-wide 2 MB
    // limit must not cut this route's bodies (the innermost `DefaultBodyLimit` wins).
    OpenApiRouter::new()
        .routes(routes!(destinations, upload))
        .layer(DefaultBodyLimit::disable())
}

/// Whether `req` goes to this route (its body limit is the upload limit, not 2 MB).
pub(crate) fn is_upload(req: &Request) -> bool {
    req.uri().path() == PATH
}

// ----- the API's shapes ---------------------------------------------------------------------

/// The `multipart/form-data` body of `POST /api/v1/uploads`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub(crate) struct UploadForm {
    /// One part per file (repeat the part for several), each with a `filename`: a plain file
    /// name (no path separators, `..`, NUL or control characters; at most 255 bytes).
    #[schema(value_type = Vec<String>, format = Binary)]
    file: Vec<Vec<u8>>,
    /// Where the files go: the `path` of one of the caller's upload destinations (their
    /// uploads folder, a collection in it, a watched folder they may write to) or a
    /// collection's name (a new one is created). Default: the caller's uploads folder.
    destination: Option<String>,
}

/// One file of an upload's answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UploadedFile {
    /// The file name as sent.
    name: String,
    /// Where it is stored (a number is added to the name when the destination has one).
    path: String,
    /// `added`, `updated`, `unchanged`, `moved`, `no_text` (stored without searchable text),
    /// `failed`, `skipped` (not a type KnowHub reads), `busy`, or `queued` (stored, and left
    /// to the ingestion queue because it could not be read now).
    #[schema(pattern = "^(added|updated|unchanged|moved|no_text|failed|skipped|busy|queued)$")]
    outcome: String,
    /// The stored document (absent when the file failed or was skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    document_id: Option<i64>,
    /// Why the file failed, has no text, was skipped or is queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// `{"files": [...], "queued": n}`: each file's outcome, in the order sent.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UploadReport {
    files: Vec<UploadedFile>,
    /// Ingestion jobs queued for the files (the queue confirms them later).
    queued: usize,
}

/// One place the caller may upload files to.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UploadDestinationBody {
    /// `uploads` (the caller's uploads folder), `collection` (a folder in it) or `watched` (a
    /// watched folder the caller may write to).
    #[schema(pattern = "^(uploads|collection|watched)$")]
    kind: String,
    /// The collection's or folder's name (empty for the uploads folder).
    name: String,
    /// What to send as an upload's `destination`.
    path: String,
}

/// Where the caller may upload files: their uploads folder first, then its collections, then
/// the watched folders they may write to.
#[utoipa::path(get, path = "/api/v1/uploads", tag = "copilot",
    responses((status = 200, body = Vec<UploadDestinationBody>), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn destinations(
    caller: Caller,
) -> Result<Json<Vec<UploadDestinationBody>>, ApiError> {
    blocking(move || {
        let list = caller.engine.upload_targets(&caller.ctx)?;
        Ok(Json(
            list.into_iter()
                .map(|d| UploadDestinationBody {
                    kind: match d.kind {
                        UploadKind::Uploads => "uploads",
                        UploadKind::Collection => "collection",
                        UploadKind::Watched => "watched",
                    }
                    .into(),
                    name: d.name,
                    path: d.path,
                })
                .collect(),
        ))
    })
    .await
}

/// Upload files into one of the caller's upload destinations; they are parsed before the
/// answer, which reports each file's outcome (a file that cannot be read is listed as
/// `failed`, the others are still stored).
#[utoipa::path(post, path = "/api/v1/uploads", tag = "copilot",
    request_body(content = inline(UploadForm), content_type = "multipart/form-data"),
    responses(
        (status = 200, body = UploadReport),
        (status = 413, description = "A file or the request is over the upload limits; nothing is stored", body = ErrorBody),
        (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn upload(
    State(state): State<ServerState>,
    caller: Caller,
    request: Request,
) -> Result<Json<UploadReport>, ApiError> {
    let limits = state.upload_limits();
    let announced = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > limits.per_request) {
        return Err(request_too_large(limits));
    }
    let over = Arc::new(AtomicBool::new(false));
    let (parts, body) = request.into_parts();
    let request = Request::from_parts(parts, counted(body, limits.per_request, Arc::clone(&over)));
    let mut multipart = Multipart::from_request(request, &state)
        .await
        .map_err(|_| {
            ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "the body must be multipart/form-data (with a boundary)",
            )
        })?;

    let (tx, rx) = mpsc::channel::<Spool>(8);
    let root = spool_root(caller.engine.paths());
    let writer = tokio::task::spawn_blocking(move || write_spool(&root, rx));
    let received = match receive(&mut multipart, &tx, limits, &over).await {
        Ok(form) => match tx.send(Spool::Finish).await {
            Ok(()) => Ok(form),
            Err(_) => Err(Stop::WriterGone),
        },
        Err(stop) => Err(stop),
    };
    drop(tx);
    // Waiting for the writer means a refused upload's temporary files are gone before the
    // answer goes out.
    let written = writer.await.map_err(|e| ApiError::internal(&e))?;
    let form = match received {
        Ok(form) => form,
        Err(Stop::Refused(e)) => return Err(e),
        Err(Stop::WriterGone) => {
            return Err(match written {
                Err(e) => ApiError::internal(&e),
                Ok(_) => ApiError::internal(&"the upload writer stopped early"),
            });
        }
    };
    let spooled = match written {
        Ok(Some(spooled)) => spooled,
        Ok(None) => return Err(ApiError::internal(&"the upload writer lost the files")),
        Err(e) => return Err(ApiError::internal(&e)),
    };
    // The temporary folder moves into the blocking task, which removes it when done.
    blocking(move || store_and_ingest(&caller, spooled, &form))
        .await
        .map(Json)
}

// ----- receiving ----------------------------------------------------------------------------

/// What the parts said besides the files' bytes.
#[derive(Debug)]
struct Form {
    /// The file names, in the order of their parts.
    names: Vec<String>,
    destination: Option<String>,
}

/// Why receiving stopped.
enum Stop {
    /// The request is refused with this error.
    Refused(ApiError),
    /// The writer failed (its own result says why).
    WriterGone,
}

impl From<ApiError> for Stop {
    fn from(e: ApiError) -> Stop {
        Stop::Refused(e)
    }
}

/// Reads every part, sending file bytes to the writer and enforcing the limits as bytes come.
async fn receive(
    multipart: &mut Multipart,
    tx: &mpsc::Sender<Spool>,
    limits: UploadLimits,
    over: &AtomicBool,
) -> Result<Form, Stop> {
    let mut form = Form {
        names: Vec::new(),
        destination: None,
    };
    loop {
        let field = multipart
            .next_field()
            .await
            .map_err(|e| read_error(&e, over, limits))?;
        let Some(mut field) = field else { break };
        let part = field.name().map(str::to_owned);
        match part.as_deref() {
            Some("file") => {
                let raw = field
                    .file_name()
                    .ok_or_else(|| ApiError::invalid("every `file` part needs a filename"))?;
                let name = valid_file_name(raw)?;
                tx.send(Spool::File(name.clone()))
                    .await
                    .map_err(|_| Stop::WriterGone)?;
                let mut size = 0u64;
                while let Some(chunk) = next_chunk(&mut field, over, limits).await? {
                    size += chunk.len() as u64;
                    if size > limits.per_file {
                        return Err(Stop::Refused(ApiError::new(
                            ErrorCode::PayloadTooLarge,
                            format!(
                                "{name:?} is larger than the per-file upload limit of {} bytes",
                                limits.per_file
                            ),
                        )));
                    }
                    tx.send(Spool::Data(chunk))
                        .await
                        .map_err(|_| Stop::WriterGone)?;
                }
                form.names.push(name);
            }
            Some("destination") => {
                if form.destination.is_some() {
                    return Err(ApiError::invalid("send at most one `destination` part").into());
                }
                let mut text = Vec::new();
                while let Some(chunk) = next_chunk(&mut field, over, limits).await? {
                    if text.len() + chunk.len() > MAX_DESTINATION_BYTES {
                        return Err(ApiError::invalid(format!(
                            "the destination is longer than {MAX_DESTINATION_BYTES} bytes"
                        ))
                        .into());
                    }
                    text.extend_from_slice(&chunk);
                }
                let text = String::from_utf8(text)
                    .map_err(|_| ApiError::invalid("the destination is not UTF-8 text"))?;
                form.destination = Some(text);
            }
            other => {
                return Err(ApiError::invalid(format!(
                    "unexpected part {:?}: send `file` parts and an optional `destination`",
                    other.unwrap_or("")
                ))
                .into());
            }
        }
    }
    if form.names.is_empty() {
        return Err(ApiError::invalid("no `file` part: nothing to upload").into());
    }
    Ok(form)
}

async fn next_chunk(
    field: &mut Field<'_>,
    over: &AtomicBool,
    limits: UploadLimits,
) -> Result<Option<Bytes>, Stop> {
    field
        .chunk()
        .await
        .map_err(|e| Stop::Refused(read_error(&e, over, limits)))
}

/// A failed read: the request limit (the counting body stopped it) or a malformed body.
fn read_error(e: &MultipartError, over: &AtomicBool, limits: UploadLimits) -> ApiError {
    if over.load(Ordering::Relaxed) {
        request_too_large(limits)
    } else if is_bad_part_header(&e.body_text()) {
        // A NUL or another control character in a part's headers (a file name, mostly) never
        // reaches the name check: the header parser refuses it, and it is as invalid a name.
        ApiError::invalid(
            "a part's headers hold bytes HTTP does not allow (NUL or other control characters, \
             e.g. in a file name)",
        )
    } else {
        ApiError::new(
            ErrorCode::BadRequest,
            format!("the multipart body is malformed: {}", e.body_text()),
        )
    }
}

fn request_too_large(limits: UploadLimits) -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        format!(
            "the request body is larger than the upload limit of {} bytes",
            limits.per_request
        ),
    )
}

/// Whether a multipart error is the header parser refusing a part's header bytes (multer's
/// wording; anything else stays a malformed body).
fn is_bad_part_header(text: &str) -> bool {
    text.starts_with("failed to read headers")
        || text.starts_with("failed to decode field's raw header value")
}

/// `body`, failing (and setting `over`) once more than `limit` bytes came: bodies sent without
/// a length are cut at the request limit as they stream.
fn counted(body: Body, limit: u64, over: Arc<AtomicBool>) -> Body {
    let mut seen = 0u64;
    Body::from_stream(body.into_data_stream().map(move |chunk| {
        let chunk = chunk?;
        seen += chunk.len() as u64;
        if seen > limit {
            over.store(true, Ordering::Relaxed);
            return Err(axum::Error::new(std::io::Error::other(
                "the upload request limit was exceeded",
            )));
        }
        Ok(chunk)
    }))
}

/// A file name as sent, if it is one plain name; never a path (so no copy lands outside the
/// destination).
fn valid_file_name(raw: &str) -> Result<String, ApiError> {
    let bad = |why: &str| Err(ApiError::invalid(format!("file name {raw:?} {why}")));
    if raw.trim().is_empty() {
        return bad("is empty");
    }
    if raw.contains(['/', '\\']) {
        return bad("may not contain a path separator");
    }
    if raw.chars().any(char::is_control) {
        return bad("may not contain NUL or other control characters");
    }
    if raw == "." || raw == ".." {
        return bad("is not a file name");
    }
    if raw.len() > MAX_NAME_BYTES {
        return bad("is longer than 255 bytes");
    }
    // Exactly one ordinary component, whatever the platform's path rules (drive prefixes…).
    let mut components = Path::new(raw).components();
    match (components.next(), components.next()) {
        (Some(Component::Normal(c)), None) if c == raw => Ok(raw.to_owned()),
        _ => bad("is not a plain file name"),
    }
}

// ----- the temporary folder -----------------------------------------------------------------

/// Writer instructions, in order.
enum Spool {
    /// Start the next file, with this (validated) name.
    File(String),
    /// Bytes of the current file.
    Data(Bytes),
    /// Every part arrived: keep the files.
    Finish,
}

/// A request's temporary folder, removed with everything in it when dropped.
struct SpoolDir(PathBuf);

impl Drop for SpoolDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("cannot remove the upload folder {}: {e}", self.0.display());
        }
    }
}

/// The received files, in their temporary folder.
struct Spooled {
    files: Vec<PathBuf>,
    _dir: SpoolDir,
}

/// Under the data directory (the replica's own disk), not the system temp folder, which may be
/// in memory (tmpfs).
fn spool_root(paths: &DataPaths) -> PathBuf {
    paths.root.join("tmp").join("uploads")
}

/// The writer (a blocking thread): files into `<root>/<request>/<n>/<name>`. Returns the files
/// once told to finish; when the request ends otherwise, the folder is removed.
fn write_spool(root: &Path, mut rx: mpsc::Receiver<Spool>) -> std::io::Result<Option<Spooled>> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    sweep_stale(root);
    std::fs::create_dir_all(root)?;
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let path = root.join(format!(
        "{}-{nanos:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&path)?;
    let dir = SpoolDir(path);
    let mut files: Vec<PathBuf> = Vec::new();
    let mut out: Option<std::io::BufWriter<std::fs::File>> = None;
    while let Some(msg) = rx.blocking_recv() {
        match msg {
            Spool::File(name) => {
                close(out.take())?;
                // A folder per file: two parts may carry the same name.
                let folder = dir.0.join(files.len().to_string());
                std::fs::create_dir(&folder)?;
                let file = folder.join(name);
                out = Some(std::io::BufWriter::with_capacity(
                    256 * 1024,
                    std::fs::File::create_new(&file)?,
                ));
                files.push(file);
            }
            Spool::Data(bytes) => match out.as_mut() {
                Some(w) => w.write_all(&bytes)?,
                None => return Err(std::io::Error::other("file bytes before a file part")),
            },
            Spool::Finish => {
                close(out.take())?;
                return Ok(Some(Spooled { files, _dir: dir }));
            }
        }
    }
    Ok(None)
}

fn close(out: Option<std::io::BufWriter<std::fs::File>>) -> std::io::Result<()> {
    if let Some(w) = out {
        w.into_inner().map_err(|e| e.into_error())?;
    }
    Ok(())
}

/// Removes temporary folders a crashed process left behind.
fn sweep_stale(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_SPOOL);
        if stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

// ----- storing and parsing ------------------------------------------------------------------

/// Copies the files into the destination (queueing them), then parses them now, on this
/// replica, as the caller.
fn store_and_ingest(
    caller: &Caller,
    spooled: Spooled,
    form: &Form,
) -> Result<UploadReport, ApiError> {
    let target = destination(caller, form.destination.as_deref())?;
    let copies = caller
        .engine
        .upload_to(&caller.ctx, &spooled.files, &target)?;
    drop(spooled);
    let mut outcomes: HashMap<String, FileOutcome> = HashMap::new();
    // Sync mode, like the queued jobs: a type KnowHub does not read is skipped, not failed.
    let options = IngestOptions {
        sync: true,
        ..IngestOptions::default()
    };
    let ingested = caller
        .engine
        .ingest(&caller.ctx, &copies, &options, &mut |e| {
            if let IngestEvent::File { path, outcome, .. } = e {
                outcomes.insert(path.clone(), outcome.clone());
            }
        });
    // The files are stored and queued whatever happens now: a failed run leaves them to the
    // queue rather than failing the request (a retry would store them twice).
    let not_read = match ingested {
        Ok(_) => None,
        Err(e) => Some(ApiError::from(e).message),
    };
    let files = form
        .names
        .iter()
        .zip(&copies)
        .map(|(name, copy)| describe(caller, name, copy, &outcomes, not_read.as_deref()))
        .collect();
    Ok(UploadReport {
        files,
        queued: copies.len(),
    })
}

/// Where the `destination` part sends the files.
fn destination(caller: &Caller, destination: Option<&str>) -> Result<UploadTarget, ApiError> {
    let Some(wanted) = destination.map(str::trim).filter(|d| !d.is_empty()) else {
        return Ok(UploadTarget::Uploads { collection: None });
    };
    let targets = caller.engine.upload_targets(&caller.ctx)?;
    let found = targets.iter().find(|t| {
        Path::new(&t.path) == Path::new(wanted)
            || (t.kind == UploadKind::Collection && t.name == wanted)
    });
    if let Some(t) = found {
        return Ok(match t.kind {
            UploadKind::Uploads => UploadTarget::Uploads { collection: None },
            UploadKind::Collection => UploadTarget::Uploads {
                collection: Some(t.name.clone()),
            },
            UploadKind::Watched => UploadTarget::Folder {
                path: PathBuf::from(&t.path),
            },
        });
    }
    if !wanted.contains(['/', '\\']) {
        // A new collection, created on first use (the engine checks the name).
        return Ok(UploadTarget::Uploads {
            collection: Some(wanted.to_owned()),
        });
    }
    let path = PathBuf::from(wanted);
    if !path.is_absolute() {
        return Err(ApiError::invalid(
            "the destination must be a collection name or the path of one of your upload \
             destinations",
        ));
    }
    if std::fs::canonicalize(&path).is_err() {
        // The engine's refusal, also for folders that do not exist (whether a path exists on
        // the server is not the caller's business).
        return Err(EngineError::Forbidden(format!(
            "{wanted} is not a watched folder you may add files to"
        ))
        .into());
    }
    // The engine decides (and refuses folders the caller may not write to).
    Ok(UploadTarget::Folder { path })
}

/// One file's line of the answer.
fn describe(
    caller: &Caller,
    name: &str,
    copy: &Path,
    outcomes: &HashMap<String, FileOutcome>,
    not_read: Option<&str>,
) -> UploadedFile {
    let stored = std::fs::canonicalize(copy).unwrap_or_else(|_| copy.to_path_buf());
    let key = stored.display().to_string();
    let outcome = outcomes
        .get(&key)
        .or_else(|| outcomes.get(&copy.display().to_string()));
    let Some(outcome) = outcome else {
        return UploadedFile {
            name: name.to_owned(),
            path: key,
            outcome: "queued".into(),
            document_id: None,
            error: Some(
                not_read
                    .unwrap_or("not read yet: the ingestion queue will process it")
                    .to_owned(),
            ),
        };
    };
    let is_stored = matches!(
        outcome,
        FileOutcome::Added { .. }
            | FileOutcome::Updated { .. }
            | FileOutcome::Unchanged
            | FileOutcome::NoText { .. }
            | FileOutcome::Moved { .. }
    );
    let document_id = if is_stored {
        match caller.engine.documents(&caller.ctx, Some(&stored)) {
            Ok(docs) => docs.into_iter().find(|d| d.path == key).map(|d| d.id.0),
            Err(e) => {
                tracing::warn!("cannot look up the uploaded document {key}: {e}");
                None
            }
        }
    } else {
        None
    };
    UploadedFile {
        name: name.to_owned(),
        path: key,
        outcome: outcome.label().to_owned(),
        document_id,
        error: outcome.reason().map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_single_plain_components() {
        for good in [
            "report.pdf",
            "季度报告.md",
            "a b (2).txt",
            ".profile",
            "x..y",
        ] {
            assert_eq!(valid_file_name(good).ok().as_deref(), Some(good));
        }
        let long = "x".repeat(256);
        for bad in [
            "",
            " ",
            ".",
            "..",
            "../x",
            "a/b",
            "a\\b",
            "/etc/passwd",
            "x\0y",
            "x\ny",
            &long,
        ] {
            let e = valid_file_name(bad).err();
            assert_eq!(
                e.map(|e| e.code),
                Some(ErrorCode::ValidationError),
                "{bad:?}"
            );
        }
    }
}
