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
        engine.user_profile(&alice, None, 10).unwrap()[0],
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

/// A scripted [`MemoryModel`]: fixed proposals, a fixed merge (or failures).
struct Scripted {
    proposals: std::result::Result<Vec<(&'static str, &'static str)>, &'static str>,
    merged: &'static str,
}

impl MemoryModel for Scripted {
    fn propose(
        &self,
        _messages: &[CommitMessage],
        _group: bool,
    ) -> std::result::Result<Vec<crate::ProposedMemory>, String> {
        self.proposals
            .clone()
            .map(|list| {
                list.into_iter()
                    .map(|(kind, statement)| crate::ProposedMemory {
                        kind: kind.into(),
                        statement: statement.into(),
                    })
                    .collect()
            })
            .map_err(String::from)
    }

    fn merge(&self, _existing: &str, _new: &str) -> std::result::Result<String, String> {
        Ok(self.merged.to_owned())
    }
}

fn with_model(model: &dyn MemoryModel) -> CommitWith<'_> {
    CommitWith {
        model: Some(model),
        ..CommitWith::default()
    }
}

#[test]
fn a_model_adds_grounded_memories_and_cases_and_nothing_invented() {
    let (_d, engine) = setup();
    let alice = ctx("alice", Role::User);
    let conversation = [
        CommitMessage::mine(
            "I prefer answers in bullet points. Long paragraphs are hard to read on my phone. \
             How do I reset my VPN token?",
        ),
        CommitMessage::assistant("Open the self-service portal and choose Reset token [1]."),
        CommitMessage::mine("That worked, thanks!"),
    ];
    let model = Scripted {
        proposals: Ok(vec![
            // Found by the rules too: not a second candidate.
            ("preference", "I prefer answers in bullet points."),
            // What the rules miss.
            ("preference", "Long paragraphs are hard to read on my phone"),
            (
                "case",
                "To reset the VPN token: open the self-service portal and choose Reset token",
            ),
            // Invented.
            (
                "background",
                "The user is a senior network engineer in Tokyo",
            ),
            // The assistant's words are not alice's.
            (
                "habit",
                "Open the self-service portal and choose Reset token",
            ),
            ("mood", "That worked"),
        ]),
        merged: "",
    };
    let report = engine
        .memory_commit_with(&alice, &conversation, "sess-9", &with_model(&model))
        .unwrap();
    assert_eq!(report.model_proposals, 6);
    let created: Vec<(&str, &str)> = report
        .created
        .iter()
        .map(|n| (n.kind.as_str(), n.content.as_str()))
        .collect();
    assert_eq!(
        created,
        [
            ("preference", "I prefer answers in bullet points."),
            ("preference", "Long paragraphs are hard to read on my phone"),
            (
                "case",
                "To reset the VPN token: open the self-service portal and choose Reset token"
            ),
        ]
    );
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(skipped, ["ungrounded", "ungrounded", "unknown_kind"]);

    // The case is a searchable strategy of alice's, under the agent's case folder, and not
    // part of her profile.
    let case = &report.created[2];
    assert!(
        case.uri.starts_with("ctx://agent/copilot/memories/cases/"),
        "{}",
        case.uri
    );
    let item = engine.knowledge_get(&alice, &case.id).unwrap();
    assert_eq!(item.types, ["strategy"]);
    assert_eq!(item.tags.get("origin").map(String::as_str), Some("llm"));
    let profile = engine.user_profile(&alice, None, 10).unwrap();
    assert_eq!(profile.len(), 2, "{profile:?}");
    assert!(!profile.iter().any(|p| p.contains("VPN")));
    let cases = engine
        .memory_children(&alice, "ctx://agent/copilot/memories/cases")
        .unwrap();
    assert_eq!(cases.len(), 1);
    assert_eq!(engine.memory_node(&alice, &case.uri).unwrap().id, case.id);
    let bob = ctx("bob", Role::User);
    assert!(
        engine
            .memory_children(&bob, "ctx://agent/copilot/memories/cases")
            .unwrap()
            .is_empty(),
        "bob's case folder does not show alice's cases"
    );
    assert!(matches!(
        engine.memory_node(&bob, &case.uri),
        Err(EngineError::NotFound(_))
    ));

    // A failing model leaves the rules' result standing.
    let broken = Scripted {
        proposals: Err("model not loaded"),
        merged: "",
    };
    let report = engine
        .memory_commit_with(
            &alice,
            &[CommitMessage::mine("我习惯早上九点前处理邮件。")],
            "sess-10",
            &with_model(&broken),
        )
        .unwrap();
    assert_eq!(report.created.len(), 1);
    assert_eq!(report.model_error.as_deref(), Some("model not loaded"));
}

#[test]
fn a_restatement_that_adds_something_is_merged_by_the_model() {
    let (_d, engine) = setup();
    let alice = ctx("alice", Role::User);
    let first = engine
        .memory_commit(&alice, &["I prefer answers in bullet points.".into()], "s1")
        .unwrap();
    let id = first.created[0].id.clone();
    let restated = [CommitMessage::mine(
        "I prefer answers in bullet points with a summary line first.",
    )];
    // A merge made of the two statements replaces the content (the old one stays a version).
    let good = Scripted {
        proposals: Ok(vec![]),
        merged: "I prefer answers in bullet points, with a summary line first.",
    };
    let report = engine
        .memory_commit_with(&alice, &restated, "s2", &with_model(&good))
        .unwrap();
    assert_eq!(report.merged, std::slice::from_ref(&id));
    assert_eq!(report.confirmed[0].content, good.merged);
    assert_eq!(engine.memories(&alice).unwrap().len(), 1);
    let versions = engine.knowledge_versions(&alice, &id).unwrap();
    assert!(
        versions
            .iter()
            .any(|v| v.content == "I prefer answers in bullet points."),
        "{versions:?}"
    );
    // A "merge" that says something else is not used: the memory is only confirmed.
    let wild = Scripted {
        proposals: Ok(vec![]),
        merged: "Use numbered lists and emojis everywhere.",
    };
    let again = [CommitMessage::mine(
        "I prefer answers in bullet points with a summary line first and bold keywords.",
    )];
    let report = engine
        .memory_commit_with(&alice, &again, "s3", &with_model(&wild))
        .unwrap();
    assert!(report.merged.is_empty());
    assert_eq!(report.confirmed.len(), 1);
    assert_eq!(report.confirmed[0].content, good.merged);
}

#[test]
fn project_memories_steer_only_that_projects_conversations() {
    let (_d, engine) = setup();
    {
        let mut store = engine.store();
        store
            .add_membership(
                &knowhub_authz::UserId::new("alice").unwrap(),
                &knowhub_store::Group::Project(knowhub_authz::ProjectId::new("apollo").unwrap()),
            )
            .unwrap();
    }
    let alice = ctx("alice", Role::User);
    let in_apollo = CommitWith {
        project: Some("apollo"),
        ..CommitWith::default()
    };
    let report = engine
        .memory_commit_with(
            &alice,
            &[CommitMessage::mine(
                "Please don't include SQL in your answers.",
            )],
            "s1",
            &in_apollo,
        )
        .unwrap();
    assert_eq!(report.created[0].project.as_deref(), Some("apollo"));
    engine
        .memory_commit(&alice, &["I prefer short answers.".into()], "s2")
        .unwrap();
    assert_eq!(engine.user_profile(&alice, None, 10).unwrap().len(), 1);
    assert_eq!(
        engine.user_profile(&alice, Some("zeus"), 10).unwrap().len(),
        1
    );
    assert_eq!(
        engine
            .user_profile(&alice, Some("apollo"), 10)
            .unwrap()
            .len(),
        2
    );
    // Not a member: refused; a malformed name: invalid.
    let bob = ctx("bob", Role::User);
    let err = engine.memory_commit_with(
        &bob,
        &[CommitMessage::mine("I prefer tables.")],
        "s3",
        &in_apollo,
    );
    assert!(matches!(err, Err(EngineError::Forbidden(_))), "{err:?}");
    let bad = CommitWith {
        project: Some("no spaces allowed"),
        ..CommitWith::default()
    };
    let err = engine.memory_commit_with(&alice, &[CommitMessage::mine("x")], "s4", &bad);
    assert!(matches!(err, Err(EngineError::InvalidInput(_))), "{err:?}");
}
