//! Memory: rule extraction on bilingual conversations (precision and recall over a labelled
//! set), commit → create vs confirm, nodes, owner-only listing and deletion.

use knowhub_authz::Role;

use super::*;
use crate::test_support::{ctx, engine_with_users};
use crate::{FakeFs, ModelSet};

fn setup() -> (tempfile::TempDir, Engine) {
    engine_with_users(
        &FakeFs::new(),
        ModelSet::none(),
        &[
            ("alice", Role::User),
            ("bob", Role::User),
            ("ada", Role::Admin),
        ],
    )
}

/// (message, the memories a careful reader would keep: (kind, words the statement contains)).
type Labelled = (&'static str, &'static [(&'static str, &'static str)]);

const CONVERSATIONS: &[Labelled] = &[
    (
        "I prefer answers in bullet points.",
        &[("preference", "bullet points")],
    ),
    (
        "I'm a backend engineer on the payments team. How do I rotate my API key?",
        &[("background", "backend engineer")],
    ),
    ("How many days of leave do I get?", &[]),
    (
        "I usually deploy on Thursdays. What is the change freeze policy?",
        &[("habit", "Thursdays")],
    ),
    (
        "Please don't include SQL in your answers.",
        &[("constraint", "SQL")],
    ),
    ("Do I need approval for remote work?", &[]),
    (
        "The handbook says I can work remotely two days a week.",
        &[],
    ),
    (
        "Just so you know, I work in the Shanghai office.",
        &[("background", "Shanghai")],
    ),
    ("我习惯用中文提问。年假有多少天？", &[("habit", "中文")]),
    ("我是财务部的预算分析师。", &[("background", "预算分析师")]),
    ("我是不是需要先申请？", &[]),
    ("我在哪里可以找到报销单？", &[]),
    (
        "我在数据平台团队负责权限系统。",
        &[("background", "数据平台团队")],
    ),
    (
        "请不要在回答里使用英文缩写。",
        &[("constraint", "英文缩写")],
    ),
    (
        "我更喜欢简短的回答，最好三句话以内。",
        &[("preference", "简短")],
    ),
    ("试用期多长？我下个月入职。", &[]),
    ("我对花生过敏，团建聚餐请注意。", &[("constraint", "花生")]),
    ("Can I expense a taxi after 10 pm?", &[]),
    (
        "I always forget the VPN steps, so list them every time.",
        &[("habit", "VPN")],
    ),
    (
        "My favourite format is a table with a summary line.",
        &[("preference", "table")],
    ),
];

#[test]
fn rule_extraction_precision_and_recall_on_bilingual_conversations() {
    let (mut found, mut right, mut expected) = (0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    for (message, want) in CONVERSATIONS {
        let got = extract_explicit_memories(message);
        expected += want.len();
        found += got.len();
        for c in &got {
            let ok = want
                .iter()
                .any(|(kind, words)| *kind == c.kind && c.statement.contains(words));
            if ok {
                right += 1;
            } else {
                misses.push(format!("unexpected {:?} from {message:?}", c));
            }
        }
        for (kind, words) in *want {
            if !got
                .iter()
                .any(|c| c.kind == *kind && c.statement.contains(words))
            {
                misses.push(format!("missed {kind} {words:?} in {message:?}"));
            }
        }
    }
    let precision = right as f64 / found.max(1) as f64;
    let recall = right as f64 / expected.max(1) as f64;
    // Printed for the record (`cargo test -p knowhub-engine --lib memory -- --nocapture`).
    println!(
        "memory rules: {found} extracted, {right} right, {expected} expected: precision {precision:.2}, recall {recall:.2}"
    );
    assert!(misses.is_empty(), "{misses:#?}");
}

#[test]
fn commit_creates_then_confirms_and_only_the_owner_sees_or_deletes() {
    let (_d, engine) = setup();
    let alice = ctx("alice", Role::User);
    let first = engine
        .memory_commit(
            &alice,
            &[
                "I prefer answers in bullet points. How long is probation?".into(),
                "我习惯早上九点前处理邮件。".into(),
            ],
            "sess-1",
        )
        .unwrap();
    assert_eq!(
        (first.candidates, first.created.len(), first.confirmed.len()),
        (2, 2, 0)
    );
    let pref = first
        .created
        .iter()
        .find(|n| n.kind == "preference")
        .unwrap()
        .clone();
    assert!(
        pref.uri
            .starts_with("ctx://user/alice/memories/preferences/knowledge-"),
        "{}",
        pref.uri
    );
    assert!((pref.confidence - 0.6).abs() < 1e-9);

    // Restating it (in other words) confirms instead of duplicating.
    let second = engine
        .memory_commit(
            &alice,
            &["I prefer answers in bullet points, please.".into()],
            "sess-2",
        )
        .unwrap();
    assert_eq!((second.created.len(), second.confirmed.len()), (0, 1));
    let confirmed = &second.confirmed[0];
    assert_eq!(confirmed.id, pref.id);
    assert_eq!(confirmed.confirmations, 1);
    assert!(confirmed.confidence > pref.confidence);
    assert_eq!(engine.memories(&alice).unwrap().len(), 2);
    assert_eq!(
        engine.user_profile(&alice, 10).unwrap()[0],
        "I prefer answers in bullet points.",
        "the most confident memory first"
    );

    // Nobody else sees or deletes alice's memories — not even an administrator's own list.
    let bob = ctx("bob", Role::User);
    let ada = ctx("ada", Role::Admin);
    assert!(engine.memories(&bob).unwrap().is_empty());
    assert!(engine.memories(&ada).unwrap().is_empty());
    assert!(matches!(
        engine.memory_node(&bob, &pref.uri),
        Err(EngineError::NotFound(_))
    ));
    assert!(matches!(
        engine.memory_delete(&bob, &pref.uri),
        Err(EngineError::NotFound(_))
    ));
    let found = engine
        .memory_search(&alice, "bullet points", &[], 5)
        .unwrap();
    assert_eq!(found[0].0.id, pref.id);
    let zh = engine.memory_search(&alice, "邮件", &[], 5).unwrap();
    assert_eq!(zh.len(), 1, "{zh:?}");
    assert!(
        engine
            .memory_search(&alice, "bullet points", &["habit".into()], 5)
            .unwrap()
            .is_empty()
    );
    assert!(
        engine
            .memory_search(&bob, "bullet points", &[], 5)
            .unwrap()
            .is_empty()
    );
    let node = engine.memory_node(&alice, &pref.uri).unwrap();
    assert_eq!(node.content, pref.content);
    engine.memory_delete(&alice, &pref.uri).unwrap();
    assert_eq!(engine.memories(&alice).unwrap().len(), 1);
}
