//! [`OpenAiCompatible`]: any server that speaks OpenAI's chat-completions API.
//!
//! Ollama (`http://127.0.0.1:11434/v1`), llama.cpp's `llama-server` (`http://127.0.0.1:8080/v1`),
//! vLLM (`http://127.0.0.1:8000/v1`) and OpenAI itself (`https://api.openai.com/v1`) all accept
//! `POST {base_url}/chat/completions` with `"stream": true` and answer with server-sent events:
//! `data: {json}` lines whose `choices[0].delta.content` is the next piece of text, ending with
//! `data: [DONE]`. That one protocol lets users point the copilot at a bigger model without
//! KnowHub knowing which server it is.
//!
//! Blocking I/O on purpose: the engine is synchronous, and the ureq client (rustls, no OpenSSL,
//! no async runtime) is already in the workspace. Servers differ in small ways, handled here:
//! - a server that ignores `stream` and answers with one JSON object is read as a whole
//!   (`choices[0].message.content`), delivered as a single piece;
//! - `usage` comes in a final event when the server honours `stream_options.include_usage`;
//!   otherwise token counts are estimated (content events for the answer, [`estimate_tokens`]
//!   for the prompt);
//! - error bodies are `{"error": {"message"}}` (OpenAI, vLLM, llama.cpp), `{"error": "…"}`
//!   (Ollama) or plain text; an `error` object inside the stream ends the call with it.
//!
//! Stop strings are sent to the server (the first four: OpenAI's limit) *and* applied here, so
//! the answer ends at them even on servers that ignore `stop`.
//!
//! Token probabilities ([`Llm::first_word_probabilities`]) are asked for with `logprobs` and
//! `top_logprobs` on a one-token, non-streaming request (OpenAI, vLLM, llama.cpp, recent
//! Ollama). A server that rejects those fields (400/422) or answers without them is not asked
//! again by the same client.
//!
//! Timeouts: connecting may take [`CONNECT_TIMEOUT`]; after that, each read may wait
//! [`READ_TIMEOUT`] (a CPU-only server can take minutes over a long prompt before the first token),
//! with no limit on the whole answer. Cancelling (`on_token` returning `false`) closes the
//! connection, which stops generation on the servers above.

use std::fmt;
use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::{LlmError, Result};
use crate::stream::StopFilter;
use crate::{ChatRequest, ChatResponse, Finish, Llm};

/// How long connecting to the server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one read from the server may wait.
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// Context window assumed for a server model unless [`OpenAiCompatible::with_context_tokens`]
/// says otherwise (the API does not report it).
pub const DEFAULT_SERVER_CONTEXT: usize = 8192;
/// Most bytes read from one response (a runaway stream ends the call instead of filling memory).
const MAX_RESPONSE_BYTES: u64 = 64 << 20;
/// Most bytes of an error body read for its message.
const MAX_ERROR_BYTES: u64 = 64 << 10;
/// Stop strings OpenAI accepts per request.
const MAX_SERVER_STOPS: usize = 4;
/// Alternatives asked for the first token's probabilities (OpenAI's and vLLM's default
/// limit).
const TOP_LOGPROBS: usize = 20;

/// A chat model behind an OpenAI-compatible HTTP API.
#[derive(Clone)]
pub struct OpenAiCompatible {
    base_url: String,
    model: String,
    api_key: Option<String>,
    context: usize,
    agent: ureq::Agent,
    /// Set once the server has shown it gives no token probabilities.
    no_logprobs: Arc<AtomicBool>,
}

impl fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key itself.
        f.debug_struct("OpenAiCompatible")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

fn agent(connect: Duration, read: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        // Error statuses are answers we read the message of, not transport errors.
        .http_status_as_error(false)
        .timeout_connect(Some(connect))
        .timeout_per_read(Some(read))
        .user_agent(concat!("knowhub-llm/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

impl OpenAiCompatible {
    /// A client for `model` at `base_url` (up to and including the API version, e.g.
    /// `http://127.0.0.1:11434/v1`), with `Authorization: Bearer {api_key}` when a key is given.
    pub fn new(
        base_url: impl Into<String>,
        model: impl Into<String>,
        api_key: Option<String>,
    ) -> Self {
        let base_url = base_url.into().trim().trim_end_matches('/').to_owned();
        OpenAiCompatible {
            base_url,
            model: model.into(),
            api_key: api_key.filter(|k| !k.trim().is_empty()),
            context: DEFAULT_SERVER_CONTEXT,
            agent: agent(CONNECT_TIMEOUT, READ_TIMEOUT),
            no_logprobs: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Sets the model's context window (what [`Llm::context_tokens`] reports).
    pub fn with_context_tokens(mut self, tokens: usize) -> Self {
        self.context = tokens;
        self
    }

    /// Sets the connect timeout and the per-read timeout.
    pub fn with_timeouts(mut self, connect: Duration, read: Duration) -> Self {
        self.agent = agent(connect, read);
        self
    }

    /// The URL requests go to: `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    fn body(&self, req: &ChatRequest) -> Value {
        let messages: Vec<Value> = req
            .messages
            .iter()
            .map(|m| json!({ "role": m.role.as_str(), "content": m.content }))
            .collect();
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "stream": true,
            "stream_options": { "include_usage": true },
            "max_tokens": req.max_tokens,
            "temperature": if req.temperature.is_finite() { req.temperature.max(0.0) } else { 0.0 },
        });
        let stops: Vec<&str> = req
            .stop
            .iter()
            .filter(|s| !s.is_empty())
            .take(MAX_SERVER_STOPS)
            .map(String::as_str)
            .collect();
        if !stops.is_empty() {
            body["stop"] = json!(stops);
        }
        if let Some(seed) = req.seed {
            body["seed"] = json!(seed);
        }
        if let Some(p) = req.top_p {
            body["top_p"] = json!(p);
        }
        body
    }

    fn estimate_prompt(&self, req: &ChatRequest) -> usize {
        // About four tokens of framing per message, as in ChatML.
        req.messages
            .iter()
            .map(|m| estimate_tokens(&m.content) + 4)
            .sum::<usize>()
            + 3
    }
}

/// Rough token count for text of unknown tokenization: one per CJK character (Chinese, Japanese
/// kana, Korean Hangul, CJK punctuation and full-width forms), one per four other characters.
pub fn estimate_tokens(text: &str) -> usize {
    let mut cjk = 0usize;
    let mut other = 0usize;
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    cjk + other.div_ceil(4)
}

fn is_cjk(c: char) -> bool {
    matches!(u32::from(c),
        0x2E80..=0x2FDF     // radicals
        | 0x3000..=0x303F   // CJK symbols and punctuation
        | 0x3040..=0x30FF   // hiragana, katakana
        | 0x3100..=0x31BF   // bopomofo
        | 0x3400..=0x4DBF   // extension A
        | 0x4E00..=0x9FFF   // unified ideographs
        | 0xAC00..=0xD7AF   // hangul syllables
        | 0xF900..=0xFAFF   // compatibility ideographs
        | 0xFF00..=0xFFEF   // full-width forms
        | 0x20000..=0x3134F // extensions B–H
    )
}

fn shorten(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max_chars {
        text.to_owned()
    } else {
        let mut s: String = text.chars().take(max_chars).collect();
        s.push('…');
        s
    }
}

/// The human-readable message of an error body (JSON or text).
fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body)
        && let Some(m) = json_error_message(&v)
    {
        return m;
    }
    shorten(body, 300)
}

fn json_error_message(v: &Value) -> Option<String> {
    let e = v.get("error").unwrap_or(v);
    let m = e
        .get("message")
        .or_else(|| e.get("detail"))
        .and_then(Value::as_str)
        .or_else(|| e.as_str())?;
    Some(shorten(m, 300))
}

fn map_transport(url: &str, e: ureq::Error) -> LlmError {
    let reason = match e {
        ureq::Error::BadUri(u) => {
            return LlmError::InvalidRequest(format!(
                "the server URL {url} is not valid ({u}); it should look like \
                 http://127.0.0.1:11434/v1"
            ));
        }
        ureq::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
            std::io::ErrorKind::TimedOut => "timed out".to_owned(),
            _ => io.to_string(),
        },
        ureq::Error::Timeout(t) => format!("timed out ({t})"),
        ureq::Error::HostNotFound => "host not found".to_owned(),
        ureq::Error::ConnectionFailed => "connection failed".to_owned(),
        ureq::Error::Protocol(p) => {
            return LlmError::Protocol {
                url: url.to_owned(),
                reason: format!("not an HTTP answer ({p})"),
            };
        }
        other => other.to_string(),
    };
    LlmError::Unreachable {
        url: url.to_owned(),
        reason,
    }
}

/// Server-sent events: yields the `data` of each event (multi-line data joined with `\n`).
struct SseReader<R> {
    inner: R,
    line: Vec<u8>,
}

impl<R: BufRead> SseReader<R> {
    fn new(inner: R) -> Self {
        SseReader {
            inner,
            line: Vec::new(),
        }
    }

    fn next_data(&mut self) -> std::io::Result<Option<String>> {
        let mut data: Option<String> = None;
        loop {
            self.line.clear();
            let n = self.inner.read_until(b'\n', &mut self.line)?;
            if n == 0 {
                return Ok(data);
            }
            let line = String::from_utf8_lossy(&self.line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if data.is_some() {
                    return Ok(data);
                }
                continue;
            }
            if line.starts_with(':') {
                continue; // comment / keep-alive
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            if field == "data" {
                let value = value.strip_prefix(' ').unwrap_or(value);
                match &mut data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                }
            }
            // `event:`, `id:`, `retry:` carry nothing we use.
        }
    }
}

/// Usage numbers from a `usage` object.
fn usage(v: &Value) -> Option<(usize, usize)> {
    let u = v.get("usage")?;
    let n = |k: &str| {
        u.get(k)
            .and_then(Value::as_u64)
            .and_then(|x| usize::try_from(x).ok())
    };
    Some((n("prompt_tokens")?, n("completion_tokens")?))
}

fn finish_of(choice: &Value) -> Option<Finish> {
    match choice.get("finish_reason").and_then(Value::as_str)? {
        "length" => Some(Finish::MaxTokens),
        _ => Some(Finish::Eos),
    }
}

/// Answer under construction, shared by the streaming and the whole-body paths.
struct Answer<'a> {
    stops: StopFilter,
    text: String,
    events: usize,
    first: Option<Duration>,
    started: Instant,
    on_token: &'a mut dyn FnMut(&str) -> bool,
}

impl Answer<'_> {
    /// Adds text from the server; `Some` when generation must end here.
    fn push(&mut self, content: &str) -> Option<Finish> {
        if content.is_empty() {
            return None;
        }
        self.events += 1;
        if self.first.is_none() {
            self.first = Some(self.started.elapsed());
        }
        let filtered = self.stops.push(content);
        if !filtered.emit.is_empty() {
            self.text.push_str(&filtered.emit);
            if !(self.on_token)(&filtered.emit) {
                return Some(Finish::Cancelled);
            }
        }
        filtered.stopped.then_some(Finish::Stop)
    }

    /// Flushes text held back for a stop string that never came.
    fn flush(&mut self) {
        let rest = self.stops.finish();
        if !rest.is_empty() {
            self.text.push_str(&rest);
            let _ = (self.on_token)(&rest);
        }
    }
}

/// The message of an error response (best effort: the status alone is still worth reporting).
fn read_error(response: ureq::http::Response<ureq::Body>) -> String {
    let mut text = String::new();
    let _ = response
        .into_body()
        .into_reader()
        .take(MAX_ERROR_BYTES)
        .read_to_string(&mut text);
    let message = error_message(&text);
    if message.is_empty() {
        "no error message".to_owned()
    } else {
        message
    }
}

impl OpenAiCompatible {
    fn post(&self, url: &str, body: &Value) -> Result<ureq::http::Response<ureq::Body>> {
        let mut request = self
            .agent
            .post(url)
            .header("Content-Type", "application/json")
            .header("Accept", "text/event-stream, application/json");
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", format!("Bearer {}", key.trim()));
        }
        request
            .send(body.to_string().as_bytes())
            .map_err(|e| map_transport(url, e))
    }

    fn status_error(&self, url: String, status: u16, message: String) -> LlmError {
        match status {
            401 | 403 => LlmError::Auth {
                url,
                status,
                message,
            },
            404 => LlmError::Server {
                url,
                status: Some(status),
                message: format!(
                    "{message} (check the base URL, which usually ends in /v1, and the model \
                     name {:?})",
                    self.model
                ),
            },
            _ => LlmError::Server {
                url,
                status: Some(status),
                message,
            },
        }
    }

    fn read_stream(
        &self,
        url: &str,
        reader: impl BufRead,
        answer: &mut Answer<'_>,
    ) -> Result<(Finish, Option<(usize, usize)>)> {
        let mut sse = SseReader::new(reader);
        let mut finish = None;
        let mut counts = None;
        loop {
            let data = sse.next_data().map_err(|e| LlmError::Unreachable {
                url: url.to_owned(),
                reason: format!("the connection broke while the answer was streaming ({e})"),
            })?;
            let Some(data) = data else {
                // End of the body: fine once the server said why it stopped.
                return match finish {
                    Some(f) => Ok((f, counts)),
                    None => Err(LlmError::Protocol {
                        url: url.to_owned(),
                        reason: "the stream ended before `data: [DONE]`".to_owned(),
                    }),
                };
            };
            let data = data.trim();
            if data == "[DONE]" {
                return Ok((finish.unwrap_or(Finish::Eos), counts));
            }
            if data.is_empty() {
                continue;
            }
            let event: Value = serde_json::from_str(data).map_err(|e| LlmError::Protocol {
                url: url.to_owned(),
                reason: format!("malformed event {:?} ({e})", shorten(data, 120)),
            })?;
            if event.get("error").is_some_and(|e| !e.is_null()) {
                return Err(LlmError::Server {
                    url: url.to_owned(),
                    status: None,
                    message: json_error_message(&event).unwrap_or_else(|| shorten(data, 300)),
                });
            }
            if let Some(u) = usage(&event) {
                counts = Some(u);
            }
            let Some(choice) = event.get("choices").and_then(|c| c.get(0)) else {
                continue; // e.g. the usage-only final event
            };
            let content = choice
                .get("delta")
                .or_else(|| choice.get("message"))
                .and_then(|d| d.get("content"))
                .or_else(|| choice.get("text"))
                .and_then(Value::as_str);
            if let Some(content) = content
                && let Some(end) = answer.push(content)
            {
                return Ok((end, counts));
            }
            if let Some(f) = finish_of(choice) {
                finish = Some(f);
            }
        }
    }

    fn read_whole(
        &self,
        url: &str,
        mut reader: impl Read,
        answer: &mut Answer<'_>,
    ) -> Result<(Finish, Option<(usize, usize)>)> {
        let mut body = String::new();
        reader
            .read_to_string(&mut body)
            .map_err(|e| LlmError::Unreachable {
                url: url.to_owned(),
                reason: format!("the connection broke while reading the answer ({e})"),
            })?;
        let v: Value = serde_json::from_str(&body).map_err(|e| LlmError::Protocol {
            url: url.to_owned(),
            reason: format!(
                "expected a JSON chat completion or an event stream, got {:?} ({e})",
                shorten(&body, 120)
            ),
        })?;
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return Err(LlmError::Server {
                url: url.to_owned(),
                status: None,
                message: json_error_message(&v).unwrap_or_else(|| shorten(&body, 300)),
            });
        }
        let choice = v.get("choices").and_then(|c| c.get(0));
        let content = choice
            .and_then(|c| c.get("message"))
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .ok_or_else(|| LlmError::Protocol {
                url: url.to_owned(),
                reason: format!("no choices[0].message.content in {:?}", shorten(&body, 120)),
            })?;
        let finish = answer
            .push(content)
            .or_else(|| choice.and_then(finish_of))
            .unwrap_or(Finish::Eos);
        Ok((finish, usage(&v)))
    }
}

/// The probability of each of `words` among a first token's `top_logprobs` (`[{token,
/// logprob}]`): the tokens that are the word, in any case and spacing, added up.
fn word_probabilities(top: &[Value], words: &[&str]) -> Vec<f32> {
    words
        .iter()
        .map(|word| {
            top.iter()
                .filter(|t| {
                    t.get("token")
                        .and_then(Value::as_str)
                        .is_some_and(|token| token.trim().to_lowercase() == word.to_lowercase())
                })
                .filter_map(|t| t.get("logprob").and_then(Value::as_f64))
                .map(|lp| lp.exp() as f32)
                .sum::<f32>()
                .min(1.0)
        })
        .collect()
}

impl Llm for OpenAiCompatible {
    fn first_word_probabilities(
        &self,
        req: &ChatRequest,
        words: &[&str],
    ) -> Result<Option<Vec<f32>>> {
        if req.messages.is_empty() {
            return Err(LlmError::InvalidRequest(
                "the conversation has no messages".into(),
            ));
        }
        if self.no_logprobs.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let gives_none = || {
            self.no_logprobs.store(true, Ordering::Relaxed);
            tracing::debug!(model = %self.model, "the server gives no token probabilities");
            Ok(None)
        };
        let url = self.endpoint();
        let mut body = self.body(req);
        if let Some(fields) = body.as_object_mut() {
            fields.remove("stream_options");
            fields.insert("stream".into(), json!(false));
            fields.insert("max_tokens".into(), json!(1));
            fields.insert("logprobs".into(), json!(true));
            fields.insert("top_logprobs".into(), json!(TOP_LOGPROBS));
        }
        let response = self.post(&url, &body)?;
        let status = response.status().as_u16();
        if status == 400 || status == 422 {
            let _ = read_error(response);
            return gives_none();
        }
        if !(200..300).contains(&status) {
            return Err(self.status_error(url, status, read_error(response)));
        }
        let mut text = String::new();
        response
            .into_body()
            .into_reader()
            .take(MAX_RESPONSE_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| LlmError::Unreachable {
                url: url.clone(),
                reason: format!("the connection broke while reading the answer ({e})"),
            })?;
        let top = serde_json::from_str::<Value>(&text).ok().and_then(|v| {
            v.pointer("/choices/0/logprobs/content/0/top_logprobs")
                .and_then(Value::as_array)
                .cloned()
        });
        match top {
            Some(top) if !top.is_empty() => Ok(Some(word_probabilities(&top, words))),
            _ => gives_none(),
        }
    }

    fn model_id(&self) -> &str {
        &self.model
    }

    fn context_tokens(&self) -> usize {
        self.context
    }

    fn count_tokens(&self, text: &str) -> usize {
        estimate_tokens(text)
    }

    fn chat(
        &self,
        req: &ChatRequest,
        on_token: &mut dyn FnMut(&str) -> bool,
    ) -> Result<ChatResponse> {
        if req.messages.is_empty() {
            return Err(LlmError::InvalidRequest(
                "the conversation has no messages".into(),
            ));
        }
        let started = Instant::now();
        let url = self.endpoint();
        let mut body = self.body(req);
        let mut response = self.post(&url, &body)?;
        if response.status().as_u16() == 400 {
            // `stream_options` (for the usage report) is newer than some servers; an explicit
            // rejection of it is retried without it.
            let message = read_error(response);
            if !message.contains("stream_options") {
                return Err(self.status_error(url, 400, message));
            }
            tracing::debug!(%url, "server rejected stream_options; retrying without");
            if let Some(fields) = body.as_object_mut() {
                fields.remove("stream_options");
            }
            response = self.post(&url, &body)?;
        }
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(self.status_error(url, status, read_error(response)));
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let reader = response.into_body().into_reader();

        let mut answer = Answer {
            stops: StopFilter::new(&req.stop),
            text: String::new(),
            events: 0,
            first: None,
            started,
            on_token,
        };
        let mut reader = BufReader::new(reader.take(MAX_RESPONSE_BYTES));
        let streaming = if content_type.contains("event-stream") {
            true
        } else if content_type.contains("json") {
            false
        } else {
            // No useful content type: look at the first byte.
            let head = reader.fill_buf().map_err(|e| LlmError::Unreachable {
                url: url.clone(),
                reason: format!("the connection broke before the answer ({e})"),
            })?;
            head.iter()
                .find(|b| !b.is_ascii_whitespace())
                .is_none_or(|b| *b != b'{')
        };
        let (finish, counts) = if streaming {
            self.read_stream(&url, reader, &mut answer)?
        } else {
            self.read_whole(&url, reader, &mut answer)?
        };
        if matches!(finish, Finish::Eos | Finish::MaxTokens) {
            answer.flush();
        }
        let elapsed = started.elapsed();
        let (prompt_tokens, completion_tokens) =
            counts.unwrap_or_else(|| (self.estimate_prompt(req), answer.events));
        Ok(ChatResponse {
            text: answer.text,
            prompt_tokens,
            completion_tokens,
            finish,
            elapsed,
            time_to_first_token: answer.first.unwrap_or(elapsed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_and_comments() {
        let raw = ": keep-alive\n\ndata: {\"a\":1}\n\nevent: x\ndata: line1\ndata: line2\r\n\r\n\
                   data: [DONE]\n";
        let mut sse = SseReader::new(raw.as_bytes());
        assert_eq!(sse.next_data().unwrap().as_deref(), Some("{\"a\":1}"));
        assert_eq!(sse.next_data().unwrap().as_deref(), Some("line1\nline2"));
        assert_eq!(sse.next_data().unwrap().as_deref(), Some("[DONE]"));
        assert_eq!(sse.next_data().unwrap(), None);
    }

    #[test]
    fn token_estimate_counts_cjk_per_character() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("报销单"), 3);
        assert_eq!(estimate_tokens("报销 form"), 2 + 2);
        assert_eq!(estimate_tokens("カタカナ、한국"), 7);
    }

    #[test]
    fn error_messages_from_common_servers() {
        assert_eq!(
            error_message(r#"{"error":{"message":"Invalid API key","type":"auth"}}"#),
            "Invalid API key"
        );
        assert_eq!(
            error_message(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(error_message(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(error_message("  Bad Gateway \n"), "Bad Gateway");
    }

    #[test]
    fn a_words_probability_adds_up_its_spellings() {
        let top = [
            json!({"token": "Yes", "logprob": (0.5f64).ln()}),
            json!({"token": " yes", "logprob": (0.2f64).ln()}),
            json!({"token": "No", "logprob": (0.1f64).ln()}),
            json!({"token": "Yesterday", "logprob": (0.1f64).ln()}),
            json!({"token": "是", "logprob": (0.05f64).ln()}),
            json!({"bad": true}),
        ];
        let p = word_probabilities(&top, &["yes", "no", "是", "maybe"]);
        let want = [0.7, 0.1, 0.05, 0.0];
        for (got, want) in p.iter().zip(want) {
            assert!((got - want).abs() < 1e-5, "{p:?}");
        }
    }

    #[test]
    fn request_body_shape() {
        let llm = OpenAiCompatible::new("http://h:1/v1/", "m", Some("k".into()));
        assert_eq!(llm.endpoint(), "http://h:1/v1/chat/completions");
        let req = ChatRequest {
            stop: vec![
                "a".into(),
                String::new(),
                "b".into(),
                "c".into(),
                "d".into(),
                "e".into(),
            ],
            seed: Some(7),
            ..ChatRequest::new(vec![crate::Message::user("hi")])
        };
        let body = llm.body(&req);
        assert_eq!(body["model"], "m");
        assert_eq!(body["stream"], true);
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["stop"], json!(["a", "b", "c", "d"]));
        assert_eq!(body["seed"], 7);
        assert!(body.get("top_p").is_none());
        assert!(!format!("{llm:?}").contains("\"k\""));
    }
}
