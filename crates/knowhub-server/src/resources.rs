//! Seed 002's resource API: `/api/resource/*` — code, credentials, cookies… with a public
//! `body` and a `secure_body` encrypted at rest. Thin: visibility, owner-only writes, expiry
//! and who gets the decrypted secret are the engine's decisions.

use axum::Json;
use axum::http::StatusCode;
use knowhub_engine::{NewResource, ResourceListOptions, ResourceUpdate};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{ApiJson, ApiPath, ApiQuery, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::knowledge::{split, tag_pairs};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(list, save))
        .routes(routes!(get_one, update, delete_one))
}

/// A resource. `secure_body` is present only for its owner and administrators (and only on
/// `GET /api/resource/{id}`); `has_secure_body` says whether one is stored.
#[derive(Debug, Serialize, ToSchema)]
#[schema(value_type = Object)]
pub(crate) struct ResourceView(Value);

/// Body of `POST /api/resource` (seed 002 fields; `id` names it, e.g. `credentials/website_a`:
/// lower-case segments of letters, digits, `_-.` joined by `/`; 409 when taken).
#[derive(Debug, Deserialize, ToSchema)]
#[schema(value_type = Object)]
pub(crate) struct SaveBody(NewResource);

/// Body of `PUT /api/resource/{id}`: the fields to change (`clear_secure_body`,
/// `clear_expires_at` remove them).
#[derive(Debug, Deserialize, ToSchema)]
#[schema(value_type = Object)]
pub(crate) struct UpdateBody(ResourceUpdate);

/// Save a new resource owned by the caller.
#[utoipa::path(post, path = "/api/resource", tag = "resource",
    request_body = SaveBody,
    responses((status = 201, body = ResourceView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn save(
    caller: Caller,
    ApiJson(SaveBody(new)): ApiJson<SaveBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    blocking(move || {
        let saved = caller.engine.resource_save(&caller.ctx, new)?;
        Ok((StatusCode::CREATED, Json(json!(saved))))
    })
    .await
}

/// Query of `GET /api/resource`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListParams {
    /// Content types, comma-separated (code, credential, cookie, token, config, text, other).
    content_types: Option<String>,
    /// Only resources carrying one of these scopes, comma-separated.
    #[param(
        pattern = r"^(\s*(public|(user|agent|project|team|org|group):[^\s,\x00-\x1f\x7f-\x9f]+)\s*(,\s*(public|(user|agent|project|team|org|group):[^\s,\x00-\x1f\x7f-\x9f]+)\s*)*)?$"
    )]
    scopes: Option<String>,
    /// `key=value` tags, comma-separated (all of them).
    #[param(pattern = r"^(\s*[^=,\s][^=,]*=[^,]*(,\s*[^=,\s][^=,]*=[^,]*)*)?$")]
    tags: Option<String>,
    owner: Option<String>,
    /// Default 50; larger values are read as 1000.
    #[param(minimum = 0, maximum = 1_000_000_000)]
    limit: Option<usize>,
    #[param(minimum = 0, maximum = 1_000_000_000)]
    offset: Option<usize>,
}

/// `{"results": [resource…], "count": n}` — never with secure bodies.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ResourceResults {
    #[schema(value_type = Vec<Object>)]
    results: Vec<Value>,
    count: usize,
}

/// Resources the caller may see (not expired), newest first. Secure bodies are never listed.
#[utoipa::path(get, path = "/api/resource", tag = "resource",
    params(ListParams),
    responses((status = 200, body = ResourceResults), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list(
    caller: Caller,
    ApiQuery(p): ApiQuery<ListParams>,
) -> Result<Json<ResourceResults>, ApiError> {
    let options = ResourceListOptions {
        content_types: split(p.content_types),
        scopes: split(p.scopes),
        tags: tag_pairs(p.tags)?,
        owner: p.owner.filter(|o| !o.is_empty()),
        limit: p.limit,
        offset: p.offset.unwrap_or(0),
    };
    blocking(move || {
        let found = caller.engine.resource_list(&caller.ctx, &options)?;
        let results: Vec<Value> = found.into_iter().map(|r| json!(r)).collect();
        Ok(Json(ResourceResults {
            count: results.len(),
            results,
        }))
    })
    .await
}

/// One resource — 404 when it does not exist or the caller may not see it; refused when it
/// has expired.
#[utoipa::path(get, path = "/api/resource/{id}", tag = "resource",
    params(("id" = String, Path, description = "resource-{timestamp}-{random}, or the name given at save (`credentials/website_a`, its `/` percent-encoded as %2F)")),
    responses((status = 200, body = ResourceView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn get_one(
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    blocking(move || Ok(Json(json!(caller.engine.resource_get(&caller.ctx, &id)?)))).await
}

/// Change a resource (owner, ADMIN or ROOT).
#[utoipa::path(put, path = "/api/resource/{id}", tag = "resource",
    params(("id" = String, Path, description = "resource-{timestamp}-{random}, or the name given at save (`credentials/website_a`, its `/` percent-encoded as %2F)")),
    request_body = UpdateBody,
    responses((status = 200, body = ResourceView), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn update(
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(UpdateBody(change)): ApiJson<UpdateBody>,
) -> Result<Json<Value>, ApiError> {
    blocking(move || {
        Ok(Json(json!(caller.engine.resource_update(
            &caller.ctx,
            &id,
            change
        )?)))
    })
    .await
}

/// `{"deleted": true, "id": …}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Deleted {
    deleted: bool,
    id: String,
}

/// Delete a resource (owner, ADMIN or ROOT).
#[utoipa::path(delete, path = "/api/resource/{id}", tag = "resource",
    params(("id" = String, Path, description = "resource-{timestamp}-{random}, or the name given at save (`credentials/website_a`, its `/` percent-encoded as %2F)")),
    responses((status = 200, body = Deleted), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn delete_one(
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Deleted>, ApiError> {
    blocking(move || {
        caller.engine.resource_delete(&caller.ctx, &id)?;
        Ok(Json(Deleted { deleted: true, id }))
    })
    .await
}
