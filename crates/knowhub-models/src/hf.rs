//! Pulling a model folder from the Hugging Face hub (or a mirror) by repo id, with the `hf-hub`
//! crate's blocking client.
//!
//! Files are downloaded into hf-hub's cache under `<models dir>/hf-cache/` (so a second pull of
//! an unchanged repo downloads nothing), checked (JSON parses, the safetensors header is
//! readable and consistent), then hard-linked (copied where links are impossible) into a plain
//! folder `<models dir>/hf/<owner>--<name>/` that `BertEmbedder::from_hf_folder` loads. The
//! folder is assembled under `<models dir>/.partial/` and swapped in whole, so an interrupted
//! pull never leaves a half-written model folder.

use std::fs::File;
use std::io::Read;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};

use hf_hub::api::Progress;
use hf_hub::api::sync::{Api, ApiBuilder, ApiError, ApiRepo};
use hf_hub::{Cache, CacheRepo, Repo, RepoType};
use serde::Serialize;

use crate::error::{ModelsError, Result};
use crate::fetch::PARTIAL_DIR;

/// Environment variable with the hub's base URL (also honoured by hf-hub and `huggingface_hub`).
pub const HF_ENDPOINT_ENV: &str = "HF_ENDPOINT";
/// Environment variable with an access token, for private or gated repos.
pub const HF_TOKEN_ENV: &str = "HF_TOKEN";
/// The public hub.
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";
/// Folder under the models directory that holds pulled model folders.
pub const HF_DIR: &str = "hf";
/// Folder under the models directory that holds hf-hub's download cache.
pub const HF_CACHE_DIR: &str = "hf-cache";
/// Files a pulled model must have.
pub const HF_REQUIRED_FILES: &[&str] = &["config.json", "tokenizer.json", "model.safetensors"];
/// Files pulled when the repo has them (sentence-transformers metadata, tokenizer settings).
pub const HF_OPTIONAL_FILES: &[&str] = &[
    "tokenizer_config.json",
    "special_tokens_map.json",
    "sentence_bert_config.json",
    "modules.json",
    "1_Pooling/config.json",
];

/// Largest safetensors header accepted (the safetensors format's own limit).
const MAX_SAFETENSORS_HEADER: u64 = 100_000_000;
/// Download attempts after the first, resuming where the last one stopped.
const RETRIES: usize = 2;

/// What to pull and where.
#[derive(Clone)]
pub struct HfDownload {
    /// `owner/name` (or a bare legacy `name`), e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    pub repo_id: String,
    /// Branch, tag or commit (`main` by default).
    pub revision: String,
    /// Hub base URL (`https://huggingface.co` by default; `HF_ENDPOINT` overrides it).
    pub endpoint: String,
    /// Access token for private or gated repos (`HF_TOKEN` by default).
    pub token: Option<String>,
    /// The models directory: the folder lands in `<dest_root>/hf/<owner>--<name>/`.
    pub dest_root: PathBuf,
}

impl std::fmt::Debug for HfDownload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfDownload")
            .field("repo_id", &self.repo_id)
            .field("revision", &self.revision)
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("dest_root", &self.dest_root)
            .finish()
    }
}

impl HfDownload {
    /// Revision `main`; endpoint from `HF_ENDPOINT` (else the public hub) and token from
    /// `HF_TOKEN`, when set and non-empty.
    pub fn new(repo_id: impl Into<String>, dest_root: impl Into<PathBuf>) -> Self {
        let env = |name: &str| {
            std::env::var(name)
                .ok()
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        HfDownload {
            repo_id: repo_id.into(),
            revision: "main".to_owned(),
            endpoint: env(HF_ENDPOINT_ENV).unwrap_or_else(|| DEFAULT_HF_ENDPOINT.to_owned()),
            token: env(HF_TOKEN_ENV),
            dest_root: dest_root.into(),
        }
    }

    /// The folder this pull writes: `<dest_root>/hf/<owner>--<name>/`.
    pub fn folder(&self) -> Result<PathBuf> {
        hf_model_dir(&self.dest_root, &self.repo_id)
    }
}

/// Progress of a pull, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub enum HfEvent<'a> {
    /// Asking the hub about a file.
    Checking { file: &'a str },
    /// Bytes of a file downloaded so far (`total` from the hub).
    Download {
        file: &'a str,
        done: u64,
        total: u64,
    },
    /// The file (same content) is already in the download cache; nothing is downloaded.
    Cached { file: &'a str },
    /// An optional file the repo does not have.
    Absent { file: &'a str },
}

/// What a pull did.
#[derive(Debug, Clone, Serialize)]
pub struct HfPull {
    pub repo_id: String,
    pub revision: String,
    /// The commit the revision resolved to (from the hub's `X-Repo-Commit`).
    pub commit: String,
    pub endpoint: String,
    /// The model folder, ready for `BertEmbedder::from_hf_folder`.
    pub dir: PathBuf,
    /// Files in the folder (paths relative to it).
    pub files: Vec<String>,
    /// Optional files the repo does not have.
    pub absent: Vec<String>,
    /// Files downloaded now (the others came from the download cache).
    pub downloaded: Vec<String>,
    pub bytes_downloaded: u64,
}

/// Where [`download_hf_model`] puts `repo_id` under `models_dir`: `hf/<owner>--<name>`
/// (`hf/<name>` for a bare legacy id). Fails on a malformed id.
pub fn hf_model_dir(models_dir: &Path, repo_id: &str) -> Result<PathBuf> {
    validate_repo_id(repo_id)?;
    Ok(models_dir.join(HF_DIR).join(repo_id.replace('/', "--")))
}

/// Checks the shape of a Hugging Face repo id (the hub's own rule): `owner/name` or `name`, each
/// part ASCII letters, digits, `-`, `_` and `.`, not starting or ending with `-` or `.`, without
/// `--` or `..`, the name at most 96 characters.
pub fn validate_repo_id(repo_id: &str) -> Result<()> {
    let invalid = |reason: &str| ModelsError::HfInvalid {
        what: "repo id",
        value: repo_id.to_owned(),
        reason: format!(
            "{reason} (expected `owner/name`, e.g. `sentence-transformers/all-MiniLM-L6-v2`)"
        ),
    };
    let parts: Vec<&str> = repo_id.split('/').collect();
    if parts.len() > 2 {
        return Err(invalid("more than one `/`"));
    }
    for part in &parts {
        if part.is_empty() {
            return Err(invalid("empty owner or name"));
        }
        if let Some(c) = part
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        {
            return Err(invalid(&format!("character {c:?} is not allowed")));
        }
        if part.starts_with(['-', '.']) || part.ends_with(['-', '.']) {
            return Err(invalid(
                "owner and name cannot start or end with `-` or `.`",
            ));
        }
        if part.contains("--") || part.contains("..") {
            return Err(invalid("`--` and `..` are not allowed"));
        }
    }
    let name = parts.last().copied().unwrap_or_default();
    if name.len() > 96 {
        return Err(invalid("the name is longer than 96 characters"));
    }
    Ok(())
}

fn validate_revision(revision: &str) -> Result<()> {
    let invalid = |reason: &str| ModelsError::HfInvalid {
        what: "revision",
        value: revision.to_owned(),
        reason: reason.to_owned(),
    };
    if revision.is_empty() || revision.len() > 255 {
        return Err(invalid("expected a branch, tag or commit, e.g. `main`"));
    }
    if let Some(c) = revision
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')))
    {
        return Err(invalid(&format!("character {c:?} is not allowed")));
    }
    if revision
        .split('/')
        .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return Err(invalid("empty, `.` or `..` path segment"));
    }
    Ok(())
}

/// The endpoint without trailing `/`, or an error when it is not an http(s) URL.
fn normalize_endpoint(endpoint: &str) -> Result<String> {
    let invalid = |reason: &str| ModelsError::HfInvalid {
        what: "endpoint",
        value: endpoint.to_owned(),
        reason: format!("{reason} (expected e.g. `https://huggingface.co`)"),
    };
    let trimmed = endpoint.trim().trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("https://")
        .or_else(|| trimmed.strip_prefix("http://"))
        .ok_or_else(|| invalid("not an http:// or https:// URL"))?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err(invalid("no host"));
    }
    if let Some(c) = rest
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '?' | '#' | '\\'))
    {
        return Err(invalid(&format!("character {c:?} is not allowed")));
    }
    Ok(trimmed.to_owned())
}

/// Downloads `req.repo_id` at `req.revision` from `req.endpoint` and installs it as a plain
/// model folder (see the module docs). `config.json`, `tokenizer.json` and `model.safetensors`
/// are required; the [`HF_OPTIONAL_FILES`] are taken when present. An existing folder for the
/// same repo is replaced.
pub fn download_hf_model(
    req: &HfDownload,
    on_event: &mut dyn FnMut(HfEvent<'_>),
) -> Result<HfPull> {
    let dir = hf_model_dir(&req.dest_root, &req.repo_id)?;
    validate_revision(&req.revision)?;
    let endpoint = normalize_endpoint(&req.endpoint)?;
    let cache_dir = req.dest_root.join(HF_CACHE_DIR);
    std::fs::create_dir_all(&cache_dir)
        .map_err(|e| ModelsError::io(format!("cannot create {}", cache_dir.display()), e))?;
    let api = ApiBuilder::from_cache(Cache::new(cache_dir.clone()))
        .with_endpoint(endpoint.clone())
        .with_token(req.token.clone())
        .with_progress(false)
        .with_retries(RETRIES)
        .with_user_agent("knowhub", env!("CARGO_PKG_VERSION"))
        .build()
        .map_err(|e| ModelsError::Http {
            url: endpoint.clone(),
            reason: e.to_string(),
        })?;
    let repo = Repo::with_revision(req.repo_id.clone(), RepoType::Model, req.revision.clone());
    let puller = Puller {
        api_repo: api.repo(repo.clone()),
        api,
        cache: Cache::new(cache_dir).repo(repo),
        repo_id: &req.repo_id,
        revision: &req.revision,
        endpoint: &endpoint,
        folder: &dir,
    };

    let mut pull = HfPull {
        repo_id: req.repo_id.clone(),
        revision: req.revision.clone(),
        commit: String::new(),
        endpoint: endpoint.clone(),
        dir: dir.clone(),
        files: Vec::new(),
        absent: Vec::new(),
        downloaded: Vec::new(),
        bytes_downloaded: 0,
    };
    let mut sources = Vec::new();
    let wanted = HF_REQUIRED_FILES
        .iter()
        .map(|f| (*f, true))
        .chain(HF_OPTIONAL_FILES.iter().map(|f| (*f, false)));
    for (file, required) in wanted {
        match puller.fetch(file, required, &mut pull, on_event)? {
            Some(blob) => sources.push((file, blob)),
            None => {
                on_event(HfEvent::Absent { file });
                pull.absent.push(file.to_owned());
            }
        }
    }
    install_folder(&sources, &req.dest_root, &dir)?;
    pull.files = sources.iter().map(|(f, _)| (*f).to_owned()).collect();
    Ok(pull)
}

/// One pull's hub client, cache and context for error messages.
struct Puller<'a> {
    api: Api,
    api_repo: ApiRepo,
    cache: CacheRepo,
    repo_id: &'a str,
    revision: &'a str,
    endpoint: &'a str,
    folder: &'a Path,
}

impl Puller<'_> {
    /// Downloads `file` into the cache (unless its blob is already there), checks it and
    /// returns the blob's path; `None` for an optional file the repo does not have.
    fn fetch(
        &self,
        file: &str,
        required: bool,
        pull: &mut HfPull,
        on_event: &mut dyn FnMut(HfEvent<'_>),
    ) -> Result<Option<PathBuf>> {
        on_event(HfEvent::Checking { file });
        let url = self.api_repo.url(file);
        let meta = match guard(&url, || self.api.metadata(&url))? {
            Ok(meta) => meta,
            Err(e) if !required && status_of(&e) == Some(404) => return Ok(None),
            Err(e) => return Err(self.error(e, file, &url, true)),
        };
        let bad_header = |what: &str, value: &str| ModelsError::BadIndexResponse {
            url: url.clone(),
            reason: format!("unusable {what} `{value}`"),
        };
        if !safe_cache_name(meta.etag()) {
            return Err(bad_header("ETag", meta.etag()));
        }
        if !safe_cache_name(meta.commit_hash()) || meta.commit_hash().contains('/') {
            return Err(bad_header("X-Repo-Commit", meta.commit_hash()));
        }
        if pull.commit.is_empty() {
            pull.commit = meta.commit_hash().to_owned();
        }
        let size = meta.size() as u64;
        let blob = self.cache.blob_path(meta.etag());
        let pointer = self.cache.pointer_path(meta.commit_hash()).join(file);
        let cached = std::fs::metadata(&blob).is_ok_and(|m| m.is_file() && m.len() == size);
        let blob = if cached {
            on_event(HfEvent::Cached { file });
            blob
        } else {
            // hf-hub cannot replace a dangling snapshot link (left when a blob was deleted).
            if std::fs::symlink_metadata(&pointer).is_ok() && !pointer.exists() {
                let _ = std::fs::remove_file(&pointer);
            }
            let progress = EventProgress {
                file,
                on_event: &mut *on_event,
                done: 0,
                total: size,
            };
            guard(&url, || {
                self.api_repo.download_with_progress(file, progress)
            })?
            .map_err(|e| self.error(e, file, &url, false))?;
            // hf-hub returns the snapshot link, which keeps pointing at an older blob when it
            // already existed; the blob named by the ETag is what was just downloaded.
            let got = std::fs::metadata(&blob)
                .map_err(|e| ModelsError::io(format!("cannot read {}", blob.display()), e))?
                .len();
            if got != size {
                remove_cached(&blob, &pointer);
                return Err(ModelsError::Http {
                    url,
                    reason: format!("got {got} of {size} bytes"),
                });
            }
            pull.downloaded.push(file.to_owned());
            pull.bytes_downloaded += size;
            blob
        };
        if let Err(reason) = check_file(file, &blob) {
            remove_cached(&blob, &pointer);
            return Err(ModelsError::HfCorrupt {
                repo_id: self.repo_id.to_owned(),
                file: file.to_owned(),
                reason,
            });
        }
        Ok(Some(blob))
    }

    /// A user-facing error for a failed hub request about `file`. `asking` is true for the
    /// first (metadata) request, where a network failure means the hub is unreachable.
    fn error(&self, e: ApiError, file: &str, url: &str, asking: bool) -> ModelsError {
        let http = |reason: String| ModelsError::Http {
            url: url.to_owned(),
            reason,
        };
        match e {
            ApiError::RequestError(inner) => match *inner {
                ureq::Error::StatusCode(404) => ModelsError::HfNotFound {
                    repo_id: self.repo_id.to_owned(),
                    revision: self.revision.to_owned(),
                    endpoint: self.endpoint.to_owned(),
                    file: file.to_owned(),
                    hint: not_found_hint(file).to_owned(),
                },
                ureq::Error::StatusCode(status @ (401 | 403)) => ModelsError::HfDenied {
                    repo_id: self.repo_id.to_owned(),
                    endpoint: self.endpoint.to_owned(),
                    status,
                },
                ureq::Error::StatusCode(status) => http(format!("HTTP {status}")),
                e if asking && is_network(&e) => ModelsError::HfUnreachable {
                    endpoint: self.endpoint.to_owned(),
                    reason: e.to_string(),
                    folder: self.folder.to_path_buf(),
                },
                e => http(e.to_string()),
            },
            ApiError::TooManyRetries(inner) => self.error(*inner, file, url, asking),
            ApiError::MissingHeader(h) => ModelsError::BadIndexResponse {
                url: url.to_owned(),
                reason: format!(
                    "no `{h}` header: is {} a Hugging Face hub or mirror?",
                    self.endpoint
                ),
            },
            ApiError::InvalidHeader(h) => ModelsError::BadIndexResponse {
                url: url.to_owned(),
                reason: format!("invalid `{h}` header"),
            },
            ApiError::ParseIntError(_) => ModelsError::BadIndexResponse {
                url: url.to_owned(),
                reason: "invalid `Content-Range` header".to_owned(),
            },
            ApiError::IoError(e) => ModelsError::io(
                format!(
                    "cannot write {file} to the download cache {}",
                    self.cache_root().display()
                ),
                e,
            ),
            ApiError::LockAcquisition(path) => ModelsError::io(
                format!("{} is held by another download", path.display()),
                std::io::ErrorKind::WouldBlock.into(),
            ),
            ApiError::InvalidResume => http(format!(
                "a partial download in {} is longer than the file; delete that folder and retry",
                self.cache_root().display()
            )),
            // `ApiError::Native` exists when some crate turns on hf-hub's `native-tls`.
            #[allow(unreachable_patterns)]
            other => http(other.to_string()),
        }
    }

    fn cache_root(&self) -> PathBuf {
        // `<cache>/models--owner--name/blobs/x` → `<cache>`.
        let blob = self.cache.blob_path("x");
        blob.ancestors()
            .nth(3)
            .map(Path::to_path_buf)
            .unwrap_or(blob)
    }
}

fn not_found_hint(file: &str) -> &'static str {
    match file {
        "config.json" => "check the repo id and the revision (and that it is a model repo)",
        "tokenizer.json" => "the repo has no fast tokenizer file, which KnowHub needs",
        "model.safetensors" => {
            "the repo has no single model.safetensors (sharded or PyTorch-only weights are not supported)"
        }
        _ => "the repo does not have this file",
    }
}

/// The HTTP status of a failed request, if it got one.
fn status_of(e: &ApiError) -> Option<u16> {
    match e {
        ApiError::RequestError(inner) => match **inner {
            ureq::Error::StatusCode(status) => Some(status),
            _ => None,
        },
        ApiError::TooManyRetries(inner) => status_of(inner),
        _ => None,
    }
}

/// Failures to connect at all (as opposed to an answer we did not like).
fn is_network(e: &ureq::Error) -> bool {
    matches!(
        e,
        ureq::Error::Io(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::Timeout(_)
            | ureq::Error::Tls(_)
            | ureq::Error::Rustls(_)
            | ureq::Error::Pem(_)
            | ureq::Error::InvalidProxyUrl
    )
}

/// A server-supplied ETag or commit is used as a path under the cache: no absolute paths, no
/// `..`, nothing odd.
fn safe_cache_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 512
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '=' | '/'))
        && s.split('/').all(|p| !p.is_empty() && p != "." && p != "..")
}

/// Runs an hf-hub call, turning a panic inside it (it has a few `expect`s on server answers)
/// into an error.
fn guard<T>(
    url: &str,
    f: impl FnOnce() -> std::result::Result<T, ApiError>,
) -> Result<std::result::Result<T, ApiError>> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        ModelsError::BadIndexResponse {
            url: url.to_owned(),
            reason: format!("the answer could not be handled ({what})"),
        }
    })
}

/// Deletes a bad blob, and the snapshot link to it (which would otherwise dangle).
fn remove_cached(blob: &Path, pointer: &Path) {
    let _ = std::fs::remove_file(blob);
    if std::fs::symlink_metadata(pointer).is_ok_and(|m| m.file_type().is_symlink())
        && !pointer.exists()
    {
        let _ = std::fs::remove_file(pointer);
    }
}

/// Reports hf-hub's download progress as [`HfEvent::Download`].
struct EventProgress<'a> {
    file: &'a str,
    on_event: &'a mut dyn FnMut(HfEvent<'_>),
    done: u64,
    total: u64,
}

impl EventProgress<'_> {
    fn emit(&mut self) {
        (self.on_event)(HfEvent::Download {
            file: self.file,
            done: self.done,
            total: self.total,
        });
    }
}

impl Progress for EventProgress<'_> {
    fn init(&mut self, size: usize, _filename: &str) {
        self.done = 0;
        self.total = size as u64;
        self.emit();
    }

    fn update(&mut self, size: usize) {
        self.done += size as u64;
        self.emit();
    }

    fn finish(&mut self) {}
}

/// Checks a downloaded file by its name: JSON files parse (`config.json` as an object), and
/// `.safetensors` files have a readable, consistent header.
fn check_file(name: &str, path: &Path) -> std::result::Result<(), String> {
    if name.ends_with(".safetensors") {
        return check_safetensors(path);
    }
    if name.ends_with(".json") {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("not valid JSON: {e}"))?;
        if name == "config.json" && !value.is_object() {
            return Err("not a JSON object".to_owned());
        }
    }
    Ok(())
}

/// A safetensors file: 8 bytes of little-endian header length, that many bytes of JSON
/// (`{"name": {"dtype", "shape", "data_offsets": [begin, end]}, …}`), then exactly the tensor
/// data the header describes.
fn check_safetensors(path: &Path) -> std::result::Result<(), String> {
    let mut file = File::open(path).map_err(|e| format!("cannot open it: {e}"))?;
    let len = file
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    let mut prefix = [0u8; 8];
    file.read_exact(&mut prefix)
        .map_err(|_| format!("{len} bytes is too short for a safetensors file"))?;
    let header_len = u64::from_le_bytes(prefix);
    if header_len == 0 || header_len > MAX_SAFETENSORS_HEADER || header_len > len.saturating_sub(8)
    {
        return Err(format!(
            "not a safetensors file (header length {header_len} does not fit a {len}-byte file)"
        ));
    }
    let mut header = Vec::new();
    file.take(header_len)
        .read_to_end(&mut header)
        .map_err(|e| format!("cannot read the safetensors header: {e}"))?;
    let header: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&header)
        .map_err(|e| format!("the safetensors header is not valid JSON: {e}"))?;
    let data_len = len.saturating_sub(8 + header_len);
    let mut tensors = 0usize;
    let mut data_end = 0u64;
    for (name, info) in header.iter().filter(|(k, _)| k.as_str() != "__metadata__") {
        let offsets = info
            .get("data_offsets")
            .and_then(|o| o.as_array())
            .and_then(|o| match o.as_slice() {
                [begin, end] => Some((begin.as_u64()?, end.as_u64()?)),
                _ => None,
            })
            .filter(|(begin, end)| begin <= end)
            .ok_or_else(|| format!("tensor `{name}` has no valid data_offsets"))?;
        tensors += 1;
        data_end = data_end.max(offsets.1);
    }
    if tensors == 0 {
        return Err("the safetensors header lists no tensors".to_owned());
    }
    if data_end != data_len {
        return Err(format!(
            "the header describes {data_end} bytes of tensor data but the file has {data_len} (truncated or corrupt)"
        ));
    }
    Ok(())
}

/// Links (or copies) `sources` (`(path in the folder, blob)`) into a fresh folder under
/// `<models>/.partial/` and swaps it in as `dir`.
fn install_folder(sources: &[(&str, PathBuf)], models_dir: &Path, dir: &Path) -> Result<()> {
    let io = |what: &str, path: &Path, e| {
        ModelsError::io(format!("cannot {what} {}", path.display()), e)
    };
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = models_dir.join(PARTIAL_DIR);
    let staging = partial.join(format!("hf-{name}"));
    let old = partial.join(format!("hf-{name}.old"));
    for stale in [&staging, &old] {
        if stale.exists() {
            std::fs::remove_dir_all(stale).map_err(|e| io("remove", stale, e))?;
        }
    }
    let result = (|| {
        for (file, blob) in sources {
            let dest = staging.join(file);
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
            }
            if std::fs::hard_link(blob, &dest).is_err() {
                std::fs::copy(blob, &dest).map_err(|e| {
                    ModelsError::io(
                        format!("cannot copy {} to {}", blob.display(), dest.display()),
                        e,
                    )
                })?;
            }
        }
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
        }
        let had_old = dir.exists();
        if had_old {
            std::fs::rename(dir, &old).map_err(|e| io("move aside", dir, e))?;
        }
        if let Err(e) = std::fs::rename(&staging, dir) {
            if had_old {
                let _ = std::fs::rename(&old, dir);
            }
            return Err(io("create", dir, e));
        }
        if had_old {
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    // Leave no empty `.partial` behind (it may hold other downloads' files: ignore failure).
    let _ = std::fs::remove_dir(&partial);
    result
}
