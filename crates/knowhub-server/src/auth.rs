//! Headers → [`RequestContext`], through [`Hub::authenticate`](knowhub_engine::Hub::authenticate)
//! on every request. Nothing here decides what the caller may do; the engine does.
//!
//! * The key: `X-API-Key: <key>` or `Authorization: Bearer <key>` (both: they must agree).
//!   Always required, also when the hub is in dev mode (an HTTP port is not a terminal).
//! * `X-Agent-ID`: the agent acting for the user (validated by the hub).
//! * `X-Account-ID` / `X-User-ID`: work in another account / act as another user — honoured
//!   for ROOT keys only; any other key sending them gets 403. An `{account_id}` in an admin
//!   path follows the same rule.

use std::sync::Arc;

use axum::extract::{FromRequest, FromRequestParts, RawPathParams, Request};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use knowhub_engine::{Credentials, Engine, RequestContext, Role};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, current_trace_id};
use crate::{ServerState, blocking};

/// The authenticated caller of a request: their context and their account's engine.
#[derive(Debug, Clone)]
pub struct Caller {
    pub ctx: RequestContext,
    pub engine: Arc<Engine>,
}

/// What the headers say, before the hub checked it.
#[derive(Debug, Clone)]
struct Presented {
    key: String,
    agent: Option<String>,
    account: Option<String>,
    user: Option<String>,
}

fn header(headers: &HeaderMap, name: &str) -> Result<Option<String>, ApiError> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.trim().to_owned()))
            .map_err(|_| ApiError::invalid(format!("the {name} header is not valid text"))),
    }
}

fn presented(headers: &HeaderMap) -> Result<Presented, ApiError> {
    let x_key = header(headers, "x-api-key")
        .map_err(|_| ApiError::unauthenticated("the API key is not valid"))?;
    let bearer = match header(headers, "authorization")
        .map_err(|_| ApiError::unauthenticated("the API key is not valid"))?
    {
        None => None,
        Some(v) => {
            let (scheme, token) = v.split_once(' ').unwrap_or((v.as_str(), ""));
            if !scheme.eq_ignore_ascii_case("bearer") {
                return Err(ApiError::unauthenticated(
                    "Authorization must use the Bearer scheme",
                ));
            }
            Some(token.trim().to_owned())
        }
    };
    let key = match (x_key, bearer) {
        (Some(a), Some(b)) if a != b => {
            return Err(ApiError::unauthenticated(
                "X-API-Key and Authorization carry different keys",
            ));
        }
        (Some(k), _) | (None, Some(k)) => k,
        (None, None) => {
            return Err(ApiError::unauthenticated(
                "missing API key: send X-API-Key or Authorization: Bearer",
            ));
        }
    };
    if key.is_empty() {
        return Err(ApiError::unauthenticated("the API key is empty"));
    }
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    Ok(Presented {
        key,
        agent: nonempty(header(headers, "x-agent-id")?),
        account: nonempty(header(headers, "x-account-id")?),
        user: nonempty(header(headers, "x-user-id")?),
    })
}

/// Authenticates `p` (blocking: the hub reads stores). `path_account`: an account named by
/// the path, which like `X-Account-ID` only a ROOT key may choose.
fn resolve(
    state: &ServerState,
    p: Presented,
    path_account: Option<String>,
) -> Result<Caller, ApiError> {
    let hub = state.hub();
    let mut ctx = hub.authenticate(&Credentials {
        api_key: Some(p.key.clone()),
        agent: p.agent.clone(),
        ..Default::default()
    })?;
    let account = p.account.clone().or_else(|| {
        path_account
            .clone()
            .filter(|a| a.as_str() != ctx.account.as_str())
    });
    if let Some(path) = &path_account
        && let Some(header) = &p.account
        && path != header
    {
        return Err(ApiError::invalid(
            "X-Account-ID and the account in the path differ",
        ));
    }
    if account.is_some() || p.user.is_some() {
        if ctx.role != Role::Root {
            return Err(ApiError::forbidden(
                "X-Account-ID, X-User-ID and other accounts are for ROOT keys only",
            ));
        }
        ctx = hub.authenticate(&Credentials {
            api_key: Some(p.key),
            account,
            act_as: p.user,
            agent: p.agent,
            session: None,
        })?;
    }
    if let Some(trace) = current_trace_id() {
        ctx.trace_id = trace;
    }
    let engine = hub.engine(&ctx)?;
    Ok(Caller { ctx, engine })
}

/// The caller working in the account named by the path's `{account_id}` (admin routes).
#[derive(Debug, Clone)]
pub struct AccountCaller(pub Caller);

impl FromRequestParts<ServerState> for AccountCaller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ServerState,
    ) -> Result<Self, Self::Rejection> {
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::invalid(e.body_text()))?;
        let account = params
            .iter()
            .find(|(k, _)| *k == "account_id")
            .map(|(_, v)| v.to_owned())
            .ok_or_else(|| ApiError::invalid("no account in the path"))?;
        let p = presented(&parts.headers)?;
        let state = state.clone();
        blocking(move || resolve(&state, p, Some(account)))
            .await
            .map(AccountCaller)
    }
}

impl FromRequestParts<ServerState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ServerState,
    ) -> Result<Self, Self::Rejection> {
        let p = presented(&parts.headers)?;
        let state = state.clone();
        blocking(move || resolve(&state, p, None)).await
    }
}

/// `axum::Json` with errors in the API's format (400 malformed, 422 wrong shape, 413, 415).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let axum::Json(v) = axum::Json::<T>::from_request(req, state).await?;
        Ok(ApiJson(v))
    }
}

/// `axum::extract::Query` with errors in the API's format (422).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Query(v) =
            axum::extract::Query::<T>::from_request_parts(parts, state).await?;
        Ok(ApiQuery(v))
    }
}

/// `axum::extract::Path` with errors in the API's format (422).
#[derive(Debug, Clone)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(v) =
            axum::extract::Path::<T>::from_request_parts(parts, state).await?;
        Ok(ApiPath(v))
    }
}
