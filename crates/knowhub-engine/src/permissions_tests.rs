//! Read filters from folder ACLs, pushed into retrieval (keyword and semantic).

use std::path::PathBuf;
use std::sync::Arc;

use knowhub_authz::{AccountId, RequestContext, Role, TeamId, UserId};
use knowhub_store::Group;

use super::*;

fn ctx(user: &str, role: Role, account: &str) -> RequestContext {
    RequestContext {
        account: AccountId::new(account).unwrap(),
        user: UserId::new(user).unwrap(),
        agent: None,
        role,
        session: None,
        trace_id: "t".into(),
    }
}

fn setup() -> (tempfile::TempDir, Engine) {
    let fs = FakeFs::new();
    // Every file contains the probe word, so only the filter decides what is seen.
    fs.write(
        "/kb/handbook/leave.md",
        "# Leave\n\nprobeword: annual leave is 15 days.",
    );
    fs.write(
        "/kb/hr/salaries.md",
        "# Salaries\n\nprobeword: the salary bands.",
    );
    fs.write(
        "/kb/hr/open/jobs.md",
        "# Jobs\n\nprobeword: open positions.",
    );
    fs.write(
        "/kb/drafts/plan.md",
        "# Plan\n\nprobeword: a draft with no ACL.",
    );
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open_with(
        EngineConfig::new(dir.path()),
        Arc::new(fs),
        ModelSet::none(),
    )
    .unwrap();
    engine
        .ingest(
            &dev_context(),
            &[PathBuf::from("/kb")],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    {
        let mut store = engine.store();
        let source = store.sources().unwrap()[0].id;
        let set = |s: &str| s.parse::<knowhub_authz::ScopeSet>().unwrap();
        store
            .set_folder_acl(source, "handbook", &set("public"))
            .unwrap();
        store.set_folder_acl(source, "hr", &set("team:hr")).unwrap();
        store
            .set_folder_acl(source, "hr/open", &set("public"))
            .unwrap();
        for (user, role) in [
            ("alice", Role::User),
            ("bob", Role::User),
            ("ada", Role::Admin),
        ] {
            store
                .add_user(&UserId::new(user).unwrap(), user, role)
                .unwrap();
        }
        store
            .add_membership(
                &UserId::new("bob").unwrap(),
                &Group::Team(TeamId::new("hr").unwrap()),
            )
            .unwrap();
    }
    (dir, engine)
}

fn visible(engine: &Engine, c: &RequestContext) -> Vec<String> {
    let options = SearchOptions {
        limit: 50,
        ..SearchOptions::default()
    };
    let mut paths: Vec<String> = engine
        .search(c, "probeword", &options)
        .unwrap()
        .into_iter()
        .map(|h| h.path.trim_start_matches("/kb/").to_owned())
        .collect();
    paths.sort();
    paths
}

#[test]
fn folder_acls_decide_what_each_user_reads() {
    let (_dir, engine) = setup();
    let all = vec![
        "drafts/plan.md",
        "handbook/leave.md",
        "hr/open/jobs.md",
        "hr/salaries.md",
    ];
    let table: &[(&str, Role, &str, &[&str])] = &[
        // No team: public folders only; a folder without an ACL is nobody's (but admins').
        (
            "alice",
            Role::User,
            "default",
            &["handbook/leave.md", "hr/open/jobs.md"],
        ),
        // Team hr: the restricted folder too; its public subfolder stays public.
        (
            "bob",
            Role::User,
            "default",
            &["handbook/leave.md", "hr/open/jobs.md", "hr/salaries.md"],
        ),
        ("ada", Role::Admin, "default", &all),
        ("root", Role::Root, "other", &all),
        // An admin or user of another account reads nothing here, not even public.
        ("ada", Role::Admin, "other", &[]),
        ("bob", Role::User, "other", &[]),
    ];
    for (user, role, account, expected) in table {
        assert_eq!(
            visible(&engine, &ctx(user, *role, account)),
            expected.to_vec(),
            "{user} {role} @{account}"
        );
    }
    // A user the store does not know is not signed in at all.
    let err = engine
        .search(
            &ctx("mallory", Role::User, "default"),
            "probeword",
            &SearchOptions::default(),
        )
        .unwrap_err();
    assert!(matches!(err, EngineError::Unauthenticated(_)), "{err}");
}

#[test]
fn an_acl_change_is_visible_on_the_next_query() {
    let (_dir, engine) = setup();
    let alice = ctx("alice", Role::User, "default");
    assert!(!visible(&engine, &alice).contains(&"drafts/plan.md".to_owned()));
    {
        let mut store = engine.store();
        let source = store.sources().unwrap()[0].id;
        store
            .set_folder_acl(source, "drafts", &"user:alice".parse().unwrap())
            .unwrap();
        store
            .set_folder_acl(source, "handbook", &"team:hr".parse().unwrap())
            .unwrap();
    }
    let now = visible(&engine, &alice);
    assert!(now.contains(&"drafts/plan.md".to_owned()), "{now:?}");
    assert!(!now.contains(&"handbook/leave.md".to_owned()), "{now:?}");
}

#[test]
fn owners_read_what_they_add_and_only_they_or_admins_change_it() {
    let (_dir, engine) = setup();
    let fs_file = PathBuf::from("/kb/drafts/plan.md");
    // alice adds a private note of her own (no ACL covers it): she reads it, bob does not.
    let alice = ctx("alice", Role::User, "default");
    let bob = ctx("bob", Role::User, "default");
    // The folder was ingested by the dev ROOT user, so alice cannot replace its files…
    let report = engine
        .ingest(
            &alice,
            std::slice::from_ref(&fs_file),
            &IngestOptions {
                force: true,
                ..Default::default()
            },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.skipped, 1, "{report:?}");
    assert!(matches!(
        engine.remove(&alice, std::slice::from_ref(&fs_file)),
        Err(EngineError::NotFound(_))
    ));
    // …and an admin can.
    let ada = ctx("ada", Role::Admin, "default");
    let report = engine
        .ingest(
            &ada,
            std::slice::from_ref(&fs_file),
            &IngestOptions {
                force: true,
                ..Default::default()
            },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.updated, 1, "{report:?}");
    // A reserved id cannot be created (it would change what the root key or dev mode mean).
    for reserved in ["root", "default"] {
        assert!(
            engine
                .add_user(&ada, &UserId::new(reserved).unwrap(), "x", Role::User)
                .is_err()
        );
    }
    // Users cannot administer.
    assert!(matches!(
        engine.add_user(&bob, &UserId::new("eve").unwrap(), "eve", Role::User),
        Err(EngineError::Forbidden(_))
    ));
    assert!(matches!(
        engine.rebuild_index(&bob, &mut |_| {}),
        Err(EngineError::Forbidden(_))
    ));
    // But may rotate their own key.
    assert!(
        engine
            .rotate_api_key(&bob, &UserId::new("bob").unwrap())
            .is_ok()
    );
}

#[test]
fn a_users_own_upload_is_private_until_shared() {
    let fs = FakeFs::new();
    fs.write(
        "/home/alice/notes.md",
        "# Notes\n\nprobeword: alice's own notes.",
    );
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open_with(
        EngineConfig::new(dir.path()),
        Arc::new(fs),
        ModelSet::none(),
    )
    .unwrap();
    let admin = dev_context();
    for user in ["alice", "bob"] {
        engine
            .add_user(&admin, &UserId::new(user).unwrap(), user, Role::User)
            .unwrap();
    }
    let alice = ctx("alice", Role::User, "default");
    let bob = ctx("bob", Role::User, "default");
    let report = engine
        .ingest(
            &alice,
            &[PathBuf::from("/home/alice/notes.md")],
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.added, 1);
    assert_eq!(visible(&engine, &alice), ["/home/alice/notes.md"]);
    assert!(visible(&engine, &bob).is_empty());
    assert_eq!(engine.status(&bob).unwrap().store.documents, 0);
    // She may remove what she added.
    assert_eq!(
        engine
            .remove(&alice, &[PathBuf::from("/home/alice/notes.md")])
            .unwrap()
            .documents,
        1
    );
}

#[test]
fn folder_readers_previews_exactly_what_each_user_reads() {
    let (_dir, engine) = setup();
    let admin = dev_context();
    let readers = |folder: &str| -> Vec<(String, u64)> {
        engine
            .folder_readers(&admin, std::path::Path::new(folder))
            .unwrap()
            .readers
            .into_iter()
            .map(|r| (r.user, r.readable))
            .collect()
    };
    // hr/ holds salaries (team:hr) and open/jobs (public).
    let hr = readers("/kb/hr");
    assert!(hr.contains(&("alice".into(), 1)), "{hr:?}");
    assert!(hr.contains(&("bob".into(), 2)), "{hr:?}");
    assert!(hr.contains(&("ada".into(), 2)), "{hr:?}");
    // Nobody but admins reads a folder without an ACL.
    let drafts = readers("/kb/drafts");
    assert!(drafts.contains(&("alice".into(), 0)), "{drafts:?}");
    assert!(drafts.contains(&("ada".into(), 1)), "{drafts:?}");
    // Users cannot ask; groups are visible to the user themself and admins.
    let alice = ctx("alice", Role::User, "default");
    assert!(
        engine
            .folder_readers(&alice, std::path::Path::new("/kb/hr"))
            .is_err()
    );
    let bob = UserId::new("bob").unwrap();
    assert_eq!(engine.user_groups(&admin, &bob).unwrap(), ["team:hr"]);
    assert!(engine.user_groups(&alice, &bob).is_err());
    // Keys: rotate makes one, revoke removes it; users cannot revoke others' keys.
    engine.rotate_api_key(&admin, &bob).unwrap();
    assert!(engine.revoke_api_keys(&alice, &bob).is_err());
    assert_eq!(engine.revoke_api_keys(&admin, &bob).unwrap(), 1);
    assert_eq!(engine.revoke_api_keys(&admin, &bob).unwrap(), 0);
}
