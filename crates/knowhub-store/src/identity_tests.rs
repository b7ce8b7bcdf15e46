//! Tests of the identity domain: users, memberships, API keys and ACLs.

use knowhub_authz::{KeyHash, OrgId, ProjectId, Role, ScopeSet, TeamId, UserId};

use super::*;

fn uid(s: &str) -> UserId {
    UserId::new(s).unwrap()
}

fn scopes(s: &str) -> ScopeSet {
    s.parse().unwrap()
}

fn store_with_users(users: &[(&str, Role)]) -> Store {
    let mut store = Store::open_in_memory().unwrap();
    for (id, role) in users {
        assert!(
            store
                .add_user(&uid(id), &format!("User {id}"), *role)
                .unwrap()
        );
    }
    store
}

#[test]
fn user_lifecycle_and_role_changes() {
    enum Op {
        Add(&'static str, Role),
        SetRole(&'static str, Role),
        Remove(&'static str),
    }
    type Active = &'static [(&'static str, Role)];
    // (operation, expected result, active users afterwards as (id, role))
    let steps: &[(Op, bool, Active)] = &[
        (
            Op::Add("alice", Role::Admin),
            true,
            &[("alice", Role::Admin)],
        ),
        (
            Op::Add("alice", Role::User),
            false,
            &[("alice", Role::Admin)],
        ),
        (
            Op::Add("bob", Role::User),
            true,
            &[("alice", Role::Admin), ("bob", Role::User)],
        ),
        (
            Op::SetRole("bob", Role::Admin),
            true,
            &[("alice", Role::Admin), ("bob", Role::Admin)],
        ),
        (
            Op::SetRole("carol", Role::Admin),
            false,
            &[("alice", Role::Admin), ("bob", Role::Admin)],
        ),
        (Op::Remove("bob"), true, &[("alice", Role::Admin)]),
        (Op::Remove("bob"), false, &[("alice", Role::Admin)]),
        (
            Op::SetRole("bob", Role::Root),
            false,
            &[("alice", Role::Admin)],
        ),
        // Ids of removed users are not reused.
        (Op::Add("bob", Role::User), false, &[("alice", Role::Admin)]),
        (
            Op::Add("root", Role::Root),
            true,
            &[("alice", Role::Admin), ("root", Role::Root)],
        ),
    ];
    let mut store = Store::open_in_memory().unwrap();
    for (i, (op, expected, active)) in steps.iter().enumerate() {
        let got = match op {
            Op::Add(id, role) => store.add_user(&uid(id), "Name", *role),
            Op::SetRole(id, role) => store.set_role(&uid(id), *role),
            Op::Remove(id) => store.remove_user(&uid(id)),
        }
        .unwrap();
        assert_eq!(got, *expected, "step {i}");
        let listed: Vec<(String, Role)> = store
            .users()
            .unwrap()
            .into_iter()
            .map(|u| (u.id.to_string(), u.role))
            .collect();
        let want: Vec<(String, Role)> = active.iter().map(|(i, r)| (i.to_string(), *r)).collect();
        assert_eq!(listed, want, "step {i}");
    }
    let bob = store.user(&uid("bob")).unwrap().unwrap();
    assert_eq!(bob.role, Role::Admin);
    assert!(bob.removed_at.is_some());
    let alice = store.user(&uid("alice")).unwrap().unwrap();
    assert_eq!(alice.display_name, "Name");
    assert_eq!(alice.removed_at, None);
    assert!(alice.created_at > 0);
    assert_eq!(store.user(&uid("nobody")).unwrap(), None);
}

#[test]
fn api_keys_resolve_only_for_active_users_with_current_role() {
    let mut store = store_with_users(&[("alice", Role::User), ("bob", Role::User)]);
    let (ka, kb) = (KeyHash::of("kh_alice"), KeyHash::of("kh_bob"));
    assert!(store.add_api_key(&uid("alice"), &ka, "laptop").unwrap());
    assert!(store.add_api_key(&uid("bob"), &kb, "ci").unwrap());
    // The same hash cannot be stored twice; unknown users get no keys.
    assert!(!store.add_api_key(&uid("bob"), &ka, "stolen").unwrap());
    assert!(
        !store
            .add_api_key(&uid("nobody"), &KeyHash::of("x"), "x")
            .unwrap()
    );

    let cases: &[(&KeyHash, Option<(&str, Role)>)] = &[
        (&ka, Some(("alice", Role::User))),
        (&kb, Some(("bob", Role::User))),
        (&KeyHash::of("kh_unknown"), None),
    ];
    for (hash, want) in cases {
        let got = store.user_for_key_hash(hash).unwrap();
        assert_eq!(got, want.map(|(u, r)| (uid(u), r)), "{hash}");
    }

    // A role change shows on the next lookup.
    assert!(store.set_role(&uid("alice"), Role::Admin).unwrap());
    assert_eq!(
        store.user_for_key_hash(&ka).unwrap(),
        Some((uid("alice"), Role::Admin))
    );

    // A removed user's key no longer resolves, and they get no new keys.
    assert!(store.remove_user(&uid("bob")).unwrap());
    assert_eq!(store.user_for_key_hash(&kb).unwrap(), None);
    let left: i64 = store
        .conn
        .query_row(
            "SELECT COUNT(*) FROM api_keys WHERE user_id = 'bob'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
    assert!(
        !store
            .add_api_key(&uid("bob"), &KeyHash::of("kh_new"), "x")
            .unwrap()
    );
    assert!(
        !store
            .rotate_api_keys(&uid("bob"), &KeyHash::of("kh_new"))
            .unwrap()
    );
    assert_eq!(
        store.user_for_key_hash(&KeyHash::of("kh_new")).unwrap(),
        None
    );
}

#[test]
fn rotation_invalidates_old_keys_at_once() {
    let mut store = store_with_users(&[("alice", Role::User), ("bob", Role::User)]);
    let old = [KeyHash::of("kh_old1"), KeyHash::of("kh_old2")];
    for (i, k) in old.iter().enumerate() {
        assert!(
            store
                .add_api_key(&uid("alice"), k, &format!("k{i}"))
                .unwrap()
        );
    }
    let bobs = KeyHash::of("kh_bob");
    assert!(store.add_api_key(&uid("bob"), &bobs, "bob").unwrap());

    let new = KeyHash::of("kh_new");
    assert!(store.rotate_api_keys(&uid("alice"), &new).unwrap());
    for k in &old {
        assert_eq!(store.user_for_key_hash(k).unwrap(), None, "{k}");
    }
    assert_eq!(
        store.user_for_key_hash(&new).unwrap(),
        Some((uid("alice"), Role::User))
    );
    // Other users' keys are untouched.
    assert_eq!(
        store.user_for_key_hash(&bobs).unwrap(),
        Some((uid("bob"), Role::User))
    );

    // Rotating onto a hash held by another user fails and keeps the current key.
    assert!(!store.rotate_api_keys(&uid("alice"), &bobs).unwrap());
    assert_eq!(
        store.user_for_key_hash(&new).unwrap(),
        Some((uid("alice"), Role::User))
    );
    assert_eq!(
        store.user_for_key_hash(&bobs).unwrap(),
        Some((uid("bob"), Role::User))
    );
    // Rotating onto the same key keeps it.
    assert!(store.rotate_api_keys(&uid("alice"), &new).unwrap());
    assert_eq!(
        store.user_for_key_hash(&new).unwrap(),
        Some((uid("alice"), Role::User))
    );
}

#[test]
fn memberships_round_trip() {
    let mut store = store_with_users(&[("alice", Role::User), ("bob", Role::User)]);
    let team = |s: &str| Group::Team(TeamId::new(s).unwrap());
    let project = |s: &str| Group::Project(ProjectId::new(s).unwrap());
    let org = |s: &str| Group::Org(OrgId::new(s).unwrap());
    // (user, group, add?, expected result)
    let ops = [
        ("alice", team("search"), true, true),
        ("alice", team("hr"), true, true),
        ("alice", team("hr"), true, false),
        ("alice", project("kb"), true, true),
        ("alice", org("acme"), true, true),
        // Same id, different kind: a different membership.
        ("alice", project("hr"), true, true),
        ("bob", team("hr"), true, true),
        ("alice", project("hr"), false, true),
        ("alice", project("hr"), false, false),
        ("nobody", team("hr"), true, false),
    ];
    for (i, (user, group, add, want)) in ops.iter().enumerate() {
        let got = if *add {
            store.add_membership(&uid(user), group)
        } else {
            store.remove_membership(&uid(user), group)
        }
        .unwrap();
        assert_eq!(got, *want, "op {i}");
    }
    let alice = store.memberships(&uid("alice")).unwrap();
    assert_eq!(
        alice.teams,
        vec![TeamId::new("hr").unwrap(), TeamId::new("search").unwrap()]
    );
    assert_eq!(alice.projects, vec![ProjectId::new("kb").unwrap()]);
    assert_eq!(alice.orgs, vec![OrgId::new("acme").unwrap()]);
    let bob = store.memberships(&uid("bob")).unwrap();
    assert_eq!(bob.teams, vec![TeamId::new("hr").unwrap()]);
    assert!(bob.projects.is_empty() && bob.orgs.is_empty());
    assert_eq!(
        store.memberships(&uid("nobody")).unwrap(),
        knowhub_authz::Memberships::default()
    );

    // Removed users keep no memberships and get no new ones.
    assert!(store.remove_user(&uid("bob")).unwrap());
    assert_eq!(
        store.memberships(&uid("bob")).unwrap(),
        knowhub_authz::Memberships::default()
    );
    assert!(!store.add_membership(&uid("bob"), &team("hr")).unwrap());
}

#[test]
fn acl_round_trip_into_tree_with_nested_restricted_subfolder() {
    let mut store = Store::open_in_memory().unwrap();
    let src = store.folder_source("/data/kb", "kb").unwrap();
    let other = store.folder_source("/data/other", "other").unwrap();
    assert!(store.set_folder_acl(src, "", &scopes("org:acme")).unwrap());
    assert!(
        store
            .set_folder_acl(src, "./handbook/", &scopes("public"))
            .unwrap()
    );
    assert!(
        store
            .set_folder_acl(src, "handbook//salaries", &scopes("team:hr,user:boss"))
            .unwrap()
    );
    assert!(
        store
            .set_document_acl(src, "handbook/salaries/summary.md", &scopes("team:finance"))
            .unwrap()
    );
    // Another source's ACLs do not leak into this tree.
    assert!(
        store
            .set_folder_acl(other, "handbook", &scopes("user:eve"))
            .unwrap()
    );

    let default = scopes("user:owner");
    let tree = store.acl_tree(src, default.clone()).unwrap();
    let expected = [
        ("top.md", "org:acme"),
        ("handbook/intro.md", "public"),
        ("handbook/salaries/2026.xlsx", "team:hr,user:boss"),
        ("handbook/salaries/deep/er/x.md", "team:hr,user:boss"),
        ("handbook/salaries/summary.md", "team:finance"),
        ("handbook/salaries-not/x.md", "public"),
    ];
    for (doc, want) in expected {
        assert_eq!(tree.effective_scopes(doc).unwrap(), scopes(want), "{doc}");
    }
    assert_eq!(
        store
            .acl_tree(other, default.clone())
            .unwrap()
            .effective_scopes("top.md")
            .unwrap(),
        default
    );

    // Clearing restores inheritance.
    assert!(
        store
            .clear_document_acl(src, "handbook/salaries/summary.md")
            .unwrap()
    );
    assert!(store.clear_folder_acl(src, "handbook").unwrap());
    assert!(store.clear_folder_acl(src, "").unwrap());
    let tree = store.acl_tree(src, default.clone()).unwrap();
    let expected = [
        ("top.md", "user:owner"),
        ("handbook/intro.md", "user:owner"),
        ("handbook/salaries/2026.xlsx", "team:hr,user:boss"),
        ("handbook/salaries/summary.md", "team:hr,user:boss"),
    ];
    for (doc, want) in expected {
        assert_eq!(tree.effective_scopes(doc).unwrap(), scopes(want), "{doc}");
    }
}

#[test]
fn unsafe_acl_paths_are_invalid_input() {
    let mut store = Store::open_in_memory().unwrap();
    let src = store.files_source().unwrap();
    let public = scopes("public");
    let bad_folders = ["../x", "/etc", "a/../b", "C:/x", "a\\b", "a\0b"];
    for path in bad_folders {
        assert!(
            matches!(
                store.set_folder_acl(src, path, &public),
                Err(StoreError::Invalid(_))
            ),
            "{path:?}"
        );
        assert!(
            matches!(
                store.set_document_acl(src, path, &public),
                Err(StoreError::Invalid(_))
            ),
            "{path:?}"
        );
    }
    for root in ["", ".", "./"] {
        assert!(matches!(
            store.set_document_acl(src, root, &public),
            Err(StoreError::Invalid(_))
        ));
        assert!(matches!(
            store.clear_document_acl(src, root),
            Err(StoreError::Invalid(_))
        ));
    }
    assert_eq!(store.acl_version().unwrap(), 0);
}

#[test]
fn acl_version_bumps_on_each_change_only() {
    enum Op {
        SetFolder(&'static str, &'static str),
        ClearFolder(&'static str),
        SetDoc(&'static str, &'static str),
        ClearDoc(&'static str),
        ReadTree,
    }
    // (operation, expected "changed", expected version afterwards)
    let steps = [
        (Op::ReadTree, false, 0),
        (Op::SetFolder("a", "public"), true, 1),
        (Op::SetFolder("a/", "public"), false, 1),
        (Op::SetFolder("a", "team:x"), true, 2),
        (Op::ReadTree, false, 2),
        (Op::SetDoc("a/d.md", "user:u"), true, 3),
        (Op::SetDoc("./a/d.md", "user:u"), false, 3),
        (Op::SetDoc("a/d.md", ""), true, 4),
        (Op::ClearDoc("a/d.md"), true, 5),
        (Op::ClearDoc("a/d.md"), false, 5),
        (Op::ClearFolder("a"), true, 6),
        (Op::ClearFolder("a"), false, 6),
        (Op::ClearFolder("never-set"), false, 6),
        (Op::ReadTree, false, 6),
    ];
    let mut store = Store::open_in_memory().unwrap();
    let src = store.files_source().unwrap();
    for (i, (op, changed, version)) in steps.into_iter().enumerate() {
        let got = match op {
            Op::SetFolder(p, s) => store.set_folder_acl(src, p, &scopes(s)).unwrap(),
            Op::ClearFolder(p) => store.clear_folder_acl(src, p).unwrap(),
            Op::SetDoc(p, s) => store.set_document_acl(src, p, &scopes(s)).unwrap(),
            Op::ClearDoc(p) => store.clear_document_acl(src, p).unwrap(),
            Op::ReadTree => {
                store.acl_tree(src, ScopeSet::new()).unwrap();
                false
            }
        };
        assert_eq!(got, changed, "step {i}");
        assert_eq!(store.acl_version().unwrap(), version, "step {i}");
    }
}

#[test]
fn corrupt_stored_values_name_their_row() {
    let mut store = store_with_users(&[("alice", Role::User)]);
    let src = store.files_source().unwrap();
    let key = KeyHash::of("kh_a");
    assert!(store.add_api_key(&uid("alice"), &key, "k").unwrap());
    store
        .conn
        .execute_batch(&format!(
            "INSERT INTO users (id, display_name, role, created_at) VALUES ('bad id', 'x', 'USER', 0);
             INSERT INTO memberships (user_id, kind, group_id) VALUES ('alice', 'team', 'a,b');
             INSERT INTO acl_entries (source_id, kind, path, scopes) VALUES ({}, 'folder', 'x', 'nonsense');",
            src.0
        ))
        .unwrap();
    let cases: Vec<(Result<()>, &str)> = vec![
        (store.users().map(drop), "users row of user \"bad id\""),
        (
            store.memberships(&uid("alice")).map(drop),
            "memberships row (alice, team, \"a,b\")",
        ),
        (
            store.acl_tree(src, ScopeSet::new()).map(drop),
            "acl_entries row",
        ),
    ];
    for (got, needle) in cases {
        match got {
            Err(StoreError::Corrupt(msg)) => assert!(msg.contains(needle), "{msg}"),
            other => panic!("expected Corrupt naming {needle:?}, got {other:?}"),
        }
    }
}

#[test]
fn identity_survives_reopening_and_its_migration_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (db, tables) = (dir.path().join("s.sqlite"), dir.path().join("t.sqlite"));
    let key = KeyHash::of("kh_alice");
    {
        let mut store = Store::open(&db, &tables).unwrap();
        let src = store.files_source().unwrap();
        assert!(store.add_user(&uid("alice"), "Alice", Role::Admin).unwrap());
        assert!(store.add_api_key(&uid("alice"), &key, "k").unwrap());
        assert!(store.set_folder_acl(src, "a", &scopes("public")).unwrap());
    }
    // Opening an existing store twice applies nothing again and keeps the data.
    for _ in 0..2 {
        let store = Store::open(&db, &tables).unwrap();
        assert_eq!(
            store.user_for_key_hash(&key).unwrap(),
            Some((uid("alice"), Role::Admin))
        );
        assert_eq!(store.acl_version().unwrap(), 1);
        let steps: i64 = store
            .conn
            .query_row(
                "SELECT COUNT(*) FROM migrations WHERE domain = 'identity'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(steps, 1);
    }
    let store = Store::open(&db, &tables).unwrap();
    store
        .conn
        .execute(
            "UPDATE migrations SET sql = sql || ' ' WHERE domain = 'identity'",
            [],
        )
        .unwrap();
    drop(store);
    match Store::open(&db, &tables) {
        Err(StoreError::MigrationEdited { domain, step }) => {
            assert_eq!((domain.as_str(), step), ("identity", 0));
        }
        other => panic!("expected MigrationEdited, got {other:?}"),
    }
}
