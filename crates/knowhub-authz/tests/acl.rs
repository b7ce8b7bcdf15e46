//! Folder ACL inheritance, document overrides and path normalisation.

use knowhub_authz::{AclPath, AclSource, AclTree, AuthzError, ScopeSet, UserId};

fn set(s: &str) -> ScopeSet {
    s.parse().expect("scope set")
}

fn tree() -> AclTree {
    let mut acl = AclTree::new(set("user:owner"));
    acl.set_folder_acl("", set("team:all")).expect("root");
    acl.set_folder_acl("docs", set("public")).expect("docs");
    acl.set_folder_acl("docs/hr/salaries", set("team:hr"))
        .expect("salaries");
    acl.set_document_acl("docs/hr/salaries/readme.md", set("public,team:hr"))
        .expect("readme");
    acl.set_document_acl("docs/secret.md", ScopeSet::new())
        .expect("secret");
    acl
}

#[test]
fn nearest_ancestor_wins() {
    let acl = tree();
    #[rustfmt::skip]
    let cases = [
        ("top.md",                             "team:all"),
        ("other/deep/x.md",                    "team:all"),
        ("docs/a.md",                          "public"),
        ("docs/hr/handbook.md",                "public"),
        ("docs/hr/salaries/2026.xlsx",         "team:hr"),
        ("docs/hr/salaries/q1/march.xlsx",     "team:hr"),
        ("docs/hr/salaries/readme.md",         "team:hr,public"),
        ("docs/secret.md",                     ""),
        // A folder named like a document's prefix is not its ancestor.
        ("docs-old/a.md",                      "team:all"),
        ("docs/hr/salaries-public/a.md",       "public"),
    ];
    for (path, expected) in cases {
        assert_eq!(
            acl.effective_scopes(path).expect(path),
            set(expected),
            "{path}"
        );
    }
}

#[test]
fn effective_reports_source() {
    let acl = tree();
    let e = acl.effective("docs/hr/salaries/q1/m.xlsx").expect("path");
    let folder = AclPath::parse("docs/hr/salaries").expect("path");
    assert_eq!(e.source, AclSource::Folder(&folder));
    assert_eq!(
        acl.effective("docs/secret.md").expect("path").source,
        AclSource::Document
    );
    assert_eq!(
        acl.effective("x.md").expect("path").source,
        AclSource::Folder(&AclPath::root())
    );

    let bare = AclTree::owner_default(&UserId::new("bob").expect("id"));
    let e = bare.effective("any/where.md").expect("path");
    assert_eq!(e.source, AclSource::Default);
    assert_eq!(e.scopes, &set("user:bob"));
}

#[test]
fn clearing_restores_inheritance() {
    let mut acl = tree();
    assert!(acl.clear_folder_acl("docs/hr/salaries/").expect("clear"));
    assert!(!acl.clear_folder_acl("docs/hr/salaries").expect("clear"));
    assert_eq!(
        acl.effective_scopes("docs/hr/salaries/2026.xlsx")
            .expect("p"),
        set("public")
    );
    assert!(acl.clear_document_acl("./docs/secret.md").expect("clear"));
    assert_eq!(
        acl.effective_scopes("docs/secret.md").expect("p"),
        set("public")
    );
    assert!(acl.clear_folder_acl("").expect("clear"));
    assert_eq!(
        acl.effective_scopes("top.md").expect("p"),
        set("user:owner")
    );
    acl.set_default(set("org:acme"));
    assert_eq!(acl.effective_scopes("top.md").expect("p"), set("org:acme"));
}

#[test]
fn path_normalisation() {
    #[rustfmt::skip]
    let ok = [
        ("a/b/c.md",         "a/b/c.md"),
        ("./a/b/c.md",       "a/b/c.md"),
        ("a/./b/./c.md",     "a/b/c.md"),
        ("a//b///c.md",      "a/b/c.md"),
        ("a/b/",             "a/b"),
        ("a/b//",            "a/b"),
        ("",                 ""),
        (".",                ""),
        ("./",               ""),
        ("...",              "..."),
        ("a/..b/c..",        "a/..b/c.."),
        ("资料/报告.pdf",     "资料/报告.pdf"),
    ];
    for (input, expected) in ok {
        assert_eq!(
            AclPath::parse(input).expect(input).as_str(),
            expected,
            "{input:?}"
        );
    }
    let parent = AclPath::parse("a/b/c")
        .expect("p")
        .parent()
        .expect("parent");
    assert_eq!(parent.as_str(), "a/b");
    assert_eq!(
        AclPath::parse("a").expect("p").parent(),
        Some(AclPath::root())
    );
    assert_eq!(AclPath::root().parent(), None);
}

#[test]
fn path_attacks_are_rejected() {
    for attack in [
        "..",
        "../etc/passwd",
        "a/../../b",
        "a/b/..",
        "docs/hr/../../secret.md",
        "./../x",
        "/etc/passwd",
        "//server/share/x",
        "C:/Windows/x",
        "c:x",
        "a\\..\\b",
        "..\\x",
        "a/b\0.md",
        "a/\nb",
    ] {
        let err = AclPath::parse(attack).expect_err(attack);
        assert!(matches!(err, AuthzError::InvalidPath { .. }), "{attack:?}");
    }
    let mut acl = tree();
    assert!(acl.effective_scopes("docs/hr/salaries/../../a.md").is_err());
    assert!(acl.set_folder_acl("../outside", set("public")).is_err());
    assert!(acl.set_document_acl("/abs.md", set("public")).is_err());
    // The root is a folder, never a document.
    assert!(acl.effective_scopes("").is_err());
    assert!(acl.effective_scopes("./").is_err());
    assert!(acl.set_document_acl(".", set("public")).is_err());
}

#[test]
fn equivalent_spellings_share_one_entry() {
    let mut acl = AclTree::new(ScopeSet::new());
    let a = acl.set_folder_acl("x/y/", set("team:a")).expect("p");
    let b = acl.set_folder_acl("./x//y", set("team:b")).expect("p");
    assert_eq!(a, b);
    assert_eq!(acl.effective_scopes("x/y/z.md").expect("p"), set("team:b"));
}

#[test]
fn version_bumps_only_on_change() {
    let mut acl = AclTree::new(ScopeSet::new());
    assert_eq!(acl.version(), 0);
    acl.set_folder_acl("a", set("public")).expect("p");
    assert_eq!(acl.version(), 1);
    acl.set_folder_acl("a/", set("public")).expect("p");
    assert_eq!(acl.version(), 1, "same ACL again is not a change");
    acl.set_folder_acl("a", set("team:x")).expect("p");
    assert_eq!(acl.version(), 2);
    acl.set_document_acl("a/b.md", set("public")).expect("p");
    assert_eq!(acl.version(), 3);
    assert!(!acl.clear_folder_acl("nope").expect("p"));
    assert_eq!(acl.version(), 3);
    acl.clear_document_acl("a/b.md").expect("p");
    assert_eq!(acl.version(), 4);
    acl.set_default(ScopeSet::new());
    assert_eq!(acl.version(), 4);
    acl.set_default(set("public"));
    assert_eq!(acl.version(), 5);
    // Failed mutations do not bump the version.
    assert!(acl.set_folder_acl("..", set("public")).is_err());
    assert_eq!(acl.version(), 5);
}

#[test]
fn serde_round_trip() {
    let acl = tree();
    let json = serde_json::to_string(&acl).expect("json");
    let back: AclTree = serde_json::from_str(&json).expect("json");
    assert_eq!(back, acl);
    // Unsafe paths in stored data are rejected on load.
    let tampered = json.replace("docs/secret.md", "../secret.md");
    assert!(serde_json::from_str::<AclTree>(&tampered).is_err());
}
