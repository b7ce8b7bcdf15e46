//! Seed 003 §6.2's admin API: `/api/v1/admin/accounts…`. Who may do what is the hub's and the
//! engine's decision (accounts: ROOT; users: ROOT or the account's ADMINs; a user may rotate or
//! revoke their own key). An `{account_id}` other than the caller's own is honoured for ROOT
//! keys only, like `X-Account-ID`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use knowhub_engine::{Role, UserId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{AccountCaller, ApiJson, ApiPath, Caller};
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::{ServerState, blocking};

pub(crate) fn router() -> OpenApiRouter<ServerState> {
    OpenApiRouter::new()
        .routes(routes!(list_accounts, create_account))
        .routes(routes!(delete_account))
        .routes(routes!(list_users, create_user))
        .routes(routes!(delete_user))
        .routes(routes!(set_role))
        .routes(routes!(rotate_key, revoke_keys))
}

pub(crate) fn user_id(raw: &str) -> Result<UserId, ApiError> {
    UserId::new(raw).map_err(|e| ApiError::invalid(e.to_string()))
}

fn role(raw: &str) -> Result<Role, ApiError> {
    raw.parse::<Role>()
        .map_err(|e| ApiError::invalid(e.to_string()))
}

// ----- accounts -----------------------------------------------------------------------------

/// One account.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AccountBody {
    account_id: String,
    user_count: usize,
    document_count: usize,
}

/// `{"accounts": [...]}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AccountList {
    accounts: Vec<AccountBody>,
}

/// Accounts with their user and document counts (ROOT).
#[utoipa::path(get, path = "/api/v1/admin/accounts", tag = "admin",
    responses((status = 200, body = AccountList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list_accounts(
    State(state): State<ServerState>,
    caller: Caller,
) -> Result<Json<AccountList>, ApiError> {
    blocking(move || {
        let accounts = state
            .hub()
            .accounts(&caller.ctx)?
            .into_iter()
            .map(|a| AccountBody {
                account_id: a.id,
                user_count: a.users,
                document_count: a.documents,
            })
            .collect();
        Ok(Json(AccountList { accounts }))
    })
    .await
}

/// Body of `POST /api/v1/admin/accounts`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct NewAccount {
    account_id: String,
    admin_user_id: String,
}

/// The new account and its administrator's key (shown once).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CreatedAccount {
    account_id: String,
    admin_user_id: String,
    user_key: String,
}

/// Create an account with its first administrator (ROOT).
#[utoipa::path(post, path = "/api/v1/admin/accounts", tag = "admin",
    request_body = NewAccount,
    responses((status = 201, body = CreatedAccount), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn create_account(
    State(state): State<ServerState>,
    caller: Caller,
    ApiJson(b): ApiJson<NewAccount>,
) -> Result<(StatusCode, Json<CreatedAccount>), ApiError> {
    blocking(move || {
        let key = state
            .hub()
            .create_account(&caller.ctx, &b.account_id, &b.admin_user_id)?;
        Ok((
            StatusCode::CREATED,
            Json(CreatedAccount {
                account_id: b.account_id,
                admin_user_id: b.admin_user_id,
                user_key: key.secret().to_owned(),
            }),
        ))
    })
    .await
}

/// `{"deleted": true, "account_id": …}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DeletedAccount {
    deleted: bool,
    account_id: String,
}

/// Delete an account and everything in it (ROOT).
#[utoipa::path(delete, path = "/api/v1/admin/accounts/{account_id}", tag = "admin",
    params(("account_id" = String, Path)),
    responses((status = 200, body = DeletedAccount), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn delete_account(
    State(state): State<ServerState>,
    caller: Caller,
    ApiPath(account_id): ApiPath<String>,
) -> Result<Json<DeletedAccount>, ApiError> {
    blocking(move || {
        state.hub().delete_account(&caller.ctx, &account_id)?;
        Ok(Json(DeletedAccount {
            deleted: true,
            account_id,
        }))
    })
    .await
}

// ----- users --------------------------------------------------------------------------------

/// One user.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UserBody {
    user_id: String,
    display_name: String,
    /// `ROOT`, `ADMIN` or `USER`.
    role: String,
    /// Time since the Unix epoch, in milliseconds.
    created_at: i64,
}

/// `{"users": [...]}`: administrators see every active user; a user only themself.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct UserList {
    users: Vec<UserBody>,
}

/// Users of an account.
#[utoipa::path(get, path = "/api/v1/admin/accounts/{account_id}/users", tag = "admin",
    params(("account_id" = String, Path)),
    responses((status = 200, body = UserList), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn list_users(
    AccountCaller(caller): AccountCaller,
) -> Result<Json<UserList>, ApiError> {
    blocking(move || {
        let users = caller
            .engine
            .users(&caller.ctx)?
            .into_iter()
            .filter(|u| u.removed_at.is_none())
            .map(|u| UserBody {
                user_id: u.id.to_string(),
                display_name: u.display_name,
                role: u.role.to_string(),
                created_at: u.created_at,
            })
            .collect();
        Ok(Json(UserList { users }))
    })
    .await
}

/// Body of `POST …/users`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct NewUser {
    user_id: String,
    /// `admin` or `user` (`root`: ROOT only).
    #[serde(default = "default_role")]
    role: String,
    /// Default: the user id.
    #[serde(default)]
    display_name: Option<String>,
}

fn default_role() -> String {
    "user".into()
}

/// The new user and their key (shown once).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CreatedUser {
    account_id: String,
    user_id: String,
    role: String,
    user_key: String,
}

/// Create a user with a key (ROOT, or the account's ADMINs).
#[utoipa::path(post, path = "/api/v1/admin/accounts/{account_id}/users", tag = "admin",
    params(("account_id" = String, Path)),
    request_body = NewUser,
    responses((status = 201, body = CreatedUser), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn create_user(
    AccountCaller(caller): AccountCaller,
    ApiJson(b): ApiJson<NewUser>,
) -> Result<(StatusCode, Json<CreatedUser>), ApiError> {
    let id = user_id(&b.user_id)?;
    let role = role(&b.role)?;
    blocking(move || {
        let name = b.display_name.unwrap_or_else(|| b.user_id.clone());
        if !caller.engine.add_user(&caller.ctx, &id, &name, role)? {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("user {id} exists (or existed: ids are never reused)"),
            ));
        }
        let key = caller.engine.rotate_api_key(&caller.ctx, &id)?;
        Ok((
            StatusCode::CREATED,
            Json(CreatedUser {
                account_id: caller.ctx.account.to_string(),
                user_id: id.to_string(),
                role: role.to_string(),
                user_key: key.secret().to_owned(),
            }),
        ))
    })
    .await
}

/// `{"deleted": true}`.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DeletedUser {
    deleted: bool,
    user_id: String,
}

/// Remove a user; their keys stop working at once (ROOT, or the account's ADMINs).
#[utoipa::path(delete, path = "/api/v1/admin/accounts/{account_id}/users/{user_id}", tag = "admin",
    params(("account_id" = String, Path), ("user_id" = String, Path)),
    responses((status = 200, body = DeletedUser), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn delete_user(
    AccountCaller(caller): AccountCaller,
    ApiPath((_account, user)): ApiPath<(String, String)>,
) -> Result<Json<DeletedUser>, ApiError> {
    let id = user_id(&user)?;
    blocking(move || {
        if !caller.engine.remove_user(&caller.ctx, &id)? {
            return Err(ApiError::not_found(format!("no active user {id}")));
        }
        Ok(Json(DeletedUser {
            deleted: true,
            user_id: id.to_string(),
        }))
    })
    .await
}

/// Body of `PUT …/role`.
#[derive(Debug, Deserialize, ToSchema)]
pub(crate) struct RoleBody {
    /// `admin` or `user` (`root`: ROOT only).
    role: String,
}

/// The user's new role.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RoleChanged {
    account_id: String,
    user_id: String,
    role: String,
}

/// Change a user's role (administrators; only ROOT grants ROOT).
#[utoipa::path(put, path = "/api/v1/admin/accounts/{account_id}/users/{user_id}/role", tag = "admin",
    params(("account_id" = String, Path), ("user_id" = String, Path)),
    request_body = RoleBody,
    responses((status = 200, body = RoleChanged), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn set_role(
    AccountCaller(caller): AccountCaller,
    ApiPath((_account, user)): ApiPath<(String, String)>,
    ApiJson(b): ApiJson<RoleBody>,
) -> Result<Json<RoleChanged>, ApiError> {
    let id = user_id(&user)?;
    let role = role(&b.role)?;
    blocking(move || {
        if !caller.engine.set_role(&caller.ctx, &id, role)? {
            return Err(ApiError::not_found(format!("no active user {id}")));
        }
        Ok(Json(RoleChanged {
            account_id: caller.ctx.account.to_string(),
            user_id: id.to_string(),
            role: role.to_string(),
        }))
    })
    .await
}

/// A new key (the old ones stop working at once).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct NewKey {
    user_id: String,
    user_key: String,
}

/// Replace a user's keys with a new one, returned once (the user themself, or
/// administrators).
#[utoipa::path(post, path = "/api/v1/admin/accounts/{account_id}/users/{user_id}/key", tag = "admin",
    params(("account_id" = String, Path), ("user_id" = String, Path)),
    responses((status = 200, body = NewKey), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn rotate_key(
    AccountCaller(caller): AccountCaller,
    ApiPath((_account, user)): ApiPath<(String, String)>,
) -> Result<Json<NewKey>, ApiError> {
    let id = user_id(&user)?;
    blocking(move || {
        let key = caller.engine.rotate_api_key(&caller.ctx, &id)?;
        Ok(Json(NewKey {
            user_id: id.to_string(),
            user_key: key.secret().to_owned(),
        }))
    })
    .await
}

/// How many keys were revoked.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Revoked {
    user_id: String,
    revoked: usize,
}

/// Revoke every key of a user; the user stays (the user themself, or administrators).
#[utoipa::path(delete, path = "/api/v1/admin/accounts/{account_id}/users/{user_id}/key", tag = "admin",
    params(("account_id" = String, Path), ("user_id" = String, Path)),
    responses((status = 200, body = Revoked), (status = "4XX", body = ErrorBody)),
    security(("api_key" = []), ("bearer" = [])))]
pub(crate) async fn revoke_keys(
    AccountCaller(caller): AccountCaller,
    ApiPath((_account, user)): ApiPath<(String, String)>,
) -> Result<Json<Revoked>, ApiError> {
    let id = user_id(&user)?;
    blocking(move || {
        let revoked = caller.engine.revoke_api_keys(&caller.ctx, &id)?;
        Ok(Json(Revoked {
            user_id: id.to_string(),
            revoked,
        }))
    })
    .await
}
