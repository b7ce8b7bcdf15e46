//! The KnowHub HTTP API (`knowhub serve`): seed 002's knowledge API, seed 003's admin API,
//! document search and the copilot, over the same engine and permission model as the CLI and
//! the desktop app.
//!
//! * **Every request is authenticated through [`Hub::authenticate`]** ([`auth`]): the headers
//!   become a [`knowhub_engine::RequestContext`]; handlers pass it to the engine, which decides
//!   what the caller may read or change. Handlers hold no permission logic.
//! * **One error format** ([`error`]): `{"error": {"code", "message"}, "trace_id"}` with seed
//!   003 §9's codes; no stack traces, paths or secrets.
//! * **Blocking work off the async threads**: engine and agent calls (SQLite, tantivy, candle)
//!   run on `spawn_blocking`.
//! * **The OpenAPI document is generated** from the handlers (utoipa) and served at
//!   [`OPENAPI_PATH`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use knowhub_engine::{EngineConfig, Hub};
//! let hub = Hub::open(EngineConfig::new("/tmp/kb"))?;
//! let state = knowhub_server::ServerState::new(hub, None);
//! knowhub_server::serve(knowhub_server::DEFAULT_BIND.parse()?, state).await?;
//! # Ok(()) }
//! ```

pub mod admin;
mod administration;
pub mod auth;
mod conversations;
pub mod copilot;
mod count;
mod crawls;
pub mod error;
pub mod groups;
pub mod knowledge;
mod library;
pub mod mcp;
pub mod memory;
pub mod resources;
mod uploads;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use knowhub_engine::Hub;
use knowhub_llm::Llm;
use serde::Serialize;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use auth::Caller;
pub use error::{ApiError, ErrorCode};

/// Where `knowhub serve` listens unless told otherwise: loopback only.
pub const DEFAULT_BIND: &str = "127.0.0.1:7878";
/// Where the OpenAPI 3 document is served.
pub const OPENAPI_PATH: &str = "/openapi.json";
/// The largest request body accepted (larger: 413).
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// Failures of the server itself (not of a request).
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the server stopped: {0}")]
    Serve(std::io::Error),
}

/// What every handler shares: the hub (accounts, sign-in, engines) and the answer model.
#[derive(Clone)]
pub struct ServerState {
    inner: Arc<Inner>,
    /// Size limits of `POST /api/v1/uploads`.
    uploads: uploads::UploadLimits,
}

struct Inner {
    hub: Arc<Hub>,
    llm: Option<Arc<dyn Llm>>,
    /// The databases' schemas, read once for every question of the process.
    schemas: Arc<knowhub_agent::SchemaCache>,
}

impl std::fmt::Debug for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerState")
            .field("hub", &self.inner.hub)
            .field("llm", &self.inner.llm.as_ref().map(|l| l.model_id()))
            .finish()
    }
}

impl ServerState {
    /// `hub`: a [`Hub`] of its own, or one shared with its opener (`Arc<Hub>`: the desktop app
    /// serves the API over the hub it uses itself; every request still authenticates with its
    /// own key). `llm`: the model that writes answers, evolves and merges knowledge (`None`:
    /// extractive answers; `evolve_feedback` refused).
    pub fn new(hub: impl Into<Arc<Hub>>, llm: Option<Arc<dyn Llm>>) -> ServerState {
        ServerState {
            inner: Arc::new(Inner {
                hub: hub.into(),
                llm,
                schemas: Arc::default(),
            }),
            uploads: uploads::UploadLimits::default(),
        }
    }

    /// Sets the largest file and the largest request `POST /api/v1/uploads` accepts, in bytes
    /// (default 100 MiB and 500 MiB); larger ones are refused with 413 and nothing is stored.
    pub fn with_upload_limits(mut self, per_file: u64, per_request: u64) -> ServerState {
        self.uploads = uploads::UploadLimits {
            per_file,
            per_request,
        };
        self
    }

    pub(crate) fn upload_limits(&self) -> uploads::UploadLimits {
        self.uploads
    }

    pub fn hub(&self) -> &Hub {
        &self.inner.hub
    }

    pub fn llm(&self) -> Option<Arc<dyn Llm>> {
        self.inner.llm.clone()
    }

    /// The copilot for `engine`'s account: the process's model and schema cache.
    pub(crate) fn agent(&self, engine: Arc<knowhub_engine::Engine>) -> knowhub_agent::Agent {
        knowhub_agent::Agent::new(engine, self.llm(), knowhub_agent::AgentOptions::default())
            .with_schemas(Arc::clone(&self.inner.schemas))
    }
}

/// Runs blocking engine work on the blocking pool; the request's trace id follows it.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    let trace = error::current_trace_id().unwrap_or_default();
    tokio::task::spawn_blocking(move || error::TRACE_ID.sync_scope(trace, f))
        .await
        .map_err(|e| ApiError::internal(&e))?
}

/// `GET /api/v1/health`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`, or `unavailable` when the team database does not answer (HTTP 503).
    status: String,
    version: String,
    /// Where records live: `sqlite` (this machine) or `postgres` (a team database).
    store: String,
    /// Team mode: `ok`, or why the database cannot be reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    database: Option<String>,
}

/// Liveness and, in team mode, database reachability (no authentication), for load balancers:
/// a replica that cannot reach the database answers 503 and is taken out of rotation.
#[utoipa::path(get, path = "/api/v1/health", tag = "meta",
    responses((status = 200, body = Health), (status = 503, body = Health)))]
async fn health(State(state): State<ServerState>) -> (StatusCode, Json<Health>) {
    let hub = Arc::clone(&state.inner.hub);
    let database = tokio::task::spawn_blocking(move || hub.database_health())
        .await
        .unwrap_or_else(|e| Some(Err(e.to_string())));
    let (code, status) = match &database {
        Some(Err(_)) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
        _ => (StatusCode::OK, "ok"),
    };
    let health = Health {
        status: status.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        store: if database.is_some() {
            "postgres"
        } else {
            "sqlite"
        }
        .into(),
        database: database.map(|r| match r {
            Ok(()) => "ok".to_owned(),
            Err(e) => e,
        }),
    };
    (code, Json(health))
}

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "KnowHub API",
        description = "Knowledge items (seed 002), admin (seed 003), document search and the \
                       copilot. Authenticate with `X-API-Key` or `Authorization: Bearer`. \
                       Errors: `{\"error\": {\"code\", \"message\"}, \"trace_id\"}`."
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "knowledge", description = "Knowledge items (seed 002)"),
        (name = "resource", description = "Resources with encrypted secure bodies (seed 002)"),
        (name = "memory", description = "What the copilot remembers about the caller (seed 003)"),
        (name = "groups", description = "Group spaces: members, roles, shared memories (seed 003 §13)"),
        (name = "copilot", description = "Document search and cited answers"),
        (name = "admin", description = "Accounts, users and keys (seed 003 §6.2)"),
        (name = "library", description = "Sources, documents, files, passages, status and audit"),
        (name = "administration", description = "Folders and ACLs, watched folders, web sources, ingestion, memberships, SQL data sources"),
        (name = "conversations", description = "Conversations, traces and feedback"),
        (name = "meta", description = "Health"),
    )
)]
struct ApiDoc;

/// The router and its OpenAPI document, from the same list of handlers.
pub fn router_and_openapi(state: ServerState) -> (axum::Router, utoipa::openapi::OpenApi) {
    let (router, api) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(health))
        .merge(knowledge::router())
        .merge(resources::router())
        .merge(memory::router())
        .merge(groups::router())
        .merge(copilot::router())
        .merge(uploads::router())
        .merge(admin::router())
        .merge(library::router())
        .merge(administration::router())
        .merge(crawls::router())
        .merge(conversations::router())
        .split_for_parts();
    let doc = Arc::new(api.clone());
    let router = router
        .route(
            OPENAPI_PATH,
            axum::routing::get(move || {
                let doc = Arc::clone(&doc);
                async move { Json(doc.as_ref().clone()) }
            }),
        )
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                ErrorCode::MethodNotAllowed,
                "method not allowed on this path",
            )
        })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            refuse_oversized,
        ))
        .layer(axum::middleware::from_fn(with_trace_id))
        .with_state(state);
    (router, api)
}

/// The application: every route of the API (tests drive it on a real socket).
pub fn app(state: ServerState) -> axum::Router {
    router_and_openapi(state).0
}

/// Gives every request a fresh trace id: in the context the engine audits with, in error
/// bodies and in the `X-Trace-ID` response header.
async fn with_trace_id(req: Request, next: Next) -> Response {
    let trace = knowhub_engine::new_trace_id();
    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
    let started = std::time::Instant::now();
    let mut response = error::TRACE_ID
        .scope(trace.clone(), async move { next.run(req).await })
        .await;
    // One line per request (no query string, no body: they may hold search text or secrets).
    tracing::info!(
        trace_id = %trace,
        method = %method,
        path = %path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
    if let Ok(v) = HeaderValue::from_str(&trace) {
        response.headers_mut().insert("x-trace-id", v);
    }
    response
}

/// Refuses a body announced larger than [`BODY_LIMIT`] before reading it (bodies without a
/// length are cut at the limit by `DefaultBodyLimit`). Uploads have their own, larger limit
/// (the route streams and counts its bodies itself).
async fn refuse_oversized(State(state): State<ServerState>, req: Request, next: Next) -> Response {
    let announced = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let limit = if uploads::is_upload(&req) {
        state.upload_limits().per_request
    } else {
        BODY_LIMIT as u64
    };
    if announced.is_some_and(|n| n > limit) {
        return ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("the request body is larger than {limit} bytes"),
        )
        .into_response();
    }
    next.run(req).await
}

/// Serves on `addr` until Ctrl-C / SIGTERM. A non-loopback address is logged as a warning:
/// the API then answers the network.
pub async fn serve(addr: SocketAddr, state: ServerState) -> Result<(), ServerError> {
    if !addr.ip().is_loopback() {
        tracing::warn!("the KnowHub API listens on {addr}, reachable beyond this machine");
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })?;
    serve_on(listener, state, shutdown_signal()).await
}

/// Serves on a bound listener until `shutdown` completes.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    state: ServerState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(ServerError::Serve)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
