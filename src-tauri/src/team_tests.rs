//! The app joined to a real team server (`knowhub serve`'s router on a loopback port, over a
//! knowledge base with a public and a restricted folder), as a USER: only permitted sources,
//! cited answers from team documents that open, no path to the restricted one; then the server
//! stops and the team reports `offline` while this computer's knowledge base still answers.
//! The window over these commands is driven by `tests/e2e.rs`.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use knowhub_agent::CancelFlag;
use knowhub_agent::providers::LlmChoice;
use knowhub_engine::authz::{Role, UserId};
use knowhub_engine::{EngineConfig, Hub, IngestOptions, ParserBackend, dev_context};

use crate::dto::{Base, MemoryRow};
use crate::state::{AppConfig, AppState};

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A team server over `data` with alice and bob (USERs outside team:hr) and carol (an
/// ADMIN); returns its address, alice's key, the restricted document's id, the stop signal,
/// bob's key and carol's.
#[allow(clippy::type_complexity)]
fn team_server(
    data: &Path,
    docs: &Path,
) -> (
    SocketAddr,
    String,
    i64,
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
    String,
    String,
) {
    write(
        docs,
        "handbook/leave.md",
        "# Leave\n\nEvery employee has 25 days of annual leave a year.",
    );
    write(
        docs,
        "hr/salaries.md",
        "# Salaries\n\nSalary bands for the annual review are confidential.",
    );
    let mut config = EngineConfig::new(data);
    config.parser = ParserBackend::InProcess;
    let hub = Hub::open_with(
        config,
        Arc::new(knowhub_engine::RealFs),
        knowhub_engine::ModelSet::none(),
    )
    .unwrap();
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
    engine.add_user(&root, &alice, "Alice", Role::User).unwrap();
    let key = engine
        .rotate_api_key(&root, &alice)
        .unwrap()
        .secret()
        .to_owned();
    let bob = UserId::new("bob").unwrap();
    engine.add_user(&root, &bob, "Bob", Role::User).unwrap();
    let bob_key = engine
        .rotate_api_key(&root, &bob)
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

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let state = knowhub_server::ServerState::new(hub, None);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        rt.block_on(knowhub_server::serve_on(listener, state, async {
            let _ = stopped.await;
        }))
        .unwrap();
    });
    (addr, key, salaries, stop, thread, bob_key, carol_key)
}

fn app(data: &Path) -> AppState {
    let state = AppState::open(&AppConfig {
        data_dir: data.to_path_buf(),
        api_key: None,
        account: None,
        embedder: Some("off".into()),
        sandbox_parsers: false,
        prefer_keyring: false,
    })
    .unwrap();
    // Extractive answers: no local model is loaded by the test.
    let mut settings = state.settings();
    settings.llm = LlmChoice::Off;
    state.save_settings(settings).unwrap();
    state
}

fn ask(state: &AppState, base: Base, question: &str) -> crate::dto::Answer {
    ask_in(state, base, false, question)
}

/// A question to this computer's copilot over both bases.
fn ask_both(state: &AppState, question: &str) -> crate::dto::Answer {
    ask_in(state, Base::Local, true, question)
}

fn ask_in(state: &AppState, base: Base, with_team: bool, question: &str) -> crate::dto::Answer {
    let mut steps = 0;
    state
        .question_library(base, with_team)
        .unwrap()
        .ask(
            question.into(),
            None,
            false,
            &CancelFlag::new(),
            &mut |_| steps += 1,
        )
        .unwrap()
}

#[test]
fn a_joined_app_reads_the_team_under_the_users_permissions_and_survives_the_server_going_away() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, key, salaries, stop, server, _, _) =
        team_server(&dir.path().join("server"), &dir.path().join("company"));
    let app_dir = dir.path().join("app");
    let state = app(&app_dir);
    let server_url = format!("http://{addr}");

    // Not joined: the team is not a base yet.
    assert_eq!(state.team_status().state, "not_joined");
    assert_eq!(state.library(Base::Team).err().unwrap().kind, "not_joined");

    // A wrong key joins nothing and stores nothing.
    let refused = state
        .join_team(&server_url, "kh_not_a_key", None)
        .unwrap_err();
    assert_eq!(refused.kind, "unauthenticated", "{refused:?}");
    assert!(!app_dir.join("team.key").exists() && state.settings().team.is_none());
    // Plain http is for this computer only.
    let remote = state
        .join_team("http://kb.example.com", &key, None)
        .unwrap_err();
    assert_eq!(remote.kind, "invalid_input", "{remote:?}");

    let joined = state.join_team(&server_url, &key, None).unwrap();
    assert_eq!(
        (
            joined.state.as_str(),
            joined.user.as_deref(),
            joined.role.as_deref()
        ),
        ("ok", Some("alice"), Some("USER"))
    );
    assert_eq!(joined.key_store.as_deref(), Some("file"));
    let settings_text = std::fs::read_to_string(app_dir.join("desktop-settings.json")).unwrap();
    assert!(
        !settings_text.contains(&key),
        "the key is not in the settings"
    );

    // Sources: the handbook, never the salaries.
    let team = state.library(Base::Team).unwrap();
    let sources = team.sources(None).unwrap();
    let paths: Vec<&str> = sources.documents.iter().map(|d| d.path.as_str()).collect();
    assert!(paths.iter().any(|p| p.ends_with("leave.md")), "{paths:?}");
    assert!(
        !paths.iter().any(|p| p.ends_with("salaries.md")),
        "{paths:?}"
    );

    // A cited answer from the team document, whose citation opens.
    let answer = ask(&state, Base::Team, "How many days of annual leave?");
    assert_eq!(answer.base, Base::Team);
    assert!(answer.text.contains("25"), "{}", answer.text);
    let cited = answer
        .sources
        .iter()
        .find(|s| s.title.contains("Leave") || s.uri.contains("kb://doc/"))
        .expect("a cited passage");
    let document = cited.document_id.expect("the citation names its document");
    let preview = team.open_document(document).unwrap();
    assert!(preview.text.contains("25 days"), "{}", preview.text);
    assert!(
        preview
            .passages
            .iter()
            .any(|p| Some(p.chunk_id) == cited.chunk_id),
        "the cited passage is in the preview"
    );
    let file = team.local_file(document).unwrap();
    assert!(std::fs::read_to_string(file).unwrap().contains("25 days"));
    // The conversation and its trace live on the server.
    let conversations = team.conversations().unwrap();
    assert_eq!(conversations.len(), 1);
    let turns = team.conversation(&conversations[0].id).unwrap();
    assert_eq!(turns[0].trace_id, answer.trace_id);
    assert_eq!(
        team.trace(&answer.trace_id).unwrap().trace_id,
        answer.trace_id
    );
    team.send_feedback(&answer.trace_id, true, "").unwrap();

    // No path reaches the restricted document.
    assert_eq!(
        team.open_document(salaries).err().unwrap().kind,
        "not_found"
    );
    assert_eq!(team.local_file(salaries).err().unwrap().kind, "not_found");
    let asked = ask(&state, Base::Team, "salary bands annual review");
    assert!(!asked.text.contains("confidential"), "{}", asked.text);
    assert!(
        asked
            .sources
            .iter()
            .all(|s| s.document_id != Some(salaries))
    );

    // This computer's own knowledge base answers from its own files, not the team's.
    let mine = dir.path().join("mine");
    write(
        &mine,
        "notes.md",
        "# Notes\n\nMy bicycle locker code is kept in the blue notebook.",
    );
    let signed = state.signed();
    signed
        .engine
        .ingest(&signed.ctx, &[mine], &IngestOptions::default(), &mut |_| {})
        .unwrap();
    let local = ask(
        &state,
        Base::Local,
        "Where is the bicycle locker code kept?",
    );
    assert_eq!(local.base, Base::Local);
    assert!(local.text.contains("blue notebook"), "{}", local.text);
    let local_team = ask(&state, Base::Team, "Where is the bicycle locker code kept?");
    assert!(
        !local_team.text.contains("blue notebook"),
        "nothing local goes to the server"
    );

    // Both at once: this computer's copilot searches its own documents and, with alice's key,
    // the team's; each citation opens in the base it came from, and the conversation stays here.
    let from_team = ask_both(&state, "How many days of annual leave?");
    assert_eq!(from_team.base, Base::Local);
    assert!(from_team.text.contains("25"), "{}", from_team.text);
    assert_eq!(from_team.notice, None);
    let team_source = from_team
        .sources
        .iter()
        .find(|s| s.base == Base::Team)
        .expect("a citation of the team's handbook");
    let opened = team
        .open_document(team_source.document_id.unwrap())
        .unwrap();
    assert!(opened.text.contains("25 days"), "{}", opened.text);
    let from_here = ask_both(&state, "Where is the bicycle locker code kept?");
    assert!(
        from_here.text.contains("blue notebook"),
        "{}",
        from_here.text
    );
    assert!(
        from_here
            .sources
            .iter()
            .any(|s| s.base == Base::Local && s.document_id.is_some())
    );
    let withheld = ask_both(&state, "salary bands annual review");
    assert!(!withheld.text.contains("confidential"), "{}", withheld.text);
    assert!(
        withheld
            .sources
            .iter()
            .all(|s| !(s.base == Base::Team && s.document_id == Some(salaries)))
    );
    let local_base = state.library(Base::Local).unwrap();
    let replayed = local_base
        .conversation(from_team.session_id.as_deref().unwrap())
        .unwrap();
    assert_eq!(
        replayed[0]
            .sources
            .iter()
            .map(|s| s.base)
            .collect::<Vec<_>>(),
        from_team.sources.iter().map(|s| s.base).collect::<Vec<_>>(),
        "a stored answer's citations still open where they came from"
    );
    drop(local_base);

    // The server goes away: the team says so, the local knowledge base keeps answering.
    stop.send(()).unwrap();
    server.join().unwrap();
    let status = state.team_status();
    assert_eq!(status.state, "offline", "{status:?}");
    assert_eq!(team.conversations().err().unwrap().kind, "offline");
    assert!(
        ask(&state, Base::Local, "bicycle locker code")
            .text
            .contains("blue notebook")
    );
    // …and a question over both bases says the team's half is missing.
    let alone = ask_both(&state, "bicycle locker code");
    assert!(alone.text.contains("blue notebook"), "{}", alone.text);
    assert!(
        alone
            .notice
            .as_deref()
            .is_some_and(|n| n.contains("team knowledge base could not be searched")),
        "{:?}",
        alone.notice
    );

    // A restart finds the team again (its key from where it was kept), and leaving forgets it.
    drop(team);
    drop(state);
    let state = app(&app_dir);
    let status = state.team_status();
    assert!(status.joined && status.state == "offline", "{status:?}");
    state.leave_team().unwrap();
    assert!(!app_dir.join("team.key").exists());
    assert_eq!(state.team_status().state, "not_joined");
    assert!(app(&app_dir).settings().team.is_none());
}

#[test]
fn files_dropped_into_a_team_collection_go_to_the_server_and_only_there() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, alice_key, _, stop, server, bob_key, _) =
        team_server(&dir.path().join("server"), &dir.path().join("company"));
    let server_url = format!("http://{addr}");
    let state = app(&dir.path().join("app"));
    state.join_team(&server_url, &alice_key, None).unwrap();
    let link = state.joined_team().unwrap();

    // Alice's destinations on the server: her uploads folder, nothing else yet.
    let targets = crate::team::drop_targets(&link).unwrap();
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert_eq!(
        (targets[0].base, targets[0].kind.as_str()),
        (Base::Team, "uploads")
    );

    let dropped = dir.path().join("field");
    write(
        &dropped,
        "herons.md",
        "# Herons\n\nThe grey herons leave the marsh in late October.",
    );
    write(
        &dropped,
        "sub/owls.md",
        "# Owls\n\nThe barn owls nest in the old mill.",
    );
    write(
        &dropped,
        ".private/diary.md",
        "# Diary\n\nA hidden note that stays here.",
    );
    let mut seen = Vec::new();
    let public = vec!["public".to_string()];
    let results = crate::team::upload_dropped(
        &link,
        std::slice::from_ref(&dropped),
        Some("Field notes"),
        Some(&public),
        &mut |row| seen.push(row.source.clone()),
    )
    .unwrap();
    let outcomes: Vec<(&str, &str)> = results
        .iter()
        .map(|r| (r.outcome.as_str(), r.reason.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(outcomes, vec![("added", ""), ("added", "")], "{results:?}");
    assert_eq!(seen.len(), 2, "each file is reported as it is read");
    assert!(
        results.iter().all(|r| r.stored_as.contains("Field notes")),
        "{results:?}"
    );
    assert!(
        !results.iter().any(|r| r.source.contains("diary")),
        "hidden files stay"
    );

    // The new collection is a destination now; the files are searchable on the team…
    let targets = crate::team::drop_targets(&link).unwrap();
    assert!(
        targets
            .iter()
            .any(|t| t.kind == "collection" && t.name == "Field notes"),
        "{targets:?}"
    );
    let answer = ask(
        &state,
        Base::Team,
        "When do the grey herons leave the marsh?",
    );
    assert!(answer.text.contains("October"), "{}", answer.text);
    // …and, shared with everyone, bob reads them too; a private drop stays alice's.
    write(
        dir.path(),
        "mine/plans.md",
        "# Plans\n\nAlice plans a kayak trip to the delta.",
    );
    let private = crate::team::upload_dropped(
        &link,
        &[dir.path().join("mine/plans.md")],
        None,
        None,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(private[0].outcome, "added", "{private:?}");
    let bob = knowhub_client::Client::new(&server_url, &bob_key, Default::default()).unwrap();
    let search = |q: &str| {
        bob.search(&knowhub_client::SearchRequest::new(q))
            .unwrap()
            .into_iter()
            .map(|h| h.text)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(search("grey herons marsh").contains("October"));
    assert!(
        !search("kayak trip delta").contains("kayak"),
        "a private drop is alice's only"
    );

    // Nothing dropped into the team is stored on this computer.
    let signed = state.signed();
    let local = signed.engine.documents(&signed.ctx, None).unwrap();
    assert!(
        local.is_empty(),
        "{:?}",
        local.iter().map(|d| &d.path).collect::<Vec<_>>()
    );
    drop(signed);

    // A server that cannot be reached: the drop fails with a reason, nothing half-done.
    stop.send(()).unwrap();
    server.join().unwrap();
    let offline = crate::team::upload_dropped(&link, &[dropped], None, None, &mut |_| {});
    assert_eq!(offline.err().unwrap().kind, "offline");
}

#[test]
fn this_computers_copilot_answers_from_the_teams_passages_when_chosen() {
    use crate::dto::TeamAnswers;
    let dir = tempfile::tempdir().unwrap();
    let (addr, key, salaries, stop, server, _, _) =
        team_server(&dir.path().join("server"), &dir.path().join("company"));
    let server_url = format!("http://{addr}");
    let state = app(&dir.path().join("app"));
    let joined = state.join_team(&server_url, &key, None).unwrap();
    assert_eq!(
        joined.answers,
        TeamAnswers::Server,
        "the server answers by default"
    );
    let server_side = knowhub_client::Client::new(&server_url, &key, Default::default()).unwrap();

    // This computer's own note, which a team question must not use.
    let mine = dir.path().join("mine");
    write(
        &mine,
        "leave.md",
        "# My leave\n\nI keep 3 days of leave for December.",
    );
    let signed = state.signed();
    signed
        .engine
        .ingest(&signed.ctx, &[mine], &IngestOptions::default(), &mut |_| {})
        .unwrap();
    drop(signed);

    let status = state.set_team_answers(TeamAnswers::ThisComputer).unwrap();
    assert_eq!(status.answers, TeamAnswers::ThisComputer);
    let answer = ask(&state, Base::Team, "How many days of annual leave?");
    assert_eq!(answer.base, Base::Team);
    assert!(answer.text.contains("25"), "{}", answer.text);
    assert!(!answer.text.contains("December"), "{}", answer.text);
    assert!(!answer.sources.is_empty());
    assert!(
        answer.sources.iter().all(|s| s.base == Base::Team),
        "{:?}",
        answer.sources
    );
    let team = state.library(Base::Team).unwrap();
    let cited = answer.sources[0].document_id.unwrap();
    assert!(team.open_document(cited).unwrap().text.contains("25 days"));
    let withheld = ask(&state, Base::Team, "salary bands annual review");
    assert!(!withheld.text.contains("confidential"), "{}", withheld.text);
    assert!(
        withheld
            .sources
            .iter()
            .all(|s| s.document_id != Some(salaries))
    );

    // The conversation is this computer's: listed under the team base, not under this
    // computer's, unknown to the server; its trace and feedback are here.
    let id = answer.session_id.clone().unwrap();
    let listed: Vec<String> = team
        .conversations()
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert!(listed.contains(&id), "{listed:?}");
    let local = state.library(Base::Local).unwrap();
    assert!(!local.conversations().unwrap().iter().any(|c| c.id == id));
    assert!(
        server_side
            .conversations(50)
            .unwrap()
            .iter()
            .all(|c| c.id != id)
    );
    let turns = team.conversation(&id).unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].base, Base::Team);
    assert_eq!(
        team.trace(&answer.trace_id).unwrap().trace_id,
        answer.trace_id
    );
    team.send_feedback(&answer.trace_id, true, "").unwrap();

    // Back to the server's copilot: new questions go to the server; the conversation had
    // here stays listed and continues here.
    drop(team);
    state.set_team_answers(TeamAnswers::Server).unwrap();
    let team = state.library(Base::Team).unwrap();
    let by_server = ask(&state, Base::Team, "How many days of annual leave?");
    let server_id = by_server.session_id.clone().unwrap();
    assert!(
        server_side
            .conversations(50)
            .unwrap()
            .iter()
            .any(|c| c.id == server_id)
    );
    let listed: Vec<String> = team
        .conversations()
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert!(
        listed.contains(&id) && listed.contains(&server_id),
        "{listed:?}"
    );

    // Deleting it removes it here; leaving the team moves any others back under this computer.
    team.delete_conversation(&id).unwrap();
    assert!(!team.conversations().unwrap().iter().any(|c| c.id == id));
    state.set_team_answers(TeamAnswers::ThisComputer).unwrap();
    let kept = ask(&state, Base::Team, "How many days of annual leave?")
        .session_id
        .unwrap();
    drop(team);
    drop(local);
    state.leave_team().unwrap();
    let local = state.library(Base::Local).unwrap();
    assert!(local.conversations().unwrap().iter().any(|c| c.id == kept));

    stop.send(()).unwrap();
    server.join().unwrap();
}

#[test]
fn settings_panes_administer_the_team_server_under_the_users_role_there() {
    let dir = tempfile::tempdir().unwrap();
    let company = dir.path().join("company");
    let (addr, alice_key, _, stop, server, _, carol_key) =
        team_server(&dir.path().join("server"), &company);
    let server_url = format!("http://{addr}");
    let hr = company.join("hr").canonicalize().unwrap();
    let hr = hr.to_str().unwrap();

    // Carol administers the server from her window.
    let state = app(&dir.path().join("carol"));
    state.join_team(&server_url, &carol_key, None).unwrap();
    let admin = state.administration(Base::Team).unwrap();
    let ids: Vec<String> = admin.users().unwrap().into_iter().map(|u| u.id).collect();
    assert!(
        ["alice", "bob", "carol"]
            .iter()
            .all(|u| ids.iter().any(|i| i == u)),
        "{ids:?}"
    );
    let dave = admin.add_user("dave", "Dave", "USER").unwrap();
    let as_dave =
        knowhub_client::Client::new(&server_url, &dave.api_key, Default::default()).unwrap();
    assert_eq!(as_dave.me().unwrap().user_id, "dave");
    admin.set_membership("dave", "team:hr", true).unwrap();
    let listed = admin.users().unwrap();
    let row = listed.iter().find(|u| u.id == "dave").unwrap();
    assert_eq!(
        (row.display_name.as_str(), row.groups.clone()),
        ("Dave", vec!["team:hr".to_string()])
    );

    // Folder permissions and "who can see this", as the server decides them.
    let tree = admin.folder_tree().unwrap();
    let node = tree.iter().find(|n| n.path == hr).expect("hr in the tree");
    assert_eq!(node.effective, "team:hr");
    let readable = |who: &str| {
        admin
            .folder_readers(hr)
            .unwrap()
            .readers
            .into_iter()
            .find(|r| r.user == who)
            .unwrap()
            .readable
    };
    assert_eq!((readable("alice"), readable("dave")), (0, 1));
    admin
        .set_folder_acl(hr, &["team:hr".into(), "user:alice".into()])
        .unwrap();
    assert_eq!(readable("alice"), 1);
    admin.set_folder_acl(hr, &["team:hr".into()]).unwrap();
    assert_eq!(readable("alice"), 0);
    let typo = admin.set_folder_acl(hr, &["team:".into()]).unwrap_err();
    assert_eq!(typo.kind, "invalid_input", "{typo:?}");

    // Keys and removal.
    let rotated = admin.rotate_key("dave").unwrap();
    assert!(as_dave.me().unwrap_err().is_unauthenticated());
    assert_eq!(admin.revoke_keys("dave").unwrap(), 1);
    let revoked =
        knowhub_client::Client::new(&server_url, &rotated.api_key, Default::default()).unwrap();
    assert!(revoked.me().unwrap_err().is_unauthenticated());
    admin.set_role("dave", "ADMIN").unwrap();
    admin.remove_user("dave").unwrap();
    assert!(!admin.users().unwrap().iter().any(|u| u.id == "dave"));

    // The Sources page's administration on the server: a folder watched by its server path,
    // the queue paused and resumed, a web source added, run (unreachable: nothing changes)
    // and removed.
    let handbook = company.join("handbook").canonicalize().unwrap();
    let handbook = handbook.to_str().unwrap();
    admin.watch_folder(handbook).unwrap();
    let link = state.joined_team().unwrap();
    assert!(
        link.client
            .watches()
            .unwrap()
            .iter()
            .any(|w| w.path == handbook)
    );
    admin.set_ingestion_paused(true).unwrap();
    assert!(link.client.queue(0).unwrap().counts.paused);
    admin.set_ingestion_paused(false).unwrap();
    assert_eq!(admin.retry_failed().unwrap(), 0);
    admin.unwatch_folder(handbook).unwrap();
    assert!(
        !link
            .client
            .watches()
            .unwrap()
            .iter()
            .any(|w| w.path == handbook)
    );
    let site = admin
        .add_web_source("http://127.0.0.1:9/wiki/", 2, Some(6), &["team:hr".into()])
        .unwrap();
    assert_eq!((site.depth, site.every_hours), (2, Some(6)));
    assert_eq!(admin.web_sources().unwrap().len(), 1);
    let ran = admin.run_web_source(site.id).unwrap();
    assert!(ran.last_run.unwrap().aborted.is_some());
    assert_eq!(admin.remove_web_source(site.id).unwrap(), 0);
    assert!(admin.web_sources().unwrap().is_empty());
    // The server's models, as it was started (keyword search, extractive answers here).
    let models = state.team_models().unwrap();
    assert_eq!((models.answer_model, models.embedder), (None, None));

    // SQL data sources: a database by its path on the server.
    let db = dir.path().join("finance.sqlite");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE budgets (team TEXT, amount INTEGER);")
        .unwrap();
    let db = db.to_str().unwrap();
    admin
        .add_data_source("finance", db, &["team:hr".into()], Some("team"))
        .unwrap();
    let listed = admin.data_sources().unwrap();
    assert_eq!(
        listed
            .sources
            .iter()
            .map(|x| (x.name.as_str(), x.tenant_column.as_deref()))
            .collect::<Vec<_>>(),
        [("finance", Some("team"))]
    );
    assert_eq!(
        admin
            .add_data_source("typo", db, &["tema hr".into()], None)
            .unwrap_err()
            .kind,
        "invalid_input"
    );
    assert!(
        state
            .administration(Base::Local)
            .unwrap()
            .data_sources()
            .unwrap()
            .sources
            .is_empty(),
        "registered on the server, not on this computer"
    );

    // Alice, a USER there, may not: the server refuses, whatever her role on this computer.
    let hers = app(&dir.path().join("alice"));
    hers.join_team(&server_url, &alice_key, None).unwrap();
    let refused = hers.administration(Base::Team).unwrap();
    let seen: Vec<String> = refused.users().unwrap().into_iter().map(|u| u.id).collect();
    assert_eq!(seen, ["alice"], "a user sees herself only");
    assert_eq!(
        refused.add_user("mallory", "", "ADMIN").unwrap_err().kind,
        "forbidden"
    );
    assert_eq!(refused.folder_tree().unwrap_err().kind, "forbidden");
    assert_eq!(refused.watch_folder(hr).unwrap_err().kind, "forbidden");
    assert_eq!(refused.web_sources().unwrap_err().kind, "forbidden");
    assert!(refused.data_sources().unwrap().sources.is_empty());
    assert_eq!(
        refused
            .add_data_source("mine", db, &["public".into()], None)
            .unwrap_err()
            .kind,
        "forbidden"
    );
    assert_eq!(
        refused.remove_data_source("finance").unwrap_err().kind,
        "forbidden"
    );
    admin.remove_data_source("finance").unwrap();
    assert!(admin.data_sources().unwrap().sources.is_empty());
    assert_eq!(
        refused
            .set_folder_acl(hr, &["public".into()])
            .unwrap_err()
            .kind,
        "not_found"
    );
    // Her own computer's knowledge base is hers to administer.
    assert!(hers.administration(Base::Local).unwrap().users().is_ok());

    stop.send(()).unwrap();
    server.join().unwrap();
}

#[test]
fn memories_are_kept_where_the_conversation_was_answered() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, alice_key, _, stop, server, _, _) =
        team_server(&dir.path().join("server"), &dir.path().join("company"));
    let state = app(&dir.path().join("alice"));
    state
        .join_team(&format!("http://{addr}"), &alice_key, None)
        .unwrap();
    let local = state.library(Base::Local).unwrap();

    // Answered by the server: remembered there, listed with the team shown only.
    let by_server = ask(
        &state,
        Base::Team,
        "I prefer short answers. How many days of annual leave?",
    );
    let team = state.library(Base::Team).unwrap();
    let kept = team
        .remember(by_server.session_id.as_deref().unwrap())
        .unwrap();
    assert!(
        kept.created
            .iter()
            .any(|m| m.content.contains("short answers")),
        "{kept:?}"
    );
    let on_team = team.memories().unwrap();
    let short = on_team
        .iter()
        .find(|m| m.content.contains("short answers"))
        .unwrap_or_else(|| panic!("{on_team:?}"))
        .uri
        .clone();
    assert!(local.memories().unwrap().is_empty());

    // Answered here over the team's passages: remembered on this computer.
    drop(team);
    state
        .set_team_answers(crate::dto::TeamAnswers::ThisComputer)
        .unwrap();
    let here = ask(
        &state,
        Base::Team,
        "I work in the Berlin office. How many days of annual leave?",
    );
    let team = state.library(Base::Team).unwrap();
    team.remember(here.session_id.as_deref().unwrap()).unwrap();
    let berlin = |list: Vec<MemoryRow>| list.iter().any(|m| m.content.contains("Berlin"));
    assert!(berlin(local.memories().unwrap()));
    assert!(!berlin(team.memories().unwrap()));

    // Forgotten on the server.
    team.forget_memory(&short).unwrap();
    assert!(team.memories().unwrap().iter().all(|m| m.uri != short));
    assert_eq!(team.forget_memory(&short).unwrap_err().kind, "not_found");

    drop((team, local));
    stop.send(()).unwrap();
    server.join().unwrap();
}
