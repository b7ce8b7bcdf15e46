//! The one error body of the API (seed 003 §9.2) and the one mapping from engine errors to
//! HTTP status codes and error codes (§9.1).
//!
//! ```json
//! {"error": {"code": "NOT_FOUND", "message": "not found: knowledge-…"}, "trace_id": "t…"}
//! ```
//!
//! Internal failures (storage, index, I/O, a panicked worker) are logged with the request's
//! trace id and answered with a generic message: no paths, no stack traces, no secrets.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use knowhub_agent::AgentError;
use knowhub_engine::EngineError;
use knowhub_engine::StoreError;
use serde::Serialize;
use utoipa::ToSchema;

tokio::task_local! {
    /// The trace id of the request being answered (set by the trace middleware).
    pub(crate) static TRACE_ID: String;
}

/// The trace id of the current request, when inside one.
pub(crate) fn current_trace_id() -> Option<String> {
    TRACE_ID.try_with(Clone::clone).ok()
}

/// Error codes (seed 003 §9.1, plus the HTTP-level ones it leaves open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// 400: the body is not JSON (or not well-formed).
    BadRequest,
    /// 401: missing, invalid, rotated or revoked API key.
    Unauthenticated,
    /// 403: the caller may see the thing but not do this (role, owner-only writes, ROOT-only
    /// headers).
    PermissionDenied,
    /// 404: no such thing, or one the caller may not see (indistinguishable).
    NotFound,
    /// 405: the path exists, the method does not.
    MethodNotAllowed,
    /// 409: it exists already.
    Conflict,
    /// 413: the body is larger than the limit.
    PayloadTooLarge,
    /// 415: the body is not `application/json`.
    UnsupportedMediaType,
    /// 422: well-formed but invalid parameters.
    ValidationError,
    /// 500: a failure on the server side (details only in the server log).
    InternalError,
    /// 503: the knowledge base is being updated by another process, or the language model is
    /// unavailable.
    Unavailable,
}

impl ErrorCode {
    /// The code as it appears in the body.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "BAD_REQUEST",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ErrorCode::ValidationError => "VALIDATION_ERROR",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::Unavailable => "UNAVAILABLE",
        }
    }

    /// The HTTP status of the code.
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::BadRequest => StatusCode::BAD_REQUEST,
            ErrorCode::Unauthenticated => StatusCode::UNAUTHORIZED,
            ErrorCode::PermissionDenied => StatusCode::FORBIDDEN,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::Conflict => StatusCode::CONFLICT,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::ValidationError => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// An error answered to the client.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ApiError {
    pub code: ErrorCode,
    /// Safe to show: never a path, a stack trace or a secret.
    pub message: String,
}

/// The error body (seed 003 §9.2).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
    /// The request's trace id (also in the `X-Trace-ID` response header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// `error` of [`ErrorBody`].
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// `UNAUTHENTICATED`, `PERMISSION_DENIED`, `NOT_FOUND`, `CONFLICT`, `VALIDATION_ERROR`,
    /// `BAD_REQUEST`, `PAYLOAD_TOO_LARGE`, `UNSUPPORTED_MEDIA_TYPE`, `METHOD_NOT_ALLOWED`,
    /// `UNAVAILABLE` or `INTERNAL_ERROR`.
    pub code: String,
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
        }
    }

    pub fn unauthenticated(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Unauthenticated, message)
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::PermissionDenied, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::NotFound, message)
    }

    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::ValidationError, message)
    }

    /// A server-side failure: `detail` goes to the log only.
    pub fn internal(detail: &dyn std::fmt::Display) -> ApiError {
        tracing::error!(
            trace_id = current_trace_id().as_deref().unwrap_or("-"),
            "request failed: {detail}"
        );
        ApiError::new(
            ErrorCode::InternalError,
            "internal error (the server log has the details under this trace id)",
        )
    }
}

/// The one mapping from engine errors to API errors.
impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        match e {
            EngineError::Unauthenticated(_) => ApiError::unauthenticated(e.to_string()),
            EngineError::Forbidden(_) => ApiError::forbidden(e.to_string()),
            EngineError::NotFound(_) => ApiError::not_found(e.to_string()),
            EngineError::InvalidInput(_) => ApiError::invalid(e.to_string()),
            EngineError::Conflict(_) => ApiError::new(ErrorCode::Conflict, e.to_string()),
            EngineError::Busy => ApiError::new(ErrorCode::Unavailable, e.to_string()),
            EngineError::Model(ref detail) => {
                tracing::warn!(
                    trace_id = current_trace_id().as_deref().unwrap_or("-"),
                    "model failure: {detail}"
                );
                ApiError::new(ErrorCode::Unavailable, "the language model failed")
            }
            // The team database restarts or a connection broke: the client should retry.
            EngineError::Store(StoreError::Unavailable(ref detail)) => {
                tracing::warn!(
                    trace_id = current_trace_id().as_deref().unwrap_or("-"),
                    "database unavailable: {detail}"
                );
                ApiError::new(
                    ErrorCode::Unavailable,
                    "the database is unavailable; retry in a moment",
                )
            }
            EngineError::Store(StoreError::Unsupported(_)) => {
                ApiError::new(ErrorCode::ValidationError, e.to_string())
            }
            EngineError::Store(_)
            | EngineError::Index(_)
            | EngineError::Io { .. }
            | EngineError::NoDataDir => ApiError::internal(&e),
        }
    }
}

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> ApiError {
        match e {
            AgentError::Engine(e) => e.into(),
            AgentError::Cancelled => ApiError::new(ErrorCode::Unavailable, e.to_string()),
            AgentError::Trace(_) => ApiError::internal(&e),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> ApiError {
        let code = match &r {
            JsonRejection::JsonDataError(_) => ErrorCode::ValidationError,
            JsonRejection::JsonSyntaxError(_) => ErrorCode::BadRequest,
            JsonRejection::MissingJsonContentType(_) => ErrorCode::UnsupportedMediaType,
            _ if r.status() == StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
            _ => ErrorCode::BadRequest,
        };
        ApiError::new(code, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> ApiError {
        ApiError::invalid(r.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> ApiError {
        ApiError::invalid(r.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.as_str().to_owned(),
                message: self.message,
            },
            trace_id: current_trace_id(),
        };
        let mut response = (self.code.status(), Json(body)).into_response();
        if self.code == ErrorCode::Unavailable {
            // Every 503 here is transient (a busy writer, a restarting database or model).
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        response
    }
}
