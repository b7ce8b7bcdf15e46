//! Users, folder ACLs and `search --as` / API keys through the `knowhub` binary.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

fn knowhub(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_knowhub"))
        .arg("--data-dir")
        .arg(data)
        .args(["--embedder", "off"])
        .args(args)
        .env_remove("KNOWHUB_API_KEY")
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn found(data: &Path, who: &[&str]) -> Vec<String> {
    let mut args = vec!["--json", "search", "probeword", "-n", "20"];
    args.extend_from_slice(who);
    let hits: serde_json::Value = serde_json::from_str(&ok(&knowhub(data, &args))).unwrap();
    let mut names: Vec<String> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            Path::new(h["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn acls_users_keys_and_search_as() {
    let kb = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root = kb.path();
    std::fs::create_dir_all(root.join("handbook")).unwrap();
    std::fs::create_dir_all(root.join("hr")).unwrap();
    std::fs::write(
        root.join("handbook/leave.md"),
        "# Leave\n\nprobeword annual leave",
    )
    .unwrap();
    std::fs::write(
        root.join("hr/salaries.md"),
        "# Salaries\n\nprobeword salary bands",
    )
    .unwrap();
    let d = data.path();
    ok(&knowhub(d, &["ingest", root.to_str().unwrap()]));
    ok(&knowhub(
        d,
        &[
            "acl",
            "set",
            root.join("handbook").to_str().unwrap(),
            "public",
        ],
    ));
    let shown = ok(&knowhub(
        d,
        &["acl", "set", root.join("hr").to_str().unwrap(), "team:hr"],
    ));
    assert!(shown.contains("team:hr"), "{shown}");

    let out = ok(&knowhub(d, &["--json", "user", "add", "alice"]));
    let alice_key = serde_json::from_str::<serde_json::Value>(&out).unwrap()["api_key"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(&knowhub(d, &["user", "add", "bob"]));
    ok(&knowhub(d, &["user", "join", "bob", "team:hr"]));

    // Without identity (dev mode, the local owner) everything; users only what ACLs allow.
    assert_eq!(found(d, &[]), ["leave.md", "salaries.md"]);
    assert_eq!(found(d, &["--as", "alice"]), ["leave.md"]);
    assert_eq!(found(d, &["--as", "bob"]), ["leave.md", "salaries.md"]);
    assert_eq!(found(d, &["--api-key", &alice_key]), ["leave.md"]);

    // Listing shows only readable documents' names.
    let listed = ok(&knowhub(d, &["list", "--as", "alice"]));
    assert!(
        listed.contains("leave.md") && !listed.contains("salaries"),
        "{listed}"
    );

    // An ACL change applies to the next search.
    ok(&knowhub(
        d,
        &[
            "acl",
            "set",
            root.join("hr").to_str().unwrap(),
            "user:alice",
        ],
    ));
    assert_eq!(found(d, &["--as", "alice"]), ["leave.md", "salaries.md"]);
    assert_eq!(found(d, &["--as", "bob"]), ["leave.md"]);
    // A single document can override its folder.
    ok(&knowhub(
        d,
        &[
            "acl",
            "set-document",
            root.join("hr/salaries.md").to_str().unwrap(),
            "user:bob",
        ],
    ));
    assert_eq!(found(d, &["--as", "alice"]), ["leave.md"]);
    assert_eq!(found(d, &["--as", "bob"]), ["leave.md", "salaries.md"]);
    ok(&knowhub(
        d,
        &[
            "acl",
            "clear-document",
            root.join("hr/salaries.md").to_str().unwrap(),
        ],
    ));
    assert_eq!(found(d, &["--as", "alice"]), ["leave.md", "salaries.md"]);

    // Rotation and removal invalidate keys at once.
    ok(&knowhub(d, &["user", "rotate-key", "alice"]));
    let stale = knowhub(d, &["search", "probeword", "--api-key", &alice_key]);
    assert!(!stale.status.success());
    assert!(String::from_utf8_lossy(&stale.stderr).contains("not valid"));
    ok(&knowhub(d, &["user", "remove", "bob"]));
    assert!(
        !knowhub(d, &["search", "probeword", "--as", "bob"])
            .status
            .success()
    );

    // Bad input is a clear error.
    let bad = knowhub(
        d,
        &["acl", "set", root.join("hr").to_str().unwrap(), "team:"],
    );
    assert!(!bad.status.success());
    let outside = knowhub(d, &["acl", "show", "/"]);
    assert!(
        String::from_utf8_lossy(&outside.stderr).contains("not an ingested folder you can see")
    );

    // Previews: readable by id/path, otherwise "not found" exactly like a missing document.
    let shown = ok(&knowhub(
        d,
        &[
            "show",
            root.join("handbook/leave.md").to_str().unwrap(),
            "--as",
            "alice",
        ],
    ));
    assert!(shown.contains("annual leave"), "{shown}");
    ok(&knowhub(d, &["user", "add", "carol"]));
    let hidden = knowhub(
        d,
        &[
            "show",
            root.join("hr/salaries.md").to_str().unwrap(),
            "--as",
            "carol",
        ],
    );
    let missing = knowhub(d, &["show", "999", "--as", "carol"]);
    for o in [&hidden, &missing] {
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("not found"));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("salary"));
    }
    // Counts only cover what carol may read.
    let status: serde_json::Value =
        serde_json::from_str(&ok(&knowhub(d, &["--json", "status", "--as", "carol"]))).unwrap();
    assert_eq!(status["documents"], 1, "{status}");

    // The audit trail (admins) names each request's permission snapshot and what was withheld.
    let audit: serde_json::Value =
        serde_json::from_str(&ok(&knowhub(d, &["--json", "audit", "-n", "500"]))).unwrap();
    let carol_open = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["user"] == "carol" && r["action"] == "open")
        .unwrap();
    assert_eq!(carol_open["outcome"], "not_found");
    assert_eq!(carol_open["snapshot"].as_str().unwrap().len(), 64);
}

#[test]
fn production_mode_accounts_and_keys() {
    let kb = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    std::fs::write(kb.path().join("plan.md"), "# Plan\n\nprobeword acme plan").unwrap();

    let root_key =
        serde_json::from_str::<serde_json::Value>(&ok(&knowhub(d, &["--json", "auth", "init"])))
            .unwrap()["root_key"]
            .as_str()
            .unwrap()
            .to_owned();
    // From now on a key is required.
    let refused = knowhub(d, &["status"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("requires an API key"));
    let bad = knowhub(d, &["status", "--api-key", "kh_not_a_key"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not valid"));

    let created: serde_json::Value = serde_json::from_str(&ok(&knowhub(
        d,
        &[
            "--json",
            "account",
            "create",
            "acme",
            "--admin",
            "ada",
            "--api-key",
            &root_key,
        ],
    )))
    .unwrap();
    let ada = created["api_key"].as_str().unwrap().to_owned();
    let who = ok(&knowhub(d, &["auth", "whoami", "--api-key", &ada]));
    assert!(
        who.contains("acme") && who.contains("ada") && who.contains("ADMIN"),
        "{who}"
    );
    ok(&knowhub(
        d,
        &["ingest", kb.path().to_str().unwrap(), "--api-key", &ada],
    ));
    assert_eq!(found(d, &["--api-key", &ada]), ["plan.md"]);
    // The default account does not see acme's documents, even for ROOT working there.
    assert!(found(d, &["--api-key", &root_key]).is_empty());
    assert_eq!(
        found(d, &["--api-key", &root_key, "--account", "acme"]),
        ["plan.md"]
    );
    // Account administration is ROOT's.
    let denied = knowhub(d, &["account", "list", "--api-key", &ada]);
    assert!(String::from_utf8_lossy(&denied.stderr).contains("only ROOT"));
    let listed = ok(&knowhub(d, &["account", "list", "--api-key", &root_key]));
    assert!(listed.contains("acme"), "{listed}");
    ok(&knowhub(
        d,
        &["account", "delete", "acme", "--yes", "--api-key", &root_key],
    ));
    assert!(!d.join("accounts/acme").exists());
    let gone = knowhub(d, &["status", "--api-key", &ada]);
    assert!(!gone.status.success());
}
