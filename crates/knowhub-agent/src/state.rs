//! The agent state of seed 004 §4.2: append-only `messages`, `trace_steps` and
//! `evidence_items`; `input`, `authz`, `plan`, `tools`, `draft` and `output` overwritten by the
//! node that owns them. The whole state is persisted per turn as the trace.

use knowhub_engine::DocumentMeta;
use serde::{Deserialize, Serialize};

/// Where a question goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Document retrieval.
    #[default]
    Doc,
    /// Read-only SQL over spreadsheets and registered databases.
    Sql,
    /// Both.
    Hybrid,
    /// Ask the user what they mean.
    Clarify,
    /// Out of scope or asking for what nobody may have.
    Refuse,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Doc => "doc",
            Route::Sql => "sql",
            Route::Hybrid => "hybrid",
            Route::Clarify => "clarify",
            Route::Refuse => "refuse",
        }
    }
}

/// How a request ended (seed 004 `stop_reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    #[default]
    Ok,
    NeedClarify,
    NoEvidence,
    PermissionDenied,
    ToolError,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Ok => "ok",
            StopReason::NeedClarify => "need_clarify",
            StopReason::NoEvidence => "no_evidence",
            StopReason::PermissionDenied => "permission_denied",
            StopReason::ToolError => "tool_error",
        }
    }
}

/// One step of the trace.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct TraceStep {
    pub step_id: String,
    pub ts_ms: i64,
    pub node: String,
    pub action: String,
    /// `ok`, `error` or `skipped`.
    pub status: String,
    pub timing_ms: u64,
    #[serde(rename = "in")]
    pub input: serde_json::Value,
    pub out: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub err: Option<StepError>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct StepError {
    #[serde(rename = "type")]
    pub kind: String,
    pub msg: String,
}

/// Where a piece of evidence came from.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct EvidenceSource {
    // Documents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub heading: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// A crawled web page's address, where the citation links to.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub url: Option<String>,
    /// The document's people and date (a mail's sender, recipients and date).
    #[serde(skip_serializing_if = "DocumentMeta::is_empty", default)]
    pub meta: DocumentMeta,
    // SQL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
}

/// The permission decision recorded with each evidence item.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct EvidenceAuthz {
    /// `allow`, `deny` or `filtered`.
    pub result: String,
    pub perm_snapshot_id: String,
}

/// One piece of evidence (a passage or a SQL result).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct EvidenceItem {
    pub evidence_id: String,
    /// `doc_chunk` or `sql_result`.
    #[serde(rename = "type")]
    pub kind: String,
    pub text: String,
    pub score: Option<f32>,
    pub source: EvidenceSource,
    pub authz: EvidenceAuthz,
    /// `retriever`, `sql` or `user`.
    pub by: String,
    pub hash: String,
}

impl EvidenceItem {
    pub fn allowed(&self) -> bool {
        self.authz.result == "allow"
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Input {
    pub query: String,
    /// The question as it stands alone (follow-ups rewritten against earlier turns).
    pub standalone_query: String,
    pub normalized_query: String,
    /// `zh` or `en`: the language answers are written in.
    pub language: String,
    pub session_id: Option<String>,
    pub user_id: String,
    /// What the user told earlier conversations about themself (their memories, most
    /// confident first): how to answer them, never evidence for a claim.
    #[serde(default)]
    pub user_profile: Vec<String>,
    /// The project the conversation is about (its memories are in the profile).
    #[serde(default)]
    pub project: Option<String>,
    /// What the conversation said before the turns in `messages` (a running summary, and the
    /// questions of older turns it does not cover yet).
    #[serde(default)]
    pub conversation_summary: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Authz {
    pub user_id: String,
    pub roles: Vec<String>,
    /// Teams, projects and orgs (the visible scopes without the user's own).
    pub org_units: Vec<String>,
    pub perm_snapshot_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Validation {
    pub ok: bool,
    pub reason: Option<StopReason>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Plan {
    pub route: Route,
    /// How the route was decided: `llm` or `rules`.
    pub routed_by: String,
    pub intent: String,
    pub clarifying_questions: Vec<String>,
    pub validation: Validation,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct RagSummary {
    pub query: String,
    pub top_k: usize,
    /// The queries tried by the ReAct loop, in order.
    pub attempts: Vec<String>,
    pub returned_evidence_ids: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct SqlSummary {
    /// The data source queried (`spreadsheets` or a registered source's name).
    pub source: String,
    pub generated_sql: String,
    /// `llm` or `template`.
    pub generated_by: String,
    pub result_preview: String,
    pub returned_evidence_ids: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct ToolError {
    pub tool: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub msg: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Tools {
    pub rag: Option<RagSummary>,
    pub sql: Option<SqlSummary>,
    pub errors: Vec<ToolError>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq, Eq)]
pub struct Citation {
    pub evidence_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Draft {
    pub answer: String,
    pub citations: Vec<Citation>,
    pub confidence: f32,
    /// `llm` or `extractive`.
    pub written_by: String,
    /// Sentences removed because they made a claim without a valid citation.
    pub cut_sentences: Vec<String>,
}

/// What the window shows for a citation.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct RenderedSource {
    /// The number shown in the answer: `[1]`, `[2]`, …
    pub number: usize,
    pub evidence_id: String,
    pub title: String,
    pub page: Option<u32>,
    pub heading: Vec<String>,
    pub uri: String,
    /// A crawled web page's address (the citation opens it).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub url: Option<String>,
    /// The document's people and date (a mail's sender, recipients and date).
    #[serde(skip_serializing_if = "DocumentMeta::is_empty", default)]
    pub meta: DocumentMeta,
    /// The passage or SQL result, for the side panel.
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Output {
    pub final_answer: String,
    pub final_citations: Vec<Citation>,
    pub rendered_sources: Vec<RenderedSource>,
    pub stop_reason: StopReason,
}

/// One earlier turn of the conversation.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct HistoryTurn {
    pub question: String,
    pub answer: String,
}

/// Stops a request early: checked before every node and after every generated token.
#[derive(Debug, Clone, Default)]
pub struct CancelFlag(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl CancelFlag {
    pub fn new() -> CancelFlag {
        CancelFlag::default()
    }

    /// Asks the request to stop (it ends with [`crate::AgentError::Cancelled`]).
    pub fn cancel(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The whole agent state of one request.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct AgentState {
    pub trace_id: String,
    /// The caller's stop button (not part of the stored trace).
    #[serde(skip)]
    pub cancel: CancelFlag,
    pub messages: Vec<HistoryTurn>,
    pub trace_steps: Vec<TraceStep>,
    pub evidence_items: Vec<EvidenceItem>,
    pub input: Input,
    pub authz: Authz,
    pub plan: Plan,
    pub tools: Tools,
    pub draft: Draft,
    pub output: Output,
    /// LLM tokens spent on this request.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The model that wrote, or `None` (extractive, rules).
    pub llm: Option<String>,
}

impl AgentState {
    /// Evidence items the synthesizer may use: allowed ones, in the order they were added.
    pub fn usable_evidence(&self) -> Vec<&EvidenceItem> {
        self.evidence_items.iter().filter(|e| e.allowed()).collect()
    }
}
