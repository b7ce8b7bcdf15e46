//! Knowledge items and resources in the team database: each scenario runs once against the
//! SQLite store and once against PostgreSQL, and every observable result must be the same
//! (timestamps are compared by their relations, errors by their kind). Then what only a
//! shared database has: replicas seeing each other's writes, and concurrent writers.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;

use common::cluster;
use knowhub_pg::{Database, PgStore};
use knowhub_store::backend::{KnowledgeStore, ResourceStore};
use knowhub_store::{
    FeedbackCase, KnowledgeEval, KnowledgeFilter, KnowledgeRecord, KnowledgeSource,
    KnowledgeVersion, ResourceFilter, ResourceRecord, SealedSecret, Store, StoreError,
};

// ----- comparing two backends -------------------------------------------------------------

/// Text shown as is inside other values' `Debug` output (no second layer of escapes).
struct Raw(String);

impl Debug for Raw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a scenario observed, one line per call.
#[derive(Default)]
struct Log(Vec<String>);

impl Log {
    fn add(&mut self, label: impl std::fmt::Display, value: impl Debug) {
        self.0.push(format!("{label}: {value:?}"));
    }
}

/// The kind of an error: the backends word their messages differently.
fn kind(e: &StoreError) -> &'static str {
    match e {
        StoreError::Corrupt(_) => "Corrupt",
        StoreError::Invalid(_) => "Invalid",
        StoreError::Sqlite(_) | StoreError::Database(_) => "Database",
        StoreError::Unavailable(_) => "Unavailable",
        StoreError::Unsupported(_) => "Unsupported",
        _ => "Other",
    }
}

fn shown<T: Debug>(r: Result<T, StoreError>) -> Raw {
    Raw(match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => format!("Err({})", kind(&e)),
    })
}

fn assert_same(sqlite: &Log, pg: &Log) {
    for (i, (want, got)) in sqlite.0.iter().zip(&pg.0).enumerate() {
        assert_eq!(
            want, got,
            "line {i} differs (left: SQLite, right: PostgreSQL)"
        );
    }
    assert_eq!(sqlite.0.len(), pg.0.len(), "number of lines");
}

/// Each write gets its own millisecond, so "newest first" does not depend on timing.
fn pause() {
    std::thread::sleep(std::time::Duration::from_millis(3));
}

/// A record with its times replaced by what can be compared across runs.
fn norm(r: &KnowledgeRecord) -> Raw {
    assert!(r.created_at_ms > 1_600_000_000_000, "{r:?}");
    assert!(r.updated_at_ms >= r.created_at_ms, "{r:?}");
    let touched = r.updated_at_ms > r.created_at_ms;
    let mut r = r.clone();
    r.created_at_ms = 0;
    r.updated_at_ms = 0;
    Raw(format!("{r:?} touched={touched}"))
}

fn norm_version(v: &KnowledgeVersion) -> Raw {
    assert!(v.created_at_ms > 1_600_000_000_000);
    let mut snapshot = v.snapshot.clone();
    if let Some(o) = snapshot.as_object_mut() {
        assert!(o.remove("created_at_ms").is_some());
        assert!(o.remove("updated_at_ms").is_some());
    }
    Raw(format!(
        "{} {:?} {:?} {snapshot}",
        v.reason, v.task, v.content
    ))
}

fn norm_resource(r: &ResourceRecord) -> Raw {
    assert!(r.created_at_ms > 1_600_000_000_000, "{r:?}");
    assert!(r.updated_at_ms >= r.created_at_ms, "{r:?}");
    let touched = r.updated_at_ms > r.created_at_ms;
    let mut r = r.clone();
    r.created_at_ms = 0;
    r.updated_at_ms = 0;
    Raw(format!("{r:?} touched={touched}"))
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn reader(visible: &[&str], me: &str) -> Option<(Vec<String>, String)> {
    Some((strings(visible), me.to_string()))
}

// ----- knowledge ----------------------------------------------------------------------------

fn item(id: &str, owner: &str, scopes: &[&str], types: &[&str], content: &str) -> KnowledgeRecord {
    KnowledgeRecord {
        seq: 0,
        id: id.into(),
        message_id: String::new(),
        types: strings(types),
        task: format!("task of {id}"),
        tags: BTreeMap::from([("domain".to_string(), "coding".to_string())]),
        scopes: strings(scopes),
        owner: owner.into(),
        content: content.into(),
        resource_ids: vec![],
        source: KnowledgeSource {
            category: "exp".into(),
            ..Default::default()
        },
        eval: KnowledgeEval {
            score: 3,
            helpful: 0,
            harmful: 0,
            confidence: 0.5,
            helpful_history: vec![],
            harmful_history: vec![],
        },
        rev: 0,
        created_at_ms: 0,
        updated_at_ms: 0,
    }
}

fn knowledge_filters() -> Vec<(&'static str, KnowledgeFilter)> {
    let tags = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>()
    };
    vec![
        ("admin sees all", KnowledgeFilter::default()),
        (
            "bob without hr",
            KnowledgeFilter {
                reader: reader(&["user:bob", "public"], "bob"),
                ..Default::default()
            },
        ),
        (
            "bob in hr",
            KnowledgeFilter {
                reader: reader(&["user:bob", "team:hr", "public"], "bob"),
                ..Default::default()
            },
        ),
        (
            "nothing visible, owns nothing",
            KnowledgeFilter {
                reader: reader(&[], "carol"),
                ..Default::default()
            },
        ),
        (
            "unicode scope",
            KnowledgeFilter {
                reader: reader(&["group:Ω"], "carol"),
                ..Default::default()
            },
        ),
        (
            "types any-of",
            KnowledgeFilter {
                reader: reader(&["user:alice", "public"], "alice"),
                types: strings(&["plan", "strategy"]),
                ..Default::default()
            },
        ),
        (
            "unknown type",
            KnowledgeFilter {
                types: strings(&["nope"]),
                ..Default::default()
            },
        ),
        (
            "scope narrowing never widens",
            KnowledgeFilter {
                reader: reader(&["user:bob", "public"], "bob"),
                scopes: strings(&["team:hr"]),
                ..Default::default()
            },
        ),
        (
            "scopes any-of",
            KnowledgeFilter {
                scopes: strings(&["team:ops", "team:hr"]),
                ..Default::default()
            },
        ),
        (
            "owner",
            KnowledgeFilter {
                owner: Some("bob".into()),
                ..Default::default()
            },
        ),
        (
            "unicode owner",
            KnowledgeFilter {
                owner: Some("ünï".into()),
                ..Default::default()
            },
        ),
        (
            "other tag value",
            KnowledgeFilter {
                tags: tags(&[("domain", "other")]),
                ..Default::default()
            },
        ),
        (
            "every tag",
            KnowledgeFilter {
                tags: tags(&[("domain", "coding"), ("lang", "rust")]),
                ..Default::default()
            },
        ),
        (
            "dotted tag key",
            KnowledgeFilter {
                tags: tags(&[("do.main", "x y")]),
                ..Default::default()
            },
        ),
        (
            "quoted tag key loses its quotes",
            KnowledgeFilter {
                tags: tags(&[("quote\"key", "v")]),
                ..Default::default()
            },
        ),
        (
            "min score and quality",
            KnowledgeFilter {
                min_score: Some(1),
                min_quality: Some(0.0),
                ..Default::default()
            },
        ),
        (
            "min score 4",
            KnowledgeFilter {
                min_score: Some(4),
                ..Default::default()
            },
        ),
        (
            "quality above 3.5",
            KnowledgeFilter {
                min_quality: Some(3.5),
                ..Default::default()
            },
        ),
        (
            "quality -1",
            KnowledgeFilter {
                min_quality: Some(-1.0),
                ..Default::default()
            },
        ),
        (
            "everything at once",
            KnowledgeFilter {
                reader: reader(&["public", "team:ops"], "alice"),
                types: strings(&["tool", "plan"]),
                scopes: strings(&["public", "team:ops"]),
                tags: tags(&[("domain", "coding")]),
                owner: Some("bob".into()),
                min_score: Some(3),
                min_quality: Some(3.0),
            },
        ),
    ]
}

fn list_ids(s: &dyn KnowledgeStore, f: &KnowledgeFilter, limit: usize, offset: usize) -> Raw {
    shown(
        s.list_knowledge(f, limit, offset)
            .map(|v| v.into_iter().map(|r| r.id).collect::<Vec<_>>()),
    )
}

fn ids_of_versions(s: &dyn KnowledgeStore, id: &str) -> Raw {
    shown(
        s.knowledge_versions(id)
            .map(|v| v.iter().map(norm_version).collect::<Vec<_>>()),
    )
}

fn knowledge_scenario(s: &mut dyn KnowledgeStore) -> Log {
    let mut log = Log::default();
    let mut low = item("low", "alice", &["public"], &["tool"], "f");
    low.eval.score = 1;
    low.eval.harmful = 1;
    let mut ops = item("b-ops", "bob", &["team:ops"], &["plan"], "e");
    ops.tags.insert("lang".into(), "rust".into());
    let mut uni = item("uni", "ünï", &["group:Ω"], &["記憶"], "用 TypeScript");
    uni.message_id = "m-1".into();
    uni.tags = BTreeMap::from([
        ("do.main".to_string(), "x y".to_string()),
        ("quote\"key".to_string(), "v".to_string()),
    ]);
    uni.resource_ids = strings(&["resource-1", "resource-2"]);
    uni.source = KnowledgeSource {
        name: "tool".into(),
        category: "paper".into(),
        urls: strings(&["https://example.com/a?b=c&d"]),
        agent_id: "agent-1".into(),
        submitted_by: "ünï".into(),
        timestamp: "2026-01-02T03:04:05Z".into(),
        message_id: "m-1".into(),
    };
    uni.eval = KnowledgeEval {
        score: 3,
        helpful: 7,
        harmful: 2,
        confidence: 0.123_456_789_012_345_67,
        helpful_history: vec![FeedbackCase {
            task: "t \"quoted\"\n".into(),
            outcome: "ok".into(),
            reason: "because".into(),
            timestamp: "2026".into(),
            message_id: "m-2".into(),
        }],
        harmful_history: vec![FeedbackCase::default()],
    };
    let mut bad_high = item("bad", "alice", &["public"], &["tool"], "x");
    bad_high.eval.score = 6;
    let mut bad_low = bad_high.clone();
    bad_low.eval.score = 0;

    let mut seqs = BTreeMap::new();
    for r in [
        item("a-private", "alice", &["user:alice"], &["strategy"], "a"),
        item("a-hr", "alice", &["team:hr"], &["tool"], "b"),
        item("a-public", "alice", &["public"], &["tool", "plan"], "c"),
        item("b-private", "bob", &["user:bob"], &["strategy"], "d"),
        ops,
        low,
        uni,
        bad_high,
        bad_low,
    ] {
        let stored = s.insert_knowledge(&r);
        if let Ok(stored) = &stored {
            seqs.insert(stored.id.clone(), stored.seq);
        }
        log.add(format!("insert {}", r.id), shown(stored.map(|r| norm(&r))));
        pause();
    }
    log.add(
        "get uni",
        shown(s.knowledge("uni").map(|r| r.map(|r| norm(&r)))),
    );
    log.add("get missing", shown(s.knowledge("nope")));

    for (name, filter) in knowledge_filters() {
        log.add(format!("list {name}"), list_ids(s, &filter, 100, 0));
        let mut got = s.knowledge_seqs(&filter);
        if let Ok(v) = &mut got {
            v.sort_unstable();
        }
        log.add(format!("seqs {name}"), shown(got));
    }
    let all = KnowledgeFilter::default();
    for (limit, offset) in [
        (2, 1),
        (3, 0),
        (100, 6),
        (100, 7),
        (0, 0),
        (usize::MAX, usize::MAX),
    ] {
        log.add(
            format!("page {limit}/{offset}"),
            list_ids(s, &all, limit, offset),
        );
    }
    let by_seqs = [seqs["a-hr"], 99_999, seqs["a-private"], seqs["a-hr"]];
    log.add(
        "by seqs",
        shown(
            s.knowledge_by_seqs(&by_seqs)
                .map(|v| v.iter().map(|r| r.id.clone()).collect::<Vec<_>>()),
        ),
    );
    log.add("by no seqs", shown(s.knowledge_by_seqs(&[])));
    log.add("revs", shown(s.knowledge_revs()));
    log.add("version after inserts", shown(s.knowledge_version()));

    // Feedback only: same rev, no version counted.
    let mut r = s.knowledge("a-public").unwrap().unwrap();
    r.eval.helpful += 1;
    r.eval.helpful_history.push(FeedbackCase {
        task: "used".into(),
        ..Default::default()
    });
    log.add(
        "feedback",
        shown(s.update_knowledge(&r, None).map(|r| r.map(|r| norm(&r)))),
    );
    log.add("version after feedback", shown(s.knowledge_version()));
    pause();
    // Scopes only: not text either.
    r.scopes.push("team:hr".into());
    log.add(
        "rescope",
        shown(
            s.update_knowledge(&r, Some("update"))
                .map(|r| r.map(|r| norm(&r))),
        ),
    );
    pause();
    r.content = "c2".into();
    log.add(
        "evolve",
        shown(
            s.update_knowledge(&r, Some("evolve"))
                .map(|r| r.map(|r| norm(&r))),
        ),
    );
    pause();
    r.tags.insert("lang".into(), "ts".into());
    log.add(
        "retag",
        shown(s.update_knowledge(&r, None).map(|r| r.map(|r| norm(&r)))),
    );
    log.add("version after updates", shown(s.knowledge_version()));
    // A refused score stores nothing, not even the version that came first.
    let mut refused = r.clone();
    refused.eval.score = 0;
    refused.content = "never".into();
    log.add(
        "refused update",
        shown(s.update_knowledge(&refused, Some("update"))),
    );
    let mut ghost = r.clone();
    ghost.id = "ghost".into();
    log.add(
        "update missing",
        shown(s.update_knowledge(&ghost, Some("update"))),
    );
    log.add("a-public versions", ids_of_versions(s, "a-public"));
    log.add(
        "a-public now",
        shown(s.knowledge("a-public").map(|r| r.map(|r| norm(&r)))),
    );
    log.add("newest first", list_ids(s, &all, 100, 0));
    pause();

    // Merges.
    let mut kept = s.knowledge("a-hr").unwrap().unwrap();
    kept.content = "b and d".into();
    kept.eval.helpful = 3;
    let absorbed = strings(&["b-private", "a-hr", "b-private", "nope"]);
    log.add(
        "merge",
        shown(
            s.merge_knowledge(&kept, &absorbed)
                .map(|r| r.map(|r| norm(&r))),
        ),
    );
    log.add("absorbed is gone", shown(s.knowledge("b-private")));
    log.add("a-hr versions", ids_of_versions(s, "a-hr"));
    log.add("version after merge", shown(s.knowledge_version()));
    let mut ghost = kept.clone();
    ghost.id = "ghost".into();
    log.add(
        "merge into missing",
        shown(s.merge_knowledge(&ghost, &strings(&["b-ops"]))),
    );
    let mut refused = kept.clone();
    refused.eval.score = 9;
    log.add(
        "refused merge",
        shown(s.merge_knowledge(&refused, &strings(&["b-ops"]))),
    );
    log.add(
        "b-ops survives",
        shown(s.knowledge("b-ops").map(|r| r.is_some())),
    );
    log.add("a-hr versions again", ids_of_versions(s, "a-hr"));
    log.add("revs after merge", shown(s.knowledge_revs()));
    pause();

    // Item vectors, f16 on both sides; one vector per item whatever the model.
    let (public, lowseq, uniseq) = (seqs["a-public"], seqs["low"], seqs["uni"]);
    let v = [0.1, -0.25, 1e-8, 70_000.0, 1.0 / 3.0];
    log.add("put", shown(s.put_knowledge_vector(public, "m", 2, &v)));
    log.add(
        "put empty",
        shown(s.put_knowledge_vector(uniseq, "m", 0, &[])),
    );
    log.add(
        "put m2",
        shown(s.put_knowledge_vector(lowseq, "m2", 0, &[1.0, 2.0])),
    );
    log.add("m2", shown(s.knowledge_vectors("m2")));
    log.add(
        "put again",
        shown(s.put_knowledge_vector(lowseq, "m", 5, &[3.0])),
    );
    log.add("m", shown(s.knowledge_vectors("m")));
    log.add("m2 replaced", shown(s.knowledge_vectors("m2")));
    log.add("no model", shown(s.knowledge_vectors("none")));
    log.add(
        "no item",
        shown(s.put_knowledge_vector(99_999, "m", 0, &[1.0])),
    );

    // Deletes take versions and vectors along.
    log.add("delete", shown(s.delete_knowledge("a-public")));
    log.add("delete again", shown(s.delete_knowledge("a-public")));
    log.add("versions of deleted", ids_of_versions(s, "a-public"));
    log.add("m after delete", shown(s.knowledge_vectors("m")));
    log.add("revs after delete", shown(s.knowledge_revs()));
    log.add("version after delete", shown(s.knowledge_version()));

    // Refused by the database (last: PostgreSQL spends a seq on a failed insert).
    log.add(
        "duplicate id",
        shown(s.insert_knowledge(&item("uni", "x", &[], &[], "x"))),
    );
    let mut nan = item("nan", "alice", &["public"], &["tool"], "x");
    nan.eval.confidence = f64::NAN;
    log.add("NaN confidence", shown(s.insert_knowledge(&nan)));
    log.add("final version", shown(s.knowledge_version()));
    log.add("final list", list_ids(s, &all, 100, 0));
    log
}

#[test]
fn knowledge_behaves_as_in_the_sqlite_store() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("knowledge_parity").unwrap()).unwrap();
    let sqlite = knowledge_scenario(&mut Store::open_in_memory().unwrap());
    let postgres = knowledge_scenario(&mut PgStore::new(&db, "replica-a"));
    assert_same(&sqlite, &postgres);
}

// ----- resources ----------------------------------------------------------------------------

fn res(id: &str, owner: &str, scopes: &[&str], expires_at_ms: Option<i64>) -> ResourceRecord {
    ResourceRecord {
        seq: 0,
        id: id.into(),
        content_type: "credential".into(),
        title: format!("title of {id}"),
        description: String::new(),
        owner: owner.into(),
        scopes: strings(scopes),
        tags: BTreeMap::from([("site".to_string(), "a".to_string())]),
        metadata: serde_json::json!({"language": "python"}),
        body: "public body".into(),
        secure: Some(SealedSecret {
            key_id: "k1".into(),
            nonce: vec![1; 24],
            ciphertext: vec![9, 8, 7, 0, 255],
        }),
        expires_at_ms,
        created_at_ms: 0,
        updated_at_ms: 0,
    }
}

fn resource_ids(s: &dyn ResourceStore, f: &ResourceFilter, limit: usize, offset: usize) -> Raw {
    shown(
        s.list_resources(f, limit, offset)
            .map(|v| v.into_iter().map(|r| r.id).collect::<Vec<_>>()),
    )
}

fn resource_scenario(s: &mut dyn ResourceStore) -> Log {
    let mut log = Log::default();
    let mut code = res("code", "carol", &["team:dev", "public"], None);
    code.content_type = "code".into();
    code.secure = None;
    code.description = "ünï \"quoted\"\n".into();
    code.tags = BTreeMap::from([
        ("site".to_string(), "b".to_string()),
        ("lang".to_string(), "py".to_string()),
    ]);
    code.metadata = serde_json::json!({
        "z": 1, "a": [1.5, 0.1, -0.0, 12345678901234567_u64], "nested": {"k": null, "b": true},
        "s": "\u{1F600}"
    });
    for r in [
        res("own", "alice", &[], None),
        res("team", "bob", &["team:hr"], None),
        res("pub", "bob", &["public"], None),
        res("private", "bob", &[], None),
        res("old", "alice", &[], Some(1_000)),
        res("edge", "alice", &[], Some(5_000)),
        res("later", "alice", &[], Some(i64::MAX)),
        code,
    ] {
        log.add(
            format!("insert {}", r.id),
            shown(s.insert_resource(&r).map(|r| norm_resource(&r))),
        );
        pause();
    }
    log.add(
        "get code",
        shown(s.resource("code").map(|r| r.map(|r| norm_resource(&r)))),
    );
    log.add("get missing", shown(s.resource("nope")));

    let alice = reader(&["user:alice", "team:hr", "public"], "alice");
    let carol = reader(&["user:carol", "public"], "carol");
    let filters = [
        ("admin", ResourceFilter::default()),
        (
            "alice live",
            ResourceFilter {
                reader: alice.clone(),
                live_at_ms: Some(5_000),
                ..Default::default()
            },
        ),
        (
            "alice with expired",
            ResourceFilter {
                reader: alice.clone(),
                ..Default::default()
            },
        ),
        (
            "carol live",
            ResourceFilter {
                reader: carol.clone(),
                live_at_ms: Some(4_999),
                ..Default::default()
            },
        ),
        (
            "code only",
            ResourceFilter {
                content_types: strings(&["code"]),
                ..Default::default()
            },
        ),
        (
            "code or credential",
            ResourceFilter {
                content_types: strings(&["credential", "code"]),
                live_at_ms: Some(5_000),
                ..Default::default()
            },
        ),
        (
            "scope narrowing",
            ResourceFilter {
                scopes: strings(&["team:dev", "team:hr"]),
                ..Default::default()
            },
        ),
        (
            "tags and owner",
            ResourceFilter {
                tags: BTreeMap::from([("site".to_string(), "a".to_string())]),
                owner: Some("bob".into()),
                ..Default::default()
            },
        ),
        (
            "two tags",
            ResourceFilter {
                tags: BTreeMap::from([
                    ("site".to_string(), "b".to_string()),
                    ("lang".to_string(), "py".to_string()),
                ]),
                ..Default::default()
            },
        ),
    ];
    for (name, filter) in &filters {
        log.add(format!("list {name}"), resource_ids(s, filter, 100, 0));
        for id in ["own", "private", "code", "old", "nope"] {
            log.add(
                format!("match {name} {id}"),
                shown(s.resource_matching(id, filter).map(|r| r.map(|r| r.id))),
            );
        }
    }
    let all = ResourceFilter::default();
    for (limit, offset) in [(2, 1), (3, 0), (100, 7), (0, 0), (usize::MAX, usize::MAX)] {
        log.add(
            format!("page {limit}/{offset}"),
            resource_ids(s, &all, limit, offset),
        );
    }

    let mut changed = s.resource("own").unwrap().unwrap();
    changed.body = "new body".into();
    changed.secure = None;
    changed.scopes = strings(&["team:dev"]);
    changed.expires_at_ms = Some(10);
    log.add(
        "update",
        shown(
            s.update_resource(&changed)
                .map(|r| r.map(|r| norm_resource(&r))),
        ),
    );
    changed.secure = Some(SealedSecret {
        key_id: "k2".into(),
        nonce: vec![],
        ciphertext: vec![0],
    });
    pause();
    log.add(
        "reseal",
        shown(
            s.update_resource(&changed)
                .map(|r| r.map(|r| norm_resource(&r))),
        ),
    );
    log.add(
        "update missing",
        shown(s.update_resource(&res("nope", "alice", &[], None))),
    );
    log.add("newest first", resource_ids(s, &all, 100, 0));
    log.add("delete", shown(s.delete_resource("own")));
    log.add("delete again", shown(s.delete_resource("own")));
    log.add("deleted", shown(s.resource("own")));
    // Last: PostgreSQL spends a seq on a failed insert.
    log.add(
        "duplicate id",
        shown(s.insert_resource(&res("pub", "x", &[], None))),
    );
    log.add("final list", resource_ids(s, &all, 100, 0));
    log
}

#[test]
fn resources_behave_as_in_the_sqlite_store() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("resources_parity").unwrap()).unwrap();
    let sqlite = resource_scenario(&mut Store::open_in_memory().unwrap());
    let postgres = resource_scenario(&mut PgStore::new(&db, "replica-a"));
    assert_same(&sqlite, &postgres);
}

// ----- what only a shared database has ----------------------------------------------------

#[test]
fn a_write_through_one_replica_is_read_through_another() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("knowledge_replicas").unwrap();
    let mut a = PgStore::new(&Database::connect(&url).unwrap(), "replica-a");
    let mut b = PgStore::new(&Database::connect(&url).unwrap(), "replica-b");

    let v0 = b.knowledge_version().unwrap();
    let stored = a
        .insert_knowledge(&item("k", "alice", &["team:hr"], &["tool"], "v1"))
        .unwrap();
    assert_eq!(b.knowledge("k").unwrap(), Some(stored.clone()));
    assert_eq!(b.knowledge_version().unwrap(), v0 + 1);
    let hr = KnowledgeFilter {
        reader: reader(&["team:hr"], "bob"),
        ..Default::default()
    };
    assert_eq!(b.knowledge_seqs(&hr).unwrap(), [stored.seq]);

    let mut changed = stored.clone();
    changed.content = "v2".into();
    let updated = b
        .update_knowledge(&changed, Some("evolve"))
        .unwrap()
        .unwrap();
    assert_eq!(a.knowledge_revs().unwrap(), [(stored.seq, stored.rev + 1)]);
    assert_eq!(a.knowledge_version().unwrap(), v0 + 2);
    assert_eq!(a.knowledge_versions("k").unwrap()[0].content, "v1");
    a.put_knowledge_vector(stored.seq, "m", updated.rev, &[0.5, 1.0])
        .unwrap();
    assert_eq!(
        b.knowledge_vectors("m").unwrap()[&stored.seq],
        (updated.rev, vec![0.5, 1.0])
    );

    a.insert_resource(&res("r", "alice", &["team:hr"], None))
        .unwrap();
    let hr_res = ResourceFilter {
        reader: reader(&["team:hr"], "bob"),
        ..Default::default()
    };
    assert!(b.resource_matching("r", &hr_res).unwrap().is_some());
    assert!(b.delete_resource("r").unwrap());
    assert!(a.resource("r").unwrap().is_none());

    assert!(b.delete_knowledge("k").unwrap());
    assert!(a.knowledge("k").unwrap().is_none());
    assert!(a.knowledge_vectors("m").unwrap().is_empty());
    assert_eq!(a.knowledge_version().unwrap(), v0 + 3);
}

#[test]
fn concurrent_updates_through_two_replicas_lose_no_revision() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("knowledge_concurrent").unwrap();
    let mut a = PgStore::new(&Database::connect(&url).unwrap(), "replica-a");
    let stored = a
        .insert_knowledge(&item("k", "alice", &["public"], &["tool"], "v0"))
        .unwrap();
    const EACH: usize = 15;
    let writers: Vec<_> = ["replica-a", "replica-b"]
        .into_iter()
        .map(|name| {
            let url = url.clone();
            let base = stored.clone();
            std::thread::spawn(move || {
                let mut s = PgStore::new(&Database::connect(&url).unwrap(), name);
                for i in 0..EACH {
                    let mut r = base.clone();
                    r.content = format!("{name} {i}");
                    s.update_knowledge(&r, Some("evolve")).unwrap().unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    // Every update saw the previous one's text: one rev and one version each.
    let now = a.knowledge("k").unwrap().unwrap();
    assert_eq!(now.rev, stored.rev + 2 * EACH as i64);
    assert_eq!(a.knowledge_versions("k").unwrap().len(), 2 * EACH);
    assert_eq!(a.knowledge_version().unwrap(), 1 + 2 * EACH as i64);
}
