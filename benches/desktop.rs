//! Desktop app benchmark: drives the real window (Xvfb + tauri-driver, like the end-to-end
//! test) on the demo corpus and prints a table:
//! - cold start to a usable window (app launch → the signed-in user shown), 3 launches;
//! - idle memory of the app's process tree (the Rust process and its WebKit processes);
//! - memory and time while 1,000 dropped files are ingested;
//! - frame responsiveness while an answer is generated (requestAnimationFrame gaps);
//! - joined to a team server on loopback: launch → first team answer (written by the server,
//!   and, with a model, by this computer's model over the team's passages), and idle memory.
//!
//! `cargo bench -p knowhub-desktop --bench desktop` (release build). The answer model is the
//! configured default (the local Qwen 0.5B when installed, else extractive answers);
//! `KNOWHUB_BENCH_LLM=off` forces extractive answers; `KNOWHUB_E2E_WAIT_SECS` (default 60)
//! bounds each step — give a local model on 2 cores more (e.g. 600); `KNOWHUB_BENCH_ONLY=joined`
//! measures only the joined rows.

// A benchmark binary reports on stdout and may panic on a broken set-up.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

#[path = "../tests/window/mod.rs"]
mod window;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use knowhub_engine::{Engine, EngineConfig, IngestOptions, ModelConfig, dev_context};
use window::{Driver, Ui, css};

/// Resident memory (KiB) of one process (0 when it is gone).
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Resident memory (KiB) of a process and all its descendants.
fn tree_rss_kib(root: u32) -> u64 {
    let mut total = 0;
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        total += rss_kib(pid);
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
            for t in tasks.flatten() {
                if let Ok(children) = std::fs::read_to_string(t.path().join("children")) {
                    stack.extend(
                        children
                            .split_whitespace()
                            .filter_map(|c| c.parse::<u32>().ok()),
                    );
                }
            }
        }
    }
    total
}

/// The app process started for `data` (its environment names the data directory).
fn app_pid(data: &Path) -> Option<u32> {
    let want = format!("KNOWHUB_DATA_DIR={}", data.display());
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
        if !exe.to_string_lossy().contains("knowhub-desktop") {
            continue;
        }
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()) {
            // The app, not one of its parser workers (those have the app as parent).
            let stat = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if !stat.contains("parse-worker") {
                return Some(pid);
            }
        }
    }
    None
}

fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

async fn signed_in(ui: &Ui) {
    ui.until(
        "the signed-in user",
        "const w = document.querySelector('[data-testid=\"whoami\"]'); return !!w && w.textContent.trim().length > 0;",
        vec![],
    )
    .await;
}

fn make_files(dir: &Path, n: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..n {
        let text = format!(
            "# Note {i}\n\nProject {i} ships in week {}. Owner: team {}.\n\n## 说明\n\n项目 {i} 的负责人是第 {} 组，预算 {} 元。\n",
            i % 52,
            i % 7,
            i % 7,
            1000 + i
        );
        std::fs::write(dir.join(format!("note-{i:04}.md")), text).unwrap();
    }
}

/// A team server on loopback over the demo corpus (keyword search) answering with `llm`;
/// returns its address, a USER's key, and how to stop it.
fn team_server(
    data: &Path,
    llm: Option<std::sync::Arc<dyn knowhub_llm::Llm>>,
) -> (
    std::net::SocketAddr,
    String,
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let demo = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("assets/demo");
    let mut config = EngineConfig::new(data);
    config.models = ModelConfig::keyword_only();
    let hub = knowhub_engine::Hub::open(config).unwrap();
    let root = dev_context();
    let engine = hub.engine(&root).unwrap();
    engine
        .ingest(
            &root,
            std::slice::from_ref(&demo),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    engine
        .set_folder_acl(&root, &demo, Some(&"public".parse().unwrap()))
        .unwrap();
    let user = knowhub_engine::authz::UserId::new("bench").unwrap();
    engine
        .add_user(&root, &user, "Bench", knowhub_engine::authz::Role::User)
        .unwrap();
    let key = engine
        .rotate_api_key(&root, &user)
        .unwrap()
        .secret()
        .to_owned();
    drop(engine);
    // The server's runtime lives on its own thread: the app under test gets the cores it asks for.
    let (tx, rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        tx.send(listener.local_addr().unwrap()).unwrap();
        let state = knowhub_server::ServerState::new(hub, llm);
        let _ = rt.block_on(knowhub_server::serve_on(listener, state, async {
            let _ = stopped.await;
        }));
    });
    (rx.recv().unwrap(), key, stop, thread)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let root = tempfile::tempdir().unwrap();
    let root_path: PathBuf = root.path().canonicalize().unwrap();
    let demo = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join("assets/demo");
    let data = root_path.join("data");
    {
        let mut config = EngineConfig::new(&data);
        config.models = ModelConfig::keyword_only();
        let engine = Engine::open(config).unwrap();
        engine
            .ingest(
                &dev_context(),
                &[demo],
                &IngestOptions::default(),
                &mut |_| {},
            )
            .unwrap();
    }
    let llm = std::env::var("KNOWHUB_BENCH_LLM").unwrap_or_default();
    if llm == "off" {
        std::fs::write(
            data.join("desktop-settings.json"),
            r#"{"llm": {"kind": "off"}}"#,
        )
        .unwrap();
    }
    // `KNOWHUB_BENCH_ONLY=joined`: only the rows of the app joined to a team server.
    let only_joined = std::env::var("KNOWHUB_BENCH_ONLY").is_ok_and(|v| v == "joined");
    let mut rows: Vec<(String, String)> = Vec::new();
    // Each row is also printed when measured, so a run cut short still reports what it got.
    let mut record = |k: &str, v: String| {
        eprintln!("measured: {k}: {v}");
        rows.push((k.to_string(), v));
    };

    if !only_joined {
        let driver = match Driver::start(&data, &[("KNOWHUB_EMBEDDER", "off")]) {
            Ok(d) => d,
            Err(why) => {
                eprintln!("cannot run the desktop benchmark: {why}");
                return;
            }
        };
        // Cold start, three launches (the first also pays for the file cache).
        let mut starts = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            let ui = driver.session().await;
            signed_in(&ui).await;
            starts.push(t.elapsed().as_millis());
            ui.c.clone().close().await.unwrap();
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        record(
            "cold start → usable window (3 launches)",
            format!(
                "{} ms",
                starts
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(" / ")
            ),
        );

        let ui = driver.session().await;
        signed_in(&ui).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let pid = app_pid(&data).expect("the app process");
        record(
            "idle memory (app + WebKit processes)",
            mib(tree_rss_kib(pid)),
        );
        record("  of which the app process", mib(rss_kib(pid)));

        // Frame responsiveness while an answer is generated.
        ui.c.execute(
        "window.__gaps = []; let last = performance.now(); window.__mon = true;\
         const f = (t) => { window.__gaps.push(t - last); last = t; if (window.__mon) requestAnimationFrame(f); };\
         requestAnimationFrame(f); return true;",
        vec![],
    )
    .await
    .unwrap();
        let t = Instant::now();
        let answer = ui
        .ask("How many days of annual leave do new employees get, and how far in advance must longer leave be requested?")
        .await;
        let answer_ms = t.elapsed().as_millis();
        let gaps =
            ui.c.execute("window.__mon = false; return window.__gaps;", vec![])
                .await
                .unwrap();
        let mut gaps: Vec<f64> = gaps
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
            .unwrap_or_default();
        gaps.sort_by(|a, b| a.total_cmp(b));
        let pct = |p: f64| {
            gaps.get(((gaps.len() as f64 - 1.0) * p) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        let written = answer
            .attr("data-stop-reason")
            .await
            .unwrap()
            .unwrap_or_default();
        record(
            "first answer (includes loading the answer model) while measuring frames",
            format!("{answer_ms} ms (stop reason {written})"),
        );
        record(
            "frames during the answer",
            format!(
                "{} frames; median {:.1} ms, p95 {:.1} ms, max {:.1} ms; {} over 50 ms",
                gaps.len(),
                pct(0.5),
                pct(0.95),
                gaps.last().copied().unwrap_or(0.0),
                gaps.iter().filter(|g| **g > 50.0).count()
            ),
        );
        // A second question with the model loaded: the answer time a user sees from then on.
        let t = Instant::now();
        let answer = ui
            .ask("How many days per week may employees work remotely after probation?")
            .await;
        let second_ms = t.elapsed().as_millis();
        let written = answer
            .attr("data-stop-reason")
            .await
            .unwrap()
            .unwrap_or_default();
        record(
            "second answer (model loaded)",
            format!("{second_ms} ms (stop reason {written})"),
        );

        // 1,000 dropped files: time to ingest and peak memory while it runs.
        let drop_dir = root_path.join("drop-1000");
        make_files(&drop_dir, 1000);
        let t = Instant::now();
        ui.c.execute(
            "window.__knowhub.handleDrop(arguments[0]); return true;",
            vec![serde_json::json!([drop_dir.display().to_string()])],
        )
        .await
        .unwrap();
        ui.click(&css("drop-confirm")).await;
        let mut peak = 0;
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            peak = peak.max(tree_rss_kib(pid));
            let n =
                ui.c.find_all(fantoccini::Locator::Css(&css("drop-result")))
                    .await
                    .map(|v| v.len())
                    .unwrap_or(0);
            if n > 0 || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        record(
            "1,000 dropped files ingested",
            format!("{:.1} s", t.elapsed().as_secs_f64()),
        );
        record("peak memory during that ingest", mib(peak));
        let _ = ui.c.clone().close().await;
        drop(driver);
    }

    // Joined to a team server on loopback (the demo corpus, served by `knowhub serve`'s
    // router with the same answer model setting), the app's own knowledge base empty.
    let server_llm = if llm == "off" {
        None
    } else {
        knowhub_agent::providers::LlmChoice::Default
            .load(&knowhub_engine::DeviceChoice::Cpu.device())
            .ok()
            .and_then(|loaded| loaded.llm)
    };
    let model = server_llm
        .as_ref()
        .map_or("extractive".to_owned(), |l| l.model_id().to_owned());
    let (addr, key, stop, server) = team_server(&root_path.join("team"), server_llm);
    let joined = root_path.join("joined");
    let server_answers = serde_json::json!({
        "llm": {"kind": "off"},
        "team": {"server": format!("http://{addr}")},
    });
    let (driver, firsts) = joined_first_answers(&joined, &server_answers, &key).await;
    record(
        &format!("joined: launch → first team answer (server on loopback, {model}; 3 launches)"),
        firsts.join(" / "),
    );
    let ui = driver.session().await;
    signed_in(&ui).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let pid = app_pid(&joined).expect("the joined app process");
    record(
        "joined: idle memory (app + WebKit processes)",
        mib(tree_rss_kib(pid)),
    );
    record("  of which the app process", mib(rss_kib(pid)));
    let _ = ui.c.clone().close().await;
    drop(driver);
    if llm != "off" {
        // This computer's copilot (the default local model) writes over the team's passages.
        let here = root_path.join("joined-here");
        let local_answers = serde_json::json!({
            "team": {"server": format!("http://{addr}"), "answers": "this_computer"},
        });
        let (here_driver, firsts) = joined_first_answers(&here, &local_answers, &key).await;
        drop(here_driver);
        record(
            "joined: launch → first team answer written by this computer's default model (3 launches)",
            firsts.join(" / "),
        );
    }
    let _ = stop.send(());
    let _ = server.join();

    println!("\n| desktop app (2 cores, Xvfb) | |\n|---|---|");
    for (k, v) in rows {
        println!("| {k} | {v} |");
    }
}

/// Three launches of the app joined to the team server with `settings`: each starts the
/// window, picks *Team* and asks; returns the driver (still running) and each launch's time
/// to the answer with its stop reason.
async fn joined_first_answers(
    data: &Path,
    settings: &serde_json::Value,
    key: &str,
) -> (Driver, Vec<String>) {
    std::fs::create_dir_all(data).unwrap();
    std::fs::write(data.join("desktop-settings.json"), settings.to_string()).unwrap();
    std::fs::write(data.join("team.key"), key).unwrap();
    let driver = Driver::start(
        data,
        &[("KNOWHUB_EMBEDDER", "off"), ("KNOWHUB_NO_KEYRING", "1")],
    )
    .unwrap();
    let mut firsts = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let ui = driver.session().await;
        signed_in(&ui).await;
        ui.click(&css("base-team")).await;
        ui.wait(&format!("{}[aria-checked=\"true\"]", css("base-team")))
            .await;
        let answer = ui
            .ask("How many days of annual leave do new employees get?")
            .await;
        let stop_reason = answer
            .attr("data-stop-reason")
            .await
            .unwrap()
            .unwrap_or_default();
        firsts.push(format!("{} ms ({stop_reason})", t.elapsed().as_millis()));
        ui.c.clone().close().await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    (driver, firsts)
}
