//! The desktop window joins a team knowledge base, end to end: a private PostgreSQL and a team
//! server (`knowhub serve`'s router on loopback) with two users and a restricted folder; the
//! window joins it as the USER alice from Settings → Team, sees only permitted sources, asks and
//! gets a cited answer from a team document whose citation opens, cannot reach the restricted
//! document by any path the window has (search, answers, sources, the open command itself);
//! then the server stops, the banner says so, and a question to this computer's own knowledge
//! base still answers.
//!
//! Skips with a message when the WebDriver tools, Xvfb or PostgreSQL are missing (under
//! `CI=true` it may not skip; `scripts/test.sh` provides them).

#![allow(clippy::unwrap_used, clippy::print_stderr, clippy::expect_used)]

mod window;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use fantoccini::Locator;
use knowhub_engine::authz::{Role, UserId};
use knowhub_engine::team::TeamConfig;
use knowhub_engine::{
    Engine, EngineConfig, Hub, IngestOptions, ModelConfig, ModelSet, ParserBackend, RealFs,
    dev_context,
};
use window::{Driver, Ui, css, set_choice};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

struct TeamServer {
    addr: SocketAddr,
    alice_key: String,
    /// An administrator's key.
    carol_key: String,
    salaries: i64,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TeamServer {
    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for TeamServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A team replica on `database`: the company's handbook for everyone, hr for team:hr; bob is
/// in hr, alice is not; carol administers the account.
fn team_server(database: &str, data: &Path, docs: &Path) -> TeamServer {
    write(
        docs,
        "handbook/leave.md",
        "# Leave\n\nEvery employee has 25 days of annual leave a year.",
    );
    write(
        docs,
        "hr/salaries.md",
        "# Salaries\n\nSalary bands for the annual review are confidential: zebracode 7731.",
    );
    let mut config = EngineConfig::new(data);
    config.parser = ParserBackend::InProcess;
    config.team = Some(TeamConfig {
        database: database.to_owned(),
        replica: "e2e".into(),
        host: "e2e-host".into(),
        secret_key_file: None,
    });
    let hub = Hub::open_with(config, Arc::new(RealFs), ModelSet::none()).unwrap();
    let root = dev_context();
    let engine = hub.engine(&root).unwrap();
    engine
        .ingest(
            &root,
            &[docs.to_path_buf()],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    engine
        .set_folder_acl(
            &root,
            &docs.join("handbook"),
            Some(&"public".parse().unwrap()),
        )
        .unwrap();
    engine
        .set_folder_acl(&root, &docs.join("hr"), Some(&"team:hr".parse().unwrap()))
        .unwrap();
    let alice = UserId::new("alice").unwrap();
    let bob = UserId::new("bob").unwrap();
    engine.add_user(&root, &alice, "Alice", Role::User).unwrap();
    engine.add_user(&root, &bob, "Bob", Role::User).unwrap();
    engine
        .add_membership(&root, &bob, &"team:hr".parse().unwrap())
        .unwrap();
    let alice_key = engine
        .rotate_api_key(&root, &alice)
        .unwrap()
        .secret()
        .to_owned();
    let carol = UserId::new("carol").unwrap();
    engine
        .add_user(&root, &carol, "Carol", Role::Admin)
        .unwrap();
    let carol_key = engine
        .rotate_api_key(&root, &carol)
        .unwrap()
        .secret()
        .to_owned();
    let salaries = engine
        .documents(&root, None)
        .unwrap()
        .into_iter()
        .find(|d| d.path.ends_with("salaries.md"))
        .unwrap()
        .id
        .0;
    drop(engine);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let hub = Arc::new(hub);
    let state = knowhub_server::ServerState::new(Arc::clone(&hub), None);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let _ = rt.block_on(knowhub_server::serve_on(listener, state, async {
            let _ = stopped.await;
        }));
        // The hub's database connections close outside any runtime (the synchronous client
        // runs its own).
        drop(rt);
        drop(hub);
    });
    TeamServer {
        addr,
        alice_key,
        carol_key,
        salaries,
        stop: Some(stop),
        thread: Some(thread),
    }
}

/// The app's own knowledge base: one note of the user's, nothing of the company's.
fn local_data(root: &Path) -> std::path::PathBuf {
    let mine = root.join("mine");
    write(
        &mine,
        "notes.md",
        "# Notes\n\nMy bicycle locker code is kept in the blue notebook.",
    );
    let data = root.join("app-data");
    let mut config = EngineConfig::new(&data);
    config.models = ModelConfig::keyword_only();
    let engine = Engine::open(config).unwrap();
    engine
        .ingest(
            &dev_context(),
            &[mine],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    drop(engine);
    // Extractive answers (deterministic; no model to download).
    std::fs::write(
        data.join("desktop-settings.json"),
        r#"{"llm": {"kind": "off"}, "welcomed": false}"#,
    )
    .unwrap();
    data
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_joins_a_team_server_as_a_user() {
    // PostgreSQL's client and the server's runtime are synchronous here: set up off the
    // test's runtime.
    let setup = tokio::task::spawn_blocking(|| {
        let pg = knowhub_pg::PgCluster::for_test()?;
        let root = tempfile::tempdir().unwrap();
        let root_path = root.path().canonicalize().unwrap();
        let database = pg.create_database("e2e_team").unwrap();
        let server = team_server(
            &database,
            &root_path.join("server"),
            &root_path.join("company"),
        );
        let data = local_data(&root_path);
        Some((pg, root, root_path, server, data))
    })
    .await
    .unwrap();
    let Some((pg, root, root_path, server, data)) = setup else {
        return;
    };
    let web_data = root_path.join("xdg-data");
    let env = [
        ("KNOWHUB_EMBEDDER", "off"),
        ("KNOWHUB_NO_KEYRING", "1"),
        ("XDG_DATA_HOME", web_data.to_str().unwrap()),
    ];
    let driver = match Driver::start(&data, &env) {
        Ok(d) => d,
        Err(why) => {
            eprintln!("skipping the team end-to-end test: {why}");
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "under CI=true a test may not skip"
            );
            return;
        }
    };
    let ui = driver.session().await;
    let server = Arc::new(std::sync::Mutex::new(server));
    scenario(&ui, &server, &data).await;
    let _ = ui.c.clone().close().await;
    drop(driver);
    tokio::task::spawn_blocking(move || {
        drop(server);
        drop(pg);
        drop(root);
    })
    .await
    .unwrap();
}

/// Settings → Team → who writes the team's answers (waits until the app took the choice).
async fn answers_by(ui: &Ui, who: &str) {
    ui.click(&css("nav-settings")).await;
    ui.click(&css("settings-tab-team")).await;
    set_choice(ui, "team-answers", who).await;
    ui.wait(&format!(
        "{}[data-answers=\"{who}\"]",
        css("team-answers-hint")
    ))
    .await;
}

/// Sends a command straight to the Rust side, as a script in the web view could: its result,
/// or `err:<kind>`.
async fn invoke(ui: &Ui, command: &str, args: serde_json::Value) -> String {
    let out =
        ui.c.execute_async(
            "const done = arguments[arguments.length - 1];\
             window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1]).then(\
               (r) => done('ok:' + JSON.stringify(r)),\
               (e) => done('err:' + (e && e.kind ? e.kind : JSON.stringify(e))));",
            vec![command.into(), args],
        )
        .await
        .unwrap();
    out.as_str().unwrap_or_default().to_owned()
}

async fn doc_paths(ui: &Ui) -> Vec<String> {
    let rows = ui.c.find_all(Locator::Css(&css("doc-row"))).await.unwrap();
    let mut paths = Vec::new();
    for r in rows {
        paths.push(r.attr("data-path").await.unwrap().unwrap_or_default());
    }
    paths
}

async fn scenario(ui: &Ui, server: &Arc<std::sync::Mutex<TeamServer>>, data: &Path) {
    let (addr, alice_key, carol_key, salaries) = {
        let s = server.lock().unwrap();
        (s.addr, s.alice_key.clone(), s.carol_key.clone(), s.salaries)
    };
    ui.wait(&css("whoami")).await;

    // The first run asks how to start; alice joins with the key an administrator gave her.
    ui.wait(&css("first-run")).await;
    ui.shot("first-run.png").await;
    ui.click(&css("first-run-team")).await;
    ui.type_into(&css("team-server"), &format!("http://{addr}"))
        .await;
    ui.type_into(&css("team-key"), &alice_key).await;
    ui.click(&css("team-join-button")).await;
    ui.until(
        "the first-run dialog to close once joined",
        "return !document.querySelector('[data-testid=\"first-run\"]');",
        vec![],
    )
    .await;
    // Settings → Team says who the key signs in as.
    ui.click(&css("nav-settings")).await;
    ui.click(&css("settings-tab-team")).await;
    ui.wait(&format!("{}[data-state=\"ok\"]", css("team-joined")))
        .await;
    let who = ui.text(&css("team-who")).await;
    assert!(who.contains("Alice"), "{who}");
    ui.shot("team-joined.png").await;
    let settings = std::fs::read_to_string(data.join("desktop-settings.json")).unwrap();
    assert!(
        !settings.contains(&alice_key),
        "the key stays out of the settings"
    );

    // Joining made the team the base; its sources are what alice may read.
    ui.wait(&format!("{}[aria-checked=\"true\"]", css("base-team")))
        .await;
    // The sidebar names the server's user, not this computer's.
    // (Read as textContent: WebDriver reads this clipped element's text as empty.)
    ui.until(
        "the sidebar to name the team's alice",
        "const w = document.querySelector('[data-testid=\"whoami\"][data-base=\"team\"]'); \
         return !!w && w.textContent.includes('alice');",
        vec![],
    )
    .await;
    ui.click(&css("nav-sources")).await;
    ui.wait(&css("doc-row")).await;
    let paths = doc_paths(ui).await;
    assert!(paths.iter().any(|p| p.ends_with("leave.md")), "{paths:?}");
    assert!(
        !paths.iter().any(|p| p.ends_with("salaries.md")),
        "alice must not see hr: {paths:?}"
    );
    assert!(
        !paths.iter().any(|p| p.ends_with("notes.md")),
        "the team list is the server's: {paths:?}"
    );

    // A cited answer from the team's handbook; its citation opens the passage and the document.
    ui.click(&css("nav-chat")).await;
    let answer = ui.ask("How many days of annual leave do we get?").await;
    assert_eq!(
        answer.attr("data-stop-reason").await.unwrap().as_deref(),
        Some("ok")
    );
    let text = ui.text(&css("answer-text")).await;
    assert!(text.contains("25"), "{text}");
    // Each citation says where it came from.
    let origins =
        ui.c.find_all(Locator::Css(&css("source-origin")))
            .await
            .unwrap();
    assert!(!origins.is_empty());
    for origin in origins {
        assert_eq!(
            origin.attr("data-origin").await.unwrap().as_deref(),
            Some("team")
        );
    }
    ui.click(&css("citation-marker")).await;
    ui.wait(&css("source-panel")).await;
    ui.wait(&format!(
        "{} {}[data-origin=\"team\"]",
        css("source-panel"),
        css("source-origin")
    ))
    .await;
    let passage = ui.shown_text(&css("source-passage")).await;
    assert!(passage.contains("25 days"), "{passage}");
    ui.click(&css("open-source")).await;
    ui.wait(&css("doc-viewer")).await;
    let highlight = ui.text(&css("doc-highlight")).await;
    assert!(highlight.contains("25 days"), "{highlight}");
    ui.shot("team-answer.png").await;
    ui.c.active_element()
        .await
        .unwrap()
        .send_keys("\u{e00c}")
        .await
        .unwrap();

    // A file dropped on the window goes to the team only into a team destination (offered
    // first while the window shows the team); here into a new collection on the server.
    let drop_dir = data.with_file_name("for-the-team");
    write(
        &drop_dir,
        "herons.md",
        "# Herons\n\nThe grey herons leave the marsh in late October.\n",
    );
    ui.c.execute(
        "window.__knowhub.handleDrop(arguments[0]); return true;",
        vec![serde_json::json!([drop_dir
            .join("herons.md")
            .display()
            .to_string()])],
    )
    .await
    .unwrap();
    ui.wait(&css("drop-dialog")).await;
    ui.wait(&format!(
        "{} option[value=\"::new-collection:team\"]",
        css("drop-target")
    ))
    .await;
    set_choice(ui, "drop-target", "::new-collection:team").await;
    ui.type_into(&css("drop-collection-name"), "Field notes")
        .await;
    let hint = ui.text(&css("drop-target-hint")).await;
    assert!(hint.contains(&addr.to_string()), "{hint}");
    ui.click(&css("drop-confirm")).await;
    let added = format!("{}[data-outcome=\"added\"]", css("drop-result"));
    ui.wait(&added).await;
    let stored =
        ui.c.find(Locator::Css(&added))
            .await
            .unwrap()
            .attr("data-stored")
            .await
            .unwrap()
            .unwrap_or_default();
    assert!(stored.ends_with("Field notes/herons.md"), "{stored}");
    let herons = ui.ask("When do the grey herons leave the marsh?").await;
    assert_eq!(
        herons.attr("data-stop-reason").await.unwrap().as_deref(),
        Some("ok")
    );
    let all =
        ui.c.find_all(Locator::Css(&css("answer-text")))
            .await
            .unwrap();
    let herons_text = all.last().unwrap().text().await.unwrap();
    assert!(herons_text.contains("October"), "{herons_text}");

    // Answers written by this computer's copilot over the passages the server returns
    // (Settings → Team): cited from the team, and the conversation is not on the server.
    answers_by(ui, "this_computer").await;
    ui.click(&css("nav-chat")).await;
    ui.click(&css("new-conversation")).await;
    let here = ui.ask("How many days of annual leave do we get?").await;
    assert_eq!(
        here.attr("data-stop-reason").await.unwrap().as_deref(),
        Some("ok")
    );
    let all =
        ui.c.find_all(Locator::Css(&css("answer-text")))
            .await
            .unwrap();
    let here_text = all.last().unwrap().text().await.unwrap();
    assert!(here_text.contains("25"), "{here_text}");
    let here_trace = here.attr("data-trace-id").await.unwrap().unwrap();
    let key = alice_key.clone();
    let on_server = tokio::task::spawn_blocking(move || {
        knowhub_client::Client::new(&format!("http://{addr}"), &key, Default::default())
            .unwrap()
            .trace(&here_trace)
            .map(drop)
            .map_err(|e| e.status())
    })
    .await
    .unwrap();
    assert_eq!(
        on_server,
        Err(Some(404)),
        "the trace stays on this computer"
    );
    answers_by(ui, "server").await;
    ui.click(&css("nav-chat")).await;

    // No path reaches hr: asking for it, or opening it by id through the command itself.
    let refused = ui
        .ask("What are the salary bands for the annual review?")
        .await;
    let refused_id = refused.attr("data-trace-id").await.unwrap();
    let all =
        ui.c.find_all(Locator::Css(&css("answer-text")))
            .await
            .unwrap();
    let refused_text = all.last().unwrap().text().await.unwrap();
    assert!(
        !refused_text.contains("zebracode") && !refused_text.contains("confidential"),
        "{refused_text}"
    );
    assert!(refused_id.is_some());
    for command in ["open_document", "open_in_default_app"] {
        let r = invoke(
            ui,
            command,
            serde_json::json!({ "documentId": salaries, "base": "team" }),
        )
        .await;
        assert_eq!(r, "err:not_found", "{command}");
    }
    let sources = invoke(
        ui,
        "sources",
        serde_json::json!({ "filter": "salaries", "base": "team" }),
    )
    .await;
    assert!(
        !sources.contains("zebracode") && !sources.contains("salaries.md"),
        "{sources}"
    );

    // Carol, an administrator on the server, joins from the same window: with the team shown,
    // Settings administers the server (its users, who may read hr, its data sources) and
    // shows the models it answers with.
    ui.click(&css("nav-settings")).await;
    ui.click(&css("settings-tab-team")).await;
    ui.click(&css("team-leave")).await;
    ui.wait(&css("team-join")).await;
    ui.type_into(&css("team-server"), &format!("http://{addr}"))
        .await;
    ui.type_into(&css("team-key"), &carol_key).await;
    ui.click(&css("team-join-button")).await;
    ui.wait(&format!("{}[data-state=\"ok\"]", css("team-joined")))
        .await;
    ui.wait(&format!("{}[aria-checked=\"true\"]", css("base-team")))
        .await;
    ui.click(&css("settings-tab-users")).await;
    for user in ["alice", "bob", "carol"] {
        ui.wait(&format!("{}[data-user=\"{user}\"]", css("user-row")))
            .await;
    }
    ui.click(&css("settings-tab-permissions")).await;
    ui.click(&format!("{}[data-path$=\"/hr\"]", css("acl-folder")))
        .await;
    // Who can see hr: bob (in team:hr) reads its document, alice does not.
    for (user, readable) in [("bob", 1), ("alice", 0)] {
        ui.wait(&format!(
            "{}[data-user=\"{user}\"][data-readable=\"{readable}\"]",
            css("reader-row")
        ))
        .await;
    }
    ui.click(&css("settings-tab-models")).await;
    ui.wait(&css("team-answer-model")).await;
    ui.click(&css("settings-tab-datasources")).await;
    ui.wait(&format!("{}[data-base=\"team\"]", css("ds-hint")))
        .await;
    ui.shot("team-admin.png").await;
    ui.click(&css("nav-chat")).await;

    // The server goes away: the next team request fails, the banner says what happened, and
    // this computer's knowledge base still answers.
    let stopping = Arc::clone(server);
    tokio::task::spawn_blocking(move || stopping.lock().unwrap().stop())
        .await
        .unwrap();
    ui.type_into(&css("chat-input"), "Is the server there?")
        .await;
    ui.click(&css("chat-send")).await;
    ui.wait(&format!("{}[data-state=\"offline\"]", css("team-banner")))
        .await;
    ui.shot("team-offline.png").await;
    ui.click(&css("team-use-local")).await;
    ui.wait(&format!("{}[aria-checked=\"true\"]", css("base-local")))
        .await;
    let local = ui.ask("Where is the bicycle locker code kept?").await;
    assert_eq!(
        local.attr("data-stop-reason").await.unwrap().as_deref(),
        Some("ok")
    );
    let all =
        ui.c.find_all(Locator::Css(&css("answer-text")))
            .await
            .unwrap();
    let local_text = all.last().unwrap().text().await.unwrap();
    assert!(local_text.contains("blue notebook"), "{local_text}");
    let last_origin =
        ui.c.find_all(Locator::Css(&css("source-origin")))
            .await
            .unwrap();
    assert_eq!(
        last_origin
            .last()
            .unwrap()
            .attr("data-origin")
            .await
            .unwrap()
            .as_deref(),
        Some("local")
    );
}
