//! The HTTP API against a real server on 127.0.0.1 (a fresh data directory, keyword-only
//! search, extractive answers — no model files), driven with a real HTTP client.

#![allow(clippy::unwrap_used, clippy::type_complexity)]

use std::collections::BTreeSet;

use knowhub_engine::authz::{Role, ScopeSet, UserId};
use knowhub_engine::{EngineConfig, Hub, IngestOptions, ModelConfig, dev_context};
use knowhub_server::ServerState;
use serde_json::{Value, json};

struct Server {
    base: String,
    http: ureq::Agent,
    root: String,
    alice: String,
    bob: String,
    carol: String,
    _dir: tempfile::TempDir,
}

struct Reply {
    status: u16,
    content_type: String,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    /// Asserts the seed 003 §9.2 error body with this status and code.
    fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        let v = self.json();
        assert_eq!(v["error"]["code"], code, "{}", self.text);
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
        assert!(v["trace_id"].as_str().is_some_and(|t| !t.is_empty()));
    }
}

fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("public")).unwrap();
    std::fs::create_dir_all(docs.join("hr")).unwrap();
    std::fs::create_dir_all(docs.join("alpha")).unwrap();
    std::fs::write(
        docs.join("alpha/launch.md"),
        "# Launch checklist\n\nThe KESTREL launch checklist has twelve steps.",
    )
    .unwrap();
    std::fs::write(
        docs.join("public/handbook.md"),
        "# Handbook\n\n## Leave\n\nEmployees get fifteen days of annual leave per year. \
         Leave requests need two weeks notice.",
    )
    .unwrap();
    std::fs::write(
        docs.join("hr/salaries.md"),
        "# Salary bands\n\nThe confidential salary band for engineers is 90k to 120k per year.",
    )
    .unwrap();
    let mut config = EngineConfig::new(dir.path().join("data"));
    config.models = ModelConfig::keyword_only();
    let hub = Hub::open(config).unwrap();
    let dev = dev_context();
    let engine = hub.engine(&dev).unwrap();
    engine
        .ingest(
            &dev,
            std::slice::from_ref(&docs),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    let public: ScopeSet = "public".parse().unwrap();
    engine
        .set_folder_acl(&dev, &docs.join("public"), Some(&public))
        .unwrap();
    let hr: ScopeSet = "team:hr".parse().unwrap();
    engine
        .set_folder_acl(&dev, &docs.join("hr"), Some(&hr))
        .unwrap();
    // Shared with a group space that does not exist yet: nobody but administrators sees it
    // until the group is created (the group test).
    let alpha: ScopeSet = "group:grp_alpha".parse().unwrap();
    engine
        .set_folder_acl(&dev, &docs.join("alpha"), Some(&alpha))
        .unwrap();
    let key = |id: &str, role: Role| {
        let uid = UserId::new(id).unwrap();
        assert!(engine.add_user(&dev, &uid, id, role).unwrap());
        engine
            .rotate_api_key(&dev, &uid)
            .unwrap()
            .secret()
            .to_owned()
    };
    let alice = key("alice", Role::User);
    let bob = key("bob", Role::User);
    let carol = key("carol", Role::Admin);
    // Production mode: every request needs a key.
    let root = hub.init_root_key(&dev).unwrap().secret().to_owned();
    let state = ServerState::new(hub, None);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        rt.block_on(knowhub_server::serve_on(
            listener,
            state,
            std::future::pending(),
        ))
    });
    let http = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build(),
    );
    Server {
        base: format!("http://{addr}"),
        http,
        root,
        alice,
        bob,
        carol,
        _dir: dir,
    }
}

impl Server {
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        self.request_on(&self.http, method, path, headers, body)
    }

    fn request_on(
        &self,
        http: &ureq::Agent,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Reply {
        let mut b = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let mut resp = match body {
            Some(text) => {
                if !headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                {
                    b = b.header("content-type", "application/json");
                }
                http.run(b.body(text.to_owned()).unwrap()).unwrap()
            }
            None => http.run(b.body(()).unwrap()).unwrap(),
        };
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let text = resp
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_string()
            .unwrap();
        Reply {
            status: resp.status().as_u16(),
            content_type,
            text,
        }
    }

    /// With `key` as `X-API-Key`.
    fn call(&self, method: &str, path: &str, key: &str, body: Option<Value>) -> Reply {
        let text = body.map(|b| b.to_string());
        self.request(method, path, &[("x-api-key", key)], text.as_deref())
    }

    fn save(&self, key: &str, body: Value) -> Value {
        let r = self.call("POST", "/api/knowledge", key, Some(body));
        assert_eq!(r.status, 201, "{}", r.text);
        r.json()
    }
}

fn ids(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn health_needs_no_key_and_openapi_lists_every_route() {
    let s = start();
    let r = s.request("GET", "/api/v1/health", &[], None);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "ok");
    assert_eq!(r.json()["store"], "sqlite");
    assert!(r.json().get("database").is_none());

    let r = s.request("GET", "/openapi.json", &[], None);
    assert_eq!(r.status, 200);
    let doc = r.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let mut listed = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            if ["get", "post", "put", "delete", "patch"].contains(&method.as_str()) {
                listed.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    let expected: BTreeSet<String> = [
        "GET /api/v1/health",
        "GET /api/v1/uploads",
        "POST /api/v1/uploads",
        "GET /api/knowledge",
        "POST /api/knowledge",
        "GET /api/knowledge/search",
        "POST /api/knowledge/search",
        "POST /api/knowledge/save",
        "GET /api/knowledge/list",
        "POST /api/knowledge/update",
        "POST /api/knowledge/batch_update",
        "POST /api/knowledge/slim",
        "GET /api/knowledge/{id}",
        "PUT /api/knowledge/{id}",
        "DELETE /api/knowledge/{id}",
        "GET /api/knowledge/{id}/versions",
        "POST /api/v1/memory/commit",
        "POST /api/v1/memory/search",
        "GET /api/v1/memory/read",
        "GET /api/v1/memory/node",
        "DELETE /api/v1/memory/node",
        "GET /api/v1/memory/children",
        "GET /api/v1/groups",
        "POST /api/v1/groups",
        "GET /api/v1/groups/{group_id}",
        "DELETE /api/v1/groups/{group_id}",
        "POST /api/v1/groups/{group_id}/members",
        "DELETE /api/v1/groups/{group_id}/members/{user_id}",
        "GET /api/resource",
        "POST /api/resource",
        "GET /api/resource/{id}",
        "PUT /api/resource/{id}",
        "DELETE /api/resource/{id}",
        "POST /api/v1/search",
        "POST /api/v1/ask",
        "GET /api/v1/models",
        "GET /api/v1/admin/accounts",
        "POST /api/v1/admin/accounts",
        "DELETE /api/v1/admin/accounts/{account_id}",
        "GET /api/v1/admin/accounts/{account_id}/users",
        "POST /api/v1/admin/accounts/{account_id}/users",
        "DELETE /api/v1/admin/accounts/{account_id}/users/{user_id}",
        "PUT /api/v1/admin/accounts/{account_id}/users/{user_id}/role",
        "POST /api/v1/admin/accounts/{account_id}/users/{user_id}/key",
        "DELETE /api/v1/admin/accounts/{account_id}/users/{user_id}/key",
        // library
        "GET /api/v1/me",
        "GET /api/v1/status",
        "GET /api/v1/sources",
        "GET /api/v1/documents",
        "GET /api/v1/documents/{id}",
        "GET /api/v1/documents/{id}/preview",
        "GET /api/v1/documents/{id}/file",
        "GET /api/v1/passages/{chunk_id}",
        "GET /api/v1/audit",
        // administration
        "GET /api/v1/folders",
        "PUT /api/v1/acl",
        "GET /api/v1/acl/readers",
        "GET /api/v1/watches",
        "POST /api/v1/watches",
        "DELETE /api/v1/watches",
        "POST /api/v1/ingest",
        "POST /api/v1/remove",
        "GET /api/v1/queue",
        "POST /api/v1/queue/pause",
        "POST /api/v1/queue/resume",
        "POST /api/v1/queue/retry-failed",
        "POST /api/v1/queue/cancel",
        "GET /api/v1/admin/accounts/{account_id}/users/{user_id}/groups",
        "PUT /api/v1/admin/accounts/{account_id}/users/{user_id}/groups/{group}",
        "DELETE /api/v1/admin/accounts/{account_id}/users/{user_id}/groups/{group}",
        "GET /api/v1/sql-sources",
        "POST /api/v1/sql-sources",
        "DELETE /api/v1/sql-sources/{name}",
        "GET /api/v1/crawls",
        "POST /api/v1/crawls",
        "PUT /api/v1/crawls/{id}",
        "DELETE /api/v1/crawls/{id}",
        "POST /api/v1/crawls/{id}/run",
        // conversations
        "GET /api/v1/conversations",
        "GET /api/v1/conversations/{id}",
        "DELETE /api/v1/conversations/{id}",
        "POST /api/v1/conversations/{id}/remember",
        "GET /api/v1/traces",
        "GET /api/v1/traces/{trace_id}",
        "POST /api/v1/feedback",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(listed, expected);
    let schemes = &doc["components"]["securitySchemes"];
    assert!(schemes["api_key"].is_object() && schemes["bearer"].is_object());
    // Every documented route is served (a request without a key is answered by the route,
    // not by the 404 fallback).
    for route in &expected {
        let (method, path) = route.split_once(' ').unwrap();
        let path = path
            .replace("{id}", "x-1-x")
            .replace("{account_id}", "default")
            .replace("{group_id}", "grp_x")
            .replace("{user_id}", "alice")
            .replace("{chunk_id}", "1")
            .replace("{trace_id}", "t-1")
            .replace("{group}", "team:x")
            .replace("{name}", "x");
        let body = (method != "GET" && method != "DELETE").then_some("{}");
        // A fresh connection each time: the server may close a kept-alive connection after
        // refusing a request whose body it did not read, and a POST is not retried.
        let fresh = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_idle_connections(0)
                .build(),
        );
        let r = s.request_on(&fresh, method, &path, &[], body);
        assert_ne!(r.status, 404, "{route} is not served: {}", r.text);
        assert_ne!(r.status, 405, "{route} is not served: {}", r.text);
    }
}

#[test]
fn keys_missing_invalid_rotated_or_revoked_are_401() {
    let s = start();
    let path = "/api/knowledge";
    let bearer = format!("Bearer {}", s.alice);
    let cases: Vec<(&str, Vec<(&str, &str)>, u16)> = vec![
        ("no key", vec![], 401),
        ("unknown key", vec![("x-api-key", "kh_not-a-real-key")], 401),
        ("empty key", vec![("x-api-key", "")], 401),
        (
            "basic auth",
            vec![("authorization", "Basic YWxpY2U6cHc=")],
            401,
        ),
        (
            "two different keys",
            vec![("x-api-key", &s.alice), ("authorization", "Bearer other")],
            401,
        ),
        ("x-api-key", vec![("x-api-key", &s.alice)], 200),
        ("bearer", vec![("authorization", &bearer)], 200),
    ];
    for (name, headers, status) in cases {
        let r = s.request("GET", path, &headers, None);
        assert_eq!(r.status, status, "{name}: {}", r.text);
        if status == 401 {
            r.assert_error(401, "UNAUTHENTICATED");
            assert!(!r.text.contains(&s.alice), "{name}: the key is echoed");
        }
    }

    // Rotation: the old key stops working at once, the new one works.
    let r = s.call(
        "POST",
        "/api/v1/admin/accounts/default/users/alice/key",
        &s.alice,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let new_key = r.json()["user_key"].as_str().unwrap().to_owned();
    s.call("GET", path, &s.alice, None)
        .assert_error(401, "UNAUTHENTICATED");
    assert_eq!(s.call("GET", path, &new_key, None).status, 200);

    // Revocation by an administrator.
    let r = s.call(
        "DELETE",
        "/api/v1/admin/accounts/default/users/alice/key",
        &s.carol,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["revoked"], 1);
    s.call("GET", path, &new_key, None)
        .assert_error(401, "UNAUTHENTICATED");
}

#[test]
fn root_only_headers_and_agents() {
    let s = start();
    s.save(
        &s.alice,
        json!({"content": "alice keeps her notes in markdown", "types": ["tool"]}),
    );
    let path = "/api/knowledge";
    let cases: Vec<(&str, &str, Vec<(&str, &str)>, u16)> = vec![
        (
            "user + X-Account-ID",
            &s.alice,
            vec![("x-account-id", "default")],
            403,
        ),
        (
            "user + X-User-ID",
            &s.alice,
            vec![("x-user-id", "bob")],
            403,
        ),
        (
            "admin + X-User-ID",
            &s.carol,
            vec![("x-user-id", "alice")],
            403,
        ),
        (
            "admin + X-Account-ID",
            &s.carol,
            vec![("x-account-id", "default")],
            403,
        ),
        (
            "root + X-User-ID",
            &s.root,
            vec![("x-user-id", "alice")],
            200,
        ),
        (
            "root + X-Account-ID",
            &s.root,
            vec![("x-account-id", "default")],
            200,
        ),
        (
            "root + unknown user",
            &s.root,
            vec![("x-user-id", "nobody")],
            404,
        ),
        (
            "invalid agent id",
            &s.alice,
            vec![("x-agent-id", "bad agent!")],
            422,
        ),
        (
            "valid agent id",
            &s.alice,
            vec![("x-agent-id", "research_agent")],
            200,
        ),
    ];
    for (name, key, extra, status) in cases {
        let mut headers = vec![("x-api-key", key)];
        headers.extend(extra);
        let r = s.request("GET", path, &headers, None);
        assert_eq!(r.status, status, "{name}: {}", r.text);
        match status {
            403 => r.assert_error(403, "PERMISSION_DENIED"),
            404 => r.assert_error(404, "NOT_FOUND"),
            422 => r.assert_error(422, "VALIDATION_ERROR"),
            _ => {}
        }
    }
    // ROOT acting as alice sees exactly alice's items.
    let r = s.request(
        "GET",
        path,
        &[("x-api-key", &s.root), ("x-user-id", "alice")],
        None,
    );
    assert_eq!(r.json()["count"], 1);
    // The agent header becomes the item's source agent.
    let body = json!({"content": "an agent's finding", "types": ["strategy"]}).to_string();
    let r = s.request(
        "POST",
        path,
        &[("x-api-key", &s.alice), ("x-agent-id", "research_agent")],
        Some(&body),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["source"]["agent_id"], "research_agent");
}

#[test]
fn knowledge_endpoints_happy_path() {
    let s = start();
    let a = &s.alice;
    let item = s.save(
        a,
        json!({
            "task": "format Rust code before committing",
            "content": "Run cargo fmt before every commit; CI rejects unformatted code.",
            "types": ["tool", "strategy"],
            "tags": {"domain": "coding_style"},
            "owner": "agent:ignored",
            "source": {"name": "team wiki", "category": "exp", "urls": ["https://example.invalid"]},
            "score": 4
        }),
    );
    let id = item["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("knowledge-"));
    assert_eq!(item["owner"], "alice");
    assert_eq!(item["scopes"], json!(["user:alice"]));
    assert_eq!(item["eval"]["score"], 4);
    let other = s.call(
        "POST",
        "/api/knowledge/save",
        a,
        Some(json!({"content": "Prefer tabs for Makefiles.", "types": ["tool"]})),
    );
    assert_eq!(other.status, 201, "{}", other.text);

    let r = s.call("GET", &format!("/api/knowledge/{id}"), a, None);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["content"], item["content"]);

    for path in [
        "/api/knowledge?limit=10",
        "/api/knowledge/list?types=tool,strategy",
    ] {
        let r = s.call("GET", path, a, None);
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert_eq!(r.json()["count"], 2, "{path}");
    }
    let r = s.call(
        "GET",
        "/api/knowledge?types=strategy&tags=domain=coding_style",
        a,
        None,
    );
    assert_eq!(ids(&r.json()), vec![id.clone()]);

    let r = s.call(
        "GET",
        "/api/knowledge/search?q=cargo%20fmt%20commit&top_k=3&min_score=3",
        a,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(ids(&v), vec![id.clone()]);
    assert_eq!(v["results"][0]["quality_score"], 4.0);
    let r = s.call(
        "POST",
        "/api/knowledge/search",
        a,
        Some(json!({"query": "cargo fmt", "types": ["tool"], "min_score": 1})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(ids(&r.json()), vec![id.clone()]);
    // min_score drops the item.
    let r = s.call(
        "GET",
        "/api/knowledge/search?q=cargo%20fmt&min_score=5",
        a,
        None,
    );
    assert_eq!(r.json()["count"], 0);

    let r = s.call(
        "PUT",
        &format!("/api/knowledge/{id}"),
        a,
        Some(json!({
            "add_helpful_case": {"task": "release 1.2", "outcome": "ok", "timestamp": "2026-03-05T12:00:00Z"},
            "update_score": 5
        })),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(v["eval"]["helpful"], 1);
    assert_eq!(v["eval"]["score"], 5);

    let r = s.call(
        "POST",
        "/api/knowledge/update",
        a,
        Some(json!({"knowledge_id": id, "content": "Run cargo fmt --all before every commit."})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["content"],
        "Run cargo fmt --all before every commit."
    );
    let r = s.call("GET", &format!("/api/knowledge/{id}/versions"), a, None);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["count"], 1);

    // evolve_feedback needs a language model: refused in the error format.
    s.call(
        "PUT",
        &format!("/api/knowledge/{id}"),
        a,
        Some(json!({"evolve_feedback": "mention rustfmt.toml"})),
    )
    .assert_error(422, "VALIDATION_ERROR");

    let r = s.call(
        "POST",
        "/api/knowledge/batch_update",
        a,
        Some(json!({"feedback_list": [
            {"knowledge_id": id, "is_helpful": false, "case": {"task": "hotfix", "reason": "slow"}},
            {"knowledge_id": "knowledge-0-missing", "is_helpful": true},
            {"id": id, "update": {"confidence": 0.9}}
        ]})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(v["count"], 3);
    assert_eq!(v["results"][0]["ok"], true);
    assert_eq!(v["results"][0]["item"]["eval"]["harmful"], 1);
    assert_eq!(v["results"][1]["ok"], false);
    assert_eq!(v["results"][2]["ok"], true);

    // Slim: two near-duplicates of the same owner and scopes.
    let dup = "Always run the full test suite before merging a pull request into main.";
    let x = s.save(a, json!({"content": dup, "types": ["strategy"]}));
    let y = s.save(
        a,
        json!({"content": format!("{dup} Really."), "types": ["strategy"]}),
    );
    let r = s.call(
        "POST",
        "/api/knowledge/slim",
        a,
        Some(json!({"dry_run": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let plan = r.json();
    assert_eq!(plan["applied"], false);
    assert_eq!(plan["method"], "lexical");
    assert_eq!(plan["groups"].as_array().unwrap().len(), 1, "{plan}");
    let r = s.call("POST", "/api/knowledge/slim", a, Some(json!({})));
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["applied"], true);
    let (xi, yi) = (x["id"].as_str().unwrap(), y["id"].as_str().unwrap());
    let left: Vec<u16> = [xi, yi]
        .iter()
        .map(|i| {
            s.call("GET", &format!("/api/knowledge/{i}"), a, None)
                .status
        })
        .collect();
    assert!(left.contains(&200) && left.contains(&404), "{left:?}");

    let r = s.call("DELETE", &format!("/api/knowledge/{id}"), a, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["deleted"], true);
    s.call("GET", &format!("/api/knowledge/{id}"), a, None)
        .assert_error(404, "NOT_FOUND");
}

#[test]
fn other_users_items_are_404_and_owner_only_writes() {
    let s = start();
    let secret = "ALICE-PRIVATE-ZEBRA the vault code is 4417";
    let private = s.save(
        &s.alice,
        json!({"content": secret, "task": "zebra vault", "types": ["usecase"]}),
    );
    let pid = private["id"].as_str().unwrap().to_owned();
    let shared = s.save(
        &s.alice,
        json!({"content": "Shared giraffe practice: review twice.", "types": ["strategy"], "scopes": ["public"]}),
    );
    let sid = shared["id"].as_str().unwrap().to_owned();

    // Reads of the private item by bob: 404 / nothing, never its content.
    let reads = [
        ("GET", format!("/api/knowledge/{pid}"), None, 404),
        ("GET", format!("/api/knowledge/{pid}/versions"), None, 404),
        (
            "PUT",
            format!("/api/knowledge/{pid}"),
            Some(json!({"content": "mine now"})),
            404,
        ),
        (
            "PUT",
            format!("/api/knowledge/{pid}"),
            Some(json!({"add_helpful_case": {"task": "t"}})),
            404,
        ),
        ("DELETE", format!("/api/knowledge/{pid}"), None, 404),
        (
            "GET",
            "/api/knowledge/search?q=zebra%20vault&min_score=1".to_owned(),
            None,
            200,
        ),
        ("GET", "/api/knowledge?limit=100".to_owned(), None, 200),
    ];
    for (method, path, body, status) in reads {
        let r = s.call(method, &path, &s.bob, body);
        assert_eq!(r.status, status, "{method} {path}: {}", r.text);
        assert!(
            !r.text.contains("ZEBRA"),
            "{method} {path} leaked: {}",
            r.text
        );
        assert!(
            !r.text.contains(&pid) || status == 404,
            "{method} {path}: {}",
            r.text
        );
        if status == 404 {
            r.assert_error(404, "NOT_FOUND");
        }
    }
    let r = s.call(
        "POST",
        "/api/knowledge/batch_update",
        &s.bob,
        Some(json!({"feedback_list": [{"knowledge_id": pid, "is_helpful": false}]})),
    );
    assert_eq!(r.json()["results"][0]["ok"], false);
    assert!(!r.text.contains("ZEBRA"));

    // The shared item: bob reads it and may report feedback, but not change or delete it.
    assert_eq!(
        s.call("GET", &format!("/api/knowledge/{sid}"), &s.bob, None)
            .status,
        200
    );
    let writes = [
        ("PUT", Some(json!({"content": "bob's version"})), 403),
        ("PUT", Some(json!({"update_score": 1})), 403),
        ("PUT", Some(json!({"scopes": ["user:bob"]})), 403),
        ("DELETE", None, 403),
        (
            "PUT",
            Some(json!({"add_harmful_case": {"task": "it hurt"}})),
            200,
        ),
    ];
    for (method, body, status) in writes {
        let r = s.call(method, &format!("/api/knowledge/{sid}"), &s.bob, body);
        assert_eq!(r.status, status, "{method}: {}", r.text);
        if status == 403 {
            r.assert_error(403, "PERMISSION_DENIED");
        }
    }
    // Sharing with a scope bob does not belong to is refused.
    let r = s.call(
        "POST",
        "/api/knowledge",
        &s.bob,
        Some(json!({"content": "x", "types": ["tool"], "scopes": ["team:hr"]})),
    );
    assert!(r.status == 403 || r.status == 422, "{}", r.text);
    // The account's administrator may change alice's item.
    let r = s.call(
        "PUT",
        &format!("/api/knowledge/{pid}"),
        &s.carol,
        Some(json!({"update_score": 2})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
}

#[test]
fn malformed_requests_get_the_error_format() {
    let s = start();
    let k: &str = &s.alice;
    let cases: Vec<(&str, &str, Vec<(&str, &str)>, Option<&str>, u16, &str)> = vec![
        (
            "POST",
            "/api/knowledge",
            vec![],
            Some("{not json"),
            400,
            "BAD_REQUEST",
        ),
        (
            "POST",
            "/api/knowledge",
            vec![],
            Some(""),
            400,
            "BAD_REQUEST",
        ),
        (
            "POST",
            "/api/knowledge",
            vec![],
            Some("{\"content\": 5}"),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "POST",
            "/api/knowledge",
            vec![],
            Some("{\"content\": \"  \"}"),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "POST",
            "/api/knowledge",
            vec![("content-type", "text/plain")],
            Some("{}"),
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        (
            "POST",
            "/api/knowledge/batch_update",
            vec![],
            Some("{\"feedback_list\": 3}"),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "GET",
            "/api/knowledge/search",
            vec![],
            None,
            422,
            "VALIDATION_ERROR",
        ),
        (
            "GET",
            "/api/knowledge?limit=many",
            vec![],
            None,
            422,
            "VALIDATION_ERROR",
        ),
        (
            "POST",
            "/api/v1/search",
            vec![],
            Some("[]"),
            422,
            "VALIDATION_ERROR",
        ),
        (
            "POST",
            "/api/v1/ask",
            vec![],
            Some("{\"question\": \"\"}"),
            422,
            "VALIDATION_ERROR",
        ),
        ("GET", "/api/nothing-here", vec![], None, 404, "NOT_FOUND"),
        (
            "PATCH",
            "/api/knowledge",
            vec![],
            Some("{}"),
            405,
            "METHOD_NOT_ALLOWED",
        ),
    ];
    for (method, path, extra, body, status, code) in cases {
        let mut headers = vec![("x-api-key", k)];
        headers.extend(extra);
        let r = s.request(method, path, &headers, body);
        assert_eq!(r.status, status, "{method} {path}: {}", r.text);
        assert!(
            r.content_type.starts_with("application/json"),
            "{method} {path}"
        );
        let v = r.json();
        assert_eq!(v["error"]["code"], code, "{method} {path}: {}", r.text);
    }

    // A body over the limit is refused from its Content-Length, before it is read (raw
    // socket: the server answers and closes while a client would still be sending).
    use std::io::{Read, Write};
    let addr = s.base.trim_start_matches("http://");
    let mut sock = std::net::TcpStream::connect(addr).unwrap();
    write!(
        sock,
        "POST /api/knowledge HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: {k}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{{",
        3 * 1024 * 1024
    )
    .unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    // The server answers at once; it may keep the connection open for the unsent body.
    while !String::from_utf8_lossy(&reply).contains("PAYLOAD_TOO_LARGE") {
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => reply.extend_from_slice(&buf[..n]),
        }
    }
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(reply.contains("PAYLOAD_TOO_LARGE"), "{reply}");
}

#[test]
fn admin_endpoints() {
    let s = start();
    let users = "/api/v1/admin/accounts/default/users";
    // A USER may not administer.
    let denied = [
        (
            "POST",
            users.to_owned(),
            Some(json!({"user_id": "eve", "role": "user"})),
        ),
        ("DELETE", format!("{users}/bob"), None),
        (
            "PUT",
            format!("{users}/bob/role"),
            Some(json!({"role": "admin"})),
        ),
        ("POST", format!("{users}/bob/key"), None),
        ("DELETE", format!("{users}/bob/key"), None),
        ("GET", "/api/v1/admin/accounts".to_owned(), None),
        (
            "POST",
            "/api/v1/admin/accounts".to_owned(),
            Some(json!({"account_id": "x", "admin_user_id": "y"})),
        ),
        ("DELETE", "/api/v1/admin/accounts/default".to_owned(), None),
    ];
    for (method, path, body) in denied {
        let r = s.call(method, &path, &s.alice, body);
        r.assert_error(403, "PERMISSION_DENIED");
    }
    // A user lists only themself.
    let r = s.call("GET", users, &s.alice, None);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["users"].as_array().unwrap().len(), 1);

    // The account's ADMIN manages users.
    let r = s.call(
        "POST",
        users,
        &s.carol,
        Some(json!({"user_id": "dave", "role": "user"})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let dave = r.json()["user_key"].as_str().unwrap().to_owned();
    assert_eq!(s.call("GET", "/api/knowledge", &dave, None).status, 200);
    s.call("POST", users, &s.carol, Some(json!({"user_id": "dave"})))
        .assert_error(409, "CONFLICT");
    s.call(
        "POST",
        users,
        &s.carol,
        Some(json!({"user_id": "eve", "role": "boss"})),
    )
    .assert_error(422, "VALIDATION_ERROR");
    s.call(
        "POST",
        users,
        &s.carol,
        Some(json!({"user_id": "eve", "role": "root"})),
    )
    .assert_error(403, "PERMISSION_DENIED");
    let r = s.call("GET", users, &s.carol, None);
    let listed: Vec<String> = r.json()["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["user_id"].as_str().unwrap().to_owned())
        .collect();
    assert!(listed.contains(&"dave".to_owned()) && listed.contains(&"alice".to_owned()));
    let r = s.call(
        "PUT",
        &format!("{users}/dave/role"),
        &s.carol,
        Some(json!({"role": "admin"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["role"], "ADMIN");
    let r = s.call("DELETE", &format!("{users}/dave"), &s.carol, None);
    assert_eq!(r.status, 200, "{}", r.text);
    s.call("GET", "/api/knowledge", &dave, None)
        .assert_error(401, "UNAUTHENTICATED");
    s.call("DELETE", &format!("{users}/dave"), &s.carol, None)
        .assert_error(404, "NOT_FOUND");

    // Accounts: ROOT only; other accounts' paths are ROOT-only too.
    let r = s.call(
        "POST",
        "/api/v1/admin/accounts",
        &s.root,
        Some(json!({"account_id": "acme", "admin_user_id": "boss"})),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let boss = r.json()["user_key"].as_str().unwrap().to_owned();
    let r = s.call("GET", "/api/v1/admin/accounts", &s.root, None);
    let accounts: Vec<String> = r.json()["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["account_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(accounts, vec!["acme".to_owned(), "default".to_owned()]);
    // acme's admin cannot reach the default account, nor default's admin acme.
    s.call("GET", users, &boss, None)
        .assert_error(403, "PERMISSION_DENIED");
    s.call("GET", "/api/v1/admin/accounts/acme/users", &s.carol, None)
        .assert_error(403, "PERMISSION_DENIED");
    let r = s.call("GET", "/api/v1/admin/accounts/acme/users", &s.root, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["users"][0]["user_id"], "boss");
    // acme's items are invisible from default and vice versa.
    s.save(
        &boss,
        json!({"content": "acme-only OCELOT plan", "types": ["plan"], "scopes": ["public"]}),
    );
    let r = s.call(
        "GET",
        "/api/knowledge/search?q=OCELOT&min_score=1",
        &s.alice,
        None,
    );
    assert_eq!(r.json()["count"], 0);
    assert!(!r.text.contains("OCELOT"));
    let r = s.call("DELETE", "/api/v1/admin/accounts/acme", &s.root, None);
    assert_eq!(r.status, 200, "{}", r.text);
    s.call("GET", "/api/knowledge", &boss, None)
        .assert_error(401, "UNAUTHENTICATED");
}

#[test]
fn document_search_and_ask() {
    let s = start();
    let r = s.call(
        "POST",
        "/api/v1/search",
        &s.alice,
        Some(json!({"query": "annual leave salary", "limit": 5})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    let hits = v["hits"].as_array().unwrap();
    assert!(!hits.is_empty());
    assert!(
        hits.iter()
            .all(|h| h["path"].as_str().unwrap().contains("handbook"))
    );
    assert!(hits[0]["evidence_id"].as_str().unwrap().starts_with("doc:"));
    assert!(!r.text.contains("90k"), "the hr document leaked");
    s.call(
        "POST",
        "/api/v1/search",
        &s.alice,
        Some(json!({"query": "leave", "mode": "psychic"})),
    )
    .assert_error(422, "VALIDATION_ERROR");
    // By sender and day: the handbook records neither, so a sender or a day keeps nothing.
    for narrowed in [
        json!({"query": "annual leave salary", "from": "dana"}),
        json!({"query": "annual leave salary", "since": "2020-01-01"}),
    ] {
        let r = s.call("POST", "/api/v1/search", &s.alice, Some(narrowed));
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.json()["count"], 0, "{}", r.text);
    }
    for day in ["March 2", "2026-02-30"] {
        s.call(
            "POST",
            "/api/v1/search",
            &s.alice,
            Some(json!({"query": "leave", "until": day})),
        )
        .assert_error(422, "VALIDATION_ERROR");
    }

    let r = s.call(
        "POST",
        "/api/v1/ask",
        &s.alice,
        Some(json!({"question": "How many days of annual leave do employees get?"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert!(v["answer"].as_str().unwrap().contains("fifteen"), "{v}");
    assert_eq!(v["stop_reason"], "ok");
    assert_eq!(v["written_by"], "extractive");
    assert!(v["sources"][0]["title"].is_string());
    assert!(v["session_id"].is_string());

    // Nothing alice may read: no answer, nothing of the hr document.
    let r = s.call(
        "POST",
        "/api/v1/ask",
        &s.alice,
        Some(json!({"question": "What is the confidential salary band for engineers?"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(!r.text.contains("90k"), "{}", r.text);

    let r = s.call(
        "POST",
        "/api/v1/ask",
        &s.alice,
        Some(json!({"question": "How much notice do leave requests need?", "stream": true})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.content_type.starts_with("text/event-stream"),
        "{}",
        r.content_type
    );
    assert!(r.text.contains("event: step"), "{}", r.text);
    let answer = r
        .text
        .split("\n\n")
        .find(|e| e.contains("event: answer"))
        .unwrap_or_else(|| panic!("no answer event: {}", r.text));
    let data = answer
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap();
    let v: Value = serde_json::from_str(data).unwrap();
    assert!(v["answer"].as_str().unwrap().contains("two weeks"), "{v}");
    assert!(!v["sources"].as_array().unwrap().is_empty());
}

#[test]
fn resources_keep_secure_bodies_for_their_owner() {
    let s = start();
    let secret = "password: hunter2-密码";
    let r = s.call(
        "POST",
        "/api/resource",
        &s.alice,
        Some(json!({
            "content_type": "credential",
            "title": "Test account",
            "body": "Log in directly; 100 requests a day.",
            "secure_body": secret,
            "scopes": ["public"],
        })),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(
        !r.text.contains("hunter2"),
        "save never echoes the secret: {}",
        r.text
    );
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let path = format!("/api/resource/{id}");

    // The owner reads the secret; another reader gets the resource without it.
    let mine = s.call("GET", &path, &s.alice, None);
    assert_eq!(mine.status, 200, "{}", mine.text);
    assert_eq!(mine.json()["secure_body"], secret);
    let theirs = s.call("GET", &path, &s.bob, None);
    assert_eq!(theirs.status, 200, "{}", theirs.text);
    assert!(theirs.json()["secure_body"].is_null(), "{}", theirs.text);
    assert_eq!(theirs.json()["has_secure_body"], true);
    assert!(!theirs.text.contains("hunter2"));

    // Lists never carry secrets, not even the owner's.
    let list = s.call("GET", "/api/resource", &s.alice, None);
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.json()["count"], 1);
    assert!(!list.text.contains("hunter2"), "{}", list.text);

    // Owner-only writes; a private resource is invisible to others.
    s.call("PUT", &path, &s.bob, Some(json!({"title": "mine now"})))
        .assert_error(403, "PERMISSION_DENIED");
    s.call("DELETE", &path, &s.bob, None)
        .assert_error(403, "PERMISSION_DENIED");
    let r = s.call(
        "PUT",
        &path,
        &s.alice,
        Some(json!({"scopes": [], "body": "private again"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    s.call("GET", &path, &s.bob, None)
        .assert_error(404, "NOT_FOUND");

    // Expired resources are refused and left out of lists.
    let r = s.call(
        "POST",
        "/api/resource",
        &s.alice,
        Some(json!({
            "content_type": "cookie",
            "title": "Old cookie",
            "secure_body": "session=abc",
            "expires_at": "2020-01-01T00:00:00Z",
        })),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let old = r.json()["id"].as_str().unwrap().to_owned();
    let r = s.call("GET", &format!("/api/resource/{old}"), &s.alice, None);
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(r.text.contains("expired"), "{}", r.text);
    let list = s.call("GET", "/api/resource", &s.alice, None);
    assert_eq!(list.json()["count"], 1, "{}", list.text);

    // Bad input is a 422 in the error format.
    s.call(
        "POST",
        "/api/resource",
        &s.alice,
        Some(json!({"content_type": "spaceship", "title": "x"})),
    )
    .assert_error(422, "VALIDATION_ERROR");

    assert_eq!(s.call("DELETE", &path, &s.alice, None).status, 200);
    s.call("GET", &path, &s.alice, None)
        .assert_error(404, "NOT_FOUND");

    // Seed 002 names resources (`credentials/website_a`); the slash travels percent-encoded.
    let r = s.call(
        "POST",
        "/api/resource",
        &s.alice,
        Some(
            json!({"id": "credentials/website_a", "content_type": "credential",
                    "title": "Website A", "secure_body": secret}),
        ),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json()["id"], "credentials/website_a");
    let named = "/api/resource/credentials%2Fwebsite_a";
    let mine = s.call("GET", named, &s.alice, None);
    assert_eq!(mine.status, 200, "{}", mine.text);
    assert_eq!(mine.json()["secure_body"], secret);
    s.call("GET", named, &s.bob, None)
        .assert_error(404, "NOT_FOUND");
    s.call(
        "POST",
        "/api/resource",
        &s.bob,
        Some(json!({"id": "credentials/website_a", "title": "mine"})),
    )
    .assert_error(409, "CONFLICT");
    s.call(
        "POST",
        "/api/resource",
        &s.alice,
        Some(json!({"id": "../Website A", "title": "x"})),
    )
    .assert_error(422, "VALIDATION_ERROR");
}

#[test]
fn memories_are_committed_searched_read_and_private() {
    let s = start();
    let r = s.call(
        "POST",
        "/api/v1/memory/commit",
        &s.alice,
        Some(json!({
            "messages": [
                {"role": "user", "content": "I prefer answers as tables. How long is probation?"},
                {"role": "assistant", "content": "I prefer nothing: I am the assistant."},
                {"role": "user", "content": "我习惯早上看邮件。"},
            ],
            "session_id": "sess-http",
        })),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(
        v["stats"]["extracted"], 2,
        "only the user's words: {}",
        r.text
    );
    assert_eq!(v["write_results"].as_array().unwrap().len(), 2);
    let uri = v["write_results"][0]["uri"].as_str().unwrap().to_owned();
    assert!(uri.starts_with("ctx://user/alice/memories/"), "{uri}");

    let r = s.call(
        "POST",
        "/api/v1/memory/search",
        &s.alice,
        Some(json!({"query": "tables"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["blocks"][0]["uri"], uri.as_str());

    let q = |u: &str| u.replace(':', "%3A").replace('/', "%2F");
    let r = s.call(
        "GET",
        &format!("/api/v1/memory/read?uri={}&level=L0", q(&uri)),
        &s.alice,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["content"], "I prefer answers as tables.");
    let r = s.call(
        "GET",
        &format!(
            "/api/v1/memory/children?uri={}",
            q("ctx://user/alice/memories")
        ),
        &s.alice,
        None,
    );
    assert_eq!(r.json().as_array().unwrap().len(), 2, "{}", r.text);

    // Bob sees nothing of alice's memories, by search, node or folder.
    let r = s.call(
        "POST",
        "/api/v1/memory/search",
        &s.bob,
        Some(json!({"query": "tables"})),
    );
    assert_eq!(r.json()["total"], 0, "{}", r.text);
    assert!(!r.text.contains("tables"));
    s.call(
        "GET",
        &format!("/api/v1/memory/node?uri={}", q(&uri)),
        &s.bob,
        None,
    )
    .assert_error(404, "NOT_FOUND");
    s.call(
        "GET",
        &format!(
            "/api/v1/memory/children?uri={}",
            q("ctx://user/alice/memories")
        ),
        &s.bob,
        None,
    )
    .assert_error(404, "NOT_FOUND");
    s.call(
        "DELETE",
        &format!("/api/v1/memory/node?uri={}", q(&uri)),
        &s.bob,
        None,
    )
    .assert_error(404, "NOT_FOUND");
    s.call(
        "GET",
        &format!("/api/v1/memory/read?uri={}&level=L9", q(&uri)),
        &s.alice,
        None,
    )
    .assert_error(422, "VALIDATION_ERROR");

    let r = s.call(
        "DELETE",
        &format!("/api/v1/memory/node?uri={}", q(&uri)),
        &s.alice,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    s.call(
        "GET",
        &format!("/api/v1/memory/node?uri={}", q(&uri)),
        &s.alice,
        None,
    )
    .assert_error(404, "NOT_FOUND");
}

/// Seed 003 §13: group spaces over HTTP — create with members, member/non-member/read-only
/// rights, group documents through a `group:` folder ACL, commit routing, joint search,
/// 404 for outsiders with nothing leaked.
#[test]
fn group_spaces_share_memories_and_documents_with_members_only() {
    let s = start();
    let users = "/api/v1/admin/accounts/default/users";
    let mut keys = std::collections::HashMap::new();
    for id in ["dave", "erin"] {
        let r = s.call(
            "POST",
            users,
            &s.carol,
            Some(json!({"user_id": id, "role": "user"})),
        );
        assert_eq!(r.status, 201, "{}", r.text);
        keys.insert(id, r.json()["user_key"].as_str().unwrap().to_owned());
    }
    let (dave, erin) = (&keys["dave"], &keys["erin"]);

    // A folder is already shared with `group:grp_alpha`: a user may not create that group
    // (its members would inherit the folder); the administrator creates it with alice as
    // owner, bob member, dave read-only; erin is outside.
    s.call(
        "POST",
        "/api/v1/groups",
        &s.alice,
        Some(json!({"group_id": "grp_alpha"})),
    )
    .assert_error(403, "PERMISSION_DENIED");
    let r = s.call(
        "POST",
        "/api/v1/groups",
        &s.carol,
        Some(
            json!({"group_id": "grp_alpha", "name": "Alpha 阿尔法", "type": "project",
                    "members": [{"user_id": "alice", "role": "owner"},
                                {"user_id": "bob", "agent_id": "bot2", "role": "member"},
                                {"user_id": "dave", "role": "readonly"}]}),
        ),
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let space = r.json()["group_space"].as_str().unwrap().to_owned();
    assert_eq!(space.len(), 12);
    assert_eq!(r.json()["members"][0]["role"], "owner");
    s.call(
        "POST",
        "/api/v1/groups",
        &s.bob,
        Some(json!({"group_id": "grp_alpha"})),
    )
    .assert_error(409, "CONFLICT");
    s.call(
        "POST",
        "/api/v1/groups",
        &s.bob,
        Some(json!({"group_id": "bad id"})),
    )
    .assert_error(422, "VALIDATION_ERROR");

    // Visibility: members and the account admin see it; erin gets 404 everywhere.
    for key in [&s.alice, &s.bob, dave, &s.carol] {
        assert_eq!(
            s.call("GET", "/api/v1/groups/grp_alpha", key, None).status,
            200
        );
    }
    s.call("GET", "/api/v1/groups/grp_alpha", erin, None)
        .assert_error(404, "NOT_FOUND");
    let r = s.call("GET", "/api/v1/groups", erin, None);
    assert_eq!(
        r.json()["groups"].as_array().unwrap().len(),
        0,
        "{}",
        r.text
    );
    s.call(
        "POST",
        "/api/v1/groups/grp_alpha/members",
        erin,
        Some(json!({"user_id": "erin", "role": "owner"})),
    )
    .assert_error(404, "NOT_FOUND");
    // A member cannot add people; the owner can.
    s.call(
        "POST",
        "/api/v1/groups/grp_alpha/members",
        &s.bob,
        Some(json!({"user_id": "erin"})),
    )
    .assert_error(403, "PERMISSION_DENIED");

    // A group conversation: shared decisions to the group, alice's preference to alice,
    // bob's habit left for bob.
    let r = s.call(
        "POST",
        "/api/v1/memory/commit",
        &s.alice,
        Some(json!({
            "group_id": "grp_alpha",
            "messages": [
                {"role": "user", "user_id": "alice", "content": "We decided to launch KESTREL on 3 March."},
                {"role": "user", "user_id": "bob", "content": "我们决定用 Postgres 存储订单。"},
                {"role": "user", "user_id": "alice", "content": "I prefer short status updates."},
                {"role": "user", "user_id": "bob", "content": "I usually work late on Thursdays."},
            ],
        })),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let results = r.json()["write_results"].as_array().unwrap().clone();
    let targets: Vec<(String, String)> = results
        .iter()
        .map(|w| {
            (
                w["action"].as_str().unwrap().to_owned(),
                w["target_space"]
                    .as_str()
                    .or(w["reason"].as_str())
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect();
    assert_eq!(
        targets,
        vec![
            ("created".into(), "group".into()),
            ("created".into(), "group".into()),
            ("created".into(), "private".into()),
            ("skipped".into(), "other_speaker".into()),
        ],
        "{}",
        r.text
    );
    let group_uri = results[0]["uri"].as_str().unwrap().to_owned();
    assert!(
        group_uri.starts_with(&format!("ctx://group/{space}/memories/decision/")),
        "{group_uri}"
    );

    let q = |u: &str| u.replace(':', "%3A").replace('/', "%2F");
    // Members read it; erin does not — by URI, children, search or the knowledge API.
    for key in [&s.bob, dave] {
        let r = s.call(
            "GET",
            &format!("/api/v1/memory/read?uri={}&level=L2", q(&group_uri)),
            key,
            None,
        );
        assert_eq!(r.status, 200, "{}", r.text);
        assert!(r.json()["content"].as_str().unwrap().contains("KESTREL"));
    }
    s.call(
        "GET",
        &format!("/api/v1/memory/node?uri={}", q(&group_uri)),
        erin,
        None,
    )
    .assert_error(404, "NOT_FOUND");
    s.call(
        "GET",
        &format!(
            "/api/v1/memory/children?uri={}",
            q(&format!("ctx://group/{space}/memories"))
        ),
        erin,
        None,
    )
    .assert_error(404, "NOT_FOUND");
    let r = s.call(
        "GET",
        &format!(
            "/api/v1/memory/children?uri={}",
            q(&format!("ctx://group/{space}/memories"))
        ),
        &s.bob,
        None,
    );
    assert_eq!(r.json().as_array().unwrap().len(), 2, "{}", r.text);
    s.call(
        "POST",
        "/api/v1/memory/search",
        erin,
        Some(json!({"query": "KESTREL", "group_id": "grp_alpha"})),
    )
    .assert_error(404, "NOT_FOUND");
    let r = s.call("GET", "/api/knowledge/search?query=KESTREL", erin, None);
    assert!(!r.text.contains("KESTREL"), "{}", r.text);
    // Joint search for a member: bob's view has the group's memory but never alice's private one.
    let r = s.call(
        "POST",
        "/api/v1/memory/search",
        &s.bob,
        Some(json!({"query": "status updates KESTREL", "group_id": "grp_alpha"})),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        r.text.contains("KESTREL") && !r.text.contains("status updates"),
        "{}",
        r.text
    );

    // The read-only member cannot write into the group.
    s.call(
        "POST",
        "/api/v1/memory/commit",
        dave,
        Some(json!({"group_id": "grp_alpha",
                    "messages": [{"role": "user", "content": "We decided to cancel KESTREL."}]})),
    )
    .assert_error(403, "PERMISSION_DENIED");
    s.call(
        "POST",
        "/api/knowledge",
        dave,
        Some(json!({"content": "rumour", "types": ["plan"], "scopes": ["group:grp_alpha"]})),
    )
    .assert_error(403, "PERMISSION_DENIED");

    // Group documents: the folder shared with `group:grp_alpha` is searchable by members only.
    let launch = |key: &str| {
        let r = s.call(
            "POST",
            "/api/v1/search",
            key,
            Some(json!({"query": "KESTREL launch checklist"})),
        );
        assert_eq!(r.status, 200, "{}", r.text);
        r.text.contains("twelve steps")
    };
    assert!(launch(&s.bob) && launch(dave) && launch(&s.alice));
    assert!(!launch(erin));

    // Deleting: a member cannot; the owner can, and the shared memories go with the group.
    s.call("DELETE", "/api/v1/groups/grp_alpha", &s.bob, None)
        .assert_error(403, "PERMISSION_DENIED");
    s.call(
        "DELETE",
        "/api/v1/groups/grp_alpha/members/alice",
        &s.alice,
        None,
    )
    .assert_error(409, "CONFLICT");
    assert_eq!(
        s.call(
            "DELETE",
            "/api/v1/groups/grp_alpha/members/dave",
            dave,
            None
        )
        .status,
        200
    );
    let r = s.call("DELETE", "/api/v1/groups/grp_alpha", &s.alice, None);
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json()["memories_deleted"], 2);
    s.call(
        "GET",
        &format!("/api/v1/memory/node?uri={}", q(&group_uri)),
        &s.bob,
        None,
    )
    .assert_error(404, "NOT_FOUND");
    assert!(
        !launch(&s.bob),
        "the group is gone, and with it the members' access"
    );
}
