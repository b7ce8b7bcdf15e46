//! Seed 003 §13.8's group API: `/api/v1/groups…` — create a group space, list and read the
//! caller's groups, add/change/remove members, delete. Who may do what is the engine's
//! decision (`knowhub_authz::GroupRole`); a group the caller may not see is 404.

use axum::Json;
use axum::http::StatusCode;
use knowhub_engine::{GroupDeleted, GroupMemberSpec, GroupMemberView, GroupView, NewGroup};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiJson, ApiPath, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(list_groups, create_group))
        .routes(routes!(get_group, delete_group))
        .routes(routes!(add_member))
        .routes(routes!(remove_member))
}

/// A member in a request.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct MemberBody {
    #[schema(pattern = r"^[^\s,\x00-\x1f\x7f-\x9f]+$", max_length = 64)]
    user_id: String,
    #[serde(default)]
    agent_id: Option<String>,
    /// `owner`, `admin`, `member` (default) or `readonly`.
    #[serde(default)]
    #[schema(pattern = "^(owner|admin|member|readonly)$")]
    role: Option<String>,
}

impl From<MemberBody> for GroupMemberSpec {
    fn from(m: MemberBody) -> Self {
        GroupMemberSpec {
            user_id: m.user_id,
            agent_id: m.agent_id,
            role: m.role,
        }
    }
}

/// Body of `POST /api/v1/groups`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct CreateBody {
    /// Non-empty, at most 256 bytes, no whitespace, commas or control characters.
    #[schema(pattern = r"^[^\s,\x00-\x1f\x7f-\x9f]+$", max_length = 64)]
    group_id: String,
    #[serde(default)]
    name: String,
    /// `channel` (default), `chat` or `project`.
    #[serde(default, rename = "type")]
    #[schema(pattern = "^(channel|chat|project)$")]
    kind: Option<String>,
    /// First members; the caller becomes owner.
    #[serde(default)]
    members: Vec<MemberBody>,
}

/// A group with its members (`group_space` names its `ctx://group/{space}/…` URIs).
#[derive(Debug, Serialize, ToSchema)]
#[schema(value_type = Object)]
pub(crate) struct GroupBody(Value);

fn group_body(g: GroupView) -> Json<Value> {
    Json(json!(g))
}

/// Create a group space.
#[utoipa::path(post, path = "/api/v1/groups", tag = "groups",
    request_body = CreateBody,
    responses((status = 201, body = GroupBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn create_group(
    caller: Caller,
    ApiJson(body): ApiJson<CreateBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let new = NewGroup {
        id: body.group_id,
        name: body.name,
        kind: body.kind,
        members: body.members.into_iter().map(Into::into).collect(),
    };
    blocking(move || {
        let g = caller.engine.group_create(&caller.ctx, &new)?;
        Ok((StatusCode::CREATED, group_body(g)))
    })
    .await
}

/// `{"groups": [...]}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct GroupList {
    #[schema(value_type = Vec<Object>)]
    groups: Vec<Value>,
}

/// The caller's groups (administrators: every group of the account).
#[utoipa::path(get, path = "/api/v1/groups", tag = "groups",
    responses((status = 200, body = GroupList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list_groups(caller: Caller) -> Result<Json<GroupList>, ApiError> {
    blocking(move || {
        let groups = caller.engine.groups(&caller.ctx)?;
        Ok(Json(GroupList {
            groups: groups.into_iter().map(|g| json!(g)).collect(),
        }))
    })
    .await
}

/// One group with its members.
#[utoipa::path(get, path = "/api/v1/groups/{group_id}", tag = "groups",
    params(("group_id" = String, Path)),
    responses((status = 200, body = GroupBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn get_group(
    caller: Caller,
    ApiPath(group_id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    blocking(move || Ok(group_body(caller.engine.group(&caller.ctx, &group_id)?))).await
}

/// What a delete removed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DeletedBody {
    group_id: String,
    memories_deleted: usize,
}

impl From<GroupDeleted> for DeletedBody {
    fn from(d: GroupDeleted) -> Self {
        DeletedBody {
            group_id: d.group_id,
            memories_deleted: d.memories_deleted,
        }
    }
}

/// Delete a group and its shared memories (its owners, account administrators).
#[utoipa::path(delete, path = "/api/v1/groups/{group_id}", tag = "groups",
    params(("group_id" = String, Path)),
    responses((status = 200, body = DeletedBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn delete_group(
    caller: Caller,
    ApiPath(group_id): ApiPath<String>,
) -> Result<Json<DeletedBody>, ApiError> {
    blocking(move || {
        Ok(Json(
            caller.engine.group_delete(&caller.ctx, &group_id)?.into(),
        ))
    })
    .await
}

/// `{"membership": {...}}` (seed 003 `GroupMembership`).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MembershipBody {
    #[schema(value_type = Object)]
    membership: Value,
}

fn membership(m: GroupMemberView) -> Json<MembershipBody> {
    Json(MembershipBody {
        membership: json!(m),
    })
}

/// Add a member or change their role (group owners/admins, account administrators).
#[utoipa::path(post, path = "/api/v1/groups/{group_id}/members", tag = "groups",
    params(("group_id" = String, Path)),
    request_body = MemberBody,
    responses((status = 200, body = MembershipBody), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn add_member(
    caller: Caller,
    ApiPath(group_id): ApiPath<String>,
    ApiJson(body): ApiJson<MemberBody>,
) -> Result<Json<MembershipBody>, ApiError> {
    let spec: GroupMemberSpec = body.into();
    blocking(move || {
        Ok(membership(caller.engine.group_set_member(
            &caller.ctx,
            &group_id,
            &spec,
        )?))
    })
    .await
}

/// Remove a member (or leave: any member may remove themself, except the last owner).
#[utoipa::path(delete, path = "/api/v1/groups/{group_id}/members/{user_id}", tag = "groups",
    params(("group_id" = String, Path), ("user_id" = String, Path)),
    responses((status = 200, body = Object), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn remove_member(
    caller: Caller,
    ApiPath((group_id, user_id)): ApiPath<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    blocking(move || {
        caller
            .engine
            .group_remove_member(&caller.ctx, &group_id, &user_id)?;
        Ok(Json(
            json!({"removed": true, "group_id": group_id, "user_id": user_id}),
        ))
    })
    .await
}
