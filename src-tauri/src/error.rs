//! The one error type commands return: a kind the UI translates plus a message a person can
//! read. Never a stack trace.

use knowhub_agent::AgentError;
use knowhub_engine::EngineError;
use serde::Serialize;

/// What went wrong, for the window.
#[derive(Debug, Clone, Serialize, specta::Type, thiserror::Error)]
#[error("{message}")]
pub struct CommandError {
    /// Stable kind the UI maps to a translated headline: `not_found`, `forbidden`,
    /// `unauthenticated`, `invalid_input`, `busy`, `cancelled`, `model`, `io`, `internal`.
    pub kind: String,
    /// The engine's explanation (English; names the file or setting involved).
    pub message: String,
}

impl CommandError {
    pub(crate) fn new(kind: &str, message: impl Into<String>) -> CommandError {
        CommandError {
            kind: kind.to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> CommandError {
        CommandError::new("invalid_input", message)
    }
}

impl From<EngineError> for CommandError {
    fn from(e: EngineError) -> Self {
        let kind = match &e {
            EngineError::NotFound(_) => "not_found",
            EngineError::Forbidden(_) => "forbidden",
            EngineError::Unauthenticated(_) => "unauthenticated",
            EngineError::InvalidInput(_) | EngineError::Conflict(_) => "invalid_input",
            EngineError::Busy => "busy",
            EngineError::Model(_) => "model",
            EngineError::Io { .. } => "io",
            _ => "internal",
        };
        CommandError::new(kind, e.to_string())
    }
}

impl From<AgentError> for CommandError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::Engine(e) => e.into(),
            AgentError::Cancelled => CommandError::new("cancelled", e.to_string()),
            other => CommandError::new("internal", other.to_string()),
        }
    }
}

impl From<knowhub_agent::providers::ProviderError> for CommandError {
    fn from(e: knowhub_agent::providers::ProviderError) -> Self {
        CommandError::new("model", e.to_string())
    }
}

impl From<knowhub_models::ModelsError> for CommandError {
    fn from(e: knowhub_models::ModelsError) -> Self {
        CommandError::new("model", e.to_string())
    }
}

impl From<knowhub_engine::authz::AuthzError> for CommandError {
    fn from(e: knowhub_engine::authz::AuthzError) -> Self {
        CommandError::invalid(e.to_string())
    }
}

pub(crate) type CmdResult<T> = Result<T, CommandError>;
