//! `POST /api/v1/uploads` against a real server on 127.0.0.1 (keyword-only search, no model
//! files): multipart bodies built by hand and written to a raw socket (so a body the server
//! refuses early still gets its answer read), and in team mode through one replica, found
//! through the other.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use knowhub_engine::authz::{Role, UserId};
use knowhub_engine::team::TeamConfig;
use knowhub_engine::{EngineConfig, Hub, ModelConfig, ModelSet, RealFs, SourceRules, dev_context};
use knowhub_pg::PgCluster;
use knowhub_server::ServerState;
use serde_json::{Value, json};

/// The test server's limits: a file over 2.5 MiB, a request over 3 MiB is refused (both above
/// the 2 MB limit of JSON bodies, which uploads must not be held to).
const PER_FILE: u64 = 5 * 512 * 1024;
const PER_REQUEST: u64 = 3 * 1024 * 1024;

const BOUNDARY: &str = "----knowhub-test-boundary-7MA4YWxkTrZu0gW";

struct Server {
    addr: String,
    hub: Arc<Hub>,
    data: PathBuf,
    /// A watched folder of the administrator's: alice may not write to it, carol may.
    shared: PathBuf,
    alice: String,
    bob: String,
    carol: String,
    _dir: tempfile::TempDir,
}

#[derive(Debug)]
struct Reply {
    status: u16,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(self.json()["error"]["code"], code, "{}", self.text);
    }
}

/// One part of a multipart body.
enum Part<'a> {
    /// A `file` part: (filename as raw header bytes, content).
    File(&'a [u8], &'a [u8]),
    /// A text part: (name, value).
    Text(&'a str, &'a str),
}

fn multipart(parts: &[Part<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        match part {
            Part::File(name, content) => {
                body.extend_from_slice(
                    b"Content-Disposition: form-data; name=\"file\"; filename=\"",
                );
                body.extend_from_slice(name);
                body.extend_from_slice(b"\"\r\nContent-Type: application/octet-stream\r\n\r\n");
                body.extend_from_slice(content);
            }
            Part::Text(name, value) => {
                body.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}")
                        .as_bytes(),
                );
            }
        }
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// How the body is framed on the wire.
#[derive(Clone, Copy, PartialEq)]
enum Framing {
    Length,
    Chunked,
}

/// Sends one HTTP/1.1 request on a fresh connection: the body is written by another thread
/// while the answer is read, so an answer sent before the body is read still arrives.
fn send(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    framing: Framing,
) -> Reply {
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match framing {
        Framing::Length => head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len())),
        Framing::Chunked => head.push_str("Transfer-Encoding: chunked\r\n\r\n"),
    }
    let mut wire = head.into_bytes();
    match framing {
        Framing::Length => wire.extend_from_slice(body),
        Framing::Chunked => {
            for chunk in body.chunks(16 * 1024) {
                wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                wire.extend_from_slice(chunk);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(b"0\r\n\r\n");
        }
    }
    let mut writer = sock.try_clone().unwrap();
    // The server may stop reading (and close) once it refused the body: write errors are fine.
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(&wire);
    });
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let reply = loop {
        if let Some(reply) = parse_reply(&raw) {
            break reply;
        }
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => {
                break parse_reply(&raw).unwrap_or_else(|| {
                    panic!("no complete answer: {}", String::from_utf8_lossy(&raw))
                });
            }
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    };
    let _ = sock.shutdown(std::net::Shutdown::Both);
    sender.join().unwrap();
    reply
}

/// A complete response (status line, headers, `Content-Length` body) in `raw`, if there is one.
fn parse_reply(raw: &[u8]) -> Option<Reply> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let body = raw.get(end + 4..end + 4 + length)?;
    Some(Reply {
        status,
        text: String::from_utf8_lossy(body).to_string(),
    })
}

fn upload(addr: &str, key: &str, parts: &[Part<'_>], framing: Framing) -> Reply {
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    send(
        addr,
        "POST",
        "/api/v1/uploads",
        &[("X-API-Key", key), ("Content-Type", &content_type)],
        &multipart(parts),
        framing,
    )
}

fn search(addr: &str, key: &str, query: &str) -> Reply {
    let body = json!({"query": query, "mode": "keyword"}).to_string();
    send(
        addr,
        "POST",
        "/api/v1/search",
        &[("X-API-Key", key), ("Content-Type", "application/json")],
        body.as_bytes(),
        Framing::Length,
    )
}

fn hit_paths(reply: &Reply) -> Vec<String> {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json()["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}

/// A corrupt PDF: the header promises a PDF, the rest is not one.
const BROKEN_PDF: &[u8] =
    b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R >>\nthis is not a pdf\n%%EOF";

fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let shared = dir.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("readme.md"), "# Shared\n\nThe shared folder.").unwrap();
    let mut config = EngineConfig::new(&data);
    config.models = ModelConfig::keyword_only();
    let hub = Arc::new(Hub::open(config).unwrap());
    let dev = dev_context();
    let engine = hub.engine(&dev).unwrap();
    engine
        .watch_folder(&dev, &shared, SourceRules::default())
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
    hub.init_root_key(&dev).unwrap();
    let state = ServerState::new(Arc::clone(&hub), None).with_upload_limits(PER_FILE, PER_REQUEST);
    let addr = serve(state);
    Server {
        addr,
        hub,
        shared: shared.canonicalize().unwrap(),
        data,
        alice,
        bob,
        carol,
        _dir: dir,
    }
}

/// Serves `state` on 127.0.0.1 for the rest of the test process; returns `host:port`.
fn serve(state: ServerState) -> String {
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
    addr.to_string()
}

impl Server {
    fn uploads_dir(&self, user: &str) -> PathBuf {
        self.data.join("accounts/default/uploads").join(user)
    }

    /// Every file under `dir` (relative paths, sorted); empty when it does not exist.
    fn files_under(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
                }
            }
        }
        out.sort();
        out
    }

    fn document_count(&self) -> usize {
        let dev = dev_context();
        self.hub
            .engine(&dev)
            .unwrap()
            .documents(&dev, None)
            .unwrap()
            .len()
    }

    /// No request left a temporary file behind.
    fn assert_no_temporaries(&self) {
        let spool = self.data.join("tmp/uploads");
        assert_eq!(Server::files_under(&spool), Vec::<String>::new());
        let folders = std::fs::read_dir(&spool).map(|d| d.count()).unwrap_or(0);
        assert_eq!(folders, 0, "temporary folders left in {}", spool.display());
    }
}

#[test]
fn uploads_are_stored_parsed_reported_and_searchable() {
    let s = start();
    let notes = b"# Osprey\n\nThe OSPREY migration plan has nine phases and one rollback drill.";
    let r = upload(
        &s.addr,
        &s.alice,
        &[
            Part::File(b"notes.md", notes),
            Part::File(b"broken.pdf", BROKEN_PDF),
        ],
        Framing::Length,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    eprintln!("upload: {v}");
    assert_eq!(v["queued"], 2);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    let uploads = s.uploads_dir("alice").canonicalize().unwrap();
    assert_eq!(files[0]["name"], "notes.md");
    assert_eq!(files[0]["outcome"], "added", "{v}");
    assert!(files[0]["document_id"].as_i64().is_some(), "{v}");
    assert!(files[0].get("error").is_none(), "{v}");
    let notes_path = PathBuf::from(files[0]["path"].as_str().unwrap());
    assert_eq!(notes_path, uploads.join("notes.md"));
    assert_eq!(std::fs::read(&notes_path).unwrap(), notes);
    assert_eq!(files[1]["name"], "broken.pdf");
    assert_eq!(files[1]["outcome"], "failed", "{v}");
    assert!(
        files[1]["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{v}"
    );
    assert!(files[1].get("document_id").is_none(), "{v}");
    // The corrupt file is kept (it is the user's file), only not searchable.
    assert_eq!(
        std::fs::read(uploads.join("broken.pdf")).unwrap(),
        BROKEN_PDF
    );

    // Searchable as soon as the answer came, by its owner only (uploads are private).
    let paths = hit_paths(&search(&s.addr, &s.alice, "osprey migration"));
    assert_eq!(paths, vec![notes_path.display().to_string()]);
    assert!(hit_paths(&search(&s.addr, &s.bob, "osprey migration")).is_empty());

    // The same name again: a second file next to the first, never over it; sent without a
    // length (chunked), larger than the 2 MB JSON limit.
    let mut big = b"# Osprey appendix\n\n".to_vec();
    while big.len() < 2 * 1024 * 1024 + 100_000 {
        big.extend_from_slice(b"The osprey appendix lists every gyrfalcon checkpoint once more.\n");
    }
    let r = upload(
        &s.addr,
        &s.alice,
        &[Part::File(b"notes.md", &big)],
        Framing::Chunked,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let second = r.json()["files"][0].clone();
    assert_eq!(second["outcome"], "added", "{second}");
    assert_eq!(
        second["path"],
        uploads.join("notes (2).md").display().to_string()
    );
    assert_eq!(
        std::fs::read(&notes_path).unwrap(),
        notes,
        "the first file is untouched"
    );
    assert_eq!(
        hit_paths(&search(&s.addr, &s.alice, "gyrfalcon"))
            .first()
            .map(String::as_str),
        second["path"].as_str()
    );

    // Into a collection (created on first use), then by the path upload_targets lists.
    let r = upload(
        &s.addr,
        &s.alice,
        &[
            Part::Text("destination", "reports"),
            Part::File(b"q3.md", b"# Q3\n\nKestrel revenue grew."),
        ],
        Framing::Length,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let q3 = r.json()["files"][0].clone();
    assert_eq!(
        q3["path"],
        uploads.join("reports/q3.md").display().to_string()
    );
    assert_eq!(q3["outcome"], "added", "{q3}");
    let reports = uploads.join("reports").display().to_string();
    let r = upload(
        &s.addr,
        &s.alice,
        &[
            Part::File(b"q4.md", b"# Q4\n\nKestrel costs fell."),
            Part::Text("destination", &reports),
        ],
        Framing::Length,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.json()["files"][0]["path"],
        uploads.join("reports/q4.md").display().to_string()
    );
    assert_eq!(hit_paths(&search(&s.addr, &s.alice, "kestrel")).len(), 2);

    // A type KnowHub does not read is stored and reported, not an error.
    let r = upload(
        &s.addr,
        &s.alice,
        &[Part::File(b"tool.exe", b"MZ\x90\x00")],
        Framing::Length,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let exe = r.json()["files"][0].clone();
    assert!(
        ["skipped", "failed"].contains(&exe["outcome"].as_str().unwrap()),
        "{exe}"
    );
    assert!(exe.get("document_id").is_none());
    s.assert_no_temporaries();
}

#[test]
fn oversized_uploads_are_refused_and_nothing_is_stored() {
    let s = start();
    let r = upload(
        &s.addr,
        &s.alice,
        &[Part::File(b"first.md", b"# First\n\nA first note.")],
        Framing::Length,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let uploads = s.uploads_dir("alice");
    let before = Server::files_under(&uploads);
    let documents = s.document_count();
    let small = b"# Small\n\nA small note that must not be stored either.".to_vec();
    let over_file = vec![b'x'; PER_FILE as usize + 1];
    let part = vec![b'y'; 800 * 1024];
    let over_request: Vec<Part<'_>> = (0..5)
        .map(|i| {
            Part::File(
                [
                    b"part-0.txt",
                    b"part-1.txt",
                    b"part-2.txt",
                    b"part-3.txt",
                    b"part-4.txt",
                ][i],
                &part,
            )
        })
        .collect();
    let cases: Vec<(&str, Vec<Part<'_>>, Framing)> = vec![
        // Refused mid-stream: the small file before it is not stored either.
        (
            "a file over the per-file limit",
            vec![
                Part::File(b"small.md", &small),
                Part::File(b"huge.txt", &over_file),
            ],
            Framing::Length,
        ),
        (
            "a file over the per-file limit, chunked",
            vec![
                Part::File(b"small.md", &small),
                Part::File(b"huge.txt", &over_file),
            ],
            Framing::Chunked,
        ),
        // Refused from its Content-Length, before a byte is read.
        (
            "a request over the per-request limit",
            over_request,
            Framing::Length,
        ),
    ];
    for (what, parts, framing) in &cases {
        let r = upload(&s.addr, &s.alice, parts, *framing);
        r.assert_error(413, "PAYLOAD_TOO_LARGE");
        assert_eq!(
            Server::files_under(&uploads),
            before,
            "{what}: nothing stored"
        );
        assert_eq!(s.document_count(), documents, "{what}: no document");
        s.assert_no_temporaries();
    }
    // A request over the limit without a length: cut as it streams.
    let parts: Vec<Part<'_>> = (0..5)
        .map(|i| {
            Part::File(
                [
                    b"part-0.txt",
                    b"part-1.txt",
                    b"part-2.txt",
                    b"part-3.txt",
                    b"part-4.txt",
                ][i],
                &part,
            )
        })
        .collect();
    let r = upload(&s.addr, &s.alice, &parts, Framing::Chunked);
    r.assert_error(413, "PAYLOAD_TOO_LARGE");
    assert_eq!(
        Server::files_under(&uploads),
        before,
        "chunked: nothing stored"
    );
    assert_eq!(s.document_count(), documents);
    s.assert_no_temporaries();

    // Every other route keeps the 2 MB limit of JSON bodies.
    let body = vec![b' '; 2 * 1024 * 1024 + 1];
    let r = send(
        &s.addr,
        "POST",
        "/api/knowledge",
        &[
            ("X-API-Key", &s.alice),
            ("Content-Type", "application/json"),
        ],
        &body,
        Framing::Length,
    );
    r.assert_error(413, "PAYLOAD_TOO_LARGE");
    let r = send(
        &s.addr,
        "POST",
        "/api/v1/search",
        &[
            ("X-API-Key", &s.alice),
            ("Content-Type", "application/json"),
        ],
        &body,
        Framing::Chunked,
    );
    r.assert_error(413, "PAYLOAD_TOO_LARGE");
}

#[test]
fn bad_names_and_bad_requests_are_refused() {
    let s = start();
    let content: &[u8] = b"# Evil\n\nShould never be stored.";
    for name in [
        &b""[..],
        b"..",
        b".",
        b"../evil.md",
        b"../../etc/evil.md",
        b"a/b.md",
        b"/abs/evil.md",
        b"dir\\evil.md",
        b"..\\evil.md",
        b"nul\0byte.md",
        b"tab\tname.md",
    ] {
        let r = upload(
            &s.addr,
            &s.alice,
            &[Part::File(b"good.md", content), Part::File(name, content)],
            Framing::Length,
        );
        r.assert_error(422, "VALIDATION_ERROR");
        eprintln!(
            "{:?}: {}",
            String::from_utf8_lossy(name),
            r.json()["error"]["message"]
        );
    }
    assert_eq!(
        Server::files_under(&s.uploads_dir("alice")),
        Vec::<String>::new()
    );
    assert!(!s.data.join("accounts/default/evil.md").exists());
    assert!(!s.data.join("accounts/default/uploads/evil.md").exists());

    // No file; an unknown part; a bad collection name; a relative path; not multipart.
    let cases: Vec<(Vec<Part<'_>>, u16, &str)> = vec![
        (
            vec![Part::Text("destination", "reports")],
            422,
            "VALIDATION_ERROR",
        ),
        (
            vec![Part::File(b"a.md", content), Part::Text("comment", "hi")],
            422,
            "VALIDATION_ERROR",
        ),
        (
            vec![
                Part::Text("destination", ".hidden"),
                Part::File(b"a.md", content),
            ],
            422,
            "VALIDATION_ERROR",
        ),
        (
            vec![
                Part::Text("destination", "x/y"),
                Part::File(b"a.md", content),
            ],
            422,
            "VALIDATION_ERROR",
        ),
    ];
    for (parts, status, code) in &cases {
        upload(&s.addr, &s.alice, parts, Framing::Length).assert_error(*status, code);
    }
    let r = send(
        &s.addr,
        "POST",
        "/api/v1/uploads",
        &[
            ("X-API-Key", &s.alice),
            ("Content-Type", "application/json"),
        ],
        b"{}",
        Framing::Length,
    );
    r.assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    // Without a key: refused before the body is looked at.
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");
    let r = send(
        &s.addr,
        "POST",
        "/api/v1/uploads",
        &[("Content-Type", &content_type)],
        &multipart(&[Part::File(b"a.md", content)]),
        Framing::Length,
    );
    r.assert_error(401, "UNAUTHENTICATED");
    assert_eq!(
        Server::files_under(&s.uploads_dir("alice")),
        Vec::<String>::new()
    );
    s.assert_no_temporaries();
}

#[test]
fn destinations_the_caller_may_not_write_are_refused() {
    let s = start();
    let shared = s.shared.display().to_string();
    let content: &[u8] = b"# Plan\n\nThe heron plan.";
    // bob's uploads folder exists once he uploaded.
    let r = upload(
        &s.addr,
        &s.bob,
        &[Part::File(b"bob.md", b"# Bob\n\nBob's note.")],
        Framing::Length,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let bobs = s
        .uploads_dir("bob")
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let documents = s.document_count();
    let missing = s.data.join("no-such-folder").display().to_string();
    for destination in [&shared, &bobs, &missing] {
        let r = upload(
            &s.addr,
            &s.alice,
            &[
                Part::Text("destination", destination),
                Part::File(b"plan.md", content),
            ],
            Framing::Length,
        );
        r.assert_error(403, "PERMISSION_DENIED");
    }
    assert!(!s.shared.join("plan.md").exists());
    assert_eq!(
        Server::files_under(&s.uploads_dir("bob")),
        vec!["bob.md".to_owned()]
    );
    assert_eq!(s.document_count(), documents);
    // The administrator may write into the watched folder: the copy lands in it.
    let r = upload(
        &s.addr,
        &s.carol,
        &[
            Part::Text("destination", &shared),
            Part::File(b"plan.md", content),
        ],
        Framing::Length,
    );
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(
        v["files"][0]["path"],
        s.shared.join("plan.md").display().to_string()
    );
    assert_eq!(v["files"][0]["outcome"], "added", "{v}");
    s.assert_no_temporaries();
}

// ----- team mode ------------------------------------------------------------------------------

fn replica(database: &str, name: &str, data: &Path) -> (Arc<Hub>, String) {
    let mut config = EngineConfig::new(data);
    config.models = ModelConfig::keyword_only();
    config.team = Some(TeamConfig {
        database: database.to_owned(),
        replica: name.to_owned(),
        secret_key_file: None,
        host: "test-host".into(),
    });
    let hub = Arc::new(Hub::open_with(config, Arc::new(RealFs), ModelSet::none()).unwrap());
    let addr = serve(ServerState::new(Arc::clone(&hub), None));
    (hub, addr)
}

#[test]
fn team_mode_an_upload_through_one_replica_is_found_through_the_other() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let database = pg.create_database("uploads").unwrap();
    let (hub_a, a) = replica(&database, "a", &dir.path().join("a"));
    let (_hub_b, b) = replica(&database, "b", &dir.path().join("b"));
    let root = hub_a
        .init_root_key(&dev_context())
        .unwrap()
        .secret()
        .to_owned();
    let r = send(
        &b,
        "POST",
        "/api/v1/admin/accounts/default/users",
        &[("X-API-Key", &root), ("Content-Type", "application/json")],
        json!({"user_id": "alice", "role": "user"})
            .to_string()
            .as_bytes(),
        Framing::Length,
    );
    assert_eq!(r.status, 201, "{}", r.text);
    let alice = r.json()["user_key"].as_str().unwrap().to_owned();

    let r = upload(
        &a,
        &alice,
        &[
            Part::File(
                b"plover.md",
                b"# Plover\n\nThe PLOVER rollout reaches every region in May.",
            ),
            Part::File(b"broken.pdf", BROKEN_PDF),
        ],
        Framing::Length,
    );
    let uploaded = Instant::now();
    assert_eq!(r.status, 200, "{}", r.text);
    let v = r.json();
    assert_eq!(v["files"][0]["outcome"], "added", "{v}");
    assert_eq!(v["files"][1]["outcome"], "failed", "{v}");
    let path = v["files"][0]["path"].as_str().unwrap().to_owned();
    assert!(
        path.starts_with(
            &dir.path()
                .join("a")
                .canonicalize()
                .unwrap()
                .display()
                .to_string()
        )
    );
    // A at once; B within the follow delay (it learns of it only from the database).
    assert_eq!(
        hit_paths(&search(&a, &alice, "plover rollout")),
        vec![path.clone()]
    );
    loop {
        let found = hit_paths(&search(&b, &alice, "plover rollout"));
        if found == vec![path.clone()] {
            break;
        }
        assert!(
            uploaded.elapsed() < Duration::from_secs(2),
            "replica B does not find the upload 2 s after A answered: {found:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "replica B finds the upload {:?} after A answered",
        uploaded.elapsed()
    );
}
