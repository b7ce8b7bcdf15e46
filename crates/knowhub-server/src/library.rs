//! The library's read paths: `/api/v1/status`, `/api/v1/sources`, `/api/v1/documents…`
//! (records, the built-in viewer's preview, the original file), `/api/v1/passages/{chunk_id}`
//! (a citation) and `/api/v1/audit`: what the desktop window reads for its Sources pane and
//! its citations, so that a window joined to a team server shows the same.
//!
//! The engine decides what the caller may read: a document or passage they may not read is
//! answered exactly like a missing one (404 `NOT_FOUND`), and listings and counts cover only
//! readable documents. Handlers here only validate parameters and shape the answers.

use std::io::Read;
use std::path::{Path, PathBuf};

use axum::Json;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use knowhub_engine::{ChunkId, ChunkRecord, DocRef, DocumentId, DocumentRecord, JobState, UserId};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiPath, ApiQuery, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(me))
        .routes(routes!(status))
        .routes(routes!(sources))
        .routes(routes!(documents))
        .routes(routes!(document))
        .routes(routes!(preview))
        .routes(routes!(file))
        .routes(routes!(passage))
        .routes(routes!(audit))
}

/// Documents listed by `GET /api/v1/sources` at most (the desktop's Sources pane shows as
/// many); `total` says how many matched.
const SOURCES_ROWS: usize = 1_000;
/// Recent jobs read for the queue's failures (as the desktop does).
const QUEUE_JOBS: usize = 200;
/// `GET /api/v1/audit` without `limit`.
const AUDIT_DEFAULT: usize = 100;
/// The largest `limit` of `GET /api/v1/audit`.
const AUDIT_MAX: usize = 10_000;
/// Bytes read from disk per chunk of a streamed file.
const FILE_CHUNK: usize = 64 * 1024;

// ----- bodies -------------------------------------------------------------------------------

/// A stored document as a reader sees it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DocumentBody {
    id: i64,
    /// The source (an ingested folder, or the individually added files) it belongs to.
    source_id: i64,
    /// Its title, else its file name (the server's path separators may not be the client's).
    title: String,
    /// Where it is on the server.
    path: String,
    /// `pdf`, `docx`, `markdown`, … (`null`: not a format KnowHub reads).
    kind: Option<String>,
    /// What its last ingest did: `indexed`, `empty`, `no_text_layer`, `failed`, …
    status: String,
    /// Stored but not yet committed to the search index (shown as "pending").
    index_pending: bool,
    error_code: Option<String>,
    error: Option<String>,
    /// Bytes of the ingested version.
    size: u64,
    page_count: Option<u32>,
    chunk_count: u64,
    content_hash: Option<String>,
    created_at_ms: i64,
    updated_at_ms: i64,
    /// The user who added it (`null`: stored before ownership existed).
    owner: Option<String>,
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_owned())
}

impl From<DocumentRecord> for DocumentBody {
    fn from(d: DocumentRecord) -> Self {
        DocumentBody {
            id: d.id.0,
            source_id: d.source.0,
            title: d.title.unwrap_or_else(|| file_name(&d.path)),
            path: d.path,
            kind: d.kind,
            status: d.status,
            index_pending: d.index_pending,
            error_code: d.error_code,
            error: d.error,
            size: d.size,
            page_count: d.page_count,
            chunk_count: d.chunk_count,
            content_hash: d.content_hash,
            created_at_ms: d.created_at_ms,
            updated_at_ms: d.updated_at_ms,
            owner: d.owner,
        }
    }
}

/// The caller's view of the knowledge base: counts, sources and recent failures over the
/// documents they may read (administrators: the account, with the ingestion queue).
#[derive(Debug, Serialize, ToSchema)]
#[schema(value_type = Object)]
pub(crate) struct StatusBody(Value);

/// A folder holding documents the caller may read, or one of their watched folders.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FolderBody {
    path: String,
    /// Readable documents directly or indirectly inside.
    documents: u64,
    /// Watched for changes (the caller's own watched folders; administrators: all).
    watched: bool,
}

/// A failed ingestion job.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct JobFailureBody {
    path: String,
    error: String,
}

/// The ingestion queue: the account's counts, and the failures of the caller's jobs
/// (administrators: every job's).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueBody {
    queued: u64,
    running: u64,
    done: u64,
    failed: u64,
    cancelled: u64,
    /// Queued jobs waiting for a retry time or for their file to stop changing.
    waiting: u64,
    paused: bool,
    failures: Vec<JobFailureBody>,
}

/// `GET /api/v1/sources`: the Sources pane.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SourcesBody {
    /// By path.
    folders: Vec<FolderBody>,
    /// By path; at most 1000 (`total` counts every match).
    documents: Vec<DocumentBody>,
    /// Readable documents matching the filter.
    total: usize,
    queue: QueueBody,
}

/// `{"documents": [...], "count": n}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DocumentList {
    documents: Vec<DocumentBody>,
    count: usize,
}

/// Where a passage sits in a previewed document.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PassageRefBody {
    chunk_id: i64,
    /// Its position in the document (0-based).
    ordinal: u32,
    page_start: Option<u32>,
    page_end: Option<u32>,
    /// The headings above it, outermost first.
    heading_path: Vec<String>,
    /// Offsets in characters (Unicode scalar values) of the preview's `text`.
    char_start: usize,
    char_end: usize,
}

impl From<ChunkRecord> for PassageRefBody {
    fn from(c: ChunkRecord) -> Self {
        PassageRefBody {
            chunk_id: c.chunk_id.0,
            ordinal: c.ordinal,
            page_start: c.page_start,
            page_end: c.page_end,
            heading_path: c.heading_path,
            char_start: c.char_start,
            char_end: c.char_end,
        }
    }
}

/// The built-in viewer's data: the document, its extracted text and its passages.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PreviewBody {
    document: DocumentBody,
    /// The canonical extracted text (the passages' offsets refer to it).
    text: String,
    /// In document order.
    passages: Vec<PassageRefBody>,
}

/// A cited passage with its document and place.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PassageBody {
    chunk_id: i64,
    /// The reproducible citation id (`doc:<id>:chunk_<n>:<hash>`).
    evidence_id: String,
    document_id: i64,
    /// The document's title, else its file name.
    title: String,
    path: String,
    kind: Option<String>,
    ordinal: u32,
    text: String,
    heading_path: Vec<String>,
    page_start: Option<u32>,
    page_end: Option<u32>,
    /// Offsets in characters of the document's extracted text.
    char_start: usize,
    char_end: usize,
}

impl From<ChunkRecord> for PassageBody {
    fn from(c: ChunkRecord) -> Self {
        PassageBody {
            evidence_id: c.evidence_id(),
            chunk_id: c.chunk_id.0,
            document_id: c.document_id.0,
            title: c.title.unwrap_or_else(|| file_name(&c.path)),
            path: c.path,
            kind: c.kind,
            ordinal: c.ordinal,
            text: c.text,
            heading_path: c.heading_path,
            page_start: c.page_start,
            page_end: c.page_end,
            char_start: c.char_start,
            char_end: c.char_end,
        }
    }
}

/// `{"records": [...], "count": n}`: audit records, newest first (who, role, action, target,
/// outcome, permission snapshot, allowed/filtered counts, evidence).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AuditList {
    #[schema(value_type = Vec<Object>)]
    records: Vec<Value>,
    count: usize,
}

// ----- parameters ---------------------------------------------------------------------------

/// A document id from the path: ids start at 1.
fn document_id(id: i64) -> Result<DocumentId, ApiError> {
    if id < 1 {
        return Err(ApiError::invalid(format!("{id} is not a document id")));
    }
    Ok(DocumentId(id))
}

/// Query of `GET /api/v1/sources`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SourcesParams {
    /// Words that must all appear in a document's title or path (case-insensitive).
    filter: Option<String>,
}

/// Query of `GET /api/v1/documents`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct DocumentsParams {
    /// Only documents at or under this absolute path on the server.
    under: Option<String>,
}

/// Query of `GET /api/v1/audit`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct AuditParams {
    /// Records to return, newest first (default 100, at most 10000).
    #[param(minimum = 1, maximum = 10_000)]
    limit: Option<usize>,
    /// Only this user's records (users may name only themselves).
    #[param(pattern = r"^[^\s,\x00-\x1f\x7f-\x9f]+$", max_length = 64)]
    user: Option<String>,
}

// ----- handlers -----------------------------------------------------------------------------

/// Who a key signs in as: what a client shows after joining, and how it checks a stored key.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MeBody {
    account_id: String,
    user_id: String,
    display_name: String,
    /// `ROOT`, `ADMIN` or `USER`.
    role: String,
}

/// The caller: account, user, display name and role.
#[utoipa::path(get, path = "/api/v1/me", tag = "library",
    responses((status = 200, body = MeBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn me(caller: Caller) -> Result<Json<MeBody>, ApiError> {
    blocking(move || {
        // A ROOT key has no user record; it is named by its id.
        let display_name = caller
            .engine
            .users(&caller.ctx)?
            .into_iter()
            .find(|u| u.id == caller.ctx.user)
            .map(|u| u.display_name)
            .unwrap_or_else(|| caller.ctx.user.to_string());
        Ok(Json(MeBody {
            account_id: caller.ctx.account.to_string(),
            user_id: caller.ctx.user.to_string(),
            display_name,
            role: caller.ctx.role.to_string(),
        }))
    })
    .await
}

/// Counts, sources and recent failures over what the caller may read (administrators: the
/// whole account, with the ingestion queue).
#[utoipa::path(get, path = "/api/v1/status", tag = "library",
    responses((status = 200, body = StatusBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn status(caller: Caller) -> Result<Json<Value>, ApiError> {
    blocking(move || Ok(Json(json!(caller.engine.status(&caller.ctx)?)))).await
}

/// The folders and documents the caller may see, with their status, and the ingestion queue
/// (the desktop's Sources pane).
#[utoipa::path(get, path = "/api/v1/sources", tag = "library",
    params(SourcesParams),
    responses((status = 200, body = SourcesBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn sources(
    caller: Caller,
    ApiQuery(p): ApiQuery<SourcesParams>,
) -> Result<Json<SourcesBody>, ApiError> {
    let words: Vec<String> = p
        .filter
        .unwrap_or_default()
        .to_lowercase()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    blocking(move || {
        let (engine, ctx) = (&caller.engine, &caller.ctx);
        let watched: Vec<String> = engine
            .watched_folders(ctx)?
            .into_iter()
            .map(|w| w.path)
            .collect();
        let mut folders: Vec<FolderBody> = engine
            .folders(ctx)?
            .into_iter()
            .map(|f| FolderBody {
                watched: watched.contains(&f.path),
                path: f.path,
                documents: f.documents,
            })
            .collect();
        for w in watched {
            if !folders.iter().any(|f| f.path == w) {
                folders.push(FolderBody {
                    path: w,
                    documents: 0,
                    watched: true,
                });
            }
        }
        folders.sort_by(|a, b| a.path.cmp(&b.path));
        let mut documents: Vec<DocumentRecord> = engine
            .documents(ctx, None)?
            .into_iter()
            .filter(|d| {
                let hay = format!("{} {}", d.title.as_deref().unwrap_or(""), d.path).to_lowercase();
                words.iter().all(|w| hay.contains(w))
            })
            .collect();
        documents.sort_by(|a, b| a.path.cmp(&b.path));
        let total = documents.len();
        documents.truncate(SOURCES_ROWS);
        let q = engine.queue(ctx, QUEUE_JOBS)?;
        let queue = QueueBody {
            queued: q.counts.queued,
            running: q.counts.running,
            done: q.counts.done,
            failed: q.counts.failed,
            cancelled: q.counts.cancelled,
            waiting: q.counts.waiting,
            paused: q.counts.paused,
            failures: q
                .jobs
                .into_iter()
                .filter(|j| j.state == JobState::Failed)
                .filter_map(|j| {
                    Some(JobFailureBody {
                        error: j.error?,
                        path: j.path,
                    })
                })
                .collect(),
        };
        Ok(Json(SourcesBody {
            folders,
            documents: documents.into_iter().map(Into::into).collect(),
            total,
            queue,
        }))
    })
    .await
}

/// The documents the caller may read, by path (optionally only those under a folder).
#[utoipa::path(get, path = "/api/v1/documents", tag = "library",
    params(DocumentsParams),
    responses((status = 200, body = DocumentList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn documents(
    caller: Caller,
    ApiQuery(p): ApiQuery<DocumentsParams>,
) -> Result<Json<DocumentList>, ApiError> {
    let under = match p.under {
        None => None,
        Some(u) if Path::new(&u).is_absolute() => Some(PathBuf::from(u)),
        Some(_) => {
            return Err(ApiError::invalid(
                "under must be an absolute path on the server (a folder from /api/v1/sources)",
            ));
        }
    };
    blocking(move || {
        let documents: Vec<DocumentBody> = caller
            .engine
            .documents(&caller.ctx, under.as_deref())?
            .into_iter()
            .map(Into::into)
            .collect();
        Ok(Json(DocumentList {
            count: documents.len(),
            documents,
        }))
    })
    .await
}

/// One document's record — 404 when it does not exist or the caller may not read it.
#[utoipa::path(get, path = "/api/v1/documents/{id}", tag = "library",
    params(("id" = i64, Path, minimum = 1)),
    responses((status = 200, body = DocumentBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn document(
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<DocumentBody>, ApiError> {
    let id = document_id(id)?;
    blocking(move || Ok(Json(caller.engine.document(&caller.ctx, id)?.into()))).await
}

/// The built-in viewer's data: the document's extracted text and its passages with pages,
/// headings and character offsets (works also when the original file is gone).
#[utoipa::path(get, path = "/api/v1/documents/{id}/preview", tag = "library",
    params(("id" = i64, Path, minimum = 1)),
    responses((status = 200, body = PreviewBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn preview(
    caller: Caller,
    ApiPath(id): ApiPath<i64>,
) -> Result<Json<PreviewBody>, ApiError> {
    let id = document_id(id)?;
    blocking(move || {
        let view = caller.engine.open_document(&caller.ctx, DocRef::Id(id))?;
        Ok(Json(PreviewBody {
            document: view.document.into(),
            text: view.text,
            passages: view.passages.into_iter().map(Into::into).collect(),
        }))
    })
    .await
}

/// The original file (the server's copy of the version that was parsed, else the file on
/// the answering replica's disk), streamed as an attachment — 404 when the
/// document does not exist, the caller may not read it, or the file is no longer on the
/// server (its preview still works).
#[utoipa::path(get, path = "/api/v1/documents/{id}/file", tag = "library",
    params(("id" = i64, Path, minimum = 1)),
    responses(
        (status = 200, description = "The file's bytes, with its content type and name",
            body = Vec<u8>, content_type = "application/octet-stream"),
        (status = 404, description = "No such readable document, or its file is gone", body = ErrorBody),
        (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn file(caller: Caller, ApiPath(id): ApiPath<i64>) -> Result<Response, ApiError> {
    let id = document_id(id)?;
    let (doc, file) = blocking(move || Ok(caller.engine.document_file(&caller.ctx, id)?)).await?;
    let len = file.len;
    let content_type = content_type(&doc);
    let disposition = content_disposition(&file_name(&doc.path));
    let mut response = Body::from_stream(stream_file(file.reader, len)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, content_type);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    headers.insert(header::CONTENT_DISPOSITION, disposition);
    // A stored HTML file must never run as a page of the API's origin.
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox"),
    );
    Ok(response)
}

/// One cited passage (a citation's chunk id) with its document — 404 when it does not exist or
/// the caller may not read its document.
#[utoipa::path(get, path = "/api/v1/passages/{chunk_id}", tag = "library",
    params(("chunk_id" = i64, Path, minimum = 1)),
    responses((status = 200, body = PassageBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn passage(
    caller: Caller,
    ApiPath(chunk_id): ApiPath<i64>,
) -> Result<Json<PassageBody>, ApiError> {
    if chunk_id < 1 {
        return Err(ApiError::invalid(format!("{chunk_id} is not a chunk id")));
    }
    blocking(move || {
        let c = caller.engine.passage(&caller.ctx, ChunkId(chunk_id))?;
        Ok(Json(c.into()))
    })
    .await
}

/// The audit trail, newest first: administrators see the account's (or one user's), users
/// their own.
#[utoipa::path(get, path = "/api/v1/audit", tag = "library",
    params(AuditParams),
    responses((status = 200, body = AuditList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn audit(
    caller: Caller,
    ApiQuery(p): ApiQuery<AuditParams>,
) -> Result<Json<AuditList>, ApiError> {
    let limit = p.limit.unwrap_or(AUDIT_DEFAULT);
    if !(1..=AUDIT_MAX).contains(&limit) {
        return Err(ApiError::invalid(format!(
            "limit must be between 1 and {AUDIT_MAX}"
        )));
    }
    let user = p
        .user
        .map(|u| UserId::new(u.trim()).map_err(|e| ApiError::invalid(e.to_string())))
        .transpose()?;
    blocking(move || {
        let records: Vec<Value> = caller
            .engine
            .audit_trail_for(&caller.ctx, limit, user.as_ref())?
            .into_iter()
            .map(|r| json!(r))
            .collect();
        Ok(Json(AuditList {
            count: records.len(),
            records,
        }))
    })
    .await
}

// ----- files --------------------------------------------------------------------------------

/// The file's media type, from its extension, else its kind; text types carry the charset
/// ingestion detected.
fn content_type(doc: &DocumentRecord) -> HeaderValue {
    let ext = Path::new(&doc.path)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let by_ext = match ext.as_str() {
        "pdf" => "application/pdf",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "docm" => "application/vnd.ms-word.document.macroEnabled.12",
        "dotx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
        "doc" => "application/msword",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "ppsx" => "application/vnd.openxmlformats-officedocument.presentationml.slideshow",
        "pptm" => "application/vnd.ms-powerpoint.presentation.macroEnabled.12",
        "ppt" | "pps" => "application/vnd.ms-powerpoint",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "xlsm" => "application/vnd.ms-excel.sheet.macroEnabled.12",
        "xlsb" => "application/vnd.ms-excel.sheet.binary.macroEnabled.12",
        "xls" => "application/vnd.ms-excel",
        "ods" => "application/vnd.oasis.opendocument.spreadsheet",
        "eml" => "message/rfc822",
        "mbox" => "application/mbox",
        "md" | "markdown" | "mdown" | "mkd" | "mdx" => "text/markdown",
        "html" | "htm" => "text/html",
        "xhtml" => "application/xhtml+xml",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "json" => "application/json",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "txt" | "text" | "log" | "rst" | "srt" | "tex" | "org" | "adoc" | "ini" | "cfg"
        | "conf" => "text/plain",
        _ => "",
    };
    let media = match (by_ext, doc.kind.as_deref()) {
        ("", Some("pdf")) => "application/pdf",
        ("", Some("markdown")) => "text/markdown",
        ("", Some("html")) => "text/html",
        ("", Some("text")) => "text/plain",
        ("", Some("eml")) => "message/rfc822",
        ("", _) => "application/octet-stream",
        (m, _) => m,
    };
    let charset = doc
        .encoding
        .as_deref()
        .filter(|_| media.starts_with("text/"))
        .filter(|e| {
            !e.is_empty()
                && e.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
        });
    let value = match charset {
        Some(c) => format!("{media}; charset={c}"),
        None => media.to_owned(),
    };
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("application/octet-stream"))
}

/// Characters RFC 8187's `attr-char` leaves as they are; everything else is percent-encoded.
const ATTR_CHAR: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `attachment` with the file's name: an ASCII fallback and the exact name (RFC 6266/8187).
fn content_disposition(name: &str) -> HeaderValue {
    let fallback: String = name
        .chars()
        .map(|c| {
            if (c.is_ascii_graphic() && c != '"' && c != '\\') || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded = utf8_percent_encode(name, ATTR_CHAR);
    HeaderValue::from_str(&format!(
        "attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"
    ))
    .unwrap_or(HeaderValue::from_static("attachment"))
}

/// The first `len` bytes of `file`, read on a blocking thread in chunks and handed over
/// through a small channel: the file is never whole in memory, and a client that goes away
/// stops the reading.
fn stream_file(
    file: Box<dyn Read + Send>,
    len: u64,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::task::spawn_blocking(move || {
        let mut reader = file.take(len);
        loop {
            let mut buf = vec![0; FILE_CHUNK];
            let sent = match reader.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    buf.truncate(n);
                    tx.blocking_send(Ok(Bytes::from(buf)))
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::warn!("reading a document's file failed: {e}");
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            };
            if sent.is_err() {
                return;
            }
        }
    });
    futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    })
}
