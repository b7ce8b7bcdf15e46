//! Team mode: two engines (replicas, each with its own data directory) on one PostgreSQL
//! database. What one replica writes governs the next request on the other: permissions at
//! once, search data within the follower's bound.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use knowhub_engine::team::TeamConfig;
use knowhub_engine::{
    AccountId, Embedder, Engine, EngineConfig, ModelSet, RealFs, RequestContext, RetrievalMode,
    Role, SearchOptions, UserId, dev_context,
};
use knowhub_pg::PgCluster;

fn replica(database: &str, name: &str, data: &Path) -> Engine {
    replica_with(database, name, data, ModelSet::none())
}

fn replica_with(database: &str, name: &str, data: &Path, models: ModelSet) -> Engine {
    replica_keyed(database, name, data, models, None)
}

fn replica_keyed(
    database: &str,
    name: &str,
    data: &Path,
    models: ModelSet,
    secret_key_file: Option<PathBuf>,
) -> Engine {
    let mut config = EngineConfig::new(data);
    config.team = Some(TeamConfig {
        database: database.to_owned(),
        replica: name.to_owned(),
        host: "test-host".into(),
        secret_key_file,
    });
    Engine::open_with(config, Arc::new(RealFs), models).unwrap()
}

/// A deterministic embedder: hashed bag of words, L2-normalised (shared words → nearby).
#[derive(Debug)]
struct WordHash;

impl WordHash {
    fn vector(text: &str) -> Vec<f32> {
        let mut v = vec![0f32; 64];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let h = word
                .to_lowercase()
                .bytes()
                .fold(1469598103934665603u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(1099511628211)
                });
            v[(h % 64) as usize] += 1.0;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter().map(|x| x / norm).collect()
    }
}

impl Embedder for WordHash {
    fn model_id(&self) -> &str {
        "word-hash-64"
    }
    fn dim(&self) -> usize {
        64
    }
    fn embed_passages(&self, texts: &[&str]) -> knowhub_embed::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| WordHash::vector(t)).collect())
    }
    fn embed_query(&self, text: &str) -> knowhub_embed::Result<Vec<f32>> {
        Ok(WordHash::vector(text))
    }
    fn count_tokens(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
    fn max_tokens(&self) -> usize {
        512
    }
}

fn with_embedder() -> ModelSet {
    ModelSet {
        embedder: Some(Arc::new(WordHash)),
        reranker: None,
        ocr: None,
        notes: Vec::new(),
    }
}

fn user(id: &str) -> RequestContext {
    RequestContext {
        account: AccountId::new("default").unwrap(),
        user: UserId::new(id).unwrap(),
        agent: None,
        role: Role::User,
        session: None,
        trace_id: "t".into(),
    }
}

fn titles(engine: &Engine, ctx: &RequestContext, query: &str) -> Vec<String> {
    let mut out: Vec<String> = engine
        .search(ctx, query, &SearchOptions::default())
        .unwrap()
        .into_iter()
        .map(|h| h.title)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Waits until `cond` holds, at most `limit`; returns how long it took.
fn within(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn what_one_replica_writes_governs_the_next_request_on_the_other() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("team_engine").unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let docs = dirs.path().join("docs");
    write(
        &docs,
        "handbook/leave.txt",
        "Annual leave: every employee has 25 days of annual leave. 年假二十五天。",
    );
    write(
        &docs,
        "finance/salaries.txt",
        "Salary bands and annual bonus rules for the finance team.",
    );
    let a = replica(&url, "a", &dirs.path().join("a"));
    let b = replica(&url, "b", &dirs.path().join("b"));
    let root = dev_context();

    a.ingest(
        &root,
        std::slice::from_ref(&docs),
        &Default::default(),
        &mut |_| {},
    )
    .unwrap();
    assert!(
        a.add_user(&root, &UserId::new("alice").unwrap(), "Alice", Role::User)
            .unwrap()
    );
    a.set_folder_acl(
        &root,
        &docs.join("handbook"),
        Some(&"user:alice".parse().unwrap()),
    )
    .unwrap();
    a.set_folder_acl(
        &root,
        &docs.join("finance"),
        Some(&"team:finance".parse().unwrap()),
    )
    .unwrap();

    // B learns of the documents through the change log.
    let both = vec!["leave".to_string(), "salaries".to_string()];
    let took = within(Duration::from_secs(2), "B indexes A's ingest", || {
        titles(&b, &root, "annual") == both
    });
    eprintln!("B searchable after {took:?}");
    let alice = user("alice");
    assert_eq!(titles(&b, &alice, "annual"), ["leave"]);
    assert_eq!(titles(&b, &alice, "年假"), ["leave"]);

    // A revokes: the very next request through B sees it, no waiting.
    a.set_folder_acl(
        &root,
        &docs.join("handbook"),
        Some(&"team:hr".parse().unwrap()),
    )
    .unwrap();
    assert!(titles(&b, &alice, "annual").is_empty());
    // A grants a membership: again at once on B.
    a.add_membership(
        &root,
        &UserId::new("alice").unwrap(),
        &"team:finance".parse().unwrap(),
    )
    .unwrap();
    assert_eq!(titles(&b, &alice, "annual"), ["salaries"]);
    // A removes the user: B refuses her next request.
    assert!(
        a.remove_user(&root, &UserId::new("alice").unwrap())
            .unwrap()
    );
    assert!(
        b.search(&alice, "annual", &SearchOptions::default())
            .is_err()
    );

    // A removes a document: B drops it from search within the bound.
    a.remove(&root, &[docs.join("finance/salaries.txt")])
        .unwrap();
    within(Duration::from_secs(2), "B drops A's removal", || {
        titles(&b, &root, "annual") == ["leave"]
    });

    // A new replica catches up from the log on start.
    let c = replica(&url, "c", &dirs.path().join("c"));
    assert_eq!(titles(&c, &root, "annual"), ["leave"]);
    // And a restarted one resumes from where its index stopped.
    drop(b);
    let b = replica(&url, "b2", &dirs.path().join("b"));
    assert_eq!(titles(&b, &root, "annual"), ["leave"]);

    // The original file is served from the database by any replica, also where the disk A read
    // it from is not there (another machine's): the bytes A parsed.
    let leave = b
        .search(&root, "annual", &SearchOptions::default())
        .unwrap()[0]
        .document_id;
    std::fs::rename(&docs, dirs.path().join("elsewhere")).unwrap();
    let (_, mut file) = b.document_file(&root, leave).unwrap();
    let mut bytes = String::new();
    std::io::Read::read_to_string(&mut file.reader, &mut bytes).unwrap();
    assert_eq!(
        bytes,
        "Annual leave: every employee has 25 days of annual leave. 年假二十五天。"
    );
    a.add_user(&root, &UserId::new("bob").unwrap(), "Bob", Role::User)
        .unwrap();
    assert!(matches!(
        c.document_file(&user("bob"), leave),
        Err(knowhub_engine::EngineError::NotFound(_))
    ));
}

fn semantic_titles(engine: &Engine, ctx: &RequestContext, query: &str) -> Vec<String> {
    let options = SearchOptions {
        mode: RetrievalMode::Semantic,
        ..SearchOptions::default()
    };
    let mut out: Vec<String> = engine
        .search(ctx, query, &options)
        .unwrap()
        .into_iter()
        .map(|h| h.title)
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn dense_retrieval_searches_the_database_with_the_readable_filter_inside() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("team_dense").unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let docs = dirs.path().join("docs");
    for (rel, text) in [
        ("open/ferry.txt", "ferry timetable harbour crossing boats"),
        ("open/garden.txt", "garden roses tulips watering"),
        (
            "closed/ferry-budget.txt",
            "ferry budget harbour crossing costs",
        ),
    ] {
        write(&docs, rel, text);
    }
    let a = replica_with(&url, "a", &dirs.path().join("a"), with_embedder());
    let b = replica_with(&url, "b", &dirs.path().join("b"), with_embedder());
    let root = dev_context();
    let report = a
        .ingest(
            &root,
            std::slice::from_ref(&docs),
            &Default::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.embedded, 3, "{report:?}");
    a.add_user(&root, &UserId::new("dora").unwrap(), "Dora", Role::User)
        .unwrap();
    a.set_folder_acl(
        &root,
        &docs.join("open"),
        Some(&"user:dora".parse().unwrap()),
    )
    .unwrap();
    a.set_folder_acl(
        &root,
        &docs.join("closed"),
        Some(&"team:finance".parse().unwrap()),
    )
    .unwrap();

    // Replica B holds no vectors in memory: its dense hits come from pgvector.
    let everything = semantic_titles(&b, &root, "harbour ferry crossing");
    assert!(
        everything.contains(&"ferry-budget".to_string()),
        "{everything:?}"
    );
    let dora = user("dora");
    let hers = semantic_titles(&b, &dora, "harbour ferry crossing");
    assert!(hers.contains(&"ferry".to_string()), "{hers:?}");
    assert!(!hers.contains(&"ferry-budget".to_string()), "{hers:?}");
    // Granting is seen by the next request, dense path included.
    a.add_membership(
        &root,
        &UserId::new("dora").unwrap(),
        &"team:finance".parse().unwrap(),
    )
    .unwrap();
    let now = semantic_titles(&b, &dora, "harbour ferry crossing");
    assert!(now.contains(&"ferry-budget".to_string()), "{now:?}");
    let check = b.check(&root, false).unwrap();
    assert!(check.problems.is_empty(), "{:?}", check.problems);
}

#[test]
fn a_secret_sealed_through_one_replica_opens_through_another_with_the_shared_key() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("team_secrets").unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let key = dirs.path().join("shared/secret.key");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    let a = replica_keyed(
        &url,
        "a",
        &dirs.path().join("a"),
        ModelSet::none(),
        Some(key.clone()),
    );
    let b = replica_keyed(
        &url,
        "b",
        &dirs.path().join("b"),
        ModelSet::none(),
        Some(key),
    );
    let root = dev_context();
    let saved = a
        .resource_save(
            &root,
            knowhub_engine::NewResource {
                id: Some("credentials/ci".into()),
                content_type: "credential".into(),
                title: "CI token".into(),
                secure_body: Some(knowhub_engine::SecureBody::new("s3cr3t-token")),
                ..Default::default()
            },
        )
        .unwrap();
    let read = b.resource_get(&root, &saved.id).unwrap();
    assert_eq!(
        read.secure_body
            .as_ref()
            .map(knowhub_engine::SecureBody::expose),
        Some("s3cr3t-token")
    );

    // A replica without the shared key refuses secure bodies instead of sealing with its own.
    let c = replica(&url, "c", &dirs.path().join("c"));
    let err = c.resource_get(&root, &saved.id).unwrap_err();
    assert!(err.to_string().contains("KNOWHUB_SECRET_KEY_FILE"), "{err}");
}

#[test]
fn a_conversation_continues_on_whichever_replica_answers() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("team_chat").unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let a = replica(&url, "a", &dirs.path().join("a"));
    let b = replica(&url, "b", &dirs.path().join("b"));
    let root = dev_context();
    a.add_user(&root, &UserId::new("eve").unwrap(), "Eve", Role::User)
        .unwrap();
    a.add_user(&root, &UserId::new("mal").unwrap(), "Mal", Role::User)
        .unwrap();
    let (eve, mal) = (user("eve"), user("mal"));

    let session = a.create_session(&eve, "Leave questions").unwrap();
    let turn = |n: i64, q: &str| knowhub_engine::TurnRecord {
        id: 0,
        session_id: session.id.clone(),
        question: q.into(),
        standalone: q.into(),
        answer: format!("answer {n}"),
        trace_id: format!("t{n}"),
        stop_reason: "ok".into(),
        created_at_ms: 0,
    };
    a.record_turn(&eve, &turn(1, "How many leave days?"))
        .unwrap();
    b.record_turn(&eve, &turn(2, "And for part-time staff?"))
        .unwrap();
    // Both replicas read the same conversation, in order, whichever wrote each turn.
    for engine in [&a, &b] {
        let turns: Vec<String> = engine
            .session_turns(&eve, &session.id, 10)
            .unwrap()
            .into_iter()
            .map(|t| t.question)
            .collect();
        assert_eq!(turns, ["How many leave days?", "And for part-time staff?"]);
        assert_eq!(engine.sessions(&eve, 10).unwrap().len(), 1);
    }
    // Someone else's conversation is not theirs on any replica.
    assert!(b.session_turns(&mal, &session.id, 10).is_err());
    assert!(b.sessions(&mal, 10).unwrap().is_empty());
}

fn hub(database: &str, name: &str, data: &Path) -> knowhub_engine::Hub {
    let mut config = EngineConfig::new(data);
    config.team = Some(TeamConfig {
        database: database.to_owned(),
        replica: name.to_owned(),
        host: "test-host".into(),
        secret_key_file: None,
    });
    knowhub_engine::Hub::open_with(config, Arc::new(RealFs), ModelSet::none()).unwrap()
}

fn signed_in(hub: &knowhub_engine::Hub, key: &str) -> knowhub_engine::Result<RequestContext> {
    hub.authenticate(&knowhub_engine::Credentials {
        api_key: Some(key.to_owned()),
        ..Default::default()
    })
}

#[test]
fn accounts_share_one_database_and_never_each_others_documents() {
    let Some(pg) = PgCluster::for_test() else {
        return;
    };
    let url = pg.create_database("team_accounts").unwrap();
    let dirs = tempfile::tempdir().unwrap();
    let docs = dirs.path().join("docs");
    write(
        &docs,
        "acme/plan.txt",
        "The quarterly plan of Acme: expand to Lyon.",
    );
    write(
        &docs,
        "main/plan.txt",
        "The quarterly plan of the main company.",
    );
    let a = hub(&url, "a", &dirs.path().join("a"));
    let b = hub(&url, "b", &dirs.path().join("b"));
    let root = dev_context();

    // ROOT creates an account through A; its administrator signs in through B.
    let key = a.create_account(&root, "acme", "boss").unwrap();
    assert!(a.create_account(&root, "acme", "boss").is_err(), "exists");
    let boss = signed_in(&b, key.secret()).unwrap();
    assert_eq!((boss.account.as_str(), boss.role), ("acme", Role::Admin));
    let ids: Vec<String> = b
        .accounts(&root)
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(ids, ["acme", "default"]);

    let acme = b.engine(&boss).unwrap();
    acme.ingest(
        &boss,
        &[docs.join("acme")],
        &Default::default(),
        &mut |_| {},
    )
    .unwrap();
    let main = a.engine(&root).unwrap();
    main.ingest(
        &root,
        &[docs.join("main")],
        &Default::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(titles(&acme, &boss, "quarterly plan"), ["plan"]);
    let hits = acme
        .search(&boss, "quarterly", &SearchOptions::default())
        .unwrap();
    assert!(hits.iter().all(|h| !h.snippet.contains("main company")));
    // Each account sees its own document only, on either replica.
    let acme_on_a = a.engine(&signed_in(&a, key.secret()).unwrap()).unwrap();
    within(Duration::from_secs(2), "A indexes acme's ingest", || {
        !titles(&acme_on_a, &boss, "Lyon").is_empty()
    });
    assert!(titles(&acme_on_a, &boss, "main company").is_empty());
    assert!(titles(&main, &root, "Lyon").is_empty());
    assert_eq!(
        main.users(&root)
            .unwrap()
            .iter()
            .filter(|u| u.id.as_str() == "boss")
            .count(),
        0
    );

    // Deleted through A: B refuses its key and its engine at the next request.
    drop((acme, acme_on_a));
    a.delete_account(&root, "acme").unwrap();
    assert!(signed_in(&b, key.secret()).is_err());
    let err = b.engine(&boss).err().unwrap();
    assert!(err.to_string().contains("no account acme"), "{err}");
    let ids: Vec<String> = a
        .accounts(&root)
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(ids, ["default"]);
    assert_eq!(titles(&main, &root, "quarterly"), ["plan"]);
}
