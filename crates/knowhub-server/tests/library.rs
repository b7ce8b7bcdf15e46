//! The library's read paths (`/api/v1/status`, `/sources`, `/documents…`, `/passages/…`,
//! `/audit`) against a real server on 127.0.0.1, driven with a real HTTP client, for an
//! administrator and for users who may read different documents: each endpoint answers exactly
//! what its caller may read, anything else is 404 with the standard error body (never 403),
//! files stream their bytes with their type and name, a file gone from disk is a clear 404 (a team
//! database serves the copy it kept) while its preview still works, bad parameters are 422 and
//! a missing key 401.
//!
//! One scenario ([`scenario`]) over a server's base URL, run on a local data directory and on
//! a team database (a private PostgreSQL; skipped where none is installed, as in
//! `team_outage.rs`).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use knowhub_engine::authz::{Role, Scope, ScopeSet, UserId};
use knowhub_engine::team::TeamConfig;
use knowhub_engine::{EngineConfig, Hub, IngestOptions, ModelConfig, dev_context};
use knowhub_pg::PgCluster;
use knowhub_server::ServerState;
use serde_json::Value;

/// (path under `docs/`, marker): every marker is a token found in that document only.
const FILES: &[(&str, &str)] = &[
    ("public/handbook.md", "mkhandbook"),
    ("public/résumé notes.md", "mkresume"),
    ("public/readme.txt", "mkreadme"),
    ("hr/salaries.md", "mksalaries"),
    ("hr/board/minutes.md", "mkminutes"),
    ("drafts/unshared.md", "mkunshared"),
];

/// Folder ACLs; `drafts/` has none: its owner (who ingested) and administrators only.
const ACLS: &[(&str, &str)] = &[
    ("public", "public"),
    ("hr", "team:hr"),
    ("hr/board", "project:board"),
];

const EVERYONE: &[&str] = &["mkhandbook", "mkresume", "mkreadme"];

fn body_of(marker: &str, path: &str) -> String {
    if path.ends_with(".txt") {
        return format!("Plain notes. The {marker} token is here.\n");
    }
    let title = Path::new(path).file_stem().unwrap().to_string_lossy();
    format!(
        "# {title}\n\nThe {marker} token opens this document.\n\n## Details\n\nMore about \
         {marker}: figures, dates and names for the quarterly review."
    )
}

/// A principal and the markers of the documents it may read (the oracle).
struct Who {
    name: &'static str,
    key: String,
    admin: bool,
    docs: BTreeSet<&'static str>,
}

/// A running server and what the scenario needs to know about its world.
struct World {
    base: String,
    /// The canonical `docs/` folder the documents were ingested from.
    docs: PathBuf,
    admin: Who,
    alice: Who,
    bob: Who,
    /// A team database, which keeps every document's original file.
    team: bool,
    _dir: tempfile::TempDir,
}

fn start(team: Option<String>) -> World {
    let is_team = team.is_some();
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    for (path, marker) in FILES {
        let file = docs.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, body_of(marker, path)).unwrap();
    }
    let docs = docs.canonicalize().unwrap();
    let mut config = EngineConfig::new(dir.path().join("data"));
    config.models = ModelConfig::keyword_only();
    config.team = team.map(TeamConfig::new);
    let hub = Hub::open(config).unwrap();
    let dev = dev_context();
    let engine = hub.engine(&dev).unwrap();
    let report = engine
        .ingest(
            &dev,
            std::slice::from_ref(&docs),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.failed, 0, "{report:?}");
    for (folder, scopes) in ACLS {
        let scopes: ScopeSet = scopes.parse().unwrap();
        engine
            .set_folder_acl(&dev, &docs.join(folder), Some(&scopes))
            .unwrap();
    }
    let key = |id: &str, role: Role| {
        let uid = UserId::new(id).unwrap();
        assert!(engine.add_user(&dev, &uid, id, role).unwrap());
        engine
            .rotate_api_key(&dev, &uid)
            .unwrap()
            .secret()
            .to_owned()
    };
    let admin = key("carol", Role::Admin);
    let alice = key("alice", Role::User);
    let bob = key("bob", Role::User);
    let hr: Scope = "team:hr".parse().unwrap();
    engine
        .add_membership(&dev, &UserId::new("alice").unwrap(), &hr)
        .unwrap();
    // Production mode: every request needs a key.
    hub.init_root_key(&dev).unwrap();
    drop(engine);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let state = ServerState::new(hub, None);
    std::thread::spawn(move || {
        rt.block_on(knowhub_server::serve_on(
            listener,
            state,
            std::future::pending(),
        ))
    });
    let markers = |list: &[&'static str]| list.iter().copied().collect::<BTreeSet<_>>();
    World {
        base,
        docs,
        admin: Who {
            name: "carol",
            key: admin,
            admin: true,
            docs: FILES.iter().map(|(_, m)| *m).collect(),
        },
        alice: Who {
            name: "alice",
            key: alice,
            admin: false,
            docs: markers(&[EVERYONE, &["mksalaries"]].concat()),
        },
        bob: Who {
            name: "bob",
            key: bob,
            admin: false,
            docs: markers(EVERYONE),
        },
        team: is_team,
        _dir: dir,
    }
}

// ----- HTTP ---------------------------------------------------------------------------------

struct Reply {
    status: u16,
    content_type: String,
    disposition: String,
    bytes: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// Asserts the standard error body with this status and code; returns its message.
    fn assert_error(&self, status: u16, code: &str, what: &str) -> String {
        assert_eq!(self.status, status, "{what}: {}", self.text());
        let v = self.json();
        assert_eq!(v["error"]["code"], code, "{what}: {}", self.text());
        assert!(v["trace_id"].as_str().is_some_and(|t| !t.is_empty()));
        let message = v["error"]["message"].as_str().unwrap().to_owned();
        assert!(!message.is_empty(), "{what}");
        message
    }
}

struct Client {
    base: String,
    http: ureq::Agent,
}

impl Client {
    fn new(base: &str) -> Client {
        Client {
            base: base.to_owned(),
            http: ureq::Agent::new_with_config(
                ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .build(),
            ),
        }
    }

    /// `GET path` with `key` as `X-API-Key` (`None`: no key).
    fn get(&self, path: &str, key: Option<&str>) -> Reply {
        let mut b = ureq::http::Request::builder()
            .method("GET")
            .uri(format!("{}{path}", self.base));
        if let Some(key) = key {
            b = b.header("x-api-key", key);
        }
        let mut resp = self.http.run(b.body(()).unwrap()).unwrap();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let (content_type, disposition) = (header("content-type"), header("content-disposition"));
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_vec()
            .unwrap();
        Reply {
            status: resp.status().as_u16(),
            content_type,
            disposition,
            bytes,
        }
    }

    fn ok(&self, path: &str, who: &Who) -> Value {
        let r = self.get(path, Some(&who.key));
        assert_eq!(r.status, 200, "{} {path}: {}", who.name, r.text());
        r.json()
    }
}

/// `path` in the query string.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The text shows no marker and no file name of a document `who` may not read.
fn assert_no_leak(who: &Who, what: &str, text: &str) {
    for (path, marker) in FILES {
        if who.docs.contains(marker) {
            continue;
        }
        let file = Path::new(path).file_name().unwrap().to_string_lossy();
        assert!(
            !text.contains(marker) && !text.contains(file.as_ref()),
            "{} {what} shows {path}: {text}",
            who.name
        );
    }
}

/// The markers of the documents a list of document bodies names (by path).
fn listed(docs: &Value) -> BTreeSet<&'static str> {
    let paths: Vec<&str> = docs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap())
        .collect();
    let set: BTreeSet<&'static str> = FILES
        .iter()
        .filter(|(p, _)| paths.iter().any(|q| q.ends_with(p)))
        .map(|(_, m)| *m)
        .collect();
    assert_eq!(
        set.len(),
        paths.len(),
        "one listed row per document: {docs}"
    );
    set
}

// ----- the scenario -------------------------------------------------------------------------

/// Every check, over the server at `w.base`.
fn scenario(w: &World) {
    let c = Client::new(&w.base);
    // Document ids and chunk ids, as the administrator sees them.
    let all = c.ok("/api/v1/documents", &w.admin);
    assert_eq!(all["count"], FILES.len(), "{all}");
    let id_of = |rel: &str| -> i64 {
        let path = w.docs.join(rel).display().to_string();
        all["documents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["path"] == path.as_str())
            .unwrap_or_else(|| panic!("{path} in {all}"))["id"]
            .as_i64()
            .unwrap()
    };
    let docs: Vec<(&str, &str, i64)> = FILES.iter().map(|(p, m)| (*p, *m, id_of(p))).collect();
    let mut chunks: Vec<(&str, i64)> = Vec::new();
    for (_, marker, id) in &docs {
        let v = c.ok(&format!("/api/v1/documents/{id}/preview"), &w.admin);
        for p in v["passages"].as_array().unwrap() {
            chunks.push((marker, p["chunk_id"].as_i64().unwrap()));
        }
    }
    assert!(chunks.len() >= FILES.len(), "{chunks:?}");
    let missing_doc = docs.iter().map(|d| d.2).max().unwrap() + 1_000;
    let missing_chunk = chunks.iter().map(|c| c.1).max().unwrap() + 1_000;

    for who in [&w.admin, &w.alice, &w.bob] {
        check_listings(&c, w, who);
        check_documents(&c, w, who, &docs, missing_doc);
        check_passages(&c, who, &chunks, missing_chunk);
    }
    check_audit(&c, w);
    check_bad_requests(&c, w, docs[0].2, chunks[0].1);
    check_removed_files(&c, w, &docs);
}

/// Status, sources and document listings count and name exactly the readable documents.
fn check_listings(c: &Client, w: &World, who: &Who) {
    let status = c.ok("/api/v1/status", who);
    assert_eq!(
        status["documents"].as_u64().unwrap(),
        who.docs.len() as u64,
        "{} status: {status}",
        who.name
    );
    assert_no_leak(who, "status", &status.to_string());
    // Administrators see the ingestion queue; users do not.
    assert_eq!(status["queue"].is_object(), who.admin, "{status}");
    // The server's own paths are for administrators.
    assert_eq!(status["data_dir"].is_string(), who.admin, "{status}");

    let sources = c.ok("/api/v1/sources", who);
    assert_eq!(listed(&sources["documents"]), who.docs, "{}", who.name);
    assert_eq!(sources["total"], who.docs.len(), "{sources}");
    assert_no_leak(who, "sources", &sources.to_string());
    let folders: BTreeSet<String> = sources["folders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    let hr = w.docs.join("hr").display().to_string();
    let board = w.docs.join("hr/board").display().to_string();
    assert!(folders.contains(&w.docs.join("public").display().to_string()));
    assert_eq!(folders.contains(&hr), who.docs.contains("mksalaries"));
    assert_eq!(folders.contains(&board), who.docs.contains("mkminutes"));
    assert!(sources["queue"]["failures"].as_array().unwrap().is_empty());
    let row = sources["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["path"].as_str().unwrap().ends_with("handbook.md"))
        .unwrap();
    assert_eq!(row["title"], "handbook", "{row}");
    assert_eq!(row["status"], "indexed", "{row}");
    assert_eq!(row["kind"], "markdown", "{row}");
    assert!(row["chunk_count"].as_u64().unwrap() >= 1, "{row}");

    // The filter: every word, in the title or path, case-insensitively.
    let v = c.ok("/api/v1/sources?filter=SALARIES", who);
    let want: BTreeSet<_> = who
        .docs
        .iter()
        .copied()
        .filter(|m| *m == "mksalaries")
        .collect();
    assert_eq!(listed(&v["documents"]), want, "{} {v}", who.name);
    assert_eq!(v["total"], want.len());
    let v = c.ok(
        &format!("/api/v1/sources?filter={}", encode("public NOTES")),
        who,
    );
    assert_eq!(listed(&v["documents"]), BTreeSet::from(["mkresume"]), "{v}");

    let list = c.ok("/api/v1/documents", who);
    assert_eq!(listed(&list["documents"]), who.docs, "{}", who.name);
    assert_eq!(list["count"], who.docs.len());
    assert_no_leak(who, "documents", &list.to_string());
    let under = c.ok(&format!("/api/v1/documents?under={}", encode(&hr)), who);
    let want: BTreeSet<_> = who
        .docs
        .iter()
        .copied()
        .filter(|m| ["mksalaries", "mkminutes"].contains(m))
        .collect();
    assert_eq!(listed(&under["documents"]), want, "{} under hr", who.name);
}

/// Records, previews and files by id: 200 with the right content when readable, else the
/// same 404 as a document that does not exist.
fn check_documents(c: &Client, w: &World, who: &Who, docs: &[(&str, &str, i64)], missing: i64) {
    let not_found = |path: &str, id: i64| {
        let r = c.get(path, Some(&who.key));
        let message = r.assert_error(404, "NOT_FOUND", &format!("{} {path}", who.name));
        assert_no_leak(who, path, &r.text());
        message.replace(&id.to_string(), "N")
    };
    // What "no such document" looks like; unreadable ones must look exactly the same.
    let absent = [
        not_found(&format!("/api/v1/documents/{missing}"), missing),
        not_found(&format!("/api/v1/documents/{missing}/preview"), missing),
        not_found(&format!("/api/v1/documents/{missing}/file"), missing),
    ];
    for (rel, marker, id) in docs {
        let paths = [
            format!("/api/v1/documents/{id}"),
            format!("/api/v1/documents/{id}/preview"),
            format!("/api/v1/documents/{id}/file"),
        ];
        if !who.docs.contains(marker) {
            for (path, absent) in paths.iter().zip(&absent) {
                assert_eq!(&not_found(path, *id), absent, "{} {path}", who.name);
            }
            continue;
        }
        let record = c.ok(&paths[0], who);
        assert_eq!(record["id"], *id);
        assert_eq!(record["path"], w.docs.join(rel).display().to_string());

        let preview = c.ok(&paths[1], who);
        assert_eq!(preview["document"]["id"], *id);
        let text = preview["text"].as_str().unwrap();
        assert!(text.contains(marker), "{preview}");
        let chars: Vec<char> = text.chars().collect();
        let passages = preview["passages"].as_array().unwrap();
        assert!(!passages.is_empty(), "{preview}");
        let mut found = false;
        for p in passages {
            let (start, end) = (
                p["char_start"].as_u64().unwrap() as usize,
                p["char_end"].as_u64().unwrap() as usize,
            );
            assert!(
                start < end && end <= chars.len(),
                "{p} in {} chars",
                chars.len()
            );
            let slice: String = chars[start..end].iter().collect();
            found |= slice.contains(marker);
            assert!(p["heading_path"].is_array() && p["chunk_id"].as_i64().is_some());
        }
        assert!(found, "a passage holds {marker}: {preview}");

        let file = c.get(&paths[2], Some(&who.key));
        assert_eq!(file.status, 200, "{}", file.text());
        let on_disk = std::fs::read(w.docs.join(rel)).unwrap();
        assert_eq!(file.bytes, on_disk, "{rel}");
        let want_type = if rel.ends_with(".txt") {
            "text/plain"
        } else {
            "text/markdown"
        };
        assert!(
            file.content_type.starts_with(want_type),
            "{rel}: {}",
            file.content_type
        );
        let name = Path::new(rel).file_name().unwrap().to_string_lossy();
        assert!(
            file.disposition.starts_with("attachment"),
            "{}",
            file.disposition
        );
        if name.is_ascii() {
            assert!(
                file.disposition.contains(&format!("filename=\"{name}\"")),
                "{}",
                file.disposition
            );
        } else {
            // The exact name, percent-encoded as UTF-8.
            assert!(
                file.disposition
                    .contains(&format!("filename*=UTF-8''{}", encode(&name))),
                "{}",
                file.disposition
            );
        }
    }
}

/// Citations by chunk id: the passage when its document is readable, else 404.
fn check_passages(c: &Client, who: &Who, chunks: &[(&str, i64)], missing: i64) {
    let absent = c
        .get(&format!("/api/v1/passages/{missing}"), Some(&who.key))
        .assert_error(404, "NOT_FOUND", "missing passage")
        .replace(&missing.to_string(), "N");
    for (marker, chunk) in chunks {
        let path = format!("/api/v1/passages/{chunk}");
        let r = c.get(&path, Some(&who.key));
        if who.docs.contains(marker) {
            assert_eq!(r.status, 200, "{} {path}: {}", who.name, r.text());
            let v = r.json();
            assert_eq!(v["chunk_id"], *chunk);
            assert!(v["text"].as_str().unwrap().contains(marker), "{v}");
            assert!(
                v["evidence_id"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("doc:{}:", v["document_id"])),
                "{v}"
            );
        } else {
            let message = r.assert_error(404, "NOT_FOUND", &format!("{} {path}", who.name));
            assert_eq!(message.replace(&chunk.to_string(), "N"), absent);
            assert_no_leak(who, &path, &r.text());
        }
    }
}

/// Administrators read the account's trail (or one user's), users only their own.
fn check_audit(c: &Client, w: &World) {
    let users = |v: &Value| -> BTreeSet<String> {
        v["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["user"].as_str().unwrap().to_owned())
            .collect()
    };
    for who in [&w.alice, &w.bob] {
        let v = c.ok("/api/v1/audit?limit=10000", who);
        assert_eq!(users(&v), BTreeSet::from([who.name.to_owned()]), "{v}");
        assert_no_leak(who, "audit", &v.to_string());
        let actions: BTreeSet<&str> = v["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["action"].as_str().unwrap())
            .collect();
        for action in ["open", "file", "passage", "list", "status"] {
            assert!(
                actions.contains(action),
                "{} {action}: {actions:?}",
                who.name
            );
        }
        let v = c.ok(&format!("/api/v1/audit?user={}", who.name), who);
        assert_eq!(users(&v), BTreeSet::from([who.name.to_owned()]));
        let other = if who.name == "bob" { "alice" } else { "bob" };
        c.get(&format!("/api/v1/audit?user={other}"), Some(&who.key))
            .assert_error(403, "PERMISSION_DENIED", "another user's trail");
    }
    let v = c.ok("/api/v1/audit?limit=10000", &w.admin);
    let seen = users(&v);
    for name in ["carol", "alice", "bob"] {
        assert!(seen.contains(name), "{seen:?}");
    }
    let v = c.ok("/api/v1/audit?user=bob&limit=10000", &w.admin);
    assert_eq!(users(&v), BTreeSet::from(["bob".to_owned()]));
    let v = c.ok("/api/v1/audit?limit=2", &w.admin);
    assert_eq!(v["count"], 2);
    assert_eq!(v["records"].as_array().unwrap().len(), 2);
    // Newest first.
    let ids: Vec<i64> = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert!(ids[0] > ids[1], "{ids:?}");
}

/// Malformed ids and parameters: 422; no key or a wrong key: 401.
fn check_bad_requests(c: &Client, w: &World, doc: i64, chunk: i64) {
    let key = Some(w.admin.key.as_str());
    for path in [
        "/api/v1/documents/abc",
        "/api/v1/documents/0",
        "/api/v1/documents/-3",
        "/api/v1/documents/1.5/preview",
        "/api/v1/documents/abc/file",
        "/api/v1/documents/99999999999999999999999",
        "/api/v1/passages/xyz",
        "/api/v1/passages/0",
        "/api/v1/documents?under=relative/path",
        "/api/v1/documents?under=",
        "/api/v1/audit?limit=0",
        "/api/v1/audit?limit=abc",
        "/api/v1/audit?limit=-1",
        "/api/v1/audit?limit=10001",
        "/api/v1/audit?user=bad%20id",
        "/api/v1/audit?user=",
    ] {
        c.get(path, key).assert_error(422, "VALIDATION_ERROR", path);
    }
    let paths = [
        "/api/v1/status".to_owned(),
        "/api/v1/sources".to_owned(),
        "/api/v1/documents".to_owned(),
        format!("/api/v1/documents/{doc}"),
        format!("/api/v1/documents/{doc}/preview"),
        format!("/api/v1/documents/{doc}/file"),
        format!("/api/v1/passages/{chunk}"),
        "/api/v1/audit".to_owned(),
    ];
    for path in &paths {
        c.get(path, None).assert_error(401, "UNAUTHENTICATED", path);
        c.get(path, Some("kh_not_a_key"))
            .assert_error(401, "UNAUTHENTICATED", path);
    }
}

/// A file gone from disk. On a local data directory its download is a 404 that says so, to
/// those who may read it only; a team database serves the copy of the version it parsed,
/// whichever disk it was read from. Its record and preview work either way.
fn check_removed_files(c: &Client, w: &World, docs: &[(&str, &str, i64)]) {
    let (rel, marker, id) = docs.iter().find(|d| d.1 == "mkhandbook").copied().unwrap();
    let hidden = docs.iter().find(|d| d.1 == "mkunshared").unwrap();
    let parsed = std::fs::read(w.docs.join(rel)).unwrap();
    std::fs::remove_file(w.docs.join(rel)).unwrap();
    std::fs::remove_file(w.docs.join(hidden.0)).unwrap();
    for who in [&w.admin, &w.bob] {
        let path = format!("/api/v1/documents/{id}/file");
        let reply = c.get(&path, Some(&who.key));
        if w.team {
            assert_eq!(reply.status, 200, "{path}: {}", reply.text());
            assert_eq!(reply.bytes, parsed, "{path}");
        } else {
            let message = reply.assert_error(404, "NOT_FOUND", &path);
            assert!(message.contains("no longer"), "{message}");
        }
        let preview = c.ok(&format!("/api/v1/documents/{id}/preview"), who);
        assert!(preview["text"].as_str().unwrap().contains(marker));
        c.ok(&format!("/api/v1/documents/{id}"), who);
    }
    // An unreadable document is just "not found", whether or not its file is anywhere.
    let path = format!("/api/v1/documents/{}/file", hidden.2);
    let message = c
        .get(&path, Some(&w.bob.key))
        .assert_error(404, "NOT_FOUND", &path);
    assert!(!message.contains("no longer"), "{message}");
    if w.team {
        assert_eq!(c.get(&path, Some(&w.admin.key)).status, 200, "{path}");
        return;
    }
    let message = c
        .get(&path, Some(&w.admin.key))
        .assert_error(404, "NOT_FOUND", &path);
    assert!(message.contains("no longer"), "{message}");
    // The download of a gone file is audited as such.
    let v = c.ok("/api/v1/audit?user=bob&limit=20", &w.admin);
    assert!(
        v["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["action"] == "file" && r["outcome"] == "gone"),
        "{v}"
    );
}

// ----- the two backends -----------------------------------------------------------------------

#[test]
fn library_reads_follow_permissions_on_a_local_data_directory() {
    let world = start(None);
    scenario(&world);
}

#[test]
fn library_reads_follow_permissions_on_a_team_database() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("library").unwrap();
    let world = start(Some(url));
    scenario(&world);
}

#[test]
fn the_openapi_document_lists_the_library_paths() {
    let world = start(None);
    let r = Client::new(&world.base).get("/openapi.json", None);
    assert_eq!(r.status, 200);
    let doc = r.json();
    for (path, method) in [
        ("/api/v1/status", "get"),
        ("/api/v1/sources", "get"),
        ("/api/v1/documents", "get"),
        ("/api/v1/documents/{id}", "get"),
        ("/api/v1/documents/{id}/preview", "get"),
        ("/api/v1/documents/{id}/file", "get"),
        ("/api/v1/passages/{chunk_id}", "get"),
        ("/api/v1/audit", "get"),
    ] {
        let op = &doc["paths"][path][method];
        assert_eq!(op["tags"][0], "library", "{path}: {op}");
        assert!(op["security"].is_array(), "{path}");
    }
}
