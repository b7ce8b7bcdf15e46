//! `knowhub mcp`: the MCP server on stdio, driven as a child process with two users' keys.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};

use serde_json::{Value, json};

fn knowhub(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_knowhub"))
        .arg("--data-dir")
        .arg(data)
        .args(["--embedder", "off"])
        .args(args)
        .env_remove("KNOWHUB_API_KEY")
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// One `knowhub mcp` process and its protocol streams.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
}

impl Mcp {
    fn start(data: &Path, key: &str) -> Mcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_knowhub"))
            .arg("--data-dir")
            .arg(data)
            .args(["--embedder", "off", "--llm", "off", "mcp"])
            .env("KNOWHUB_API_KEY", key)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Mcp {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        );
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "knowhub", "{init}");
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request; the next stdout line must be its JSON-RPC response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"));
        assert_eq!(reply["jsonrpc"], "2.0", "{reply}");
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    /// A successful tool call's result (`isError: false`).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &reply["result"];
        assert_eq!(result["isError"], false, "{reply}");
        assert_eq!(result["content"][0]["type"], "text", "{reply}");
        assert!(result["content"][0]["text"].is_string(), "{reply}");
        result.clone()
    }

    /// Ends the input; the server exits cleanly having written nothing more.
    fn finish(mut self) {
        drop(self.stdin.take());
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        assert!(rest.is_empty(), "stray stdout: {rest:?}");
        assert!(self.child.wait().unwrap().success());
    }
}

fn key_of(out: &str) -> String {
    serde_json::from_str::<Value>(out).unwrap()["api_key"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn file_names(hits: &Value) -> Vec<String> {
    let mut names: Vec<String> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            Path::new(h["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn mcp_tools_under_the_callers_permissions() {
    let kb = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root = kb.path();
    std::fs::create_dir_all(root.join("handbook")).unwrap();
    std::fs::create_dir_all(root.join("hr")).unwrap();
    std::fs::write(
        root.join("handbook/leave.md"),
        "# Leave\n\nEvery employee gets 25 days of probeword annual leave per year.",
    )
    .unwrap();
    std::fs::write(
        root.join("hr/salaries.md"),
        "# Salaries\n\nThe probeword salary bands are confidential.",
    )
    .unwrap();
    let d = data.path();
    ok(&knowhub(d, &["ingest", root.to_str().unwrap()]));
    ok(&knowhub(
        d,
        &[
            "acl",
            "set",
            root.join("handbook").to_str().unwrap(),
            "public",
        ],
    ));
    ok(&knowhub(
        d,
        &["acl", "set", root.join("hr").to_str().unwrap(), "team:hr"],
    ));
    let alice = key_of(&ok(&knowhub(d, &["--json", "user", "add", "alice"])));
    let bob = key_of(&ok(&knowhub(d, &["--json", "user", "add", "bob"])));
    ok(&knowhub(d, &["user", "join", "bob", "team:hr"]));

    // Alice: the handshake, the tools, document search and ask within her permissions.
    let mut a = Mcp::start(d, &alice);
    let tools = a.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in [
        "search",
        "ask",
        "knowledge_search",
        "knowledge_save",
        "knowledge_update",
        "knowledge_list",
        "memory_search",
        "memory_commit",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    for t in tools["result"]["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    assert_eq!(a.request("ping", json!({}))["result"], json!({}));

    let found = a.call("search", json!({"query": "probeword", "limit": 20}));
    assert_eq!(
        file_names(&found["structuredContent"]["hits"]),
        ["leave.md"]
    );
    assert!(
        found["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("evidence: doc:"),
        "{found}"
    );

    let answer = a.call(
        "ask",
        json!({"question": "How many days of probeword annual leave?"}),
    );
    let answer_json = &answer["structuredContent"];
    assert_eq!(answer_json["written_by"], "extractive", "{answer}");
    let sources = answer_json["sources"].as_array().unwrap();
    assert!(!sources.is_empty(), "{answer}");
    assert!(
        sources
            .iter()
            .all(|s| !s["uri"].as_str().unwrap_or_default().contains("salaries")),
        "{answer}"
    );
    let text = answer["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("25") && text.contains("Sources:"), "{text}");

    // Knowledge: a private item and a public one, both Alice's.
    let private = a.call(
        "knowledge_save",
        json!({"content": "probeword private deploy checklist of alice", "types": ["strategy"]}),
    );
    let private_id = private["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(private["structuredContent"]["owner"], "alice", "{private}");
    let public = a.call(
        "knowledge_save",
        json!({"content": "probeword public deploy checklist", "types": ["strategy"],
               "scopes": ["public"], "score": 4}),
    );
    let public_id = public["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mine = a.call(
        "knowledge_search",
        json!({"query": "probeword deploy checklist"}),
    );
    assert_eq!(mine["structuredContent"]["count"], 2, "{mine}");
    let listed = a.call("knowledge_list", json!({}));
    assert_eq!(listed["structuredContent"]["count"], 2, "{listed}");
    let updated = a.call(
        "knowledge_update",
        json!({"id": private_id, "update_score": 5, "content": "probeword private deploy checklist v2"}),
    );
    assert_eq!(
        updated["structuredContent"]["eval"]["score"], 5,
        "{updated}"
    );

    // Errors leave the server running.
    let unknown = a.request(
        "tools/call",
        json!({"name": "no_such_tool", "arguments": {}}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let bad = a.request(
        "tools/call",
        json!({"name": "search", "arguments": {"query": 5}}),
    );
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    let missing = a.request(
        "tools/call",
        json!({"name": "knowledge_save", "arguments": {}}),
    );
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    let method = a.request("no/such/method", json!({}));
    assert_eq!(method["error"]["code"], -32601, "{method}");
    assert_eq!(a.request("ping", json!({}))["result"], json!({}));

    // Bob, in a second server process with his key: Alice's public item, not her private one.
    let mut b = Mcp::start(d, &bob);
    let seen = b.call(
        "knowledge_search",
        json!({"query": "probeword deploy checklist"}),
    );
    let ids: Vec<&str> = seen["structuredContent"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [public_id.as_str()], "{seen}");
    // Bob may not change Alice's item; feedback is open to every reader.
    let refused = b.request(
        "tools/call",
        json!({"name": "knowledge_update", "arguments": {"id": public_id, "update_score": 1}}),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let hidden = b.request(
        "tools/call",
        json!({"name": "knowledge_update", "arguments": {"id": private_id, "update_score": 1}}),
    );
    assert_eq!(hidden["result"]["isError"], true, "{hidden}");
    b.call(
        "knowledge_update",
        json!({"id": public_id, "add_helpful_case": {"task": "deploy", "outcome": "ok"}}),
    );
    // Bob's team sees the HR document too.
    let found = b.call("search", json!({"query": "probeword", "limit": 20}));
    assert_eq!(
        file_names(&found["structuredContent"]["hits"]),
        ["leave.md", "salaries.md"]
    );
    // Memories through MCP: Alice's are hers; a group's shared ones reach its members only.
    let committed = a.call(
        "memory_commit",
        json!({"messages": ["I prefer answers as tables.", "我习惯早上看邮件。"]}),
    );
    assert_eq!(
        committed["structuredContent"]["created"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{committed}"
    );
    ok(&knowhub(
        d,
        &[
            "group",
            "create",
            "ops",
            "--member",
            "alice:owner",
            "--member",
            "bob:readonly",
        ],
    ));
    let shared = a.call(
        "memory_commit",
        json!({"messages": ["We decided to freeze deploys on Fridays."], "group_id": "ops"}),
    );
    assert_eq!(
        shared["structuredContent"]["created"][0]["group_id"], "ops",
        "{shared}"
    );
    let mine = a.call("memory_search", json!({"query": "tables"}));
    assert!(
        mine["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("answers as tables"),
        "{mine}"
    );
    let seen = b.call(
        "memory_search",
        json!({"query": "tables Fridays", "group_id": "ops"}),
    );
    let text = seen["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("freeze deploys") && !text.contains("tables"),
        "{seen}"
    );
    let readonly = b.request(
        "tools/call",
        json!({"name": "memory_commit", "arguments": {"messages": ["We decided to drop the freeze."], "group_id": "ops"}}),
    );
    assert_eq!(readonly["result"]["isError"], true, "{readonly}");
    b.finish();
    a.finish();
}
