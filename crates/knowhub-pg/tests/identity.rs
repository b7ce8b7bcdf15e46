//! The identity domain in the team database: the same rules as the SQLite store's, and
//! changes made through one replica visible to the next request through another.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

mod common;

use common::cluster;
use knowhub_authz::{KeyHash, OrgId, ProjectId, Role, ScopeSet, TeamId, UserId};
use knowhub_pg::{Database, PgDocuments, PgError, PgIdentity};
use knowhub_store::Group;

fn uid(s: &str) -> UserId {
    UserId::new(s).unwrap()
}

fn scopes(s: &str) -> ScopeSet {
    s.parse().unwrap()
}

fn team(s: &str) -> Group {
    Group::Team(TeamId::new(s).unwrap())
}

#[test]
fn users_keys_and_memberships_follow_the_store_rules() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("ident").unwrap()).unwrap();
    let id = PgIdentity::new(&db);
    assert!(id.add_user(&uid("alice"), "Alice", Role::User).unwrap());
    assert!(!id.add_user(&uid("alice"), "Again", Role::Admin).unwrap());
    assert!(id.add_user(&uid("bob"), "Bob", Role::User).unwrap());
    assert!(id.set_role(&uid("alice"), Role::Admin).unwrap());
    assert!(!id.set_role(&uid("carol"), Role::Admin).unwrap());
    let users: Vec<(String, Role)> = id
        .users()
        .unwrap()
        .into_iter()
        .map(|u| (u.id.to_string(), u.role))
        .collect();
    assert_eq!(
        users,
        [("alice".into(), Role::Admin), ("bob".into(), Role::User)]
    );

    // Keys resolve to active users with their current role.
    let (ka, kb) = (KeyHash::of("kh_alice"), KeyHash::of("kh_bob"));
    assert!(id.add_api_key(&uid("alice"), &ka, "laptop").unwrap());
    assert!(id.add_api_key(&uid("bob"), &kb, "ci").unwrap());
    assert!(!id.add_api_key(&uid("bob"), &ka, "stolen").unwrap());
    assert!(
        !id.add_api_key(&uid("nobody"), &KeyHash::of("x"), "x")
            .unwrap()
    );
    assert_eq!(
        id.user_for_key_hash(&ka).unwrap(),
        Some((uid("alice"), Role::Admin))
    );
    assert_eq!(id.user_for_key_hash(&KeyHash::of("none")).unwrap(), None);
    assert_eq!(id.api_key_count().unwrap(), 2);

    // Rotation: old keys stop as the new one starts; onto someone else's hash changes nothing.
    let new = KeyHash::of("kh_new");
    assert!(id.rotate_api_keys(&uid("alice"), &new).unwrap());
    assert_eq!(id.user_for_key_hash(&ka).unwrap(), None);
    assert_eq!(
        id.user_for_key_hash(&new).unwrap(),
        Some((uid("alice"), Role::Admin))
    );
    assert!(!id.rotate_api_keys(&uid("alice"), &kb).unwrap());
    assert_eq!(
        id.user_for_key_hash(&new).unwrap(),
        Some((uid("alice"), Role::Admin))
    );

    // Memberships.
    let project = Group::Project(ProjectId::new("kb").unwrap());
    let org = Group::Org(OrgId::new("acme").unwrap());
    for (user, group, want) in [
        ("alice", team("search"), true),
        ("alice", team("hr"), true),
        ("alice", team("hr"), false),
        ("alice", project.clone(), true),
        ("alice", org, true),
        ("bob", team("hr"), true),
        ("nobody", team("hr"), false),
    ] {
        assert_eq!(
            id.add_membership(&uid(user), &group).unwrap(),
            want,
            "{user} {group:?}"
        );
    }
    assert!(id.remove_membership(&uid("alice"), &project).unwrap());
    assert!(!id.remove_membership(&uid("alice"), &project).unwrap());
    let alice = id.memberships(&uid("alice")).unwrap();
    assert_eq!(
        alice.teams,
        [TeamId::new("hr").unwrap(), TeamId::new("search").unwrap()]
    );
    assert!(alice.projects.is_empty());
    assert_eq!(alice.orgs, [OrgId::new("acme").unwrap()]);

    // A removed user keeps no keys or memberships, gets no new ones, and the id stays taken.
    assert!(id.remove_user(&uid("bob")).unwrap());
    assert!(!id.remove_user(&uid("bob")).unwrap());
    assert_eq!(id.user_for_key_hash(&kb).unwrap(), None);
    assert_eq!(id.memberships(&uid("bob")).unwrap(), Default::default());
    assert!(!id.add_membership(&uid("bob"), &team("hr")).unwrap());
    assert!(
        !id.add_api_key(&uid("bob"), &KeyHash::of("kh_b2"), "x")
            .unwrap()
    );
    assert!(
        !id.rotate_api_keys(&uid("bob"), &KeyHash::of("kh_b3"))
            .unwrap()
    );
    assert!(!id.add_user(&uid("bob"), "Bob again", Role::User).unwrap());
    assert!(id.user(&uid("bob")).unwrap().unwrap().removed_at.is_some());
}

#[test]
fn acls_build_the_policy_tree_and_the_version_moves_only_on_change() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("acl").unwrap()).unwrap();
    let id = PgIdentity::new(&db);
    let docs = PgDocuments::new(&db);
    let src = docs.folder_source("/data/kb", "kb").unwrap();
    let other = docs.folder_source("/data/other", "other").unwrap();
    id.add_user(&uid("alice"), "Alice", Role::User).unwrap();

    enum Op {
        SetFolder(&'static str, &'static str),
        ClearFolder(&'static str),
        SetDoc(&'static str, &'static str),
        ClearDoc(&'static str),
        Join(&'static str),
        Leave(&'static str),
        Role(Role),
        Key(&'static str),
        Read,
    }
    // (operation, expected "changed", expected version afterwards)
    let steps = [
        (Op::Read, false, 0),
        (Op::SetFolder("", "org:acme"), true, 1),
        (Op::SetFolder("./handbook/", "public"), true, 2),
        (Op::SetFolder("handbook", "public"), false, 2),
        (
            Op::SetFolder("handbook//salaries", "team:hr,user:boss"),
            true,
            3,
        ),
        (
            Op::SetDoc("handbook/salaries/summary.md", "team:finance"),
            true,
            4,
        ),
        (
            Op::SetDoc("./handbook/salaries/summary.md", "team:finance"),
            false,
            4,
        ),
        (Op::Read, false, 4),
        (Op::Join("hr"), true, 5),
        (Op::Join("hr"), false, 5),
        (Op::Role(Role::Admin), true, 6),
        (Op::Role(Role::Admin), true, 6),
        (Op::Key("kh_1"), true, 7),
        (Op::Leave("hr"), true, 8),
        (Op::Leave("hr"), false, 8),
        (Op::ClearDoc("handbook/salaries/summary.md"), true, 9),
        (Op::ClearDoc("handbook/salaries/summary.md"), false, 9),
        (Op::ClearFolder("never-set"), false, 9),
    ];
    for (i, (op, changed, version)) in steps.into_iter().enumerate() {
        let got = match op {
            Op::SetFolder(p, s) => id.set_folder_acl(src, p, &scopes(s)).unwrap(),
            Op::ClearFolder(p) => id.clear_folder_acl(src, p).unwrap(),
            Op::SetDoc(p, s) => id.set_document_acl(src, p, &scopes(s)).unwrap(),
            Op::ClearDoc(p) => id.clear_document_acl(src, p).unwrap(),
            Op::Join(t) => id.add_membership(&uid("alice"), &team(t)).unwrap(),
            Op::Leave(t) => id.remove_membership(&uid("alice"), &team(t)).unwrap(),
            Op::Role(r) => id.set_role(&uid("alice"), r).unwrap(),
            Op::Key(k) => id.add_api_key(&uid("alice"), &KeyHash::of(k), "k").unwrap(),
            Op::Read => {
                id.acl_tree(src, ScopeSet::new()).unwrap();
                false
            }
        };
        assert_eq!(got, changed, "step {i}");
        assert_eq!(id.permission_version().unwrap(), version, "step {i}");
    }

    assert!(
        id.set_folder_acl(other, "handbook", &scopes("user:eve"))
            .unwrap()
    );
    let tree = id.acl_tree(src, scopes("user:owner")).unwrap();
    for (doc, want) in [
        ("top.md", "org:acme"),
        ("handbook/intro.md", "public"),
        ("handbook/salaries/2026.xlsx", "team:hr,user:boss"),
        ("handbook/salaries/summary.md", "team:hr,user:boss"),
        ("handbook/salaries-not/x.md", "public"),
    ] {
        assert_eq!(tree.effective_scopes(doc).unwrap(), scopes(want), "{doc}");
    }

    // Unsafe paths are refused before they reach the database.
    for path in ["../x", "/etc", "a/../b", "a\\b", "a\0b"] {
        let err = id.set_folder_acl(src, path, &scopes("public")).unwrap_err();
        assert!(matches!(err, PgError::Invalid(_)), "{path:?}: {err}");
    }
    let err = id
        .set_document_acl(src, "./", &scopes("public"))
        .unwrap_err();
    assert!(matches!(err, PgError::Invalid(_)), "{err}");
}

#[test]
fn a_change_through_one_replica_governs_the_next_request_through_another() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("replicas").unwrap();
    let (a, b) = (
        PgIdentity::new(&Database::connect(&url).unwrap()),
        PgIdentity::new(&Database::connect(&url).unwrap()),
    );
    let docs = PgDocuments::new(&Database::connect(&url).unwrap());
    let src = docs.folder_source("/srv/kb", "kb").unwrap();
    let key = KeyHash::of("kh_alice");
    a.add_user(&uid("alice"), "Alice", Role::User).unwrap();
    a.add_api_key(&uid("alice"), &key, "k").unwrap();
    a.add_membership(&uid("alice"), &team("hr")).unwrap();
    a.set_folder_acl(src, "hr", &scopes("team:hr")).unwrap();
    let seen = |who: &PgIdentity| {
        (
            who.user_for_key_hash(&key).unwrap(),
            who.memberships(&uid("alice")).unwrap().teams.len(),
            who.acl_tree(src, ScopeSet::new())
                .unwrap()
                .effective_scopes("hr/pay.md")
                .unwrap(),
            who.permission_version().unwrap(),
        )
    };
    assert_eq!(seen(&a), seen(&b));

    // Each change through A, then the very next read through B.
    a.set_folder_acl(src, "hr", &scopes("user:boss")).unwrap();
    assert_eq!(seen(&b).2, scopes("user:boss"));
    a.remove_membership(&uid("alice"), &team("hr")).unwrap();
    assert_eq!(seen(&b).1, 0);
    a.set_role(&uid("alice"), Role::Admin).unwrap();
    assert_eq!(seen(&b).0, Some((uid("alice"), Role::Admin)));
    a.revoke_api_keys(&uid("alice")).unwrap();
    assert_eq!(seen(&b).0, None);
    assert_eq!(seen(&a), seen(&b));
}
