//! Scope parsing, display, serde, sets and priority ranking.

use knowhub_authz::{AuthzError, Scope, ScopeSet, TeamId, UserId, rank_by_scope_priority};

#[test]
fn scope_round_trips() {
    for s in [
        "user:alice",
        "agent:bot-1",
        "project:apollo",
        "team:search",
        "org:eng",
        "group:grp_abc123",
        "public",
        "user:a:b",
        "team:检索组",
    ] {
        let scope: Scope = s.parse().expect(s);
        assert_eq!(scope.to_string(), s);
        let json = serde_json::to_string(&scope).expect("json");
        assert_eq!(json, format!("\"{s}\""));
        assert_eq!(serde_json::from_str::<Scope>(&json).expect("json"), scope);
    }
}

#[test]
fn scope_rejects_malformed() {
    for bad in [
        "",
        "user",
        "user:",
        "user: alice",
        "user:al ice",
        "user:a,b",
        "User:alice",
        "guild:x",
        "Group:x",
        "group:",
        "public:x",
        "Public",
        " public",
        "team:\u{0}x",
    ] {
        let err = bad.parse::<Scope>().expect_err(bad);
        assert!(
            matches!(err, AuthzError::InvalidScope { .. }),
            "{bad:?}: {err}"
        );
        assert!(!err.to_string().is_empty());
    }
    assert!(serde_json::from_str::<Scope>("\"user:\"").is_err());
    let long = format!("user:{}", "x".repeat(257));
    assert!(long.parse::<Scope>().is_err());
}

#[test]
fn id_validation() {
    assert!(UserId::new("alice").is_ok());
    assert!(UserId::new("").is_err());
    assert!(TeamId::new("a b").is_err());
    assert!(TeamId::new("a,b").is_err());
    assert!(TeamId::new("a\tb").is_err());
    let err = UserId::new("").expect_err("empty");
    assert_eq!(err.to_string(), "invalid user id \"\": must not be empty");
    assert!(serde_json::from_str::<UserId>("\"a b\"").is_err());
}

#[test]
fn scope_set_is_sorted_and_deduped() {
    let set: ScopeSet = "public,team:b,user:z,team:a,public,team:b"
        .parse()
        .expect("set");
    assert_eq!(set.len(), 4);
    assert_eq!(set.to_string(), "user:z,team:a,team:b,public");
    assert_eq!(
        set.to_string().parse::<ScopeSet>().expect("round trip"),
        set
    );
    assert!(set.contains(&Scope::Public));
    assert_eq!(set.best_priority(), Some(0));

    let json = serde_json::to_string(&set).expect("json");
    assert_eq!(json, r#"["user:z","team:a","team:b","public"]"#);
    // Deserialising normalises order and duplicates.
    let from_json: ScopeSet =
        serde_json::from_str(r#"["public","team:b","user:z","team:a","public"]"#).expect("json");
    assert_eq!(from_json, set);

    let empty: ScopeSet = "".parse().expect("empty");
    assert!(empty.is_empty());
    assert_eq!(empty.best_priority(), None);
    assert_eq!(empty.to_string(), "");
    assert!("a,,b".parse::<ScopeSet>().is_err());
    assert!("public,".parse::<ScopeSet>().is_err());
    assert!("public, team:a".parse::<ScopeSet>().is_err());

    let mut s = ScopeSet::new();
    assert!(s.insert(Scope::Public));
    assert!(!s.insert(Scope::Public));
    assert!(s.remove(&Scope::Public));
    assert!(!s.remove(&Scope::Public));
}

#[test]
fn scope_set_intersection() {
    let p = |s: &str| s.parse::<ScopeSet>().expect("set");
    assert!(p("team:a,public").intersects(&p("public")));
    assert!(p("user:x,team:c").intersects(&p("team:a,team:b,team:c")));
    assert!(!p("team:a,team:b").intersects(&p("team:c,project:a,org:a")));
    assert!(!p("").intersects(&p("public")));
    assert!(!p("public").intersects(&p("")));
}

#[test]
fn priority_order() {
    let order = [
        "user:u",
        "project:p",
        "agent:a",
        "team:t",
        "org:o",
        "public",
    ];
    let priorities: Vec<u8> = order
        .iter()
        .map(|s| s.parse::<Scope>().expect("scope").priority())
        .collect();
    assert_eq!(priorities, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn ranking_is_stable() {
    let mut items: Vec<(&str, Scope)> = [
        ("a", "public"),
        ("b", "team:t"),
        ("c", "user:u"),
        ("d", "team:s"),
        ("e", "public"),
        ("f", "project:p"),
        ("g", "org:o"),
        ("h", "agent:x"),
        ("i", "user:v"),
    ]
    .into_iter()
    .map(|(n, s)| (n, s.parse().expect("scope")))
    .collect();
    rank_by_scope_priority(&mut items, |(_, scope)| scope);
    let names: String = items.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, "cifhbdgae");
}
