//! Table-driven visibility and write-permission tests.

use knowhub_authz::{
    AccountId, AgentId, Memberships, RequestContext, Role, ScopeSet, UserId, VisibleScopes,
    can_write,
};

fn ids<T: std::str::FromStr>(list: &str) -> Vec<T>
where
    T::Err: std::fmt::Debug,
{
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("valid id in test table"))
        .collect()
}

/// One row: the requester, their memberships, the resource, and whether it is visible.
struct Row {
    role: Role,
    account: &'static str,
    user: &'static str,
    agent: Option<&'static str>,
    teams: &'static str,
    projects: &'static str,
    orgs: &'static str,
    resource_account: &'static str,
    scopes: &'static str,
    visible: bool,
}

const fn row(
    role: Role,
    agent: Option<&'static str>,
    (teams, projects, orgs): (&'static str, &'static str, &'static str),
    resource_account: &'static str,
    scopes: &'static str,
    visible: bool,
) -> Row {
    Row {
        role,
        account: "acme",
        user: "alice",
        agent,
        teams,
        projects,
        orgs,
        resource_account,
        scopes,
        visible,
    }
}

const NONE: (&str, &str, &str) = ("", "", "");
const MEMBER: (&str, &str, &str) = ("search,infra", "apollo", "eng");

#[rustfmt::skip]
const TABLE: &[Row] = &[
    // --- USER: own, agent, memberships, public ---
    row(Role::User, None,          NONE,   "acme",  "user:alice",              true),
    row(Role::User, None,          NONE,   "acme",  "user:bob",                false),
    row(Role::User, None,          NONE,   "acme",  "public",                  true),
    row(Role::User, None,          NONE,   "acme",  "team:search",             false),
    row(Role::User, None,          MEMBER, "acme",  "team:search",             true),
    row(Role::User, None,          MEMBER, "acme",  "team:infra",              true),
    row(Role::User, None,          MEMBER, "acme",  "team:hr",                 false),
    row(Role::User, None,          MEMBER, "acme",  "project:apollo",          true),
    row(Role::User, None,          MEMBER, "acme",  "project:gemini",          false),
    row(Role::User, None,          MEMBER, "acme",  "org:eng",                 true),
    row(Role::User, None,          MEMBER, "acme",  "org:sales",               false),
    row(Role::User, Some("bot"),   NONE,   "acme",  "agent:bot",               true),
    row(Role::User, None,          NONE,   "acme",  "agent:bot",               false),
    row(Role::User, Some("bot"),   NONE,   "acme",  "agent:other",             false),
    // Ids of different kinds never match each other.
    row(Role::User, None,          MEMBER, "acme",  "project:search,org:apollo,team:eng", false),
    row(Role::User, None,          MEMBER, "acme",  "user:bob,team:hr,project:apollo",    true),
    row(Role::User, None,          MEMBER, "acme",  "user:bob,team:hr",        false),
    row(Role::User, None,          MEMBER, "acme",  "user:bob,public",         true),
    // Empty scope set: nobody but ADMIN/ROOT.
    row(Role::User, Some("bot"),   MEMBER, "acme",  "",                        false),
    // Cross-account: not even own-looking or public scopes.
    row(Role::User, None,          MEMBER, "other", "public",                  false),
    row(Role::User, None,          MEMBER, "other", "user:alice",              false),
    row(Role::User, None,          MEMBER, "other", "team:search",             false),
    // --- ADMIN: everything in their account, nothing outside ---
    row(Role::Admin, None,         NONE,   "acme",  "user:bob",                true),
    row(Role::Admin, None,         NONE,   "acme",  "team:hr",                 true),
    row(Role::Admin, None,         NONE,   "acme",  "",                        true),
    row(Role::Admin, None,         MEMBER, "other", "public",                  false),
    row(Role::Admin, None,         NONE,   "other", "",                        false),
    // --- ROOT: everything everywhere ---
    row(Role::Root, None,          NONE,   "acme",  "user:bob",                true),
    row(Role::Root, None,          NONE,   "acme",  "",                        true),
    row(Role::Root, None,          NONE,   "other", "team:hr",                 true),
    row(Role::Root, None,          NONE,   "other", "",                        true),
];

fn context(row: &Row) -> (RequestContext, Memberships) {
    let ctx = RequestContext {
        account: row.account.parse().expect("account"),
        user: row.user.parse().expect("user"),
        agent: row.agent.map(|a| a.parse().expect("agent")),
        role: row.role,
        session: None,
        trace_id: "test".to_owned(),
    };
    let memberships = Memberships {
        teams: ids(row.teams),
        projects: ids(row.projects),
        orgs: ids(row.orgs),
        groups: Vec::new(),
    };
    (ctx, memberships)
}

#[test]
fn visibility_table() {
    assert!(TABLE.len() >= 20);
    let mut failures = Vec::new();
    for (i, row) in TABLE.iter().enumerate() {
        let (ctx, memberships) = context(row);
        let visible = VisibleScopes::for_context(&ctx, &memberships);
        let scopes: ScopeSet = row.scopes.parse().expect("scopes");
        let resource_account: AccountId = row.resource_account.parse().expect("account");
        let got = visible.allows(&resource_account, &scopes);
        if got != row.visible {
            failures.push(format!(
                "row {i}: {} agent={:?} teams={:?} projects={:?} orgs={:?} resource={}/{:?}: expected {}, got {got}",
                row.role,
                row.agent,
                row.teams,
                row.projects,
                row.orgs,
                row.resource_account,
                row.scopes,
                row.visible
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn visible_scope_set_contents() {
    let (ctx, memberships) = context(&row(Role::User, Some("bot"), MEMBER, "acme", "", false));
    let visible = VisibleScopes::for_context(&ctx, &memberships);
    assert_eq!(
        visible.scopes().to_string(),
        "user:alice,agent:bot,project:apollo,team:infra,team:search,org:eng,public"
    );
    assert!(!visible.sees_everything());
    assert_eq!(visible.role(), Role::User);
    assert_eq!(visible.account().as_str(), "acme");

    let (mut ctx, memberships) = context(&row(Role::User, None, NONE, "acme", "", false));
    let visible = VisibleScopes::for_context(&ctx, &memberships);
    assert_eq!(visible.scopes().to_string(), "user:alice,public");
    ctx.role = Role::Admin;
    assert!(VisibleScopes::for_context(&ctx, &memberships).sees_everything());
    ctx.role = Role::Root;
    assert!(VisibleScopes::for_context(&ctx, &memberships).sees_everything());
}

#[test]
fn matched_priority_prefers_personal_scopes() {
    let (ctx, memberships) = context(&row(Role::Admin, None, MEMBER, "acme", "", false));
    let visible = VisibleScopes::for_context(&ctx, &memberships);
    let p = |s: &str| visible.matched_priority(&s.parse().expect("scopes"));
    assert_eq!(p("public,team:search,user:alice"), Some(0));
    assert_eq!(p("public,team:search"), Some(3));
    assert_eq!(p("public"), Some(5));
    // An admin can read bob's private item, but it matched none of their scopes.
    assert_eq!(p("user:bob"), None);
    assert_eq!(p(""), None);
}

/// (role, requester account, requester user, owner account, owner, may write)
#[rustfmt::skip]
const WRITE_TABLE: &[(Role, &str, &str, &str, &str, bool)] = &[
    (Role::User,  "acme", "alice", "acme",  "alice", true),
    (Role::User,  "acme", "alice", "acme",  "bob",   false),
    (Role::User,  "acme", "alice", "other", "alice", false),
    (Role::Admin, "acme", "carol", "acme",  "bob",   true),
    (Role::Admin, "acme", "carol", "other", "bob",   false),
    (Role::Root,  "acme", "root",  "other", "bob",   true),
    (Role::Root,  "acme", "root",  "acme",  "bob",   true),
];

#[test]
fn write_table() {
    for (i, &(role, account, user, owner_account, owner, expected)) in
        WRITE_TABLE.iter().enumerate()
    {
        let ctx = RequestContext {
            account: account.parse().expect("account"),
            user: user.parse().expect("user"),
            agent: Some(AgentId::new("bot").expect("agent")),
            role,
            session: Some("s".to_owned()),
            trace_id: "t".to_owned(),
        };
        let owner: UserId = owner.parse().expect("owner");
        let owner_account: AccountId = owner_account.parse().expect("owner account");
        assert_eq!(
            can_write(&ctx, &owner, &owner_account),
            expected,
            "write row {i}"
        );
    }
}

#[test]
fn role_parse_and_display() {
    for (input, role) in [
        ("ROOT", Role::Root),
        ("root", Role::Root),
        ("Admin", Role::Admin),
        ("aDmIn", Role::Admin),
        ("USER", Role::User),
        ("user", Role::User),
    ] {
        let parsed: Role = input.parse().expect("role");
        assert_eq!(parsed, role);
        assert_eq!(parsed.to_string(), input.to_uppercase());
    }
    for bad in ["", "superuser", " user", "USER ", "roots"] {
        assert!(bad.parse::<Role>().is_err(), "{bad:?}");
    }
    assert_eq!(
        serde_json::to_string(&Role::Admin).expect("json"),
        "\"ADMIN\""
    );
    assert_eq!(
        serde_json::from_str::<Role>("\"root\"").expect("json"),
        Role::Root
    );
}

/// Group spaces (seed 003 §13.4.1): members in any role see `group:<id>`; non-members do not;
/// ADMIN sees every group of their account, never another account's.
#[test]
fn group_space_visibility() {
    // (role, groups the user is a member of, resource account, scopes, visible)
    let table: &[(Role, &[&str], &str, &str, bool)] = &[
        (Role::User, &["alpha"], "acme", "group:alpha", true),
        (Role::User, &["alpha", "beta"], "acme", "group:beta", true),
        (Role::User, &["alpha"], "acme", "group:beta", false),
        (Role::User, &[], "acme", "group:alpha", false),
        (Role::User, &["alpha"], "other", "group:alpha", false),
        (Role::User, &["alpha"], "acme", "team:alpha", false),
        (Role::Admin, &[], "acme", "group:alpha", true),
        (Role::Admin, &[], "other", "group:alpha", false),
        (Role::Root, &[], "other", "group:alpha", true),
    ];
    for (i, (role, groups, account, scopes, expected)) in table.iter().enumerate() {
        let ctx = RequestContext {
            account: "acme".parse().expect("account"),
            user: "alice".parse().expect("user"),
            agent: None,
            role: *role,
            session: None,
            trace_id: "test".to_owned(),
        };
        let memberships = Memberships {
            groups: groups.iter().map(|g| g.parse().expect("group")).collect(),
            ..Memberships::default()
        };
        let visible = VisibleScopes::for_context(&ctx, &memberships);
        let got = visible.allows(
            &account.parse().expect("account"),
            &scopes.parse().expect("scopes"),
        );
        assert_eq!(
            got, *expected,
            "row {i}: {role} {groups:?} → {account}/{scopes}"
        );
    }
}
