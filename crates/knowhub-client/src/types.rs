//! What the server answers, as the client reads it. Fields the client does not know are
//! ignored (a newer server may add some); a field it needs that is missing is an error, which
//! the conformance test (`tests/conformance.rs`, against a real server) would catch first.

use serde::{Deserialize, Serialize};

/// `GET /api/v1/health`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Health {
    /// `ok`, or `unavailable` while the server cannot reach its database.
    pub status: String,
    pub version: String,
    /// `sqlite` or `postgres`.
    pub store: String,
    /// The database's reachability (`ok` or why not); absent for SQLite.
    #[serde(default)]
    pub database: Option<String>,
}

/// `GET /api/v1/me`: who the key signs in as.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Me {
    pub account_id: String,
    pub user_id: String,
    pub display_name: String,
    /// `ROOT`, `ADMIN` or `USER`.
    pub role: String,
}

/// How a search ranks passages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    #[default]
    Hybrid,
    Keyword,
    Semantic,
}

/// `POST /api/v1/search`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchRequest {
    pub query: String,
    /// Passages to return (the server allows 1 to 100; default 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_per_document: Option<usize>,
    pub mode: SearchMode,
    /// Only documents whose sender's name or address contains this (a mail's From).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Only documents dated this day (`YYYY-MM-DD`) or later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Only documents dated this day or earlier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
}

impl SearchRequest {
    /// A hybrid search with the server's defaults.
    pub fn new(query: impl Into<String>) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            limit: None,
            max_per_document: None,
            mode: SearchMode::Hybrid,
            from: None,
            since: None,
            until: None,
        }
    }
}

/// One passage found, with what a citation needs.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SearchHit {
    pub rank: usize,
    pub evidence_id: String,
    pub score: f32,
    pub chunk_id: i64,
    pub document_id: i64,
    pub path: String,
    pub title: String,
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub page_start: Option<u32>,
    #[serde(default)]
    pub page_end: Option<u32>,
    #[serde(default)]
    pub heading_path: Vec<String>,
    pub snippet: String,
    pub text: String,
    /// For a page of a web source, the address it was crawled from.
    #[serde(default)]
    pub url: Option<String>,
    /// The document's people and date (a mail's sender, recipients and date), where known.
    #[serde(default)]
    pub meta: DocumentMeta,
}

/// A document's people and date, as the server's engine read them from its format.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct DocumentMeta {
    /// A mail's sender(s), a document's author(s).
    #[serde(default)]
    pub authors: Vec<String>,
    /// A mail's To and Cc.
    #[serde(default)]
    pub recipients: Vec<String>,
    /// When it was sent or written (RFC 3339).
    #[serde(default)]
    pub date: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct SearchResults {
    pub hits: Vec<SearchHit>,
}

/// `POST /api/v1/ask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AskRequest {
    pub question: String,
    /// Continue this conversation (one of the caller's); default: a new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The project the question is about (its memories join the caller's profile).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

impl AskRequest {
    pub fn new(question: impl Into<String>) -> AskRequest {
        AskRequest {
            question: question.into(),
            session: None,
            project: None,
        }
    }
}

/// A numbered source of an answer (`[1]`, `[2]`, …).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Source {
    pub number: usize,
    pub evidence_id: String,
    pub title: String,
    #[serde(default)]
    pub page: Option<u32>,
    #[serde(default)]
    pub heading: Vec<String>,
    /// Where it points: `kb://doc/<document>#chunk=<chunk>` for a passage (open it with
    /// [`Client::preview`](crate::Client::preview) and [`Client::passage`](crate::Client::passage)),
    /// or the SQL data a result came from.
    pub uri: String,
    pub text: String,
    /// The cited document's people and date, where known.
    #[serde(default)]
    pub meta: DocumentMeta,
}

/// A cited answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Answer {
    pub answer: String,
    pub sources: Vec<Source>,
    pub route: String,
    /// `ok`, `need_clarify`, `no_evidence`, …
    pub stop_reason: String,
    /// `llm` or `extractive`.
    pub written_by: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    pub trace_id: String,
    pub total_ms: u64,
}

/// What a streamed answer reports before the answer itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskEvent {
    /// A step of the copilot's workflow started or ended.
    Step {
        node: String,
        status: String,
        timing_ms: u64,
    },
    /// Text to append to the answer being written.
    Token(String),
    /// The checked answer replaces what was streamed so far.
    Replace(String),
}

/// A stored document as the caller may see it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Document {
    pub id: i64,
    pub source_id: i64,
    pub title: String,
    pub path: String,
    #[serde(default)]
    pub kind: Option<String>,
    pub status: String,
    pub index_pending: bool,
    #[serde(default)]
    pub error_code: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    pub size: u64,
    #[serde(default)]
    pub page_count: Option<u32>,
    pub chunk_count: u64,
    #[serde(default)]
    pub content_hash: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    #[serde(default)]
    pub owner: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct DocumentList {
    pub documents: Vec<Document>,
}

/// A folder of the Sources pane.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Folder {
    pub path: String,
    pub documents: u64,
    pub watched: bool,
}

/// A job that failed, with why.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct JobFailure {
    pub path: String,
    pub error: String,
}

/// The ingestion queue's counts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Queue {
    pub queued: u64,
    pub running: u64,
    pub done: u64,
    pub failed: u64,
    pub cancelled: u64,
    pub waiting: u64,
    pub paused: bool,
    #[serde(default)]
    pub failures: Vec<JobFailure>,
}

/// `GET /api/v1/sources`: the folders and documents the caller may see.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Sources {
    pub folders: Vec<Folder>,
    pub documents: Vec<Document>,
    /// Matching documents, also those beyond the listed ones.
    pub total: usize,
    pub queue: Queue,
}

/// Where a passage sits in its document's text.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PassageRef {
    pub chunk_id: i64,
    pub ordinal: u32,
    #[serde(default)]
    pub page_start: Option<u32>,
    #[serde(default)]
    pub page_end: Option<u32>,
    #[serde(default)]
    pub heading_path: Vec<String>,
    /// Character offsets in `Preview::text`.
    pub char_start: usize,
    pub char_end: usize,
}

/// `GET /api/v1/documents/{id}/preview`: the viewer's text and passages.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Preview {
    pub document: Document,
    pub text: String,
    pub passages: Vec<PassageRef>,
}

/// `GET /api/v1/passages/{chunk_id}`: one cited passage.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Passage {
    pub chunk_id: i64,
    pub evidence_id: String,
    pub document_id: i64,
    pub title: String,
    pub path: String,
    #[serde(default)]
    pub kind: Option<String>,
    pub ordinal: u32,
    pub text: String,
    #[serde(default)]
    pub heading_path: Vec<String>,
    #[serde(default)]
    pub page_start: Option<u32>,
    #[serde(default)]
    pub page_end: Option<u32>,
    pub char_start: usize,
    pub char_end: usize,
}

/// What `GET /api/v1/documents/{id}/file` said about the bytes it sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    pub content_type: Option<String>,
    /// The file's name, from `Content-Disposition`.
    pub file_name: Option<String>,
    pub bytes: u64,
}

/// One of the caller's conversations.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct ConversationList {
    pub conversations: Vec<ConversationSummary>,
}

/// One question and its answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Turn {
    pub turn_id: i64,
    pub question: String,
    pub answer: String,
    pub trace_id: String,
    pub stop_reason: String,
    pub created_at_ms: i64,
    #[serde(default)]
    pub route: Option<String>,
    #[serde(default)]
    pub sources: Vec<Source>,
    #[serde(default)]
    pub written_by: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// The caller's own latest verdict on this answer.
    #[serde(default)]
    pub helpful: Option<bool>,
}

/// A conversation with its turns, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub title: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub turns: Vec<Turn>,
}

/// `POST /api/v1/feedback`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Feedback {
    pub trace_id: String,
    pub helpful: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The evidence ids the verdict is about (default: every passage the answer cites).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cited: Option<Vec<String>>,
}

/// `GET /api/v1/traces`: one answer's trace in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TraceSummary {
    pub trace_id: String,
    /// The conversation the answer belongs to.
    pub conversation_id: Option<String>,
    pub user_id: String,
    pub question: String,
    /// `rag`, `sql`, `hybrid`, `clarify` or `refuse`.
    pub route: String,
    pub stop_reason: String,
    pub total_ms: u64,
    pub created_at_ms: i64,
}

#[derive(Deserialize)]
pub(crate) struct TraceList {
    pub(crate) traces: Vec<TraceSummary>,
}

/// `GET /api/v1/models`: what answers and searches on the server.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ServerModels {
    /// The answer model (`None`: extractive answers).
    pub answer_model: Option<String>,
    /// The embedder for semantic search (`None`: keyword search only).
    pub embedder: Option<String>,
    pub reranker: Option<String>,
    /// Why configured models are not in use.
    #[serde(default)]
    pub notes: Vec<String>,
}
