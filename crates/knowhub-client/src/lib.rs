//! A typed client for a KnowHub team server (`knowhub serve`), the one the desktop app and the
//! CLI use to join it. Blocking (the engine's front ends call it from worker threads), over
//! rustls; the server decides what the caller may read, the client only carries the key.
//!
//! * **https for anything but this computer**: `http://` is accepted for loopback addresses
//!   only. Certificates are checked against the system's roots, or the CA file an
//!   administrator gave ([`ClientOptions::ca_file`]).
//! * **Errors say what to do**: an unreachable server, a refused key and a missing document
//!   are different [`ClientError`]s, with the server's message and trace id when it sent one.
//! * **Checked against the server**: `tests/conformance.rs` runs every method against a real
//!   server and compares [`ENDPOINTS`] with its OpenAPI document.
//!
//! ```no_run
//! use knowhub_client::{AskRequest, Client, ClientOptions};
//! let client = Client::new("https://kb.example.com", "kh_…", ClientOptions::default())?;
//! let answer = client.ask(&AskRequest::new("How many days of leave do I get?"))?;
//! for source in &answer.sources {
//!     println!("[{}] {} ({})", source.number, source.title, source.uri);
//! }
//! # Ok::<(), knowhub_client::ClientError>(())
//! ```

mod admin;
mod groups;
mod knowledge;
mod operations;
mod sse;
mod types;
mod upload;

use std::io::{BufReader, Read, Write};
use std::net::IpAddr;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use ureq::http::{Response, Uri};
use ureq::tls::{PemItem, RootCerts, TlsConfig};

pub use admin::*;
pub use groups::*;
pub use knowledge::*;
pub use operations::*;
pub use types::*;
pub use upload::*;

/// Every `(method, path)` this client calls, as the server's OpenAPI document names them.
pub const ENDPOINTS: &[(&str, &str)] = &[
    ("GET", "/api/v1/health"),
    ("GET", "/api/v1/me"),
    ("POST", "/api/v1/search"),
    ("POST", "/api/v1/ask"),
    ("GET", "/api/v1/models"),
    ("GET", "/api/v1/status"),
    ("GET", "/api/v1/sources"),
    ("GET", "/api/v1/documents"),
    ("GET", "/api/v1/documents/{id}"),
    ("GET", "/api/v1/documents/{id}/preview"),
    ("GET", "/api/v1/documents/{id}/file"),
    ("GET", "/api/v1/passages/{chunk_id}"),
    ("GET", "/api/v1/conversations"),
    ("GET", "/api/v1/conversations/{id}"),
    ("DELETE", "/api/v1/conversations/{id}"),
    ("GET", "/api/v1/traces"),
    ("GET", "/api/v1/traces/{trace_id}"),
    ("POST", "/api/v1/feedback"),
    ("GET", "/api/v1/crawls"),
    ("POST", "/api/v1/crawls"),
    ("PUT", "/api/v1/crawls/{id}"),
    ("DELETE", "/api/v1/crawls/{id}"),
    ("POST", "/api/v1/crawls/{id}/run"),
    ("GET", "/api/v1/admin/accounts/{account_id}/users"),
    ("POST", "/api/v1/admin/accounts/{account_id}/users"),
    (
        "DELETE",
        "/api/v1/admin/accounts/{account_id}/users/{user_id}",
    ),
    (
        "PUT",
        "/api/v1/admin/accounts/{account_id}/users/{user_id}/role",
    ),
    (
        "POST",
        "/api/v1/admin/accounts/{account_id}/users/{user_id}/key",
    ),
    (
        "PUT",
        "/api/v1/admin/accounts/{account_id}/users/{user_id}/groups/{group}",
    ),
    (
        "DELETE",
        "/api/v1/admin/accounts/{account_id}/users/{user_id}/groups/{group}",
    ),
    (
        "DELETE",
        "/api/v1/admin/accounts/{account_id}/users/{user_id}/key",
    ),
    (
        "GET",
        "/api/v1/admin/accounts/{account_id}/users/{user_id}/groups",
    ),
    ("GET", "/api/v1/folders"),
    ("PUT", "/api/v1/acl"),
    ("GET", "/api/v1/acl/readers"),
    ("GET", "/api/v1/watches"),
    ("POST", "/api/v1/watches"),
    ("DELETE", "/api/v1/watches"),
    ("POST", "/api/v1/ingest"),
    ("POST", "/api/v1/remove"),
    ("GET", "/api/v1/queue"),
    ("POST", "/api/v1/queue/pause"),
    ("POST", "/api/v1/queue/resume"),
    ("POST", "/api/v1/queue/retry-failed"),
    ("POST", "/api/v1/queue/cancel"),
    ("GET", "/api/v1/audit"),
    ("GET", "/api/v1/groups"),
    ("POST", "/api/v1/groups"),
    ("GET", "/api/v1/groups/{group_id}"),
    ("DELETE", "/api/v1/groups/{group_id}"),
    ("POST", "/api/v1/groups/{group_id}/members"),
    ("DELETE", "/api/v1/groups/{group_id}/members/{user_id}"),
    ("GET", "/api/v1/uploads"),
    ("POST", "/api/v1/uploads"),
    ("GET", "/api/v1/sql-sources"),
    ("POST", "/api/v1/sql-sources"),
    ("DELETE", "/api/v1/sql-sources/{name}"),
    ("POST", "/api/knowledge/search"),
    ("POST", "/api/knowledge"),
    ("GET", "/api/knowledge"),
    ("GET", "/api/knowledge/{id}"),
    ("GET", "/api/knowledge/{id}/versions"),
    ("PUT", "/api/knowledge/{id}"),
    ("DELETE", "/api/knowledge/{id}"),
    ("POST", "/api/knowledge/batch_update"),
    ("POST", "/api/knowledge/slim"),
    ("POST", "/api/resource"),
    ("GET", "/api/resource"),
    ("GET", "/api/resource/{id}"),
    ("PUT", "/api/resource/{id}"),
    ("DELETE", "/api/resource/{id}"),
    ("POST", "/api/v1/conversations/{id}/remember"),
    ("POST", "/api/v1/memory/commit"),
    ("GET", "/api/v1/memory/children"),
    ("GET", "/api/v1/memory/node"),
    ("DELETE", "/api/v1/memory/node"),
];

/// The largest JSON answer read (a whole document's text in a preview can be large).
const MAX_JSON_BYTES: u64 = 512 * 1024 * 1024;

/// What went wrong talking to the server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address is not one the client will use.
    #[error("{0}")]
    Address(String),
    /// The CA file could not be read or holds no certificate.
    #[error("CA file {path}: {reason}")]
    CaFile { path: PathBuf, reason: String },
    /// No answer: the server is down, unreachable, or too slow. Worth retrying later.
    #[error("cannot reach the KnowHub server at {server}: {reason}")]
    Unreachable { server: String, reason: String },
    /// The TLS connection failed (an unknown certificate authority, a name mismatch, …).
    #[error("the KnowHub server at {server} failed the TLS check: {reason}")]
    Tls { server: String, reason: String },
    /// The server answered with an error (`code` as in its error body, e.g. `NOT_FOUND`).
    #[error("{message} ({code}, HTTP {status})")]
    Api {
        status: u16,
        code: String,
        message: String,
        trace_id: Option<String>,
    },
    /// The answer was not what this client understands (a different version of the server).
    #[error("unexpected answer from the KnowHub server: {0}")]
    Protocol(String),
    /// The caller stopped a streamed answer.
    #[error("cancelled")]
    Cancelled,
    /// Writing a downloaded file failed.
    #[error("writing the download: {0}")]
    Write(std::io::Error),
    /// A file to upload could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ClientError {
    /// The HTTP status of a server's refusal.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The key was refused (missing, revoked, rotated): the user needs a new one.
    pub fn is_unauthenticated(&self) -> bool {
        self.status() == Some(401)
    }

    /// Retrying later may succeed (the server or its database is down or restarting).
    pub fn is_retryable(&self) -> bool {
        matches!(self, ClientError::Unreachable { .. }) || self.status() == Some(503)
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// A PEM file with the certificate authorities to trust instead of the system's (a
    /// company CA).
    pub ca_file: Option<PathBuf>,
    /// How long to wait for the server to start answering a request.
    pub timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            ca_file: None,
            timeout: Duration::from_secs(120),
        }
    }
}

/// A signed-in connection to one team server.
#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    api_key: String,
    agent: ureq::Agent,
}

impl Client {
    /// A client for the server at `server` (`https://host[:port]`, or `http://` on loopback)
    /// using `api_key`. Nothing is sent yet.
    pub fn new(server: &str, api_key: &str, options: ClientOptions) -> Result<Client> {
        let base = checked_base(server)?;
        if api_key.trim().is_empty() {
            return Err(ClientError::Address("no API key given".into()));
        }
        let roots = match &options.ca_file {
            Some(path) => RootCerts::new_with_certs(&read_ca_file(path)?),
            None => RootCerts::PlatformVerifier,
        };
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_recv_response(Some(options.timeout))
            .tls_config(TlsConfig::builder().root_certs(roots).build())
            .build()
            .into();
        Ok(Client {
            base,
            api_key: api_key.trim().to_owned(),
            agent,
        })
    }

    /// The server's address, as given (without a trailing `/`).
    pub fn server(&self) -> &str {
        &self.base
    }

    // ----- the copilot ------------------------------------------------------------------

    /// Whether the server and its database answer (needs no key).
    pub fn health(&self) -> Result<Health> {
        let response = self.send("GET", "/api/v1/health", None)?;
        // 503 still carries the body that says why.
        if response.status().as_u16() == 503 {
            return read_json(response);
        }
        self.json(response)
    }

    /// Passages the caller may read.
    pub fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>> {
        let body = to_json(request)?;
        let response = self.send("POST", "/api/v1/search", Some(body))?;
        Ok(self.json::<SearchResults>(response)?.hits)
    }

    /// Who the key signs in as (a revoked or rotated key: [`ClientError::is_unauthenticated`]).
    pub fn me(&self) -> Result<Me> {
        let response = self.send("GET", "/api/v1/me", None)?;
        self.json(response)
    }

    /// A cited answer, all at once.
    pub fn ask(&self, request: &AskRequest) -> Result<Answer> {
        let body = to_json(request)?;
        let response = self.send("POST", "/api/v1/ask", Some(body))?;
        self.json(response)
    }

    /// A cited answer, streamed: `on_event` sees the workflow's steps and the text as it is
    /// written, and may stop it (`ControlFlow::Break`), which closes the connection so the
    /// server stops generating too.
    pub fn ask_streaming(
        &self,
        request: &AskRequest,
        mut on_event: impl FnMut(AskEvent) -> ControlFlow<()>,
    ) -> Result<Answer> {
        let mut body = serde_json::to_value(request).map_err(protocol)?;
        body["stream"] = serde_json::Value::Bool(true);
        let response = self.send("POST", "/api/v1/ask", Some(body.to_string().into_bytes()))?;
        let response = self.checked(response)?;
        let reader = BufReader::new(response.into_body().into_reader());
        let mut answer = None;
        for event in sse::events(reader) {
            let event = event.map_err(|e| self.unreachable(&e))?;
            let step = match event.name.as_str() {
                "answer" => {
                    answer = Some(serde_json::from_str(&event.data).map_err(protocol)?);
                    break;
                }
                "error" => return Err(api_error(None, &event.data)),
                "step" => {
                    #[derive(Deserialize)]
                    struct Step {
                        node: String,
                        status: String,
                        timing_ms: u64,
                    }
                    let s: Step = serde_json::from_str(&event.data).map_err(protocol)?;
                    AskEvent::Step {
                        node: s.node,
                        status: s.status,
                        timing_ms: s.timing_ms,
                    }
                }
                "token" | "replace" => {
                    #[derive(Deserialize)]
                    struct Text {
                        text: String,
                    }
                    let t: Text = serde_json::from_str(&event.data).map_err(protocol)?;
                    if event.name == "token" {
                        AskEvent::Token(t.text)
                    } else {
                        AskEvent::Replace(t.text)
                    }
                }
                // A newer server's event this client does not know.
                _ => continue,
            };
            if on_event(step).is_break() {
                return Err(ClientError::Cancelled);
            }
        }
        answer.ok_or_else(|| {
            self.unreachable(&"the answer stream ended before the answer".to_owned())
        })
    }

    // ----- documents --------------------------------------------------------------------

    /// The caller's view of the knowledge base (counts over what they may read).
    pub fn status(&self) -> Result<serde_json::Value> {
        let response = self.send("GET", "/api/v1/status", None)?;
        self.json(response)
    }

    /// The folders and documents the caller may see (optionally only those whose title or
    /// path has every word of `filter`), with the ingestion queue.
    pub fn sources(&self, filter: Option<&str>) -> Result<Sources> {
        let path = match filter {
            Some(f) => format!("/api/v1/sources?filter={}", encode(f)),
            None => "/api/v1/sources".to_owned(),
        };
        let response = self.send("GET", &path, None)?;
        self.json(response)
    }

    /// Documents the caller may read, all or at and under `under` (a path on the server).
    pub fn documents(&self, under: Option<&str>) -> Result<Vec<Document>> {
        let path = match under {
            Some(u) => format!("/api/v1/documents?under={}", encode(u)),
            None => "/api/v1/documents".to_owned(),
        };
        let response = self.send("GET", &path, None)?;
        Ok(self.json::<DocumentList>(response)?.documents)
    }

    /// One document (not found when it does not exist or the caller may not read it).
    pub fn document(&self, id: i64) -> Result<Document> {
        let response = self.send("GET", &format!("/api/v1/documents/{id}"), None)?;
        self.json(response)
    }

    /// A document's text and passages, for the viewer a citation opens.
    pub fn preview(&self, id: i64) -> Result<Preview> {
        let response = self.send("GET", &format!("/api/v1/documents/{id}/preview"), None)?;
        self.json(response)
    }

    /// Streams the original file into `out`.
    pub fn download(&self, id: i64, out: &mut impl Write) -> Result<FileInfo> {
        let response = self.send("GET", &format!("/api/v1/documents/{id}/file"), None)?;
        let response = self.checked(response)?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header("content-type");
        let file_name = header("content-disposition").and_then(|d| disposition_name(&d));
        let mut reader = response.into_body().into_reader();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut bytes = 0u64;
        loop {
            let n = reader.read(&mut buffer).map_err(|e| self.unreachable(&e))?;
            if n == 0 {
                break;
            }
            out.write_all(&buffer[..n]).map_err(ClientError::Write)?;
            bytes += n as u64;
        }
        Ok(FileInfo {
            content_type,
            file_name,
            bytes,
        })
    }

    /// One cited passage by its chunk id.
    pub fn passage(&self, chunk_id: i64) -> Result<Passage> {
        let response = self.send("GET", &format!("/api/v1/passages/{chunk_id}"), None)?;
        self.json(response)
    }

    // ----- conversations ----------------------------------------------------------------

    /// The caller's conversations, most recent first.
    pub fn conversations(&self, limit: usize) -> Result<Vec<ConversationSummary>> {
        let path = format!("/api/v1/conversations?limit={}", limit.max(1));
        let response = self.send("GET", &path, None)?;
        Ok(self.json::<ConversationList>(response)?.conversations)
    }

    /// One of the caller's conversations with its turns.
    pub fn conversation(&self, id: &str) -> Result<Conversation> {
        let path = format!("/api/v1/conversations/{}", encode(id));
        let response = self.send("GET", &path, None)?;
        self.json(response)
    }

    /// Deletes one of the caller's conversations.
    pub fn delete_conversation(&self, id: &str) -> Result<()> {
        let path = format!("/api/v1/conversations/{}", encode(id));
        let response = self.send("DELETE", &path, None)?;
        self.json::<serde_json::Value>(response).map(drop)
    }

    /// How an answer came about (the caller's own; administrators: any).
    pub fn trace(&self, trace_id: &str) -> Result<serde_json::Value> {
        let path = format!("/api/v1/traces/{}", encode(trace_id));
        let response = self.send("GET", &path, None)?;
        self.json(response)
    }

    /// The models the server answers and searches with (chosen where it starts).
    pub fn models(&self) -> Result<ServerModels> {
        let response = self.send("GET", "/api/v1/models", None)?;
        self.json(response)
    }

    /// Recent answers' traces, newest first (the caller's own; administrators: everyone's).
    pub fn traces(&self, limit: usize) -> Result<Vec<TraceSummary>> {
        let response = self.send("GET", &format!("/api/v1/traces?limit={limit}"), None)?;
        Ok(self.json::<TraceList>(response)?.traces)
    }

    /// Feedback on an answer.
    pub fn feedback(&self, feedback: &Feedback) -> Result<()> {
        let body = to_json(feedback)?;
        let response = self.send("POST", "/api/v1/feedback", Some(body))?;
        self.json::<serde_json::Value>(response).map(drop)
    }

    // ----- plumbing ---------------------------------------------------------------------

    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Response<ureq::Body>> {
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("x-api-key", &self.api_key)
            .header("accept", "application/json, text/event-stream");
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(body.unwrap_or_default())
            .map_err(|e| ClientError::Address(format!("{}{path}: {e}", self.base)))?;
        self.agent.run(request).map_err(|e| self.transport(e))
    }

    /// [`Client::send`] for a call whose answer may take `timeout` (the server works first).
    fn send_waiting(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        timeout: std::time::Duration,
    ) -> Result<Response<ureq::Body>> {
        let mut request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("x-api-key", &self.api_key)
            .header("accept", "application/json");
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(body.unwrap_or_default())
            .map_err(|e| ClientError::Address(format!("{}{path}: {e}", self.base)))?;
        let request = self
            .agent
            .configure_request(request)
            .timeout_recv_response(Some(timeout))
            .build();
        self.agent.run(request).map_err(|e| self.transport(e))
    }

    /// The response if it is a success, else the server's error.
    fn checked(&self, response: Response<ureq::Body>) -> Result<Response<ureq::Body>> {
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let mut text = String::new();
        let _ = response
            .into_body()
            .into_reader()
            .take(64 * 1024)
            .read_to_string(&mut text);
        Err(api_error(Some(status), &text))
    }

    fn json<T: DeserializeOwned>(&self, response: Response<ureq::Body>) -> Result<T> {
        read_json(self.checked(response)?)
    }

    fn transport(&self, e: ureq::Error) -> ClientError {
        let reason = e.to_string();
        let tls = matches!(e, ureq::Error::Tls(_) | ureq::Error::Rustls(_))
            || reason.contains("certificate");
        if tls {
            ClientError::Tls {
                server: self.base.clone(),
                reason,
            }
        } else {
            self.unreachable(&reason)
        }
    }

    fn unreachable(&self, reason: &dyn std::fmt::Display) -> ClientError {
        ClientError::Unreachable {
            server: self.base.clone(),
            reason: reason.to_string(),
        }
    }
}

fn to_json(value: &impl serde::Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(protocol)
}

fn read_json<T: DeserializeOwned>(response: Response<ureq::Body>) -> Result<T> {
    let reader = response.into_body().into_reader().take(MAX_JSON_BYTES);
    serde_json::from_reader(BufReader::new(reader)).map_err(protocol)
}

fn protocol(e: impl std::fmt::Display) -> ClientError {
    ClientError::Protocol(e.to_string())
}

/// The server's error body (`{"error": {"code", "message"}, "trace_id"}`) as an error; a
/// body that is not one still gives the status and what was sent.
fn api_error(status: Option<u16>, body: &str) -> ClientError {
    #[derive(Deserialize)]
    struct Detail {
        code: String,
        message: String,
    }
    #[derive(Deserialize)]
    struct Body {
        error: Detail,
        #[serde(default)]
        trace_id: Option<String>,
    }
    match serde_json::from_str::<Body>(body) {
        Ok(b) => ClientError::Api {
            status: status.unwrap_or_else(|| status_of(&b.error.code)),
            code: b.error.code,
            message: b.error.message,
            trace_id: b.trace_id,
        },
        Err(_) => ClientError::Api {
            status: status.unwrap_or(500),
            code: "UNKNOWN".into(),
            message: body.chars().take(300).collect(),
            trace_id: None,
        },
    }
}

/// The HTTP status of an error code sent inside a stream (after the 200 was sent).
fn status_of(code: &str) -> u16 {
    match code {
        "BAD_REQUEST" => 400,
        "UNAUTHENTICATED" => 401,
        "PERMISSION_DENIED" => 403,
        "NOT_FOUND" => 404,
        "VALIDATION_ERROR" => 422,
        "UNAVAILABLE" => 503,
        _ => 500,
    }
}

/// `server` without a trailing `/`, if it is `https://…`, or `http://…` on loopback: a key
/// sent in the clear over a network is a key given away.
fn checked_base(server: &str) -> Result<String> {
    let trimmed = server.trim().trim_end_matches('/');
    let uri: Uri = trimmed
        .parse()
        .map_err(|e| ClientError::Address(format!("not a server address: {trimmed:?} ({e})")))?;
    let host = uri
        .host()
        .ok_or_else(|| ClientError::Address(format!("no host in {trimmed:?}")))?;
    if uri
        .path_and_query()
        .is_some_and(|p| p.as_str() != "/" && !p.as_str().is_empty())
    {
        return Err(ClientError::Address(format!(
            "give the server's address only, without a path: {trimmed:?}"
        )));
    }
    match uri.scheme_str() {
        Some("https") => Ok(trimmed.to_owned()),
        Some("http") if is_loopback(host) => Ok(trimmed.to_owned()),
        Some("http") => Err(ClientError::Address(format!(
            "{trimmed} is not on this computer: use https:// (keys and documents must not \
             cross a network unencrypted)"
        ))),
        _ => Err(ClientError::Address(format!(
            "{trimmed:?}: the address starts with https:// (or http:// for this computer)"
        ))),
    }
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn read_ca_file(path: &std::path::Path) -> Result<Vec<ureq::tls::Certificate<'static>>> {
    let fail = |reason: String| ClientError::CaFile {
        path: path.to_path_buf(),
        reason,
    };
    let pem = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
    let mut certs = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        if let PemItem::Certificate(c) = item.map_err(|e| fail(e.to_string()))? {
            certs.push(c);
        }
    }
    if certs.is_empty() {
        return Err(fail("no PEM certificate in it".into()));
    }
    Ok(certs)
}

/// What stays as it is in a path segment or query value (RFC 3986 unreserved characters).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes a path segment or query value.
fn encode(s: &str) -> String {
    utf8_percent_encode(s, COMPONENT).to_string()
}

/// The file name of a `Content-Disposition` header (`filename*=UTF-8''…` preferred).
fn disposition_name(header: &str) -> Option<String> {
    let mut plain = None;
    for part in header.split(';').map(str::trim) {
        if let Some(v) = part.strip_prefix("filename*=") {
            let v = v
                .strip_prefix("UTF-8''")
                .or_else(|| v.strip_prefix("utf-8''"))?;
            return decode(v);
        }
        if let Some(v) = part.strip_prefix("filename=") {
            plain = Some(v.trim_matches('"').to_owned());
        }
    }
    plain
}

fn decode(s: &str) -> Option<String> {
    percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|d| d.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_is_required_off_this_computer() {
        let table: &[(&str, Option<&str>)] = &[
            ("https://kb.example.com", Some("https://kb.example.com")),
            (
                "https://kb.example.com:8443/",
                Some("https://kb.example.com:8443"),
            ),
            ("http://127.0.0.1:7878", Some("http://127.0.0.1:7878")),
            ("http://localhost:7878/", Some("http://localhost:7878")),
            ("http://[::1]:7878", Some("http://[::1]:7878")),
            ("http://kb.example.com", None),
            ("http://10.0.0.5:7878", None),
            ("ftp://kb.example.com", None),
            ("kb.example.com", None),
            ("https://kb.example.com/api/v1", None),
            ("", None),
        ];
        for (input, want) in table {
            assert_eq!(checked_base(input).ok().as_deref(), *want, "{input}");
        }
        let err = checked_base("http://kb.example.com")
            .unwrap_err()
            .to_string();
        assert!(err.contains("https://"), "{err}");
    }

    #[test]
    fn error_bodies_become_errors_that_say_what_happened() {
        let e = api_error(
            Some(404),
            r#"{"error":{"code":"NOT_FOUND","message":"no document 7"},"trace_id":"t1"}"#,
        );
        assert_eq!(e.status(), Some(404));
        assert_eq!(e.to_string(), "no document 7 (NOT_FOUND, HTTP 404)");
        let e = api_error(None, r#"{"error":{"code":"UNAVAILABLE","message":"busy"}}"#);
        assert!(e.is_retryable());
        let e = api_error(Some(502), "<html>bad gateway</html>");
        assert_eq!(e.status(), Some(502));
        assert!(e.to_string().contains("bad gateway"));
    }

    #[test]
    fn names_and_values_are_encoded_both_ways() {
        assert_eq!(encode("a b/ü?&"), "a%20b%2F%C3%BC%3F%26");
        assert_eq!(
            disposition_name(r#"attachment; filename="x.pdf"; filename*=UTF-8''%E5%91%A8.pdf"#)
                .as_deref(),
            Some("周.pdf")
        );
        assert_eq!(
            disposition_name(r#"attachment; filename="plain.txt""#).as_deref(),
            Some("plain.txt")
        );
    }
}
