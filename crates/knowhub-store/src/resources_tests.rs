//! Tests of the resources domain: round trip, sealed secrets kept as bytes, visibility and
//! expiry inside the query.

use super::*;

fn res(id: &str, owner: &str, scopes: &[&str], expires_at_ms: Option<i64>) -> ResourceRecord {
    ResourceRecord {
        seq: 0,
        id: id.into(),
        content_type: "credential".into(),
        title: format!("title of {id}"),
        description: String::new(),
        owner: owner.into(),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        tags: BTreeMap::from([("site".to_string(), "a".to_string())]),
        metadata: serde_json::json!({"language": "python"}),
        body: "public body".into(),
        secure: Some(SealedSecret {
            key_id: "k1".into(),
            nonce: vec![1; 24],
            ciphertext: vec![9, 8, 7],
        }),
        expires_at_ms,
        created_at_ms: 0,
        updated_at_ms: 0,
    }
}

fn ids(records: &[ResourceRecord]) -> Vec<&str> {
    let mut v: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    v.sort_unstable();
    v
}

#[test]
fn round_trip_update_delete() {
    let mut s = Store::open_in_memory().unwrap();
    let stored = s.insert_resource(&res("r1", "alice", &[], None)).unwrap();
    assert!(stored.seq > 0 && stored.created_at_ms > 0);
    assert_eq!(stored.secure.as_ref().unwrap().ciphertext, vec![9, 8, 7]);
    assert_eq!(stored.metadata["language"], "python");
    // Duplicate ids are refused.
    assert!(s.insert_resource(&res("r1", "bob", &[], None)).is_err());

    let mut changed = stored.clone();
    changed.body = "new body".into();
    changed.secure = None;
    let updated = s.update_resource(&changed).unwrap().unwrap();
    assert_eq!(updated.body, "new body");
    assert_eq!(updated.secure, None);
    assert_eq!(updated.seq, stored.seq);
    assert!(
        s.update_resource(&res("nope", "alice", &[], None))
            .unwrap()
            .is_none()
    );

    assert!(s.delete_resource("r1").unwrap());
    assert!(!s.delete_resource("r1").unwrap());
    assert!(s.resource("r1").unwrap().is_none());
}

#[test]
fn visibility_and_expiry_are_in_the_query() {
    let mut s = Store::open_in_memory().unwrap();
    s.insert_resource(&res("own", "alice", &[], None)).unwrap();
    s.insert_resource(&res("team", "bob", &["team:hr"], None))
        .unwrap();
    s.insert_resource(&res("pub", "bob", &["public"], None))
        .unwrap();
    s.insert_resource(&res("private", "bob", &[], None))
        .unwrap();
    s.insert_resource(&res("old", "alice", &[], Some(1_000)))
        .unwrap();
    s.insert_resource(&res("later", "alice", &[], Some(i64::MAX)))
        .unwrap();

    type Reader = Option<(Vec<String>, String)>;
    let cases: &[(&str, Reader, Option<i64>, Vec<&str>)] = &[
        (
            "alice (team:hr), live",
            Some((
                vec!["user:alice".into(), "team:hr".into(), "public".into()],
                "alice".into(),
            )),
            Some(5_000),
            vec!["later", "own", "pub", "team"],
        ),
        (
            "alice, with expired",
            Some((vec!["user:alice".into(), "public".into()], "alice".into())),
            None,
            vec!["later", "old", "own", "pub"],
        ),
        (
            "carol (public only)",
            Some((vec!["user:carol".into(), "public".into()], "carol".into())),
            Some(5_000),
            vec!["pub"],
        ),
        (
            "admin",
            None,
            Some(5_000),
            vec!["later", "own", "private", "pub", "team"],
        ),
    ];
    for (name, reader, live, want) in cases {
        let filter = ResourceFilter {
            reader: reader.clone(),
            live_at_ms: *live,
            ..Default::default()
        };
        let got = s.list_resources(&filter, 100, 0).unwrap();
        assert_eq!(ids(&got), *want, "{name}");
    }

    let carol = ResourceFilter {
        reader: Some((vec!["user:carol".into(), "public".into()], "carol".into())),
        ..Default::default()
    };
    assert!(s.resource_matching("private", &carol).unwrap().is_none());
    assert!(s.resource_matching("pub", &carol).unwrap().is_some());

    let typed = ResourceFilter {
        content_types: vec!["code".into()],
        ..Default::default()
    };
    assert!(s.list_resources(&typed, 100, 0).unwrap().is_empty());
    let tagged = ResourceFilter {
        tags: BTreeMap::from([("site".to_string(), "a".to_string())]),
        owner: Some("bob".into()),
        ..Default::default()
    };
    assert_eq!(
        ids(&s.list_resources(&tagged, 100, 0).unwrap()),
        vec!["private", "pub", "team"]
    );
}

#[test]
fn sealed_secret_debug_shows_no_bytes() {
    let sealed = res("r", "a", &[], None).secure.unwrap();
    let text = format!("{sealed:?}");
    assert!(text.contains("ciphertext_len: 3"), "{text}");
    assert!(!text.contains("[9, 8, 7]"), "{text}");
}
