//! `POST /api/v1/search` (document passages with citations, through `Engine::retrieve`),
//! `POST /api/v1/ask` (the copilot; `"stream": true` answers with server-sent events) and
//! `GET /api/v1/models` (which models answer and search here).

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use knowhub_agent::state::RenderedSource;
use knowhub_agent::{AgentEvent, AskOutcome, AskRequest, CancelFlag};
use knowhub_engine::{MetaFilter, RetrievalMode, SearchHit, SearchOptions};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::mpsc;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiJson, Caller};
use crate::error::{ApiError, ErrorBody, ErrorDetail, TRACE_ID, current_trace_id};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(search))
        .routes(routes!(ask))
        .routes(routes!(models))
}

// ----- models -------------------------------------------------------------------------------

/// The models this server answers and searches with. They are chosen where the server starts
/// (`knowhub serve --llm … --embedder … --reranker …`), not through the API.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ModelsBody {
    /// The answer model (absent: extractive answers, the best supporting sentences).
    answer_model: Option<String>,
    /// The embedder for semantic search (absent: keyword search only).
    embedder: Option<String>,
    /// The cross-encoder that reranks search results (absent: none).
    reranker: Option<String>,
    /// Why configured models are not in use.
    notes: Vec<String>,
}

/// Which models answer and search for the caller on this server.
#[utoipa::path(get, path = "/api/v1/models", tag = "copilot",
    responses((status = 200, body = ModelsBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn models(
    State(state): State<ServerState>,
    caller: Caller,
) -> Result<Json<ModelsBody>, ApiError> {
    let engine = &caller.engine;
    Ok(Json(ModelsBody {
        answer_model: state.llm().map(|l| l.model_id().to_owned()),
        embedder: engine.embedder_id().map(str::to_owned),
        reranker: engine.reranker_id().map(str::to_owned),
        notes: engine.model_notes().to_vec(),
    }))
}

// ----- search -------------------------------------------------------------------------------

/// Body of `POST /api/v1/search`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct SearchBody {
    #[schema(pattern = r"\S")]
    query: String,
    /// Passages to return (default 10, at most 100).
    #[serde(default, deserialize_with = "crate::count::optional")]
    #[schema(minimum = 1, maximum = 100)]
    limit: Option<usize>,
    /// At most this many passages per document (default 3).
    #[serde(default, deserialize_with = "crate::count::optional")]
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    max_per_document: Option<usize>,
    /// `hybrid` (default), `keyword` or `semantic`.
    #[serde(default)]
    #[schema(pattern = "^(hybrid|keyword|semantic)$")]
    mode: Option<String>,
    /// Only documents whose sender's name or address contains this (a mail's From).
    #[serde(default)]
    from: Option<String>,
    /// Only documents dated this day or later (`YYYY-MM-DD`, by the document's own date).
    #[serde(default)]
    #[schema(pattern = r"^\d{4}-\d{2}-\d{2}$")]
    since: Option<String>,
    /// Only documents dated this day or earlier (`YYYY-MM-DD`).
    #[serde(default)]
    #[schema(pattern = r"^\d{4}-\d{2}-\d{2}$")]
    until: Option<String>,
}

/// `{"hits": [...], "count": n}`: passages the caller may read, each with its citation
/// (`evidence_id`, document, path, pages, heading path, snippet, text, and `meta`: the
/// document's `authors`, `recipients` and `date` where its format records them).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SearchResults {
    #[schema(value_type = Vec<Object>)]
    hits: Vec<SearchHit>,
    count: usize,
}

/// Search the documents the caller may read.
#[utoipa::path(post, path = "/api/v1/search", tag = "copilot",
    request_body = SearchBody,
    responses((status = 200, body = SearchResults), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn search(
    caller: Caller,
    ApiJson(b): ApiJson<SearchBody>,
) -> Result<Json<SearchResults>, ApiError> {
    let d = SearchOptions::default();
    let opts = SearchOptions {
        limit: b.limit.unwrap_or(d.limit).clamp(1, 100),
        max_per_document: b.max_per_document.unwrap_or(d.max_per_document).max(1),
        mode: match b.mode.as_deref() {
            None => RetrievalMode::default(),
            Some(m) => m.parse::<RetrievalMode>()?,
        },
        meta: MetaFilter {
            from: b.from.clone(),
            since: b.since.as_deref().map(MetaFilter::parse_day).transpose()?,
            until: b.until.as_deref().map(MetaFilter::parse_day).transpose()?,
        },
        ..d
    };
    blocking(move || {
        let hits = caller.engine.search(&caller.ctx, &b.query, &opts)?;
        let count = hits.len();
        Ok(Json(SearchResults { hits, count }))
    })
    .await
}

// ----- ask ----------------------------------------------------------------------------------

/// One server-sent event of a streamed answer.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub(crate) struct AskEvent {
    /// `step` (a workflow node started or ended), `token` (text to append), `replace` (the
    /// verified answer replaces what was streamed), `answer` (the final cited answer) or
    /// `error`.
    #[schema(pattern = "^(step|token|replace|answer|error)$")]
    event: String,
    /// The event's JSON payload.
    data: String,
}

/// Body of `POST /api/v1/ask`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct AskBody {
    #[schema(pattern = r"\S")]
    question: String,
    /// Continue one of the caller's conversations (the `session_id` of an earlier answer;
    /// also accepted under that name); default: a new one.
    #[serde(default, alias = "session_id")]
    session: Option<String>,
    /// The project the question is about: the caller's memories of that project join their
    /// profile.
    #[serde(default)]
    #[schema(pattern = r"^[^\s,\x00-\x1f\x7f-\x9f]+$", max_length = 64)]
    project: Option<String>,
    /// Answer with server-sent events: `step`, `token`, `replace`, then `answer` (or
    /// `error`).
    #[serde(default)]
    stream: bool,
}

/// A cited answer.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AnswerBody {
    answer: String,
    /// The numbered sources the answer cites (`[1]`, `[2]`, …).
    #[schema(value_type = Vec<Object>)]
    sources: Vec<RenderedSource>,
    /// `doc`, `sql`, `hybrid`, `clarify`, `refuse`, …
    route: String,
    /// `ok`, `need_clarify`, `no_evidence`, `permission_denied`, …
    stop_reason: String,
    /// `llm` or `extractive`.
    written_by: String,
    /// The model that wrote it (absent: extractive).
    model: Option<String>,
    session_id: Option<String>,
    trace_id: String,
    total_ms: u64,
}

fn answer_of(outcome: &AskOutcome, model: Option<String>) -> AnswerBody {
    let s = &outcome.state;
    AnswerBody {
        answer: s.output.final_answer.clone(),
        sources: s.output.rendered_sources.clone(),
        route: s.plan.route.as_str().to_owned(),
        stop_reason: s.output.stop_reason.as_str().to_owned(),
        written_by: s.draft.written_by.clone(),
        model,
        session_id: outcome.session_id.clone(),
        trace_id: outcome.trace_id.clone(),
        total_ms: outcome.total_ms,
    }
}

/// What the blocking agent sends to the event stream.
enum Msg {
    Event(AgentEvent),
    Done(Result<AnswerBody, ApiError>),
}

fn sse_event(msg: Msg, trace_id: &Option<String>) -> Event {
    let (name, data) = match msg {
        Msg::Event(AgentEvent::Step {
            node,
            status,
            timing_ms,
        }) => (
            "step",
            json!({ "node": node, "status": status, "timing_ms": timing_ms }),
        ),
        Msg::Event(AgentEvent::Token(t)) => ("token", json!({ "text": t })),
        Msg::Event(AgentEvent::Replace(t)) => ("replace", json!({ "text": t })),
        Msg::Done(Ok(answer)) => ("answer", json!(answer)),
        Msg::Done(Err(e)) => (
            "error",
            json!(ErrorBody {
                error: ErrorDetail {
                    code: e.code.as_str().to_owned(),
                    message: e.message,
                },
                trace_id: trace_id.clone(),
            }),
        ),
    };
    Event::default().event(name).data(data.to_string())
}

/// Ask the copilot: a cited answer from what the caller may read (extractive without a
/// language model). With `"stream": true` the response is `text/event-stream`.
#[utoipa::path(post, path = "/api/v1/ask", tag = "copilot",
    request_body = AskBody,
    responses(
        (status = 200, description = "The answer; `text/event-stream` when `stream` is true",
            content((AnswerBody = "application/json"), (AskEvent = "text/event-stream"))),
        (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn ask(
    State(state): State<ServerState>,
    caller: Caller,
    ApiJson(b): ApiJson<AskBody>,
) -> Result<Response, ApiError> {
    if b.question.trim().is_empty() {
        return Err(ApiError::invalid("the question is empty"));
    }
    let llm = state.llm();
    let model = llm.as_ref().map(|l| l.model_id().to_owned());
    let agent = state.agent(Arc::clone(&caller.engine));
    let cancel = CancelFlag::new();
    let request = AskRequest {
        question: b.question.trim().to_owned(),
        session: b.session.filter(|s| !s.is_empty()),
        ephemeral: false,
        project: b.project.filter(|p| !p.is_empty()),
        cancel: cancel.clone(),
    };
    if !b.stream {
        let answer = blocking(move || {
            let outcome = agent.ask(&caller.ctx, &request, &mut |_| {})?;
            Ok(answer_of(&outcome, model))
        })
        .await?;
        return Ok(Json(answer).into_response());
    }
    let (tx, rx) = mpsc::unbounded_channel::<Msg>();
    let trace_id = current_trace_id();
    let worker_trace = trace_id.clone().unwrap_or_default();
    tokio::task::spawn_blocking(move || {
        let run = || {
            let done = agent.ask(&caller.ctx, &request, &mut |e| {
                // The client went away: stop generating (nothing of the request is stored).
                if tx.send(Msg::Event(e.clone())).is_err() {
                    cancel.cancel();
                }
            });
            let done = done.map(|o| answer_of(&o, model)).map_err(ApiError::from);
            let _ = tx.send(Msg::Done(done));
        };
        // Errors logged from the worker carry the request's trace id.
        TRACE_ID.sync_scope(worker_trace, run);
    });
    let events = event_stream(rx, trace_id);
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

fn event_stream(
    rx: mpsc::UnboundedReceiver<Msg>,
    trace_id: Option<String>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold((rx, trace_id), |(mut rx, trace_id)| async move {
        let msg = rx.recv().await?;
        let event = sse_event(msg, &trace_id);
        Some((Ok(event), (rx, trace_id)))
    })
}
