//! Seed 002's knowledge API: `/api/knowledge/*`. Thin: every rule (visibility, owner-only
//! writes, ranking, slim grouping) is the engine's.
//!
//! Seed 002 paths (`GET /api/knowledge/search`, `POST /api/knowledge`, `PUT
//! /api/knowledge/{id}`, `POST /api/knowledge/batch_update`, `GET /api/knowledge`, `POST
//! /api/knowledge/slim`) plus `GET`/`DELETE /api/knowledge/{id}`, `GET
//! /api/knowledge/{id}/versions`, and tool-style aliases (`POST /api/knowledge/search`,
//! `/save`, `/update`, `GET /api/knowledge/list`).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use knowhub_agent::knowledge::LlmRewriter;
use knowhub_engine::{
    FeedbackCase, KnowledgeListOptions, KnowledgeQuery, KnowledgeSource, KnowledgeUpdate,
    NewKnowledge, Rewriter, SlimOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiJson, ApiPath, ApiQuery, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(search_get, search_post))
        .routes(routes!(list, save))
        .routes(routes!(save_alias))
        .routes(routes!(list_alias))
        .routes(routes!(update_alias))
        .routes(routes!(batch_update))
        .routes(routes!(slim))
        .routes(routes!(get_item, update, delete_item))
        .routes(routes!(versions))
}

/// A comma-separated query value as a list (shared by the query-string endpoints).
pub(crate) fn split(list: Option<String>) -> Vec<String> {
    list.map(|s| {
        s.split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    })
    .unwrap_or_default()
}

/// `key=value` pairs, comma-separated.
pub(crate) fn tag_pairs(list: Option<String>) -> Result<BTreeMap<String, String>, ApiError> {
    split(list)
        .into_iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            _ => Err(ApiError::invalid(format!("a tag is key=value, not {p:?}"))),
        })
        .collect()
}

fn rewriter(state: &ServerState) -> Option<LlmRewriter> {
    state.llm().map(LlmRewriter::new)
}

/// A list of items or hits with its length.
fn results<T: Serialize>(items: Vec<T>) -> Json<Value> {
    let count = items.len();
    Json(json!({ "results": items, "count": count }))
}

// ----- search -------------------------------------------------------------------------------

/// Query of `GET /api/knowledge/search` (seed 002).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SearchParams {
    /// The query text.
    #[param(pattern = r"\S")]
    q: String,
    /// How many items (default 5, at most 100).
    #[param(minimum = 1, maximum = 100)]
    top_k: Option<usize>,
    /// Items scored below are dropped (default 3).
    #[param(maximum = 5)]
    min_score: Option<u8>,
    /// Types, comma-separated (any of them).
    types: Option<String>,
    /// Only items carrying one of these scopes, comma-separated (narrows, never widens).
    #[param(
        pattern = r"^(\s*(public|(user|agent|project|team|org|group):[^\s,\x00-\x1f\x7f-\x9f]+)\s*(,\s*(public|(user|agent|project|team|org|group):[^\s,\x00-\x1f\x7f-\x9f]+)\s*)*)?$"
    )]
    scopes: Option<String>,
    /// `key=value` tags, comma-separated (all of them).
    #[param(pattern = r"^(\s*[^=,\s][^=,]*=[^,]*(,\s*[^=,\s][^=,]*=[^,]*)*)?$")]
    tags: Option<String>,
}

/// Body of `POST /api/knowledge/search`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct SearchBody {
    /// The query text (`q` also accepted).
    #[serde(alias = "q")]
    #[schema(pattern = r"\S")]
    query: String,
    /// How many items (default 5, at most 100).
    #[serde(default, deserialize_with = "crate::count::optional")]
    #[schema(minimum = 1, maximum = 100)]
    top_k: Option<usize>,
    /// Items scored below are dropped (default 3).
    #[serde(default)]
    #[schema(maximum = 5)]
    min_score: Option<u8>,
    #[serde(default)]
    types: Vec<String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

/// `{"results": [item + quality_score, relevance, scope_priority], "count": n}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct KnowledgeResults {
    /// Knowledge items (seed 002 structure); search hits add `quality_score`, `relevance`
    /// and `scope_priority`.
    #[schema(value_type = Vec<Object>)]
    results: Vec<Value>,
    count: usize,
}

async fn run_search(
    caller: Caller,
    query: String,
    opts: KnowledgeQuery,
) -> Result<Json<Value>, ApiError> {
    blocking(move || {
        let hits = caller.engine.knowledge_search(&caller.ctx, &query, &opts)?;
        Ok(results(hits))
    })
    .await
}

fn query_options(
    top_k: Option<usize>,
    min_score: Option<u8>,
    types: Vec<String>,
    scopes: Vec<String>,
    tags: BTreeMap<String, String>,
) -> KnowledgeQuery {
    let d = KnowledgeQuery::default();
    KnowledgeQuery {
        types,
        tags,
        scopes,
        limit: top_k.unwrap_or(d.limit),
        min_score: min_score.unwrap_or(d.min_score),
    }
}

/// Search knowledge: relevance candidates within the caller's scopes, ranked by quality
/// (`score + helpful − 2·harmful`).
#[utoipa::path(get, path = "/api/knowledge/search", tag = "knowledge",
    params(SearchParams),
    responses((status = 200, body = KnowledgeResults), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn search_get(
    caller: Caller,
    ApiQuery(p): ApiQuery<SearchParams>,
) -> Result<Json<Value>, ApiError> {
    let opts = query_options(
        p.top_k,
        p.min_score,
        split(p.types),
        split(p.scopes),
        tag_pairs(p.tags)?,
    );
    run_search(caller, p.q, opts).await
}

/// Search knowledge with a JSON body (same as the GET form).
#[utoipa::path(post, path = "/api/knowledge/search", tag = "knowledge",
    request_body = SearchBody,
    responses((status = 200, body = KnowledgeResults), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn search_post(
    caller: Caller,
    ApiJson(b): ApiJson<SearchBody>,
) -> Result<Json<Value>, ApiError> {
    let opts = query_options(b.top_k, b.min_score, b.types, b.scopes, b.tags);
    run_search(caller, b.query, opts).await
}

// ----- save ---------------------------------------------------------------------------------

/// The knowledge types of seed 002 (documentation only: the engine checks them).
#[derive(ToSchema)]
#[allow(dead_code, non_camel_case_types, clippy::enum_variant_names)]
pub(crate) enum KnowledgeType {
    user_profile,
    strategy,
    tool,
    usecase,
    definition,
    plan,
    group_memory,
}

/// `source` of a new item (seed 002).
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub(crate) struct SourceBody {
    name: String,
    /// `paper`, `exp`, `skill`, `book`, …
    category: String,
    urls: Vec<String>,
    /// Default: the `X-Agent-ID` of the request.
    agent_id: String,
    submitted_by: String,
    message_id: String,
}

/// Body of `POST /api/knowledge` (seed 002). The owner is always the caller.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub(crate) struct SaveBody {
    task: String,
    /// The knowledge itself (not blank).
    #[schema(pattern = r"\S", required = true)]
    content: String,
    /// `user_profile`, `strategy`, `tool`, `usecase`, `definition`, `plan`, `group_memory`
    /// (at least one).
    #[schema(value_type = Vec<KnowledgeType>, min_items = 1, required = true)]
    types: Vec<String>,
    tags: BTreeMap<String, String>,
    /// Who may read it (default `user:<caller>`); only scopes the caller belongs to.
    scopes: Vec<String>,
    /// Accepted for seed 002 compatibility and ignored: the owner is the authenticated caller.
    owner: Option<String>,
    message_id: String,
    resource_ids: Vec<String>,
    source: SourceBody,
    /// 1–5 (default 3).
    #[schema(minimum = 1, maximum = 5)]
    score: Option<u8>,
    /// 0–1 (default 0.5).
    #[schema(minimum = 0, maximum = 1)]
    confidence: Option<f64>,
}

impl From<SaveBody> for NewKnowledge {
    fn from(b: SaveBody) -> NewKnowledge {
        let _ignored = b.owner;
        NewKnowledge {
            task: b.task,
            content: b.content,
            types: b.types,
            tags: b.tags,
            scopes: b.scopes,
            message_id: b.message_id,
            resource_ids: b.resource_ids,
            source: KnowledgeSource {
                name: b.source.name,
                category: b.source.category,
                urls: b.source.urls,
                agent_id: b.source.agent_id,
                submitted_by: b.source.submitted_by,
                timestamp: String::new(),
                message_id: b.source.message_id,
            },
            score: b.score,
            confidence: b.confidence,
        }
    }
}

/// A knowledge item (seed 002 structure).
#[derive(Debug, Serialize, ToSchema)]
#[schema(value_type = Object)]
pub(crate) struct Item(Value);

async fn run_save(caller: Caller, body: SaveBody) -> Result<(StatusCode, Json<Value>), ApiError> {
    blocking(move || {
        let item = caller.engine.knowledge_save(&caller.ctx, body.into())?;
        Ok((StatusCode::CREATED, Json(json!(item))))
    })
    .await
}

/// Save a new knowledge item owned by the caller.
#[utoipa::path(post, path = "/api/knowledge", tag = "knowledge",
    request_body = SaveBody,
    responses((status = 201, body = Item), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn save(
    caller: Caller,
    ApiJson(b): ApiJson<SaveBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    run_save(caller, b).await
}

/// Save a new knowledge item (alias of `POST /api/knowledge`).
#[utoipa::path(post, path = "/api/knowledge/save", tag = "knowledge",
    request_body = SaveBody,
    responses((status = 201, body = Item), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn save_alias(
    caller: Caller,
    ApiJson(b): ApiJson<SaveBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    run_save(caller, b).await
}

// ----- list ---------------------------------------------------------------------------------

/// Query of `GET /api/knowledge` (seed 002).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListParams {
    /// Default 10; larger values than 1000 are read as 1000.
    #[param(minimum = 0, maximum = 1_000_000_000)]
    limit: Option<usize>,
    #[param(minimum = 0, maximum = 1_000_000_000)]
    offset: Option<usize>,
    /// Types, comma-separated.
    types: Option<String>,
    /// Scopes, comma-separated.
    #[param(
        pattern = r"^(\s*(public|(user|agent|project|team|org|group):[^\s,\x00-\x1f\x7f-\x9f]+)\s*(,\s*(public|(user|agent|project|team|org|group):[^\s,\x00-\x1f\x7f-\x9f]+)\s*)*)?$"
    )]
    scopes: Option<String>,
    /// `key=value` tags, comma-separated.
    #[param(pattern = r"^(\s*[^=,\s][^=,]*=[^,]*(,\s*[^=,\s][^=,]*=[^,]*)*)?$")]
    tags: Option<String>,
    /// Only items of this owner.
    owner: Option<String>,
}

async fn run_list(caller: Caller, p: ListParams) -> Result<Json<Value>, ApiError> {
    let d = KnowledgeListOptions::default();
    let opts = KnowledgeListOptions {
        types: split(p.types),
        scopes: split(p.scopes),
        tags: tag_pairs(p.tags)?,
        owner: p.owner.filter(|o| !o.is_empty()),
        limit: p.limit.unwrap_or(d.limit),
        offset: p.offset.unwrap_or(0),
    };
    blocking(move || {
        let items = caller.engine.knowledge_list(&caller.ctx, &opts)?;
        Ok(results(items))
    })
    .await
}

/// Items the caller may see, newest first.
#[utoipa::path(get, path = "/api/knowledge", tag = "knowledge",
    params(ListParams),
    responses((status = 200, body = KnowledgeResults), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list(
    caller: Caller,
    ApiQuery(p): ApiQuery<ListParams>,
) -> Result<Json<Value>, ApiError> {
    run_list(caller, p).await
}

/// Items the caller may see (alias of `GET /api/knowledge`).
#[utoipa::path(get, path = "/api/knowledge/list", tag = "knowledge",
    params(ListParams),
    responses((status = 200, body = KnowledgeResults), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list_alias(
    caller: Caller,
    ApiQuery(p): ApiQuery<ListParams>,
) -> Result<Json<Value>, ApiError> {
    run_list(caller, p).await
}

// ----- get / delete / versions ----------------------------------------------------------------

/// One item — 404 when it does not exist or the caller may not see it.
#[utoipa::path(get, path = "/api/knowledge/{id}", tag = "knowledge",
    params(("id" = String, Path, description = "knowledge-{timestamp}-{random}")),
    responses((status = 200, body = Item), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn get_item(
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    blocking(move || Ok(Json(json!(caller.engine.knowledge_get(&caller.ctx, &id)?)))).await
}

/// Previous versions of an item the caller may see, oldest first.
#[utoipa::path(get, path = "/api/knowledge/{id}/versions", tag = "knowledge",
    params(("id" = String, Path, description = "knowledge-{timestamp}-{random}")),
    responses((status = 200, body = KnowledgeResults), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn versions(
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    blocking(move || Ok(results(caller.engine.knowledge_versions(&caller.ctx, &id)?))).await
}

/// `{"deleted": true, "id": …}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Deleted {
    deleted: bool,
    id: String,
}

/// Delete an item (owner, ADMIN or ROOT).
#[utoipa::path(delete, path = "/api/knowledge/{id}", tag = "knowledge",
    params(("id" = String, Path, description = "knowledge-{timestamp}-{random}")),
    responses((status = 200, body = Deleted), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn delete_item(
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Deleted>, ApiError> {
    blocking(move || {
        caller.engine.knowledge_delete(&caller.ctx, &id)?;
        Ok(Json(Deleted { deleted: true, id }))
    })
    .await
}

// ----- update -------------------------------------------------------------------------------

/// A helpful or harmful case (seed 002).
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub(crate) struct CaseBody {
    task: String,
    outcome: String,
    reason: String,
    timestamp: String,
    message_id: String,
}

impl From<CaseBody> for FeedbackCase {
    fn from(c: CaseBody) -> FeedbackCase {
        FeedbackCase {
            task: c.task,
            outcome: c.outcome,
            reason: c.reason,
            timestamp: c.timestamp,
            message_id: c.message_id,
        }
    }
}

/// Body of `PUT /api/knowledge/{id}` (seed 002 plus edits). Feedback cases are open to every
/// reader; everything else is owner-only.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub(crate) struct UpdateBody {
    add_helpful_case: Option<CaseBody>,
    add_harmful_case: Option<CaseBody>,
    /// 1–5.
    #[schema(minimum = 1, maximum = 5)]
    update_score: Option<u8>,
    /// 0–1.
    #[schema(minimum = 0, maximum = 1)]
    confidence: Option<f64>,
    task: Option<String>,
    /// New content (not blank).
    #[schema(pattern = r"\S")]
    content: Option<String>,
    #[schema(value_type = Option<Vec<KnowledgeType>>, min_items = 1)]
    types: Option<Vec<String>>,
    tags: Option<BTreeMap<String, String>>,
    scopes: Option<Vec<String>>,
    resource_ids: Option<Vec<String>>,
    /// Rewrite the content with the language model from this feedback (the previous version
    /// is kept); needs `knowhub serve --llm`.
    evolve_feedback: Option<String>,
}

impl From<UpdateBody> for KnowledgeUpdate {
    fn from(b: UpdateBody) -> KnowledgeUpdate {
        KnowledgeUpdate {
            add_helpful_case: b.add_helpful_case.map(Into::into),
            add_harmful_case: b.add_harmful_case.map(Into::into),
            update_score: b.update_score,
            confidence: b.confidence,
            task: b.task,
            content: b.content,
            types: b.types,
            tags: b.tags,
            scopes: b.scopes,
            resource_ids: b.resource_ids,
            evolve_feedback: b.evolve_feedback,
        }
    }
}

/// Body of `POST /api/knowledge/update`: an update with the item's id.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct UpdateAliasBody {
    knowledge_id: String,
    #[serde(flatten)]
    update: UpdateBody,
}

async fn run_update(
    state: ServerState,
    caller: Caller,
    id: String,
    update: KnowledgeUpdate,
) -> Result<Json<Value>, ApiError> {
    blocking(move || {
        let model = if update.evolve_feedback.is_some() {
            rewriter(&state)
        } else {
            None
        };
        let item = caller.engine.knowledge_update(
            &caller.ctx,
            &id,
            &update,
            model.as_ref().map(|m| m as &dyn Rewriter),
        )?;
        Ok(Json(json!(item)))
    })
    .await
}

/// Feedback on or changes to an item.
#[utoipa::path(put, path = "/api/knowledge/{id}", tag = "knowledge",
    params(("id" = String, Path, description = "knowledge-{timestamp}-{random}")),
    request_body = UpdateBody,
    responses((status = 200, body = Item), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn update(
    State(state): State<ServerState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(b): ApiJson<UpdateBody>,
) -> Result<Json<Value>, ApiError> {
    run_update(state, caller, id, b.into()).await
}

/// Feedback on or changes to an item (alias of `PUT /api/knowledge/{id}`).
#[utoipa::path(post, path = "/api/knowledge/update", tag = "knowledge",
    request_body = UpdateAliasBody,
    responses((status = 200, body = Item), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn update_alias(
    State(state): State<ServerState>,
    caller: Caller,
    ApiJson(b): ApiJson<UpdateAliasBody>,
) -> Result<Json<Value>, ApiError> {
    run_update(state, caller, b.knowledge_id, b.update.into()).await
}

/// One entry of `feedback_list`: seed 002's `{knowledge_id, is_helpful, case}` or a full
/// update `{id, update}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum BatchEntry {
    Feedback {
        knowledge_id: String,
        is_helpful: bool,
        #[serde(default)]
        case: CaseBody,
    },
    Full {
        id: String,
        update: UpdateBody,
    },
}

/// Body of `POST /api/knowledge/batch_update` (seed 002).
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct BatchBody {
    feedback_list: Vec<BatchEntry>,
}

/// `{"results": [{id, ok, error, item}], "count": n}`: one outcome per entry, in order.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct BatchResults {
    #[schema(value_type = Vec<Object>)]
    results: Vec<Value>,
    count: usize,
}

/// Apply each feedback entry on its own.
#[utoipa::path(post, path = "/api/knowledge/batch_update", tag = "knowledge",
    request_body = BatchBody,
    responses((status = 200, body = BatchResults), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn batch_update(
    State(state): State<ServerState>,
    caller: Caller,
    ApiJson(b): ApiJson<BatchBody>,
) -> Result<Json<Value>, ApiError> {
    let updates: Vec<(String, KnowledgeUpdate)> = b
        .feedback_list
        .into_iter()
        .map(|e| match e {
            BatchEntry::Feedback {
                knowledge_id,
                is_helpful,
                case,
            } => {
                let mut u = KnowledgeUpdate::default();
                if is_helpful {
                    u.add_helpful_case = Some(case.into());
                } else {
                    u.add_harmful_case = Some(case.into());
                }
                (knowledge_id, u)
            }
            BatchEntry::Full { id, update } => (id, update.into()),
        })
        .collect();
    blocking(move || {
        let model = if updates.iter().any(|(_, u)| u.evolve_feedback.is_some()) {
            rewriter(&state)
        } else {
            None
        };
        let out = caller.engine.knowledge_batch_update(
            &caller.ctx,
            &updates,
            model.as_ref().map(|m| m as &dyn Rewriter),
        )?;
        Ok(results(out))
    })
    .await
}

// ----- slim ---------------------------------------------------------------------------------

/// Body of `POST /api/knowledge/slim`.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub(crate) struct SlimBody {
    /// Similarity at or above which items are near-duplicates (default 0.92 with an
    /// embedder, 0.5 lexical without).
    #[schema(exclusive_minimum = 0, maximum = 1)]
    threshold: Option<f64>,
    /// Only show the plan.
    dry_run: bool,
    /// Accepted for seed 002 compatibility; the server's `--llm` model merges.
    model: Option<String>,
}

/// `{method, threshold, items_considered, groups: [{keep, merge, similarity, …}], applied}`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(value_type = Object)]
pub(crate) struct SlimPlanBody(Value);

/// Merge near-duplicate items the caller may change (`dry_run`: only the plan).
#[utoipa::path(post, path = "/api/knowledge/slim", tag = "knowledge",
    request_body = SlimBody,
    responses((status = 200, body = SlimPlanBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn slim(
    State(state): State<ServerState>,
    caller: Caller,
    ApiJson(b): ApiJson<SlimBody>,
) -> Result<Json<Value>, ApiError> {
    let _ignored = b.model;
    let opts = SlimOptions {
        threshold: b.threshold,
        dry_run: b.dry_run,
    };
    blocking(move || {
        let model = if opts.dry_run { None } else { rewriter(&state) };
        let plan = caller.engine.knowledge_slim(
            &caller.ctx,
            &opts,
            model.as_ref().map(|m| m as &dyn Rewriter),
        )?;
        Ok(Json(json!(plan)))
    })
    .await
}
