//! The client against a real `knowhub-server` on 127.0.0.1: every method, with the server's
//! permissions (a user sees only what they may read; another's conversation is not found),
//! its errors (a refused key, a missing document, a server that is down), the endpoints
//! compared with the server's OpenAPI document, and https through a TLS front with a
//! company CA (trusted with `ca_file`, refused without).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::sync::Arc;

use knowhub_client::{
    AskEvent, AskRequest, Client, ClientError, ClientOptions, ENDPOINTS, Feedback, ItemFilter,
    MemoryCommitRequest, MemoryMessage, SearchRequest,
};
use knowhub_engine::authz::{Role, ScopeSet, UserId};
use knowhub_engine::{EngineConfig, Hub, IngestOptions, ModelConfig, dev_context};
use knowhub_server::ServerState;

struct Server {
    addr: SocketAddr,
    alice: String,
    carol: String,
    handbook: Vec<u8>,
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

const HANDBOOK: &str = "# Handbook\n\n## Leave\n\nEmployees get fifteen days of annual leave per \
    year. Leave requests need two weeks notice.\n\n## 试用期\n\n新员工的试用期为三个月。";

fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("public")).unwrap();
    std::fs::create_dir_all(docs.join("hr")).unwrap();
    std::fs::write(docs.join("public/handbook.md"), HANDBOOK).unwrap();
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
    let carol = key("carol", Role::Admin);
    hub.init_root_key(&dev).unwrap();
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
    rt.spawn(knowhub_server::serve_on(
        listener,
        state,
        std::future::pending(),
    ));
    Server {
        addr,
        alice,
        carol,
        handbook: HANDBOOK.as_bytes().to_vec(),
        rt,
        _dir: dir,
    }
}

fn client(s: &Server, key: &str) -> Client {
    Client::new(&format!("http://{}", s.addr), key, ClientOptions::default()).unwrap()
}

#[test]
fn every_method_works_against_the_server_under_its_permissions() {
    let s = start();
    let alice = client(&s, &s.alice);

    let health = alice.health().unwrap();
    assert_eq!(
        (health.status.as_str(), health.store.as_str()),
        ("ok", "sqlite")
    );
    let me = alice.me().unwrap();
    assert_eq!(
        (
            me.account_id.as_str(),
            me.user_id.as_str(),
            me.role.as_str()
        ),
        ("default", "alice", "USER")
    );

    // Keyword search and extractive answers: the server was started without models.
    let models = alice.models().unwrap();
    assert_eq!(
        (models.answer_model, models.embedder, models.reranker),
        (None, None, None)
    );

    // Search: the handbook, never the salaries.
    let hits = alice.search(&SearchRequest::new("annual leave")).unwrap();
    assert!(
        hits.iter().any(|h| h.path.ends_with("handbook.md")),
        "{hits:?}"
    );
    assert!(
        alice
            .search(&SearchRequest::new("salary band"))
            .unwrap()
            .is_empty()
    );
    let handbook_id = hits[0].document_id;
    let chunk_id = hits[0].chunk_id;

    // Ask, then continue the conversation with a streamed answer.
    let first = alice
        .ask(&AskRequest::new(
            "How many days of annual leave do employees get?",
        ))
        .unwrap();
    assert!(first.answer.contains("fifteen"), "{}", first.answer);
    assert!(
        first
            .sources
            .iter()
            .any(|s| s.title == "Handbook" && s.uri.starts_with("kb://doc/")),
        "{:?}",
        first.sources
    );
    let conversation = first.session_id.clone().unwrap();
    let mut steps = 0;
    let mut streamed = String::new();
    let second = alice
        .ask_streaming(
            &AskRequest {
                session: Some(conversation.clone()),
                ..AskRequest::new("新员工的试用期多长？")
            },
            |event| {
                match event {
                    AskEvent::Step { .. } => steps += 1,
                    AskEvent::Token(t) => streamed.push_str(&t),
                    AskEvent::Replace(t) => streamed = t,
                }
                ControlFlow::Continue(())
            },
        )
        .unwrap();
    assert!(steps > 0, "workflow steps were streamed");
    assert!(second.answer.contains("三个月"), "{}", second.answer);
    assert_eq!(second.session_id.as_deref(), Some(conversation.as_str()));

    // Documents: listings, one record, the viewer's text, a passage, the file itself.
    let sources = alice.sources(None).unwrap();
    assert_eq!(sources.documents.len(), 1, "{:?}", sources.documents);
    assert!(sources.documents[0].path.ends_with("handbook.md"));
    assert_eq!(alice.documents(None).unwrap().len(), 1);
    assert_eq!(alice.sources(Some("salaries")).unwrap().total, 0);
    let doc = alice.document(handbook_id).unwrap();
    assert_eq!(doc.title, "Handbook");
    let preview = alice.preview(handbook_id).unwrap();
    assert!(preview.text.contains("fifteen days"));
    assert!(!preview.passages.is_empty());
    let passage = alice.passage(chunk_id).unwrap();
    assert_eq!(passage.document_id, handbook_id);
    let mut bytes = Vec::new();
    let file = alice.download(handbook_id, &mut bytes).unwrap();
    assert_eq!(bytes, s.handbook);
    assert_eq!(file.bytes, s.handbook.len() as u64);
    assert_eq!(file.file_name.as_deref(), Some("handbook.md"));

    // What alice may not read is not found, exactly like what does not exist.
    let admin = client(&s, &s.carol);
    let salaries = admin
        .documents(None)
        .unwrap()
        .into_iter()
        .find(|d| d.path.ends_with("salaries.md"))
        .unwrap();
    for err in [
        alice.document(salaries.id).unwrap_err(),
        alice.preview(salaries.id).unwrap_err(),
        alice.download(salaries.id, &mut Vec::new()).unwrap_err(),
        alice.document(999_999).unwrap_err(),
    ] {
        assert_eq!(err.status(), Some(404), "{err}");
    }

    // Conversations, traces, feedback.
    let listed = alice.conversations(10).unwrap();
    assert_eq!(listed.len(), 1);
    let full = alice.conversation(&conversation).unwrap();
    assert_eq!(full.turns.len(), 2);
    let trace = alice.trace(&first.trace_id).unwrap();
    assert!(trace.is_object());
    alice
        .feedback(&Feedback {
            trace_id: first.trace_id.clone(),
            helpful: true,
            note: Some("clear".into()),
            cited: None,
        })
        .unwrap();
    assert_eq!(
        alice.conversation(&conversation).unwrap().turns[0].helpful,
        Some(true)
    );
    // Another user's conversation is not found, administrators' requests included.
    assert_eq!(
        admin.conversation(&conversation).unwrap_err().status(),
        Some(404)
    );
    alice.delete_conversation(&conversation).unwrap();
    assert_eq!(
        alice.conversation(&conversation).unwrap_err().status(),
        Some(404)
    );

    // A refused key, a stopped stream, a server that is not there.
    let stranger = client(&s, "kh_not-a-key");
    let err = stranger.search(&SearchRequest::new("leave")).unwrap_err();
    assert!(err.is_unauthenticated(), "{err}");
    let err = alice
        .ask_streaming(&AskRequest::new("How much annual leave?"), |_| {
            ControlFlow::Break(())
        })
        .unwrap_err();
    assert!(matches!(err, ClientError::Cancelled), "{err}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gone = Client::new(
        &format!("http://127.0.0.1:{port}"),
        "kh_x",
        ClientOptions::default(),
    )
    .unwrap();
    let err = gone.health().unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(err.to_string().contains("cannot reach"), "{err}");
    drop(s.rt);
}

#[test]
fn administration_works_for_administrators_only() {
    let s = start();
    let (alice, admin) = (client(&s, &s.alice), client(&s, &s.carol));
    let account = admin.me().unwrap().account_id;

    // Users, keys and groups.
    let dave = admin
        .add_user(&account, "dave", "user", Some("Dave"))
        .unwrap();
    let as_dave = client(&s, &dave.user_key);
    let salary = || {
        as_dave
            .search(&SearchRequest::new("salary band"))
            .unwrap()
            .len()
    };
    assert_eq!(salary(), 0);
    admin.join_group(&account, "dave", "team:hr").unwrap();
    assert_eq!(salary(), 1);
    admin.leave_group(&account, "dave", "team:hr").unwrap();
    assert_eq!(salary(), 0);
    admin.set_role(&account, "dave", "admin").unwrap();
    let users = admin.users(&account).unwrap();
    let listed = users.iter().find(|u| u.user_id == "dave").unwrap();
    assert_eq!(
        (listed.role.as_str(), listed.display_name.as_str()),
        ("ADMIN", "Dave")
    );
    let rotated = admin.rotate_key(&account, "dave").unwrap();
    assert!(as_dave.me().unwrap_err().is_unauthenticated());
    admin.remove_user(&account, "dave").unwrap();
    assert!(
        client(&s, &rotated.user_key)
            .me()
            .unwrap_err()
            .is_unauthenticated()
    );
    assert_eq!(
        alice
            .add_user(&account, "mallory", "admin", None)
            .unwrap_err()
            .status(),
        Some(403)
    );

    // Who may read a folder, and who can see it.
    let hr = s._dir.path().join("docs/hr").canonicalize().unwrap();
    let hr = hr.to_str().unwrap();
    let readers = admin.readers(hr).unwrap();
    assert_eq!(readers.documents, 1);
    let of = |r: &knowhub_client::Readers, who: &str| {
        r.readers
            .iter()
            .find(|u| u.user_id == who)
            .unwrap()
            .readable
    };
    assert_eq!(of(&readers, "alice"), 0);
    let changed = admin
        .set_acl(hr, Some(&["team:hr".into(), "user:alice".into()]))
        .unwrap();
    assert_eq!(
        (changed.kind.as_str(), changed.explicit.is_some()),
        ("folder", true)
    );
    assert_eq!(of(&admin.readers(hr).unwrap(), "alice"), 1);
    let cleared = admin.set_acl(hr, None).unwrap();
    assert!(cleared.explicit.is_none());
    admin.set_acl(hr, Some(&["team:hr".into()])).unwrap();
    assert_eq!(of(&admin.readers(hr).unwrap(), "alice"), 0);
    // A folder alice may not read is not there for her.
    assert_eq!(
        alice
            .set_acl(hr, Some(&["public".into()]))
            .unwrap_err()
            .status(),
        Some(404)
    );

    // An upload into a collection, read by the server before it answers.
    let notes = s._dir.path().join("notes.md");
    std::fs::write(
        &notes,
        "# Notes\n\nThe ferry to the lighthouse leaves at seven.",
    )
    .unwrap();
    let report = alice
        .upload(
            &[knowhub_client::UploadFile {
                name: "notes \"ferry\".md".into(),
                path: notes,
            }],
            Some("trips"),
        )
        .unwrap();
    assert_eq!(report.files.len(), 1);
    assert_eq!(report.files[0].outcome, "added", "{report:?}");
    assert!(report.files[0].path.contains("trips"), "{report:?}");
    assert_eq!(
        alice
            .search(&SearchRequest::new("ferry lighthouse"))
            .unwrap()
            .len(),
        1
    );
    let missing = alice.upload(
        &[knowhub_client::UploadFile {
            name: "gone.md".into(),
            path: s._dir.path().join("gone.md"),
        }],
        None,
    );
    assert!(
        matches!(missing, Err(ClientError::Read { .. })),
        "{missing:?}"
    );
    // Alice's destinations now include the collection the upload made.
    let destinations = alice.upload_destinations().unwrap();
    assert_eq!(destinations[0].kind, "uploads");
    assert!(
        destinations
            .iter()
            .any(|d| d.kind == "collection" && d.name == "trips"),
        "{destinations:?}"
    );

    // The server's own folders and queue (administrators), the audit trail.
    let projects = s._dir.path().join("docs/projects");
    std::fs::create_dir_all(&projects).unwrap();
    std::fs::write(
        projects.join("atlas.md"),
        "# Atlas\n\nProject Atlas ships the harbour crane software in May.",
    )
    .unwrap();
    let projects = projects.canonicalize().unwrap().display().to_string();
    assert_eq!(
        alice
            .ingest(std::slice::from_ref(&projects), false)
            .unwrap_err()
            .status(),
        Some(403)
    );
    let ingested = admin
        .ingest(std::slice::from_ref(&projects), false)
        .unwrap();
    assert_eq!(ingested.status, "ingested", "{ingested:?}");
    assert_eq!(ingested.totals.as_ref().map(|t| t.added), Some(1));
    assert_eq!(ingested.files[0].outcome, "added");
    let rules = knowhub_client::FolderRules {
        exclude: vec!["*.tmp".into()],
        ..Default::default()
    };
    let watched = admin.watch(&projects, Some(&rules)).unwrap();
    assert_eq!(watched.rules, rules);
    assert!(admin.watches().unwrap().iter().any(|w| w.path == projects));
    let queue = admin.queue(10).unwrap();
    assert!(!queue.counts.paused);
    assert!(admin.set_queue_paused(true).unwrap());
    assert!(admin.queue(0).unwrap().counts.paused);
    assert!(!admin.set_queue_paused(false).unwrap());
    assert_eq!(
        alice.set_queue_paused(true).unwrap_err().status(),
        Some(403)
    );
    admin.cancel_jobs(Some(&projects)).unwrap();
    assert_eq!(admin.retry_failed(None).unwrap(), 0);
    admin.unwatch(&projects).unwrap();
    assert!(!admin.watches().unwrap().iter().any(|w| w.path == projects));
    assert_eq!(
        alice
            .remove(std::slice::from_ref(&projects))
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(admin.remove(std::slice::from_ref(&projects)).unwrap(), 1);
    let trail = alice.audit(100, None).unwrap();
    assert!(!trail.is_empty());
    assert!(trail.iter().all(|r| r["user"] == "alice"), "{trail:?}");
    assert!(
        admin
            .audit(100, Some("alice"))
            .unwrap()
            .iter()
            .all(|r| r["user"] == "alice")
    );

    // Web sources (this one is never reachable: a run concludes nothing and says why).
    let added = admin
        .add_crawl(&knowhub_client::NewCrawl {
            url: "http://127.0.0.1:9/wiki/".into(),
            settings: knowhub_client::CrawlSettings {
                depth: Some(1),
                ..Default::default()
            },
            readers: vec!["team:eng".into()],
        })
        .unwrap();
    assert_eq!(added.settings.depth, Some(1));
    assert_eq!(admin.crawls().unwrap().len(), 1);
    let changed = admin
        .update_crawl(
            added.id,
            &knowhub_client::CrawlSettings {
                every_secs: Some(6 * 3600),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        (changed.settings.depth, changed.settings.every_secs),
        (Some(1), Some(6 * 3600))
    );
    let run = admin.run_crawl(added.id).unwrap();
    assert!(run.summary.aborted.is_some(), "{run:?}");
    assert_eq!(alice.crawls().unwrap_err().status(), Some(403));
    assert_eq!(admin.remove_crawl(added.id).unwrap(), 0);
    assert!(admin.crawls().unwrap().is_empty());
}

#[test]
fn knowledge_resources_memories_traces_and_sql_sources_under_their_permissions() {
    let s = start();
    let (alice, admin) = (client(&s, &s.alice), client(&s, &s.carol));
    let account = admin.me().unwrap().account_id;
    let bob = client(
        &s,
        &admin
            .add_user(&account, "bob", "user", None)
            .unwrap()
            .user_key,
    );

    // Knowledge items: alice's own, which bob cannot see.
    let saved = alice
        .knowledge_save(&serde_json::json!({
            "task": "deploy a release",
            "content": "Tag the release, then run the canary for an hour before rolling out.",
            "types": ["strategy"],
            "tags": {"area": "ops"},
        }))
        .unwrap();
    let id = saved["id"].as_str().unwrap().to_owned();
    assert_eq!(saved["owner"], "alice");
    let filter = ItemFilter::default();
    let found = alice
        .knowledge_search("canary release", 5, 1, &filter)
        .unwrap();
    assert_eq!(found[0]["id"], id.as_str(), "{found:?}");
    assert!(found[0]["quality_score"].is_number());
    assert!(
        bob.knowledge_search("canary release", 5, 1, &filter)
            .unwrap()
            .is_empty()
    );
    assert_eq!(bob.knowledge_item(&id).unwrap_err().status(), Some(404));
    let ops = ItemFilter {
        tags: [("area".to_owned(), "ops".to_owned())].into(),
        ..ItemFilter::default()
    };
    assert_eq!(alice.knowledge_list(&ops, 10, 0).unwrap().len(), 1);
    let other = ItemFilter {
        types: vec!["tool".into()],
        ..ItemFilter::default()
    };
    assert!(alice.knowledge_list(&other, 10, 0).unwrap().is_empty());
    let changed = alice
        .knowledge_update(
            &id,
            &serde_json::json!({"content": "Tag the release and run the canary for two hours."}),
        )
        .unwrap();
    assert!(changed["content"].as_str().unwrap().contains("two hours"));
    assert_eq!(alice.knowledge_versions(&id).unwrap().len(), 1);
    let outcomes = alice
        .knowledge_batch_update(&[
            (
                id.clone(),
                serde_json::json!({"add_helpful_case": {"task": "v2 release"}}),
            ),
            (
                "knowledge-0-missing".to_owned(),
                serde_json::json!({"update_score": 4}),
            ),
        ])
        .unwrap();
    assert_eq!(
        (outcomes[0]["ok"].as_bool(), outcomes[1]["ok"].as_bool()),
        (Some(true), Some(false)),
        "{outcomes:?}"
    );
    assert_eq!(alice.knowledge_item(&id).unwrap()["eval"]["helpful"], 1);
    let plan = alice.knowledge_slim(None, true).unwrap();
    assert_eq!(plan["applied"], false);
    assert_eq!(bob.knowledge_delete(&id).unwrap_err().status(), Some(404));
    alice.knowledge_delete(&id).unwrap();
    assert_eq!(alice.knowledge_item(&id).unwrap_err().status(), Some(404));

    // Resources: the secure body goes back to its owner only.
    let resource = alice
        .resource_save(&serde_json::json!({
            "id": "credentials/wiki",
            "content_type": "credential",
            "title": "Wiki bot",
            "secure_body": "token-123",
            "scopes": ["public"],
        }))
        .unwrap();
    assert_eq!(resource["has_secure_body"], true);
    assert_eq!(
        alice.resource("credentials/wiki").unwrap()["secure_body"],
        "token-123"
    );
    let shared = bob.resource("credentials/wiki").unwrap();
    assert_eq!(
        (
            shared["has_secure_body"].as_bool(),
            shared["secure_body"].is_null()
        ),
        (Some(true), true)
    );
    let credentials = ItemFilter {
        types: vec!["credential".into()],
        ..ItemFilter::default()
    };
    assert_eq!(bob.resources(&credentials, 10, 0).unwrap().len(), 1);
    assert_eq!(
        bob.resource_update("credentials/wiki", &serde_json::json!({"title": "mine"}))
            .unwrap_err()
            .status(),
        Some(403)
    );
    alice
        .resource_update(
            "credentials/wiki",
            &serde_json::json!({"title": "Wiki bot (ops)"}),
        )
        .unwrap();
    alice.resource_delete("credentials/wiki").unwrap();
    assert_eq!(
        alice.resource("credentials/wiki").unwrap_err().status(),
        Some(404)
    );

    // Memories: alice's own, from a conversation or from messages.
    let answer = alice
        .ask(&AskRequest::new(
            "I prefer answers in English. How many days of annual leave do employees get?",
        ))
        .unwrap();
    let conversation = answer.session_id.clone().unwrap();
    let remembered = alice.remember_conversation(&conversation, None).unwrap();
    assert!(
        remembered["candidates"].as_u64().unwrap() >= 1,
        "{remembered}"
    );
    assert_eq!(
        bob.remember_conversation(&conversation, None)
            .unwrap_err()
            .status(),
        Some(404)
    );
    let committed = alice
        .commit_memories(&MemoryCommitRequest {
            messages: vec![MemoryMessage {
                role: "user".into(),
                content: "I work in the Berlin office.".into(),
                user_id: None,
            }],
            ..MemoryCommitRequest::default()
        })
        .unwrap();
    assert_eq!(committed["status"], "success", "{committed}");
    let mine = alice.memories("ctx://user/alice/memories").unwrap();
    assert!(!mine.is_empty());
    let uri = mine[0]["uri"].as_str().unwrap().to_owned();
    assert!(mine[0]["overview"].is_string(), "{:?}", mine[0]);
    assert!(alice.memory(&uri).unwrap()["content"].is_string());
    assert_eq!(
        bob.memories("ctx://user/alice/memories")
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(bob.memory(&uri).unwrap_err().status(), Some(404));
    alice.forget_memory(&uri).unwrap();
    assert_eq!(alice.memory(&uri).unwrap_err().status(), Some(404));

    // Traces: the caller's own; administrators see everyone's.
    let traces = alice.traces(10).unwrap();
    assert!(
        traces.iter().any(|t| t.trace_id == answer.trace_id),
        "{traces:?}"
    );
    assert!(bob.traces(10).unwrap().is_empty());
    assert!(
        admin
            .traces(10)
            .unwrap()
            .iter()
            .any(|t| t.user_id == "alice")
    );

    // SQL data sources: administrators register them; users query what their scopes allow.
    let db = s._dir.path().join("finance.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE budgets (team TEXT, amount INTEGER); INSERT INTO budgets VALUES ('ops', 10);",
    )
    .unwrap();
    drop(conn);
    let db = db.to_str().unwrap();
    let hr = ["team:hr".to_owned()];
    assert_eq!(
        alice
            .add_sql_source("finance", db, &hr, None)
            .unwrap_err()
            .status(),
        Some(403)
    );
    let source = admin.add_sql_source("finance", db, &hr, None).unwrap();
    assert_eq!(
        (source.name.as_str(), source.scopes.as_slice()),
        ("finance", &hr[..])
    );
    assert!(
        admin
            .sql_sources()
            .unwrap()
            .sources
            .iter()
            .any(|x| x.name == "finance")
    );
    assert!(alice.sql_sources().unwrap().sources.is_empty());
    admin.join_group(&account, "alice", "team:hr").unwrap();
    assert_eq!(alice.sql_sources().unwrap().sources.len(), 1);
    assert_eq!(
        alice.remove_sql_source("finance").unwrap_err().status(),
        Some(403)
    );
    admin.remove_sql_source("finance").unwrap();
    assert!(admin.sql_sources().unwrap().sources.is_empty());
    drop(s.rt);
}

#[test]
fn the_endpoints_the_client_calls_are_the_servers() {
    let s = start();
    let text = ureq::get(format!("http://{}/openapi.json", s.addr))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut served = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            served.insert((method.to_uppercase(), path.clone()));
        }
    }
    for (method, path) in ENDPOINTS {
        assert!(
            served.contains(&(method.to_string(), path.to_string())),
            "{method} {path} is not in the server's OpenAPI document"
        );
    }
}

/// A test CA and a certificate for 127.0.0.1/localhost signed by it.
fn certificates() -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "Company CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".into()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

/// A TLS front on 127.0.0.1 for the plain server at `backend` (as a reverse proxy would be).
fn tls_front(
    rt: &tokio::runtime::Runtime,
    backend: SocketAddr,
    cert: &str,
    key: &str,
) -> SocketAddr {
    use rustls::pki_types::pem::PemObject;
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(socket).await else {
                    return;
                };
                if let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                }
            });
        }
    });
    addr
}

#[test]
fn https_with_a_company_ca_is_trusted_only_when_given() {
    let s = start();
    let (ca, cert, key) = certificates();
    let front = tls_front(&s.rt, s.addr, &cert, &key);
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("company-ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let url = format!("https://localhost:{}", front.port());

    let trusted = Client::new(
        &url,
        &s.alice,
        ClientOptions {
            ca_file: Some(ca_file),
            ..ClientOptions::default()
        },
    )
    .unwrap();
    assert_eq!(trusted.health().unwrap().status, "ok");
    assert!(
        !trusted
            .search(&SearchRequest::new("annual leave"))
            .unwrap()
            .is_empty()
    );

    let untrusted = Client::new(&url, &s.alice, ClientOptions::default()).unwrap();
    let err = untrusted.health().unwrap_err();
    assert!(matches!(err, ClientError::Tls { .. }), "{err:?}");

    let err = Client::new(
        &url,
        &s.alice,
        ClientOptions {
            ca_file: Some(dir.path().join("missing.pem")),
            ..ClientOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, ClientError::CaFile { .. }), "{err}");
}
