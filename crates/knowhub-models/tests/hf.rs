//! Pulling Hugging Face model folders from a fake hub on 127.0.0.1 (std `TcpListener` in a
//! thread) that answers the way huggingface.co does for hf-hub's blocking client:
//!
//! - `GET /{repo}/resolve/{revision}/{file}` with `Range: bytes=0-0` (metadata): `206` with
//!   `ETag`, `X-Repo-Commit` and `Content-Range: bytes 0-0/{size}`; for LFS files (here
//!   `model.safetensors`) a `302` to an absolute CDN URL with `X-Linked-Etag` and
//!   `X-Repo-Commit`, the CDN then answering the range request;
//! - the download itself: the same URL with `Range: bytes={start}-` (redirects followed);
//! - `404` for files the repo does not have.

// Test helpers may panic: that is how a test fails.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use knowhub_models::{HfDownload, HfEvent, ModelsError, download_hf_model};

const COMMIT: &str = "4c0ffee000000000000000000000000000000042";
const REPO: &str = "acme/tiny-bert";

#[derive(Clone)]
enum Route {
    /// A plain (git) file.
    File { body: Vec<u8>, etag: String },
    /// An LFS file: the resolve URL redirects to `/cdn/{etag}`.
    Lfs { body: Vec<u8>, etag: String },
    /// Any status, empty body (401 of a gated repo…).
    Status(u16),
    /// `200` with the body and no hub headers (a web server that is not a hub).
    Plain(Vec<u8>),
}

/// A tiny HTTP/1.1 hub: one connection at a time, `Connection: close`; logs `(path, range)`.
struct FakeHub {
    base: String,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    log: Arc<Mutex<Vec<(String, String)>>>,
}

impl FakeHub {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let log: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let (r, l, b) = (routes.clone(), log.clone(), base.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let _ = serve(stream, &b, &r, &l);
            }
        });
        FakeHub { base, routes, log }
    }

    fn route(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.to_owned(), route);
    }

    /// Publishes `files` as `repo` at revision `main`; `.safetensors` files as LFS files.
    fn publish(&self, repo: &str, files: &[(&str, Vec<u8>)]) {
        for (name, body) in files {
            let etag = etag_of(body);
            let route = if name.ends_with(".safetensors") {
                self.route(
                    &format!("/cdn/{etag}"),
                    Route::File {
                        body: body.clone(),
                        etag: etag.clone(),
                    },
                );
                Route::Lfs {
                    body: body.clone(),
                    etag,
                }
            } else {
                Route::File {
                    body: body.clone(),
                    etag,
                }
            };
            self.route(&format!("/{repo}/resolve/main/{name}"), route);
        }
    }

    /// Requests that downloaded content (anything but the `bytes=0-0` metadata probes).
    fn downloads(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, range)| range != "bytes=0-0")
            .map(|(path, _)| path.clone())
            .collect()
    }
}

fn serve(
    stream: TcpStream,
    base: &str,
    routes: &Mutex<HashMap<String, Route>>,
    log: &Mutex<Vec<(String, String)>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut range = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("range")
        {
            range = value.trim().to_owned();
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .to_owned();
    log.lock().unwrap().push((path.clone(), range.clone()));
    let route = routes.lock().unwrap().get(&path).cloned();
    let commit = format!("X-Repo-Commit: {COMMIT}\r\n");
    let (status, headers, body) = match route {
        None => ("404 Not Found".to_owned(), String::new(), Vec::new()),
        Some(Route::Status(code)) => (format!("{code} Refused"), String::new(), Vec::new()),
        Some(Route::Plain(body)) => ("200 OK".to_owned(), String::new(), body),
        Some(Route::Lfs { body, etag }) => (
            "302 Found".to_owned(),
            format!(
                "{commit}X-Linked-Etag: \"{etag}\"\r\nX-Linked-Size: {}\r\nLocation: {base}/cdn/{etag}\r\n",
                body.len()
            ),
            Vec::new(),
        ),
        Some(Route::File { body, etag }) => {
            let etag = format!("{commit}ETag: \"{etag}\"\r\n");
            match parse_range(&range, body.len()) {
                Some((start, end)) => (
                    "206 Partial Content".to_owned(),
                    format!(
                        "{etag}Content-Range: bytes {start}-{end}/{}\r\n",
                        body.len()
                    ),
                    body[start..=end].to_vec(),
                ),
                None => ("200 OK".to_owned(), etag, body),
            }
        }
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)?;
    stream.flush()
}

/// `bytes=S-` or `bytes=S-E` within a body of `len` bytes.
fn parse_range(range: &str, len: usize) -> Option<(usize, usize)> {
    let (start, end) = range.strip_prefix("bytes=")?.split_once('-')?;
    let start: usize = start.parse().ok()?;
    let end = if end.is_empty() {
        len.checked_sub(1)?
    } else {
        end.parse::<usize>().ok()?.min(len.checked_sub(1)?)
    };
    (start <= end).then_some((start, end))
}

/// A stand-in for the hub's ETag (a content hash): FNV-1a, hex.
fn etag_of(body: &[u8]) -> String {
    let hash = body.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// A valid safetensors file of F32 tensors.
fn safetensors(tensors: &[(&str, &[usize], &[f32])]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, shape, values) in tensors {
        let begin = data.len();
        data.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        header.insert(
            (*name).to_owned(),
            serde_json::json!({ "dtype": "F32", "shape": shape, "data_offsets": [begin, data.len()] }),
        );
    }
    let mut header = serde_json::Value::Object(header).to_string().into_bytes();
    while !header.len().is_multiple_of(8) {
        header.push(b' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend(header);
    out.extend(data);
    out
}

fn tiny_model() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "config.json",
            br#"{"model_type": "bert", "hidden_size": 2, "vocab_size": 3}"#.to_vec(),
        ),
        (
            "tokenizer.json",
            br#"{"version": "1.0", "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1, "b": 2}, "unk_token": "[UNK]"}}"#
                .to_vec(),
        ),
        (
            "model.safetensors",
            safetensors(&[("embeddings.weight", &[3, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])]),
        ),
        (
            "modules.json",
            br#"[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]"#
                .to_vec(),
        ),
        (
            "1_Pooling/config.json",
            br#"{"word_embedding_dimension": 2, "pooling_mode_mean_tokens": true}"#.to_vec(),
        ),
    ]
}

fn request(hub: &FakeHub, models: &Path, repo: &str) -> HfDownload {
    let mut req = HfDownload::new(repo, models);
    req.endpoint = hub.base.clone();
    req
}

fn pull(req: &HfDownload) -> Result<knowhub_models::HfPull, ModelsError> {
    download_hf_model(req, &mut |_| {})
}

#[test]
fn pull_installs_a_plain_model_folder_and_reuses_the_cache() {
    let hub = FakeHub::start();
    let files = tiny_model();
    hub.publish(REPO, &files);
    let models = tempfile::tempdir().unwrap();
    let req = request(&hub, models.path(), REPO);
    assert_eq!(req.revision, "main");

    let mut downloads: HashMap<String, (u64, u64)> = HashMap::new();
    let mut absent = Vec::new();
    let got = download_hf_model(&req, &mut |e| match e {
        HfEvent::Download { file, done, total } => {
            downloads.insert(file.to_owned(), (done, total));
        }
        HfEvent::Absent { file } => absent.push(file.to_owned()),
        HfEvent::Checking { .. } | HfEvent::Cached { .. } => {}
    })
    .unwrap();

    let dir = models.path().join("hf").join("acme--tiny-bert");
    assert_eq!(got.dir, dir);
    assert_eq!(got.commit, COMMIT);
    assert_eq!(got.repo_id, REPO);
    assert_eq!(got.endpoint, hub.base);
    for (name, body) in &files {
        assert_eq!(&std::fs::read(dir.join(name)).unwrap(), body, "{name}");
    }
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    assert_eq!(got.files, names);
    assert_eq!(got.downloaded, names);
    let total: usize = files.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(got.bytes_downloaded, total as u64);
    let optional_missing = [
        "tokenizer_config.json",
        "special_tokens_map.json",
        "sentence_bert_config.json",
    ];
    assert_eq!(got.absent, optional_missing);
    assert_eq!(absent, optional_missing);
    let weights = files[2].1.len() as u64;
    assert_eq!(downloads["model.safetensors"], (weights, weights));
    // The weights came through the CDN redirect, like LFS files on the hub.
    assert!(
        hub.downloads().iter().any(|p| p.starts_with("/cdn/")),
        "{:?}",
        hub.downloads()
    );
    // Plain files, nothing left over in the models directory.
    assert!(
        std::fs::symlink_metadata(dir.join("model.safetensors"))
            .unwrap()
            .is_file()
    );
    assert!(!models.path().join(".partial").exists());
    assert!(models.path().join("hf-cache").is_dir());

    // Unchanged repo: nothing is downloaded again, the folder is rebuilt the same.
    let before = hub.downloads().len();
    let mut cached = Vec::new();
    let again = download_hf_model(&req, &mut |e| {
        if let HfEvent::Cached { file } = e {
            cached.push(file.to_owned());
        }
    })
    .unwrap();
    assert_eq!(hub.downloads().len(), before);
    assert!(again.downloaded.is_empty());
    assert_eq!(again.bytes_downloaded, 0);
    assert_eq!(cached, names);
    for (name, body) in &files {
        assert_eq!(&std::fs::read(dir.join(name)).unwrap(), body, "{name}");
    }
}

#[test]
fn revision_and_bare_repo_ids_are_supported() {
    let hub = FakeHub::start();
    for (name, body) in tiny_model() {
        hub.route(
            &format!("/gpt-tiny/resolve/v1.0/{name}"),
            Route::File {
                etag: etag_of(&body),
                body,
            },
        );
    }
    let models = tempfile::tempdir().unwrap();
    let mut req = request(&hub, models.path(), "gpt-tiny");
    req.revision = "v1.0".to_owned();
    req.endpoint = format!("{}/", hub.base);
    let got = pull(&req).unwrap();
    assert_eq!(got.dir, models.path().join("hf").join("gpt-tiny"));
    assert!(got.dir.join("model.safetensors").is_file());
}

#[test]
fn unknown_repo_is_a_clear_not_found() {
    let hub = FakeHub::start();
    let models = tempfile::tempdir().unwrap();
    let err = pull(&request(&hub, models.path(), "acme/no-such-model")).unwrap_err();
    assert!(matches!(err, ModelsError::HfNotFound { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("config.json not found in acme/no-such-model at revision `main`"),
        "{msg}"
    );
    assert!(msg.contains("(HTTP 404)"), "{msg}");
    assert!(msg.contains("check the repo id"), "{msg}");
    assert!(!models.path().join("hf").exists());
}

#[test]
fn repo_without_safetensors_weights_is_explained() {
    let hub = FakeHub::start();
    let files: Vec<_> = tiny_model()
        .into_iter()
        .filter(|(n, _)| *n != "model.safetensors")
        .collect();
    hub.publish(REPO, &files);
    let models = tempfile::tempdir().unwrap();
    let err = pull(&request(&hub, models.path(), REPO)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("model.safetensors not found in acme/tiny-bert"),
        "{msg}"
    );
    assert!(msg.contains("sharded or PyTorch-only"), "{msg}");
    assert!(!models.path().join("hf").exists());
}

#[test]
fn gated_repo_asks_for_a_token() {
    let hub = FakeHub::start();
    hub.route("/acme/gated/resolve/main/config.json", Route::Status(401));
    let models = tempfile::tempdir().unwrap();
    let err = pull(&request(&hub, models.path(), "acme/gated")).unwrap_err();
    assert!(
        matches!(err, ModelsError::HfDenied { status: 401, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("HF_TOKEN"), "{err}");
}

#[test]
fn unreachable_endpoint_is_a_clear_error() {
    // A port that was just free: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let models = tempfile::tempdir().unwrap();
    let mut req = HfDownload::new(REPO, models.path());
    req.endpoint = format!("http://127.0.0.1:{port}");
    let err = pull(&req).unwrap_err();
    assert!(matches!(err, ModelsError::HfUnreachable { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("could not reach http://127.0.0.1:{port}")),
        "{msg}"
    );
    assert!(msg.contains("set HF_ENDPOINT"), "{msg}");
    assert!(msg.contains("acme--tiny-bert"), "{msg}");
    assert!(!models.path().join("hf").exists());
}

#[test]
fn a_server_that_is_not_a_hub_is_reported() {
    let hub = FakeHub::start();
    hub.route(
        "/acme/tiny-bert/resolve/main/config.json",
        Route::Plain(b"<html>hello</html>".to_vec()),
    );
    let models = tempfile::tempdir().unwrap();
    let err = pull(&request(&hub, models.path(), REPO)).unwrap_err();
    assert!(
        matches!(err, ModelsError::BadIndexResponse { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("a Hugging Face hub or mirror?"),
        "{err}"
    );
}

#[test]
fn corrupt_safetensors_is_rejected_and_the_installed_folder_kept() {
    let hub = FakeHub::start();
    let good = tiny_model();
    hub.publish(REPO, &good);
    let models = tempfile::tempdir().unwrap();
    let req = request(&hub, models.path(), REPO);
    let dir = pull(&req).unwrap().dir;

    let weights = good[2].1.clone();
    let mut huge_header = weights.clone();
    huge_header[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let mut bad_json = weights.clone();
    bad_json[8] = b'!';
    let truncated = weights[..weights.len() - 4].to_vec();
    let cases: [(&str, Vec<u8>, &str); 5] = [
        (
            "garbage",
            b"PK\x03\x04 this is a zip, not weights".to_vec(),
            "not a safetensors file",
        ),
        ("short", b"1234".to_vec(), "too short"),
        ("huge header", huge_header, "header length 1099511627776"),
        ("bad json", bad_json, "header is not valid JSON"),
        ("truncated", truncated, "truncated or corrupt"),
    ];
    for (what, body, expected) in cases {
        let mut files = good.clone();
        files[2].1 = body;
        hub.publish(REPO, &files);
        let err = pull(&req).unwrap_err();
        assert!(
            matches!(err, ModelsError::HfCorrupt { .. }),
            "{what}: {err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with("model.safetensors from acme/tiny-bert is corrupt"),
            "{what}: {msg}"
        );
        assert!(msg.contains(expected), "{what}: {msg}");
        // The good folder from before is untouched; the bad blob is gone from the cache.
        assert_eq!(
            std::fs::read(dir.join("model.safetensors")).unwrap(),
            weights
        );
        let blob = models
            .path()
            .join("hf-cache/models--acme--tiny-bert/blobs")
            .join(etag_of(&files[2].1));
        assert!(!blob.exists(), "{what}");
        assert!(!models.path().join(".partial").exists());
    }

    // And the corrupt config.json of a fresh repo.
    let mut files = good.clone();
    files[0].1 = b"{not json".to_vec();
    hub.publish("acme/bad-config", &files);
    let err = pull(&request(&hub, models.path(), "acme/bad-config")).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("config.json from acme/bad-config is corrupt: not valid JSON"),
        "{msg}"
    );
    assert!(!models.path().join("hf/acme--bad-config").exists());
}

#[test]
fn malformed_ids_revisions_and_endpoints_are_rejected_before_any_request() {
    let hub = FakeHub::start();
    let models = tempfile::tempdir().unwrap();
    for id in [
        "",
        "a/b/c",
        "/name",
        "owner/",
        "-owner/name",
        "owner/name-",
        "owner/na--me",
        "owner/../x",
        "owner/na me",
        "owner/name?x=1",
    ] {
        let err = pull(&request(&hub, models.path(), id)).unwrap_err();
        assert!(
            matches!(
                err,
                ModelsError::HfInvalid {
                    what: "repo id",
                    ..
                }
            ),
            "{id:?}: {err:?}"
        );
        assert!(err.to_string().contains("expected `owner/name`"), "{err}");
    }
    for rev in ["", "../main", "a b", "refs//pr"] {
        let mut req = request(&hub, models.path(), REPO);
        req.revision = rev.to_owned();
        let err = pull(&req).unwrap_err();
        assert!(
            matches!(
                err,
                ModelsError::HfInvalid {
                    what: "revision",
                    ..
                }
            ),
            "{rev:?}: {err:?}"
        );
    }
    for endpoint in [
        "",
        "huggingface.co",
        "ftp://example.org",
        "http://",
        "http://a b",
    ] {
        let mut req = request(&hub, models.path(), REPO);
        req.endpoint = endpoint.to_owned();
        let err = pull(&req).unwrap_err();
        assert!(
            matches!(
                err,
                ModelsError::HfInvalid {
                    what: "endpoint",
                    ..
                }
            ),
            "{endpoint:?}: {err:?}"
        );
    }
    assert!(hub.log.lock().unwrap().is_empty());
    assert!(!models.path().join("hf").exists());
}
