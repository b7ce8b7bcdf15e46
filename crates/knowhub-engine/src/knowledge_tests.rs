//! Knowledge items through the engine: quality ranking, visibility inside the scans,
//! owner-only writes, NotFound vs Forbidden, evolve, batch feedback, list, slim, ids.

use std::collections::BTreeMap;
use std::sync::Arc;

use knowhub_authz::{AgentId, ProjectId, RequestContext, Role, TeamId, UserId};
use knowhub_embed::{EmbedError, Embedder};
use knowhub_store::Group;

use super::knowledge::{extractive_merge, jaccard, rank_hits, rfc3339, shingle_set};
use super::*;
use crate::test_support::{ctx, engine_with_users};

fn alice() -> RequestContext {
    ctx("alice", Role::User)
}
fn bob() -> RequestContext {
    ctx("bob", Role::User)
}
fn ada() -> RequestContext {
    ctx("ada", Role::Admin)
}

/// alice: team:hr, project:apollo; bob: team:ops; ada: ADMIN; no embedder.
fn setup_with(models: ModelSet) -> (tempfile::TempDir, Engine) {
    let (dir, engine) = engine_with_users(
        &FakeFs::new(),
        models,
        &[
            ("alice", Role::User),
            ("bob", Role::User),
            ("ada", Role::Admin),
        ],
    );
    {
        let mut store = engine.store();
        let uid = |u: &str| UserId::new(u).unwrap();
        store
            .add_membership(&uid("alice"), &Group::Team(TeamId::new("hr").unwrap()))
            .unwrap();
        store
            .add_membership(
                &uid("alice"),
                &Group::Project(ProjectId::new("apollo").unwrap()),
            )
            .unwrap();
        store
            .add_membership(&uid("bob"), &Group::Team(TeamId::new("ops").unwrap()))
            .unwrap();
    }
    (dir, engine)
}

fn setup() -> (tempfile::TempDir, Engine) {
    setup_with(ModelSet::none())
}

fn new_item(content: &str, scopes: &[&str]) -> NewKnowledge {
    NewKnowledge {
        task: String::new(),
        content: content.into(),
        types: vec!["strategy".into()],
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn save(engine: &Engine, who: &RequestContext, content: &str, scopes: &[&str]) -> KnowledgeItem {
    engine
        .knowledge_save(who, new_item(content, scopes))
        .unwrap()
}

fn search(engine: &Engine, who: &RequestContext, q: &str, query: &KnowledgeQuery) -> Vec<String> {
    engine
        .knowledge_search(who, q, query)
        .unwrap()
        .into_iter()
        .map(|h| h.item.content)
        .collect()
}

fn helpful() -> KnowledgeUpdate {
    KnowledgeUpdate {
        add_helpful_case: Some(FeedbackCase {
            task: "t".into(),
            outcome: "ok".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn harmful() -> KnowledgeUpdate {
    KnowledgeUpdate {
        add_harmful_case: Some(FeedbackCase {
            task: "t".into(),
            outcome: "failed".into(),
            reason: "wrong".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn ids_and_timestamps_have_the_seed_format() {
    let (_d, engine) = setup();
    let item = save(&engine, &alice(), "x", &[]);
    let parts: Vec<&str> = item.id.split('-').collect();
    assert_eq!(parts.len(), 3, "{}", item.id);
    assert_eq!(parts[0], "knowledge");
    assert!(parts[1].len() >= 13 && parts[1].bytes().all(|b| b.is_ascii_digit()));
    assert_eq!(parts[2].len(), 12);
    assert!(
        parts[2]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_ne!(item.id, save(&engine, &alice(), "y", &[]).id);
    for (secs, want) in [
        (0, "1970-01-01T00:00:00Z"),
        (951_782_400, "2000-02-29T00:00:00Z"),
        (1_772_712_000, "2026-03-05T12:00:00Z"),
    ] {
        assert_eq!(rfc3339(secs), want);
    }
    assert_eq!(item.source.timestamp.len(), 20);
}

#[test]
fn save_defaults_validation_and_grantable_scopes() {
    let (_d, engine) = setup();
    let item = save(&engine, &alice(), "  Prefer TypeScript  ", &[]);
    assert_eq!(item.scopes, ["user:alice"], "default scope: the caller");
    assert_eq!(item.owner, "alice");
    assert_eq!(item.content, "Prefer TypeScript");
    assert_eq!(item.eval.score, 3);
    assert_eq!(item.eval.confidence, 0.5);
    assert_eq!(item.source.submitted_by, "alice");

    let mut agent_ctx = alice();
    agent_ctx.agent = Some(AgentId::new("coder").unwrap());
    let mut n = new_item("agent knowledge", &["agent:coder"]);
    n.source.agent_id = "someone-else".into();
    let by_agent = engine.knowledge_save(&agent_ctx, n).unwrap();
    assert_eq!(by_agent.source.agent_id, "coder", "from the context");

    enum Want {
        Ok,
        Invalid,
        Forbidden,
    }
    let cases: Vec<(&str, RequestContext, NewKnowledge, Want)> = vec![
        ("own team", alice(), new_item("a", &["team:hr"]), Want::Ok),
        (
            "project and public",
            alice(),
            new_item("a", &["project:apollo", "public"]),
            Want::Ok,
        ),
        (
            "a team she is not in",
            alice(),
            new_item("a", &["team:ops"]),
            Want::Forbidden,
        ),
        (
            "another user",
            alice(),
            new_item("a", &["user:bob"]),
            Want::Forbidden,
        ),
        (
            "an agent she is not",
            alice(),
            new_item("a", &["agent:coder"]),
            Want::Forbidden,
        ),
        (
            "admin grants anything",
            ada(),
            new_item("a", &["team:ops", "user:bob"]),
            Want::Ok,
        ),
        (
            "bad scope",
            alice(),
            new_item("a", &["team"]),
            Want::Invalid,
        ),
        (
            "empty content",
            alice(),
            new_item("   ", &[]),
            Want::Invalid,
        ),
        (
            "unknown type",
            alice(),
            NewKnowledge {
                types: vec!["gossip".into()],
                ..new_item("a", &[])
            },
            Want::Invalid,
        ),
        (
            "no type",
            alice(),
            NewKnowledge {
                types: vec![],
                ..new_item("a", &[])
            },
            Want::Invalid,
        ),
        (
            "score 6",
            alice(),
            NewKnowledge {
                score: Some(6),
                ..new_item("a", &[])
            },
            Want::Invalid,
        ),
        (
            "confidence 2",
            alice(),
            NewKnowledge {
                confidence: Some(2.0),
                ..new_item("a", &[])
            },
            Want::Invalid,
        ),
    ];
    for (name, who, n, want) in cases {
        let got = engine.knowledge_save(&who, n);
        match (want, got) {
            (Want::Ok, Ok(_)) => {}
            (Want::Invalid, Err(EngineError::InvalidInput(_))) => {}
            (Want::Forbidden, Err(EngineError::Forbidden(_))) => {}
            (_, got) => panic!("{name}: {got:?}"),
        }
    }
}

#[test]
fn ranking_is_quality_then_scope_priority_then_relevance() {
    let mk = |id: &str, score: u8, h: u32, x: u32, prio: Option<u8>, rel: f32| {
        let item = KnowledgeItem {
            seq: 0,
            id: id.into(),
            message_id: String::new(),
            types: vec![],
            task: String::new(),
            tags: BTreeMap::new(),
            scopes: vec![],
            owner: "o".into(),
            content: String::new(),
            resource_ids: vec![],
            source: Default::default(),
            eval: KnowledgeEval {
                score,
                helpful: h,
                harmful: x,
                confidence: 0.5,
                helpful_history: vec![],
                harmful_history: vec![],
            },
            rev: 0,
            created_at_ms: 0,
            updated_at_ms: 0,
        };
        KnowledgeHit {
            quality_score: item.eval.quality(),
            relevance: rel,
            scope_priority: prio,
            item,
        }
    };
    // (name, hits, expected order)
    let cases: Vec<(&str, Vec<KnowledgeHit>, Vec<&str>)> = vec![
        (
            "helpful beats score",
            vec![
                mk("a", 5, 0, 0, Some(0), 1.0),
                mk("b", 3, 3, 0, Some(0), 0.1),
            ],
            vec!["b", "a"],
        ),
        (
            "harmful counts twice",
            vec![
                mk("a", 5, 0, 1, Some(0), 1.0),
                mk("b", 4, 0, 0, Some(0), 0.1),
            ],
            vec!["b", "a"],
        ),
        (
            "tie: user before project before agent before team before org before public",
            vec![
                mk("public", 4, 0, 0, Some(5), 1.0),
                mk("org", 4, 0, 0, Some(4), 1.0),
                mk("team", 4, 0, 0, Some(3), 1.0),
                mk("agent", 4, 0, 0, Some(2), 1.0),
                mk("project", 4, 0, 0, Some(1), 1.0),
                mk("user", 4, 0, 0, Some(0), 1.0),
            ],
            vec!["user", "project", "agent", "team", "org", "public"],
        ),
        (
            "tie on both: relevance",
            vec![
                mk("a", 4, 0, 0, Some(3), 0.2),
                mk("b", 4, 0, 0, Some(3), 0.9),
            ],
            vec!["b", "a"],
        ),
        (
            "no matched scope ranks last among equals",
            vec![mk("a", 4, 0, 0, None, 9.0), mk("b", 4, 0, 0, Some(5), 0.1)],
            vec!["b", "a"],
        ),
    ];
    for (name, mut hits, want) in cases {
        rank_hits(&mut hits);
        let got: Vec<&str> = hits.iter().map(|h| h.item.id.as_str()).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn search_drops_low_scores_and_negative_quality() {
    let (_d, engine) = setup();
    // (content, score, helpful, harmful)
    let items = [
        ("deploy s5", 5, 0, 0),
        ("deploy s3 h2", 3, 2, 0),
        ("deploy s2", 2, 0, 0),
        ("deploy s4 x3", 4, 0, 3),    // quality 4 - 6 = -2
        ("deploy s3 h1 x2", 3, 1, 2), // quality 0: kept
        ("deploy s1", 1, 0, 0),
    ];
    for (content, score, h, x) in items {
        let it = engine
            .knowledge_save(
                &alice(),
                NewKnowledge {
                    score: Some(score),
                    ..new_item(content, &[])
                },
            )
            .unwrap();
        for _ in 0..h {
            engine
                .knowledge_update(&alice(), &it.id, &helpful(), None)
                .unwrap();
        }
        for _ in 0..x {
            engine
                .knowledge_update(&alice(), &it.id, &harmful(), None)
                .unwrap();
        }
    }
    // (min_score, limit, expected contents in order)
    let cases: Vec<(u8, usize, Vec<&str>)> = vec![
        (3, 10, vec!["deploy s5", "deploy s3 h2", "deploy s3 h1 x2"]),
        (
            1,
            10,
            vec![
                "deploy s5",
                "deploy s3 h2",
                "deploy s2",
                "deploy s1",
                "deploy s3 h1 x2",
            ],
        ),
        (5, 10, vec!["deploy s5"]),
        (3, 1, vec!["deploy s5"]),
    ];
    for (min_score, limit, want) in cases {
        let q = KnowledgeQuery {
            min_score,
            limit,
            ..Default::default()
        };
        assert_eq!(
            search(&engine, &alice(), "deploy", &q),
            want,
            "min_score {min_score} limit {limit}"
        );
    }
    let hits = engine
        .knowledge_search(&alice(), "deploy", &KnowledgeQuery::default())
        .unwrap();
    assert_eq!(hits[0].quality_score, 5.0);
    let h2 = hits
        .iter()
        .find(|h| h.item.content == "deploy s3 h2")
        .unwrap();
    assert_eq!(
        (h2.quality_score, h2.item.eval.helpful_history.len()),
        (5.0, 2)
    );
}

#[test]
fn visibility_is_decided_inside_the_scan() {
    let (_d, engine) = setup();
    save(&engine, &alice(), "rollout checklist private to alice", &[]);
    save(&engine, &alice(), "rollout checklist for hr", &["team:hr"]);
    save(
        &engine,
        &alice(),
        "rollout checklist for apollo",
        &["project:apollo"],
    );
    save(
        &engine,
        &alice(),
        "rollout checklist for everyone",
        &["public"],
    );
    save(&engine, &bob(), "rollout checklist private to bob", &[]);
    save(&engine, &bob(), "rollout checklist for ops", &["team:ops"]);
    let everyone = KnowledgeQuery {
        limit: 20,
        ..Default::default()
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let cases: Vec<(&str, RequestContext, Vec<&str>)> = vec![
        (
            "alice",
            alice(),
            vec![
                "rollout checklist for apollo",
                "rollout checklist for everyone",
                "rollout checklist for hr",
                "rollout checklist private to alice",
            ],
        ),
        (
            "bob",
            bob(),
            vec![
                "rollout checklist for everyone",
                "rollout checklist for ops",
                "rollout checklist private to bob",
            ],
        ),
        (
            "ada (admin)",
            ada(),
            vec![
                "rollout checklist for apollo",
                "rollout checklist for everyone",
                "rollout checklist for hr",
                "rollout checklist for ops",
                "rollout checklist private to alice",
                "rollout checklist private to bob",
            ],
        ),
    ];
    for (name, who, want) in cases {
        assert_eq!(
            sorted(search(&engine, &who, "rollout 清单", &everyone)),
            want,
            "{name}"
        );
        let listed: Vec<String> = engine
            .knowledge_list(
                &who,
                &KnowledgeListOptions {
                    limit: 100,
                    ..Default::default()
                },
            )
            .unwrap()
            .into_iter()
            .map(|i| i.content)
            .collect();
        assert_eq!(sorted(listed), want, "list as {name}");
    }
    // The scope priority of a hit is the best scope the caller matched.
    let hits = engine
        .knowledge_search(&alice(), "rollout", &everyone)
        .unwrap();
    let private = hits
        .iter()
        .find(|h| h.item.content.ends_with("alice"))
        .unwrap();
    assert_eq!(private.scope_priority, Some(0));
    // Narrowing by scope never widens.
    let only_hr = KnowledgeQuery {
        scopes: vec!["team:hr".into()],
        ..everyone.clone()
    };
    assert!(search(&engine, &bob(), "rollout", &only_hr).is_empty());
}

#[test]
fn hidden_items_never_take_a_candidate_slot() {
    let (_d, engine) = setup();
    // Many strong matches bob may not see, one weak one he may.
    for i in 0..12 {
        save(
            &engine,
            &alice(),
            &format!("salary salary salary salary band {i}"),
            &["team:hr"],
        );
    }
    save(
        &engine,
        &alice(),
        "the salary review is public, see the wiki for everything else",
        &["public"],
    );
    // limit 1 → 2 candidates: a filter applied after the top-k would leave bob nothing.
    let q = KnowledgeQuery {
        limit: 1,
        ..Default::default()
    };
    let got = search(&engine, &bob(), "salary", &q);
    assert_eq!(
        got,
        ["the salary review is public, see the wiki for everything else"]
    );
    // And an item scoped to a team bob is not in is invisible by id too.
    let hr = engine
        .knowledge_list(
            &alice(),
            &KnowledgeListOptions {
                scopes: vec!["team:hr".into()],
                ..Default::default()
            },
        )
        .unwrap();
    assert!(matches!(
        engine.knowledge_get(&bob(), &hr[0].id),
        Err(EngineError::NotFound(_))
    ));
}

#[test]
fn chinese_and_english_queries_without_a_model() {
    let (_d, engine) = setup();
    save(&engine, &alice(), "部署服务之前必须先在灰度环境验证。", &[]);
    save(
        &engine,
        &alice(),
        "Deployments are rolled out gradually with canaries.",
        &[],
    );
    save(&engine, &alice(), "年假申请需要提前两周提交。", &[]);
    let q = KnowledgeQuery::default();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("部署", vec!["部署服务之前必须先在灰度环境验证。"]),
        ("年假 申请", vec!["年假申请需要提前两周提交。"]),
        (
            "deployment",
            vec!["Deployments are rolled out gradually with canaries."],
        ),
        ("报销", vec![]),
    ];
    for (query, want) in cases {
        assert_eq!(search(&engine, &alice(), query, &q), want, "{query}");
    }
    assert!(matches!(
        engine.knowledge_search(&alice(), "  ", &q),
        Err(EngineError::InvalidInput(_))
    ));
}

#[test]
fn writes_are_owner_only_and_invisible_items_are_not_found() {
    let (_d, engine) = setup();
    let public = save(&engine, &alice(), "public tip", &["public"]);
    let private = save(&engine, &alice(), "private tip", &[]);
    let score4 = KnowledgeUpdate {
        update_score: Some(4),
        ..Default::default()
    };
    enum Want {
        Ok,
        NotFound,
        Forbidden,
        Invalid,
    }
    let cases: Vec<(&str, RequestContext, &str, KnowledgeUpdate, Want)> = vec![
        (
            "owner",
            alice(),
            public.id.as_str(),
            score4.clone(),
            Want::Ok,
        ),
        (
            "reader of a public item",
            bob(),
            public.id.as_str(),
            score4.clone(),
            Want::Forbidden,
        ),
        (
            "reader feedback (helpful/harmful cases are open to readers)",
            bob(),
            public.id.as_str(),
            helpful(),
            Want::Ok,
        ),
        (
            "reader feedback with a score change",
            bob(),
            public.id.as_str(),
            KnowledgeUpdate {
                update_score: Some(5),
                ..helpful()
            },
            Want::Forbidden,
        ),
        (
            "stranger's feedback on a private item",
            bob(),
            private.id.as_str(),
            harmful(),
            Want::NotFound,
        ),
        (
            "stranger to a private item",
            bob(),
            private.id.as_str(),
            score4.clone(),
            Want::NotFound,
        ),
        (
            "no such item",
            alice(),
            "knowledge-0-000000000000",
            score4.clone(),
            Want::NotFound,
        ),
        (
            "admin",
            ada(),
            private.id.as_str(),
            score4.clone(),
            Want::Ok,
        ),
        (
            "score 0",
            alice(),
            public.id.as_str(),
            KnowledgeUpdate {
                update_score: Some(0),
                ..Default::default()
            },
            Want::Invalid,
        ),
        (
            "re-share with a foreign team",
            alice(),
            public.id.as_str(),
            KnowledgeUpdate {
                scopes: Some(vec!["team:ops".into()]),
                ..Default::default()
            },
            Want::Forbidden,
        ),
        (
            "evolve without a model",
            alice(),
            public.id.as_str(),
            KnowledgeUpdate {
                evolve_feedback: Some("shorter".into()),
                ..Default::default()
            },
            Want::Invalid,
        ),
    ];
    for (name, who, id, update, want) in cases {
        match (want, engine.knowledge_update(&who, id, &update, None)) {
            (Want::Ok, Ok(_)) => {}
            (Want::NotFound, Err(EngineError::NotFound(_))) => {}
            (Want::Forbidden, Err(EngineError::Forbidden(_))) => {}
            (Want::Invalid, Err(EngineError::InvalidInput(_))) => {}
            (_, got) => panic!("{name}: {got:?}"),
        }
    }
    assert!(matches!(
        engine.knowledge_delete(&bob(), &public.id),
        Err(EngineError::Forbidden(_))
    ));
    assert!(matches!(
        engine.knowledge_delete(&bob(), &private.id),
        Err(EngineError::NotFound(_))
    ));
    assert!(matches!(
        engine.knowledge_get(&bob(), &private.id),
        Err(EngineError::NotFound(_))
    ));
    engine.knowledge_delete(&alice(), &private.id).unwrap();
    assert!(matches!(
        engine.knowledge_get(&alice(), &private.id),
        Err(EngineError::NotFound(_))
    ));
    assert!(search(&engine, &alice(), "private", &KnowledgeQuery::default()).is_empty());
}

/// Rewrites deterministically so tests can see what was asked.
struct FakeRewriter;

impl Rewriter for FakeRewriter {
    fn evolve(&self, item: &KnowledgeItem, feedback: &str) -> Result<String, String> {
        Ok(format!("{} (revised: {feedback})", item.content))
    }
    fn merge(&self, items: &[&KnowledgeItem]) -> Result<String, String> {
        Ok(items
            .iter()
            .map(|i| i.content.as_str())
            .collect::<Vec<_>>()
            .join(" + "))
    }
}

#[test]
fn updates_feedback_and_evolve_keep_previous_versions() {
    let (_d, engine) = setup();
    let item = save(&engine, &alice(), "use retries", &[]);
    let it = engine
        .knowledge_update(&alice(), &item.id, &helpful(), None)
        .unwrap();
    assert_eq!((it.eval.helpful, it.eval.helpful_history.len()), (1, 1));
    assert!(!it.eval.helpful_history[0].timestamp.is_empty(), "stamped");
    let it = engine
        .knowledge_update(&alice(), &item.id, &harmful(), None)
        .unwrap();
    assert_eq!(
        (it.eval.harmful, it.eval.harmful_history[0].reason.as_str()),
        (1, "wrong")
    );
    let evolve = KnowledgeUpdate {
        evolve_feedback: Some("mention backoff".into()),
        ..Default::default()
    };
    let it = engine
        .knowledge_update(&alice(), &item.id, &evolve, Some(&FakeRewriter))
        .unwrap();
    assert_eq!(it.content, "use retries (revised: mention backoff)");
    let edit = KnowledgeUpdate {
        content: Some("use retries with exponential backoff".into()),
        tags: Some(BTreeMap::from([(
            "domain".to_string(),
            "networking".to_string(),
        )])),
        ..Default::default()
    };
    engine
        .knowledge_update(&alice(), &item.id, &edit, None)
        .unwrap();
    let versions = engine.knowledge_versions(&alice(), &item.id).unwrap();
    let seen: Vec<(&str, &str)> = versions
        .iter()
        .map(|v| (v.reason.as_str(), v.content.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("evolve", "use retries"),
            ("update", "use retries (revised: mention backoff)")
        ]
    );
    // The index follows the new text.
    assert_eq!(
        search(&engine, &alice(), "exponential", &KnowledgeQuery::default()),
        ["use retries with exponential backoff"]
    );
    let q = KnowledgeQuery {
        tags: BTreeMap::from([("domain".to_string(), "networking".to_string())]),
        ..Default::default()
    };
    assert_eq!(search(&engine, &alice(), "retries", &q).len(), 1);
    assert!(matches!(
        engine.knowledge_versions(&bob(), &item.id),
        Err(EngineError::NotFound(_))
    ));
}

#[test]
fn batch_update_reports_each_item() {
    let (_d, engine) = setup();
    let mine = save(&engine, &alice(), "a", &[]);
    let public_other = save(&engine, &bob(), "b", &["public"]);
    let private_other = save(&engine, &bob(), "c", &[]);
    let updates = vec![
        (mine.id.clone(), helpful()),
        (public_other.id.clone(), helpful()),
        (private_other.id.clone(), helpful()),
        (
            mine.id.clone(),
            KnowledgeUpdate {
                update_score: Some(9),
                ..Default::default()
            },
        ),
        (mine.id.clone(), harmful()),
        (
            public_other.id.clone(),
            KnowledgeUpdate {
                update_score: Some(5),
                ..Default::default()
            },
        ),
    ];
    let out = engine
        .knowledge_batch_update(&alice(), &updates, None)
        .unwrap();
    let oks: Vec<bool> = out.iter().map(|o| o.ok).collect();
    // Feedback on a readable item is accepted (readers report back); a score change on
    // someone else's item is not; an invisible item is "not found".
    assert_eq!(oks, [true, true, false, false, true, false]);
    assert!(out[2].error.as_deref().unwrap().starts_with("not found"));
    assert!(out[5].error.as_deref().unwrap().starts_with("not allowed"));
    let theirs = engine.knowledge_get(&bob(), &public_other.id).unwrap();
    assert_eq!((theirs.eval.helpful, theirs.eval.score), (1, 3));
    let now = engine.knowledge_get(&alice(), &mine.id).unwrap();
    assert_eq!(
        (now.eval.helpful, now.eval.harmful, now.eval.score),
        (1, 1, 3)
    );
}

#[test]
fn list_filters_and_pages() {
    let (_d, engine) = setup();
    for (content, types, scopes) in [
        ("t1", vec!["tool"], vec!["public"]),
        ("t2", vec!["tool", "plan"], vec!["team:hr"]),
        ("p1", vec!["plan"], vec![]),
    ] {
        engine
            .knowledge_save(
                &alice(),
                NewKnowledge {
                    types: types.into_iter().map(String::from).collect(),
                    ..new_item(content, &scopes)
                },
            )
            .unwrap();
    }
    save(&engine, &bob(), "b1", &["public"]);
    let contents = |o: KnowledgeListOptions, who: &RequestContext| {
        let mut v: Vec<String> = engine
            .knowledge_list(who, &o)
            .unwrap()
            .into_iter()
            .map(|i| i.content)
            .collect();
        v.sort();
        v
    };
    let cases: Vec<(&str, KnowledgeListOptions, RequestContext, Vec<&str>)> = vec![
        (
            "types",
            KnowledgeListOptions {
                types: vec!["plan".into()],
                ..Default::default()
            },
            alice(),
            vec!["p1", "t2"],
        ),
        (
            "scope",
            KnowledgeListOptions {
                scopes: vec!["public".into()],
                ..Default::default()
            },
            bob(),
            vec!["b1", "t1"],
        ),
        (
            "owner",
            KnowledgeListOptions {
                owner: Some("bob".into()),
                ..Default::default()
            },
            alice(),
            vec!["b1"],
        ),
        (
            "owner seen by bob",
            KnowledgeListOptions {
                owner: Some("alice".into()),
                ..Default::default()
            },
            bob(),
            vec!["t1"],
        ),
        (
            "limit",
            KnowledgeListOptions {
                limit: 2,
                ..Default::default()
            },
            ada(),
            vec!["b1", "p1"],
        ),
        (
            "offset",
            KnowledgeListOptions {
                limit: 2,
                offset: 3,
                ..Default::default()
            },
            ada(),
            vec!["t1"],
        ),
    ];
    for (name, o, who, want) in cases {
        assert_eq!(contents(o, &who), want, "{name}");
    }
    assert!(matches!(
        engine.knowledge_list(
            &alice(),
            &KnowledgeListOptions {
                scopes: vec!["nope".into()],
                ..Default::default()
            }
        ),
        Err(EngineError::InvalidInput(_))
    ));
}

#[test]
fn lexical_similarity_and_extractive_merge_are_bilingual() {
    let s = |t: &str| shingle_set(t);
    let cases = [
        (
            "部署前先在灰度环境验证服务。",
            "部署前先在灰度环境验证服务！",
            true,
        ),
        (
            "部署前先在灰度环境验证服务。",
            "年假申请需要提前两周提交。",
            false,
        ),
        (
            "Always pin dependency versions in CI.",
            "always pin dependency versions in ci",
            true,
        ),
        (
            "Always pin dependency versions in CI.",
            "Use retries with exponential backoff.",
            false,
        ),
    ];
    for (a, b, similar) in cases {
        assert_eq!(jaccard(&s(a), &s(b)) >= 0.5, similar, "{a} / {b}");
    }
    let mk = |c: &str| KnowledgeItem {
        content: c.into(),
        ..empty_item()
    };
    let a = mk("部署前先验证。回滚要有预案。");
    let b = mk("部署前先验证！监控告警要配置。");
    assert_eq!(
        extractive_merge(&[&a, &b]),
        "部署前先验证。回滚要有预案。监控告警要配置。"
    );
    let a = mk("Pin versions.");
    let b = mk("pin versions. Cache the registry.");
    assert_eq!(
        extractive_merge(&[&a, &b]),
        "Pin versions. Cache the registry."
    );
}

fn empty_item() -> KnowledgeItem {
    KnowledgeItem {
        seq: 0,
        id: String::new(),
        message_id: String::new(),
        types: vec![],
        task: String::new(),
        tags: BTreeMap::new(),
        scopes: vec![],
        owner: String::new(),
        content: String::new(),
        resource_ids: vec![],
        source: Default::default(),
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

#[test]
fn slim_plans_then_merges_near_duplicates() {
    let (_d, engine) = setup();
    let zh1 = save(
        &engine,
        &alice(),
        "部署前先在灰度环境验证服务。回滚要有预案。监控告警要配置。",
        &["team:hr"],
    );
    let zh2 = save(
        &engine,
        &alice(),
        "部署前先在灰度环境验证服务！回滚要有预案。",
        &["team:hr"],
    );
    let en1 = save(
        &engine,
        &alice(),
        "Always pin dependency versions in CI builds.",
        &[],
    );
    let en2 = save(
        &engine,
        &alice(),
        "always pin dependency versions in CI builds",
        &[],
    );
    // Same text, different scopes: never merged (a merge must not change who reads it).
    let other_scope = save(
        &engine,
        &alice(),
        "Always pin dependency versions in CI builds.",
        &["public"],
    );
    let unrelated = save(&engine, &alice(), "年假申请需要提前两周提交。", &[]);
    // bob's duplicate of alice's public text: alice may not write it.
    let bobs = save(
        &engine,
        &bob(),
        "Always pin dependency versions in CI builds.",
        &["public"],
    );
    for _ in 0..2 {
        engine
            .knowledge_update(&alice(), &zh2.id, &helpful(), None)
            .unwrap();
    }
    engine
        .knowledge_update(&alice(), &zh1.id, &helpful(), None)
        .unwrap();
    engine
        .knowledge_update(&alice(), &zh1.id, &harmful(), None)
        .unwrap();

    let plan = engine
        .knowledge_slim(
            &alice(),
            &SlimOptions {
                threshold: None,
                dry_run: true,
            },
            None,
        )
        .unwrap();
    assert_eq!(plan.method, SlimMethod::Lexical);
    assert!(!plan.applied);
    assert_eq!(plan.items_considered, 6, "only alice's items");
    let groups: Vec<(String, Vec<String>)> = plan
        .groups
        .iter()
        .map(|g| (g.keep.clone(), g.merge.clone()))
        .collect();
    // The kept item is the better one: zh2 (quality 5) over zh1 (3 + 1 − 2 = 2).
    assert!(
        groups.contains(&(zh2.id.clone(), vec![zh1.id.clone()])),
        "{groups:?}"
    );
    assert_eq!(groups.len(), 2, "{groups:?}");
    let en_group = plan
        .groups
        .iter()
        .find(|g| g.keep == en1.id || g.keep == en2.id)
        .unwrap();
    assert_eq!(en_group.merge.len(), 1);
    assert!(en_group.similarity[0] >= 0.5);
    // The dry run changed nothing.
    assert!(engine.knowledge_get(&alice(), &zh1.id).is_ok());

    let applied = engine
        .knowledge_slim(
            &alice(),
            &SlimOptions {
                threshold: None,
                dry_run: false,
            },
            None,
        )
        .unwrap();
    assert!(applied.applied);
    let zh = applied.groups.iter().find(|g| g.keep == zh2.id).unwrap();
    assert_eq!(zh.merged_by.as_deref(), Some("extractive"));
    let merged = zh.result.as_ref().unwrap();
    assert_eq!(
        merged.content,
        "部署前先在灰度环境验证服务！回滚要有预案。监控告警要配置。"
    );
    assert_eq!(
        (merged.eval.helpful, merged.eval.harmful),
        (3, 1),
        "counts summed"
    );
    assert_eq!(merged.eval.helpful_history.len(), 3);
    assert_eq!(merged.scopes, ["team:hr"]);
    assert!(matches!(
        engine.knowledge_get(&alice(), &zh1.id),
        Err(EngineError::NotFound(_))
    ));
    let versions = engine.knowledge_versions(&alice(), &zh2.id).unwrap();
    let reasons: Vec<String> = versions.iter().map(|v| v.reason.clone()).collect();
    assert_eq!(reasons, ["merge".to_string(), format!("merged:{}", zh1.id)]);
    assert_eq!(
        versions[1].content, zh1.content,
        "the absorbed item is kept in full"
    );
    for id in [&other_scope.id, &unrelated.id, &bobs.id] {
        assert!(engine.knowledge_get(&ada(), id).is_ok(), "untouched {id}");
    }
    // With a rewriter, the model writes the merged text.
    save(&engine, &alice(), "年假申请需要提前两周提交！", &[]);
    let by_llm = engine
        .knowledge_slim(&alice(), &SlimOptions::default(), Some(&FakeRewriter))
        .unwrap();
    assert_eq!(by_llm.groups.len(), 1);
    assert_eq!(by_llm.groups[0].merged_by.as_deref(), Some("llm"));
    assert!(
        by_llm.groups[0]
            .result
            .as_ref()
            .unwrap()
            .content
            .contains(" + ")
    );
    // An administrator may write both public copies, but they have different owners (so
    // different readers): never merged.
    let admin_plan = engine
        .knowledge_slim(
            &ada(),
            &SlimOptions {
                threshold: None,
                dry_run: true,
            },
            None,
        )
        .unwrap();
    assert!(admin_plan.groups.is_empty(), "{admin_plan:?}");
    // Nothing left to merge.
    assert!(
        engine
            .knowledge_slim(&alice(), &SlimOptions::default(), None)
            .unwrap()
            .groups
            .is_empty()
    );
    assert!(matches!(
        engine.knowledge_slim(
            &alice(),
            &SlimOptions {
                threshold: Some(1.5),
                dry_run: true
            },
            None
        ),
        Err(EngineError::InvalidInput(_))
    ));
}

#[test]
fn the_index_follows_writes_made_behind_its_back() {
    let (_d, engine) = setup();
    save(&engine, &alice(), "first canary note", &[]);
    assert_eq!(
        search(&engine, &alice(), "canary", &KnowledgeQuery::default()).len(),
        1
    );
    // Another process writing the same store: only the store's change counter tells.
    let mut record = engine.knowledge_get(&alice(), &search_id(&engine)).unwrap();
    record.id = "knowledge-1-abcdefabcdef".into();
    record.content = "second canary note".into();
    engine.store().insert_knowledge(&record).unwrap();
    assert_eq!(
        search(&engine, &alice(), "canary", &KnowledgeQuery::default()).len(),
        2
    );
    engine
        .store()
        .delete_knowledge("knowledge-1-abcdefabcdef")
        .unwrap();
    assert_eq!(
        search(&engine, &alice(), "canary", &KnowledgeQuery::default()).len(),
        1
    );
}

fn search_id(engine: &Engine) -> String {
    engine
        .knowledge_search(&alice(), "canary", &KnowledgeQuery::default())
        .unwrap()[0]
        .item
        .id
        .clone()
}

/// Meaning as a concept table: "holiday" and "年假" are neighbours without a shared word.
struct ConceptEmbedder;

impl ConceptEmbedder {
    fn vector(text: &str) -> Vec<f32> {
        let concepts: [(&[&str], usize); 3] = [
            (&["holiday", "vacation", "年假", "休假"], 0),
            (&["deploy", "rollout", "发布", "部署"], 1),
            (&["salary", "工资"], 2),
        ];
        let lower = text.to_lowercase();
        let mut v = vec![0.01f32; 4];
        for (words, dim) in concepts {
            for w in words {
                v[dim] += lower.matches(w).count() as f32;
            }
        }
        v
    }
}

impl Embedder for ConceptEmbedder {
    fn model_id(&self) -> &str {
        "concepts"
    }
    fn dim(&self) -> usize {
        4
    }
    fn embed_passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| Self::vector(t)).collect())
    }
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        Ok(Self::vector(text))
    }
    fn count_tokens(&self, text: &str) -> usize {
        text.chars().count()
    }
    fn max_tokens(&self) -> usize {
        512
    }
}

#[test]
fn with_an_embedder_search_and_slim_go_by_meaning() {
    let models = ModelSet {
        embedder: Some(Arc::new(ConceptEmbedder)),
        ..ModelSet::none()
    };
    let (_d, engine) = setup_with(models);
    save(&engine, &alice(), "年假申请需要提前两周提交。", &[]);
    save(&engine, &alice(), "休假要提前告知团队。", &[]);
    save(&engine, &alice(), "部署前先验证。", &[]);
    let q = KnowledgeQuery {
        limit: 1,
        ..Default::default()
    };
    // No shared keyword: found through the embedding.
    let got = search(&engine, &alice(), "holiday", &q);
    assert_eq!(got.len(), 1);
    assert!(got[0].contains("假"), "{got:?}");
    let plan = engine
        .knowledge_slim(
            &alice(),
            &SlimOptions {
                threshold: Some(0.95),
                dry_run: true,
            },
            None,
        )
        .unwrap();
    assert_eq!(plan.method, SlimMethod::Embedding);
    assert_eq!(plan.groups.len(), 1, "{plan:?}");
    assert_eq!(plan.groups[0].merge.len(), 1);
}
