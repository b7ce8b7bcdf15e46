//! Permission snapshot ids: stable, and sensitive to every input.

use knowhub_authz::{
    AccountId, AgentId, Memberships, PermissionSnapshot, RequestContext, Role, TeamId,
    VisibleScopes,
};

fn ctx() -> RequestContext {
    RequestContext {
        account: AccountId::new("acme").expect("id"),
        user: "alice".parse().expect("id"),
        agent: None,
        role: Role::User,
        session: Some("s-1".to_owned()),
        trace_id: "t-1".to_owned(),
    }
}

fn memberships() -> Memberships {
    Memberships {
        teams: vec![TeamId::new("b").expect("id"), TeamId::new("a").expect("id")],
        projects: vec!["p".parse().expect("id")],
        orgs: vec!["o".parse().expect("id")],
        groups: Vec::new(),
    }
}

fn snap(ctx: &RequestContext, m: &Memberships, version: u64) -> PermissionSnapshot {
    PermissionSnapshot::new(&VisibleScopes::for_context(ctx, m), version)
}

#[test]
fn stable() {
    let a = snap(&ctx(), &memberships(), 7);
    let b = snap(&ctx(), &memberships(), 7);
    assert_eq!(a, b);
    assert_eq!(a.to_string(), b.id_hex());
    assert_eq!(a.to_string().len(), 64);

    // Membership order and duplicates don't matter (the scope set is sorted and deduped).
    let mut m = memberships();
    m.teams.reverse();
    m.teams.push(TeamId::new("a").expect("id"));
    assert_eq!(snap(&ctx(), &m, 7), a);

    // Session and trace id are not permission state.
    let mut c = ctx();
    c.session = None;
    c.trace_id = "other".to_owned();
    assert_eq!(snap(&c, &memberships(), 7), a);
}

#[test]
fn pinned_value() {
    // Guards against accidental changes to the canonical encoding: audit records stored by
    // earlier builds must keep naming the same state. Update only with a new domain version.
    let a = snap(&ctx(), &memberships(), 7);
    assert_eq!(a.to_string(), PINNED);
}

const PINNED: &str = "7ef5c73c033fb66747d67cbef50debe9766ba210e056815d3103af0b740a3ecc";

#[test]
fn changes_when_anything_changes() {
    let base = snap(&ctx(), &memberships(), 7);
    let mut seen = vec![base];
    let mut check = |s: PermissionSnapshot, what: &str| {
        assert!(!seen.contains(&s), "{what} did not change the id");
        seen.push(s);
    };

    check(snap(&ctx(), &memberships(), 8), "ACL version");
    let mut c = ctx();
    c.account = AccountId::new("other").expect("id");
    check(snap(&c, &memberships(), 7), "account");
    let mut c = ctx();
    c.role = Role::Admin;
    check(snap(&c, &memberships(), 7), "role ADMIN");
    c.role = Role::Root;
    check(snap(&c, &memberships(), 7), "role ROOT");
    let mut c = ctx();
    c.user = "bob".parse().expect("id");
    check(snap(&c, &memberships(), 7), "user");
    let mut c = ctx();
    c.agent = Some(AgentId::new("bot").expect("id"));
    check(snap(&c, &memberships(), 7), "agent");
    let mut m = memberships();
    m.teams.pop();
    check(snap(&ctx(), &m, 7), "team removed");
    let mut m = memberships();
    m.projects.push("q".parse().expect("id"));
    check(snap(&ctx(), &m, 7), "project added");
    let mut m = memberships();
    m.orgs.clear();
    check(snap(&ctx(), &m, 7), "org removed");
    let mut m = memberships();
    m.groups.push("g".parse().expect("id"));
    check(snap(&ctx(), &m, 7), "group space joined");
    // Same id under a different kind.
    let mut m = memberships();
    m.teams.clear();
    m.projects = vec![
        "a".parse().expect("id"),
        "b".parse().expect("id"),
        "p".parse().expect("id"),
    ];
    check(snap(&ctx(), &m, 7), "kind swapped");
}
