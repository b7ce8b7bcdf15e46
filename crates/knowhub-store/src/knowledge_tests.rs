//! Tests of the knowledge domain: round trip, filters inside the query, versions, merges,
//! vectors and the change counter.

use super::*;

fn item(id: &str, owner: &str, scopes: &[&str], types: &[&str], content: &str) -> KnowledgeRecord {
    KnowledgeRecord {
        seq: 0,
        id: id.into(),
        message_id: String::new(),
        types: types.iter().map(|s| s.to_string()).collect(),
        task: format!("task of {id}"),
        tags: BTreeMap::from([("domain".to_string(), "coding".to_string())]),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
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

fn ids(records: &[KnowledgeRecord]) -> Vec<&str> {
    let mut v: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    v.sort_unstable();
    v
}

fn reader(visible: &[&str], me: &str) -> Option<(Vec<String>, String)> {
    Some((
        visible.iter().map(|s| s.to_string()).collect(),
        me.to_string(),
    ))
}

#[test]
fn round_trip_keeps_every_field() {
    let mut s = Store::open_in_memory().unwrap();
    let mut r = item(
        "k1",
        "alice",
        &["user:alice", "team:hr"],
        &["strategy"],
        "用 TypeScript",
    );
    r.tags.insert("category".into(), "preference".into());
    r.source.urls = vec!["https://example.com".into()];
    r.eval.helpful_history.push(FeedbackCase {
        task: "t".into(),
        outcome: "ok".into(),
        ..Default::default()
    });
    let stored = s.insert_knowledge(&r).unwrap();
    assert!(stored.seq > 0);
    assert!(stored.created_at_ms > 0);
    let back = s.knowledge("k1").unwrap().unwrap();
    assert_eq!(back.scopes, r.scopes);
    assert_eq!(back.tags, r.tags);
    assert_eq!(back.source, r.source);
    assert_eq!(back.eval, r.eval);
    assert_eq!(back.content, "用 TypeScript");
    assert!(s.knowledge("nope").unwrap().is_none());
    // Scores outside 1-5 are refused by the store too.
    let mut bad = item("k2", "alice", &["public"], &["tool"], "x");
    bad.eval.score = 6;
    assert!(s.insert_knowledge(&bad).is_err());
}

#[test]
fn filters_run_inside_the_query() {
    let mut s = Store::open_in_memory().unwrap();
    for r in [
        item("a-private", "alice", &["user:alice"], &["strategy"], "a"),
        item("a-hr", "alice", &["team:hr"], &["tool"], "b"),
        item("a-public", "alice", &["public"], &["tool", "plan"], "c"),
        item("b-private", "bob", &["user:bob"], &["strategy"], "d"),
        // Owned by bob but shared only with a team bob is no longer in: the owner still sees it.
        item("b-ops", "bob", &["team:ops"], &["plan"], "e"),
    ] {
        s.insert_knowledge(&r).unwrap();
    }
    let mut low = item("low", "alice", &["public"], &["tool"], "f");
    low.eval.score = 1;
    low.eval.harmful = 1;
    s.insert_knowledge(&low).unwrap();

    struct Case {
        name: &'static str,
        filter: KnowledgeFilter,
        want: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "admin sees all",
            filter: KnowledgeFilter::default(),
            want: &["a-hr", "a-private", "a-public", "b-ops", "b-private", "low"],
        },
        Case {
            name: "bob without hr",
            filter: KnowledgeFilter {
                reader: reader(&["user:bob", "public"], "bob"),
                ..Default::default()
            },
            want: &["a-public", "b-ops", "b-private", "low"],
        },
        Case {
            name: "bob in hr",
            filter: KnowledgeFilter {
                reader: reader(&["user:bob", "team:hr", "public"], "bob"),
                ..Default::default()
            },
            want: &["a-hr", "a-public", "b-ops", "b-private", "low"],
        },
        Case {
            name: "types any-of",
            filter: KnowledgeFilter {
                reader: reader(&["user:alice", "public"], "alice"),
                types: vec!["plan".into(), "strategy".into()],
                ..Default::default()
            },
            want: &["a-private", "a-public"],
        },
        Case {
            name: "scope narrowing never widens",
            filter: KnowledgeFilter {
                reader: reader(&["user:bob", "public"], "bob"),
                scopes: vec!["team:hr".into()],
                ..Default::default()
            },
            want: &[],
        },
        Case {
            name: "owner",
            filter: KnowledgeFilter {
                owner: Some("bob".into()),
                ..Default::default()
            },
            want: &["b-ops", "b-private"],
        },
        Case {
            name: "tags",
            filter: KnowledgeFilter {
                tags: BTreeMap::from([("domain".to_string(), "other".to_string())]),
                ..Default::default()
            },
            want: &[],
        },
        Case {
            name: "min score and quality",
            filter: KnowledgeFilter {
                min_score: Some(1),
                min_quality: Some(0.0),
                ..Default::default()
            },
            want: &["a-hr", "a-private", "a-public", "b-ops", "b-private"],
        },
    ];
    for case in cases {
        let listed = s.list_knowledge(&case.filter, 100, 0).unwrap();
        assert_eq!(ids(&listed), case.want, "{}", case.name);
        assert_eq!(
            s.knowledge_seqs(&case.filter).unwrap().len(),
            case.want.len(),
            "{}",
            case.name
        );
    }
    let page = s.list_knowledge(&KnowledgeFilter::default(), 2, 1).unwrap();
    assert_eq!(page.len(), 2, "limit/offset");
}

#[test]
fn updates_keep_versions_and_bump_rev_only_for_text() {
    let mut s = Store::open_in_memory().unwrap();
    let stored = s
        .insert_knowledge(&item("k", "alice", &["public"], &["tool"], "v1"))
        .unwrap();
    let v0 = s.knowledge_version().unwrap();
    // Feedback only: same rev, no version change, no stored version.
    let mut r = stored.clone();
    r.eval.helpful += 1;
    let r = s.update_knowledge(&r, None).unwrap().unwrap();
    assert_eq!(r.rev, stored.rev);
    assert_eq!(s.knowledge_version().unwrap(), v0);
    // New content: previous kept, rev bumped, the change counter moves.
    let mut r2 = r.clone();
    r2.content = "v2".into();
    let r2 = s.update_knowledge(&r2, Some("evolve")).unwrap().unwrap();
    assert_eq!(r2.rev, stored.rev + 1);
    assert_ne!(s.knowledge_version().unwrap(), v0);
    let versions = s.knowledge_versions("k").unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0].reason, "evolve");
    assert_eq!(versions[0].content, "v1");
    assert_eq!(versions[0].snapshot["eval"]["helpful"], 1);
    let mut ghost = r2.clone();
    ghost.id = "ghost".into();
    assert!(s.update_knowledge(&ghost, None).unwrap().is_none());
}

#[test]
fn merge_absorbs_items_and_keeps_them_as_versions() {
    let mut s = Store::open_in_memory().unwrap();
    for (id, content) in [("a", "one"), ("b", "two"), ("c", "three")] {
        s.insert_knowledge(&item(id, "alice", &["public"], &["tool"], content))
            .unwrap();
    }
    let mut kept = s.knowledge("a").unwrap().unwrap();
    kept.content = "one two".into();
    kept.eval.helpful = 3;
    let merged = s
        .merge_knowledge(&kept, &["b".to_string(), "a".to_string()])
        .unwrap()
        .unwrap();
    assert_eq!(merged.content, "one two");
    assert!(s.knowledge("b").unwrap().is_none());
    assert!(s.knowledge("c").unwrap().is_some());
    let reasons: Vec<String> = s
        .knowledge_versions("a")
        .unwrap()
        .into_iter()
        .map(|v| v.reason)
        .collect();
    assert_eq!(reasons, ["merge", "merged:b"]);
    assert!(s.delete_knowledge("a").unwrap());
    assert!(!s.delete_knowledge("a").unwrap());
    assert!(s.knowledge_versions("a").unwrap().is_empty());
}

#[test]
fn vectors_round_trip_and_go_with_their_item() {
    let mut s = Store::open_in_memory().unwrap();
    let r = s
        .insert_knowledge(&item("k", "alice", &["public"], &["tool"], "x"))
        .unwrap();
    s.put_knowledge_vector(r.seq, "m", r.rev, &[0.5, -0.25, 1.0])
        .unwrap();
    let v = s.knowledge_vectors("m").unwrap();
    assert_eq!(v[&r.seq], (r.rev, vec![0.5, -0.25, 1.0]));
    assert!(s.knowledge_vectors("other").unwrap().is_empty());
    assert_eq!(s.knowledge_revs().unwrap(), vec![(r.seq, r.rev)]);
    s.delete_knowledge("k").unwrap();
    assert!(s.knowledge_vectors("m").unwrap().is_empty());
}
