//! The MCP server behind `knowhub mcp`: the Model Context Protocol over stdio (newline-delimited
//! JSON-RPC 2.0), so MCP clients (desktop assistants, coding agents) search documents, ask the
//! copilot and save/find/update knowledge **as the user whose key started the server**.
//!
//! A small hand-written subset of the protocol (no SDK): `initialize`, `ping`, `tools/list`,
//! `tools/call`, and notifications (ignored). Protocol versions `2025-06-18` (preferred),
//! `2025-03-26` and `2024-11-05`.
//!
//! * **Permissions stay in the engine**: every tool calls the same [`Engine`]/[`Agent`]
//!   methods as the HTTP handlers ([`crate::copilot`], [`crate::knowledge`]) with the one
//!   [`RequestContext`] the server was started with.
//! * **Errors**: an unknown tool, a malformed request or an unknown method is a JSON-RPC
//!   error; arguments that do not fit a tool's schema and refusals from the engine are tool
//!   results with `isError: true` (the model can read and correct them). The server keeps
//!   running after any of them.
//! * **stdout carries protocol messages only**; logs go to stderr (`tracing`).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::Arc;

use knowhub_agent::knowledge::LlmRewriter;
use knowhub_agent::memory::LlmMemoryModel;
use knowhub_agent::{Agent, AgentOptions, AskRequest, CancelFlag};
use knowhub_engine::{
    CommitMessage, CommitWith, Engine, FeedbackCase, GroupCommitOptions, KnowledgeListOptions,
    KnowledgeQuery, KnowledgeUpdate, MemoryModel, MemorySpaces, NewKnowledge, RequestContext,
    SearchOptions,
};
use knowhub_llm::Llm;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::ApiError;

/// The protocol version answered when the client asks for one this server does not know.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Protocol versions this server speaks, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// Failures of the MCP server itself (not of a request).
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot read or write the MCP stream: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot encode an MCP message: {0}")]
    Encode(#[from] serde_json::Error),
}

/// One signed-in MCP session: the caller's engine, context and the answer model.
pub struct McpServer {
    engine: Arc<Engine>,
    ctx: RequestContext,
    llm: Option<Arc<dyn Llm>>,
    /// One copilot for the whole session (its schema cache serves every question).
    agent: Agent,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("ctx", &self.ctx)
            .field("llm", &self.llm.as_ref().map(|l| l.model_id()))
            .finish_non_exhaustive()
    }
}

/// Serves MCP on `reader`/`writer` (stdin/stdout for `knowhub mcp`) until the input ends.
pub fn run_stdio<R: BufRead, W: Write>(
    engine: Arc<Engine>,
    ctx: RequestContext,
    llm: Option<Arc<dyn Llm>>,
    reader: R,
    writer: W,
) -> Result<(), McpError> {
    McpServer::new(engine, ctx, llm).run(reader, writer)
}

fn rpc_error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

fn rpc_result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A tool result: readable text, the JSON as text, and the JSON as `structuredContent`.
fn tool_ok(text: String, data: Value) -> Value {
    let pretty = serde_json::to_string_pretty(&data).unwrap_or_else(|_| data.to_string());
    json!({
        "content": [{"type": "text", "text": text}, {"type": "text", "text": pretty}],
        "structuredContent": data,
        "isError": false,
    })
}

fn tool_error(message: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": message.into()}], "isError": true})
}

fn api_message(e: impl Into<ApiError>) -> String {
    let e: ApiError = e.into();
    format!("{}: {}", e.code.as_str(), e.message)
}

fn args<T: DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, String> {
    serde_json::from_value(arguments).map_err(|e| format!("invalid arguments for {tool}: {e}"))
}

// ----- tool arguments -----------------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Debug, Deserialize)]
struct AskArgs {
    question: String,
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct KnowledgeSearchArgs {
    query: String,
    #[serde(default)]
    top_k: Option<usize>,
    #[serde(default)]
    min_score: Option<u8>,
    #[serde(default)]
    types: Vec<String>,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct KnowledgeSaveArgs {
    content: String,
    #[serde(default)]
    task: String,
    #[serde(default)]
    types: Vec<String>,
    #[serde(default)]
    tags: BTreeMap<String, String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    score: Option<u8>,
}

#[derive(Debug, Deserialize)]
struct KnowledgeUpdateArgs {
    id: String,
    #[serde(default)]
    add_helpful_case: Option<FeedbackCase>,
    #[serde(default)]
    add_harmful_case: Option<FeedbackCase>,
    #[serde(default)]
    update_score: Option<u8>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    scopes: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct KnowledgeListArgs {
    limit: Option<usize>,
    offset: Option<usize>,
    types: Vec<String>,
    scopes: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct MemorySearchArgs {
    query: String,
    #[serde(default)]
    top_k: Option<usize>,
    #[serde(default)]
    group_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct MemoryCommitArgs {
    messages: Vec<String>,
    #[serde(default)]
    group_id: Option<String>,
    #[serde(default)]
    project_id: Option<String>,
}

fn string_list(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

fn tags_schema() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string"},
           "description": "key/value tags"})
}

fn case_schema(description: &str) -> Value {
    json!({"type": "object", "description": description, "properties": {
        "task": {"type": "string"}, "outcome": {"type": "string"},
        "reason": {"type": "string"}, "message_id": {"type": "string"}}})
}

/// The tools, with their JSON schemas (`tools/list`).
pub fn tool_definitions() -> Value {
    json!([
        {
            "name": "search",
            "title": "Search documents",
            "description": "Search the documents you may read. Returns passages with citations \
                (evidence id, title, path, pages, headings, snippet).",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                          "description": "passages to return (default 10)"}},
                "required": ["query"]},
        },
        {
            "name": "ask",
            "title": "Ask the copilot",
            "description": "Ask a question; the answer is grounded in the documents you may read \
                and cites its numbered sources.",
            "inputSchema": {"type": "object", "properties": {
                "question": {"type": "string"},
                "session_id": {"type": "string",
                               "description": "continue one of your conversations"}},
                "required": ["question"]},
        },
        {
            "name": "knowledge_search",
            "title": "Search knowledge",
            "description": "Search knowledge items visible to you, ranked by relevance and \
                quality (score + helpful - 2*harmful).",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string"},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 100,
                          "description": "items to return (default 5)"},
                "min_score": {"type": "integer", "minimum": 1, "maximum": 5,
                              "description": "drop items scored below (default 3)"},
                "types": string_list("any of these types (user_profile, strategy, tool, \
                    usecase, definition, plan)"),
                "tags": tags_schema()},
                "required": ["query"]},
        },
        {
            "name": "knowledge_save",
            "title": "Save knowledge",
            "description": "Save a knowledge item owned by you. Scopes say who may read it \
                (default: only you, user:<you>); you may only use scopes you belong to \
                (e.g. public, team:<name>, project:<name>).",
            "inputSchema": {"type": "object", "properties": {
                "content": {"type": "string"},
                "task": {"type": "string", "description": "the task it came from"},
                "types": string_list("at least one of user_profile, strategy, tool, usecase, \
                    definition, plan"),
                "tags": tags_schema(),
                "scopes": string_list("who may read it"),
                "score": {"type": "integer", "minimum": 1, "maximum": 5,
                          "description": "quality 1-5 (default 3)"}},
                "required": ["content", "types"]},
        },
        {
            "name": "knowledge_update",
            "title": "Update knowledge",
            "description": "Give feedback on a knowledge item (helpful/harmful case: any reader) \
                or change its score, content or scopes (owner only).",
            "inputSchema": {"type": "object", "properties": {
                "id": {"type": "string", "description": "knowledge-{timestamp}-{random}"},
                "add_helpful_case": case_schema("a case where it helped"),
                "add_harmful_case": case_schema("a case where it misled"),
                "update_score": {"type": "integer", "minimum": 1, "maximum": 5},
                "content": {"type": "string"},
                "scopes": string_list("who may read it")},
                "required": ["id"]},
        },
        {
            "name": "knowledge_list",
            "title": "List knowledge",
            "description": "Knowledge items visible to you, newest first.",
            "inputSchema": {"type": "object", "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": 1000,
                          "description": "default 10"},
                "offset": {"type": "integer", "minimum": 0},
                "types": string_list("any of these types"),
                "scopes": string_list("only items carrying one of these scopes")}},
        },
        {
            "name": "memory_search",
            "title": "Search memories",
            "description": "What KnowHub remembers about you (preferences, habits, background, \
                constraints) and, with group_id, your group's shared decisions — most similar \
                to the query first.",
            "inputSchema": {"type": "object", "properties": {
                "query": {"type": "string"},
                "top_k": {"type": "integer", "minimum": 1, "maximum": 100,
                          "description": "memories to return (default 10)"},
                "group_id": {"type": "string",
                             "description": "also search this group's shared memories"}},
                "required": ["query"]},
        },
        {
            "name": "memory_commit",
            "title": "Remember",
            "description": "Remember what you said about yourself in these messages (\"I prefer \
                ...\", \"我习惯...\", and with the server's language model what else is worth \
                remembering); with group_id, file shared conclusions (\"We decided ...\") in \
                that group's space; with project_id, the memories apply to that project.",
            "inputSchema": {"type": "object", "properties": {
                "messages": string_list("your messages, in order"),
                "group_id": {"type": "string"},
                "project_id": {"type": "string"}},
                "required": ["messages"]},
        },
    ])
}

fn item_line(item: &Value) -> String {
    let s = |k: &str| item[k].as_str().unwrap_or_default().to_owned();
    let scopes: Vec<&str> = item["scopes"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = s("content");
    if content.chars().count() > 300 {
        content = content.chars().take(300).collect::<String>() + "…";
    }
    format!(
        "{} (owner {}, scopes {}, score {}): {}",
        s("id"),
        s("owner"),
        scopes.join(", "),
        item["eval"]["score"],
        content
    )
}

impl McpServer {
    /// `llm`: the model that writes answers (`None`: extractive answers).
    pub fn new(engine: Arc<Engine>, ctx: RequestContext, llm: Option<Arc<dyn Llm>>) -> McpServer {
        let agent = Agent::new(Arc::clone(&engine), llm.clone(), AgentOptions::default());
        McpServer {
            engine,
            ctx,
            llm,
            agent,
        }
    }

    /// Reads newline-delimited JSON-RPC messages until the input ends; answers each request
    /// on its own line.
    pub fn run<R: BufRead, W: Write>(&self, reader: R, mut writer: W) -> Result<(), McpError> {
        for line in reader.lines() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            if let Some(reply) = self.handle_line(&line) {
                serde_json::to_writer(&mut writer, &reply)?;
                writer.write_all(b"\n")?;
                writer.flush()?;
            }
        }
        Ok(())
    }

    /// The reply to one line (`None` for notifications and responses).
    pub fn handle_line(&self, line: &str) -> Option<Value> {
        match serde_json::from_str::<Value>(line) {
            Err(e) => Some(rpc_error(
                Value::Null,
                PARSE_ERROR,
                format!("parse error: {e}"),
            )),
            Ok(Value::Array(batch)) => {
                if batch.is_empty() {
                    return Some(rpc_error(Value::Null, INVALID_REQUEST, "empty batch"));
                }
                let replies: Vec<Value> = batch.iter().filter_map(|m| self.handle(m)).collect();
                (!replies.is_empty()).then_some(Value::Array(replies))
            }
            Ok(message) => self.handle(&message),
        }
    }

    /// The reply to one message (`None` for notifications and responses).
    pub fn handle(&self, message: &Value) -> Option<Value> {
        let Some(object) = message.as_object() else {
            return Some(rpc_error(
                Value::Null,
                INVALID_REQUEST,
                "a message is a JSON object",
            ));
        };
        let id = object.get("id").cloned();
        let Some(method) = object.get("method").and_then(Value::as_str) else {
            // A response to something we never ask, or garbage with an id.
            return match id {
                Some(id) if !object.contains_key("result") && !object.contains_key("error") => {
                    Some(rpc_error(id, INVALID_REQUEST, "missing method"))
                }
                _ => None,
            };
        };
        let params = object.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = id else {
            // Notifications (`notifications/initialized`, `notifications/cancelled`, …).
            tracing::debug!("mcp notification {method}");
            return None;
        };
        if !(id.is_string() || id.is_number()) {
            return Some(rpc_error(
                Value::Null,
                INVALID_REQUEST,
                "the id is a string or a number",
            ));
        }
        Some(match method {
            "initialize" => rpc_result(id, self.initialize(&params)),
            "ping" => rpc_result(id, json!({})),
            "tools/list" => rpc_result(id, json!({ "tools": tool_definitions() })),
            "tools/call" => match self.call(&params) {
                Ok(result) => rpc_result(id, result),
                Err(message) => rpc_error(id, INVALID_PARAMS, message),
            },
            "resources/list" => rpc_result(id, json!({ "resources": [] })),
            "prompts/list" => rpc_result(id, json!({ "prompts": [] })),
            other => rpc_error(id, METHOD_NOT_FOUND, format!("method not found: {other}")),
        })
    }

    fn initialize(&self, params: &Value) -> Value {
        let asked = params["protocolVersion"].as_str().unwrap_or_default();
        let version = SUPPORTED_VERSIONS
            .iter()
            .find(|v| **v == asked)
            .copied()
            .unwrap_or(PROTOCOL_VERSION);
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "knowhub", "title": "KnowHub",
                           "version": env!("CARGO_PKG_VERSION")},
            "instructions": "KnowHub: search documents and ask questions with citations, and \
                save, find and give feedback on knowledge items, with the permissions of the \
                user whose API key started this server.",
        })
    }

    /// `tools/call`: `Err` is a protocol error (no such tool, malformed params); refusals and
    /// bad arguments are `isError` results.
    fn call(&self, params: &Value) -> Result<Value, String> {
        let name = params["name"]
            .as_str()
            .ok_or("tools/call needs params.name")?;
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(a @ Value::Object(_)) => a.clone(),
            Some(_) => return Ok(tool_error("the arguments are a JSON object")),
        };
        let outcome = match name {
            "search" => self.search(arguments),
            "ask" => self.ask(arguments),
            "knowledge_search" => self.knowledge_search(arguments),
            "knowledge_save" => self.knowledge_save(arguments),
            "knowledge_update" => self.knowledge_update(arguments),
            "knowledge_list" => self.knowledge_list(arguments),
            "memory_search" => self.memory_search(arguments),
            "memory_commit" => self.memory_commit(arguments),
            other => return Err(format!("unknown tool: {other}")),
        };
        Ok(outcome.unwrap_or_else(tool_error))
    }

    fn search(&self, arguments: Value) -> Result<Value, String> {
        let a: SearchArgs = args("search", arguments)?;
        let d = SearchOptions::default();
        let opts = SearchOptions {
            limit: a.limit.unwrap_or(d.limit).clamp(1, 100),
            ..d
        };
        let hits = self
            .engine
            .search(&self.ctx, &a.query, &opts)
            .map_err(api_message)?;
        let mut text = format!("{} passage(s) for {:?}", hits.len(), a.query);
        for h in &hits {
            let pages = match (h.page_start, h.page_end) {
                (Some(s), Some(e)) if e != s => format!(", pages {s}-{e}"),
                (Some(s), _) => format!(", page {s}"),
                _ => String::new(),
            };
            let heading = if h.heading_path.is_empty() {
                String::new()
            } else {
                format!(" › {}", h.heading_path.join(" › "))
            };
            text.push_str(&format!(
                "\n\n[{}] {}{} ({}{})\n{}\nevidence: {}",
                h.rank, h.title, heading, h.path, pages, h.snippet, h.evidence_id
            ));
        }
        let count = hits.len();
        Ok(tool_ok(text, json!({ "hits": hits, "count": count })))
    }

    fn ask(&self, arguments: Value) -> Result<Value, String> {
        let a: AskArgs = args("ask", arguments)?;
        let question = a.question.trim().to_owned();
        if question.is_empty() {
            return Err("the question is empty".into());
        }
        let model = self.llm.as_ref().map(|l| l.model_id().to_owned());
        let request = AskRequest {
            question,
            session: a.session_id.filter(|s| !s.is_empty()),
            ephemeral: false,
            project: None,
            cancel: CancelFlag::new(),
        };
        let outcome = self
            .agent
            .ask(&self.ctx, &request, &mut |_| {})
            .map_err(api_message)?;
        let s = &outcome.state;
        let mut text = s.output.final_answer.clone();
        if !s.output.rendered_sources.is_empty() {
            text.push_str("\n\nSources:");
            for src in &s.output.rendered_sources {
                let page = src.page.map(|p| format!(", page {p}")).unwrap_or_default();
                text.push_str(&format!(
                    "\n[{}] {} ({}{}) evidence: {}",
                    src.number, src.title, src.uri, page, src.evidence_id
                ));
            }
        }
        let data = json!({
            "answer": s.output.final_answer,
            "sources": s.output.rendered_sources,
            "route": s.plan.route.as_str(),
            "stop_reason": s.output.stop_reason.as_str(),
            "written_by": s.draft.written_by,
            "model": model,
            "session_id": outcome.session_id,
            "trace_id": outcome.trace_id,
            "total_ms": outcome.total_ms,
        });
        Ok(tool_ok(text, data))
    }

    fn knowledge_search(&self, arguments: Value) -> Result<Value, String> {
        let a: KnowledgeSearchArgs = args("knowledge_search", arguments)?;
        let d = KnowledgeQuery::default();
        let opts = KnowledgeQuery {
            types: a.types,
            tags: a.tags,
            scopes: Vec::new(),
            limit: a.top_k.unwrap_or(d.limit),
            min_score: a.min_score.unwrap_or(d.min_score),
        };
        let hits = self
            .engine
            .knowledge_search(&self.ctx, &a.query, &opts)
            .map_err(api_message)?;
        let results = json!(hits);
        let mut text = format!("{} knowledge item(s) for {:?}", hits.len(), a.query);
        for h in results.as_array().into_iter().flatten() {
            text.push_str(&format!(
                "\n- {} [quality {}]",
                item_line(h),
                h["quality_score"]
            ));
        }
        let count = hits.len();
        Ok(tool_ok(text, json!({ "results": results, "count": count })))
    }

    fn knowledge_save(&self, arguments: Value) -> Result<Value, String> {
        let a: KnowledgeSaveArgs = args("knowledge_save", arguments)?;
        let new = NewKnowledge {
            task: a.task,
            content: a.content,
            types: a.types,
            tags: a.tags,
            scopes: a.scopes,
            score: a.score,
            ..NewKnowledge::default()
        };
        let item = self
            .engine
            .knowledge_save(&self.ctx, new)
            .map_err(api_message)?;
        let item = json!(item);
        Ok(tool_ok(format!("saved {}", item_line(&item)), item))
    }

    fn knowledge_update(&self, arguments: Value) -> Result<Value, String> {
        let a: KnowledgeUpdateArgs = args("knowledge_update", arguments)?;
        let update = KnowledgeUpdate {
            add_helpful_case: a.add_helpful_case,
            add_harmful_case: a.add_harmful_case,
            update_score: a.update_score,
            content: a.content,
            scopes: a.scopes,
            ..KnowledgeUpdate::default()
        };
        let rewriter = self.llm.clone().map(LlmRewriter::new);
        let item = self
            .engine
            .knowledge_update(
                &self.ctx,
                &a.id,
                &update,
                rewriter
                    .as_ref()
                    .map(|r| r as &dyn knowhub_engine::Rewriter),
            )
            .map_err(api_message)?;
        let item = json!(item);
        Ok(tool_ok(format!("updated {}", item_line(&item)), item))
    }

    fn knowledge_list(&self, arguments: Value) -> Result<Value, String> {
        let a: KnowledgeListArgs = args("knowledge_list", arguments)?;
        let d = KnowledgeListOptions::default();
        let opts = KnowledgeListOptions {
            types: a.types,
            scopes: a.scopes,
            limit: a.limit.unwrap_or(d.limit),
            offset: a.offset.unwrap_or(0),
            ..d
        };
        let items = self
            .engine
            .knowledge_list(&self.ctx, &opts)
            .map_err(api_message)?;
        let results = json!(items);
        let mut text = format!("{} knowledge item(s)", items.len());
        for item in results.as_array().into_iter().flatten() {
            text.push_str(&format!("\n- {}", item_line(item)));
        }
        let count = items.len();
        Ok(tool_ok(text, json!({ "results": results, "count": count })))
    }

    fn memory_search(&self, arguments: Value) -> Result<Value, String> {
        let a: MemorySearchArgs = args("memory_search", arguments)?;
        let spaces = MemorySpaces {
            group_id: a.group_id,
            exclude_private: false,
        };
        let hits = self
            .engine
            .memory_search_in(&self.ctx, &a.query, &[], a.top_k.unwrap_or(10), &spaces)
            .map_err(api_message)?;
        let mut text = format!(
            "{} memor{}",
            hits.len(),
            if hits.len() == 1 { "y" } else { "ies" }
        );
        for (n, _) in &hits {
            text.push_str(&format!("\n- [{}] {} ({})", n.kind, n.content, n.uri));
        }
        let results: Vec<Value> = hits
            .iter()
            .map(|(n, score)| {
                let mut v = json!(n);
                v["score"] = json!(score);
                v
            })
            .collect();
        Ok(tool_ok(text, json!({ "results": results })))
    }

    fn memory_commit(&self, arguments: Value) -> Result<Value, String> {
        let a: MemoryCommitArgs = args("memory_commit", arguments)?;
        let messages: Vec<CommitMessage> =
            a.messages.into_iter().map(CommitMessage::mine).collect();
        let options = a.group_id.as_deref().map(GroupCommitOptions::new);
        let model = self.llm.clone().map(LlmMemoryModel::new);
        let with = CommitWith {
            group: options.as_ref(),
            project: a.project_id.as_deref().filter(|p| !p.is_empty()),
            model: model.as_ref().map(|m| m as &dyn MemoryModel),
        };
        let report = self
            .engine
            .memory_commit_with(&self.ctx, &messages, "mcp", &with)
            .map_err(api_message)?;
        let mut text = format!(
            "{} new, {} confirmed, {} not kept",
            report.created.len(),
            report.confirmed.len(),
            report.skipped.len()
        );
        for n in report.created.iter().chain(&report.confirmed) {
            text.push_str(&format!("\n- [{}] {} ({})", n.kind, n.content, n.uri));
        }
        Ok(tool_ok(text, json!(report)))
    }
}
