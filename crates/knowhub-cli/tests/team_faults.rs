//! The fault run of a team server, with real `knowhub` processes on one private PostgreSQL:
//! an ingest killed with SIGKILL midway, a replica killed mid-load, PostgreSQL restarted
//! mid-load. Clients see only retryable failures (a refused connection, 503), the surviving
//! replica keeps answering, and afterwards no document is lost or duplicated
//! (`knowhub check --deep` against the database, and exact counts).

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use knowhub_pg::PgCluster;

const FILES: usize = 120;

fn knowhub(url: &str, data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_knowhub"));
    c.env("KNOWHUB_DATABASE_URL", url)
        .env_remove("KNOWHUB_API_KEY")
        .arg("--data-dir")
        .arg(data)
        .args(["--embedder", "off"]);
    c
}

fn run(url: &str, data: &Path, args: &[&str]) -> Output {
    knowhub(url, data).args(args).output().unwrap()
}

fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Replica {
    child: Child,
    port: u16,
}

fn start_replica(url: &str, data: &Path) -> Replica {
    let port = free_port();
    let child = knowhub(url, data)
        .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let replica = Replica { child, port };
    let start = Instant::now();
    while status(replica.port, "/api/v1/health", None) != Some(200) {
        assert!(start.elapsed() < Duration::from_secs(60), "replica starts");
        std::thread::sleep(Duration::from_millis(100));
    }
    replica
}

/// The HTTP status of one request (`None`: no connection), with an optional search body.
fn status(port: u16, path: &str, search: Option<(&str, &str)>) -> Option<u16> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(20)))
            .build(),
    );
    let uri = format!("http://127.0.0.1:{port}{path}");
    let response = match search {
        Some((key, query)) => agent.run(
            ureq::http::Request::builder()
                .method("POST")
                .uri(uri)
                .header("x-api-key", key)
                .header("content-type", "application/json")
                .body(serde_json::json!({ "query": query }).to_string())
                .unwrap(),
        ),
        None => agent.run(ureq::http::Request::builder().uri(uri).body(()).unwrap()),
    };
    response.ok().map(|r| r.status().as_u16())
}

fn write_corpus(dir: &Path) {
    for i in 0..FILES {
        let sub = dir.join(format!("part{}", i % 4));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(
            sub.join(format!("note{i:03}.md")),
            format!(
                "# Note {i}\n\nHarbour report number {i}: the ferry schedule and the pier \
                 inspection. 港口报告 {i}。\n\n{}",
                "Routine paragraph about tides and moorings. ".repeat(40)
            ),
        )
        .unwrap();
    }
}

/// What clients saw while a load thread ran.
#[derive(Debug, Default)]
struct Seen {
    ok: usize,
    /// 503, or no connection (the killed replica, a restarting database).
    retryable: usize,
    /// Anything else: a failure a client could not retry its way out of.
    other: Vec<u16>,
}

#[test]
fn kills_and_a_database_restart_lose_and_duplicate_nothing() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("faults").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    write_corpus(&corpus);
    let admin = dir.path().join("admin");
    let corpus_arg = corpus.to_str().unwrap();

    // A user and their key; the corpus readable by their team.
    let out = ok(run(&url, &admin, &["user", "add", "lee"]));
    let key = out
        .split_whitespace()
        .find(|w| w.starts_with("kh_"))
        .unwrap()
        .to_owned();
    ok(run(&url, &admin, &["user", "join", "lee", "team:port"]));

    // 1. An ingest killed with SIGKILL midway.
    let mut ingest = knowhub(&url, &dir.path().join("ingest1"))
        .args(["ingest", corpus_arg])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    ingest.kill().unwrap();
    ingest.wait().unwrap();
    let partial: serde_json::Value =
        serde_json::from_str(&ok(run(&url, &admin, &["--json", "status"]))).unwrap();
    eprintln!(
        "killed ingest had stored {} of {FILES} documents",
        partial["documents"]
    );

    // 2. Two replicas serving while the ingest is run again to the end.
    let mut a = start_replica(&url, &dir.path().join("a"));
    let b = start_replica(&url, &dir.path().join("b"));
    ok(run(&url, &admin, &["ingest", corpus_arg]));
    ok(run(&url, &admin, &["acl", "set", corpus_arg, "team:port"]));

    let stop = Arc::new(AtomicBool::new(false));
    let loader = {
        let (stop, key) = (Arc::clone(&stop), key.clone());
        let ports = [a.port, b.port];
        std::thread::spawn(move || {
            let mut seen = Seen::default();
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                match status(
                    ports[i % 2],
                    "/api/v1/search",
                    Some((&key, "ferry schedule")),
                ) {
                    Some(200) => seen.ok += 1,
                    Some(503) | None => seen.retryable += 1,
                    Some(s) => seen.other.push(s),
                }
                i += 1;
            }
            seen
        })
    };
    std::thread::sleep(Duration::from_secs(1));

    // 3. Replica A killed mid-load: B keeps answering.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    for _ in 0..20 {
        assert_eq!(
            status(b.port, "/api/v1/search", Some((&key, "pier"))),
            Some(200)
        );
    }

    // 4. PostgreSQL restarted mid-load: only retryable failures, then service resumes.
    pg.restart().unwrap();
    let start = Instant::now();
    while status(b.port, "/api/v1/search", Some((&key, "tides"))) != Some(200) {
        assert!(start.elapsed() < Duration::from_secs(30), "B resumes");
        std::thread::sleep(Duration::from_millis(100));
    }
    // A restarts on its data directory and catches up.
    a = start_replica(&url, &dir.path().join("a"));
    std::thread::sleep(Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    let seen = loader.join().unwrap();
    eprintln!("clients during the faults: {seen:?}");
    assert!(seen.other.is_empty(), "non-retryable answers: {seen:?}");
    assert!(seen.ok > 0);

    // Nothing lost, nothing duplicated: every file once, store and index agree.
    let status: serde_json::Value =
        serde_json::from_str(&ok(run(&url, &admin, &["--json", "status"]))).unwrap();
    assert_eq!(status["documents"], FILES, "{status}");
    let check = run(
        &url,
        &dir.path().join("checker"),
        &["--json", "check", "--deep"],
    );
    let report: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap_or_default();
    assert!(
        check.status.success() && report["problems"].as_array().is_some_and(Vec::is_empty),
        "check --deep: {report} {}",
        String::from_utf8_lossy(&check.stderr)
    );
    assert_eq!(report["documents"], FILES, "{report}");
    // The restarted replica serves the corpus again.
    let start = Instant::now();
    while hits(a.port, &key) == 0 {
        assert!(start.elapsed() < Duration::from_secs(10), "A serves again");
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut b = b;
    a.child.kill().unwrap();
    b.child.kill().unwrap();
    let _ = a.child.wait();
    let _ = b.child.wait();
}

fn hits(port: u16, key: &str) -> usize {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build(),
    );
    let response = agent.run(
        ureq::http::Request::builder()
            .method("POST")
            .uri(format!("http://127.0.0.1:{port}/api/v1/search"))
            .header("x-api-key", key)
            .header("content-type", "application/json")
            .body(serde_json::json!({ "query": "harbour report" }).to_string())
            .unwrap(),
    );
    let Ok(mut response) = response else { return 0 };
    let text = response.body_mut().read_to_string().unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v["hits"].as_array().map(Vec::len))
        .unwrap_or(0)
}
