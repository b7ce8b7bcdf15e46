//! `LlmError`: every way loading a model or talking to one can fail.
//!
//! The copilot shows these messages to the person at the keyboard, so each one says what
//! happened and, where there is one, what to do about it (the `knowhub models fetch` command for
//! a missing file, the URL that could not be reached, the API key for an authentication failure).

use std::path::PathBuf;

/// Errors of the LLM crate.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The model file does not exist.
    #[error(
        "model file {path} is missing; fetch it with `knowhub models fetch {name}` \
         (then `knowhub models status` to check it)"
    )]
    ModelMissing {
        /// The file that was looked for.
        path: PathBuf,
        /// The model's name in the manifest (the folder under `models/`).
        name: String,
    },
    /// The model file exists but could not be read.
    #[error("cannot read model file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a GGUF model this crate can use (corrupt header, missing metadata or
    /// tensors, tokenizer or chat format it does not know).
    #[error("{path} is not a usable GGUF model: {reason}")]
    BadModel {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `general.architecture` names a model family this crate cannot run.
    #[error(
        "{path}: model architecture {arch:?} is not supported (supported: qwen2, llama); \
         pick a Qwen2/Qwen2.5 or Llama/SmolLM GGUF instead"
    )]
    UnsupportedArchitecture {
        /// The file.
        path: PathBuf,
        /// The architecture named in its metadata.
        arch: String,
    },
    /// Building or running the tokenizer failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// Even after dropping old messages the prompt does not fit the model's context window.
    #[error(
        "the prompt needs {needed} tokens but the model's context window holds {limit} \
         (with {reserved} kept free for the answer); shorten the system prompt or the question"
    )]
    ContextOverflow {
        /// Tokens the shortest possible prompt needs.
        needed: usize,
        /// The model's context window.
        limit: usize,
        /// Tokens reserved for the answer.
        reserved: usize,
    },
    /// The request itself is unusable (no messages, …).
    #[error("invalid chat request: {0}")]
    InvalidRequest(String),
    /// The model failed while computing (tensor shapes, device errors).
    #[error("local model failed while generating: {0}")]
    Inference(String),
    /// The server could not be reached: refused connection, unknown host, timeout, broken
    /// connection.
    #[error("cannot reach the LLM server at {url}: {reason}; is the server running?")]
    Unreachable {
        /// The URL that was requested.
        url: String,
        /// What the network layer said.
        reason: String,
    },
    /// The server refused the credentials (HTTP 401 or 403).
    #[error(
        "the LLM server at {url} refused the request (HTTP {status}): {message}; \
         check the API key"
    )]
    Auth {
        /// The URL that was requested.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The server's error message.
        message: String,
    },
    /// The server answered with another error status, or sent an error inside the stream.
    #[error("the LLM server at {url} answered with an error{}: {message}", status_text(*.status))]
    Server {
        /// The URL that was requested.
        url: String,
        /// The HTTP status (`None` for an error event inside a stream).
        status: Option<u16>,
        /// The server's error message, with a hint where one helps.
        message: String,
    },
    /// The server's answer could not be understood (malformed event, unexpected JSON).
    #[error("unexpected answer from the LLM server at {url}: {reason}")]
    Protocol {
        /// The URL that was requested.
        url: String,
        /// What was wrong.
        reason: String,
    },
}

fn status_text(status: Option<u16>) -> String {
    status.map(|s| format!(" (HTTP {s})")).unwrap_or_default()
}

/// Result alias of this crate.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;
