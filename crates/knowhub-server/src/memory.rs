//! Seed 003's memory API: `/api/v1/memory/*` — commit a conversation, search, read, node,
//! children. Memories are the caller's own (`ctx://user/{caller}/memories/...`); another
//! user's space is "not found". Thin: extraction, merging and ownership are the engine's.

use axum::Json;
use knowhub_engine::MemoryNode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiJson, ApiQuery, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(commit))
        .routes(routes!(search))
        .routes(routes!(read))
        .routes(routes!(get_node, delete_node))
        .routes(routes!(children))
}

/// One message of a conversation.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct MessageBody {
    /// `user`, `assistant`, `system`… — only the user's own words become memories.
    role: String,
    content: String,
}

/// Body of `POST /api/v1/memory/commit` (seed 003 §6).
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct CommitBody {
    messages: Vec<MessageBody>,
    /// Where the conversation came from (a session id), kept as provenance.
    #[serde(default)]
    session_id: Option<String>,
}

/// What a commit wrote.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CommitResult {
    /// `{uri, action: created|confirmed, kind, confidence}` per memory written.
    #[schema(value_type = Vec<Object>)]
    write_results: Vec<Value>,
    /// `{extracted, written, skipped}`.
    #[schema(value_type = Object)]
    stats: Value,
    /// `success`.
    status: String,
}

/// Remember what the user said about themself (preferences, habits, background, constraints).
#[utoipa::path(post, path = "/api/v1/memory/commit", tag = "memory",
    request_body = CommitBody,
    responses((status = 200, body = CommitResult), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn commit(
    caller: Caller,
    ApiJson(body): ApiJson<CommitBody>,
) -> Result<Json<CommitResult>, ApiError> {
    let messages: Vec<String> = body
        .messages
        .into_iter()
        .filter(|m| m.role.eq_ignore_ascii_case("user"))
        .map(|m| m.content)
        .collect();
    let origin = body.session_id.unwrap_or_else(|| "api".into());
    blocking(move || {
        let report = caller
            .engine
            .memory_commit(&caller.ctx, &messages, &origin)?;
        let written = report.created.len() + report.confirmed.len();
        let write_results = report
            .created
            .iter()
            .map(|n| (n, "created"))
            .chain(report.confirmed.iter().map(|n| (n, "confirmed")))
            .map(|(n, action)| {
                json!({"uri": n.uri, "action": action, "kind": n.kind, "confidence": n.confidence})
            })
            .collect();
        Ok(Json(CommitResult {
            write_results,
            stats: json!({
                "extracted": report.candidates,
                "written": written,
                "skipped": report.candidates.saturating_sub(written),
            }),
            status: "success".into(),
        }))
    })
    .await
}

/// Body of `POST /api/v1/memory/search`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct SearchBody {
    query: String,
    /// Memory kinds: preference, habit, background, constraint.
    #[serde(default)]
    categories: Vec<String>,
    #[serde(default)]
    top_k: Option<usize>,
}

/// `{blocks: [node + score], total}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SearchResult {
    #[schema(value_type = Vec<Object>)]
    blocks: Vec<Value>,
    total: usize,
}

/// The caller's memories most like the query.
#[utoipa::path(post, path = "/api/v1/memory/search", tag = "memory",
    request_body = SearchBody,
    responses((status = 200, body = SearchResult), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn search(
    caller: Caller,
    ApiJson(body): ApiJson<SearchBody>,
) -> Result<Json<SearchResult>, ApiError> {
    blocking(move || {
        let hits = caller.engine.memory_search(
            &caller.ctx,
            &body.query,
            &body.categories,
            body.top_k.unwrap_or(10),
        )?;
        let blocks: Vec<Value> = hits
            .into_iter()
            .map(|(n, score)| {
                let mut v = json!(n);
                v["score"] = json!(score);
                v
            })
            .collect();
        Ok(Json(SearchResult {
            total: blocks.len(),
            blocks,
        }))
    })
    .await
}

/// Query naming one node.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct UriParams {
    /// `ctx://user/{you}/memories/...` (or the item id).
    uri: String,
    /// `L0` (abstract), `L1` (overview) or `L2` (content, the default) — for `read`.
    level: Option<String>,
}

/// A node's text at one level.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Block {
    uri: String,
    level: String,
    content: String,
}

/// Read a memory at L0, L1 or L2.
#[utoipa::path(get, path = "/api/v1/memory/read", tag = "memory",
    params(UriParams),
    responses((status = 200, body = Block), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn read(
    caller: Caller,
    ApiQuery(p): ApiQuery<UriParams>,
) -> Result<Json<Block>, ApiError> {
    let level = p.level.unwrap_or_else(|| "L2".into()).to_uppercase();
    if !["L0", "L1", "L2"].contains(&level.as_str()) {
        return Err(ApiError::invalid(format!(
            "level is L0, L1 or L2, not {level:?}"
        )));
    }
    blocking(move || {
        let n = caller.engine.memory_node(&caller.ctx, &p.uri)?;
        let content = match level.as_str() {
            "L0" => n.abstract_text,
            "L1" => n.overview,
            _ => n.content,
        };
        Ok(Json(Block {
            uri: n.uri,
            level,
            content,
        }))
    })
    .await
}

/// A memory node (L0/L1/L2, kind, confidence, confirmations).
#[derive(Debug, Serialize, ToSchema)]
#[schema(value_type = Object)]
pub(crate) struct Node(Value);

/// One memory node.
#[utoipa::path(get, path = "/api/v1/memory/node", tag = "memory",
    params(UriParams),
    responses((status = 200, body = Node), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn get_node(
    caller: Caller,
    ApiQuery(p): ApiQuery<UriParams>,
) -> Result<Json<Value>, ApiError> {
    blocking(move || Ok(Json(json!(caller.engine.memory_node(&caller.ctx, &p.uri)?)))).await
}

/// Forget a memory (its owner only).
#[utoipa::path(delete, path = "/api/v1/memory/node", tag = "memory",
    params(UriParams),
    responses((status = 200, body = Block), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn delete_node(
    caller: Caller,
    ApiQuery(p): ApiQuery<UriParams>,
) -> Result<Json<Value>, ApiError> {
    blocking(move || {
        caller.engine.memory_delete(&caller.ctx, &p.uri)?;
        Ok(Json(json!({"deleted": true, "uri": p.uri})))
    })
    .await
}

/// Query of `children`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ChildrenParams {
    /// `ctx://user/{you}/memories`, or `.../memories/preferences` / `.../memories/entities`.
    uri: String,
}

/// Node summaries below a memory folder of the caller's space.
#[utoipa::path(get, path = "/api/v1/memory/children", tag = "memory",
    params(ChildrenParams),
    responses((status = 200, body = Vec<Object>), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn children(
    caller: Caller,
    ApiQuery(p): ApiQuery<ChildrenParams>,
) -> Result<Json<Vec<Value>>, ApiError> {
    blocking(move || {
        let own = format!("ctx://user/{}/memories", caller.ctx.user);
        let prefix = p.uri.trim_end_matches('/').to_owned();
        if !(prefix == own || prefix.starts_with(&format!("{own}/"))) {
            // Another user's space (or no memory folder at all): nothing to say about it.
            return Err(ApiError::not_found(format!("memory folder {}", p.uri)));
        }
        let nodes: Vec<MemoryNode> = caller.engine.memories(&caller.ctx)?;
        Ok(Json(
            nodes
                .into_iter()
                .filter(|n| n.uri.starts_with(&format!("{prefix}/")))
                .map(|n| {
                    json!({"uri": n.uri, "kind": n.kind, "abstract": n.abstract_text,
                           "confidence": n.confidence})
                })
                .collect(),
        ))
    })
    .await
}
