//! The language models KnowHub's copilot talks to, behind one streaming trait: [`Llm`].
//!
//! The copilot must work offline on a laptop and, when a user has one, with a bigger model on a
//! server. So there are two providers with the same interface:
//!
//! - [`LocalGguf`] runs a quantized GGUF model in-process on candle (CPU by default; `cuda` and
//!   `metal` features for GPUs). Qwen2/Qwen2.5 (`qwen2`) and Llama/SmolLM2 (`llama`) GGUFs are
//!   supported; the default is Qwen2.5-Coder-0.5B-Instruct (Chinese and English). The tokenizer is
//!   rebuilt from the GGUF's own metadata (no `tokenizer.json` ships with these files), prompts use
//!   the ChatML format both families were trained on. See [`local`].
//! - [`OpenAiCompatible`] streams from any server that speaks OpenAI's
//!   `POST /v1/chat/completions` with server-sent events: Ollama, llama.cpp's server, vLLM, OpenAI.
//!   Blocking I/O (ureq), no async runtime. See [`openai`].
//!
//! Answers stream: [`Llm::chat`] calls `on_token` with each new piece of text as soon as it is
//! complete UTF-8 (a Chinese character split over two tokens is delivered once both arrived), and
//! stops when the callback returns `false`. The pieces concatenate to [`ChatResponse::text`].
//! Requests and responses are plain serde structs, so front ends can pass them around as JSON.
//!
//! ```no_run
//! use std::path::Path;
//! use knowhub_llm::{ChatRequest, Device, Llm, LocalGguf, Message};
//!
//! # fn main() -> Result<(), knowhub_llm::LlmError> {
//! let llm = LocalGguf::load(
//!     Path::new("models/qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
//!     &Device::Cpu,
//! )?;
//! let req = ChatRequest {
//!     max_tokens: 128,
//!     ..ChatRequest::new(vec![
//!         Message::system("Answer briefly."),
//!         Message::user("报销单应该什么时候提交？"),
//!     ])
//! };
//! let answer = llm.chat(&req, &mut |piece| {
//!     print!("{piece}"); // shown as it is generated
//!     true // false would stop the generation
//! })?;
//! println!("\n{} prompt + {} answer tokens, {:?}", answer.prompt_tokens,
//!          answer.completion_tokens, answer.finish);
//! # Ok(())
//! # }
//! ```
//!
//! The same request against a server (here a local Ollama):
//!
//! ```no_run
//! use knowhub_llm::{ChatRequest, Llm, Message, OpenAiCompatible};
//!
//! # fn main() -> Result<(), knowhub_llm::LlmError> {
//! let llm = OpenAiCompatible::new("http://127.0.0.1:11434/v1", "qwen2.5:7b", None);
//! let answer = llm.complete(&ChatRequest::new(vec![Message::user("Hello!")]))?;
//! println!("{}", answer.text);
//! # Ok(())
//! # }
//! ```

mod chat;
mod error;
mod gemm;
mod gemv;
pub mod gguf_tokenizer;
pub mod local;
pub mod openai;
pub mod qwen2;
mod requant;
mod stream;
pub mod threads;

use std::fmt::Debug;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use candle_core::Device;
pub use chat::format_chatml;
pub use error::{LlmError, Result};
pub use local::{LoadOptions, LocalGguf};
pub use openai::OpenAiCompatible;

/// The default local model: `models/<this>` relative to the models folder (see
/// `knowhub_models::default_models_dir`), fetched with `knowhub models fetch
/// qwen2.5-coder-0.5b-instruct`.
pub const DEFAULT_LOCAL_MODEL: &str =
    "qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

/// A chat model that streams its answer.
///
/// Implementations serialise or parallelise concurrent calls as they see fit; every call is an
/// independent conversation (nothing carries over from one call to the next).
pub trait Llm: Send + Sync + Debug {
    /// A short name of the model (file stem for local models, the server's model name otherwise).
    fn model_id(&self) -> &str;

    /// How many tokens prompt and answer may use together.
    fn context_tokens(&self) -> usize;

    /// Tokens `text` takes in this model (exact for local models, an estimate for servers).
    fn count_tokens(&self, text: &str) -> usize;

    /// How many weights the model has, where that is known (local models; a server does not
    /// say). Callers use it to suit their prompts to a small model.
    fn parameters(&self) -> Option<u64> {
        None
    }

    /// Answers the conversation in `req`, calling `on_token` with each new piece of text as it is
    /// generated. Pieces never split a UTF-8 character and concatenate to the response's `text`.
    /// Returning `false` from `on_token` stops the generation ([`Finish::Cancelled`]).
    fn chat(
        &self,
        req: &ChatRequest,
        on_token: &mut dyn FnMut(&str) -> bool,
    ) -> Result<ChatResponse, LlmError>;

    /// [`Llm::chat`] without streaming: the whole answer at once.
    fn complete(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.chat(req, &mut |_| true)
    }

    /// How likely the answer to `req` is to begin with each of `words`: the probability of the
    /// first token of the word as written, capitalised and in lower case, added up (one entry
    /// per word, in order). `None` where the model does not give its token probabilities (a
    /// server). A caller asking a yes/no question can then set its own threshold instead of
    /// taking whichever word the model likes better, which for a small model leans to one side.
    fn first_word_probabilities(
        &self,
        req: &ChatRequest,
        words: &[&str],
    ) -> Result<Option<Vec<f32>>, LlmError> {
        let _ = (req, words);
        Ok(None)
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The person asking.
    User,
    /// The model's earlier answers.
    Assistant,
}

impl Role {
    /// The name used by ChatML and the OpenAI API.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
}

impl Message {
    /// A message with the given role.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::new(Role::Assistant, content)
    }
}

/// What to generate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatRequest {
    /// The conversation, oldest first. A system message, if any, comes first.
    pub messages: Vec<Message>,
    /// Most tokens to generate.
    pub max_tokens: usize,
    /// Sampling temperature; 0 (the default) picks the most likely token every time
    /// (greedy, deterministic).
    pub temperature: f64,
    /// Nucleus sampling: sample only from the most likely tokens whose probabilities add up to
    /// this (used when `temperature > 0`; `None` samples from all tokens).
    pub top_p: Option<f64>,
    /// Generation ends when the text would contain one of these; the stop string itself is not
    /// part of the answer.
    pub stop: Vec<String>,
    /// Seed of the sampler (used when `temperature > 0`); the same seed and request give the
    /// same answer from a local model.
    pub seed: Option<u64>,
    /// The start of the answer, written for the model: a local model continues the open
    /// assistant turn after this text (e.g. `SELECT` for a text-to-SQL prompt), and the
    /// response's `text` is what follows it. Servers get the request without it (the OpenAI
    /// API has no portable way to pre-fill an answer), so their text starts from scratch.
    pub assistant_prefix: Option<String>,
}

impl Default for ChatRequest {
    fn default() -> Self {
        ChatRequest {
            messages: Vec::new(),
            max_tokens: 512,
            temperature: 0.0,
            top_p: None,
            stop: Vec::new(),
            seed: None,
            assistant_prefix: None,
        }
    }
}

impl ChatRequest {
    /// A greedy request for these messages with the default token budget (512).
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// The model ended its answer.
    Eos,
    /// `max_tokens` were generated, or the context window is full.
    MaxTokens,
    /// One of the request's stop strings appeared.
    Stop,
    /// `on_token` returned `false`.
    Cancelled,
}

/// A finished (or stopped) answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The answer: exactly the concatenation of the pieces given to `on_token`.
    pub text: String,
    /// Tokens of the prompt (after any truncation; from the server's usage report when it
    /// sends one, else estimated).
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub completion_tokens: usize,
    /// Why generation ended.
    pub finish: Finish,
    /// Wall time of the whole call.
    pub elapsed: Duration,
    /// Wall time until the first token was known (local: prompt processing plus one sampling
    /// step; servers: until the first piece of text arrived). Equal to `elapsed` when nothing was
    /// generated.
    pub time_to_first_token: Duration,
}
