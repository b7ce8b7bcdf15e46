//! Conversations, traces and feedback over HTTP, against real servers on 127.0.0.1 (keyword
//! search, extractive answers: no model files). One scenario, written once over a list of
//! base URLs, runs on a local hub and on a team of two replicas sharing one private
//! PostgreSQL database, where consecutive requests alternate between the replicas: whatever
//! one replica recorded, the other must show (or refuse) on the very next request.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::cell::Cell;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use knowhub_engine::authz::{Role, ScopeSet, UserId};
use knowhub_engine::team::TeamConfig;
use knowhub_engine::{
    EngineConfig, Hub, IngestOptions, ModelConfig, ModelSet, RealFs, dev_context,
};
use knowhub_pg::PgCluster;
use knowhub_server::ServerState;
use serde_json::{Value, json};

const FIRST: &str = "How many days of annual leave do employees get?";
const SECOND: &str = "I prefer short answers. How much notice do leave requests need?";
const THIRD: &str = "What notice do leave requests need?";

// ----- servers ------------------------------------------------------------------------------

/// One hub served on 127.0.0.1 until dropped.
struct Served {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// Dropped last, outside the server's runtime: a team hub's database client blocks when
    /// it closes, which a runtime's thread must not.
    _hub: Arc<Hub>,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(hub: Arc<Hub>) -> Served {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let state = ServerState::new(Arc::clone(&hub), None);
    let thread = std::thread::spawn(move || {
        rt.block_on(knowhub_server::serve_on(listener, state, async move {
            let _ = stopped.await;
        }))
        .unwrap();
    });
    Served {
        base: format!("http://{addr}"),
        stop: Some(stop),
        thread: Some(thread),
        _hub: hub,
    }
}

fn write_docs(root: &Path) -> std::path::PathBuf {
    let docs = root.join("docs/public");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("handbook.md"),
        "# Handbook\n\n## Leave\n\nEmployees get fifteen days of annual leave per year. \
         Leave requests need two weeks notice.",
    )
    .unwrap();
    docs
}

/// Ingests `docs` (readable by everyone), adds alice and bob (users) and carol (an
/// administrator) with keys, then turns production mode on (every request needs a key).
fn populate(hub: &Hub, docs: &Path) -> Keys {
    let dev = dev_context();
    let engine = hub.engine(&dev).unwrap();
    let report = engine
        .ingest(
            &dev,
            &[docs.to_path_buf()],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.added, 1, "{report:?}");
    let public: ScopeSet = "public".parse().unwrap();
    engine.set_folder_acl(&dev, docs, Some(&public)).unwrap();
    let key = |id: &str, role: Role| {
        let uid = UserId::new(id).unwrap();
        assert!(engine.add_user(&dev, &uid, id, role).unwrap());
        engine
            .rotate_api_key(&dev, &uid)
            .unwrap()
            .secret()
            .to_owned()
    };
    let keys = Keys {
        alice: key("alice", Role::User),
        bob: key("bob", Role::User),
        carol: key("carol", Role::Admin),
    };
    hub.init_root_key(&dev).unwrap();
    keys
}

struct Keys {
    alice: String,
    bob: String,
    /// An administrator of the account.
    carol: String,
}

// ----- the client ---------------------------------------------------------------------------

/// A client that sends each request to the next base URL in turn.
struct Api {
    bases: Vec<String>,
    next: Cell<usize>,
    http: ureq::Agent,
}

struct Reply {
    status: u16,
    text: String,
    /// The base URL that answered.
    via: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}) from {}: {}", self.via, self.text))
    }

    fn ok(&self) -> Value {
        assert_eq!(self.status, 200, "{}: {}", self.via, self.text);
        self.json()
    }

    /// Asserts the API's error body with this status and code.
    fn error(&self, status: u16, code: &str) -> String {
        assert_eq!(self.status, status, "{}: {}", self.via, self.text);
        let v = self.json();
        assert_eq!(v["error"]["code"], code, "{}: {}", self.via, self.text);
        assert!(v["trace_id"].as_str().is_some_and(|t| !t.is_empty()));
        v["error"]["message"].as_str().unwrap().to_owned()
    }
}

impl Api {
    fn new(bases: Vec<String>) -> Api {
        Api {
            bases,
            next: Cell::new(0),
            http: ureq::Agent::new_with_config(
                ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(60)))
                    .build(),
            ),
        }
    }

    /// `method path` with `key` (none: no key at all) and a raw body.
    fn raw(&self, method: &str, path: &str, key: Option<&str>, body: Option<String>) -> Reply {
        let i = self.next.get();
        self.next.set((i + 1) % self.bases.len());
        let via = self.bases[i].clone();
        let mut b = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{via}{path}"));
        if let Some(key) = key {
            b = b.header("x-api-key", key);
        }
        let mut resp = match body {
            Some(text) => self
                .http
                .run(
                    b.header("content-type", "application/json")
                        .body(text)
                        .unwrap(),
                )
                .unwrap(),
            None => self.http.run(b.body(()).unwrap()).unwrap(),
        };
        let text = resp.body_mut().read_to_string().unwrap();
        Reply {
            status: resp.status().as_u16(),
            text,
            via,
        }
    }

    fn call(&self, method: &str, path: &str, key: &str, body: Option<Value>) -> Reply {
        self.raw(method, path, Some(key), body.map(|b| b.to_string()))
    }

    fn get(&self, path: &str, key: &str) -> Reply {
        self.call("GET", path, key, None)
    }

    /// Asks `question` (continuing `session` when given); returns the answer.
    fn ask(&self, key: &str, question: &str, session: Option<&str>) -> Value {
        let mut body = json!({"question": question});
        if let Some(s) = session {
            body["session"] = json!(s);
        }
        let answer = self.call("POST", "/api/v1/ask", key, Some(body)).ok();
        assert!(
            answer["session_id"].as_str().is_some_and(|s| !s.is_empty()),
            "{answer}"
        );
        assert!(
            answer["trace_id"].as_str().is_some_and(|s| !s.is_empty()),
            "{answer}"
        );
        answer
    }

    fn conversation_ids(&self, key: &str, query: &str) -> Vec<String> {
        let v = self.get(&format!("/api/v1/conversations{query}"), key).ok();
        let ids: Vec<String> = v["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(v["count"], ids.len(), "{v}");
        ids
    }

    /// Waits until every base's index answers a search for the handbook (a team replica
    /// follows the database's change log).
    fn wait_for_index(&self, key: &str) {
        let started = Instant::now();
        for _ in 0..self.bases.len() {
            loop {
                let r = self.call(
                    "POST",
                    "/api/v1/search",
                    key,
                    Some(json!({"query": "annual leave", "mode": "keyword"})),
                );
                if r.status == 200 && r.text.contains("fifteen days") {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "{} never indexed the handbook: {}",
                    r.via,
                    r.text
                );
                // Ask the same base again.
                let n = self.bases.len();
                self.next.set((self.next.get() + n - 1) % n);
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

fn ids_of(v: &Value, field: &str) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x[field].as_str().unwrap().to_owned())
        .collect()
}

// ----- the scenario -------------------------------------------------------------------------

/// Everything the window does with conversations, as alice (the asker), bob (another user)
/// and carol (an administrator).
fn scenario(api: &Api, keys: &Keys) {
    let (alice, bob, carol) = (keys.alice.as_str(), keys.bob.as_str(), keys.carol.as_str());
    api.wait_for_index(alice);
    assert!(api.conversation_ids(alice, "").is_empty());

    // Ask, then continue the same conversation by its id.
    let first = api.ask(alice, FIRST, None);
    let session = first["session_id"].as_str().unwrap().to_owned();
    let t1 = first["trace_id"].as_str().unwrap().to_owned();
    assert!(
        first["answer"].as_str().unwrap().contains("fifteen"),
        "{first}"
    );
    assert_eq!(api.conversation_ids(alice, ""), [session.as_str()]);
    let listed = api.get("/api/v1/conversations", alice).ok();
    assert_eq!(listed["conversations"][0]["title"], FIRST, "{listed}");
    let second = api.ask(alice, SECOND, Some(&session));
    assert_eq!(second["session_id"], session.as_str(), "{second}");
    let t2 = second["trace_id"].as_str().unwrap().to_owned();
    assert_ne!(t1, t2);

    let path = format!("/api/v1/conversations/{session}");
    let conv = api.get(&path, alice).ok();
    assert_eq!(conv["id"], session.as_str());
    assert_eq!(conv["title"], FIRST);
    let turns = conv["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{conv}");
    assert_eq!(turns[0]["question"], FIRST);
    assert_eq!(turns[1]["question"], SECOND);
    assert_eq!(turns[0]["trace_id"], t1.as_str());
    assert_eq!(turns[1]["trace_id"], t2.as_str());
    assert_eq!(turns[0]["answer"], first["answer"]);
    assert_eq!(turns[1]["answer"], second["answer"]);
    assert!(turns[0]["turn_id"].as_i64() < turns[1]["turn_id"].as_i64());
    for (turn, answer) in turns.iter().zip([&first, &second]) {
        assert_eq!(turn["sources"], answer["sources"], "{turn}");
        assert_eq!(turn["route"], answer["route"], "{turn}");
        assert_eq!(turn["written_by"], "extractive", "{turn}");
        assert!(turn["helpful"].is_null(), "{turn}");
    }
    assert!(
        turns[0]["sources"][0]["title"]
            .as_str()
            .unwrap()
            .contains("Handbook"),
        "{conv}"
    );

    // Private: another user, and an administrator, see nothing of it, and cannot tell it
    // from a conversation that does not exist.
    let missing = "sess-t0-0-0";
    for key in [bob, carol] {
        let r = api.get(&path, key);
        let message = r.error(404, "NOT_FOUND");
        assert!(!r.text.contains("annual leave"), "{}", r.text);
        let other = api
            .get(&format!("/api/v1/conversations/{missing}"), key)
            .error(404, "NOT_FOUND");
        assert_eq!(
            message.replace(&session, "ID"),
            other.replace(missing, "ID")
        );
        assert!(!api.conversation_ids(key, "").contains(&session));
        api.call("DELETE", &path, key, None).error(404, "NOT_FOUND");
        api.call("POST", &format!("{path}/remember"), key, None)
            .error(404, "NOT_FOUND");
        api.call(
            "POST",
            "/api/v1/ask",
            key,
            Some(json!({"question": "What did alice ask?", "session": session})),
        )
        .error(404, "NOT_FOUND");
    }
    assert_eq!(
        api.get(&path, alice).ok()["turns"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "nothing of another user's reached alice's conversation"
    );

    // The trace: its asker and administrators read it; anyone else gets 404.
    let trace_path = format!("/api/v1/traces/{t1}");
    let trace = api.get(&trace_path, alice).ok();
    assert_eq!(trace["trace_id"], t1.as_str());
    assert_eq!(trace["conversation_id"], session.as_str());
    assert_eq!(trace["user_id"], "alice");
    assert_eq!(trace["question"], FIRST);
    assert_eq!(trace["route"], first["route"]);
    assert_eq!(trace["stop_reason"], first["stop_reason"]);
    assert_eq!(trace["answer"], first["answer"]);
    assert_eq!(trace["sources"], first["sources"]);
    assert_eq!(trace["written_by"], "extractive");
    let nodes: Vec<&str> = trace["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["node"].as_str().unwrap())
        .collect();
    assert!(nodes.contains(&"DocTool"), "{trace}");
    assert!(!trace["perm_snapshot_id"].as_str().unwrap().is_empty());
    let evidence = trace["evidence"].as_array().unwrap();
    assert!(
        evidence.iter().any(|e| e["cited"] == true
            && e["authz"] == "allow"
            && e["excerpt"].as_str().unwrap().contains("fifteen")),
        "{trace}"
    );
    let cited: BTreeSet<String> = evidence
        .iter()
        .filter(|e| e["cited"] == true)
        .map(|e| e["evidence_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(cited, ids_of(&first["sources"], "evidence_id"));
    let by_admin = api.get(&trace_path, carol).ok();
    assert_eq!(by_admin["trace_id"], t1.as_str());
    assert_eq!(by_admin["user_id"], "alice");
    let r = api.get(&trace_path, bob);
    r.error(404, "NOT_FOUND");
    assert!(!r.text.contains("annual leave"), "{}", r.text);
    // Listed: the asker's own traces, everyone's for an administrator, none of alice's for bob.
    let listed = api.get("/api/v1/traces?limit=10", alice).ok();
    let first_listed = listed["traces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["trace_id"] == t1.as_str())
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(
        (&first_listed["question"], &first_listed["conversation_id"]),
        (&json!(FIRST), &json!(session))
    );
    assert!(
        api.get("/api/v1/traces", carol).ok()["traces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["user_id"] == "alice")
    );
    let r = api.get("/api/v1/traces", bob);
    assert!(!r.ok().to_string().contains(t1.as_str()), "{}", r.text);
    api.get("/api/v1/traces?limit=0", alice)
        .error(422, "VALIDATION_ERROR");

    // Feedback: the asker's own verdict (its cited passages by default); the latest counts.
    let feedback = |key: &str, body: Value| api.call("POST", "/api/v1/feedback", key, Some(body));
    let v = feedback(
        alice,
        json!({"trace_id": t1, "helpful": false, "note": "  too long  "}),
    )
    .ok();
    assert_eq!(v["recorded"], true);
    assert_eq!(v["note"], "too long");
    let default_cited: BTreeSet<String> = v["cited"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(default_cited, cited);
    let one = cited.iter().next().unwrap().clone();
    let v = feedback(
        alice,
        json!({"trace_id": t1, "helpful": true, "cited": [one, one]}),
    )
    .ok();
    assert_eq!(v["cited"], json!([one]), "duplicates are one passage");
    // An administrator may rate it too (the engine's rule): alice's verdict stays hers.
    feedback(carol, json!({"trace_id": t1, "helpful": false})).ok();
    let conv = api.get(&path, alice).ok();
    assert_eq!(conv["turns"][0]["helpful"], true, "{conv}");
    assert!(conv["turns"][1]["helpful"].is_null(), "{conv}");
    // Another user's answer, or one that does not exist: 404.
    feedback(bob, json!({"trace_id": t1, "helpful": true})).error(404, "NOT_FOUND");
    feedback(alice, json!({"trace_id": "trace-none", "helpful": true})).error(404, "NOT_FOUND");
    // Bad bodies: 422 (400 when not JSON).
    feedback(
        alice,
        json!({"trace_id": t1, "helpful": true, "cited": ["ev-not-of-this-answer"]}),
    )
    .error(422, "VALIDATION_ERROR");
    feedback(alice, json!({"trace_id": t1})).error(422, "VALIDATION_ERROR");
    feedback(alice, json!({"trace_id": "", "helpful": true})).error(422, "VALIDATION_ERROR");
    feedback(
        alice,
        json!({"trace_id": t1, "helpful": true, "note": "x".repeat(4001)}),
    )
    .error(422, "VALIDATION_ERROR");
    api.raw("POST", "/api/v1/feedback", Some(alice), Some("{".into()))
        .error(400, "BAD_REQUEST");
    let conv = api.get(&path, alice).ok();
    assert_eq!(
        conv["turns"][0]["helpful"], true,
        "refused verdicts changed nothing"
    );

    // Remember: what alice said about herself becomes her memory (and not bob's).
    let remembered = api
        .call("POST", &format!("{path}/remember"), alice, None)
        .ok();
    assert_eq!(remembered["conversation_id"], session.as_str());
    let created = remembered["created"].as_array().unwrap();
    assert!(
        created.iter().any(|m| m["kind"] == "preference"
            && m["content"].as_str().unwrap().contains("short answers")),
        "{remembered}"
    );
    let search = json!({"query": "short answers"});
    let found = api
        .call("POST", "/api/v1/memory/search", alice, Some(search.clone()))
        .ok();
    assert!(found.to_string().contains("short answers"), "{found}");
    let others = api
        .call("POST", "/api/v1/memory/search", bob, Some(search))
        .ok();
    assert!(!others.to_string().contains("short answers"), "{others}");

    // A second conversation: newest first, `limit` honoured.
    let third = api.ask(alice, THIRD, None);
    let session2 = third["session_id"].as_str().unwrap().to_owned();
    assert_ne!(session2, session);
    assert_eq!(
        api.conversation_ids(alice, ""),
        [session2.as_str(), session.as_str()]
    );
    assert_eq!(api.conversation_ids(alice, "?limit=1"), [session2.as_str()]);
    assert!(api.conversation_ids(bob, "").is_empty());

    // Bad parameters and ids.
    for query in ["?limit=0", "?limit=abc", "?limit=-1"] {
        api.get(&format!("/api/v1/conversations{query}"), alice)
            .error(422, "VALIDATION_ERROR");
    }
    let long = "s".repeat(300);
    for bad in [long.as_str(), "a%01b"] {
        api.get(&format!("/api/v1/conversations/{bad}"), alice)
            .error(422, "VALIDATION_ERROR");
        api.get(&format!("/api/v1/traces/{bad}"), alice)
            .error(422, "VALIDATION_ERROR");
    }
    api.get(&format!("/api/v1/conversations/{missing}"), alice)
        .error(404, "NOT_FOUND");
    api.get("/api/v1/traces/trace-none", alice)
        .error(404, "NOT_FOUND");
    api.call(
        "POST",
        "/api/v1/conversations/sess-none/remember",
        alice,
        None,
    )
    .error(404, "NOT_FOUND");
    api.call("PUT", &path, alice, None)
        .error(405, "METHOD_NOT_ALLOWED");

    // No key, or a wrong one: 401 everywhere.
    let feedback_body = json!({"trace_id": t1, "helpful": true}).to_string();
    for (method, p, body) in [
        ("GET", "/api/v1/conversations".to_owned(), None),
        ("GET", path.clone(), None),
        ("DELETE", path.clone(), None),
        ("POST", format!("{path}/remember"), None),
        ("GET", trace_path.clone(), None),
        ("POST", "/api/v1/feedback".to_owned(), Some(feedback_body)),
    ] {
        for key in [None, Some("kh_wrong")] {
            api.raw(method, &p, key, body.clone())
                .error(401, "UNAUTHENTICATED");
        }
    }

    // Delete: gone at once, everywhere; the trace stays for audits.
    let v = api.call("DELETE", &path, alice, None).ok();
    assert_eq!(v, json!({"deleted": true, "conversation_id": session}));
    api.get(&path, alice).error(404, "NOT_FOUND");
    api.call("DELETE", &path, alice, None)
        .error(404, "NOT_FOUND");
    assert_eq!(api.conversation_ids(alice, ""), [session2.as_str()]);
    api.call(
        "POST",
        "/api/v1/ask",
        alice,
        Some(json!({"question": FIRST, "session": session})),
    )
    .error(404, "NOT_FOUND");
    assert_eq!(api.get(&trace_path, alice).ok()["trace_id"], t1.as_str());
    // The other conversation is untouched.
    let conv2 = api
        .get(&format!("/api/v1/conversations/{session2}"), alice)
        .ok();
    assert_eq!(conv2["turns"].as_array().unwrap().len(), 1, "{conv2}");
    assert_eq!(conv2["turns"][0]["question"], THIRD);
}

/// Every endpoint is in the OpenAPI document, tagged, with its security and error bodies.
fn openapi_lists_the_conversation_paths(api: &Api) {
    let r = api.raw("GET", "/openapi.json", None, None);
    let doc = r.ok();
    for (path, method) in [
        ("/api/v1/conversations", "get"),
        ("/api/v1/conversations/{id}", "get"),
        ("/api/v1/conversations/{id}", "delete"),
        ("/api/v1/conversations/{id}/remember", "post"),
        ("/api/v1/traces", "get"),
        ("/api/v1/traces/{trace_id}", "get"),
        ("/api/v1/feedback", "post"),
    ] {
        let op = &doc["paths"][path][method];
        assert_eq!(op["tags"][0], "conversations", "{path}: {op}");
        assert!(op["security"].is_array(), "{path}: {op}");
        assert!(op["responses"]["200"].is_object(), "{path}: {op}");
        assert!(op["responses"]["4XX"].is_object(), "{path}: {op}");
    }
}

// ----- the two backends ---------------------------------------------------------------------

#[test]
fn conversations_traces_and_feedback_on_a_local_hub() {
    let dir = tempfile::tempdir().unwrap();
    let docs = write_docs(dir.path());
    let mut config = EngineConfig::new(dir.path().join("data"));
    config.models = ModelConfig::keyword_only();
    let hub = Arc::new(Hub::open(config).unwrap());
    let keys = populate(&hub, &docs);
    let server = serve(hub);
    let api = Api::new(vec![server.base.clone()]);
    scenario(&api, &keys);
    openapi_lists_the_conversation_paths(&api);
}

fn replica(database: &str, name: &str, data: &Path) -> Arc<Hub> {
    let mut config = EngineConfig::new(data);
    config.models = ModelConfig::keyword_only();
    config.team = Some(TeamConfig {
        database: database.to_owned(),
        replica: name.to_owned(),
        secret_key_file: None,
        host: "test-host".into(),
    });
    Arc::new(Hub::open_with(config, Arc::new(RealFs), ModelSet::none()).unwrap())
}

#[test]
fn conversations_traces_and_feedback_across_two_team_replicas() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("conversations").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let docs = write_docs(dir.path());
    let a = replica(&url, "a", &dir.path().join("a"));
    let b = replica(&url, "b", &dir.path().join("b"));
    // Written through A; B learns of the documents from the database's change log.
    let keys = populate(&a, &docs);
    let (served_a, served_b) = (serve(a), serve(b));
    let api = Api::new(vec![served_a.base.clone(), served_b.base.clone()]);
    scenario(&api, &keys);
    eprintln!("team scenario: every request alternated between two replicas");
}
