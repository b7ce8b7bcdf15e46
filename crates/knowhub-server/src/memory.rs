//! Seed 003's memory API: `/api/v1/memory/*` — commit a conversation, search, read, node,
//! children. Memories are the caller's own (`ctx://user/{caller}/memories/...`) or shared in
//! a group space the caller belongs to (`ctx://group/{space}/memories/...`, seed 003 §13);
//! another user's space, or a group the caller is not in, is "not found". Thin: extraction,
//! routing, merging and ownership are the engine's.

use axum::Json;
use axum::extract::State;
use knowhub_agent::memory::LlmMemoryModel;
use knowhub_engine::{
    CASE_KIND, CommitMessage, CommitWith, GroupCommitOptions, MemoryModel, MemorySpaces,
};
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
    /// `user` or `assistant` — only users' words become memories (the assistant's tell the
    /// language model what task was done); other roles (system, tool) are ignored.
    role: String,
    content: String,
    /// In a group conversation, which user said it (default: the caller). Personal facts
    /// are kept only for the caller; shared conclusions go to the group whoever said them.
    #[serde(default)]
    user_id: Option<String>,
}

/// Seed 003 §13.5.1's `GroupCommitOptions` (every field optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub(crate) struct GroupOptionsBody {
    /// Categories kept private (default `profile`, `preference`, `personal_entity`).
    #[serde(default)]
    private_categories: Option<Vec<String>>,
    /// Categories written to the group (default `group_knowledge`, `shared_entity`,
    /// `decision`, `consensus`).
    #[serde(default)]
    group_categories: Option<Vec<String>>,
    /// `private` (default), `group` or `ask`.
    #[serde(default)]
    default_scope: Option<String>,
}

/// Body of `POST /api/v1/memory/commit` (seed 003 §6, §13.8).
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct CommitBody {
    messages: Vec<MessageBody>,
    /// Where the conversation came from (a session id), kept as provenance.
    #[serde(default)]
    session_id: Option<String>,
    /// Commit a group conversation: shared conclusions go to this group's space.
    #[serde(default)]
    #[schema(pattern = r"^[^\s,\x00-\x1f\x7f-\x9f]+$", max_length = 64)]
    group_id: Option<String>,
    #[serde(default)]
    group_options: Option<GroupOptionsBody>,
    /// The project the conversation was about: its memories apply there only (the caller
    /// must belong to it).
    #[serde(default)]
    #[schema(pattern = r"^[^\s,\x00-\x1f\x7f-\x9f]+$", max_length = 64)]
    project_id: Option<String>,
    /// Let the server's language model propose memories beyond explicit statements and
    /// merge restatements (default true; without a model only the rules run).
    #[serde(default)]
    use_model: Option<bool>,
}

/// What a commit wrote.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CommitResult {
    /// `{uri, action: created|confirmed|merged, kind, confidence, target_space:
    /// private|group|cases}` per memory written, then `{action: skipped, kind, statement,
    /// reason}` per candidate not written (`ask`, `other_speaker`, `no_group`, and for the
    /// model's proposals `ungrounded`, `unknown_kind`).
    #[schema(value_type = Vec<Object>)]
    write_results: Vec<Value>,
    /// `{extracted, written, skipped, model_proposals, model_error}`.
    #[schema(value_type = Object)]
    stats: Value,
    /// `success`.
    status: String,
}

/// Remember what the user said about themself (preferences, habits, background, constraints)
/// and, with a `group_id`, the group's shared conclusions (decisions, consensus, knowledge).
#[utoipa::path(post, path = "/api/v1/memory/commit", tag = "memory",
    request_body = CommitBody,
    responses((status = 200, body = CommitResult), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn commit(
    State(state): State<ServerState>,
    caller: Caller,
    ApiJson(body): ApiJson<CommitBody>,
) -> Result<Json<CommitResult>, ApiError> {
    let messages: Vec<CommitMessage> = body
        .messages
        .into_iter()
        // Only people's and the assistant's words: system prompts and tool output are
        // neither the user's statements nor what the user was told.
        .filter_map(|m| {
            let role = if m.role.eq_ignore_ascii_case("user") {
                "user"
            } else if m.role.eq_ignore_ascii_case("assistant") {
                "assistant"
            } else {
                return None;
            };
            Some(CommitMessage {
                role: Some(role.into()),
                content: m.content,
                user_id: m.user_id,
            })
        })
        .collect();
    let project = body.project_id.filter(|p| !p.is_empty());
    let model = match body.use_model {
        Some(false) => None,
        _ => state.llm().map(LlmMemoryModel::new),
    };
    let origin = body.session_id.unwrap_or_else(|| "api".into());
    let group = match (body.group_id, body.group_options) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err(ApiError::invalid("group_options need a group_id"));
        }
        (Some(id), options) => {
            let options = options.unwrap_or_default();
            let mut g = GroupCommitOptions::new(&id);
            if let Some(p) = options.private_categories {
                g.private_categories = p;
            }
            if let Some(c) = options.group_categories {
                g.group_categories = c;
            }
            if let Some(d) = options.default_scope {
                g.default_scope = d;
            }
            Some(g)
        }
    };
    blocking(move || {
        let with = CommitWith {
            group: group.as_ref(),
            project: project.as_deref(),
            model: model.as_ref().map(|m| m as &dyn MemoryModel),
        };
        let report = caller
            .engine
            .memory_commit_with(&caller.ctx, &messages, &origin, &with)?;
        let written = report.created.len() + report.confirmed.len();
        let write_results = report
            .created
            .iter()
            .map(|n| (n, "created"))
            .chain(report.confirmed.iter().map(|n| (n, "confirmed")))
            .map(|(n, action)| {
                let action = if report.merged.contains(&n.id) {
                    "merged"
                } else {
                    action
                };
                let space = if n.group_id.is_some() {
                    "group"
                } else if n.kind == CASE_KIND {
                    "cases"
                } else {
                    "private"
                };
                json!({"uri": n.uri, "action": action, "kind": n.kind, "confidence": n.confidence,
                       "target_space": space, "project": n.project})
            })
            .chain(report.skipped.iter().map(|c| {
                json!({"action": "skipped", "kind": c.kind, "statement": c.statement,
                       "reason": c.reason})
            }))
            .collect();
        Ok(Json(CommitResult {
            write_results,
            stats: json!({
                "extracted": report.candidates,
                "written": written,
                "skipped": report.candidates.saturating_sub(written),
                "model_proposals": report.model_proposals,
                "model_error": report.model_error,
            }),
            status: "success".into(),
        }))
    })
    .await
}

/// Body of `POST /api/v1/memory/search`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct SearchBody {
    #[schema(pattern = r"\S")]
    query: String,
    /// Memory kinds: preference, habit, background, constraint, decision, consensus,
    /// group_knowledge.
    #[serde(default)]
    categories: Vec<String>,
    /// How many memories (default 10, at most 100).
    #[serde(default, deserialize_with = "crate::count::optional")]
    #[schema(minimum = 1, maximum = 100)]
    top_k: Option<usize>,
    /// Also search this group's shared memories (seed 003 §13.8).
    #[serde(default)]
    #[schema(pattern = r"^[^\s,\x00-\x1f\x7f-\x9f]+$", max_length = 64)]
    group_id: Option<String>,
    /// With a `group_id`: include the caller's private memories (default true).
    #[serde(default)]
    include_private: Option<bool>,
}

/// `{blocks: [node + score], total}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SearchResult {
    #[schema(value_type = Vec<Object>)]
    blocks: Vec<Value>,
    total: usize,
}

/// The caller's memories (and a group's, with `group_id`) most like the query.
#[utoipa::path(post, path = "/api/v1/memory/search", tag = "memory",
    request_body = SearchBody,
    responses((status = 200, body = SearchResult), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn search(
    caller: Caller,
    ApiJson(body): ApiJson<SearchBody>,
) -> Result<Json<SearchResult>, ApiError> {
    blocking(move || {
        let spaces = MemorySpaces {
            group_id: body.group_id,
            exclude_private: !body.include_private.unwrap_or(true),
        };
        let hits = caller.engine.memory_search_in(
            &caller.ctx,
            &body.query,
            &body.categories,
            body.top_k.unwrap_or(10),
            &spaces,
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
    /// `ctx://user/{you}/memories/...`, `ctx://group/{space}/memories/...` (or the item id).
    uri: String,
    /// `L0` (abstract), `L1` (overview) or `L2` (content, the default) — for `read`.
    #[param(pattern = "^[Ll][012]$")]
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

/// Forget a memory (its owner; for a group memory also the group's owners/admins).
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
    /// `ctx://user/{you}/memories` (or `.../preferences`, `.../entities`), or
    /// `ctx://group/{space}/memories` (or `.../{kind}`) of a group you belong to.
    uri: String,
}

/// The memory nodes below a memory folder of the caller's space (or a group's they may see).
#[utoipa::path(get, path = "/api/v1/memory/children", tag = "memory",
    params(ChildrenParams),
    responses((status = 200, body = Vec<Object>), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn children(
    caller: Caller,
    ApiQuery(p): ApiQuery<ChildrenParams>,
) -> Result<Json<Vec<Value>>, ApiError> {
    blocking(move || {
        let nodes = caller.engine.memory_children(&caller.ctx, &p.uri)?;
        Ok(Json(
            nodes
                .into_iter()
                .map(|n| {
                    // The node as `GET /api/v1/memory/node` has it, plus the `abstract` this
                    // listing always had.
                    let mut v = json!(n);
                    v["abstract"] = json!(n.abstract_text);
                    v
                })
                .collect(),
        ))
    })
    .await
}
