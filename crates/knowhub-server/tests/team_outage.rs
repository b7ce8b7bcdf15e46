//! A team replica while its database restarts: health says so (503, for load balancers),
//! requests fail with a retryable 503 and `Retry-After`, and service resumes by itself.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::time::{Duration, Instant};

use knowhub_engine::authz::{Role, UserId};
use knowhub_engine::team::TeamConfig;
use knowhub_engine::{EngineConfig, Hub, ModelConfig, dev_context};
use knowhub_pg::PgCluster;
use knowhub_server::ServerState;
use serde_json::{Value, json};

struct Reply {
    status: u16,
    retry_after: Option<String>,
    body: Value,
}

fn call(http: &ureq::Agent, key: &str, method: &str, url: &str, body: Option<Value>) -> Reply {
    let builder = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("x-api-key", key);
    let mut resp = match body {
        Some(b) => http
            .run(
                builder
                    .header("content-type", "application/json")
                    .body(b.to_string())
                    .unwrap(),
            )
            .unwrap(),
        None => http.run(builder.body(()).unwrap()).unwrap(),
    };
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = resp.body_mut().read_to_string().unwrap();
    Reply {
        status: resp.status().as_u16(),
        retry_after,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

#[test]
fn a_database_restart_is_a_retryable_outage_and_service_resumes() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("outage").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("notes.md"),
        "# Notes\n\nThe OSPREY rollout is on Tuesday.",
    )
    .unwrap();
    let mut config = EngineConfig::new(dir.path().join("data"));
    config.models = ModelConfig::keyword_only();
    config.team = Some(TeamConfig::new(url));
    let hub = Hub::open(config).unwrap();
    let dev = dev_context();
    let engine = hub.engine(&dev).unwrap();
    engine
        .ingest(&dev, &[docs], &Default::default(), &mut |_| {})
        .unwrap();
    let admin = UserId::new("ada").unwrap();
    engine.add_user(&dev, &admin, "Ada", Role::Admin).unwrap();
    let key = engine
        .rotate_api_key(&dev, &admin)
        .unwrap()
        .secret()
        .to_owned();
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
    let http = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build(),
    );
    let health = format!("{base}/api/v1/health");
    let search = format!("{base}/api/v1/search");
    let query = || Some(json!({"query": "osprey rollout"}));

    let r = call(&http, &key, "GET", &health, None);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["store"], "postgres");
    assert_eq!(r.body["database"], "ok");
    let r = call(&http, &key, "POST", &search, query());
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.to_string().contains("OSPREY"), "{}", r.body);

    pg.stop_server().unwrap();
    let r = call(&http, &key, "GET", &health, None);
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.body["status"], "unavailable");
    let r = call(&http, &key, "POST", &search, query());
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "UNAVAILABLE");
    assert_eq!(r.retry_after.as_deref(), Some("1"));
    // The message names no host, socket or SQL.
    let message = r.body["error"]["message"].as_str().unwrap();
    assert!(
        !message.contains('/') && !message.contains("SELECT"),
        "{message}"
    );

    pg.restart().unwrap();
    let start = Instant::now();
    loop {
        let r = call(&http, &key, "POST", &search, query());
        if r.status == 200 {
            assert!(r.body.to_string().contains("OSPREY"), "{}", r.body);
            break;
        }
        assert_eq!(
            r.status, 503,
            "only retryable errors while it comes back: {}",
            r.body
        );
        assert!(start.elapsed() < Duration::from_secs(20), "service resumes");
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("service resumed {:?} after the restart", start.elapsed());
    assert_eq!(call(&http, &key, "GET", &health, None).status, 200);
}
