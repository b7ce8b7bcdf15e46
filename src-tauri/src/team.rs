//! The team knowledge base the app joins (`knowhub serve` on a server), through the typed
//! client of `knowhub-client`. The server checks every permission; this side only carries the
//! user's key and converts the server's answers into the window's views, so a joined window
//! shows team answers, citations and sources exactly like local ones.
//!
//! The key is kept in the OS keyring when the session has one (entry `knowhub` /
//! `team-key:<hash of the data directory>`, with a marker file saying so), else in
//! `team.key` beside the knowledge base, readable by this user only. It never goes into the
//! settings file.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use knowhub_agent::CancelFlag;
use knowhub_client::{AskEvent, AskRequest, Client, ClientError, ClientOptions};
use knowhub_engine::keyring::{OsKeyring, SecretVault, bounded};
use serde::{Deserialize, Serialize};

use crate::dto::*;
use crate::error::{CmdResult, CommandError};
use crate::library::Library;

/// Where the joined server is (in the settings file; the key is not).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct TeamSetting {
    pub server: String,
    /// A company CA to trust for this server instead of the system's roots.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Who writes the team's answers.
    #[serde(default)]
    pub answers: TeamAnswers,
}

/// The joined server: its address and a client signed in with the user's key.
#[derive(Debug, Clone)]
pub(crate) struct TeamLink {
    pub setting: TeamSetting,
    pub client: Client,
    /// `keyring` or `file`.
    pub key_store: &'static str,
}

impl TeamLink {
    /// A client for `setting` with `key` (nothing is sent yet).
    pub(crate) fn new(
        setting: TeamSetting,
        key: &str,
        key_store: &'static str,
    ) -> CmdResult<TeamLink> {
        let client = Client::new(
            &setting.server,
            key,
            ClientOptions {
                ca_file: setting.ca_file.clone(),
                ..ClientOptions::default()
            },
        )?;
        Ok(TeamLink {
            setting,
            client,
            key_store,
        })
    }

    /// Who the key signs in as, or why it cannot (for the banner and the settings pane).
    pub(crate) fn status(&self) -> TeamStatus {
        let mut status = TeamStatus {
            joined: true,
            server: Some(self.setting.server.clone()),
            state: "ok".into(),
            message: None,
            user: None,
            display_name: None,
            role: None,
            account: None,
            key_store: Some(self.key_store.into()),
            answers: self.setting.answers,
        };
        match self.client.me() {
            Ok(me) => {
                status.user = Some(me.user_id);
                status.display_name = Some(me.display_name);
                status.role = Some(me.role);
                status.account = Some(me.account_id);
            }
            Err(e) => {
                let error = CommandError::from(e);
                status.state = error.kind;
                status.message = Some(error.message);
            }
        }
        status
    }
}

/// What the window shows when no team is joined.
pub(crate) fn not_joined() -> TeamStatus {
    TeamStatus {
        joined: false,
        server: None,
        state: "not_joined".into(),
        message: None,
        user: None,
        display_name: None,
        role: None,
        account: None,
        key_store: None,
        answers: TeamAnswers::default(),
    }
}

impl From<ClientError> for CommandError {
    fn from(e: ClientError) -> Self {
        let kind = match &e {
            ClientError::Unreachable { .. } => "offline",
            ClientError::Tls { .. } | ClientError::CaFile { .. } => "tls",
            ClientError::Address(_) => "invalid_input",
            ClientError::Cancelled => "cancelled",
            ClientError::Write(_) | ClientError::Read { .. } => "io",
            ClientError::Protocol(_) => "internal",
            ClientError::Api { status, .. } => match status {
                401 => "unauthenticated",
                403 => "forbidden",
                404 => "not_found",
                409 | 413 | 422 | 400 => "invalid_input",
                429 | 503 => "offline",
                _ => "internal",
            },
        };
        CommandError::new(kind, e.to_string())
    }
}

// ----- the key -----------------------------------------------------------------------------

/// How long the keyring may take before the file is used (a locked keyring whose unlock
/// prompt nobody sees must not hang the app).
const KEYRING_TIMEOUT: Duration = Duration::from_secs(5);

fn key_file(data_dir: &Path) -> PathBuf {
    data_dir.join("team.key")
}

fn keyring_marker(data_dir: &Path) -> PathBuf {
    data_dir.join("team.key.keyring")
}

/// Runs `call` on this data directory's team-key entry, at most [`KEYRING_TIMEOUT`].
fn in_keyring<T: Send + 'static>(
    data_dir: &Path,
    call: impl FnOnce(&dyn SecretVault) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let entry = Arc::new(OsKeyring::of_data_dir(data_dir, "team-key"));
    bounded(entry, KEYRING_TIMEOUT, call)
}

pub(crate) fn io_error(path: &Path, e: std::io::Error) -> CommandError {
    CommandError::new("io", format!("{}: {e}", path.display()))
}

/// Keeps `key`: in the OS keyring when it takes it (checked by reading it back), else in a
/// file only this user can read. Returns where.
pub(crate) fn store_key(
    data_dir: &Path,
    key: &str,
    prefer_keyring: bool,
) -> CmdResult<&'static str> {
    forget_key(data_dir)?;
    if prefer_keyring {
        let secret = key.as_bytes().to_vec();
        let kept = in_keyring(data_dir, move |v| {
            v.write(&secret)?;
            v.read()
        });
        match kept {
            Ok(Some(back)) if back == key.as_bytes() => {
                let marker = keyring_marker(data_dir);
                std::fs::write(
                    &marker,
                    "The API key of the joined team server is in the OS keyring.\n",
                )
                .map_err(|e| io_error(&marker, e))?;
                return Ok("keyring");
            }
            Ok(_) => tracing::warn!("the keyring did not keep the team key; using a file"),
            Err(e) => tracing::info!("no keyring for the team key ({e}); using a file"),
        }
    }
    let path = key_file(data_dir);
    write_private(&path, key).map_err(|e| io_error(&path, e))?;
    Ok("file")
}

/// Writes `text` to `path`, readable by its owner only from the start.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The stored key and where it is; `None` when none is stored.
pub(crate) fn load_key(data_dir: &Path) -> CmdResult<Option<(String, &'static str)>> {
    if keyring_marker(data_dir).exists() {
        let read = in_keyring(data_dir, |v| v.read());
        return match read {
            Ok(Some(bytes)) => String::from_utf8(bytes)
                .map(|k| Some((k, "keyring")))
                .map_err(|_| {
                    CommandError::new("unauthenticated", "the stored team key is not text")
                }),
            Ok(None) => Err(CommandError::new(
                "unauthenticated",
                "the team key is missing from the OS keyring: join the team again",
            )),
            Err(e) => Err(CommandError::new(
                "unauthenticated",
                format!("the team key is in the OS keyring, which is not available ({e})"),
            )),
        };
    }
    let path = key_file(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some((text.trim().to_owned(), "file"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(&path, e)),
    }
}

/// Removes the stored key, wherever it is.
pub(crate) fn forget_key(data_dir: &Path) -> CmdResult<()> {
    let marker = keyring_marker(data_dir);
    if marker.exists() {
        in_keyring(data_dir, |v| v.remove())
            .map_err(|e| CommandError::new("io", format!("the OS keyring: {e}")))?;
        std::fs::remove_file(&marker).map_err(|e| io_error(&marker, e))?;
    }
    let path = key_file(data_dir);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error(&path, e)),
    }
}

// ----- dropping files into the team ---------------------------------------------------------

/// Files dropped into a team destination: sent one request per file (so the dialog can show
/// each file as the server reads it), then shared with `share` when given. `on_file` sees
/// each file's outcome. A file the server refuses (too large, a bad name) is reported as
/// failed and the others still go; when the server cannot be reached the files not yet sent
/// are reported failed with the reason (or, when none was sent, the call fails).
pub(crate) fn upload_dropped(
    link: &TeamLink,
    inputs: &[PathBuf],
    destination: Option<&str>,
    share: Option<&[String]>,
    on_file: &mut dyn FnMut(&DroppedFile),
) -> CmdResult<Vec<DroppedFile>> {
    let files = knowhub_client::UploadFile::expand(inputs)?;
    let mut results: Vec<DroppedFile> = Vec::new();
    let mut stopped: Option<String> = None;
    for file in files {
        let source = file.path.display().to_string();
        let row = if let Some(why) = &stopped {
            failed_drop(source, why.clone())
        } else {
            match link.client.upload(std::slice::from_ref(&file), destination) {
                Ok(report) => match report.files.into_iter().next() {
                    Some(sent) => shared(link, source, sent, share),
                    None => failed_drop(source, "the server reported no outcome".into()),
                },
                Err(
                    e @ ClientError::Api {
                        status: 400 | 409 | 413 | 422,
                        ..
                    },
                ) => failed_drop(source, e.to_string()),
                Err(ClientError::Read { source: why, .. }) => {
                    failed_drop(source, format!("cannot read it: {why}"))
                }
                Err(e) if results.is_empty() => return Err(e.into()),
                Err(e) => {
                    let why = format!("not sent: {e}");
                    stopped = Some(why.clone());
                    failed_drop(source, why)
                }
            }
        };
        on_file(&row);
        results.push(row);
    }
    Ok(results)
}

/// One uploaded file, shared with `share` when it was stored.
fn shared(
    link: &TeamLink,
    source: String,
    sent: knowhub_client::UploadedFile,
    share: Option<&[String]>,
) -> DroppedFile {
    let mut reason = sent.error;
    let stored = !matches!(sent.outcome.as_str(), "failed" | "skipped");
    if let Some(scopes) = share.filter(|_| stored)
        && let Err(e) = link.client.set_acl(&sent.path, Some(scopes))
    {
        reason = Some(format!("stored, but not shared: {e}"));
    }
    DroppedFile {
        source,
        stored_as: sent.path,
        outcome: sent.outcome,
        reason,
    }
}

fn failed_drop(source: String, reason: String) -> DroppedFile {
    DroppedFile {
        stored_as: String::new(),
        source,
        outcome: "failed".into(),
        reason: Some(reason),
    }
}

/// The team server's upload destinations, as the drop dialog lists them.
pub(crate) fn drop_targets(link: &TeamLink) -> CmdResult<Vec<DropTargetRow>> {
    Ok(link
        .client
        .upload_destinations()?
        .into_iter()
        .map(|d| DropTargetRow {
            base: Base::Team,
            kind: d.kind,
            name: d.name,
            path: d.path,
        })
        .collect())
}

// ----- the team's library ------------------------------------------------------------------

/// The team server as the window's [`Library`].
pub(crate) struct TeamLibrary {
    pub link: Arc<TeamLink>,
    /// Where documents opened in other apps are downloaded to.
    pub downloads: PathBuf,
}

/// A memory as the server sends it (`GET /api/v1/memory/node`'s shape).
#[derive(serde::Deserialize)]
struct ServerMemory {
    uri: String,
    kind: String,
    content: String,
    confidence: f64,
    confirmations: u32,
    project: Option<String>,
    found_by: String,
    updated_at_ms: i64,
}

fn memory_row(node: serde_json::Value) -> CmdResult<MemoryRow> {
    let m: ServerMemory = serde_json::from_value(node).map_err(|e| {
        CommandError::new(
            "protocol",
            format!("the team server sent a memory this app cannot read: {e}"),
        )
    })?;
    Ok(MemoryRow {
        uri: m.uri,
        kind: m.kind,
        content: m.content,
        confidence: m.confidence,
        confirmations: m.confirmations,
        project: m.project,
        found_by: m.found_by,
        updated_at_ms: m.updated_at_ms as f64,
    })
}

/// `kb://doc/<document>#chunk=<chunk>` → (document, chunk).
fn cited_ids(uri: &str) -> (Option<i64>, Option<i64>) {
    let Some(rest) = uri.strip_prefix("kb://doc/") else {
        return (None, None);
    };
    let (doc, chunk) = match rest.split_once("#chunk=") {
        Some((d, c)) => (d, Some(c)),
        None => (rest, None),
    };
    (doc.parse().ok(), chunk.and_then(|c| c.parse().ok()))
}

fn source_of(s: &knowhub_client::Source) -> Source {
    let (document_id, chunk_id) = cited_ids(&s.uri);
    Source {
        base: Base::Team,
        number: n32(s.number),
        evidence_id: s.evidence_id.clone(),
        kind: if document_id.is_some() {
            "doc_chunk".into()
        } else {
            "sql_result".into()
        },
        title: s.title.clone(),
        page: s.page,
        heading: s.heading.clone(),
        uri: s.uri.clone(),
        text: s.text.clone(),
        document_id,
        chunk_id,
        sql: None,
        authors: s.meta.authors.clone(),
        date: s.meta.date.clone(),
    }
}

/// The server's trace, as the window's view.
#[derive(Debug, Deserialize)]
struct ServerTrace {
    trace_id: String,
    question: String,
    #[serde(default)]
    standalone_question: String,
    #[serde(default)]
    conversation_summary: Option<String>,
    #[serde(default)]
    language: String,
    #[serde(default)]
    route: String,
    #[serde(default)]
    routed_by: String,
    #[serde(default)]
    stop_reason: String,
    #[serde(default)]
    perm_snapshot_id: String,
    #[serde(default)]
    total_ms: u64,
    #[serde(default)]
    steps: Vec<ServerStep>,
    #[serde(default)]
    evidence: Vec<ServerEvidence>,
    #[serde(default)]
    sql: Option<ServerSql>,
    #[serde(default)]
    rag_queries: Vec<String>,
    #[serde(default)]
    cut_sentences: Vec<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    tool_errors: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct ServerStep {
    node: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    timing_ms: u64,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ServerEvidence {
    evidence_id: String,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    page: Option<u32>,
    #[serde(default)]
    authz: String,
    #[serde(default)]
    score: Option<f32>,
    #[serde(default)]
    cited: bool,
    #[serde(default)]
    excerpt: String,
}

#[derive(Debug, Deserialize)]
struct ServerSql {
    source: String,
    sql: String,
    #[serde(default)]
    generated_by: String,
    #[serde(default)]
    preview: String,
}

impl Library for TeamLibrary {
    fn ask(
        &self,
        question: String,
        session: Option<String>,
        _brief: bool,
        cancel: &CancelFlag,
        on_event: &mut dyn FnMut(ChatEvent),
    ) -> CmdResult<Answer> {
        let request = AskRequest {
            question: question.clone(),
            session,
            project: None,
        };
        let answer = self.link.client.ask_streaming(&request, |e| {
            if cancel.is_cancelled() {
                return ControlFlow::Break(());
            }
            on_event(match e {
                AskEvent::Step {
                    node,
                    status,
                    timing_ms,
                } => ChatEvent::Step {
                    node,
                    status,
                    timing_ms: n32(timing_ms),
                },
                AskEvent::Token(text) => ChatEvent::Token { text },
                AskEvent::Replace(text) => ChatEvent::Replace { text },
            });
            ControlFlow::Continue(())
        })?;
        Ok(Answer {
            base: Base::Team,
            session_id: answer.session_id,
            trace_id: answer.trace_id,
            question,
            text: answer.answer,
            stop_reason: answer.stop_reason,
            route: answer.route,
            sources: answer.sources.iter().map(source_of).collect(),
            total_ms: n32(answer.total_ms),
            written_by: answer.written_by,
            model: answer.model,
            helpful: None,
            notice: None,
        })
    }

    fn conversations(&self) -> CmdResult<Vec<Conversation>> {
        Ok(self
            .link
            .client
            .conversations(200)?
            .into_iter()
            .map(|c| Conversation {
                id: c.id,
                title: c.title,
                updated_at_ms: c.updated_at_ms as f64,
            })
            .collect())
    }

    fn conversation(&self, id: &str) -> CmdResult<Vec<Answer>> {
        let conversation = self.link.client.conversation(id)?;
        Ok(conversation
            .turns
            .into_iter()
            .map(|t| Answer {
                base: Base::Team,
                session_id: Some(conversation.id.clone()),
                trace_id: t.trace_id,
                question: t.question,
                text: t.answer,
                stop_reason: t.stop_reason,
                route: t.route.unwrap_or_default(),
                sources: t.sources.iter().map(source_of).collect(),
                total_ms: 0,
                written_by: t.written_by.unwrap_or_default(),
                model: t.model,
                helpful: t.helpful,
                notice: None,
            })
            .collect())
    }

    fn delete_conversation(&self, id: &str) -> CmdResult<()> {
        Ok(self.link.client.delete_conversation(id)?)
    }

    fn trace(&self, trace_id: &str) -> CmdResult<TraceView> {
        let value = self.link.client.trace(trace_id)?;
        let t: ServerTrace = serde_json::from_value(value).map_err(|e| {
            CommandError::new("internal", format!("the server's trace is unreadable: {e}"))
        })?;
        Ok(TraceView {
            trace_id: t.trace_id,
            question: t.question,
            standalone_question: t.standalone_question,
            conversation_summary: t.conversation_summary,
            language: t.language,
            route: t.route,
            routed_by: t.routed_by,
            stop_reason: t.stop_reason,
            perm_snapshot_id: t.perm_snapshot_id,
            total_ms: n32(t.total_ms),
            steps: t
                .steps
                .into_iter()
                .map(|s| TraceStepView {
                    node: s.node,
                    action: s.action,
                    status: s.status,
                    timing_ms: n32(s.timing_ms),
                    error: s.error,
                })
                .collect(),
            evidence: t
                .evidence
                .into_iter()
                .map(|e| EvidenceView {
                    evidence_id: e.evidence_id,
                    kind: e.kind,
                    title: e.title,
                    page: e.page,
                    authz: e.authz,
                    score: e.score,
                    cited: e.cited,
                    excerpt: e.excerpt,
                })
                .collect(),
            sql: t.sql.map(|q| SqlView {
                source: q.source,
                sql: q.sql,
                generated_by: q.generated_by,
                preview: q.preview,
            }),
            rag_queries: t.rag_queries,
            cut_sentences: t.cut_sentences,
            model: t.model,
            prompt_tokens: n32(t.prompt_tokens),
            completion_tokens: n32(t.completion_tokens),
            tool_errors: t.tool_errors,
        })
    }

    fn send_feedback(&self, trace_id: &str, helpful: bool, note: &str) -> CmdResult<()> {
        Ok(self.link.client.feedback(&knowhub_client::Feedback {
            trace_id: trace_id.to_owned(),
            helpful,
            note: (!note.trim().is_empty()).then(|| note.to_owned()),
            cited: None,
        })?)
    }

    fn open_document(&self, id: i64) -> CmdResult<DocumentPreview> {
        let preview = self.link.client.preview(id)?;
        let d = preview.document;
        Ok(DocumentPreview {
            id: d.id,
            title: d.title,
            path: d.path,
            kind: d.kind,
            page_count: d.page_count,
            text: preview.text,
            passages: preview
                .passages
                .into_iter()
                .map(|p| PassageRef {
                    chunk_id: p.chunk_id,
                    page: p.page_start,
                    heading: p.heading_path,
                    char_start: n32(p.char_start),
                    char_end: n32(p.char_end),
                })
                .collect(),
        })
    }

    fn local_file(&self, id: i64) -> CmdResult<PathBuf> {
        let dir = self.downloads.join(id.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        let partial = dir.join(".download");
        let mut file = std::fs::File::create(&partial).map_err(|e| io_error(&partial, e))?;
        let info = self.link.client.download(id, &mut file)?;
        drop(file);
        // The server's name for it, without any directory part.
        let name = info
            .file_name
            .as_deref()
            .and_then(|n| Path::new(n).file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .unwrap_or_else(|| format!("document-{id}"));
        let path = dir.join(name);
        std::fs::rename(&partial, &path).map_err(|e| io_error(&path, e))?;
        Ok(path)
    }

    fn sources(&self, filter: Option<&str>) -> CmdResult<SourcesView> {
        let s = self.link.client.sources(filter)?;
        Ok(SourcesView {
            folders: s
                .folders
                .into_iter()
                .map(|f| FolderRow {
                    path: f.path,
                    documents: n32(f.documents),
                    watched: f.watched,
                })
                .collect(),
            documents: s
                .documents
                .into_iter()
                .map(|d| DocumentRow {
                    id: d.id,
                    title: d.title,
                    path: d.path,
                    kind: d.kind,
                    status: if d.index_pending {
                        "pending".into()
                    } else {
                        d.status
                    },
                    error: d.error,
                    chunks: n32(d.chunk_count),
                    updated_at_ms: d.updated_at_ms as f64,
                    owner: d.owner,
                })
                .collect(),
            total: n32(s.total),
            queue: QueueView {
                queued: n32(s.queue.queued),
                running: n32(s.queue.running),
                failed: n32(s.queue.failed),
                done: n32(s.queue.done),
                paused: s.queue.paused,
                failures: s
                    .queue
                    .failures
                    .into_iter()
                    .map(|f| JobFailure {
                        path: f.path,
                        error: f.error,
                    })
                    .collect(),
            },
        })
    }

    fn memories(&self) -> CmdResult<Vec<MemoryRow>> {
        let client = &self.link.client;
        let folder = format!("ctx://user/{}/memories", client.me()?.user_id);
        client
            .memories(&folder)?
            .into_iter()
            .map(memory_row)
            .collect()
    }

    fn forget_memory(&self, uri: &str) -> CmdResult<()> {
        Ok(self.link.client.forget_memory(uri)?)
    }

    fn remember(&self, conversation: &str) -> CmdResult<RememberReport> {
        let r = self.link.client.remember_conversation(conversation, None)?;
        let rows = |key: &str| -> CmdResult<Vec<MemoryRow>> {
            r[key]
                .as_array()
                .into_iter()
                .flatten()
                .cloned()
                .map(memory_row)
                .collect()
        };
        let count = |key: &str| n32(r[key].as_array().map_or(0, Vec::len));
        Ok(RememberReport {
            created: rows("created")?,
            confirmed: rows("confirmed")?,
            merged: count("merged"),
            skipped: count("skipped"),
            model: r["model"].as_str().map(str::to_owned),
            model_error: r["model_error"].as_str().map(str::to_owned),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_name_their_document_and_passage() {
        assert_eq!(cited_ids("kb://doc/12#chunk=340"), (Some(12), Some(340)));
        assert_eq!(cited_ids("kb://doc/12"), (Some(12), None));
        assert_eq!(cited_ids("sql://sales"), (None, None));
        assert_eq!(cited_ids("kb://doc/x#chunk=1"), (None, Some(1)));
    }

    #[test]
    fn a_key_file_is_private_and_forgotten_on_leaving() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load_key(dir.path()).unwrap(), None);
        assert_eq!(store_key(dir.path(), "kh_secret", false).unwrap(), "file");
        assert_eq!(
            load_key(dir.path()).unwrap(),
            Some(("kh_secret".to_owned(), "file"))
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(key_file(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        forget_key(dir.path()).unwrap();
        assert_eq!(load_key(dir.path()).unwrap(), None);
        forget_key(dir.path()).unwrap();
    }

    #[test]
    fn client_errors_become_kinds_the_window_explains() {
        let kind = |e: ClientError| CommandError::from(e).kind;
        assert_eq!(
            kind(ClientError::Unreachable {
                server: "s".into(),
                reason: "r".into()
            }),
            "offline"
        );
        let api = |status| ClientError::Api {
            status,
            code: "X".into(),
            message: "m".into(),
            trace_id: None,
        };
        assert_eq!(kind(api(401)), "unauthenticated");
        assert_eq!(kind(api(404)), "not_found");
        assert_eq!(kind(api(503)), "offline");
        assert_eq!(
            kind(ClientError::Tls {
                server: "s".into(),
                reason: "r".into()
            }),
            "tls"
        );
    }
}
