//! `knowhub serve` reads the folders an administrator registers over the API: a folder
//! watched through `POST /api/v1/watches` is ingested, and a file added to it later becomes
//! searchable, without any other KnowHub process. On a local data directory, and on a team
//! database with two replicas (registered through one, searched through the other).

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use knowhub_pg::PgCluster;
use serde_json::{Value, json};

fn knowhub(database: Option<&str>, data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_knowhub"));
    c.env_remove("KNOWHUB_API_KEY")
        .env_remove("KNOWHUB_DATABASE_URL")
        .arg("--data-dir")
        .arg(data)
        .args(["--embedder", "off"]);
    if let Some(url) = database {
        c.args(["--database", url]);
    }
    c
}

fn admin_key(database: Option<&str>, data: &Path) -> String {
    let out = knowhub(database, data)
        .args(["user", "add", "boss", "--role", "ADMIN"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|w| w.starts_with("kh_"))
        .unwrap()
        .to_owned()
}

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(database: Option<&str>, data: &Path, extra: &[&str]) -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = knowhub(database, data)
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server { child, port };
    let start = Instant::now();
    while request(&server, "GET", "/api/v1/health", None, None).0 != 200 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the server starts"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

fn request(
    s: &Server,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build(),
    );
    let mut builder = ureq::http::Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1:{}{path}", s.port))
        .header("content-type", "application/json");
    if let Some(key) = key {
        builder = builder.header("x-api-key", key);
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    match agent.run(builder.body(body).unwrap()) {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let text = r.body_mut().read_to_string().unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

fn found(s: &Server, key: &str, query: &str) -> bool {
    let (status, body) = request(
        s,
        "POST",
        "/api/v1/search",
        Some(key),
        Some(json!({ "query": query })),
    );
    status == 200 && body.to_string().contains(query)
}

fn within(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("{what}: {:?}", start.elapsed());
}

/// Registers `folder` through `a`, then checks through `b` that its file and a later one are
/// found.
fn watched_folders_are_read_by_the_server(a: &Server, b: &Server, key: &str, folder: &Path) {
    std::fs::create_dir_all(folder).unwrap();
    std::fs::write(
        folder.join("first.md"),
        "# First\n\nThe quokkaword appears here.",
    )
    .unwrap();
    let (status, body) = request(
        a,
        "POST",
        "/api/v1/watches",
        Some(key),
        Some(json!({ "path": folder.display().to_string() })),
    );
    assert_eq!(status, 201, "{body}");
    within(
        Duration::from_secs(60),
        "the watched folder is read",
        || found(b, key, "quokkaword"),
    );
    std::fs::write(
        folder.join("second.md"),
        "# Second\n\nA numbatword arrives later.",
    )
    .unwrap();
    within(Duration::from_secs(60), "a new file in it is read", || {
        found(b, key, "numbatword")
    });
}

#[test]
fn a_local_server_reads_the_folders_it_is_told_to_watch() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let key = admin_key(None, &data);
    let server = serve(None, &data, &[]);
    watched_folders_are_read_by_the_server(&server, &server, &key, &dir.path().join("shared"));
}

#[test]
fn team_replicas_read_the_folders_registered_through_either() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("serve_watch").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = admin_key(Some(&url), &dir.path().join("admin"));
    let a = serve(Some(&url), &dir.path().join("a"), &[]);
    let b = serve(Some(&url), &dir.path().join("b"), &["--no-watch"]);
    watched_folders_are_read_by_the_server(&a, &b, &key, &dir.path().join("shared"));
}
