//! Group spaces (seed 003 §13 phases 1–4): creation and visibility, member roles, group
//! documents through `group:<id>` folder ACLs, commit routing (shared conclusions → group,
//! personal facts → the speaker's own space), joint search, deletion.

use std::path::{Path, PathBuf};

use knowhub_authz::{RequestContext, Role, ScopeSet};

use super::*;
use crate::memory::{CommitMessage, CommitWith, GroupCommitOptions, MemorySpaces};
use crate::test_support::{ctx, engine_with_users};
use crate::{DEFAULT_ACCOUNT, FakeFs, IngestOptions, ModelSet, SearchOptions};

fn alice() -> RequestContext {
    ctx("alice", Role::User)
}
fn bob() -> RequestContext {
    ctx("bob", Role::User)
}
fn carol() -> RequestContext {
    ctx("carol", Role::User)
}
fn dan() -> RequestContext {
    ctx("dan", Role::User)
}
fn ada() -> RequestContext {
    ctx("ada", Role::Admin)
}

fn setup(fs: &FakeFs) -> (tempfile::TempDir, Engine) {
    engine_with_users(
        fs,
        ModelSet::none(),
        &[
            ("alice", Role::User),
            ("bob", Role::User),
            ("carol", Role::User),
            ("dan", Role::User),
            ("ada", Role::Admin),
        ],
    )
}

fn member(user: &str, role: &str) -> GroupMemberSpec {
    GroupMemberSpec {
        user_id: user.into(),
        agent_id: None,
        role: Some(role.into()),
    }
}

/// alpha: alice owner, bob member, dan read-only; carol outside.
fn alpha(engine: &Engine) -> GroupView {
    engine
        .group_create(
            &alice(),
            &NewGroup {
                id: "alpha".into(),
                name: "Project Alpha 阿尔法".into(),
                kind: Some("project".into()),
                members: vec![member("bob", "member"), member("dan", "readonly")],
            },
        )
        .unwrap()
}

fn said(content: &str, by: &str) -> CommitMessage {
    CommitMessage {
        content: content.into(),
        user_id: Some(by.into()),
        role: None,
    }
}

#[test]
fn members_see_their_groups_others_get_not_found() {
    let (_d, engine) = setup(&FakeFs::new());
    let g = alpha(&engine);
    assert_eq!(g.my_role.as_deref(), Some("owner"));
    assert_eq!(g.group_space, group_space_name(DEFAULT_ACCOUNT, "alpha"));
    let roles: Vec<(&str, &str)> = g
        .members
        .iter()
        .map(|m| (m.user_id.as_str(), m.role.as_str()))
        .collect();
    assert_eq!(
        roles,
        vec![("alice", "owner"), ("bob", "member"), ("dan", "readonly")]
    );

    // (who, sees alpha in the list, may open it)
    let table = [
        (alice(), true, true),
        (bob(), true, true),
        (dan(), true, true),
        (carol(), false, false),
        (ada(), true, true),
    ];
    for (who, listed, opens) in table {
        let list = engine.groups(&who).unwrap();
        assert_eq!(
            list.iter().any(|g| g.group_id == "alpha"),
            listed,
            "{}",
            who.user
        );
        let got = engine.group(&who, "alpha");
        assert_eq!(got.is_ok(), opens, "{}", who.user);
        if !opens {
            assert!(
                matches!(got, Err(EngineError::NotFound(_))),
                "no leak: {got:?}"
            );
        }
    }
    assert_eq!(engine.group(&ada(), "alpha").unwrap().my_role, None);

    // Ids are unique; bad input is refused clearly.
    let again = engine.group_create(
        &bob(),
        &NewGroup {
            id: "alpha".into(),
            ..NewGroup::default()
        },
    );
    assert!(matches!(again, Err(EngineError::Conflict(_))), "{again:?}");
    for bad in [
        NewGroup {
            id: "has space".into(),
            ..NewGroup::default()
        },
        NewGroup {
            id: "g1".into(),
            kind: Some("federation".into()),
            ..NewGroup::default()
        },
        NewGroup {
            id: "g2".into(),
            members: vec![member("nobody", "member")],
            ..NewGroup::default()
        },
        NewGroup {
            id: "g3".into(),
            members: vec![member("bob", "boss")],
            ..NewGroup::default()
        },
    ] {
        let id = bad.id.clone();
        let err = engine.group_create(&alice(), &bad);
        assert!(
            matches!(err, Err(EngineError::InvalidInput(_))),
            "{id}: {err:?}"
        );
        assert!(engine.group(&ada(), &id).is_err(), "{id} was not stored");
    }
}

#[test]
fn roles_decide_who_manages_members() {
    let (_d, engine) = setup(&FakeFs::new());
    alpha(&engine);
    // A member cannot add people; a non-member cannot even see the group.
    let err = engine.group_set_member(&bob(), "alpha", &member("carol", "member"));
    assert!(matches!(err, Err(EngineError::Forbidden(_))), "{err:?}");
    let err = engine.group_set_member(&carol(), "alpha", &member("carol", "owner"));
    assert!(matches!(err, Err(EngineError::NotFound(_))), "{err:?}");

    // The owner makes bob an admin; bob adds carol but cannot crown an owner.
    engine
        .group_set_member(&alice(), "alpha", &member("bob", "admin"))
        .unwrap();
    let m = engine
        .group_set_member(&bob(), "alpha", &member("carol", "member"))
        .unwrap();
    assert_eq!((m.user_id.as_str(), m.role.as_str()), ("carol", "member"));
    let err = engine.group_set_member(&bob(), "alpha", &member("carol", "owner"));
    assert!(matches!(err, Err(EngineError::Forbidden(_))), "{err:?}");
    let err = engine.group_remove_member(&bob(), "alpha", "alice");
    assert!(matches!(err, Err(EngineError::Forbidden(_))), "{err:?}");

    // The last owner can neither leave nor step down; anyone else may leave.
    let err = engine.group_remove_member(&alice(), "alpha", "alice");
    assert!(matches!(err, Err(EngineError::Conflict(_))), "{err:?}");
    let err = engine.group_set_member(&alice(), "alpha", &member("alice", "member"));
    assert!(matches!(err, Err(EngineError::Conflict(_))), "{err:?}");
    engine
        .group_remove_member(&carol(), "alpha", "carol")
        .unwrap();
    assert!(engine.group(&carol(), "alpha").is_err());

    // Only an owner (or an administrator) deletes the group.
    let err = engine.group_delete(&bob(), "alpha");
    assert!(matches!(err, Err(EngineError::Forbidden(_))), "{err:?}");
    engine.group_delete(&ada(), "alpha").unwrap();
    assert!(engine.groups(&alice()).unwrap().is_empty());
}

#[test]
fn group_documents_are_visible_to_members_only() {
    let fs = FakeFs::new();
    fs.write(
        "/kb/alpha/plan.md",
        "# Launch plan\n\nThe Zephyr launch is on 3 March.",
    );
    fs.write(
        "/kb/shared/faq.md",
        "# FAQ\n\nThe Zephyr project has a public FAQ.",
    );
    let (_d, engine) = setup(&fs);
    engine
        .ingest(
            &ada(),
            &[PathBuf::from("/kb")],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    alpha(&engine);
    let scopes = |s: &str| s.parse::<ScopeSet>().unwrap();
    engine
        .set_folder_acl(&ada(), Path::new("/kb/alpha"), Some(&scopes("group:alpha")))
        .unwrap();
    engine
        .set_folder_acl(&ada(), Path::new("/kb/shared"), Some(&scopes("public")))
        .unwrap();

    let paths = |who: &RequestContext| -> Vec<String> {
        let mut p: Vec<String> = engine
            .search(who, "Zephyr", &SearchOptions::default())
            .unwrap()
            .into_iter()
            .map(|h| h.path)
            .collect();
        p.sort();
        p
    };
    let both = vec![
        "/kb/alpha/plan.md".to_owned(),
        "/kb/shared/faq.md".to_owned(),
    ];
    assert_eq!(paths(&alice()), both);
    assert_eq!(paths(&dan()), both, "read-only members read");
    assert_eq!(paths(&carol()), vec!["/kb/shared/faq.md".to_owned()]);
    // Joining and leaving take effect on the next request.
    engine
        .group_set_member(&alice(), "alpha", &member("carol", "readonly"))
        .unwrap();
    assert_eq!(paths(&carol()), both);
    engine
        .group_remove_member(&carol(), "alpha", "carol")
        .unwrap();
    assert_eq!(paths(&carol()), vec!["/kb/shared/faq.md".to_owned()]);

    // Once the group is gone, nobody can re-create it to inherit its documents — except an
    // administrator, who sees them anyway.
    engine.group_delete(&alice(), "alpha").unwrap();
    assert_eq!(paths(&bob()), vec!["/kb/shared/faq.md".to_owned()]);
    let again = NewGroup {
        id: "alpha".into(),
        ..NewGroup::default()
    };
    let err = engine.group_create(&carol(), &again);
    assert!(matches!(err, Err(EngineError::Forbidden(_))), "{err:?}");
    engine.group_create(&ada(), &again).unwrap();
}

#[test]
fn a_group_commit_routes_shared_conclusions_to_the_group_and_personal_facts_to_their_owner() {
    let (_d, engine) = setup(&FakeFs::new());
    alpha(&engine);
    let options = GroupCommitOptions::new("alpha");
    let chat = [
        said("We decided to ship the beta on Friday.", "alice"),
        said("我们决定下周一开始灰度发布。", "bob"),
        said("I prefer short status updates.", "alice"),
        said("I usually work late on Thursdays.", "bob"),
        said("Who is on call tonight?", "bob"),
    ];
    let report = engine
        .memory_commit_with(&alice(), &chat, "chat-1", &with_group(&options))
        .unwrap();
    assert_eq!(report.candidates, 4, "{report:?}");
    let created: Vec<(Option<&str>, &str)> = report
        .created
        .iter()
        .map(|n| (n.group_id.as_deref(), n.kind.as_str()))
        .collect();
    assert_eq!(
        created,
        vec![
            (Some("alpha"), "decision"),
            (Some("alpha"), "decision"),
            (None, "preference")
        ]
    );
    let space = group_space_name(DEFAULT_ACCOUNT, "alpha");
    assert!(
        report.created[0]
            .uri
            .starts_with(&format!("ctx://group/{space}/memories/decision/"))
    );
    assert!(
        report.created[2]
            .uri
            .starts_with("ctx://user/alice/memories/preferences/")
    );
    // Bob's habit is bob's to commit, not alice's.
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].reason, "other_speaker");
    assert!(engine.memories(&bob()).unwrap().is_empty());

    // Members read the group's memories; outsiders get nothing, not even by URI or search.
    let uri = report.created[0].uri.clone();
    assert_eq!(engine.group_memories(&bob(), "alpha").unwrap().len(), 2);
    assert_eq!(
        engine.memory_node(&dan(), &uri).unwrap().content,
        "We decided to ship the beta on Friday."
    );
    assert!(matches!(
        engine.memory_node(&carol(), &uri),
        Err(EngineError::NotFound(_))
    ));
    assert!(matches!(
        engine.group_memories(&carol(), "alpha"),
        Err(EngineError::NotFound(_))
    ));
    let found = engine
        .knowledge_search(
            &carol(),
            "ship the beta Friday",
            &crate::knowledge::KnowledgeQuery::default(),
        )
        .unwrap();
    assert!(found.is_empty(), "{found:?}");
    assert!(matches!(
        engine.memory_children(&carol(), &format!("ctx://group/{space}/memories")),
        Err(EngineError::NotFound(_))
    ));
    assert_eq!(
        engine
            .memory_children(&bob(), &format!("ctx://group/{space}/memories/decision"))
            .unwrap()
            .len(),
        2
    );

    // Another member restating it confirms the shared memory instead of duplicating it.
    let again = engine
        .memory_commit_with(
            &bob(),
            &[said("We decided to ship the beta on Friday!", "bob")],
            "chat-2",
            &with_group(&options),
        )
        .unwrap();
    assert_eq!(
        (again.created.len(), again.confirmed.len()),
        (0, 1),
        "{again:?}"
    );
    assert!(again.confirmed[0].confidence > report.created[0].confidence);

    // A read-only member cannot write into the group, by commit or by sharing an item there.
    let err = engine.memory_commit_with(&dan(), &chat, "chat-3", &with_group(&options));
    assert!(matches!(err, Err(EngineError::Forbidden(_))), "{err:?}");
    let err = engine.knowledge_save(
        &dan(),
        crate::knowledge::NewKnowledge {
            content: "sneaky".into(),
            scopes: vec!["group:alpha".into()],
            ..Default::default()
        },
    );
    assert!(matches!(err, Err(EngineError::Forbidden(_))), "{err:?}");
    // An outsider cannot commit to it at all.
    let err = engine.memory_commit_with(&carol(), &chat, "chat-4", &with_group(&options));
    assert!(matches!(err, Err(EngineError::NotFound(_))), "{err:?}");

    // Joint search (seed 003 §13.6): private + group in one ranking, or the group alone.
    let both = MemorySpaces {
        group_id: Some("alpha".into()),
        exclude_private: false,
    };
    let hits = engine
        .memory_search_in(&alice(), "status updates Friday", &[], 10, &both)
        .unwrap();
    let groups: Vec<Option<&str>> = hits.iter().map(|(n, _)| n.group_id.as_deref()).collect();
    assert!(
        groups.contains(&None) && groups.contains(&Some("alpha")),
        "{groups:?}"
    );
    let only_group = MemorySpaces {
        group_id: Some("alpha".into()),
        exclude_private: true,
    };
    let hits = engine
        .memory_search_in(&alice(), "status updates", &[], 10, &only_group)
        .unwrap();
    assert!(hits.iter().all(|(n, _)| n.group_id.is_some()), "{hits:?}");
    assert!(
        engine
            .memory_search_in(&carol(), "Friday", &[], 10, &both)
            .is_err()
    );

    // Without a group, shared conclusions are not filed as the user's own memories.
    let solo = engine
        .memory_commit_with(
            &carol(),
            &[said("We decided to use Rust.", "carol")],
            "chat-5",
            &CommitWith::default(),
        )
        .unwrap();
    assert!(solo.created.is_empty());
    assert_eq!(solo.skipped[0].reason, "no_group");

    // `ask` returns what is in neither list unwritten.
    let ask = GroupCommitOptions {
        group_categories: vec![],
        private_categories: vec![],
        default_scope: "ask".into(),
        ..GroupCommitOptions::new("alpha")
    };
    let r = engine
        .memory_commit_with(
            &bob(),
            &[said("We agreed to freeze the API.", "bob")],
            "chat-6",
            &with_group(&ask),
        )
        .unwrap();
    assert!(
        r.created.is_empty() && r.skipped[0].reason == "ask",
        "{r:?}"
    );

    // Members delete only what they wrote; the owner deletes anything; deleting the group
    // takes its memories with it.
    engine
        .memory_commit_with(
            &bob(),
            &[said("Decision: the API stays frozen until March.", "bob")],
            "chat-7",
            &with_group(&options),
        )
        .unwrap();
    let bobs = engine.group_memories(&bob(), "alpha").unwrap();
    let by_alice = bobs
        .iter()
        .find(|n| n.owner == "alice")
        .unwrap()
        .uri
        .clone();
    let by_bob = bobs.iter().find(|n| n.owner == "bob").unwrap().uri.clone();
    assert!(matches!(
        engine.memory_delete(&bob(), &by_alice),
        Err(EngineError::Forbidden(_))
    ));
    engine.memory_delete(&alice(), &by_bob).unwrap();
    let deleted = engine.group_delete(&alice(), "alpha").unwrap();
    assert_eq!(deleted.memories_deleted, 2);
    assert!(matches!(
        engine.memory_node(&alice(), &by_alice),
        Err(EngineError::NotFound(_))
    ));
    assert_eq!(
        engine.memories(&alice()).unwrap().len(),
        1,
        "private memories stay"
    );
}

fn with_group(options: &GroupCommitOptions) -> CommitWith<'_> {
    CommitWith {
        group: Some(options),
        ..CommitWith::default()
    }
}
