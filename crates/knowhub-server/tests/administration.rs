//! The administration paths of the HTTP API (folders and ACLs, "who can see this", watched
//! folders, ingestion and the queue, memberships, SQL data sources), driven with a real HTTP
//! client against real servers on 127.0.0.1. One scenario, run twice:
//!
//! * on a local data directory: one hub, one server;
//! * on a team database (a private PostgreSQL): two replicas, each its own hub, data
//!   directory and server. Every change is made through one and checked through the other,
//!   which is the point of a team server: permissions on the very next request, documents
//!   once the checking replica's index has followed the change log.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use knowhub_crawl::testing::{Route, TestSite};
use knowhub_engine::authz::{Role, ScopeSet, UserId};
use knowhub_engine::team::TeamConfig;
use knowhub_engine::{EngineConfig, Hub, IngestOptions, ModelConfig, dev_context};
use knowhub_pg::PgCluster;
use knowhub_server::ServerState;
use serde_json::{Value, json};

// ----- servers ------------------------------------------------------------------------------

/// A hub served on 127.0.0.1 until dropped.
struct Server {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// Held here so that the hub is dropped outside the server's runtime (a team hub's
    /// database client may not be dropped inside one).
    _hub: Arc<Hub>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(hub: Arc<Hub>) -> Server {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let state = ServerState::new(Arc::clone(&hub), None);
    let thread = std::thread::spawn(move || {
        rt.block_on(knowhub_server::serve_on(listener, state, async move {
            let _ = stopped.await;
        }))
        .unwrap();
    });
    Server {
        base,
        stop: Some(stop),
        thread: Some(thread),
        _hub: hub,
    }
}

fn open_hub(data: &Path, team: Option<(&str, &str)>) -> Arc<Hub> {
    let mut config = EngineConfig::new(data);
    config.models = ModelConfig::keyword_only();
    if let Some((database, replica)) = team {
        let mut team = TeamConfig::new(database.to_owned());
        team.replica = replica.to_owned();
        team.host = "test-host".into();
        config.team = Some(team);
    }
    Arc::new(Hub::open(config).unwrap())
}

// ----- the world ----------------------------------------------------------------------------

/// Marker words: each names one document, and must reach exactly those who may read it.
const HANDBOOK: &str = "zqhandbook";
const SALARIES: &str = "zqsalaries";
const DESIGN: &str = "zqdesign";
const FRESH: &str = "zqfresh";
const WIKI: &str = "zqwikipage";

struct World {
    /// Where changes are made, and where they are checked (the same server locally).
    change: String,
    check: String,
    http: ureq::Agent,
    /// The ingested knowledge base (canonical: the paths the server reports).
    kb: PathBuf,
    /// Outside the knowledge base: files ingested, folders watched, a database registered.
    outside: PathBuf,
    admin: String,
    alice: String,
    bob: String,
    /// Whether the checking replica's index follows the writer's with a delay.
    team: bool,
    // Servers before the hubs' data directories (fields drop in order).
    _servers: Vec<Server>,
    _dir: tempfile::TempDir,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Files, users and keys, through the first hub's engine; then the servers. `database`: a
/// team database (two replicas), or `None` (one local data directory).
fn world(database: Option<&str>) -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let kb = root.join("kb");
    let outside = root.join("outside");
    write(
        &kb.join("public/handbook.md"),
        &format!("# Handbook\n\n{HANDBOOK}: employees get fifteen days of annual leave."),
    );
    write(
        &kb.join("hr/salaries.md"),
        &format!("# Salary bands\n\n{SALARIES}: the engineering band is 90k to 120k."),
    );
    write(
        &kb.join("eng/design.md"),
        &format!("# Design\n\n{DESIGN}: the service keeps one writer per replica."),
    );
    std::fs::create_dir_all(&outside).unwrap();

    let hubs: Vec<Arc<Hub>> = match database {
        None => vec![open_hub(&root.join("data"), None)],
        Some(db) => ["a", "b"]
            .iter()
            .map(|r| open_hub(&root.join(format!("data-{r}")), Some((db, r))))
            .collect(),
    };
    let dev = dev_context();
    let engine = hubs[0].engine(&dev).unwrap();
    engine
        .ingest(
            &dev,
            std::slice::from_ref(&kb),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    let public: ScopeSet = "public".parse().unwrap();
    engine
        .set_folder_acl(&dev, &kb.join("public"), Some(&public))
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
    let admin = key("ada", Role::Admin);
    let alice = key("alice", Role::User);
    let bob = key("bob", Role::User);
    // Production mode: every request needs a key.
    hubs[0].init_root_key(&dev).unwrap();
    drop(engine);

    let servers: Vec<Server> = hubs.into_iter().map(serve).collect();
    let http = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build(),
    );
    let w = World {
        change: servers[0].base.clone(),
        check: servers[servers.len() - 1].base.clone(),
        http,
        kb,
        outside,
        admin,
        alice,
        bob,
        team: database.is_some(),
        _servers: servers,
        _dir: dir,
    };
    // The checking replica has followed the initial ingest before anything is probed.
    w.eventually("the initial documents on the checking replica", || {
        w.finds(&w.check, &w.admin, SALARIES)
    });
    w
}

// ----- requests -----------------------------------------------------------------------------

struct Reply {
    status: u16,
    body: Value,
    text: String,
}

impl Reply {
    fn ok(self, status: u16, what: &str) -> Value {
        assert_eq!(self.status, status, "{what}: {}", self.text);
        self.body
    }

    /// The API's one error body, with this status and code.
    fn error(&self, status: u16, code: &str, what: &str) {
        assert_eq!(self.status, status, "{what}: {}", self.text);
        assert_eq!(self.body["error"]["code"], code, "{what}: {}", self.text);
        assert!(
            self.body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{what}: {}",
            self.text
        );
    }
}

/// `s` for a query string (paths keep their slashes).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn text(p: &Path) -> String {
    p.display().to_string()
}

impl World {
    /// `method path` on `base`, with `key` (none: no key at all).
    fn send(
        &self,
        base: &str,
        key: Option<&str>,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Reply {
        let mut b = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{base}{path}"));
        if let Some(key) = key {
            b = b.header("x-api-key", key);
        }
        let mut resp = match body {
            Some(v) => {
                b = b.header("content-type", "application/json");
                self.http.run(b.body(v.to_string()).unwrap()).unwrap()
            }
            None => self.http.run(b.body(()).unwrap()).unwrap(),
        };
        let text = resp.body_mut().read_to_string().unwrap();
        Reply {
            status: resp.status().as_u16(),
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        }
    }

    /// Through the replica where changes are made.
    fn change(&self, key: &str, method: &str, path: &str, body: Option<Value>) -> Reply {
        self.send(&self.change, Some(key), method, path, body)
    }

    /// Through the replica where changes are checked.
    fn check(&self, key: &str, method: &str, path: &str, body: Option<Value>) -> Reply {
        self.send(&self.check, Some(key), method, path, body)
    }

    /// Whether a keyword search as `key` on `base` finds `word`.
    fn finds(&self, base: &str, key: &str, word: &str) -> bool {
        let r = self.send(
            base,
            Some(key),
            "POST",
            "/api/v1/search",
            Some(json!({"query": word, "limit": 50, "mode": "keyword"})),
        );
        assert_eq!(r.status, 200, "search {word}: {}", r.text);
        r.text.contains(word)
    }

    /// Waits for `cond`: at once locally; in team mode within the follow delay (documents
    /// reach the checking replica's index through the change log).
    fn eventually(&self, what: &str, mut cond: impl FnMut() -> bool) {
        let limit = if self.team {
            Duration::from_secs(20)
        } else {
            Duration::ZERO
        };
        let start = Instant::now();
        while !cond() {
            assert!(start.elapsed() < limit, "{what} (within {limit:?})");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The searches of `who` on the checking replica: which markers they find.
    fn sees(&self, key: &str, word: &str) -> bool {
        self.finds(&self.check, key, word)
    }

    fn folder<'a>(&self, tree: &'a Value, path: &Path) -> &'a Value {
        tree["folders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == text(path))
            .unwrap_or_else(|| panic!("{} in the folder tree: {tree}", path.display()))
    }

    fn readable(&self, readers: &Value, user: &str) -> u64 {
        readers["readers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["user_id"] == user)
            .unwrap_or_else(|| panic!("{user} among the readers: {readers}"))["readable"]
            .as_u64()
            .unwrap()
    }
}

const GROUPS: &str = "/api/v1/admin/accounts/default/users";

fn membership(user: &str, group: &str) -> String {
    format!("{GROUPS}/{user}/groups/{group}")
}

// ----- the scenario -------------------------------------------------------------------------

/// Everything an administrator does over HTTP, and what users see after each change.
fn scenario(w: &World) {
    folders_and_acls(w);
    memberships(w);
    document_acl(w);
    watches(w);
    ingestion(w);
    queue(w);
    sql_sources(w);
    crawls(w);
    users_are_refused(w);
    bad_input(w);
    no_key(w);
}

fn folders_and_acls(w: &World) {
    let hr = w.kb.join("hr");
    // At first hr/ has no ACL: its owner and administrators only.
    assert!(w.sees(&w.admin, SALARIES));
    assert!(!w.sees(&w.alice, SALARIES));
    assert!(w.sees(&w.alice, HANDBOOK));

    let tree = w
        .check(&w.admin, "GET", "/api/v1/folders", None)
        .ok(200, "folder tree");
    let root = w.folder(&tree, &w.kb);
    assert_eq!(root["acl"]["depth"], 0, "{root}");
    assert_eq!(root["documents"], 3, "{root}");
    let public = w.folder(&tree, &w.kb.join("public"));
    assert_eq!(public["acl"]["explicit"], "public", "{public}");
    assert_eq!(public["acl"]["depth"], 1, "{public}");
    assert!(w.folder(&tree, &hr)["acl"]["explicit"].is_null(), "{tree}");

    let set = w
        .change(
            &w.admin,
            "PUT",
            "/api/v1/acl",
            Some(json!({"path": text(&hr), "scopes": "team:hr"})),
        )
        .ok(200, "set hr's ACL");
    assert_eq!(set["kind"], "folder", "{set}");
    assert_eq!(set["explicit"], "team:hr", "{set}");
    let tree = w
        .check(&w.admin, "GET", "/api/v1/folders", None)
        .ok(200, "folder tree");
    let node = w.folder(&tree, &hr);
    assert_eq!(node["acl"]["explicit"], "team:hr", "{node}");
    assert_eq!(node["acl"]["effective"], "team:hr", "{node}");

    // Who can see hr/: administrators; alice and bob are not in team:hr yet.
    let path = format!("/api/v1/acl/readers?path={}", encode(&text(&hr)));
    let readers = w.check(&w.admin, "GET", &path, None).ok(200, "readers");
    assert_eq!(readers["documents"], 1, "{readers}");
    assert_eq!(w.readable(&readers, "ada"), 1);
    assert_eq!(w.readable(&readers, "alice"), 0);
    assert_eq!(w.readable(&readers, "bob"), 0);
    // …and of public/: everyone.
    let path = format!(
        "/api/v1/acl/readers?path={}",
        encode(&text(&w.kb.join("public")))
    );
    let readers = w.check(&w.admin, "GET", &path, None).ok(200, "readers");
    assert_eq!(w.readable(&readers, "alice"), 1);
    assert_eq!(w.readable(&readers, "bob"), 1);
}

fn memberships(w: &World) {
    let hr = w.kb.join("hr");
    let joined = w
        .change(&w.admin, "PUT", &membership("alice", "team:hr"), None)
        .ok(200, "alice joins team:hr");
    assert_eq!(joined["changed"], true, "{joined}");
    assert_eq!(joined["groups"], json!(["team:hr"]), "{joined}");
    // Again: nothing changes.
    let again = w
        .change(&w.admin, "PUT", &membership("alice", "team:hr"), None)
        .ok(200, "alice joins team:hr again");
    assert_eq!(again["changed"], false, "{again}");

    // The next request on the other replica reflects it.
    assert!(w.sees(&w.alice, SALARIES));
    assert!(!w.sees(&w.bob, SALARIES));
    let groups = w
        .check(&w.admin, "GET", &format!("{GROUPS}/alice/groups"), None)
        .ok(200, "alice's groups");
    assert_eq!(groups["groups"], json!(["team:hr"]), "{groups}");
    let own = w
        .check(&w.alice, "GET", &format!("{GROUPS}/alice/groups"), None)
        .ok(200, "alice's own groups");
    assert_eq!(own["groups"], json!(["team:hr"]), "{own}");
    let path = format!("/api/v1/acl/readers?path={}", encode(&text(&hr)));
    let readers = w.check(&w.admin, "GET", &path, None).ok(200, "readers");
    assert_eq!(w.readable(&readers, "alice"), 1);
    assert_eq!(w.readable(&readers, "bob"), 0);

    let left = w
        .change(&w.admin, "DELETE", &membership("alice", "team:hr"), None)
        .ok(200, "alice leaves team:hr");
    assert_eq!(left["changed"], true, "{left}");
    assert_eq!(left["member"], false, "{left}");
    assert_eq!(left["groups"], json!([]), "{left}");
    assert!(!w.sees(&w.alice, SALARIES));

    // Clearing the ACL: hr/ is its owner's and administrators' again.
    w.change(
        &w.admin,
        "PUT",
        "/api/v1/acl",
        Some(json!({"path": text(&hr), "scopes": "public"})),
    )
    .ok(200, "open hr");
    assert!(w.sees(&w.bob, SALARIES));
    let cleared = w
        .change(
            &w.admin,
            "PUT",
            "/api/v1/acl",
            Some(json!({"path": text(&hr), "scopes": null})),
        )
        .ok(200, "clear hr's ACL");
    assert!(cleared["explicit"].is_null(), "{cleared}");
    assert!(!w.sees(&w.bob, SALARIES));
    assert!(w.sees(&w.admin, SALARIES));
}

fn document_acl(w: &World) {
    let design = w.kb.join("eng/design.md");
    assert!(!w.sees(&w.bob, DESIGN));
    let set = w
        .change(
            &w.admin,
            "PUT",
            "/api/v1/acl",
            Some(json!({"path": text(&design), "scopes": ["user:bob"]})),
        )
        .ok(200, "share design.md with bob");
    assert_eq!(set["kind"], "document", "{set}");
    assert_eq!(set["effective"], "user:bob", "{set}");
    assert!(w.sees(&w.bob, DESIGN));
    assert!(!w.sees(&w.alice, DESIGN));
    let path = format!("/api/v1/acl/readers?path={}", encode(&text(&design)));
    let readers = w.check(&w.admin, "GET", &path, None).ok(200, "readers");
    assert_eq!(w.readable(&readers, "bob"), 1);
    assert_eq!(w.readable(&readers, "alice"), 0);
    w.change(
        &w.admin,
        "PUT",
        "/api/v1/acl",
        Some(json!({"path": text(&design), "scopes": null})),
    )
    .ok(200, "unshare design.md");
    assert!(!w.sees(&w.bob, DESIGN));
}

fn watched(w: &World, key: &str) -> Vec<String> {
    w.check(key, "GET", "/api/v1/watches", None)
        .ok(200, "watches")["watches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["path"].as_str().unwrap().to_owned())
        .collect()
}

fn watches(w: &World) {
    let folder = w.outside.join("dropbox");
    write(&folder.join("note.md"), "# Note\n\nA note in the dropbox.");
    let target = text(&folder);
    let added = w
        .change(
            &w.admin,
            "POST",
            "/api/v1/watches",
            Some(json!({"path": target, "rules": {"exclude": ["*.tmp"]}})),
        )
        .ok(201, "watch the dropbox");
    assert_eq!(added["path"], target, "{added}");
    assert_eq!(added["owner"], "ada", "{added}");
    assert_eq!(added["rules"]["exclude"], json!(["*.tmp"]), "{added}");
    assert!(watched(w, &w.admin).contains(&target));
    // A user sees their own watched folders only.
    assert!(!watched(w, &w.alice).contains(&target));
    let tree = w
        .check(&w.admin, "GET", "/api/v1/folders", None)
        .ok(200, "folder tree");
    assert_eq!(w.folder(&tree, &folder)["watched"], true, "{tree}");

    let path = format!("/api/v1/watches?path={}", encode(&target));
    // Only its owner or an administrator stops it; to anyone else it is not there.
    w.change(&w.alice, "DELETE", &path, None).error(
        404,
        "NOT_FOUND",
        "alice unwatches ada's folder",
    );
    let removed = w
        .change(&w.admin, "DELETE", &path, None)
        .ok(200, "unwatch the dropbox");
    assert_eq!(removed["watched"], false, "{removed}");
    assert!(!watched(w, &w.admin).contains(&target));
    w.change(&w.admin, "DELETE", &path, None)
        .error(404, "NOT_FOUND", "unwatch twice");
}

/// A web source over HTTP: added with readers, run, its pages ingested, searched on the
/// checking replica with their address, listed there, removed.
fn crawls(w: &World) {
    let site = TestSite::start().unwrap();
    site.set(
        "/",
        Route::html(
            "<html><head><title>Wiki</title></head><body><a href=\"/page\">page</a></body></html>",
        ),
    );
    site.set(
        "/page",
        Route::html(&format!(
            "<html><head><title>Wiki page</title></head><body><p>{WIKI}: the wiki says the canteen opens at eight.</p></body></html>"
        )),
    );
    let add = json!({"url": site.url("/"), "settings": {"depth": 1, "delay_ms": 0}, "readers": ["user:alice"]});
    w.change(&w.alice, "POST", "/api/v1/crawls", Some(add.clone()))
        .error(403, "PERMISSION_DENIED", "a user adds a web source");
    w.change(
        &w.admin,
        "POST",
        "/api/v1/crawls",
        Some(json!({"url": "ftp://example.com/"})),
    )
    .error(422, "VALIDATION_ERROR", "an ftp address");
    let added = w
        .change(&w.admin, "POST", "/api/v1/crawls", Some(add))
        .ok(201, "add a web source");
    let id = added["id"].as_i64().unwrap();
    assert_eq!(added["settings"]["depth"], 1, "{added}");
    let run = w
        .change(&w.admin, "POST", &format!("/api/v1/crawls/{id}/run"), None)
        .ok(200, "run it");
    assert_eq!(run["summary"]["pages"], 2, "{run}");
    assert!(
        run["pages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["outcome"] == "fetched"),
        "{run}"
    );
    // What the server's queue worker does with the queued pages, done at once.
    w.change(
        &w.admin,
        "POST",
        "/api/v1/ingest",
        Some(json!({"paths": [added["folder"]]})),
    )
    .ok(200, "ingest the crawled pages");
    w.eventually("the crawled page on the checking replica", || {
        w.sees(&w.alice, WIKI)
    });
    assert!(!w.sees(&w.bob, WIKI), "bob is not a reader");
    let hits = w
        .check(
            &w.alice,
            "POST",
            "/api/v1/search",
            Some(json!({"query": WIKI, "mode": "keyword"})),
        )
        .ok(200, "search the wiki");
    assert_eq!(hits["hits"][0]["url"], site.url("/page"), "{hits}");
    let listed = w
        .check(&w.admin, "GET", "/api/v1/crawls", None)
        .ok(200, "list");
    assert_eq!(listed["crawls"][0]["last_run"]["pages"], 2, "{listed}");
    w.check(&w.alice, "GET", "/api/v1/crawls", None).error(
        403,
        "PERMISSION_DENIED",
        "a user lists web sources",
    );
    let changed = w
        .change(
            &w.admin,
            "PUT",
            &format!("/api/v1/crawls/{id}"),
            Some(json!({"every_secs": 21600})),
        )
        .ok(200, "schedule it");
    assert_eq!(changed["settings"]["every_secs"], 21600, "{changed}");
    assert_eq!(
        changed["settings"]["depth"], 1,
        "unchanged fields stay: {changed}"
    );
    let removed = w
        .change(&w.admin, "DELETE", &format!("/api/v1/crawls/{id}"), None)
        .ok(200, "remove it");
    assert_eq!(removed["documents"], 2, "{removed}");
    w.eventually("the crawled page gone on the checking replica", || {
        !w.sees(&w.alice, WIKI)
    });
    w.change(&w.admin, "DELETE", &format!("/api/v1/crawls/{id}"), None)
        .error(404, "NOT_FOUND", "remove twice");
}

fn ingestion(w: &World) {
    let incoming = w.outside.join("incoming");
    let fresh = incoming.join("fresh.md");
    write(
        &fresh,
        &format!("# Fresh\n\n{FRESH}: the new travel policy starts in May."),
    );
    assert!(!w.sees(&w.admin, FRESH));
    let done = w
        .change(
            &w.admin,
            "POST",
            "/api/v1/ingest",
            Some(json!({"paths": [text(&incoming)]})),
        )
        .ok(200, "ingest incoming/");
    assert_eq!(done["status"], "ingested", "{done}");
    assert_eq!(done["totals"]["added"], 1, "{done}");
    assert_eq!(done["files"][0]["path"], text(&fresh), "{done}");
    assert_eq!(done["files"][0]["outcome"], "added", "{done}");
    w.eventually(
        "the ingested file searchable on the checking replica",
        || w.sees(&w.admin, FRESH),
    );
    // The ingesting administrator owns it; nobody else reads it until it is shared.
    assert!(!w.sees(&w.alice, FRESH));
    w.change(
        &w.admin,
        "PUT",
        "/api/v1/acl",
        Some(json!({"path": text(&incoming), "scopes": "user:alice"})),
    )
    .ok(200, "share incoming/ with alice");
    assert!(w.sees(&w.alice, FRESH));
    assert!(!w.sees(&w.bob, FRESH));
    // Ingesting it again changes nothing.
    let again = w
        .change(
            &w.admin,
            "POST",
            "/api/v1/ingest",
            Some(json!({"paths": [text(&fresh)]})),
        )
        .ok(200, "ingest fresh.md again");
    assert_eq!(again["totals"]["unchanged"], 1, "{again}");

    let removed = w
        .change(
            &w.admin,
            "POST",
            "/api/v1/remove",
            Some(json!({"paths": [text(&fresh)]})),
        )
        .ok(200, "remove fresh.md");
    assert_eq!(removed["removed"], 1, "{removed}");
    w.eventually("the removed file gone from the checking replica", || {
        !w.sees(&w.admin, FRESH)
    });
    w.change(
        &w.admin,
        "POST",
        "/api/v1/remove",
        Some(json!({"paths": [text(&fresh)]})),
    )
    .error(404, "NOT_FOUND", "remove twice");
}

fn queue(w: &World) {
    let paused = w
        .change(&w.admin, "POST", "/api/v1/queue/pause", None)
        .ok(200, "pause");
    assert_eq!(paused["paused"], true, "{paused}");
    let q = w
        .check(&w.admin, "GET", "/api/v1/queue?limit=10", None)
        .ok(200, "queue");
    assert_eq!(q["counts"]["paused"], true, "{q}");
    assert!(q["jobs"].as_array().unwrap().len() <= 10, "{q}");
    let resumed = w
        .change(&w.admin, "POST", "/api/v1/queue/resume", None)
        .ok(200, "resume");
    assert_eq!(resumed["paused"], false, "{resumed}");
    let q = w
        .check(&w.admin, "GET", "/api/v1/queue", None)
        .ok(200, "queue");
    assert_eq!(q["counts"]["paused"], false, "{q}");
    let retried = w
        .change(&w.admin, "POST", "/api/v1/queue/retry-failed", None)
        .ok(200, "retry failed");
    assert!(retried["jobs"].is_u64(), "{retried}");
    let path = format!(
        "/api/v1/queue/cancel?path={}",
        encode(&text(&w.outside.join("nothing-here")))
    );
    let cancelled = w.change(&w.admin, "POST", &path, None).ok(200, "cancel");
    assert_eq!(cancelled["jobs"], 0, "{cancelled}");
    // Users see the counts and their own jobs.
    let mine = w
        .check(&w.alice, "GET", "/api/v1/queue", None)
        .ok(200, "alice's queue");
    assert!(
        mine["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|j| j["owner"] == "alice"),
        "{mine}"
    );
}

fn source_names(w: &World, key: &str) -> Vec<String> {
    w.check(key, "GET", "/api/v1/sql-sources", None)
        .ok(200, "sql sources")["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

fn sql_sources(w: &World) {
    let db = w.outside.join("ledger.sqlite");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE ledger (id INTEGER PRIMARY KEY, amount REAL);
             INSERT INTO ledger (amount) VALUES (10.5), (20.0);",
        )
        .unwrap();
    }
    let added = w
        .change(
            &w.admin,
            "POST",
            "/api/v1/sql-sources",
            Some(json!({"name": "finance", "path": text(&db), "scopes": "team:finance"})),
        )
        .ok(201, "register finance");
    assert_eq!(added["name"], "finance", "{added}");
    assert_eq!(added["path"], text(&db), "{added}");
    assert_eq!(added["scopes"], json!(["team:finance"]), "{added}");
    assert!(source_names(w, &w.admin).contains(&"finance".to_owned()));
    // Only members of team:finance may query it.
    assert!(!source_names(w, &w.alice).contains(&"finance".to_owned()));
    w.change(&w.admin, "PUT", &membership("alice", "team:finance"), None)
        .ok(200, "alice joins team:finance");
    assert!(source_names(w, &w.alice).contains(&"finance".to_owned()));
    assert!(!source_names(w, &w.bob).contains(&"finance".to_owned()));
    w.change(
        &w.admin,
        "DELETE",
        &membership("alice", "team:finance"),
        None,
    )
    .ok(200, "alice leaves team:finance");
    assert!(!source_names(w, &w.alice).contains(&"finance".to_owned()));

    w.change(&w.admin, "DELETE", "/api/v1/sql-sources/finance", None)
        .ok(200, "unregister finance");
    assert!(!source_names(w, &w.admin).contains(&"finance".to_owned()));
    w.change(&w.admin, "DELETE", "/api/v1/sql-sources/finance", None)
        .error(404, "NOT_FOUND", "unregister twice");
}

/// A USER is refused every administrator's endpoint (403), and nothing changes.
fn users_are_refused(w: &World) {
    let public = text(&w.kb.join("public"));
    let handbook = text(&w.kb.join("public/handbook.md"));
    let q = |p: &str| encode(p);
    let refused: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", "/api/v1/folders".into(), None),
        // A folder and a document alice can read but did not add.
        (
            "PUT",
            "/api/v1/acl".into(),
            Some(json!({"path": public, "scopes": "user:alice"})),
        ),
        (
            "PUT",
            "/api/v1/acl".into(),
            Some(json!({"path": handbook, "scopes": null})),
        ),
        (
            "GET",
            format!("/api/v1/acl/readers?path={}", q(&public)),
            None,
        ),
        (
            "POST",
            "/api/v1/watches".into(),
            Some(json!({"path": text(&w.outside)})),
        ),
        (
            "POST",
            "/api/v1/ingest".into(),
            Some(json!({"paths": [text(&w.kb)]})),
        ),
        // Whether a path exists on the server is none of a user's business.
        (
            "POST",
            "/api/v1/ingest".into(),
            Some(json!({"paths": ["/no/such/path"]})),
        ),
        (
            "POST",
            "/api/v1/remove".into(),
            Some(json!({"paths": [handbook]})),
        ),
        ("POST", "/api/v1/queue/pause".into(), None),
        ("POST", "/api/v1/queue/resume".into(), None),
        ("POST", "/api/v1/queue/retry-failed".into(), None),
        ("POST", "/api/v1/queue/cancel".into(), None),
        ("GET", format!("{GROUPS}/bob/groups"), None),
        ("PUT", membership("alice", "team:hr"), None),
        ("DELETE", membership("bob", "team:hr"), None),
        (
            "POST",
            "/api/v1/sql-sources".into(),
            Some(json!({"name": "mine", "path": text(&w.outside.join("ledger.sqlite"))})),
        ),
        ("DELETE", "/api/v1/sql-sources/finance".into(), None),
    ];
    for (method, path, body) in refused {
        w.change(&w.alice, method, &path, body).error(
            403,
            "PERMISSION_DENIED",
            &format!("alice: {method} {path}"),
        );
    }
    assert!(!w.sees(&w.alice, SALARIES));
    assert!(w.sees(&w.alice, HANDBOOK));
    let own = w
        .check(&w.alice, "GET", &format!("{GROUPS}/alice/groups"), None)
        .ok(200, "alice's own groups");
    assert_eq!(own["groups"], json!([]), "{own}");
}

/// Malformed requests are 422 (well-formed JSON, wrong values) and missing things 404.
fn bad_input(w: &World) {
    let hr = text(&w.kb.join("hr"));
    let acl = |scopes: Value| Some(json!({"path": hr, "scopes": scopes}));
    let invalid: Vec<(&str, String, Option<Value>)> = vec![
        ("PUT", "/api/v1/acl".into(), acl(json!("bogus"))),
        ("PUT", "/api/v1/acl".into(), acl(json!("team:"))),
        ("PUT", "/api/v1/acl".into(), acl(json!(""))),
        ("PUT", "/api/v1/acl".into(), acl(json!([]))),
        ("PUT", "/api/v1/acl".into(), acl(json!(7))),
        ("PUT", "/api/v1/acl".into(), Some(json!({"path": hr}))),
        (
            "PUT",
            "/api/v1/acl".into(),
            Some(json!({"path": "kb/hr", "scopes": "public"})),
        ),
        (
            "PUT",
            "/api/v1/acl".into(),
            Some(json!({"path": hr, "scope": "public"})),
        ),
        ("GET", "/api/v1/acl/readers?path=kb%2Fhr".into(), None),
        ("GET", "/api/v1/acl/readers".into(), None),
        ("POST", "/api/v1/ingest".into(), Some(json!({"paths": []}))),
        (
            "POST",
            "/api/v1/ingest".into(),
            Some(json!({"paths": ["relative/file.md"]})),
        ),
        ("POST", "/api/v1/ingest".into(), Some(json!({"path": hr}))),
        ("POST", "/api/v1/remove".into(), Some(json!({"paths": []}))),
        // A file is not a folder to watch.
        (
            "POST",
            "/api/v1/watches".into(),
            Some(json!({"path": text(&w.kb.join("hr/salaries.md"))})),
        ),
        ("GET", "/api/v1/queue?limit=many".into(), None),
        ("PUT", membership("alice", "user:bob"), None),
        ("PUT", membership("alice", "public"), None),
        ("PUT", membership("alice", "nonsense"), None),
        ("PUT", membership("no%20body", "team:hr"), None),
        (
            "POST",
            "/api/v1/sql-sources".into(),
            Some(json!({"name": "bad name", "path": text(&w.outside.join("ledger.sqlite"))})),
        ),
        (
            "POST",
            "/api/v1/sql-sources".into(),
            Some(json!({"name": "notes", "path": text(&w.kb.join("hr/salaries.md"))})),
        ),
        (
            "POST",
            "/api/v1/sql-sources".into(),
            Some(
                json!({"name": "x", "path": text(&w.outside.join("ledger.sqlite")), "scopes": "nope"}),
            ),
        ),
    ];
    for (method, path, body) in invalid {
        w.change(&w.admin, method, &path, body).error(
            422,
            "VALIDATION_ERROR",
            &format!("{method} {path}"),
        );
    }
    let missing = text(&w.kb.join("no-such-folder"));
    let not_found: Vec<(&str, String, Option<Value>)> = vec![
        (
            "PUT",
            "/api/v1/acl".into(),
            Some(json!({"path": missing, "scopes": "public"})),
        ),
        (
            "PUT",
            "/api/v1/acl".into(),
            Some(json!({"path": text(&w.kb.join("hr/absent.md")), "scopes": "public"})),
        ),
        (
            "GET",
            format!("/api/v1/acl/readers?path={}", encode(&missing)),
            None,
        ),
        (
            "POST",
            "/api/v1/ingest".into(),
            Some(json!({"paths": [missing]})),
        ),
        (
            "POST",
            "/api/v1/watches".into(),
            Some(json!({"path": missing})),
        ),
        (
            "POST",
            "/api/v1/remove".into(),
            Some(json!({"paths": [missing]})),
        ),
        ("PUT", membership("nobody", "team:hr"), None),
        ("DELETE", membership("nobody", "team:hr"), None),
        ("GET", format!("{GROUPS}/nobody/groups"), None),
        (
            "POST",
            "/api/v1/sql-sources".into(),
            Some(json!({"name": "gone", "path": text(&w.outside.join("gone.sqlite"))})),
        ),
        ("DELETE", "/api/v1/sql-sources/never-added".into(), None),
    ];
    for (method, path, body) in not_found {
        w.change(&w.admin, method, &path, body).error(
            404,
            "NOT_FOUND",
            &format!("{method} {path}"),
        );
    }
    // A path that exists but is neither ingested nor stored: 404 too, with the same words
    // whether it is a folder or a file.
    let outside_folder = w
        .change(
            &w.alice,
            "PUT",
            "/api/v1/acl",
            Some(json!({"path": text(&w.outside), "scopes": "public"})),
        )
        .body;
    let absent_file = w
        .change(
            &w.alice,
            "PUT",
            "/api/v1/acl",
            Some(json!({"path": text(&w.outside.join("absent.md")), "scopes": "public"})),
        )
        .body;
    let words = |v: &Value| {
        v["error"]["message"]
            .as_str()
            .unwrap()
            .split_once(" is ")
            .unwrap()
            .1
            .to_owned()
    };
    assert_eq!(words(&outside_folder), words(&absent_file));
}

/// Without a key: 401 everywhere.
fn no_key(w: &World) {
    let hr = text(&w.kb.join("hr"));
    let calls: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", "/api/v1/folders".into(), None),
        (
            "PUT",
            "/api/v1/acl".into(),
            Some(json!({"path": hr, "scopes": "public"})),
        ),
        (
            "GET",
            format!("/api/v1/acl/readers?path={}", encode(&hr)),
            None,
        ),
        ("GET", "/api/v1/watches".into(), None),
        (
            "POST",
            "/api/v1/ingest".into(),
            Some(json!({"paths": [hr]})),
        ),
        ("GET", "/api/v1/queue".into(), None),
        ("POST", "/api/v1/queue/pause".into(), None),
        ("PUT", membership("alice", "team:hr"), None),
        ("GET", "/api/v1/sql-sources".into(), None),
    ];
    for (method, path, body) in calls {
        w.send(&w.change, None, method, &path, body).error(
            401,
            "UNAUTHENTICATED",
            &format!("{method} {path}"),
        );
    }
    assert!(!w.sees(&w.bob, SALARIES));
}

// ----- the two backends ---------------------------------------------------------------------

/// Every administration route, as the OpenAPI document should list it.
const ROUTES: &[&str] = &[
    "GET /api/v1/crawls",
    "POST /api/v1/crawls",
    "PUT /api/v1/crawls/{id}",
    "DELETE /api/v1/crawls/{id}",
    "POST /api/v1/crawls/{id}/run",
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
];

/// The OpenAPI document lists every administration route under its tag, with its security
/// and error body, and a request body's scopes may be text or a list.
fn documented(w: &World) {
    let doc = w
        .send(&w.check, None, "GET", "/openapi.json", None)
        .ok(200, "openapi");
    let mut listed = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op["tags"] == json!(["administration"]) {
                listed.push(format!("{} {path}", method.to_uppercase()));
                assert!(op["security"].is_array(), "{method} {path}: security");
                assert!(
                    op["responses"]["4XX"].is_object(),
                    "{method} {path}: errors"
                );
            }
        }
    }
    listed.sort();
    let mut expected: Vec<String> = ROUTES.iter().map(|r| (*r).to_owned()).collect();
    expected.sort();
    assert_eq!(listed, expected);
    let scopes = &doc["components"]["schemas"]["ScopesInput"];
    assert_eq!(
        scopes["oneOf"].as_array().map(Vec::len),
        Some(2),
        "{scopes}"
    );
    let acl = &doc["components"]["schemas"]["SetAclBody"];
    assert_eq!(acl["required"], json!(["path", "scopes"]), "{acl}");
    assert!(
        acl["properties"]["scopes"]
            .to_string()
            .contains("ScopesInput"),
        "{acl}"
    );
}

#[test]
fn administration_over_http_on_a_local_data_directory() {
    let w = world(None);
    documented(&w);
    scenario(&w);
}

#[test]
fn administration_over_http_across_two_team_replicas() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let database = pg.create_database("administration").unwrap();
    let w = world(Some(&database));
    assert_ne!(w.change, w.check, "two replicas");
    scenario(&w);
    drop(w);
    drop(pg);
}
