//! Conversations, their turns and traces, and feedback on answers: what the desktop window
//! shows beside the copilot, over HTTP for a team server.
//!
//! * `GET /api/v1/conversations`, `GET|DELETE /api/v1/conversations/{id}`,
//!   `POST /api/v1/conversations/{id}/remember`: the caller's own conversations. They are
//!   private (administrators' included): anyone else's id is "not found", like a missing one.
//!   `POST /api/v1/ask` with `"session": id` appends a turn; its answer names the
//!   conversation in `session_id`.
//! * `GET /api/v1/traces/{trace_id}`: how an answer came about (route, steps with timings,
//!   evidence, SQL). The caller's own; administrators may read all (audits). `GET
//!   /api/v1/traces` lists recent ones the same way.
//! * `POST /api/v1/feedback`: helpful or not, on an answer whose trace the caller may read.
//!
//! Who may read what is the engine's decision; this module only shapes the stored records.

use axum::Json;
use axum::extract::State;
use knowhub_agent::AgentState;
use knowhub_agent::memory::LlmMemoryModel;
use knowhub_agent::state::RenderedSource;
use knowhub_engine::{
    CommitWith, Engine, EngineError, MemoryModel, MemoryNode, RequestContext, SessionRecord,
    SkippedCandidate, TraceRecord, TurnRecord,
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiJson, ApiPath, ApiQuery, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(list_conversations))
        .routes(routes!(get_conversation, delete_conversation))
        .routes(routes!(remember_conversation))
        .routes(routes!(list_traces))
        .routes(routes!(get_trace))
        .routes(routes!(send_feedback))
}

/// Conversations listed when the client names no `limit`.
const DEFAULT_LIMIT: usize = 50;
/// The most conversations one listing returns (larger limits are read as this).
const MAX_LIMIT: usize = 500;
/// The most turns of one conversation returned (the newest; the desktop window shows as
/// many).
const MAX_TURNS: usize = 500;
/// Ids are short tokens: a longer one, or one with control characters, is a malformed
/// request (422) rather than a conversation or trace that does not exist.
const MAX_ID_BYTES: usize = 256;
/// Characters of each evidence passage a trace shows (the whole passage is in `sources`).
const EXCERPT_CHARS: usize = 280;

/// `id` if it can name a conversation or trace at all.
fn checked_id(what: &str, id: String) -> Result<String, ApiError> {
    if id.trim().is_empty() || id.len() > MAX_ID_BYTES || id.chars().any(char::is_control) {
        return Err(ApiError::invalid(format!(
            "{what} must be 1 to {MAX_ID_BYTES} bytes without control characters"
        )));
    }
    Ok(id)
}

/// The agent's state stored with a trace, or `None` when it cannot be read (a trace written
/// by an older build): its words are still shown.
fn stored_state(record: &TraceRecord) -> Option<AgentState> {
    serde_json::from_str(&record.state)
        .inspect_err(|e| tracing::warn!(trace = %record.id, "unreadable stored trace: {e}"))
        .ok()
}

// ----- list -----------------------------------------------------------------------------------

/// Query of `GET /api/v1/conversations`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListParams {
    /// How many (default 50; larger values than 500 are read as 500).
    #[param(minimum = 1, maximum = 1_000_000_000)]
    limit: Option<usize>,
}

/// A conversation without its turns.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ConversationSummary {
    /// Pass it as `session` to `POST /api/v1/ask` to continue the conversation.
    id: String,
    /// The first question, shortened.
    title: String,
    created_at_ms: i64,
    /// When the last turn was added.
    updated_at_ms: i64,
}

impl From<SessionRecord> for ConversationSummary {
    fn from(s: SessionRecord) -> Self {
        ConversationSummary {
            id: s.id,
            title: s.title,
            created_at_ms: s.created_at_ms,
            updated_at_ms: s.updated_at_ms,
        }
    }
}

/// `{"conversations": [...], "count": n}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ConversationList {
    conversations: Vec<ConversationSummary>,
    count: usize,
}

/// The caller's conversations, most recently continued first.
#[utoipa::path(get, path = "/api/v1/conversations", tag = "conversations",
    params(ListParams),
    responses((status = 200, body = ConversationList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list_conversations(
    caller: Caller,
    ApiQuery(p): ApiQuery<ListParams>,
) -> Result<Json<ConversationList>, ApiError> {
    let limit = match p.limit {
        None => DEFAULT_LIMIT,
        Some(0) => return Err(ApiError::invalid("limit must be at least 1")),
        Some(n) => n.min(MAX_LIMIT),
    };
    blocking(move || {
        let conversations: Vec<ConversationSummary> = caller
            .engine
            .sessions(&caller.ctx, limit)?
            .into_iter()
            .map(Into::into)
            .collect();
        Ok(Json(ConversationList {
            count: conversations.len(),
            conversations,
        }))
    })
    .await
}

// ----- one conversation -----------------------------------------------------------------------

/// One question and its answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TurnBody {
    /// Turn ids grow: a later turn has a larger one.
    turn_id: i64,
    question: String,
    /// The question rewritten to stand alone (follow-ups resolved against earlier turns).
    standalone_question: String,
    answer: String,
    /// `GET /api/v1/traces/{trace_id}` tells how the answer came about; feedback names it.
    trace_id: String,
    /// `ok`, `need_clarify`, `no_evidence`, …
    stop_reason: String,
    created_at_ms: i64,
    /// `doc`, `sql`, `hybrid`, `clarify`, `refuse`, … (absent: the trace is unreadable).
    route: Option<String>,
    /// The numbered sources the answer cites (`[1]`, `[2]`, …).
    #[schema(value_type = Vec<Object>)]
    sources: Vec<RenderedSource>,
    /// `llm` or `extractive` (absent: the trace is unreadable).
    written_by: Option<String>,
    /// The model that wrote it (absent: extractive).
    model: Option<String>,
    /// The caller's latest verdict on this answer (absent: none given).
    helpful: Option<bool>,
}

/// A conversation with its turns, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ConversationBody {
    id: String,
    title: String,
    created_at_ms: i64,
    updated_at_ms: i64,
    /// The newest 500 turns, oldest first.
    turns: Vec<TurnBody>,
}

/// `turn` with what its trace adds (sources, route, the caller's verdict). A trace that is
/// gone or unreadable still leaves the words; any other failure fails the request.
fn turn_body(engine: &Engine, ctx: &RequestContext, t: TurnRecord) -> Result<TurnBody, ApiError> {
    let state = match engine.trace(ctx, &t.trace_id) {
        Ok(record) => stored_state(&record),
        Err(EngineError::NotFound(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let helpful = match engine.feedback(ctx, &t.trace_id) {
        Ok(verdicts) => verdicts
            .into_iter()
            .rev()
            .find(|f| f.user_id == ctx.user.as_str())
            .map(|f| f.helpful),
        Err(EngineError::NotFound(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let mut body = TurnBody {
        turn_id: t.id,
        question: t.question,
        standalone_question: t.standalone,
        answer: t.answer,
        trace_id: t.trace_id,
        stop_reason: t.stop_reason,
        created_at_ms: t.created_at_ms,
        route: None,
        sources: Vec::new(),
        written_by: None,
        model: None,
        helpful,
    };
    if let Some(s) = state {
        body.route = Some(s.plan.route.as_str().to_owned());
        body.sources = s.output.rendered_sources;
        body.written_by = Some(s.draft.written_by);
        body.model = s.llm;
    }
    Ok(body)
}

/// One of the caller's conversations with its turns (another user's: 404).
#[utoipa::path(get, path = "/api/v1/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "A conversation id (`session_id` of an answer)")),
    responses((status = 200, body = ConversationBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn get_conversation(
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ConversationBody>, ApiError> {
    let id = checked_id("the conversation id", id)?;
    blocking(move || {
        let (engine, ctx) = (&caller.engine, &caller.ctx);
        let record = engine.conversation(ctx, &id)?;
        let turns = engine
            .session_turns(ctx, &id, MAX_TURNS)?
            .into_iter()
            .map(|t| turn_body(engine, ctx, t))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Json(ConversationBody {
            id: record.id,
            title: record.title,
            created_at_ms: record.created_at_ms,
            updated_at_ms: record.updated_at_ms,
            turns,
        }))
    })
    .await
}

/// What a delete removed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DeletedBody {
    deleted: bool,
    conversation_id: String,
}

/// Delete one of the caller's conversations with its turns (another user's: 404). The
/// answers' traces stay for audits.
#[utoipa::path(delete, path = "/api/v1/conversations/{id}", tag = "conversations",
    params(("id" = String, Path, description = "A conversation id")),
    responses((status = 200, body = DeletedBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn delete_conversation(
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<DeletedBody>, ApiError> {
    let id = checked_id("the conversation id", id)?;
    blocking(move || {
        caller.engine.delete_session(&caller.ctx, &id)?;
        Ok(Json(DeletedBody {
            deleted: true,
            conversation_id: id,
        }))
    })
    .await
}

// ----- remember -------------------------------------------------------------------------------

/// What remembering a conversation wrote to the caller's memory.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RememberBody {
    conversation_id: String,
    /// Candidates found in the conversation.
    candidates: usize,
    /// New memories (nodes as in `GET /api/v1/memory/node`).
    #[schema(value_type = Vec<Object>)]
    created: Vec<MemoryNode>,
    /// Memories the conversation restated (confidence raised).
    #[schema(value_type = Vec<Object>)]
    confirmed: Vec<MemoryNode>,
    /// Ids of the confirmed memories a restatement was merged into.
    merged: Vec<String>,
    /// `{kind, statement, reason}` per candidate not written.
    #[schema(value_type = Vec<Object>)]
    skipped: Vec<SkippedCandidate>,
    /// The model that proposed memories beyond the rules (absent: rules only).
    model: Option<String>,
    /// Why the model could not be used (the rules' memories were still written).
    model_error: Option<String>,
}

/// Query of `POST /api/v1/conversations/{id}/remember`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct RememberParams {
    /// The project the conversation was about: its memories apply there only.
    #[param(pattern = r"^[^\s,\x00-\x1f\x7f-\x9f]*$", max_length = 64)]
    project: Option<String>,
}

/// Remember what the caller said about themself in one of their conversations (preferences,
/// habits, background, constraints), with the server's language model when it has one.
#[utoipa::path(post, path = "/api/v1/conversations/{id}/remember", tag = "conversations",
    params(("id" = String, Path, description = "A conversation id"), RememberParams),
    responses((status = 200, body = RememberBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn remember_conversation(
    State(state): State<ServerState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(p): ApiQuery<RememberParams>,
) -> Result<Json<RememberBody>, ApiError> {
    let id = checked_id("the conversation id", id)?;
    let project = p.project.filter(|p| !p.is_empty());
    let llm = state.llm();
    blocking(move || {
        let model_id = llm.as_ref().map(|l| l.model_id().to_owned());
        let model = llm.map(LlmMemoryModel::new);
        let with = CommitWith {
            model: model.as_ref().map(|m| m as &dyn MemoryModel),
            project: project.as_deref(),
            ..Default::default()
        };
        let report = caller
            .engine
            .memory_commit_session(&caller.ctx, &id, &with)?;
        Ok(Json(RememberBody {
            conversation_id: id,
            candidates: report.candidates,
            created: report.created,
            confirmed: report.confirmed,
            merged: report.merged,
            skipped: report.skipped,
            model: model_id,
            model_error: report.model_error,
        }))
    })
    .await
}

// ----- traces ---------------------------------------------------------------------------------

/// One step of the copilot's workflow.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TraceStepBody {
    node: String,
    action: String,
    status: String,
    timing_ms: u64,
    /// `kind: message`, when the step failed.
    error: Option<String>,
}

/// A piece of evidence the copilot retrieved (only ever what the asker could read).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EvidenceBody {
    evidence_id: String,
    /// `doc_chunk` or `sql_result`.
    #[serde(rename = "type")]
    kind: String,
    title: String,
    page: Option<u32>,
    /// The permission decision recorded with it: `allow`.
    authz: String,
    score: Option<f32>,
    /// Whether the answer cites it.
    cited: bool,
    /// The passage's first 280 characters.
    excerpt: String,
}

/// The statement a SQL answer ran.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SqlBody {
    source: String,
    sql: String,
    /// `template`, `llm`, …
    generated_by: String,
    preview: String,
}

/// How an answer came about.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TraceBody {
    trace_id: String,
    /// The conversation of the answer (absent: asked outside one).
    conversation_id: Option<String>,
    /// Who asked (administrators read everyone's traces).
    user_id: String,
    question: String,
    /// The question as retrieval saw it (follow-ups resolved).
    standalone_question: String,
    /// What the conversation said before the turns read word for word, when long enough.
    conversation_summary: Option<String>,
    language: String,
    /// `doc`, `sql`, `hybrid`, `clarify`, `refuse`, …
    route: String,
    /// `rules` or `llm`.
    routed_by: String,
    stop_reason: String,
    answer: String,
    /// `llm` or `extractive`.
    written_by: String,
    /// The model that wrote it (absent: extractive).
    model: Option<String>,
    /// The permission snapshot every read of the question used.
    perm_snapshot_id: String,
    total_ms: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    created_at_ms: i64,
    steps: Vec<TraceStepBody>,
    evidence: Vec<EvidenceBody>,
    /// The numbered sources the answer cites.
    #[schema(value_type = Vec<Object>)]
    sources: Vec<RenderedSource>,
    sql: Option<SqlBody>,
    /// The retrieval queries tried, in order.
    rag_queries: Vec<String>,
    /// Sentences removed because no allowed source supported them.
    cut_sentences: Vec<String>,
    /// `tool (kind): message` per tool failure.
    tool_errors: Vec<String>,
}

/// The view of `record`; one whose stored state cannot be read still shows its own fields.
fn trace_body(record: TraceRecord) -> TraceBody {
    let st = stored_state(&record).unwrap_or_default();
    let cited: Vec<&str> = st
        .output
        .final_citations
        .iter()
        .map(|c| c.evidence_id.as_str())
        .collect();
    let evidence = st
        .evidence_items
        .iter()
        .map(|e| EvidenceBody {
            evidence_id: e.evidence_id.clone(),
            kind: e.kind.clone(),
            title: e.source.title.clone().unwrap_or_default(),
            page: e.source.page,
            authz: e.authz.result.clone(),
            score: e.score,
            cited: cited.contains(&e.evidence_id.as_str()),
            excerpt: e.text.chars().take(EXCERPT_CHARS).collect(),
        })
        .collect();
    TraceBody {
        trace_id: record.id,
        conversation_id: record.session_id,
        user_id: record.user_id,
        question: record.question,
        standalone_question: st.input.standalone_query,
        conversation_summary: st.input.conversation_summary,
        language: st.input.language,
        route: record.route,
        routed_by: st.plan.routed_by,
        stop_reason: record.stop_reason,
        answer: st.output.final_answer,
        written_by: st.draft.written_by,
        model: st.llm,
        perm_snapshot_id: st.authz.perm_snapshot_id,
        total_ms: record.total_ms,
        prompt_tokens: record.prompt_tokens,
        completion_tokens: record.completion_tokens,
        created_at_ms: record.created_at_ms,
        steps: st
            .trace_steps
            .iter()
            .map(|t| TraceStepBody {
                node: t.node.clone(),
                action: t.action.clone(),
                status: t.status.clone(),
                timing_ms: t.timing_ms,
                error: t.err.as_ref().map(|e| format!("{}: {}", e.kind, e.msg)),
            })
            .collect(),
        evidence,
        sources: st.output.rendered_sources,
        sql: st.tools.sql.map(|q| SqlBody {
            source: q.source,
            sql: q.generated_sql,
            generated_by: q.generated_by,
            preview: q.result_preview,
        }),
        rag_queries: st.tools.rag.map(|r| r.attempts).unwrap_or_default(),
        cut_sentences: st.draft.cut_sentences,
        tool_errors: st
            .tools
            .errors
            .iter()
            .map(|e| format!("{} ({}): {}", e.tool, e.kind, e.msg))
            .collect(),
    }
}

/// One answer in a listing of traces.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TraceSummary {
    trace_id: String,
    /// The conversation the answer belongs to.
    conversation_id: Option<String>,
    user_id: String,
    question: String,
    /// `rag`, `sql`, `hybrid`, `clarify` or `refuse`.
    route: String,
    stop_reason: String,
    total_ms: u64,
    created_at_ms: i64,
}

/// `{"traces": [...], "count": n}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TraceList {
    traces: Vec<TraceSummary>,
    count: usize,
}

/// Recent answers' traces, newest first: the caller's own, or everyone's for administrators.
#[utoipa::path(get, path = "/api/v1/traces", tag = "conversations",
    params(ListParams),
    responses((status = 200, body = TraceList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list_traces(
    caller: Caller,
    ApiQuery(p): ApiQuery<ListParams>,
) -> Result<Json<TraceList>, ApiError> {
    let limit = match p.limit {
        None => DEFAULT_LIMIT,
        Some(0) => return Err(ApiError::invalid("limit must be at least 1")),
        Some(n) => n.min(MAX_LIMIT),
    };
    blocking(move || {
        let traces: Vec<TraceSummary> = caller
            .engine
            .traces(&caller.ctx, limit)?
            .into_iter()
            .map(|t| TraceSummary {
                trace_id: t.id,
                conversation_id: t.session_id,
                user_id: t.user_id,
                question: t.question,
                route: t.route,
                stop_reason: t.stop_reason,
                total_ms: t.total_ms,
                created_at_ms: t.created_at_ms,
            })
            .collect();
        Ok(Json(TraceList {
            count: traces.len(),
            traces,
        }))
    })
    .await
}

/// An answer's trace: the caller's own, or anyone's for administrators (others: 404).
#[utoipa::path(get, path = "/api/v1/traces/{trace_id}", tag = "conversations",
    params(("trace_id" = String, Path, description = "`trace_id` of an answer")),
    responses((status = 200, body = TraceBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn get_trace(
    caller: Caller,
    ApiPath(trace_id): ApiPath<String>,
) -> Result<Json<TraceBody>, ApiError> {
    let trace_id = checked_id("the trace id", trace_id)?;
    blocking(move || {
        Ok(Json(trace_body(
            caller.engine.trace(&caller.ctx, &trace_id)?,
        )))
    })
    .await
}

// ----- feedback -------------------------------------------------------------------------------

/// Body of `POST /api/v1/feedback`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct FeedbackBody {
    /// `trace_id` of the answer.
    #[schema(max_length = 256)]
    trace_id: String,
    helpful: bool,
    /// Why (at most 4,000 characters).
    #[serde(default)]
    #[schema(max_length = 4000)]
    note: String,
    /// Evidence ids of the answer the verdict is about (default: the passages it cites).
    #[serde(default)]
    cited: Option<Vec<String>>,
}

/// The verdict as stored.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FeedbackResult {
    recorded: bool,
    trace_id: String,
    helpful: bool,
    note: String,
    cited: Vec<String>,
}

/// The evidence ids a verdict on `record`'s answer names: `asked` when every one is evidence
/// of that answer (422 otherwise), else the passages the answer cites.
fn cited_evidence(
    record: &TraceRecord,
    asked: Option<Vec<String>>,
) -> Result<Vec<String>, ApiError> {
    let st = stored_state(record).unwrap_or_default();
    let Some(asked) = asked else {
        return Ok(st
            .output
            .final_citations
            .into_iter()
            .map(|c| c.evidence_id)
            .collect());
    };
    let mut cited: Vec<String> = Vec::with_capacity(asked.len());
    for id in asked {
        let known = st.evidence_items.iter().any(|e| e.evidence_id == id)
            || st
                .output
                .rendered_sources
                .iter()
                .any(|s| s.evidence_id == id);
        if !known {
            let shown: String = id.chars().take(80).collect();
            return Err(ApiError::invalid(format!(
                "cited: {shown:?} is not evidence of this answer"
            )));
        }
        if !cited.contains(&id) {
            cited.push(id);
        }
    }
    Ok(cited)
}

/// Helpful or not, with a note, on an answer the caller may read the trace of (their own;
/// administrators: any); the latest verdict per user counts.
#[utoipa::path(post, path = "/api/v1/feedback", tag = "conversations",
    request_body = FeedbackBody,
    responses((status = 200, body = FeedbackResult), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn send_feedback(
    caller: Caller,
    ApiJson(b): ApiJson<FeedbackBody>,
) -> Result<Json<FeedbackResult>, ApiError> {
    let trace_id = checked_id("trace_id", b.trace_id)?;
    blocking(move || {
        let record = caller.engine.trace(&caller.ctx, &trace_id)?;
        let cited = cited_evidence(&record, b.cited)?;
        caller
            .engine
            .record_feedback(&caller.ctx, &record.id, b.helpful, &b.note, &cited)?;
        Ok(Json(FeedbackResult {
            recorded: true,
            trace_id: record.id,
            helpful: b.helpful,
            note: b.note.trim().to_owned(),
            cited,
        }))
    })
    .await
}
