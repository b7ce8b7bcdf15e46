//! Group spaces in the team database: the same scenario against the SQLite store and against
//! PostgreSQL must observe the same results; then group membership as a permission input
//! (`memberships().groups`, `permission_version`) across replicas.

#![allow(clippy::print_stderr, clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;

use common::cluster;
use knowhub_authz::{AgentId, GroupId, GroupRole, Role, ScopeSet, UserId};
use knowhub_pg::{Database, PgDocuments, PgIdentity, PgStore};
use knowhub_store::backend::{GroupStore, KnowledgeStore, ResourceStore};
use knowhub_store::{
    GroupMemberRecord, GroupSpaceCreation, GroupSpaceRecord, KnowledgeEval, KnowledgeRecord,
    ResourceRecord, Store, StoreError,
};

fn uid(s: &str) -> UserId {
    UserId::new(s).unwrap()
}

fn gid(s: &str) -> GroupId {
    GroupId::new(s).unwrap()
}

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

fn shown<T: Debug>(r: Result<T, StoreError>) -> Raw {
    Raw(match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(StoreError::Corrupt(_)) => "Err(Corrupt)".into(),
        Err(StoreError::Sqlite(_) | StoreError::Database(_)) => "Err(Database)".into(),
        Err(e) => format!("Err(other: {e})"),
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

/// The calls of other domains a group scenario needs, on either backend.
trait Fixture {
    fn groups(&mut self) -> &mut dyn GroupStore;
    fn knowledge(&mut self) -> &mut dyn KnowledgeStore;
    fn resources(&mut self) -> &mut dyn ResourceStore;
    fn add_user(&mut self, id: &str) -> bool;
    fn remove_user(&mut self, id: &str) -> bool;
    fn group_ids_of(&mut self, id: &str) -> Vec<GroupId>;
    fn share_folder(&mut self, root: &str, scopes: &str);
}

impl Fixture for Store {
    fn groups(&mut self) -> &mut dyn GroupStore {
        self
    }
    fn knowledge(&mut self) -> &mut dyn KnowledgeStore {
        self
    }
    fn resources(&mut self) -> &mut dyn ResourceStore {
        self
    }
    fn add_user(&mut self, id: &str) -> bool {
        Store::add_user(self, &uid(id), id, Role::User).unwrap()
    }
    fn remove_user(&mut self, id: &str) -> bool {
        Store::remove_user(self, &uid(id)).unwrap()
    }
    fn group_ids_of(&mut self, id: &str) -> Vec<GroupId> {
        self.memberships(&uid(id)).unwrap().groups
    }
    fn share_folder(&mut self, root: &str, scopes: &str) {
        let src = self.folder_source(root, root).unwrap();
        self.set_folder_acl(src, "", &scopes.parse::<ScopeSet>().unwrap())
            .unwrap();
    }
}

struct Pg {
    store: PgStore,
    identity: PgIdentity,
    documents: PgDocuments,
}

impl Pg {
    fn new(db: &Database, replica: &str) -> Pg {
        Pg {
            store: PgStore::new(db, replica),
            identity: PgIdentity::new(db),
            documents: PgDocuments::new(db),
        }
    }
}

impl Fixture for Pg {
    fn groups(&mut self) -> &mut dyn GroupStore {
        &mut self.store
    }
    fn knowledge(&mut self) -> &mut dyn KnowledgeStore {
        &mut self.store
    }
    fn resources(&mut self) -> &mut dyn ResourceStore {
        &mut self.store
    }
    fn add_user(&mut self, id: &str) -> bool {
        self.identity.add_user(&uid(id), id, Role::User).unwrap()
    }
    fn remove_user(&mut self, id: &str) -> bool {
        self.identity.remove_user(&uid(id)).unwrap()
    }
    fn group_ids_of(&mut self, id: &str) -> Vec<GroupId> {
        self.identity.memberships(&uid(id)).unwrap().groups
    }
    fn share_folder(&mut self, root: &str, scopes: &str) {
        let src = self.documents.folder_source(root, root).unwrap();
        self.identity
            .set_folder_acl(src, "", &scopes.parse::<ScopeSet>().unwrap())
            .unwrap();
    }
}

fn group(id: &str, space: &str, kind: &str) -> GroupSpaceRecord {
    GroupSpaceRecord {
        id: gid(id),
        space: space.into(),
        name: format!("Group {id}"),
        kind: kind.into(),
        created_by: uid("alice"),
        created_at: 42,
    }
}

fn member(user: &str, role: GroupRole, agent: Option<&str>, joined_at: i64) -> GroupMemberRecord {
    GroupMemberRecord {
        user: uid(user),
        agent: agent.map(|a| AgentId::new(a).unwrap()),
        role,
        joined_at,
    }
}

/// Members with "now" join times made comparable.
fn members(s: &dyn GroupStore, id: &str) -> Raw {
    shown(s.group_members(&gid(id)).map(|v| {
        v.into_iter()
            .map(|m| {
                let joined = if m.joined_at > 1_600_000_000_000 {
                    "now".to_string()
                } else {
                    m.joined_at.to_string()
                };
                format!(
                    "{} {:?} {} {joined}",
                    m.user,
                    m.agent.map(|a| a.to_string()),
                    m.role
                )
            })
            .collect::<Vec<_>>()
    }))
}

fn space_ids(r: Result<Vec<GroupSpaceRecord>, StoreError>) -> Raw {
    shown(r.map(|v| v.into_iter().map(|g| g.id.to_string()).collect::<Vec<_>>()))
}

fn scoped_item(id: &str, scope: &str) -> KnowledgeRecord {
    KnowledgeRecord {
        seq: 0,
        id: id.into(),
        message_id: String::new(),
        types: vec!["tool".into()],
        task: "t".into(),
        tags: BTreeMap::new(),
        scopes: vec![scope.into()],
        owner: "alice".into(),
        content: "c".into(),
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

fn scoped_resource(id: &str, scope: &str) -> ResourceRecord {
    ResourceRecord {
        seq: 0,
        id: id.into(),
        content_type: "code".into(),
        title: "t".into(),
        description: String::new(),
        owner: "alice".into(),
        scopes: vec![scope.into()],
        tags: BTreeMap::new(),
        metadata: serde_json::json!({}),
        body: String::new(),
        secure: None,
        expires_at_ms: None,
        created_at_ms: 0,
        updated_at_ms: 0,
    }
}

fn group_scenario(f: &mut dyn Fixture) -> Log {
    let mut log = Log::default();
    // Ids whose byte order differs from a natural-language collation's.
    for u in ["alice", "bob", "B", "a_1", "b-x", "bx", "carol", "dave"] {
        assert!(f.add_user(u));
    }
    let s = f.groups();
    let alpha = group("alpha", "space-alpha", "channel");
    log.add(
        "create alpha",
        shown(s.create_group_space(
            &alpha,
            &[
                member("alice", GroupRole::Owner, None, 5),
                member("bob", GroupRole::Readonly, None, 0),
                member("b-x", GroupRole::Member, Some("agent-1"), 7),
                member("bx", GroupRole::Member, None, 8),
                member("B", GroupRole::Admin, None, 9),
                member("a_1", GroupRole::Member, None, 10),
            ],
        )),
    );
    log.add("same id", shown(s.create_group_space(&alpha, &[])));
    log.add(
        "same space name",
        shown(s.create_group_space(&group("alpha2", "space-alpha", "chat"), &[])),
    );
    let zeta = group("zeta", "space-zeta", "project");
    log.add(
        "unknown member",
        shown(s.create_group_space(
            &zeta,
            &[
                member("alice", GroupRole::Owner, None, 1),
                member("nobody", GroupRole::Member, None, 1),
            ],
        )),
    );
    log.add("rolled back", shown(s.group_space(&gid("zeta"))));
    log.add(
        "bad kind",
        shown(s.create_group_space(&group("bad", "space-bad", "forum"), &[])),
    );
    for (id, space) in [
        ("zeta", "space-zeta"),
        ("Beta", "space-Beta"),
        ("beta", "space-beta"),
        ("a-c", "space-a-c"),
        ("ac", "space-ac"),
    ] {
        log.add(
            format!("create {id}"),
            shown(s.create_group_space(
                &group(id, space, "chat"),
                &[member("dave", GroupRole::Owner, None, 3)],
            )),
        );
    }
    log.add("get alpha", shown(s.group_space(&gid("alpha"))));
    log.add("get missing", shown(s.group_space(&gid("nope"))));
    log.add("by name", shown(s.group_space_by_name("space-Beta")));
    log.add("by missing name", shown(s.group_space_by_name("alpha")));
    log.add("all spaces", space_ids(s.group_spaces(None)));
    log.add(
        "dave's spaces",
        space_ids(s.group_spaces(Some(&uid("dave")))),
    );
    log.add("bob's spaces", space_ids(s.group_spaces(Some(&uid("bob")))));
    log.add(
        "carol's spaces",
        space_ids(s.group_spaces(Some(&uid("carol")))),
    );
    log.add("members, owners first", members(s, "alpha"));
    log.add("members of none", members(s, "nope"));
    for (g, u) in [
        ("alpha", "bob"),
        ("alpha", "B"),
        ("alpha", "carol"),
        ("nope", "bob"),
    ] {
        log.add(
            format!("role {g} {u}"),
            shown(s.group_role(&gid(g), &uid(u))),
        );
    }

    // Role and agent changes keep the join time; new members join; strangers do not.
    let upserts = [
        (
            "alpha",
            member("bob", GroupRole::Member, Some("agent-2"), 123),
        ),
        (
            "alpha",
            member("bob", GroupRole::Member, Some("agent-2"), 123),
        ),
        ("alpha", member("carol", GroupRole::Admin, None, 11)),
        ("alpha", member("nobody", GroupRole::Member, None, 1)),
        ("nope", member("carol", GroupRole::Member, None, 1)),
    ];
    for (g, m) in upserts {
        log.add(
            format!("upsert {g} {}", m.user),
            shown(s.upsert_group_member(&gid(g), &m)),
        );
    }
    log.add("members after upserts", members(s, "alpha"));
    for u in ["alice", "bob", "carol", "dave", "nobody"] {
        log.add(format!("groups of {u}"), f.group_ids_of(u));
    }

    // A removed user leaves every group and cannot come back.
    log.add("remove carol", f.remove_user("carol"));
    log.add("groups of removed", f.group_ids_of("carol"));
    let s = f.groups();
    log.add(
        "carol's role",
        shown(s.group_role(&gid("alpha"), &uid("carol"))),
    );
    log.add(
        "removed rejoins",
        shown(s.upsert_group_member(&gid("alpha"), &member("carol", GroupRole::Member, None, 1))),
    );
    log.add(
        "removed founds",
        shown(s.create_group_space(
            &group("eta", "space-eta", "chat"),
            &[member("carol", GroupRole::Owner, None, 1)],
        )),
    );
    log.add(
        "remove bob",
        shown(s.remove_group_member(&gid("alpha"), &uid("bob"))),
    );
    log.add(
        "remove bob again",
        shown(s.remove_group_member(&gid("alpha"), &uid("bob"))),
    );
    log.add(
        "remove from none",
        shown(s.remove_group_member(&gid("nope"), &uid("alice"))),
    );
    log.add("members after removals", members(s, "alpha"));

    // Scopes in use: ACLs as SQLite's LIKE sees them, item and resource scopes exactly.
    f.share_folder("/kb", "team:hr,group:alphaX1");
    f.knowledge()
        .insert_knowledge(&scoped_item("k", "group:kn"))
        .unwrap();
    f.resources()
        .insert_resource(&scoped_resource("r", "group:res"))
        .unwrap();
    let s = f.groups();
    for scope in [
        "group:alphaX1",
        "group:ALPHAx1",
        "group:alpha_1",
        "group:alpha%",
        "group:alpha",
        "team:h",
        "team:hr",
        "group:kn",
        "group:KN",
        "group:res",
        "group:re",
        "group:alpha\\X1",
        "",
    ] {
        log.add(format!("in use {scope:?}"), shown(s.scope_in_use(scope)));
    }

    // Deleting a group takes its memberships along.
    log.add("delete alpha", shown(s.delete_group_space(&gid("alpha"))));
    log.add(
        "delete alpha again",
        shown(s.delete_group_space(&gid("alpha"))),
    );
    log.add("members of deleted", members(s, "alpha"));
    log.add("spaces left", space_ids(s.group_spaces(None)));
    for u in ["alice", "bob", "dave"] {
        log.add(format!("groups of {u} at the end"), f.group_ids_of(u));
    }
    log
}

#[test]
fn group_spaces_behave_as_in_the_sqlite_store() {
    let Some(pg) = cluster() else { return };
    let db = Database::connect(&pg.create_database("groups_parity").unwrap()).unwrap();
    let sqlite = group_scenario(&mut Store::open_in_memory().unwrap());
    let postgres = group_scenario(&mut Pg::new(&db, "replica-a"));
    assert_same(&sqlite, &postgres);
}

#[test]
fn group_membership_is_a_permission_input_seen_by_every_replica() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("groups_permissions").unwrap();
    let mut a = Pg::new(&Database::connect(&url).unwrap(), "replica-a");
    let b = Pg::new(&Database::connect(&url).unwrap(), "replica-b");
    for u in ["alice", "bob"] {
        assert!(a.add_user(u));
    }
    let version = || b.identity.permission_version().unwrap();
    let groups_of = |u: &str| b.identity.memberships(&uid(u)).unwrap().groups;
    let g = gid("alpha");

    // Creating a group counts its members, not the group itself.
    let v0 = version();
    assert_eq!(
        a.store
            .create_group_space(&group("empty", "space-empty", "chat"), &[])
            .unwrap(),
        GroupSpaceCreation::Created
    );
    assert_eq!(version(), v0);
    assert_eq!(
        a.store
            .create_group_space(
                &group("alpha", "space-alpha", "channel"),
                &[
                    member("alice", GroupRole::Owner, None, 0),
                    member("bob", GroupRole::Readonly, None, 0),
                ],
            )
            .unwrap(),
        GroupSpaceCreation::Created
    );
    assert_eq!(version(), v0 + 2);
    assert_eq!(groups_of("bob"), std::slice::from_ref(&g));
    // A refused creation changes nothing.
    assert_eq!(
        a.store
            .create_group_space(
                &group("beta", "space-beta", "chat"),
                &[
                    member("bob", GroupRole::Owner, None, 0),
                    member("nobody", GroupRole::Member, None, 0),
                ],
            )
            .unwrap(),
        GroupSpaceCreation::InactiveUser(uid("nobody"))
    );
    assert_eq!(version(), v0 + 2);
    assert_eq!(groups_of("bob"), std::slice::from_ref(&g));

    // The same role again is no change; a new role is.
    let readonly = member("bob", GroupRole::Readonly, None, 0);
    assert!(a.store.upsert_group_member(&g, &readonly).unwrap());
    assert_eq!(version(), v0 + 2);
    let promoted = member("bob", GroupRole::Admin, None, 0);
    assert!(a.store.upsert_group_member(&g, &promoted).unwrap());
    assert_eq!(version(), v0 + 3);
    assert_eq!(
        b.store.group_role(&g, &uid("bob")).unwrap(),
        Some(GroupRole::Admin)
    );

    // Leaving, removal of the user, and deletion of the group each count.
    assert!(a.store.remove_group_member(&g, &uid("bob")).unwrap());
    assert_eq!(version(), v0 + 4);
    assert!(groups_of("bob").is_empty());
    assert!(!a.store.remove_group_member(&g, &uid("bob")).unwrap());
    assert_eq!(version(), v0 + 4);
    assert!(a.store.upsert_group_member(&g, &promoted).unwrap());
    assert_eq!(version(), v0 + 5);
    // The user row and the group membership: two changes in one transaction.
    assert!(a.remove_user("bob"));
    assert_eq!(version(), v0 + 7);
    assert!(groups_of("bob").is_empty());
    assert_eq!(groups_of("alice"), std::slice::from_ref(&g));
    assert!(a.store.delete_group_space(&g).unwrap());
    assert_eq!(version(), v0 + 8);
    assert!(groups_of("alice").is_empty());
    assert!(b.store.group_space(&g).unwrap().is_none());
}

#[test]
fn concurrent_removal_never_leaves_a_removed_user_in_a_group() {
    let Some(pg) = cluster() else { return };
    let url = pg.create_database("groups_race").unwrap();
    let mut a = Pg::new(&Database::connect(&url).unwrap(), "replica-a");
    for round in 0..20 {
        let user = format!("u{round}");
        assert!(a.add_user(&user));
        let g = group(&format!("g{round}"), &format!("space-{round}"), "chat");
        a.store.create_group_space(&g, &[]).unwrap();
        let joiner = {
            let (url, user, id) = (url.clone(), user.clone(), g.id.clone());
            std::thread::spawn(move || {
                let mut s = PgStore::new(&Database::connect(&url).unwrap(), "replica-b");
                s.upsert_group_member(&id, &member(&user, GroupRole::Member, None, 0))
                    .unwrap()
            })
        };
        let removed = a.remove_user(&user);
        let joined = joiner.join().unwrap();
        assert!(removed);
        assert!(
            a.store.group_role(&g.id, &uid(&user)).unwrap().is_none(),
            "round {round}: joined={joined}"
        );
    }
}
