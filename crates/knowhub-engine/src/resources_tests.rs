//! Resources through the engine: who gets the secure body, NotFound vs Forbidden, expiry,
//! encryption at rest (no plaintext in the database file or the audit log), tampering, and
//! the key file's permissions.

use std::sync::Arc;

use knowhub_authz::{RequestContext, Role, TeamId, UserId};
use knowhub_store::Group;

use super::*;
use crate::test_support::{ctx, engine_with_users};

const SECRET: &str = "账号:user@example.com 密码:SecurePass123-zz9";

fn alice() -> RequestContext {
    ctx("alice", Role::User)
}
fn bob() -> RequestContext {
    ctx("bob", Role::User)
}
fn carol() -> RequestContext {
    ctx("carol", Role::User)
}
fn ada() -> RequestContext {
    ctx("ada", Role::Admin)
}

/// alice, bob: team:hr; carol: nothing; ada: ADMIN. In-memory key unless `file_key`.
fn setup(file_key: bool) -> (tempfile::TempDir, Engine) {
    let (dir, engine) = engine_with_users(
        &FakeFs::new(),
        ModelSet::none(),
        &[
            ("alice", Role::User),
            ("bob", Role::User),
            ("carol", Role::User),
            ("ada", Role::Admin),
        ],
    );
    if !file_key {
        engine.set_key_source(Arc::new(MemoryKeySource::new(
            SecretKey::generate().unwrap(),
        )));
    }
    {
        let mut store = engine.store();
        for user in ["alice", "bob"] {
            store
                .add_membership(
                    &UserId::new(user).unwrap(),
                    &Group::Team(TeamId::new("hr").unwrap()),
                )
                .unwrap();
        }
    }
    (dir, engine)
}

fn credential(scopes: &[&str], expires_at: Option<&str>) -> NewResource {
    NewResource {
        content_type: "credential".into(),
        title: "某网站测试账号".into(),
        body: "使用方法:直接登录即可".into(),
        secure_body: Some(SecureBody::new(SECRET)),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        expires_at: expires_at.map(str::to_owned),
        ..Default::default()
    }
}

#[derive(Debug, PartialEq)]
enum Want {
    Secret,
    NoSecret,
    NotFound,
}

#[test]
fn who_gets_the_secure_body() {
    let (_dir, engine) = setup(false);
    let private = engine
        .resource_save(&alice(), credential(&[], None))
        .unwrap();
    let team = engine
        .resource_save(&alice(), credential(&["team:hr"], None))
        .unwrap();
    let public = engine
        .resource_save(&alice(), credential(&["public"], None))
        .unwrap();
    assert!(private.id.starts_with("resource-"), "{}", private.id);
    assert!(private.has_secure_body && private.secure_body.is_none());

    let cases = [
        ("owner, private", alice(), &private, Want::Secret),
        ("admin, private", ada(), &private, Want::Secret),
        ("team member, private", bob(), &private, Want::NotFound),
        ("stranger, private", carol(), &private, Want::NotFound),
        ("owner, team", alice(), &team, Want::Secret),
        ("team member, team", bob(), &team, Want::NoSecret),
        ("stranger, team", carol(), &team, Want::NotFound),
        ("stranger, public", carol(), &public, Want::NoSecret),
        ("admin, public", ada(), &public, Want::Secret),
    ];
    for (name, who, res, want) in cases {
        let got = engine.resource_get(&who, &res.id);
        match want {
            Want::Secret => {
                let r = got.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(
                    r.secure_body.as_ref().map(SecureBody::expose),
                    Some(SECRET),
                    "{name}"
                );
                assert_eq!(r.body, "使用方法:直接登录即可", "{name}");
            }
            Want::NoSecret => {
                let r = got.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(r.secure_body.is_none(), "{name}");
                assert!(r.has_secure_body, "{name}");
                let json = serde_json::to_string(&r).unwrap();
                assert!(!json.contains("SecurePass123"), "{name}: {json}");
            }
            Want::NotFound => {
                assert!(
                    matches!(got, Err(EngineError::NotFound(_))),
                    "{name}: {got:?}"
                );
            }
        }
    }

    // Lists never carry secure bodies, and show only what the caller may see.
    let cases = [(alice(), 3usize), (bob(), 2), (carol(), 1), (ada(), 3)];
    for (who, n) in cases {
        let list = engine
            .resource_list(&who, &ResourceListOptions::default())
            .unwrap();
        assert_eq!(list.len(), n, "{}", who.user);
        assert!(list.iter().all(|r| r.secure_body.is_none()));
    }
}

#[test]
fn writes_are_owner_or_admin_only() {
    let (_dir, engine) = setup(false);
    let team = engine
        .resource_save(&alice(), credential(&["team:hr"], None))
        .unwrap();
    let private = engine
        .resource_save(&alice(), credential(&[], None))
        .unwrap();
    let change = || ResourceUpdate {
        body: Some("changed".into()),
        ..Default::default()
    };
    let cases: [(&str, RequestContext, &Resource, &str); 4] = [
        ("team member, visible", bob(), &team, "forbidden"),
        ("stranger, invisible", carol(), &team, "not_found"),
        ("team member, invisible", bob(), &private, "not_found"),
        ("admin", ada(), &team, "ok"),
    ];
    for (name, who, res, want) in cases {
        let update = engine.resource_update(&who, &res.id, change());
        let kind = |r: &Result<()>| match r {
            Ok(()) => "ok",
            Err(EngineError::Forbidden(_)) => "forbidden",
            Err(EngineError::NotFound(_)) => "not_found",
            Err(_) => "other",
        };
        assert_eq!(kind(&update.map(|_| ())), want, "update: {name}");
        if want != "ok" {
            let delete = engine.resource_delete(&who, &res.id);
            assert_eq!(kind(&delete), want, "delete: {name}");
        }
    }
    // A user cannot share with a scope they are not in.
    let err = engine
        .resource_save(&carol(), credential(&["team:hr"], None))
        .unwrap_err();
    assert!(matches!(err, EngineError::Forbidden(_)), "{err}");

    // The owner replaces the secret and deletes.
    engine
        .resource_update(
            &alice(),
            &private.id,
            ResourceUpdate {
                secure_body: Some(SecureBody::new("new secret")),
                ..Default::default()
            },
        )
        .unwrap();
    let got = engine.resource_get(&alice(), &private.id).unwrap();
    assert_eq!(got.secure_body.unwrap().expose(), "new secret");
    engine
        .resource_update(
            &alice(),
            &private.id,
            ResourceUpdate {
                clear_secure_body: true,
                ..Default::default()
            },
        )
        .unwrap();
    let got = engine.resource_get(&alice(), &private.id).unwrap();
    assert!(!got.has_secure_body && got.secure_body.is_none());
    engine.resource_delete(&alice(), &private.id).unwrap();
    assert!(matches!(
        engine.resource_get(&alice(), &private.id),
        Err(EngineError::NotFound(_))
    ));
}

#[test]
fn expired_resources_are_refused_and_unlisted() {
    let (_dir, engine) = setup(false);
    let expired = engine
        .resource_save(
            &alice(),
            credential(&["public"], Some("2020-01-01T00:00:00Z")),
        )
        .unwrap();
    let live = engine
        .resource_save(
            &alice(),
            credential(&["public"], Some("2999-01-01T00:00:00+08:00")),
        )
        .unwrap();
    assert_eq!(expired.expires_at.as_deref(), Some("2020-01-01T00:00:00Z"));
    for who in [alice(), ada(), carol()] {
        let err = engine.resource_get(&who, &expired.id).unwrap_err();
        assert!(matches!(err, EngineError::Forbidden(_)), "{err}");
        assert!(err.to_string().contains("expired"), "{err}");
        assert!(engine.resource_get(&who, &live.id).is_ok());
        let ids: Vec<String> = engine
            .resource_list(&who, &ResourceListOptions::default())
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, vec![live.id.clone()]);
    }
    // Invisible and expired is still NotFound (expiry says nothing to strangers).
    let private = engine
        .resource_save(&alice(), credential(&[], Some("2020-01-01T00:00:00Z")))
        .unwrap();
    assert!(matches!(
        engine.resource_get(&carol(), &private.id),
        Err(EngineError::NotFound(_))
    ));
    // The owner can renew it.
    engine
        .resource_update(
            &alice(),
            &expired.id,
            ResourceUpdate {
                clear_expires_at: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert!(engine.resource_get(&carol(), &expired.id).is_ok());
}

#[test]
fn rfc3339_parsing() {
    let cases = [
        ("1970-01-01T00:00:00Z", Some(0)),
        ("2026-03-07T10:00:00Z", Some(1_772_877_600_000)),
        ("2026-03-07T18:00:00+08:00", Some(1_772_877_600_000)),
        ("2026-03-07T10:00:00.25Z", Some(1_772_877_600_250)),
        ("2026-03-07 10:00:00z", Some(1_772_877_600_000)),
        ("2026-13-07T10:00:00Z", None),
        ("tomorrow", None),
        ("2026-03-07T10:00:00", None),
    ];
    for (text, want) in cases {
        assert_eq!(parse_rfc3339(text).ok(), want, "{text}");
    }
}

#[test]
fn secrets_are_encrypted_at_rest_and_never_audited() {
    let (dir, engine) = setup(true);
    let saved = engine
        .resource_save(&alice(), credential(&["team:hr"], None))
        .unwrap();
    engine.resource_get(&alice(), &saved.id).unwrap();
    engine.resource_get(&bob(), &saved.id).unwrap();
    engine
        .resource_update(
            &alice(),
            &saved.id,
            ResourceUpdate {
                secure_body: Some(SecureBody::new(format!("{SECRET}-v2"))),
                ..Default::default()
            },
        )
        .unwrap();

    // The key file exists with mode 0600.
    let key_path = dir.path().join("secret.key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    // Neither the database file nor its WAL holds the plaintext.
    let store_path = engine.paths().store.clone();
    let needle = "SecurePass123".as_bytes();
    for path in [
        store_path.clone(),
        store_path.with_extension("sqlite-wal"),
        std::path::PathBuf::from(format!("{}-wal", store_path.display())),
    ] {
        if let Ok(bytes) = std::fs::read(&path) {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle),
                "plaintext in {}",
                path.display()
            );
        }
    }
    // Nor the audit table (read through the store, all columns).
    let audit = engine.store().audit(1000, None).unwrap();
    assert!(audit.iter().any(|a| a.action == "resource.get"));
    let text = format!("{audit:?}");
    assert!(!text.contains("SecurePass123"), "{text}");

    // Debug of a resource holding the plaintext redacts it.
    let got = engine.resource_get(&alice(), &saved.id).unwrap();
    assert!(got.secure_body.is_some());
    let debug = format!("{got:?}");
    assert!(!debug.contains("SecurePass123"), "{debug}");
    assert!(debug.contains("[redacted]"), "{debug}");
}

#[test]
fn tampered_or_moved_ciphertexts_fail_cleanly() {
    let (_dir, engine) = setup(false);
    let a = engine
        .resource_save(&alice(), credential(&[], None))
        .unwrap();
    let b = engine
        .resource_save(&alice(), credential(&[], None))
        .unwrap();

    // Copy a's sealed secret onto b: the associated data (the id) no longer matches.
    {
        let mut store = engine.store();
        let sealed = store.resource(&a.id).unwrap().unwrap().secure;
        let mut rb = store.resource(&b.id).unwrap().unwrap();
        rb.secure = sealed;
        store.update_resource(&rb).unwrap();
    }
    let err = engine.resource_get(&alice(), &b.id).unwrap_err();
    assert!(err.to_string().contains("cannot be decrypted"), "{err}");

    // Flip one ciphertext bit of a.
    {
        let mut store = engine.store();
        let mut ra = store.resource(&a.id).unwrap().unwrap();
        if let Some(s) = ra.secure.as_mut() {
            s.ciphertext[0] ^= 1;
        }
        store.update_resource(&ra).unwrap();
    }
    let err = engine.resource_get(&alice(), &a.id).unwrap_err();
    assert!(err.to_string().contains("cannot be decrypted"), "{err}");

    // A reader without the right to the secret is not affected by a broken ciphertext.
    let c = engine
        .resource_save(&alice(), credential(&["public"], None))
        .unwrap();
    engine.set_key_source(Arc::new(MemoryKeySource::new(
        SecretKey::generate().unwrap(),
    )));
    assert!(engine.resource_get(&carol(), &c.id).is_ok());
    // A different key is reported as such.
    let err = engine.resource_get(&alice(), &c.id).unwrap_err();
    assert!(err.to_string().contains("encrypted with key"), "{err}");
}

#[cfg(unix)]
#[test]
fn key_file_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("secret.key");
    let source = FileKeySource::new(&path);
    let k1 = source.key().unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len(), 32);
    // Stable across loads; no temporary files left.
    assert_eq!(source.key().unwrap().id(), k1.id());
    assert_eq!(
        std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
        1
    );

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = source.key().unwrap_err();
    assert!(matches!(err, SecretError::KeyFileTooOpen { .. }), "{err}");
    assert!(err.to_string().contains("chmod 600"), "{err}");

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&path, b"short").unwrap();
    assert!(matches!(
        source.key().unwrap_err(),
        SecretError::KeyFileLength { .. }
    ));
}

#[test]
fn callers_may_name_resources_as_seed_002_does() {
    let (_dir, engine) = setup(false);
    let named = |id: &str| NewResource {
        id: Some(id.into()),
        ..credential(&[], None)
    };
    let saved = engine
        .resource_save(&alice(), named("credentials/website_a"))
        .unwrap();
    assert_eq!(saved.id, "credentials/website_a");
    let got = engine
        .resource_get(&alice(), "credentials/website_a")
        .unwrap();
    assert!(got.secure_body.is_some());
    // Knowledge refers to it by that name.
    let item = engine
        .knowledge_save(
            &alice(),
            crate::NewKnowledge {
                content: "Log in with the test account, then export the cookies.".into(),
                types: vec!["usecase".into()],
                resource_ids: vec!["credentials/website_a".into()],
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(item.resource_ids, ["credentials/website_a"]);
    // Taken — even by a resource bob cannot see: a conflict that shows nothing of it.
    let err = engine
        .resource_save(&bob(), named("credentials/website_a"))
        .unwrap_err();
    assert!(matches!(err, EngineError::Conflict(_)), "{err:?}");
    assert!(!err.to_string().contains(SECRET));
    assert!(matches!(
        engine.resource_get(&bob(), "credentials/website_a"),
        Err(EngineError::NotFound(_))
    ));
    // Malformed names are refused before anything is stored.
    for bad in [
        "Credentials/A",
        "a//b",
        "/a",
        "a/",
        "../etc",
        "a b",
        "a/./b",
        "密钥",
        &"x".repeat(129),
    ] {
        let err = engine.resource_save(&alice(), named(bad)).unwrap_err();
        assert!(
            matches!(err, EngineError::InvalidInput(_)),
            "{bad}: {err:?}"
        );
    }
    // No name, or a blank one: a generated id.
    let generated = engine.resource_save(&alice(), named("  ")).unwrap();
    assert!(generated.id.starts_with("resource-"), "{}", generated.id);
}
